/*
 * workload.c - see workload.h. Requests are assembled with a small appender rather than a
 * format string, and the password only ever lives in request buffers sent to the server.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* A bounded string builder over a heap buffer. */
struct lg_sb {
    char *buf;
    size_t len;
    size_t cap;
};

static void sb_addn(struct lg_sb *sb, const char *s, size_t n)
{
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (sb->len + n + 1 > cap)
            cap *= 2;
        sb->buf = xrealloc(sb->buf, cap);
        sb->cap = cap;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void sb_add(struct lg_sb *sb, const char *s)
{
    sb_addn(sb, s, strlen(s));
}

static void sb_add_u64(struct lg_sb *sb, uint64_t v)
{
    char d[24];
    int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v);
    sb_addn(sb, d, (size_t)n);
}

/* Appends width zero digits and returns their offset. */
static size_t sb_add_slot(struct lg_sb *sb, size_t width)
{
    size_t off = sb->len;
    for (size_t i = 0; i < width; i++)
        sb_addn(sb, "0", 1);
    return off;
}

void lg_workload_init(struct lg_workload *w, const struct lg_config *cfg, const char *run_id)
{
    unsigned sum = 0;

    memset(w, 0, sizeof(*w));
    w->cfg = cfg;
    snprintf(w->run_id, sizeof(w->run_id), "%s", run_id);
    for (int t = 0; t < LG_REQ_TYPES; t++) {
        sum += cfg->weight[t];
        w->weight_upto[t] = sum;
    }
    w->weight_total = sum;
    if (cfg->weight[LG_REQ_PUT] > 0) {
        /* incompressible and deterministic for a seed; one allocation for the whole run */
        uint64_t rng = lg_rng_seed(cfg->seed, 0x707574);
        size_t n = (size_t)cfg->put_size;

        w->put_body = xmalloc(n > 0 ? n : 1);
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = lg_rng_next(&rng);
            memcpy(w->put_body + i, &v, n - i < 8 ? n - i : 8);
        }
    }
    if (cfg->names.kind != LG_NAMES_NONE) {
        lg_pick_init(&w->pick, cfg->pick_kind, cfg->zipf_s, cfg->names.n);
        if (cfg->names_spread)
            lg_pick_spread(&w->pick, cfg->seed);
    }
    if (cfg->weight[LG_REQ_CUSTOM] > 0 && cfg->reqs.n > 0) {
        w->custom = xcalloc(cfg->reqs.n, sizeof(*w->custom));
        w->ncustom = cfg->reqs.n;
        for (unsigned i = 0; i < cfg->reqs.n; i++)
            lg_workload_build_custom(w, &cfg->reqs.reqs[i], &w->custom[i]);
    }
}

void lg_workload_release(struct lg_workload *w)
{
    free(w->put_body);
    w->put_body = NULL;
    for (unsigned i = 0; i < w->ncustom; i++)
        lg_reqbuf_release(&w->custom[i]);
    free(w->custom);
    w->custom = NULL;
    w->ncustom = 0;
}

int lg_workload_pick(const struct lg_workload *w, uint64_t *rng)
{
    unsigned draw;
    int t;

    /* a single type needs no draw, so the RNG stream of single-type runs is untouched */
    for (t = 0; t < LG_REQ_TYPES; t++)
        if (w->weight_upto[t] == w->weight_total)
            break;
    if (t == 0 || w->weight_upto[t - 1] == 0)
        return t < LG_REQ_TYPES ? t : LG_REQ_GET;
    draw = (unsigned)(lg_rng_next(rng) % w->weight_total);
    for (t = 0; t < LG_REQ_TYPES - 1; t++)
        if (draw < w->weight_upto[t])
            break;
    return t;
}

size_t lg_base64(const void *in, size_t len, char *out)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = in;
    size_t o = 0;
    size_t i = 0;

    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        out[o++] = tbl[v >> 18];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = tbl[(v >> 6) & 63];
        out[o++] = tbl[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0);
        out[o++] = tbl[v >> 18];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

size_t lg_urlencode(const char *in, size_t len, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return o;
}

void lg_workload_prepared_name(const struct lg_workload *w, uint64_t index, char *out, size_t cap)
{
    snprintf(out, cap, "lg%sp%0*llu", w->run_id, LG_SERIAL_DIGITS,
             (unsigned long long)(index % 1000000000ull));
}

/* "METHOD <prefix><path><path2> HTTP/1.1" and the Host header. */
static void start_line(const struct lg_workload *w, struct lg_sb *sb, const char *method,
                       const char *path, const char *path2)
{
    sb_add(sb, method);
    sb_add(sb, " ");
    sb_add(sb, w->cfg->target.prefix);
    sb_add(sb, path);
    sb_add(sb, path2);
    sb_add(sb, " HTTP/1.1\r\nHost: ");
    sb_add(sb, w->cfg->target.host_header);
    sb_add(sb, "\r\n");
}

/* "Authorization: Basic ..." of prepared account cred (>= 0) or of --username (-1). */
static void add_auth(const struct lg_workload *w, struct lg_sb *sb, long cred)
{
    char user[ACCOUNT_USER_MAX + 1];
    char plain[ACCOUNT_USER_MAX + 1 + ACCOUNT_PASS_MAX + 1];
    char b64[(sizeof(plain) / 3 + 1) * 4 + 1];
    size_t ulen;
    size_t plen = strlen(w->cfg->password);

    if (cred >= 0)
        lg_workload_prepared_name(w, (uint64_t)cred, user, sizeof(user));
    else
        snprintf(user, sizeof(user), "%s", w->cfg->username);
    ulen = strlen(user);
    memcpy(plain, user, ulen);
    plain[ulen] = ':';
    memcpy(plain + ulen + 1, w->cfg->password, plen);
    lg_base64(plain, ulen + 1 + plen, b64);
    sb_add(sb, "Authorization: Basic ");
    sb_add(sb, b64);
    sb_add(sb, "\r\n");
    memset(plain, 0, sizeof(plain));
    memset(b64, 0, sizeof(b64));
}

void lg_workload_build_put(const struct lg_workload *w, long cred, unsigned user,
                           struct lg_reqbuf *out)
{
    struct lg_sb sb = {0};
    char name[64];

    snprintf(name, sizeof(name), "lg-%s-%u-", w->run_id, user);
    sb_add(&sb, "PUT ");
    sb_add(&sb, w->cfg->target.prefix);
    sb_add(&sb, "/files/");
    sb_add(&sb, name);
    out->slot_off = sb_add_slot(&sb, 1);
    sb_add(&sb, " HTTP/1.1\r\nHost: ");
    sb_add(&sb, w->cfg->target.host_header);
    sb_add(&sb, "\r\n");
    add_auth(w, &sb, cred);
    sb_add(&sb, "Content-Type: application/octet-stream\r\nContent-Length: ");
    sb_add_u64(&sb, w->cfg->put_size);
    sb_add(&sb, "\r\n\r\n");
    out->buf = sb.buf;
    out->len = sb.len;
    out->slot_len = 1;
    out->slot_mod = LG_PUT_NAMES;
    out->body = w->put_body;
    out->body_len = (size_t)w->cfg->put_size;
}

void lg_workload_file_of(const char *list, unsigned user, char *out, size_t cap)
{
    unsigned n = 1;
    const char *p = list;
    size_t len;

    for (const char *q = list; *q != '\0'; q++)
        n += *q == ',';
    for (unsigned k = user % n; k > 0; k--)
        p = strchr(p, ',') + 1;
    len = strcspn(p, ",");
    if (cap == 0)
        return;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
}

void lg_workload_build_get(const struct lg_workload *w, long cred, unsigned user,
                           struct lg_reqbuf *out)
{
    struct lg_sb sb = {0};
    char name[sizeof(w->cfg->file)];

    memset(out, 0, sizeof(*out));
    if (w->cfg->names.kind != LG_NAMES_NONE) {
        sb_add(&sb, "GET ");
        sb_add(&sb, w->cfg->target.prefix);
        sb_add(&sb, "/files/");
        out->has_name = true;
        out->name_off = sb.len;
        sb_add(&sb, " HTTP/1.1\r\nHost: ");
        sb_add(&sb, w->cfg->target.host_header);
        sb_add(&sb, "\r\n");
    } else {
        lg_workload_file_of(w->cfg->file, user, name, sizeof(name));
        start_line(w, &sb, "GET", "/files/", name);
    }
    if (cred != -2)
        add_auth(w, &sb, cred);
    sb_add(&sb, "\r\n");
    out->buf = sb.buf;
    out->len = sb.len;
    out->slot_off = 0;
    out->slot_len = 0;
}

/* POST /users with body "username=<prefix><slot>&password=<encoded>". */
static void build_post(const struct lg_workload *w, const char *name_prefix, size_t slot_digits,
                       struct lg_reqbuf *out)
{
    struct lg_sb sb = {0};
    char pass_enc[ACCOUNT_PASS_MAX * 3 + 1];
    size_t pass_len = lg_urlencode(w->cfg->password, strlen(w->cfg->password), pass_enc);
    size_t body_len =
        strlen("username=") + strlen(name_prefix) + slot_digits + strlen("&password=") + pass_len;

    start_line(w, &sb, "POST", "/users", "");
    sb_add(&sb, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ");
    sb_add_u64(&sb, body_len);
    sb_add(&sb, "\r\n\r\nusername=");
    sb_add(&sb, name_prefix);
    out->slot_off = sb_add_slot(&sb, slot_digits);
    out->slot_len = slot_digits;
    sb_add(&sb, "&password=");
    sb_addn(&sb, pass_enc, pass_len);
    memset(pass_enc, 0, sizeof(pass_enc));
    out->buf = sb.buf;
    out->len = sb.len;
}

void lg_workload_build_new(const struct lg_workload *w, uint64_t serial, struct lg_reqbuf *out)
{
    char prefix[64];

    snprintf(prefix, sizeof(prefix), "lg%sn%0*lluc", w->run_id, LG_SERIAL_DIGITS,
             (unsigned long long)(serial % 1000000000ull));
    build_post(w, prefix, LG_SLOT_DIGITS, out);
}

void lg_workload_build_prepare(const struct lg_workload *w, struct lg_reqbuf *out)
{
    char prefix[64];

    snprintf(prefix, sizeof(prefix), "lg%sp", w->run_id);
    build_post(w, prefix, LG_SERIAL_DIGITS, out);
}

void lg_workload_build_custom(const struct lg_workload *w, const struct lg_reqspec *r,
                              struct lg_reqbuf *out)
{
    const struct lg_config *cfg = w->cfg;
    struct lg_sb sb = {0};
    bool sends_body = r->body != NULL || strcmp(r->method, "POST") == 0 ||
                      strcmp(r->method, "PUT") == 0 || strcmp(r->method, "PATCH") == 0;
    const char *slot = cfg->names.kind != LG_NAMES_NONE ? strstr(r->path, LG_NAME_SLOT) : NULL;

    memset(out, 0, sizeof(*out));
    sb_add(&sb, r->method);
    sb_add(&sb, " ");
    sb_add(&sb, cfg->target.prefix);
    if (slot != NULL) {
        sb_addn(&sb, r->path, (size_t)(slot - r->path));
        out->has_name = true;
        out->name_off = sb.len;
        sb_add(&sb, slot + strlen(LG_NAME_SLOT));
    } else {
        sb_add(&sb, r->path);
    }
    sb_add(&sb, " HTTP/1.1\r\n");
    if (!cfg->host_header) {
        sb_add(&sb, "Host: ");
        sb_add(&sb, cfg->target.host_header);
        sb_add(&sb, "\r\n");
    }
    if (cfg->username[0] != '\0')
        add_auth(w, &sb, -1);
    for (unsigned i = 0; i < cfg->nheaders; i++) {
        sb_add(&sb, cfg->headers[i]);
        sb_add(&sb, "\r\n");
    }
    if (sends_body) {
        sb_add(&sb, "Content-Length: ");
        sb_add_u64(&sb, r->body_len);
        sb_add(&sb, "\r\n");
    }
    sb_add(&sb, "\r\n");
    out->buf = sb.buf;
    out->len = sb.len;
    out->body = r->body_len > 0 ? r->body : NULL;
    out->body_len = r->body_len;
    out->head = strcmp(r->method, "HEAD") == 0;
}

unsigned lg_workload_next_custom(const struct lg_workload *w, unsigned *next, uint64_t *rng)
{
    unsigned i;

    if (w->ncustom <= 1)
        return 0;
    if (w->cfg->requests_order == LG_ORDER_RANDOM)
        return (unsigned)(lg_rng_next(rng) % w->ncustom);
    i = *next % w->ncustom;
    *next = i + 1;
    return i;
}

bool lg_workload_fill_name(const struct lg_workload *w, const struct lg_reqbuf *r,
                           struct lg_namebuf *nb, uint64_t *rng)
{
    const struct lg_names *names = &w->cfg->names;
    size_t need;
    size_t at;

    if (!r->has_name)
        return false;
    need = r->len + names->len_max;
    if (need > nb->cap) { /* once per connection (and request with a longer head) */
        nb->buf = xrealloc(nb->buf, need);
        nb->cap = need;
    }
    memcpy(nb->buf, r->buf, r->name_off);
    at = r->name_off + lg_names_get(names, lg_pick_draw(&w->pick, rng), nb->buf + r->name_off);
    memcpy(nb->buf + at, r->buf + r->name_off, r->len - r->name_off);
    nb->len = at + r->len - r->name_off;
    return true;
}

void lg_namebuf_release(struct lg_namebuf *nb)
{
    if (nb->buf != NULL)
        memset(nb->buf, 0, nb->cap); /* may hold the password */
    free(nb->buf);
    memset(nb, 0, sizeof(*nb));
}

void lg_reqbuf_set_slot(struct lg_reqbuf *r, uint64_t value)
{
    char *d = r->buf + r->slot_off;

    if (r->slot_mod > 0)
        value %= r->slot_mod;
    for (size_t i = r->slot_len; i > 0; i--) {
        d[i - 1] = (char)('0' + value % 10);
        value /= 10;
    }
}

void lg_reqbuf_release(struct lg_reqbuf *r)
{
    if (r->buf != NULL)
        memset(r->buf, 0, r->len); /* may hold the password */
    free(r->buf);
    memset(r, 0, sizeof(*r));
}
