/* route_listing.c - see route_listing.h. */
#include "route_listing.h"

#include <string.h>

#include "clock.h"
#include "listing.h"
#include "log.h"
#include "login.h"
#include "ratelimit.h"
#include "request.h"

/* the HTML listing is server1's own page: no script, nothing loaded, not framed */
#define HDR_LISTING_CSP                                                                        \
    "Content-Security-Policy: default-src 'none'; base-uri 'none'; form-action 'none'; "      \
    "frame-ancestors 'none'\r\n"

/* A listing whose credentials are accepted: JSON or HTML, or 404 for no such directory. */
static void list_verified(struct s1_conn *c)
{
    const struct s1_service *svc = request_env(c)->svc;
    struct s1_request *r = request_of(c);
    struct listing_scope sc = {.dir = r->name, .dir_len = r->name_len, .user = r->user,
                               .private_uploads = svc->cfg->private_uploads,
                               .max = svc->cfg->max_list,
                               .after = r->after_len > 0 ? r->after : NULL,
                               .after_len = r->after_len, .after_dir = r->after_dir};
    struct s1_body b;
    struct listing l;
    size_t len;
    char *page;
    uint64_t wait;
    int rc;

    if (!r->name_ok) {
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return;
    }
    wait = svc->list != NULL ? ratelimit_take(svc->list, r->user, strlen(r->user), clock_now_ns())
                             : 0;
    if (wait > 0) {
        request_limited(c, METRICS_LIMIT_LIST, wait, "too many listings, retry later\n");
        return;
    }
    rc = listing_build(svc->files, svc->commit, &sc, &l);
    if (rc < 0) {
        listing_free(&l);
        request_file_error(c, -rc);
        return;
    }
    page = r->want_html ? listing_html(&l, r->name, r->name_len, &len)
                        : listing_json(&l, r->name, r->name_len, &len);
    body_mem_owned(&b, page, len, page);
    listing_free(&l);
    if (r->want_html)
        s1_conn_respond(c, 200, "text/html; charset=utf-8", "Vary: Accept\r\n" HDR_LISTING_CSP,
                        &b);
    else
        s1_conn_respond(c, 200, "application/json", "Vary: Accept\r\n", &b);
}

static void on_list_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    login_verified(arg, st, retry_ms, list_verified);
}

/*
 * GET or HEAD of a path under /files/ that ends in '/': the directory's name into
 * the request's name ("" for /files/ itself), name_ok false for one that could not be valid.
 */
static void decode_dir(struct s1_conn *c, const char *path, size_t len)
{
    struct s1_request *r = request_of(c);
    const char *raw = path + sizeof(FILES_PREFIX) - 1;
    size_t n = len - (sizeof(FILES_PREFIX) - 1);
    const char *why = NULL;

    r->name[0] = '\0';
    r->name_len = 0;
    r->name_ok = true;
    if (n == 0)
        return;
    r->name_ok = files_name_decode(raw, n - 1, r->name, sizeof(r->name), &r->name_len, &why) ==
                     0 &&
                 !files_name_is_reserved(r->name, r->name_len);
    if (!r->name_ok)
        log_debug("/files: bad directory: %s", why != NULL ? why : "reserved name");
}

/* A listing's cursor (?after=) into request_of(c); false after answering 400 for a bad one. */
static bool keep_cursor(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    struct s1_request *r = request_of(c);
    const char *t = http_span_ptr(buf, req->target);
    const char *q = memchr(t, '?', req->target.len);

    r->after_len = 0;
    r->after_dir = false;
    if (q == NULL || listing_after_parse(q + 1, req->target.len - (size_t)(q + 1 - t),
                                         r->after, sizeof(r->after),
                                         &r->after_len, &r->after_dir) >= 0)
        return true;
    s1_conn_respond_text(c, 400, NULL, "bad after= in a listing's query\n");
    return false;
}

enum s1_dispatch route_listing_get(struct s1_conn *c, const char *buf,
                                   const struct http_request *req, const char *path,
                                   size_t len)
{
    const char *accept = NULL;
    size_t accept_len = 0;

    for (unsigned i = 0; i < req->nheaders; i++) {
        if (request_field_is(buf, req->headers[i].name, "accept", 6)) {
            accept = http_span_ptr(buf, req->headers[i].value);
            accept_len = req->headers[i].value.len;
            break;
        }
    }
    request_of(c)->want_html = listing_wants_html(accept, accept_len);
    if (!keep_cursor(c, buf, req))
        return S1_DISPATCH_DONE;
    decode_dir(c, path, len);
    return login_verify(c, buf, req, on_list_verify, list_verified);
}
