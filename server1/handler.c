/*
 * handler.c - see handler.h: routing, and the request's state (struct s1_request, request.h)
 * from its first head to the conn's end. Request targets are routed on their raw path (no
 * decoding; the query string is ignored; absolute-form "http://host/path" is accepted), each
 * route to its module: route_files (GET/HEAD/PUT/DELETE /files/{name}), route_listing
 * (GET/HEAD /files/ and /files/{dir}/), route_users (POST /users, PUT/DELETE /users/{name}),
 * route_admin (/healthz, /metrics); a method a route does not take gets 405 with Allow, a
 * path no route has 404. /metrics is served only on --metrics-listen, which serves nothing but
 * it and /healthz (listener_scope). A PUT /files/{name} comes to route_files with its head only
 * (head). With an HTTPS port, --plain-http decides first what a request on the plain one gets
 * (plain_http_answer).
 */
#include "handler.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net.h"
#include "request.h"
#include "route_admin.h"
#include "route_files.h"
#include "route_listing.h"
#include "route_users.h"
#include "xalloc.h"

/* a longer target on the plain port gets 400, no redirect: the Location header, with a host of
 * up to 255 bytes, must fit the 1,536 bytes of extra headers s1_conn_respond takes */
#define REDIRECT_TARGET_MAX 1024

/* The path of the target (without query), or -1 for a target that is not a path. */
static int target_path(const char *buf, const struct http_request *req, const char **path,
                       size_t *len)
{
    const char *t = http_span_ptr(buf, req->target);
    size_t n = req->target.len;
    const char *q;

    if (n > 0 && t[0] != '/') {
        /* absolute-form: scheme://authority/path */
        size_t skip;
        if (n >= 7 && strncasecmp(t, "http://", 7) == 0)
            skip = 7;
        else if (n >= 8 && strncasecmp(t, "https://", 8) == 0)
            skip = 8;
        else
            return -1;
        q = memchr(t + skip, '/', n - skip);
        if (q == NULL) {
            *path = "/";
            *len = 1;
            return 0;
        }
        n -= (size_t)(q - t);
        t = q;
    }
    q = memchr(t, '?', n);
    if (q != NULL)
        n = (size_t)(q - t);
    *path = t;
    *len = n;
    return 0;
}

static bool path_is(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len == n && memcmp(p, lit, n) == 0;
}

static enum metrics_route route_of(const char *buf, const struct http_request *req)
{
    const char *p;
    size_t len;

    if (target_path(buf, req, &p, &len) < 0)
        return METRICS_ROUTE_OTHER;
    if (len > sizeof(FILES_PREFIX) - 1 && memcmp(p, FILES_PREFIX, sizeof(FILES_PREFIX) - 1) == 0)
        return METRICS_ROUTE_FILES;
    if (path_is(p, len, "/files/"))
        return METRICS_ROUTE_FILES;
    if (path_is(p, len, "/users") ||
        (len > sizeof(USERS_PREFIX) - 1 && memcmp(p, USERS_PREFIX, sizeof(USERS_PREFIX) - 1) == 0))
        return METRICS_ROUTE_USERS;
    if (path_is(p, len, "/healthz"))
        return METRICS_ROUTE_HEALTHZ;
    if (path_is(p, len, "/metrics"))
        return METRICS_ROUTE_METRICS;
    return METRICS_ROUTE_OTHER;
}

static bool method_is_get(const struct http_request *req)
{
    return req->method == HTTP_METHOD_GET || req->method == HTTP_METHOD_HEAD;
}

static enum s1_dispatch dispatch(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *body, size_t body_len)
{
    enum metrics_route route = s1_conn_pub(c)->route;
    const char *path;
    size_t len;

    if (target_path(buf, req, &path, &len) < 0) {
        s1_conn_respond_text(c, 400, NULL, "bad request target\n");
        return S1_DISPATCH_DONE;
    }
    switch (route) {
    case METRICS_ROUTE_FILES:
        if (req->method == HTTP_METHOD_DELETE) /* (a PUT's head went to upload_head) */
            return route_files_change(c, buf, req, path, len);
        if (!method_is_get(req))
            break;
        if (path[len - 1] == '/')
            return route_listing_get(c, buf, req, path, len);
        return route_files_get(c, buf, req, path, len);
    case METRICS_ROUTE_USERS:
        if (!path_is(path, len, "/users")) {
            if (req->method == HTTP_METHOD_PUT || req->method == HTTP_METHOD_DELETE)
                return route_users_change(c, buf, req, path, len, body, body_len);
            s1_conn_respond_text(c, 405, "Allow: PUT, DELETE\r\n", "method not allowed\n");
            return S1_DISPATCH_DONE;
        }
        if (req->method != HTTP_METHOD_POST) {
            s1_conn_respond_text(c, 405, "Allow: POST\r\n", "method not allowed\n");
            return S1_DISPATCH_DONE;
        }
        return route_users_create(c, buf, req, body, body_len);
    case METRICS_ROUTE_HEALTHZ:
        if (!method_is_get(req))
            break;
        return route_admin_healthz(c);
    case METRICS_ROUTE_METRICS:
        if (!method_is_get(req))
            break;
        route_admin_metrics(c);
        return S1_DISPATCH_DONE;
    default:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return S1_DISPATCH_DONE;
    }
    s1_conn_respond_text(c, 405,
                         route == METRICS_ROUTE_FILES ? "Allow: GET, HEAD, PUT, DELETE\r\n"
                                                      : "Allow: GET, HEAD\r\n",
                         "method not allowed\n");
    return S1_DISPATCH_DONE;
}

/* The host of the Host header, without its port, into out (cap bytes); false if none or not a
 * plain name or address (it goes into a Location header). */
static bool host_of(const char *buf, const struct http_request *req, char *out, size_t cap)
{
    const char *h;
    size_t n, i;

    if (req->host < 0)
        return false;
    h = http_span_ptr(buf, req->headers[req->host].value);
    n = req->headers[req->host].value.len;
    if (n > 0 && h[0] == '[') { /* [IPv6]:port */
        const char *e = memchr(h, ']', n);
        if (e == NULL)
            return false;
        n = (size_t)(e - h) + 1;
    } else {
        const char *colon = memchr(h, ':', n);
        if (colon != NULL)
            n = (size_t)(colon - h);
    }
    if (n == 0 || n >= cap)
        return false;
    for (i = 0; i < n; i++) {
        char ch = h[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == ':' || ch == '[' || ch == ']'))
            return false;
    }
    memcpy(out, h, n);
    out[n] = '\0';
    return true;
}

/*
 * --plain-http on the plain port of a server with HTTPS: redirect answers 308 with the same
 * target on the HTTPS port (but /healthz, which balancers check); no-credentials answers 403 to
 * a request that carries credentials or creates, changes or deletes an account, unless it
 * comes from a loopback address. Either way the connection closes (a body may follow unread)
 * and nothing reaches server2. Whether it answered.
 */
static bool plain_http_answer(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    const struct s1_service *svc = request_env(c)->svc;
    struct s1_conn_pub *pub = s1_conn_pub(c);
    char host[256];
    char extra[sizeof(host) + REDIRECT_TARGET_MAX + 64];
    const char *t;
    size_t n;

    if (pub->secure || svc->https_port == 0 || svc->cfg->plain_http == S1_PLAIN_OPEN)
        return false;
    if (svc->cfg->plain_http == S1_PLAIN_NO_CREDENTIALS) {
        if (net_addr_key_is_loopback(pub->peer) ||
            (req->authorization < 0 && pub->route != METRICS_ROUTE_USERS))
            return false;
        s1_conn_respond_fatal(c, 403, NULL, "credentials are taken over HTTPS only\n");
        return true;
    }
    if (pub->route == METRICS_ROUTE_HEALTHZ)
        return false;
    t = http_span_ptr(buf, req->target);
    n = req->target.len;
    if (n > 0 && t[0] != '/') { /* absolute-form: its path */
        const char *p = n > 8 ? memchr(t + 8, '/', n - 8) : NULL;
        n = p != NULL ? n - (size_t)(p - t) : 1;
        t = p != NULL ? p : "/";
    }
    if (!host_of(buf, req, host, sizeof(host)) || n > REDIRECT_TARGET_MAX) {
        s1_conn_respond_fatal(c, 400, NULL, "a redirect to HTTPS needs a Host header and a "
                                            "target of at most 1024 bytes\n");
        return true;
    }
    snprintf(extra, sizeof(extra), "Location: https://%s:%u%.*s\r\n", host,
             (unsigned)svc->https_port, (int)n, t);
    s1_conn_respond_fatal(c, 308, extra, "moved to HTTPS\n");
    return true;
}

/*
 * What a listener serves: --metrics-listen /metrics and /healthz only, the public ports all but
 * /metrics. A request for anything else goes on as one for an unknown path (404 by dispatch),
 * counted as such.
 */
static void listener_scope(struct s1_conn *c)
{
    struct s1_conn_pub *pub = s1_conn_pub(c);
    bool admin = pub->route == METRICS_ROUTE_METRICS || pub->route == METRICS_ROUTE_HEALTHZ;

    if (pub->metrics_only ? !admin : pub->route == METRICS_ROUTE_METRICS)
        pub->route = METRICS_ROUTE_OTHER;
}

static enum s1_head head(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    if (request_of(c) == NULL)
        s1_conn_pub(c)->req = xmalloc(sizeof(*request_of(c)));
    /* (the name and user buffers are written before they are read) */
    request_of(c)->name_len = 0;
    request_of(c)->name_ok = false;
    request_of(c)->user[0] = '\0';
    request_of(c)->cred_cacheable = false;
    request_of(c)->auth_pending = false;
    request_of(c)->login_held = false;
    request_of(c)->login_keyed = false;
    request_of(c)->login_known = false;
    request_of(c)->up_len = 0;
    request_of(c)->up_chunked = false;
    request_of(c)->up_open = false;
    request_of(c)->uploading = false;
    request_of(c)->up = (struct commit_body){.fd = -1};
    request_of(c)->job = NULL;
    request_of(c)->read = NULL;
    listener_scope(c);
    if (!s1_conn_pub(c)->metrics_only && plain_http_answer(c, buf, req))
        return S1_HEAD_DONE;
    if (s1_conn_pub(c)->route == METRICS_ROUTE_FILES && req->method == HTTP_METHOD_PUT) {
        const char *path;
        size_t len;
        if (target_path(buf, req, &path, &len) < 0) { /* (route_of said it is a path) */
            s1_conn_respond_fatal(c, 400, NULL, "bad request target\n");
            return S1_HEAD_DONE;
        }
        return route_files_put_head(c, buf, req, path, len);
    }
    return S1_HEAD_WHOLE;
}

static void answered(struct s1_conn *c)
{
    route_files_drop(c); /* an upload refused before or while its body came */
}

/*
 * The conn goes away: an answer pending, when it comes, finds nobody. Its login keeps its
 * tokens: server2 may be checking the password all the same (else a client that closes
 * right after each guess would have it hashed for free).
 */
static void release(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);

    if (r->auth_pending)
        authclient_cancel(request_env(c)->auth, r->auth_handle);
    r->login_held = false;
    sodium_memzero(&r->login_key, sizeof(r->login_key));
    if (r->job != NULL)
        r->job->c = NULL;
    route_files_drop(c); /* (and a file being read: its read ends without it) */
    sodium_memzero(&r->cred_key, sizeof(r->cred_key));
    free(r);
    s1_conn_pub(c)->req = NULL;
}

const struct s1_conn_handler s1_handler = {
    .route = route_of,
    .head = head,
    .dispatch = dispatch,
    .answered = answered,
    .release = release,
};
