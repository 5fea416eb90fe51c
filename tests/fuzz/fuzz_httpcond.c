/*
 * fuzz_httpcond.c - conditional requests (server1/httpcond). Input: one flags byte, then a
 * field value, then optionally a newline and our tag (else a tag made by httpcond_etag_format
 * from the flags). Both sit in exact-size heap buffers, so ASan sees any read past a length.
 * Properties: a strong match is a weak match; "*" matches, and behaves as §13.1.1/§13.1.2 say
 * with and without a representation; httpcond_evaluate agrees with httpcond_etag_list_match for
 * If-Match and If-None-Match alone and gives 304 only to GET/HEAD; an If-Range entity-tag that
 * holds is a strong match, and an If-Range date holds only when equal; a formatted tag matches
 * itself; a Last-Modified is only sent after its second, and a strong date is the one sent.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/httpcond.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dup_exact(const uint8_t *p, size_t n)
{
    char *s = malloc(n ? n : 1);
    if (s != NULL)
        memcpy(s, p, n);
    return s;
}

static void check(const char *v, size_t len, const char *tag, size_t tag_len, unsigned flags)
{
    bool weak = httpcond_etag_list_match(v, len, tag, tag_len, true);
    bool strong = httpcond_etag_list_match(v, len, tag, tag_len, false);
    bool star = len == 1 && v[0] == '*';
    struct httpcond_repr rep = {.exists = true, .etag = tag, .etag_len = tag_len,
                                .last_modified = (int64_t)(flags & 0x0f)};
    struct httpcond_repr none = {.exists = false};
    struct httpcond_list f = {.present = true, .value = v, .len = len};
    struct httpcond_request r = {.method = HTTPCOND_READ};
    enum httpcond_outcome o;
    int64_t date = (int64_t)(flags >> 4);

    if (strong && !weak)
        abort();
    if (star && !(weak && strong))
        abort();

    /* If-Match alone */
    r.if_match = f;
    for (int m = 0; m < 2; m++) {
        r.method = m ? HTTPCOND_WRITE : HTTPCOND_READ;
        o = httpcond_evaluate(&r, &rep);
        if (o != (strong ? HTTPCOND_PROCEED : HTTPCOND_PRECONDITION_FAILED))
            abort();
        if (httpcond_evaluate(&r, &none) != HTTPCOND_PRECONDITION_FAILED)
            abort();
    }
    r.if_match.present = false;

    /* If-None-Match alone, plus an If-Modified-Since that must stay ignored */
    r.if_none_match = f;
    r.if_modified_since = (struct httpcond_date){.valid = true, .secs = INT64_MAX};
    for (int m = 0; m < 2; m++) {
        r.method = m ? HTTPCOND_WRITE : HTTPCOND_READ;
        o = httpcond_evaluate(&r, &rep);
        if (r.method == HTTPCOND_READ && o != (weak ? HTTPCOND_NOT_MODIFIED : HTTPCOND_PROCEED))
            abort();
        if (r.method == HTTPCOND_WRITE &&
            (o == HTTPCOND_NOT_MODIFIED || (weak && o != HTTPCOND_PRECONDITION_FAILED)))
            abort();
        o = httpcond_evaluate(&r, &none);
        if (o == HTTPCOND_NOT_MODIFIED || (star && o != HTTPCOND_PROCEED))
            abort();
    }

    /* everything at once: whatever comes out, 304 is for GET/HEAD only */
    r.if_match = f;
    r.if_unmodified_since = (struct httpcond_date){.valid = (flags & 1) != 0, .secs = date};
    r.if_modified_since = (struct httpcond_date){.valid = (flags & 2) != 0, .secs = date};
    r.if_none_match.present = (flags & 4) != 0;
    r.method = HTTPCOND_WRITE;
    if (httpcond_evaluate(&r, &rep) == HTTPCOND_NOT_MODIFIED ||
        httpcond_evaluate(&r, &none) == HTTPCOND_NOT_MODIFIED)
        abort();

    /* If-Range */
    if (httpcond_if_range_is_etag(v, len)) {
        if (httpcond_if_range(v, len, tag, tag_len, true, 0, 0) && (!strong || star))
            abort();
    } else {
        if (httpcond_if_range(v, len, tag, tag_len, true, date, rep.last_modified) !=
            (date == rep.last_modified))
            abort();
        if (httpcond_if_range(v, len, tag, tag_len, false, 0, 0))
            abort();
    }
}

/*
 * Dates from the input's bytes: a Last-Modified is sent only after its second, and the date
 * an If-Range must equal is either none or the one sent.
 */
static void check_stamp(const uint8_t *data, size_t size)
{
    int64_t t[4] = {0};
    struct httpcond_stamp st;
    int64_t lm, strong;

    for (size_t i = 0; i < size && i < sizeof(t); i++)
        ((uint8_t *)t)[i] = data[i];
    st = (struct httpcond_stamp){.mtime_ns = t[0], .read_s = t[1], .pending_ns = t[2],
                                 .since_ns = t[3]};
    lm = httpcond_last_modified(&st);
    strong = httpcond_strong_date(&st);
    if (lm >= 0 && (st.mtime_ns < 0 || lm != st.mtime_ns / 1000000000 || st.read_s <= lm))
        abort();
    if (lm < -1 || (strong != -1 && strong != lm))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char made[HTTPCOND_ETAG_MAX];
    const uint8_t *nl;
    unsigned flags;
    char *v;
    char *tag;
    size_t vlen;
    size_t tag_len;
    uint64_t a = 0;

    if (size == 0)
        return 0;
    flags = data[0];
    data++;
    size--;
    nl = memchr(data, '\n', size);
    vlen = nl ? (size_t)(nl - data) : size;
    v = dup_exact(data, vlen);
    if (nl != NULL) {
        tag_len = size - vlen - 1;
        tag = dup_exact(nl + 1, tag_len);
    } else {
        for (size_t i = 0; i < vlen && i < 8; i++)
            a = a << 8 | (uint8_t)v[i];
        tag_len = httpcond_etag_format(made, sizeof(made), a, flags);
        if (tag_len == 0 || !httpcond_etag_list_match(made, tag_len, made, tag_len, false))
            abort();
        tag = dup_exact((const uint8_t *)made, tag_len);
    }
    if (v != NULL && tag != NULL)
        check(v, vlen, tag, tag_len, flags);
    check_stamp(data, size);
    free(v);
    free(tag);
    return 0;
}
