/*
 * stats.c - see stats.h.
 */
#include "stats.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
    lg_errtab_merge(&dst->by_kind, &src->by_kind);
    lg_errtab_merge(&dst->ok_by_status, &src->ok_by_status);
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

void lg_stats_statuses(const struct lg_stats *s, struct lg_errtab *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < LG_STATUS_SLOTS; i++)
        out->status[i] = s->ok_by_status.status[i] + s->by_kind.status[i];
}

const char *lg_req_name(int type)
{
    static const char *const names[] = {"new", "get", "put", "custom", "all"};
    if (type < 0 || type > LG_REQ_ALL)
        return "?";
    return names[type];
}

const char *lg_kind_name(enum lg_kind k)
{
    static const char *const names[] = {
#define LG_X(k, name, doc) name,
        LG_KINDS(LG_X)
#undef LG_X
    };
    if ((int)k < 0 || (int)k >= LG_KIND_COUNT)
        return "?";
    return names[k];
}

static bool is_status_class(enum lg_err e)
{
    return e == LG_ERR_STATUS_4XX || e == LG_ERR_STATUS_5XX || e == LG_ERR_STATUS_OTHER;
}

void lg_errtab_add(struct lg_errtab *t, enum lg_err e, int status, enum lg_kind k)
{
    if (is_status_class(e)) {
        if (status >= LG_STATUS_MIN && status <= LG_STATUS_MAX)
            t->status[status - LG_STATUS_MIN]++;
        else
            t->kind[LG_KIND_BAD_STATUS]++;
        return;
    }
    if ((int)k < 0 || (int)k >= LG_KIND_COUNT)
        k = LG_KIND_INVALID;
    t->kind[k]++;
}

void lg_errtab_merge(struct lg_errtab *dst, const struct lg_errtab *src)
{
    for (int i = 0; i < LG_STATUS_SLOTS; i++)
        dst->status[i] += src->status[i];
    for (int i = 0; i < LG_KIND_COUNT; i++)
        dst->kind[i] += src->kind[i];
}

uint64_t lg_errtab_total(const struct lg_errtab *t)
{
    uint64_t n = 0;

    for (int i = 0; i < LG_STATUS_SLOTS; i++)
        n += t->status[i];
    for (int i = 0; i < LG_KIND_COUNT; i++)
        n += t->kind[i];
    return n;
}

/* Appends one entry at *len; false (and "..." in place of the entry) when it does not fit. */
static bool put_entry(char *out, size_t cap, size_t *len, enum lg_errtab_style style,
                      const char *name, uint64_t n)
{
    char item[64];
    int w;

    if (style == LG_ERRTAB_CSV)
        w = snprintf(item, sizeof(item), "%s%s:%" PRIu64, *len ? ";" : "", name, n);
    else
        w = snprintf(item, sizeof(item), "%s%s x %" PRIu64, *len ? ", " : "", name, n);
    /* room for the entry and, should a later one not fit, for "..." after it */
    if ((size_t)w + 4 > cap - *len) {
        if (cap - *len >= 4) {
            memcpy(out + *len, "...", 4);
            *len += 3;
        }
        return false;
    }
    memcpy(out + *len, item, (size_t)w + 1);
    *len += (size_t)w;
    return true;
}

size_t lg_errtab_format(const struct lg_errtab *t, enum lg_errtab_style style, char *out,
                        size_t cap)
{
    size_t len = 0;
    char name[12]; /* "-2147483648" fits, though a status is 100..599 */

    if (cap == 0)
        return 0;
    out[0] = '\0';
    for (int i = 0; i < LG_STATUS_SLOTS; i++) {
        if (t->status[i] == 0)
            continue;
        snprintf(name, sizeof(name), "%d", i + LG_STATUS_MIN);
        if (!put_entry(out, cap, &len, style, name, t->status[i]))
            return len;
    }
    for (int k = 0; k < LG_KIND_COUNT; k++)
        if (t->kind[k] > 0 && !put_entry(out, cap, &len, style, lg_kind_name((enum lg_kind)k),
                                         t->kind[k]))
            return len;
    return len;
}

int lg_errtab_add_named(struct lg_errtab *t, const char *name, uint64_t n)
{
    for (int k = 0; k < LG_KIND_COUNT; k++) {
        if (strcmp(name, lg_kind_name((enum lg_kind)k)) == 0) {
            t->kind[k] += n;
            return 0;
        }
    }
    if (strlen(name) == 3 && name[0] >= '1' && name[0] <= '5' && name[1] >= '0' &&
        name[1] <= '9' && name[2] >= '0' && name[2] <= '9') {
        t->status[atoi(name) - LG_STATUS_MIN] += n;
        return 0;
    }
    return -1;
}
