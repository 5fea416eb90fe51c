/*
 * reqspec.c - see reqspec.h. Files are read whole (a --requests file holds at most
 * LG_REQUESTS_MAX lines of LG_REQ_LINE_MAX bytes), after fstat says how big they are, so a
 * limit is refused before anything is read.
 */
#include "reqspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wholefile.h"
#include "xalloc.h"

/* The longest --requests file: every line at its limit, with its "\r\n". */
#define LG_REQFILE_MAX ((uint64_t)LG_REQUESTS_MAX * (LG_REQ_LINE_MAX + 2) + 4096)

static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

bool lg_reqspec_method_ok(const char *m, size_t len)
{
    if (len == 0 || len > LG_METHOD_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!tchar((unsigned char)m[i]))
            return false;
    return true;
}

bool lg_reqspec_path_ok(const char *p, size_t len)
{
    if (len == 0 || len > LG_REQ_LINE_MAX || p[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
            return false;
    return true;
}

bool lg_reqspec_header_is(const char *h, const char *name)
{
    size_t n = strlen(name);

    return strncasecmp(h, name, n) == 0 && h[n] == ':';
}

int lg_reqspec_header_ok(const char *h, char *err)
{
    size_t len = strlen(h);
    const char *colon = strchr(h, ':');

    if (len > LG_REQ_LINE_MAX) {
        snprintf(err, LG_REQSPEC_ERR_LEN, "--header: longer than %d bytes", LG_REQ_LINE_MAX);
        return -1;
    }
    if (colon == NULL || colon == h) {
        snprintf(err, LG_REQSPEC_ERR_LEN, "--header '%.64s': not 'Name: value'", h);
        return -1;
    }
    for (const char *p = h; p < colon; p++) {
        if (!tchar((unsigned char)*p)) {
            snprintf(err, LG_REQSPEC_ERR_LEN,
                     "--header '%.64s': the name must be a token (no blank before ':')", h);
            return -1;
        }
    }
    for (const char *p = colon + 1; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(err, LG_REQSPEC_ERR_LEN,
                     "--header '%.*s': a control character in the value", (int)(colon - h), h);
            return -1;
        }
    }
    if (lg_reqspec_header_is(h, "Content-Length") || lg_reqspec_header_is(h, "Transfer-Encoding")) {
        snprintf(err, LG_REQSPEC_ERR_LEN,
                 "--header '%.*s': loadgen sets it from the body (--body, --body-file, @FILE)",
                 (int)(colon - h), h);
        return -1;
    }
    return 0;
}

/* Keeps a body (heap, taken over) in the list. */
static const char *keep_body(struct lg_reqlist *l, char *body)
{
    l->bodies = xrealloc(l->bodies, (l->nbodies + 1) * sizeof(*l->bodies));
    l->bodies[l->nbodies++] = body;
    return body;
}

static int add(struct lg_reqlist *l, const char *method, const char *path, size_t path_len,
               char *body, size_t body_len, char *err)
{
    struct lg_reqspec *r;

    if (l->n >= LG_REQUESTS_MAX) {
        free(body);
        snprintf(err, LG_REQSPEC_ERR_LEN, "more than %d requests", LG_REQUESTS_MAX);
        return -1;
    }
    if ((l->n & (l->n - 1)) == 0) /* 0, 1, 2, 4...: grow by doubling */
        l->reqs = xrealloc(l->reqs, (l->n ? 2 * l->n : 1) * sizeof(*l->reqs));
    r = &l->reqs[l->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->method, sizeof(r->method), "%s", method);
    r->path = xmalloc(path_len + 1);
    memcpy(r->path, path, path_len);
    r->path[path_len] = '\0';
    if (body != NULL) {
        r->body = keep_body(l, body);
        r->body_len = body_len;
    }
    return 0;
}

int lg_reqlist_add(struct lg_reqlist *l, const char *method, const char *path, const char *body,
                   size_t body_len, char *err)
{
    char *copy = NULL;

    if (body != NULL) {
        if (body_len > LG_BODY_MAX - l->body_total) {
            snprintf(err, LG_REQSPEC_ERR_LEN, "bodies over %llu bytes in all",
                     (unsigned long long)LG_BODY_MAX);
            return -1;
        }
        copy = xmalloc(body_len + 1);
        memcpy(copy, body, body_len);
        l->body_total += body_len;
    }
    return add(l, method, path, strlen(path), copy, body_len, err);
}

/* Reads file whole if it is a regular file of at most cap bytes: 0, or -1 with err. */
static int read_file(const char *file, uint64_t cap, const char *what, char **out, size_t *len,
                     char *err)
{
    struct wholefile f;
    char ebuf[128];

    switch (wholefile_read(file, cap, &f)) {
    case WHOLEFILE_OK:
        *out = f.data;
        *len = f.len;
        return 0;
    case WHOLEFILE_CANNOT_OPEN:
        snprintf(err, LG_REQSPEC_ERR_LEN, "cannot open %s '%.300s': %s", what, file,
                 strerror_r(f.err, ebuf, sizeof(ebuf)));
        break;
    case WHOLEFILE_NOT_REGULAR:
        snprintf(err, LG_REQSPEC_ERR_LEN, "%s '%.300s' is not a regular file", what, file);
        break;
    case WHOLEFILE_TOO_BIG:
        snprintf(err, LG_REQSPEC_ERR_LEN, "%s '%.300s' is %llu bytes, over the limit of %llu",
                 what, file, (unsigned long long)f.size, (unsigned long long)cap);
        break;
    case WHOLEFILE_CANNOT_READ:
        snprintf(err, LG_REQSPEC_ERR_LEN, "cannot read %s '%.300s': %s", what, file,
                 f.err != 0 ? strerror_r(f.err, ebuf, sizeof(ebuf)) : "the file got shorter");
        break;
    }
    return -1;
}

int lg_reqlist_add_file(struct lg_reqlist *l, const char *method, const char *path,
                        const char *file, char *err)
{
    char *body;
    size_t len;

    if (read_file(file, LG_BODY_MAX - l->body_total, "body file", &body, &len, err) < 0)
        return -1;
    l->body_total += len;
    return add(l, method, path, strlen(path), body, len, err);
}

/* Splits s[0..len) at blanks into at most max fields; returns their number (max + 1: more). */
static unsigned fields(const char *s, size_t len, const char **f, size_t *flen, unsigned max)
{
    unsigned n = 0;
    size_t i = 0;

    for (;;) {
        size_t start;
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == len)
            return n;
        if (n == max)
            return max + 1;
        start = i;
        while (i < len && s[i] != ' ' && s[i] != '\t')
            i++;
        f[n] = s + start;
        flen[n++] = i - start;
    }
}

/* One non-blank, non-comment line. 0, or -1 with err (without the "file:line: " prefix). */
static int parse_line(struct lg_reqlist *l, const char *s, size_t len, const char *dir,
                      const char *default_method, char *err)
{
    const char *f[3];
    size_t fl[3];
    unsigned n = fields(s, len, f, fl, 3);
    char method[LG_METHOD_MAX + 1];
    const char *path = f[n == 1 ? 0 : 1];
    size_t plen = fl[n == 1 ? 0 : 1];

    if (n > 3) {
        snprintf(err, LG_REQSPEC_ERR_LEN, "more than 3 fields (PATH, METHOD PATH or METHOD "
                                          "PATH @FILE)");
        return -1;
    }
    if (n == 1) {
        snprintf(method, sizeof(method), "%s", default_method);
    } else {
        if (!lg_reqspec_method_ok(f[0], fl[0])) {
            snprintf(err, LG_REQSPEC_ERR_LEN, "'%.*s' is not a method (an HTTP token of 1-%d "
                     "characters)", (int)(fl[0] < 64 ? fl[0] : 64), f[0], LG_METHOD_MAX);
            return -1;
        }
        memcpy(method, f[0], fl[0]);
        method[fl[0]] = '\0';
    }
    if (!lg_reqspec_path_ok(path, plen)) {
        snprintf(err, LG_REQSPEC_ERR_LEN,
                 "'%.*s' is not a path ('/' then visible ASCII, no blanks)",
                 (int)(plen < 64 ? plen : 64), path);
        return -1;
    }
    if (n == 3) {
        char file[4096];
        char *body;
        size_t blen;

        if (fl[2] < 2 || f[2][0] != '@') {
            snprintf(err, LG_REQSPEC_ERR_LEN, "the third field must be @FILE (the body)");
            return -1;
        }
        if (f[2][1] == '/' || dir[0] == '\0')
            snprintf(file, sizeof(file), "%.*s", (int)(fl[2] - 1), f[2] + 1);
        else
            snprintf(file, sizeof(file), "%s/%.*s", dir, (int)(fl[2] - 1), f[2] + 1);
        if (read_file(file, LG_BODY_MAX - l->body_total, "body file", &body, &blen, err) < 0)
            return -1;
        l->body_total += blen;
        return add(l, method, path, plen, body, blen, err);
    }
    return add(l, method, path, plen, NULL, 0, err);
}

int lg_reqlist_parse(struct lg_reqlist *l, const char *text, size_t len, const char *name,
                     const char *dir, const char *default_method, char *err)
{
    char e[LG_REQSPEC_ERR_LEN];
    size_t pos = 0;
    unsigned lineno = 0;

    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        size_t llen = end - pos;
        const char *s = text + pos;
        size_t i = 0;

        lineno++;
        pos = end + 1;
        if (llen > 0 && s[llen - 1] == '\r')
            llen--;
        if (llen > LG_REQ_LINE_MAX) {
            snprintf(err, LG_REQSPEC_ERR_LEN, "--requests %.300s:%u: longer than %d bytes", name,
                     lineno, LG_REQ_LINE_MAX);
            return -1;
        }
        if (memchr(s, '\0', llen) != NULL || memchr(s, '\r', llen) != NULL) {
            snprintf(err, LG_REQSPEC_ERR_LEN, "--requests %.300s:%u: a NUL or CR in the line",
                     name, lineno);
            return -1;
        }
        while (i < llen && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == llen || s[i] == '#')
            continue;
        if (parse_line(l, s, llen, dir, default_method, e) < 0) {
            snprintf(err, LG_REQSPEC_ERR_LEN, "--requests %.200s:%u: %.280s", name, lineno, e);
            return -1;
        }
    }
    if (l->n == 0) {
        snprintf(err, LG_REQSPEC_ERR_LEN, "--requests %.300s: no request in it", name);
        return -1;
    }
    return 0;
}

int lg_reqlist_load(struct lg_reqlist *l, const char *path, const char *default_method,
                    char *err)
{
    char e[LG_REQSPEC_ERR_LEN];
    char dir[4096];
    const char *slash = strrchr(path, '/');
    char *text;
    size_t len;
    int rc;

    if (read_file(path, LG_REQFILE_MAX, "--requests file", &text, &len, e) < 0) {
        snprintf(err, LG_REQSPEC_ERR_LEN, "%s", e);
        return -1;
    }
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    rc = lg_reqlist_parse(l, text, len, path, dir, default_method, err);
    free(text);
    return rc;
}

void lg_reqlist_release(struct lg_reqlist *l)
{
    for (unsigned i = 0; i < l->n; i++)
        free(l->reqs[i].path);
    for (unsigned i = 0; i < l->nbodies; i++)
        free(l->bodies[i]);
    free(l->reqs);
    free(l->bodies);
    memset(l, 0, sizeof(*l));
}
