/*
 * stats.c - see stats.h.
 */
#include "stats.h"

#include <stddef.h>
#include <string.h>

void lg_stats_init(struct lg_stats *s)
{
    memset(s, 0, offsetof(struct lg_stats, lat)); /* lat is last */
    hist_init(&s->lat);
}

void lg_stats_merge(struct lg_stats *dst, const struct lg_stats *src)
{
#define LG_X(f, doc) dst->f += src->f;
    LG_COUNTERS(LG_X)
#undef LG_X
    for (int i = 0; i < LG_ERR_COUNT; i++)
        dst->err[i] += src->err[i];
    hist_merge(&dst->lat, &src->lat);
}

uint64_t lg_stats_errors(const struct lg_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < LG_ERR_COUNT; i++)
        n += s->err[i];
    return n;
}

const char *lg_err_name(enum lg_err e)
{
    static const char *const names[] = {
#define LG_X(e, name, doc) name,
        LG_ERRORS(LG_X)
#undef LG_X
    };
    if ((int)e < 0 || (int)e >= LG_ERR_COUNT)
        return "none";
    return names[e];
}

const char *lg_req_name(int type)
{
    static const char *const names[] = {"new", "get", "put", "all"};
    if (type < 0 || type > LG_REQ_ALL)
        return "?";
    return names[type];
}
