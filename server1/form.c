/*
 * form.c - see form.h.
 */
#include "form.h"

#include "compat.h"

#include <string.h>
#include <strings.h>

/* Decodes into out (cap bytes), or only validates when out is NULL. */
static long decode(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        char d;

        if (c == '%') {
            int hi;
            int lo;
            if (len - i < 3)
                return -1;
            hi = hex_digit_value((unsigned char)in[i + 1]);
            lo = hex_digit_value((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            d = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+') {
            d = ' ';
        } else {
            d = (char)c;
        }
        if (out != NULL) {
            if (o >= cap)
                return -1;
            out[o] = d;
        }
        o++;
    }
    return (long)o;
}

long http_form_decode(const char *in, size_t len, char *out, size_t cap)
{
    return decode(in, len, out, cap);
}

int http_form_parse(const char *body, size_t len, struct http_form_field *fields, size_t nfields,
                    const char **why)
{
    char name[64];
    size_t i = 0;

    for (size_t f = 0; f < nfields; f++) {
        fields[f].found = false;
        fields[f].len = 0;
    }
    while (i < len) {
        const char *pair = body + i;
        const char *amp = memchr(pair, '&', len - i);
        size_t plen = amp ? (size_t)(amp - pair) : len - i;
        const char *eq = memchr(pair, '=', plen);
        struct http_form_field *target = NULL;
        const char *val;
        size_t name_raw;
        size_t val_raw;
        long nlen;
        long vlen;

        i += plen + (amp ? 1 : 0);
        if (plen == 0)
            continue;
        if (eq == NULL) {
            *why = "form field without '='";
            return -1;
        }
        name_raw = (size_t)(eq - pair);
        val = eq + 1;
        val_raw = plen - name_raw - 1;
        if (decode(pair, name_raw, NULL, 0) < 0 || decode(val, val_raw, NULL, 0) < 0) {
            *why = "bad %-escape in form field";
            return -1;
        }
        nlen = decode(pair, name_raw, name, sizeof(name));
        for (size_t f = 0; nlen >= 0 && f < nfields; f++) {
            if (strlen(fields[f].name) == (size_t)nlen &&
                memcmp(fields[f].name, name, (size_t)nlen) == 0) {
                target = &fields[f];
                break;
            }
        }
        if (target == NULL)
            continue; /* a field nobody asked for */
        if (target->found) {
            *why = "form field repeated";
            return -1;
        }
        vlen = decode(val, val_raw, target->out, target->cap ? target->cap - 1 : 0);
        if (vlen < 0) {
            *why = "form value too long";
            return -1;
        }
        target->out[vlen] = '\0';
        target->len = (size_t)vlen;
        target->found = true;
    }
    return 0;
}

bool http_form_is_urlencoded(const char *ctype, size_t len)
{
    static const char want[] = "application/x-www-form-urlencoded";
    size_t n = sizeof(want) - 1;

    if (len < n || strncasecmp(ctype, want, n) != 0)
        return false;
    /* optional parameters, e.g. "; charset=UTF-8" */
    for (size_t i = n; i < len; i++) {
        if (ctype[i] == ';')
            return true;
        if (ctype[i] != ' ' && ctype[i] != '\t')
            return false;
    }
    return true;
}
