/*
 * httpcond.c - see httpcond.h.
 */
#include "httpcond.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One parsed entity-tag: where its opaque-tag (quotes included) lies, and whether it is weak. */
struct etag {
    const char *opaque; /* DQUOTE *etagc DQUOTE */
    size_t len;
    bool weak;
};

/* What a list (If-Match, If-None-Match) says about our tag. */
enum list_result {
    LIST_NO_MATCH,  /* well-formed, no tag matches */
    LIST_MATCH,     /* well-formed, a tag matches */
    LIST_STAR,      /* "*" */
    LIST_MALFORMED, /* not "*" / 1#entity-tag */
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

/* Parses an entity-tag at s[*i..len), advancing *i past it. False if there is none there. */
static bool parse_etag(const char *s, size_t len, size_t *i, struct etag *t)
{
    size_t p = *i;

    t->weak = false;
    if (len - p >= 2 && s[p] == 'W' && s[p + 1] == '/') {
        t->weak = true;
        p += 2;
    }
    if (p == len || s[p] != '"')
        return false;
    t->opaque = s + p;
    p++;
    while (p < len && is_etagc((unsigned char)s[p]))
        p++;
    if (p == len || s[p] != '"')
        return false;
    p++;
    t->len = (size_t)(s + p - t->opaque);
    *i = p;
    return true;
}

/* Parses s[0..len) as exactly one entity-tag. */
static bool parse_one_etag(const char *s, size_t len, struct etag *t)
{
    size_t i = 0;
    return parse_etag(s, len, &i, t) && i == len;
}

static bool etag_eq(const struct etag *a, const struct etag *b, bool weak_compare)
{
    if (!weak_compare && (a->weak || b->weak))
        return false;
    return a->len == b->len && memcmp(a->opaque, b->opaque, a->len) == 0;
}

/* Reads the whole list, so that a malformed element anywhere is noticed. */
static enum list_result list_eval(const char *list, size_t len, const char *etag,
                                  size_t etag_len, bool weak_compare)
{
    struct etag ours;
    bool ours_ok = parse_one_etag(etag, etag_len, &ours);
    bool match = false;
    size_t ntags = 0;
    size_t i = 0;

    if (len == 1 && list[0] == '*')
        return LIST_STAR;
    for (;;) {
        struct etag t;

        while (i < len && is_ows(list[i]))
            i++;
        if (i == len)
            break;
        if (list[i] == ',') { /* an empty list element */
            i++;
            continue;
        }
        if (!parse_etag(list, len, &i, &t))
            return LIST_MALFORMED;
        ntags++;
        if (ours_ok && etag_eq(&t, &ours, weak_compare))
            match = true;
        while (i < len && is_ows(list[i]))
            i++;
        if (i == len)
            break;
        if (list[i] != ',')
            return LIST_MALFORMED;
        i++;
    }
    if (ntags == 0)
        return LIST_MALFORMED;
    return match ? LIST_MATCH : LIST_NO_MATCH;
}

bool httpcond_etag_list_match(const char *list, size_t len, const char *etag, size_t etag_len,
                              bool weak_compare)
{
    enum list_result r = list_eval(list, len, etag, etag_len, weak_compare);
    return r == LIST_MATCH || r == LIST_STAR;
}

/* §13.1.1: true lets the request go on. */
static bool if_match_holds(const struct httpcond_list *f, const struct httpcond_repr *rep)
{
    if (!rep->exists)
        return false; /* neither "*" nor any tag can match nothing */
    switch (list_eval(f->value, f->len, rep->etag, rep->etag_len, false)) {
    case LIST_MATCH:
    case LIST_STAR:
        return true;
    case LIST_NO_MATCH:
    case LIST_MALFORMED:
        break;
    }
    return false;
}

/* §13.1.2: true lets the request go on; see httpcond.h for a malformed list. */
static bool if_none_match_holds(const struct httpcond_list *f, const struct httpcond_repr *rep,
                                enum httpcond_method method)
{
    switch (list_eval(f->value, f->len, rep->etag, rep->etag_len, true)) {
    case LIST_MALFORMED:
        return method == HTTPCOND_READ;
    case LIST_STAR:
    case LIST_MATCH:
        return !rep->exists;
    case LIST_NO_MATCH:
        break;
    }
    return true;
}

enum httpcond_outcome httpcond_evaluate(const struct httpcond_request *req,
                                        const struct httpcond_repr *rep)
{
    if (req->if_match.present) {
        if (!if_match_holds(&req->if_match, rep))
            return HTTPCOND_PRECONDITION_FAILED;
    } else if (req->if_unmodified_since.valid && rep->exists) {
        if (rep->last_modified > req->if_unmodified_since.secs)
            return HTTPCOND_PRECONDITION_FAILED;
    }
    if (req->if_none_match.present) {
        if (!if_none_match_holds(&req->if_none_match, rep, req->method))
            return req->method == HTTPCOND_READ ? HTTPCOND_NOT_MODIFIED
                                                : HTTPCOND_PRECONDITION_FAILED;
    } else if (req->method == HTTPCOND_READ && req->if_modified_since.valid && rep->exists) {
        if (rep->last_modified <= req->if_modified_since.secs)
            return HTTPCOND_NOT_MODIFIED;
    }
    return HTTPCOND_PROCEED;
}

int64_t httpcond_last_modified(const struct httpcond_stamp *s)
{
    int64_t d;

    if (s->mtime_ns < 0)
        return -1;
    d = s->mtime_ns / 1000000000;
    /* in seconds, so that the end of the second cannot overflow: pending_ns >= (d + 1) s */
    if (s->read_s <= d || (s->pending_ns != INT64_MAX && s->pending_ns / 1000000000 <= d))
        return -1;
    return d;
}

int64_t httpcond_strong_date(const struct httpcond_stamp *s)
{
    int64_t d = httpcond_last_modified(s);

    /* since_ns < (d + 1) s; a negative since_ns (before 1970) is in place too */
    if (d < 0 || (s->since_ns >= 0 && s->since_ns / 1000000000 > d))
        return -1;
    return d;
}

bool httpcond_if_range_is_etag(const char *value, size_t len)
{
    for (size_t i = 0; i < len && i < 3; i++) {
        if (value[i] == '"')
            return true;
    }
    return false;
}

bool httpcond_if_range(const char *value, size_t len, const char *etag, size_t etag_len,
                       bool date_valid, int64_t date, int64_t last_modified)
{
    struct etag theirs;
    struct etag ours;

    if (!httpcond_if_range_is_etag(value, len))
        return date_valid && last_modified >= 0 && date == last_modified;
    return parse_one_etag(value, len, &theirs) && parse_one_etag(etag, etag_len, &ours) &&
           etag_eq(&theirs, &ours, false);
}

size_t httpcond_etag_format(char *out, size_t cap, uint64_t a, uint64_t b)
{
    int n;

    if (cap == 0)
        return 0;
    n = snprintf(out, cap, "\"%" PRIx64 "-%" PRIx64 "\"", a, b);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}
