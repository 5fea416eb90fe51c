/*
 * fuzz_listing.c - the listing's Accept negotiation and renderings (server1/listing). Input:
 * an Accept value, a NUL, then entry names separated by '/' (any bytes). Properties: the Accept
 * parser never reads past len (the value sits in an exact-size heap buffer) and answers the
 * same whatever the case of the media types; the JSON rendering is valid UTF-8 with no control
 * character but its final newline, and each name's href holds only unreserved characters and
 * %XX; the HTML page is valid UTF-8 and no name adds a '<', '>', '"' or '\'' to it (the page
 * has as many as the same page with every name "x").
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/listing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether p[0..n) is UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static bool utf8_ok(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = p[i], len, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (c < 0xc2 || c > 0xf4 || i + len > n)
            return false;
        cp = c & (0x7f >> len);
        for (unsigned k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += len;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t alen = nul != NULL ? (size_t)(nul - data) : size;
    char *accept = malloc(alen + 1);
    struct listing l = {.max = 64};
    const char *rest = nul != NULL ? (const char *)nul + 1 : NULL;
    size_t rlen = nul != NULL ? size - alen - 1 : 0;
    bool want;
    size_t len;
    char *out;

    memcpy(accept, data, alen);
    want = listing_wants_html(accept, alen);
    for (size_t i = 0; i < alen; i++)
        accept[i] = (char)toupper((unsigned char)accept[i]);
    if (listing_wants_html(accept, alen) != want)
        abort();
    free(accept);

    l.e = calloc(l.max, sizeof(*l.e));
    while (rest != NULL && l.n < l.max) {
        const char *slash = memchr(rest, '/', rlen);
        size_t n = slash != NULL ? (size_t)(slash - rest) : rlen;
        struct listing_entry *e = &l.e[l.n++];
        e->name = malloc(n + 1);
        memcpy(e->name, rest, n);
        e->name[n] = '\0';
        e->name_len = n;
        e->dir = n % 2 == 1;
        e->size = n;
        e->mtime_s = n % 3 == 0 ? -1 : (int64_t)n * 1000003;
        rest = slash != NULL ? slash + 1 : NULL;
        rlen = slash != NULL ? rlen - n - 1 : 0;
    }

    out = listing_json(&l, "d", 1, &len);
    if (len != strlen(out) || !utf8_ok((const unsigned char *)out, len) || out[len - 1] != '\n')
        abort();
    for (size_t i = 0; i + 1 < len; i++) {
        if ((unsigned char)out[i] < 0x20)
            abort();
    }
    for (const char *h = strstr(out, "\"href\":\""); h != NULL; h = strstr(h, "\"href\":\"")) {
        for (h += 8; *h != '"'; h++) {
            if (!isalnum((unsigned char)*h) && strchr("-._~%/", *h) == NULL)
                abort();
        }
    }
    free(out);
    out = listing_html(&l, "d", 1, &len);
    if (len != strlen(out) || !utf8_ok((const unsigned char *)out, len))
        abort();
    {
        /* the same page with every name "x": as many '<', '>', '"' and '\'' (all markup) */
        struct listing plain = l;
        char x[] = "x";
        size_t plen;
        char *ref;

        plain.e = calloc(l.max, sizeof(*plain.e));
        for (size_t i = 0; i < l.n; i++) {
            plain.e[i] = l.e[i];
            plain.e[i].name = x;
            plain.e[i].name_len = 1;
        }
        ref = listing_html(&plain, "d", 1, &plen);
        for (const char *c = "<>\"'"; *c != '\0'; c++) {
            size_t a = 0, b = 0;
            for (size_t i = 0; i < len; i++)
                a += out[i] == *c;
            for (size_t i = 0; i < plen; i++)
                b += ref[i] == *c;
            if (a != b)
                abort();
        }
        free(ref);
        free(plain.e);
    }
    free(out);
    listing_free(&l);
    return 0;
}
