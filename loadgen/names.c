/*
 * names.c - see names.h. A names file is read whole and, in two passes, checked and counted,
 * then compacted in place into the arena (or encoded into a new one when a name needs %XX),
 * so that 10 M names of 20 bytes cost their 200 MB and 40 MB of offsets, not 10 M mallocs.
 */
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wholefile.h"
#include "xalloc.h"

static bool is_pchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("-._~!$&'()*+,;=:@/", c) != NULL);
}

static bool is_visible(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

size_t lg_names_encoded_len(const char *s, size_t len)
{
    size_t out = len;

    for (size_t i = 0; i < len; i++)
        if (!is_pchar((unsigned char)s[i]))
            out += 2;
    return out;
}

size_t lg_names_encode(const char *s, size_t len, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_pchar(c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    return o;
}

void lg_names_release(struct lg_names *n)
{
    free(n->arena);
    free(n->off);
    memset(n, 0, sizeof(*n));
}

const char *lg_names_kind_name(const struct lg_names *n)
{
    return n->kind == LG_NAMES_FILE ? "file" : n->kind == LG_NAMES_PATTERN ? "pattern" : "none";
}

/* ---- patterns ------------------------------------------------------------------------------ */

/* Appends the literal text p[0..len) (checked: visible ASCII) encoded to n->lit. */
static int add_literal(struct lg_names *n, const char *pat, const char *p, size_t len,
                       uint32_t *off, uint32_t *olen, char *err)
{
    size_t at = 0;

    for (size_t i = 0; i < len; i++) {
        if (!is_visible((unsigned char)p[i]) || p[i] == '}') {
            snprintf(err, LG_NAMES_ERR_LEN,
                     "--names '%.200s': %s at offset %zu (the text is visible ASCII; '{' and "
                     "'}' only around fields)",
                     pat, p[i] == '}' ? "a '}' without its '{'" : "a blank or control byte",
                     (size_t)(p + i - pat));
            return -1;
        }
    }
    while (at < sizeof(n->lit) && n->lit[at] != '\0')
        at++;
    *off = (uint32_t)at;
    *olen = (uint32_t)lg_names_encode(p, len, n->lit + at);
    n->lit[at + *olen] = '\0';
    return 0;
}

/* Parses the decimal digits s[0..len) (1..9 of them) into *v. */
static bool digits(const char *s, size_t len, uint64_t *v)
{
    if (len == 0 || len > 9)
        return false;
    *v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (uint64_t)(s[i] - '0');
    }
    return true;
}

/* The field "{A..B}" at p (its '{'), length len with the braces. */
static int parse_field(struct lg_names_field *f, const char *pat, const char *p, size_t len,
                       char *err)
{
    const char *in = p + 1;
    size_t inlen = len - 2;
    const char *dots = NULL;
    size_t alen;
    size_t blen;

    for (size_t i = 0; i + 1 < inlen; i++) {
        if (in[i] == '.' && in[i + 1] == '.') {
            dots = in + i;
            break;
        }
    }
    alen = dots != NULL ? (size_t)(dots - in) : 0;
    blen = dots != NULL ? inlen - alen - 2 : 0;
    if (dots == NULL || !digits(in, alen, &f->lo) || !digits(dots + 2, blen, &f->count)) {
        snprintf(err, LG_NAMES_ERR_LEN,
                 "--names '%.200s': field '%.*s' is not {A..B} (A and B of 1-9 decimal digits)",
                 pat, (int)(len < 64 ? len : 64), p);
        return -1;
    }
    if (f->count < f->lo) {
        snprintf(err, LG_NAMES_ERR_LEN, "--names '%.200s': field '%.*s' runs backwards (A > B)",
                 pat, (int)(len < 64 ? len : 64), p);
        return -1;
    }
    f->count = f->count - f->lo + 1;
    /* bash: a leading zero on either end pads both to the wider of the two */
    if ((alen > 1 && in[0] == '0') || (blen > 1 && dots[2] == '0'))
        f->width = (unsigned)(alen > blen ? alen : blen);
    else
        f->width = 0;
    return 0;
}

/* Digits of v, at least width of them. */
static unsigned ndigits(uint64_t v, unsigned width)
{
    unsigned d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d > width ? d : width;
}

int lg_names_parse_pattern(struct lg_names *n, const char *pat, char *err)
{
    size_t len = strlen(pat);
    const char *p = pat;
    const char *end = pat + len;
    size_t name_len = 0;

    lg_names_release(n);
    if (len == 0 || len > LG_NAMES_PATTERN_LEN) {
        snprintf(err, LG_NAMES_ERR_LEN, "--names: a pattern of 1-%d bytes",
                 LG_NAMES_PATTERN_LEN);
        return -1;
    }
    n->kind = LG_NAMES_PATTERN;
    n->n = 1;
    for (;;) {
        const char *open = memchr(p, '{', (size_t)(end - p));
        const char *close;
        struct lg_names_field *f;

        if (open == NULL) {
            if (add_literal(n, pat, p, (size_t)(end - p), &n->tail_off, &n->tail_len, err) < 0)
                goto fail;
            name_len += n->tail_len;
            break;
        }
        if (n->nfields == LG_NAMES_FIELDS_MAX) {
            snprintf(err, LG_NAMES_ERR_LEN, "--names '%.200s': more than %d {A..B} fields", pat,
                     LG_NAMES_FIELDS_MAX);
            goto fail;
        }
        f = &n->field[n->nfields];
        if (add_literal(n, pat, p, (size_t)(open - p), &f->lit_off, &f->lit_len, err) < 0)
            goto fail;
        close = memchr(open, '}', (size_t)(end - open));
        if (close == NULL || memchr(open + 1, '{', (size_t)(close - open - 1)) != NULL) {
            snprintf(err, LG_NAMES_ERR_LEN, "--names '%.200s': a '{' at offset %zu is not "
                     "closed by its '}'", pat, (size_t)(open - pat));
            goto fail;
        }
        if (parse_field(f, pat, open, (size_t)(close - open + 1), err) < 0)
            goto fail;
        if (n->n > LG_NAMES_PATTERN_MAX / f->count) {
            snprintf(err, LG_NAMES_ERR_LEN, "--names '%.200s': more than %llu names", pat,
                     (unsigned long long)LG_NAMES_PATTERN_MAX);
            goto fail;
        }
        n->n *= f->count;
        name_len += f->lit_len + ndigits(f->lo + f->count - 1, f->width);
        n->nfields++;
        p = close + 1;
    }
    if (n->nfields == 0) {
        snprintf(err, LG_NAMES_ERR_LEN, "--names '%.200s': a pattern needs a {A..B} field (a "
                 "file's name has no '{')", pat);
        goto fail;
    }
    n->len_max = name_len;
    return 0;
fail:
    lg_names_release(n);
    return -1;
}

/* ---- files --------------------------------------------------------------------------------- */

/* The next line of text[*pos..len) with its "\n" and a "\r" before it cut off; advances *pos. */
static const char *next_line(const char *text, size_t len, size_t *pos, size_t *llen)
{
    const char *s = text + *pos;
    const char *nl = memchr(s, '\n', len - *pos);
    size_t l = nl != NULL ? (size_t)(nl - s) : len - *pos;

    *pos += l + (nl != NULL);
    if (l > 0 && s[l - 1] == '\r')
        l--;
    *llen = l;
    return s;
}

/* Trims blanks; a blank line or a comment gives length 0. */
static const char *trim(const char *s, size_t *len)
{
    size_t l = *len;

    while (l > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        l--;
    }
    while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
        l--;
    if (l > 0 && *s == '#')
        l = 0;
    *len = l;
    return s;
}

/* First pass: checks every line, counts the names and their bytes, raw and encoded. */
static int count_names(const char *text, size_t len, const char *name, uint64_t max_names,
                       uint64_t *count, uint64_t *bytes, uint64_t *raw, char *err)
{
    size_t pos = 0;
    unsigned long lineno = 0;

    *count = 0;
    *bytes = 0;
    *raw = 0;
    while (pos < len) {
        size_t l;
        const char *s = trim(next_line(text, len, &pos, &l), &l);

        lineno++;
        if (l == 0)
            continue;
        if (l > LG_NAME_LEN_MAX) {
            snprintf(err, LG_NAMES_ERR_LEN, "--names %.300s:%lu: a name longer than %d bytes",
                     name, lineno, LG_NAME_LEN_MAX);
            return -1;
        }
        for (size_t i = 0; i < l; i++) {
            if (!is_visible((unsigned char)s[i])) {
                snprintf(err, LG_NAMES_ERR_LEN, "--names %.300s:%lu: byte 0x%02x in the name (a "
                         "name is visible ASCII, no blanks)", name, lineno, (unsigned char)s[i]);
                return -1;
            }
        }
        if (*count == max_names) {
            snprintf(err, LG_NAMES_ERR_LEN, "--names %.300s:%lu: more than %llu names", name,
                     lineno, (unsigned long long)max_names);
            return -1;
        }
        (*count)++;
        *raw += l;
        *bytes += lg_names_encoded_len(s, l);
    }
    if (*count == 0) {
        snprintf(err, LG_NAMES_ERR_LEN, "--names %.300s: no name in it", name);
        return -1;
    }
    if (*bytes > LG_NAMES_BYTES_MAX) {
        snprintf(err, LG_NAMES_ERR_LEN, "--names %.300s: more than %llu bytes of names, encoded",
                 name, (unsigned long long)LG_NAMES_BYTES_MAX);
        return -1;
    }
    return 0;
}

int lg_names_parse_text(struct lg_names *n, char *text, size_t len, const char *name,
                        uint64_t max_names, char *err)
{
    uint64_t count;
    uint64_t bytes;
    uint64_t raw;
    uint64_t k = 0;
    size_t pos = 0;
    size_t o = 0;
    char *arena;

    lg_names_release(n);
    if (count_names(text, len, name, max_names, &count, &bytes, &raw, err) < 0) {
        free(text);
        return -1;
    }
    /* without %XX no name outgrows its line: compact in place, else encode into a new arena */
    arena = bytes == raw ? text : xmalloc((size_t)bytes);
    n->off = xmalloc((size_t)(count + 1) * sizeof(*n->off));
    while (pos < len) {
        size_t l;
        const char *s = trim(next_line(text, len, &pos, &l), &l);

        if (l == 0)
            continue;
        n->off[k++] = (uint32_t)o;
        if (arena == text) {
            memmove(arena + o, s, l);
            o += l;
        } else {
            o += lg_names_encode(s, l, arena + o);
        }
        if (o - n->off[k - 1] > n->len_max)
            n->len_max = o - n->off[k - 1];
    }
    n->off[k] = (uint32_t)o;
    if (arena == text)
        arena = xrealloc(text, o); /* gives back the blank lines and the newlines */
    else
        free(text);
    n->arena = arena;
    n->n = count;
    n->kind = LG_NAMES_FILE;
    return 0;
}

/* Reads file whole if it is a regular file of at most cap bytes: 0, or -1 with err. */
static int read_file(const char *file, uint64_t cap, char **out, size_t *len, char *err)
{
    struct wholefile f;
    char ebuf[128];

    switch (wholefile_read(file, cap, &f)) {
    case WHOLEFILE_OK:
        *out = f.data;
        *len = f.len;
        return 0;
    case WHOLEFILE_CANNOT_OPEN:
        snprintf(err, LG_NAMES_ERR_LEN, "--names: cannot open '%.300s': %s", file,
                 strerror_r(f.err, ebuf, sizeof(ebuf)));
        break;
    case WHOLEFILE_NOT_REGULAR:
        snprintf(err, LG_NAMES_ERR_LEN, "--names: '%.300s' is not a regular file", file);
        break;
    case WHOLEFILE_TOO_BIG:
        snprintf(err, LG_NAMES_ERR_LEN, "--names: '%.300s' is %llu bytes, over the limit of %llu",
                 file, (unsigned long long)f.size, (unsigned long long)cap);
        break;
    case WHOLEFILE_CANNOT_READ:
        snprintf(err, LG_NAMES_ERR_LEN, "--names: cannot read '%.300s': %s", file,
                 f.err != 0 ? strerror_r(f.err, ebuf, sizeof(ebuf)) : "the file got shorter");
        break;
    }
    return -1;
}

int lg_names_load(struct lg_names *n, const char *arg, char *err)
{
    char *text;
    size_t len;

    lg_names_release(n);
    if (strchr(arg, '{') != NULL)
        return lg_names_parse_pattern(n, arg, err);
    if (read_file(arg, LG_NAMES_BYTES_MAX, &text, &len, err) < 0)
        return -1;
    return lg_names_parse_text(n, text, len, arg, LG_NAMES_FILE_MAX, err);
}

size_t lg_names_get(const struct lg_names *n, uint64_t i, char *out)
{
    size_t len = 0;
    uint64_t v[LG_NAMES_FIELDS_MAX];

    if (n->kind == LG_NAMES_FILE) {
        len = n->off[i + 1] - n->off[i];
        memcpy(out, n->arena + n->off[i], len);
        return len;
    }
    for (unsigned k = n->nfields; k > 0; k--) { /* the last field is the fastest digit */
        v[k - 1] = n->field[k - 1].lo + i % n->field[k - 1].count;
        i /= n->field[k - 1].count;
    }
    for (unsigned k = 0; k < n->nfields; k++) {
        const struct lg_names_field *f = &n->field[k];
        unsigned d = ndigits(v[k], f->width);
        uint64_t x = v[k];

        memcpy(out + len, n->lit + f->lit_off, f->lit_len);
        len += f->lit_len;
        for (unsigned j = d; j > 0; j--) {
            out[len + j - 1] = (char)('0' + x % 10);
            x /= 10;
        }
        len += d;
    }
    memcpy(out + len, n->lit + n->tail_off, n->tail_len);
    return len + n->tail_len;
}
