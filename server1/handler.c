/*
 * handler.c - see handler.h. Request targets are routed on their raw path (no decoding; the
 * query string is ignored; absolute-form "http://host/path" is accepted). Under /files/ the rule
 * is uniform: 401 unless the credentials are accepted, then 404 for anything that is not a
 * servable file - a missing one, a directory, a link out of the root, or a name that could never
 * be valid (traversal, NUL, ...). Names are checked before asking server2 and never reach the
 * filesystem when invalid. Names in the reserved namespace (FILES_RESERVED_PREFIX: upload temp
 * files) count as invalid. A GET or HEAD is answered from the one source source_resolve finds
 * (source.h), by answer_get; one of a path ending in '/' gets the directory's listing
 * (listing.h), JSON or HTML by the Accept field. An upload of an active type
 * (mimetypes_is_active: HTML, XML, script), or any file of one with --sandbox-root, is sent as
 * an attachment in a CSP sandbox (HDR_SANDBOX): it must not run as the site, whose Basic
 * credentials the reader's browser holds; the HTML listing has a CSP without script. PUT and
 * DELETE /files/{name} follow the same rule, then go to the committer (commit.h) with their
 * preconditions (If-Match, If-None-Match, If-Unmodified-Since: it judges them against the
 * name's version when it makes the change), whose answer (commit_done, through the thread's
 * mailbox) completes the request. A PUT comes here with its head only: its body is read once
 * the credentials, the name and the quotas (commit_quota_check) are accepted, and comes back in
 * upload_received.
 * Per-client limits (ratelimit.h) are applied before server2 is asked: a username or client
 * address over its failed-login limit, or an address over its sign-up limit, gets 429 with
 * Retry-After and server2 never sees the request. The check before each login (also one the
 * credential cache answers) is a lock-free read; a login sent to server2 first takes a token
 * of both (login_reserve), which it gives back unless the password was wrong
 * (login_answered), so that guesses sent at once cannot outnumber the tokens left.
 * With --auth-cache, a GET or HEAD whose (user, password) this thread's cache holds (credcache.h)
 * is answered at once, without server2, while a server2 leases this thread (authclient.h);
 * uploads, deletions and account changes always ask it.
 * PUT and DELETE /users/{name} change or delete the account the credentials are for (only
 * one's own: 403 otherwise).
 */
#include "handler.h"

#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "authclient.h"
#include "basic_auth.h"
#include "clock.h"
#include "form.h"
#include "httpcond.h"
#include "httpdate.h"
#include "httprange.h"
#include "listing.h"
#include "log.h"
#include "ratelimit.h"
#include "source.h"
#include "xalloc.h"

#define HDR_RETRY "Retry-After: 1\r\n"
#define HDR_AUTHN "WWW-Authenticate: Basic realm=\"files\"\r\n"
#define HDR_ALLOW_READ "Allow: GET, HEAD\r\n" /* --read-only: no PUT, no DELETE */
/* a file that could run script in the server's origin: a download, and if it is opened
 * anyway, a document of its own opaque origin that runs nothing and loads nothing */
#define HDR_SANDBOX                                                                            \
    "Content-Disposition: attachment\r\n"                                                      \
    "Content-Security-Policy: sandbox; default-src 'none'\r\n"
/* the HTML listing is server1's own page: no script, nothing loaded, not framed */
#define HDR_LISTING_CSP                                                                        \
    "Content-Security-Policy: default-src 'none'; base-uri 'none'; form-action 'none'; "      \
    "frame-ancestors 'none'\r\n"
#define FILES_PREFIX "/files/"
#define USERS_PREFIX "/users/"
#define TEXT_READ_ONLY "uploads are disabled (--read-only)\n"

/*
 * A field of the head kept for later: present, its value in hv (off, len), or bad (repeated
 * where one is allowed, or longer than what is left of hv): then it is treated as unreadable,
 * which the rules of httpcond.h and httprange.h turn into the safe answer (no 304, no range).
 */
struct hfield {
    bool present;
    bool bad;
    uint16_t off;
    uint16_t len;
};

#define HV_MAX 1024 /* bytes of conditional and range field values kept per request */
_Static_assert(HV_MAX <= COMMIT_COND_MAX, "a PUT's or DELETE's conditions fit in its job");

/*
 * The request being answered on a conn (c->req): created at its first head, reset at each
 * head, freed with the conn. What it holds (a server2 request, an upload's body, a commit job)
 * is let go when the request is answered (answered) or the conn goes (release).
 */
struct s1_request {
    char name[FILES_NAME_MAX + 1]; /* decoded file name, kept while auth is in flight; for a
                                      listing the directory's ("" for the root) */
    size_t name_len;
    bool name_ok;                  /* the name passed files_name_decode (else 404 after auth) */
    bool want_html;                /* a listing: Accept prefers text/html to JSON */
    char after[FILES_SEGMENT_MAX + 1]; /* a listing's cursor (?after=), after_len bytes */
    size_t after_len;              /* 0: none */
    bool after_dir;
    char user[ACCOUNT_USER_MAX + 1]; /* PUT/DELETE: who asked, kept while auth is in flight */
    struct credcache_key cred_key; /* GET with --auth-cache: what to put in on success */
    uint64_t cred_epoch;           /* the cache's epoch when the VERIFY was sent */
    bool cred_cacheable;           /* cred_key is set: a success may be cached */
    bool auth_pending;             /* auth_handle is a server2 request in flight */
    bool login_held;               /* its login holds a failed-login token of the username and
                                      of the address (login_reserve) until server2 answers */
    bool login_keyed;              /* login_key is set (per-client login limits on) */
    bool login_known;              /* server2 accepted these credentials lately: no token held */
    struct credcache_key login_key; /* keyed hash of (user, password), for sh->known_logins */
    uint64_t auth_handle;
    /* PUT /files/{name} */
    uint64_t up_len;               /* Content-Length */
    bool up_open;                  /* counted in the committer's open uploads (until submitted) */
    bool uploading;                /* up is being received */
    struct commit_body up;
    struct commit_job *job;        /* submitted to the committer; its answer is pending */
    /* /files/: the fields of conditions and ranges, copied from the head (which is gone when
     * server2 answers); their values lie one after another in hv */
    struct hfield range, if_range, if_match, if_none_match;
    struct httpcond_date if_modified_since, if_unmodified_since;
    bool if_range_date_valid;
    int64_t if_range_date;
    size_t hv_len;
    char hv[HV_MAX];
};

/* The handler's state of the conn's thread (handler.h). */
static inline struct s1_handler_env *env_of(const struct s1_conn *c)
{
    return c->home->handler_arg;
}

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

static void respond_unavailable(struct s1_conn *c)
{
    s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable, retry later\n");
}

/* ---- per-client limits ---- */

/* 429 with Retry-After (seconds until a token returns); server2 is not asked. */
static void respond_limited(struct s1_conn *c, enum metrics_limit kind, uint64_t wait_ns,
                            const char *text)
{
    char hdr[48];

    snprintf(hdr, sizeof(hdr), "Retry-After: %llu\r\n",
             (unsigned long long)ratelimit_retry_after_s(wait_ns));
    metrics_add(&c->home->metrics->ratelimited[kind], 1);
    s1_conn_respond_text(c, 429, hdr, text);
}

/*
 * server2 said the user's failed logins, counted in the database every server2 (and so every
 * server1) shares, are over its --login-fail-limit: 429, retry_ms from server2 as Retry-After.
 */
static void respond_limited_by_server2(struct s1_conn *c, uint32_t retry_ms)
{
    respond_limited(c, METRICS_LIMIT_LOGIN_SHARED, (uint64_t)retry_ms * 1000000ull,
                    "too many failed logins for this user, retry later\n");
}

/*
 * Before a login (c->req->user set): true after answering 429 if the username or the client address
 * is over its failed-login limit. A lockout holds every login as that user, the right password
 * too: otherwise the answer would tell a guesser when a guess was right.
 */
static bool login_limited(struct s1_conn *c)
{
    const struct s1_service *sh = env_of(c)->svc;
    uint64_t wait_user = 0;
    uint64_t wait_addr = 0;
    uint64_t now;

    if (sh->login_fail_user == NULL && sh->login_fail_addr == NULL)
        return false;
    now = clock_now_ns();
    if (sh->login_fail_user != NULL)
        wait_user = ratelimit_check(sh->login_fail_user, c->req->user, strlen(c->req->user), now);
    if (sh->login_fail_addr != NULL)
        wait_addr = ratelimit_check(sh->login_fail_addr, c->peer, sizeof(c->peer), now);
    if (wait_user == 0 && wait_addr == 0)
        return false;
    if (wait_user >= wait_addr)
        respond_limited(c, METRICS_LIMIT_LOGIN_USER, wait_user,
                        "too many failed logins for this user, retry later\n");
    else
        respond_limited(c, METRICS_LIMIT_LOGIN_ADDR, wait_addr,
                        "too many failed logins from your address, retry later\n");
    return true;
}

/*
 * Just before server2 is asked to check c->req->user's password pass: takes a failed-login
 * token of the username and one of the client address, as if the password were wrong, so that
 * no more guesses wait for server2 at once than tokens are left (checking first and counting
 * failures as they came back let a burst of guesses sent together all through). Credentials
 * server2 accepted lately (sh->known_logins) are no guess: they take no token, so a
 * client's burst of requests with its right password is not refused (32 parallel GETs of one
 * user held 32 tokens of a limit of 20 while server2 was slow). False after answering 429 if
 * a token is missing (nothing is held then). login_answered settles them.
 */
static bool login_reserve(struct s1_conn *c, const char *pass, size_t pass_len)
{
    const struct s1_service *sh = env_of(c)->svc;
    uint64_t now = clock_now_ns();
    uint64_t wait;

    if (sh->known_logins != NULL) {
        if (c->req->cred_cacheable) /* cache_answers hashed the same (user, password) */
            c->req->login_key = c->req->cred_key;
        else
            credcache_key(c->req->user, strlen(c->req->user), pass, pass_len, &c->req->login_key);
        c->req->login_keyed = true;
        if (credcache_shared_hit(sh->known_logins, &c->req->login_key, now)) {
            c->req->login_known = true;
            return true;
        }
    }

    if (sh->login_fail_user != NULL) {
        wait = ratelimit_take(sh->login_fail_user, c->req->user, strlen(c->req->user), now);
        if (wait > 0) {
            respond_limited(c, METRICS_LIMIT_LOGIN_USER, wait,
                            "too many failed logins for this user, retry later\n");
            return false;
        }
    }
    if (sh->login_fail_addr != NULL) {
        wait = ratelimit_take(sh->login_fail_addr, c->peer, sizeof(c->peer), now);
        if (wait > 0) {
            if (sh->login_fail_user != NULL)
                ratelimit_refund(sh->login_fail_user, c->req->user, strlen(c->req->user));
            respond_limited(c, METRICS_LIMIT_LOGIN_ADDR, wait,
                            "too many failed logins from your address, retry later\n");
            return false;
        }
    }
    c->req->login_held = true;
    return true;
}

/*
 * server2 answered c's login (or it was never sent): a wrong password (wrong) keeps the tokens
 * login_reserve took; anything else gives them back: an accepted password (accepted; then the
 * credentials are known good), and an answer that says nothing about it
 * (unavailable, expired, timed out, the link lost), so that an outage does not lock out the
 * users who retry through it. (A request whose client goes away first keeps them: release.)
 * Known credentials found wrong (the password changed since) are forgotten and charged a
 * failure after the fact.
 */
static void login_answered(struct s1_conn *c, bool wrong, bool accepted)
{
    const struct s1_service *sh = env_of(c)->svc;
    uint64_t now;

    if (c->req->login_keyed) {
        now = clock_now_ns();
        if (accepted) {
            credcache_shared_put(sh->known_logins, &c->req->login_key, now);
        } else if (wrong && c->req->login_known) {
            credcache_shared_drop_user(sh->known_logins, c->req->user, strlen(c->req->user));
            if (sh->login_fail_user != NULL)
                (void)ratelimit_take(sh->login_fail_user, c->req->user, strlen(c->req->user),
                                     now);
            if (sh->login_fail_addr != NULL)
                (void)ratelimit_take(sh->login_fail_addr, c->peer, sizeof(c->peer), now);
        }
        sodium_memzero(&c->req->login_key, sizeof(c->req->login_key));
        c->req->login_keyed = false;
        c->req->login_known = false;
    }
    if (!c->req->login_held)
        return;
    c->req->login_held = false;
    if (wrong)
        return;
    if (sh->login_fail_user != NULL)
        ratelimit_refund(sh->login_fail_user, c->req->user, strlen(c->req->user));
    if (sh->login_fail_addr != NULL)
        ratelimit_refund(sh->login_fail_addr, c->peer, sizeof(c->peer));
}

/* Before a CREATE: takes a token of the address; false after answering 429 if it had none. */
static bool signup_allowed(struct s1_conn *c)
{
    struct ratelimit *rl = env_of(c)->svc->signup;
    uint64_t wait;

    if (rl == NULL)
        return true;
    wait = ratelimit_take(rl, c->peer, sizeof(c->peer), clock_now_ns());
    if (wait == 0)
        return true;
    respond_limited(c, METRICS_LIMIT_SIGNUP, wait,
                    "too many accounts created from your address, retry later\n");
    return false;
}

/* ---- POST /users ---- */

/* A form request's head: urlencoded, with a Content-Length; false after answering 415/411. */
static bool form_body_ok(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    if (req->content_type < 0 ||
        !http_form_is_urlencoded(http_span_ptr(buf, req->headers[req->content_type].value),
                                 req->headers[req->content_type].value.len)) {
        s1_conn_respond_text(c, 415, NULL,
                             "Content-Type must be application/x-www-form-urlencoded\n");
        return false;
    }
    if (!req->has_content_length) {
        s1_conn_respond_text(c, 411, NULL, "Content-Length required\n");
        return false;
    }
    return true;
}

static void on_create(void *arg, enum frame_status st, uint32_t retry_ms)
{
    struct s1_conn *c = arg;

    UNUSED(retry_ms);
    c->req->auth_pending = false;
    switch (st) {
    case FRAME_ST_OK:
        s1_conn_respond_text(c, 201, NULL, "created\n");
        break;
    case FRAME_ST_EXISTS:
        s1_conn_respond_text(c, 409, NULL, "username already exists\n");
        break;
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 400, NULL, "invalid username or password\n");
        break;
    default:
        respond_unavailable(c);
        break;
    }
    s1_conn_resume(c);
}

static enum s1_dispatch create_user(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *body,
                                    size_t body_len)
{
    char user[ACCOUNT_USER_MAX + 1];
    char pass[ACCOUNT_PASS_MAX + 1];
    struct http_form_field fields[2] = {
        {.name = "username", .out = user, .cap = sizeof(user)},
        {.name = "password", .out = pass, .cap = sizeof(pass)},
    };
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;

    if (!form_body_ok(c, buf, req))
        return S1_DISPATCH_DONE;
    if (http_form_parse(body, body_len, fields, 2, &why) < 0) {
        log_debug("POST /users: %s", why);
        s1_conn_respond_text(c, 400, NULL, "malformed form body\n");
        goto out;
    }
    if (!fields[0].found || !fields[1].found) {
        s1_conn_respond_text(c, 400, NULL, "username and password are required\n");
        goto out;
    }
    if (!account_username_valid(user, fields[0].len)) {
        s1_conn_respond_text(c, 400, NULL,
                             "username must be 1-64 characters of A-Z a-z 0-9 . _ -\n");
        goto out;
    }
    if (!account_password_valid(pass, fields[1].len)) {
        s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
        goto out;
    }
    if (!signup_allowed(c)) /* every CREATE costs server2 a hash, taken or not */
        goto out;
    if (authclient_submit(env_of(c)->auth, FRAME_CREATE, user, fields[0].len, pass, fields[1].len,
                          on_create, c, &c->req->auth_handle) < 0) {
        respond_unavailable(c);
        goto out;
    }
    c->req->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(pass, sizeof(pass));
    return d;
}

/* ---- GET/HEAD /files/{name} ---- */

static void respond_file_error(struct s1_conn *c, int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EXDEV: /* resolves outside the root */
    case ELOOP:
    case EISDIR:
    case ENXIO:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        break;
    case EACCES:
    case EPERM:
        s1_conn_respond_text(c, 403, NULL, "forbidden\n");
        break;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        respond_unavailable(c);
        break;
    default:
        s1_conn_respond_text(c, 500, NULL, "cannot read the file\n");
        break;
    }
}

/*
 * The body for bytes [off, off + count) of src, which moves into it (source_body; a HEAD's, or
 * an empty one's, is its length only); false after answering 503 + Retry-After with the
 * thread's --response-memory spent, or 500 when the file cannot be read.
 */
static bool body_of(struct s1_conn *c, struct source *src, uint64_t off, uint64_t count,
                    struct s1_body *b)
{
    int rc;

    if (c->head_only || count == 0) {
        body_length_only(b, count);
        return true;
    }
    rc = source_body(src, off, count, env_of(c)->svc->files, &env_of(c)->resp_budget, b);
    if (rc == 0)
        return true;
    if (rc == -EAGAIN) {
        metrics_add(&c->home->metrics->responses_busy, 1);
        s1_conn_respond_text(c, 503, HDR_RETRY, "server busy, try again\n");
        return false;
    }
    if (rc == -ENODATA)
        log_warn("'%s' shrank while being read", c->req->name);
    else
        log_warn("cannot read '%s' with O_DIRECT: error %d", c->req->name, -rc);
    s1_conn_respond_text(c, 500, NULL, "cannot read the file\n");
    return false;
}

/* Content-Type of the file: by the name's extension; unknown ones are octets. */
static const char *type_of(const struct s1_conn *c)
{
    const char *t = mimetypes_lookup(env_of(c)->svc->types, c->req->name, c->req->name_len);
    return t != NULL ? t : "application/octet-stream";
}

/*
 * Whether src of this type is served with HDR_SANDBOX: an upload (anyone's, read by anyone
 * whose browser holds credentials for this origin), or with --sandbox-root an operator's file,
 * whose type can run script (mimetypes_is_active).
 */
static bool sandboxed(const struct s1_conn *c, const struct source *src, const char *type)
{
    return (src->upload || env_of(c)->svc->cfg->sandbox_root) && mimetypes_is_active(type);
}

/* The version's ETag and Last-Modified lines, if it has them (files_validators). */
static size_t validators(const struct source *src, char *out)
{
    if (src->blob != NULL) { /* made when it was prefetched */
        memcpy(out, src->blob->validators, src->blob->validators_len + 1);
        return src->blob->validators_len;
    }
    return files_validators(src->ino, src->size, src->mtime_ns, src->last_modified, out);
}

/* Field f as httpcond.h takes it, its value in hv (r->hv, or a copy of it). */
static struct httpcond_list cond_list(const struct hfield *f, const char *hv)
{
    if (f->bad) /* unreadable: malformed (httpcond.h) */
        return (struct httpcond_list){.present = true, .value = ",", .len = 1};
    return (struct httpcond_list){.present = f->present, .value = hv + f->off, .len = f->len};
}

/*
 * Whether the Range of a GET applies to this version (RFC 9110 13.1.5): with no If-Range, yes;
 * with one, only if it names this version: a strong ETag, or the Last-Modified sent when it
 * is a strong validator (strong_date, httpcond_strong_date; -1: no date names it).
 */
static bool range_applies(const struct s1_request *r, const char *etag, size_t etag_len,
                          int64_t strong_date)
{
    if (!r->if_range.present)
        return true;
    if (r->if_range.bad || (etag == NULL && strong_date < 0))
        return false;
    return httpcond_if_range(r->hv + r->if_range.off, r->if_range.len, etag, etag_len,
                             r->if_range_date_valid, r->if_range_date, strong_date);
}

/* Appends "Content-Range: ...\r\n" to extra at *n: a range, or (count 0) the unsatisfied form. */
static void put_content_range(char *extra, size_t *n, uint64_t off, uint64_t count,
                              uint64_t size)
{
    memcpy(extra + *n, "Content-Range: ", 15);
    *n += 15;
    *n += count > 0 ? httprange_content_range(extra + *n, HTTPRANGE_CONTENT_RANGE_MAX, off,
                                              count, size)
                    : httprange_unsatisfied(extra + *n, HTTPRANGE_CONTENT_RANGE_MAX, size);
    memcpy(extra + *n, "\r\n", 3);
    *n += 2;
}

/*
 * A prefetched file's 200 to a GET or HEAD without conditions or a range, with the header block
 * made when it was loaded (the same lines answer_get would write): true if it answered.
 */
static bool answer_prefetched(struct s1_conn *c, struct source *src)
{
    const struct s1_request *r = c->req;
    const struct files_blob *blob = src->blob;
    struct s1_body b;

    if (blob == NULL || blob->head_len == 0 ||
        (blob->active && env_of(c)->svc->cfg->sandbox_root) || r->if_match.present ||
        r->if_none_match.present || r->if_modified_since.valid ||
        r->if_unmodified_since.valid || (r->range.present && !c->head_only))
        return false;
    body_of(c, src, 0, src->size, &b); /* (memory: never fails) */
    s1_conn_respond(c, 200, NULL, blob->head, &b);
    source_release(src);
    return true;
}

/*
 * Answers a GET or HEAD from src (and releases it): the one place a file's answer is built.
 * Preconditions first (RFC 9110 13.2.2: 412, 304), then the Range of a GET (206, 416), else
 * 200. Every answer names the version: its ETag when it is known, its Last-Modified once it
 * is a validator (httpcond.h); If-Modified-Since and If-Unmodified-Since compare with the
 * modification time whether it is sent or not (a weak comparison is enough for them).
 */
static void answer_get(struct s1_conn *c, struct source *src)
{
    static const char accept_ranges[] = "Accept-Ranges: bytes\r\n";
    const struct s1_request *r = c->req;
    const char *type = type_of(c);
    /* the validators, Accept-Ranges, HDR_SANDBOX, and "Content-Range: " + its value + "\r\n"
     * + NUL */
    char extra[FILES_VALIDATORS_MAX + sizeof(accept_ranges) - 1 + sizeof(HDR_SANDBOX) - 1 +
               sizeof("Content-Range: ") - 1 + HTTPRANGE_CONTENT_RANGE_MAX - 1 + sizeof("\r\n")];
    size_t n = validators(src, extra);
    const char *etag = n > 0 ? extra + 6 : NULL; /* after "ETag: " */
    size_t etag_len = n > 0 ? (size_t)(strchr(extra, '\r') - etag) : 0;
    int64_t lm = src->mtime_ns >= 0 ? src->mtime_ns / 1000000000 : -1;
    uint64_t off = 0, count = src->size;
    int status = 200;
    struct s1_body b;

    if (r->if_match.present || r->if_none_match.present || r->if_modified_since.valid ||
        r->if_unmodified_since.valid) {
        struct httpcond_request q = {
            .method = HTTPCOND_READ,
            .if_match = cond_list(&r->if_match, r->hv),
            .if_none_match = cond_list(&r->if_none_match, r->hv),
            /* a version without a modification time ignores the dates (13.1.3, 13.1.4) */
            .if_modified_since = lm >= 0 ? r->if_modified_since : (struct httpcond_date){0},
            .if_unmodified_since = lm >= 0 ? r->if_unmodified_since : (struct httpcond_date){0},
        };
        struct httpcond_repr rep = {.exists = true, .etag = etag, .etag_len = etag_len,
                                    .last_modified = lm};
        switch (httpcond_evaluate(&q, &rep)) {
        case HTTPCOND_NOT_MODIFIED:
            s1_conn_respond(c, 304, NULL, extra, NULL);
            source_release(src);
            return;
        case HTTPCOND_PRECONDITION_FAILED:
            s1_conn_respond_text(c, 412, extra, "precondition failed\n");
            source_release(src);
            return;
        case HTTPCOND_PROCEED:
            break;
        }
    }
    memcpy(extra + n, accept_ranges, sizeof(accept_ranges));
    n += sizeof(accept_ranges) - 1;
    if (sandboxed(c, src, type)) {
        memcpy(extra + n, HDR_SANDBOX, sizeof(HDR_SANDBOX));
        n += sizeof(HDR_SANDBOX) - 1;
    }
    if (r->range.present && !r->range.bad && !c->head_only &&
        range_applies(r, etag, etag_len, src->strong_date)) {
        switch (httprange_parse(r->hv + r->range.off, r->range.len, src->size, &off, &count)) {
        case HTTPRANGE_ONE:
            status = 206;
            put_content_range(extra, &n, off, count, src->size);
            break;
        case HTTPRANGE_UNSATISFIABLE:
            put_content_range(extra, &n, 0, 0, src->size);
            s1_conn_respond_text(c, 416, extra, "range not satisfiable\n");
            source_release(src);
            return;
        case HTTPRANGE_IGNORE:
            off = 0;
            count = src->size;
            break;
        }
    }
    if (body_of(c, src, off, count, &b))
        s1_conn_respond(c, status, type, extra, &b);
    source_release(src);
}

/*
 * --private-uploads: true if src is an upload of another account (answered 404 like a missing
 * name, so a GET does not tell whether it is taken). The operator's files stay readable by
 * every account.
 */
static bool upload_hidden(const struct s1_conn *c, const struct source *src)
{
    return env_of(c)->svc->cfg->private_uploads && src->upload && src->owner[0] != '\0' &&
           strcmp(src->owner, c->req->user) != 0;
}

/* A GET or HEAD whose credentials are accepted: the file, or 404. */
static void serve_verified(struct s1_conn *c)
{
    const struct s1_service *svc = env_of(c)->svc;
    struct source src;
    int rc;

    if (!c->req->name_ok) {
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return;
    }
    rc = source_resolve(svc->files, svc->commit, c->req->name, c->req->name_len, &src);
    if (rc < 0) {
        respond_file_error(c, -rc);
    } else if (upload_hidden(c, &src)) {
        source_release(&src);
        s1_conn_respond_text(c, 404, NULL, "not found\n");
    } else if (!answer_prefetched(c, &src)) {
        answer_get(c, &src);
    }
}

/* server2's answer to a GET or HEAD's credentials: then() answers an accepted one. */
static void read_verified(struct s1_conn *c, enum frame_status st, uint32_t retry_ms,
                          void (*then)(struct s1_conn *))
{
    struct s1_handler_env *env = env_of(c);

    c->req->auth_pending = false;
    login_answered(c, st == FRAME_ST_DENIED || st == FRAME_ST_INVALID, st == FRAME_ST_OK);
    switch (st) {
    case FRAME_ST_LIMITED:
        respond_limited_by_server2(c, retry_ms);
        break;
    case FRAME_ST_OK:
        if (c->req->cred_cacheable) {
            credcache_put(&env->cache, &c->req->cred_key, c->req->cred_epoch, clock_now_ns());
            metrics_gauge_set(&c->home->metrics->auth_cache_entries, (int64_t)env->cache.used);
        }
        then(c);
        break;
    case FRAME_ST_DENIED:
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        break;
    default:
        respond_unavailable(c);
        break;
    }
    c->req->cred_cacheable = false;
    sodium_memzero(&c->req->cred_key, sizeof(c->req->cred_key));
    s1_conn_resume(c);
}

static void on_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    read_verified(arg, st, retry_ms, serve_verified);
}

/* Decodes {name} into c->req->name; c->req->name_ok is false for invalid and reserved names. */
static void decode_name(struct s1_conn *c, const char *path, size_t len)
{
    const char *why = NULL;

    c->req->name_ok = files_name_decode(path + sizeof(FILES_PREFIX) - 1,
                                        len - (sizeof(FILES_PREFIX) - 1), c->req->name,
                                        sizeof(c->req->name), &c->req->name_len, &why) == 0;
    if (c->req->name_ok && files_name_is_reserved(c->req->name, c->req->name_len)) {
        c->req->name_ok = false;
        why = "reserved name";
    }
    if (!c->req->name_ok)
        log_debug("/files: bad name: %s", why);
}

/*
 * With the cache on: true after answering through hit() if it holds these credentials; else
 * prepares c so that server2's acceptance is cached.
 */
static bool cache_answers(struct s1_conn *c, const struct http_basic_cred *cred,
                          void (*hit)(struct s1_conn *))
{
    struct s1_handler_env *env = env_of(c);
    uint64_t now;
    bool found;

    c->req->cred_cacheable = false;
    if (hit == NULL || !env->cache_on || cred->user_len > ACCOUNT_USER_MAX)
        return false;
    credcache_key(cred->user, cred->user_len, cred->pass, cred->pass_len, &c->req->cred_key);
    now = clock_now_ns();
    /* only under a lease: while none holds, a change may go by that no server2 tells us */
    found = authclient_lease_valid(env->auth, now) &&
            credcache_hit(&env->cache, &c->req->cred_key, now);
    metrics_gauge_set(&c->home->metrics->auth_cache_entries, (int64_t)env->cache.used);
    if (found) {
        metrics_add(&c->home->metrics->auth_cache_hits, 1);
        sodium_memzero(&c->req->cred_key, sizeof(c->req->cred_key));
        hit(c);
        return true;
    }
    metrics_add(&c->home->metrics->auth_cache_misses, 1);
    c->req->cred_epoch = env->cache.epoch;
    c->req->cred_cacheable = true;
    return false;
}

/*
 * Checks the Basic credentials and asks server2 to verify them; cb answers. Returns DONE after
 * answering 401/503 itself, or after hit() answered from the cache (hit may be NULL: never
 * cached). The user name is kept in c->req->user.
 */
static enum s1_dispatch verify_then(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, authclient_cb cb,
                                    void (*hit)(struct s1_conn *))
{
    struct http_basic_cred cred;
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;
    size_t ulen;

    if (req->authorization < 0) {
        s1_conn_respond_text(c, 401, HDR_AUTHN, "credentials required\n");
        return S1_DISPATCH_DONE;
    }
    if (http_basic_parse(http_span_ptr(buf, req->headers[req->authorization].value),
                         req->headers[req->authorization].value.len, &cred, &why) < 0) {
        log_debug("/files: bad credentials: %s", why);
        s1_conn_respond_text(c, 401, HDR_AUTHN, "bad credentials\n");
        return S1_DISPATCH_DONE;
    }
    ulen = cred.user_len < ACCOUNT_USER_MAX ? cred.user_len : ACCOUNT_USER_MAX;
    memcpy(c->req->user, cred.user, ulen); /* longer names are refused by server2 anyway */
    c->req->user[ulen] = '\0';
    if (login_limited(c)) /* (a lockout holds the cached credentials too) */
        goto out;
    if (cache_answers(c, &cred, hit))
        goto out;
    if (!login_reserve(c, cred.pass, cred.pass_len)) {
        c->req->cred_cacheable = false;
        goto out;
    }
    if (authclient_submit(env_of(c)->auth, FRAME_VERIFY, cred.user, cred.user_len, cred.pass,
                          cred.pass_len, cb, c, &c->req->auth_handle) < 0) {
        login_answered(c, false, false);
        c->req->cred_cacheable = false;
        respond_unavailable(c);
        goto out;
    }
    c->req->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(&cred, sizeof(cred));
    return d;
}

/* Keeps value as field f of r: a second line of a list field is joined to it with ", ". */
static void keep_field(struct s1_request *r, struct hfield *f, bool list, const char *v,
                       size_t len)
{
    size_t need = f->present ? len + 2 : len;

    if (f->present && !list)
        f->bad = true; /* a repeated Range or If-Range */
    if (f->bad || r->hv_len + need > sizeof(r->hv) ||
        (f->present && f->off + f->len != r->hv_len)) {
        f->present = true;
        f->bad = true;
        return;
    }
    if (!f->present) {
        f->present = true;
        f->off = (uint16_t)r->hv_len;
    } else {
        memcpy(r->hv + r->hv_len, ", ", 2);
        r->hv_len += 2;
        f->len += 2;
    }
    memcpy(r->hv + r->hv_len, v, len);
    r->hv_len += len;
    f->len += (uint16_t)len;
}

/* An HTTP date field: valid if it appears once with one valid date (else ignored). */
static void keep_date(struct httpcond_date *d, bool *seen, const char *v, size_t len, int64_t now)
{
    int64_t t;

    if (*seen) {
        d->valid = false;
        return;
    }
    *seen = true;
    d->valid = httpdate_parse(v, len, now, &t) == 0;
    d->secs = d->valid ? t : 0;
}

static bool name_is(const char *buf, struct http_span s, const char *lit, size_t n)
{
    return s.len == n && strncasecmp(buf + s.off, lit, n) == 0;
}

/* Copies the fields a request's conditions and range need from the head into c->req. */
static void keep_conditions(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    struct s1_request *r = c->req;
    int64_t now = clock_wall_s();
    bool ims_seen = false, ius_seen = false, ir_seen = false;

    r->range = r->if_range = r->if_match = r->if_none_match = (struct hfield){0};
    r->if_modified_since = r->if_unmodified_since = (struct httpcond_date){0};
    r->if_range_date_valid = false;
    r->hv_len = 0;
    for (unsigned i = 0; i < req->nheaders; i++) {
        struct http_span n = req->headers[i].name;
        const char *v = http_span_ptr(buf, req->headers[i].value);
        size_t len = req->headers[i].value.len;

        if (n.len < 5 || (buf[n.off] | 0x20) != (n.len == 5 ? 'r' : 'i'))
            continue; /* neither Range nor If-... (most headers end here) */
        if (name_is(buf, n, "range", 5)) {
            keep_field(r, &r->range, false, v, len);
        } else if (name_is(buf, n, "if-range", 8)) {
            keep_field(r, &r->if_range, false, v, len);
            if (!ir_seen && !httpcond_if_range_is_etag(v, len))
                r->if_range_date_valid = httpdate_parse(v, len, now, &r->if_range_date) == 0;
            ir_seen = true;
        } else if (name_is(buf, n, "if-match", 8)) {
            keep_field(r, &r->if_match, true, v, len);
        } else if (name_is(buf, n, "if-none-match", 13)) {
            keep_field(r, &r->if_none_match, true, v, len);
        } else if (name_is(buf, n, "if-modified-since", 17)) {
            keep_date(&r->if_modified_since, &ims_seen, v, len, now);
        } else if (name_is(buf, n, "if-unmodified-since", 19)) {
            keep_date(&r->if_unmodified_since, &ius_seen, v, len, now);
        }
    }
}

static enum s1_dispatch get_file(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *path, size_t len)
{
    keep_conditions(c, buf, req);
    decode_name(c, path, len);
    return verify_then(c, buf, req, on_verify, serve_verified);
}

/* ---- GET/HEAD /files/ and /files/DIR/: listings ---- */

/* A listing whose credentials are accepted: JSON or HTML, or 404 for no such directory. */
static void list_verified(struct s1_conn *c)
{
    const struct s1_service *svc = env_of(c)->svc;
    struct s1_request *r = c->req;
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
        respond_limited(c, METRICS_LIMIT_LIST, wait, "too many listings, retry later\n");
        return;
    }
    rc = listing_build(svc->files, svc->commit, &sc, &l);
    if (rc < 0) {
        listing_free(&l);
        respond_file_error(c, -rc);
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
    read_verified(arg, st, retry_ms, list_verified);
}

/*
 * GET or HEAD of a path under /files/ that ends in '/': the directory's name into
 * c->req->name ("" for /files/ itself), name_ok false for one that could not be valid.
 */
static void decode_dir(struct s1_conn *c, const char *path, size_t len)
{
    struct s1_request *r = c->req;
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

/* A listing's cursor (?after=) into c->req; false after answering 400 for a bad one. */
static bool keep_cursor(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    const char *t = http_span_ptr(buf, req->target);
    const char *q = memchr(t, '?', req->target.len);

    c->req->after_len = 0;
    c->req->after_dir = false;
    if (q == NULL || listing_after_parse(q + 1, req->target.len - (size_t)(q + 1 - t),
                                         c->req->after, sizeof(c->req->after),
                                         &c->req->after_len, &c->req->after_dir) >= 0)
        return true;
    s1_conn_respond_text(c, 400, NULL, "bad after= in a listing's query\n");
    return false;
}

static enum s1_dispatch list_dir(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *path, size_t len)
{
    const char *accept = NULL;
    size_t accept_len = 0;

    for (unsigned i = 0; i < req->nheaders; i++) {
        if (name_is(buf, req->headers[i].name, "accept", 6)) {
            accept = http_span_ptr(buf, req->headers[i].value);
            accept_len = req->headers[i].value.len;
            break;
        }
    }
    c->req->want_html = listing_wants_html(accept, accept_len);
    if (!keep_cursor(c, buf, req))
        return S1_DISPATCH_DONE;
    decode_dir(c, path, len);
    return verify_then(c, buf, req, on_list_verify, list_verified);
}

/* ---- PUT/DELETE /files/{name} ---- */

static void respond_commit(struct s1_conn *c, const struct commit_job *job)
{
    /* a stored PUT names its version (the bytes are stored as sent: RFC 9110 9.3.4) by its
     * ETag; its Last-Modified only comes with a GET once its second is over (httpcond.h) */
    char extra[FILES_VALIDATORS_MAX + 1] = "";

    if (job->op == COMMIT_PUT && job->version > 0)
        files_validators(0, job->body.len, (int64_t)job->version, -1, extra);
    switch (job->status) {
    case 201:
        s1_conn_respond_text(c, 201, extra, "created\n");
        break;
    case 204:
        s1_conn_respond(c, 204, NULL, extra, NULL);
        break;
    case 403:
        s1_conn_respond_text(c, 403, NULL, "forbidden: the file belongs to someone else\n");
        break;
    case 404:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        break;
    case 409:
        s1_conn_respond_text(c, 409, NULL, "a directory has that name\n");
        break;
    case 412:
        s1_conn_respond_text(c, 412, NULL, "precondition failed\n");
        break;
    case 507:
        s1_conn_respond_text(c, 507, NULL, "no space left for the change\n");
        break;
    default:
        s1_conn_respond_text(c, 500, NULL, "cannot store the change\n");
        break;
    }
}

/*
 * The committer's answer, on the worker's thread (mailbox.h): answers the conn, if still there,
 * and frees the job. Not live: the worker is stopping and the conn is gone.
 */
static void commit_done(struct mailbox_msg *m, bool live)
{
    struct commit_job *job = (struct commit_job *)((char *)m - offsetof(struct commit_job, done));
    struct s1_conn *c = job->c;

    if (live && c != NULL) {
        c->req->job = NULL;
        if (job->over_quota)
            s1_conn_respond_text(c, 507, NULL, "storage quota exceeded\n");
        else
            respond_commit(c, job);
        s1_conn_resume(c);
    }
    free(job);
}

/* After server2 accepted the credentials (and a PUT's body arrived): to the committer. */
static void submit_change(struct s1_conn *c, enum commit_op op)
{
    struct commit_job *job = xcalloc(1, sizeof(*job));

    job->op = op;
    job->reply_to = env_of(c)->inbox;
    job->done.deliver = commit_done;
    memcpy(job->name, c->req->name, c->req->name_len + 1);
    job->name_len = c->req->name_len;
    memcpy(job->user, c->req->user, strlen(c->req->user) + 1);
    memcpy(job->cond_text, c->req->hv, c->req->hv_len);
    job->cond = (struct httpcond_request){
        .method = HTTPCOND_WRITE,
        .if_match = cond_list(&c->req->if_match, job->cond_text),
        .if_none_match = cond_list(&c->req->if_none_match, job->cond_text),
        .if_unmodified_since = c->req->if_unmodified_since,
    };
    job->body = (struct commit_body){.fd = -1};
    if (op == COMMIT_PUT) {
        job->body = c->req->up; /* the committer owns the body now */
        c->req->up = (struct commit_body){.fd = -1};
        c->req->uploading = false;
        c->req->up_open = false; /* (commit_submit counts it out) */
    }
    job->c = c;
    c->req->job = job;
    commit_submit(env_of(c)->svc->commit, job);
    /* stays S1_CONN_WAIT until commit_done */
}

static void upload_received(struct s1_conn *c)
{
    submit_change(c, COMMIT_PUT);
}

/* The upload's body sink: the bytes into memory or the temp file (commit_body_write). */
static int upload_write(struct s1_conn *c, const char *p, size_t n)
{
    char ebuf[128];
    int rc = commit_body_write(&c->req->up, p, n);

    if (rc == 0)
        return 0;
    log_warn("cannot write an upload: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
    if (rc == -ENOSPC || rc == -EDQUOT)
        s1_conn_respond_fatal(c, 507, NULL, "no space left for the upload\n");
    else
        s1_conn_respond_fatal(c, 500, NULL, "cannot store the upload\n");
    return -1;
}

static const struct s1_body_sink upload_sink = {
    .write = upload_write,
    .received = upload_received,
};

/*
 * Gets the body's place ready (memory or a temp file) and has the conn stream the body into
 * it; or answers 503 (no room now) or 507/500.
 */
static void upload_begin(struct s1_conn *c)
{
    const struct s1_config *cfg = env_of(c)->svc->cfg;
    struct s1_request *r = c->req;
    char ebuf[128];
    int rc = commit_body_begin(env_of(c)->svc->commit, &r->up, r->up_len, r->user);

    if (rc < 0) {
        if (rc == -EAGAIN || rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM) {
            /* out of temp space, descriptors or memory for now: the client may try again */
            log_debug("no room for an upload now: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
            metrics_add(&c->home->metrics->uploads_busy, 1);
            s1_conn_respond_text(c, 503, HDR_RETRY, "server busy, try again\n");
        } else {
            log_warn("cannot make room for an upload: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
            s1_conn_respond_text(c, rc == -ENOSPC || rc == -EDQUOT ? 507 : 500, NULL,
                                 "cannot store the upload\n");
        }
        return;
    }
    r->uploading = true;
    s1_conn_stream_body(c, &upload_sink,
                        clock_now_ns() + cfg->upload_timeout_us * 1000 +
                            (uint64_t)((double)r->up_len / (double)cfg->min_rate * 1e9));
}

/*
 * A PUT whose credentials server2 accepted, its body still unread: refused now (404, 507)
 * unless the name and the quotas allow it, else its body is received next.
 */
static void put_accepted(struct s1_conn *c)
{
    struct committer *cm = env_of(c)->svc->commit;
    struct s1_request *r = c->req;

    if (!r->name_ok)
        s1_conn_respond_text(c, 404, NULL, "not found\n");
    else if (commit_quota_check(cm, r->user, r->name, r->name_len, r->up_len) != 0)
        s1_conn_respond_text(c, 507, NULL, "storage quota exceeded\n");
    else
        upload_begin(c);
    s1_conn_resume(c);
}

static void on_change_verify(struct s1_conn *c, enum frame_status st, uint32_t retry_ms,
                             enum commit_op op)
{
    c->req->auth_pending = false;
    login_answered(c, st == FRAME_ST_DENIED || st == FRAME_ST_INVALID, st == FRAME_ST_OK);
    switch (st) {
    case FRAME_ST_LIMITED:
        respond_limited_by_server2(c, retry_ms);
        s1_conn_resume(c);
        return;
    case FRAME_ST_OK:
        if (op == COMMIT_PUT) {
            put_accepted(c);
            return;
        }
        if (!c->req->name_ok)
            break;
        submit_change(c, op);
        return;
    case FRAME_ST_DENIED:
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        s1_conn_resume(c);
        return;
    default:
        respond_unavailable(c);
        s1_conn_resume(c);
        return;
    }
    s1_conn_respond_text(c, 404, NULL, "not found\n");
    s1_conn_resume(c);
}

static void on_put_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_change_verify(arg, st, retry_ms, COMMIT_PUT);
}

static void on_delete_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_change_verify(arg, st, retry_ms, COMMIT_DELETE);
}

static enum s1_dispatch change_file(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *path, size_t len)
{
    if (env_of(c)->svc->commit == NULL) { /* (a PUT was answered by upload_head) */
        s1_conn_respond_text(c, 405, HDR_ALLOW_READ, TEXT_READ_ONLY);
        return S1_DISPATCH_DONE;
    }
    keep_conditions(c, buf, req);
    decode_name(c, path, len);
    return verify_then(c, buf, req,
                       req->method == HTTP_METHOD_PUT ? on_put_verify : on_delete_verify, NULL);
}

/* ---- PUT/DELETE /users/{name} ---- */

static void on_account_change(void *arg, enum frame_status st, uint32_t retry_ms)
{
    struct s1_conn *c = arg;

    c->req->auth_pending = false;
    /* (INVALID: the new password is not valid; OK: the credentials used are no longer good) */
    login_answered(c, st == FRAME_ST_DENIED, false);
    if (st == FRAME_ST_OK && env_of(c)->svc->known_logins != NULL)
        credcache_shared_drop_user(env_of(c)->svc->known_logins, c->req->user,
                                   strlen(c->req->user));
    switch (st) {
    case FRAME_ST_OK:
        s1_conn_respond(c, 204, NULL, NULL, NULL);
        break;
    case FRAME_ST_LIMITED:
        respond_limited_by_server2(c, retry_ms);
        break;
    case FRAME_ST_DENIED:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        break;
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
        break;
    default:
        respond_unavailable(c);
        break;
    }
    s1_conn_resume(c);
}

/*
 * PUT /users/{name} (form body password=NEW) changes the password, DELETE /users/{name}
 * deletes the account; both with Basic credentials of that very account. server2 checks
 * them, makes the change, and answers once every server1 has forgotten the old password.
 */
static enum s1_dispatch change_account(struct s1_conn *c, const char *buf,
                                       const struct http_request *req, const char *path,
                                       size_t len, const char *body, size_t body_len)
{
    const char *name = path + sizeof(USERS_PREFIX) - 1;
    size_t name_len = len - (sizeof(USERS_PREFIX) - 1);
    char pass[ACCOUNT_PASS_MAX + 1];
    struct http_form_field field = {.name = "password", .out = pass, .cap = sizeof(pass)};
    struct http_basic_cred cred;
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;
    int rc;

    if (!account_username_valid(name, name_len)) {
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return S1_DISPATCH_DONE;
    }
    if (req->authorization < 0) {
        s1_conn_respond_text(c, 401, HDR_AUTHN, "credentials required\n");
        return S1_DISPATCH_DONE;
    }
    if (http_basic_parse(http_span_ptr(buf, req->headers[req->authorization].value),
                         req->headers[req->authorization].value.len, &cred, &why) < 0) {
        log_debug("/users: bad credentials: %s", why);
        s1_conn_respond_text(c, 401, HDR_AUTHN, "bad credentials\n");
        return S1_DISPATCH_DONE;
    }
    pass[0] = '\0';
    if (cred.user_len != name_len || memcmp(cred.user, name, name_len) != 0) {
        s1_conn_respond_text(c, 403, NULL, "forbidden: only the account itself may change it\n");
        goto out;
    }
    memcpy(c->req->user, name, name_len);
    c->req->user[name_len] = '\0';
    if (req->method == HTTP_METHOD_PUT) {
        if (!form_body_ok(c, buf, req))
            goto out;
        if (http_form_parse(body, body_len, &field, 1, &why) < 0) {
            log_debug("PUT /users: %s", why);
            s1_conn_respond_text(c, 400, NULL, "malformed form body\n");
            goto out;
        }
        if (!field.found) {
            s1_conn_respond_text(c, 400, NULL, "password is required\n");
            goto out;
        }
        if (!account_password_valid(pass, field.len)) {
            s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
            goto out;
        }
    }
    if (!login_reserve(c, cred.pass, cred.pass_len))
        goto out;
    if (req->method == HTTP_METHOD_PUT)
        rc = authclient_submit_setpass(env_of(c)->auth, cred.user, cred.user_len, cred.pass,
                                       cred.pass_len, pass, field.len, on_account_change, c,
                                       &c->req->auth_handle);
    else
        rc = authclient_submit(env_of(c)->auth, FRAME_DELETE, cred.user, cred.user_len, cred.pass,
                               cred.pass_len, on_account_change, c, &c->req->auth_handle);
    if (rc < 0) {
        login_answered(c, false, false);
        respond_unavailable(c);
        goto out;
    }
    c->req->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(pass, sizeof(pass));
    explicit_bzero(&cred, sizeof(cred));
    return d;
}

/* ---- /healthz, /metrics ---- */

static void on_ping(void *arg, enum frame_status st, uint32_t retry_ms)
{
    struct s1_conn *c = arg;

    UNUSED(retry_ms);
    c->req->auth_pending = false;
    if (st == FRAME_ST_OK)
        s1_conn_respond_text(c, 200, NULL, "ok\n");
    else
        s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable\n");
    s1_conn_resume(c);
}

static enum s1_dispatch healthz(struct s1_conn *c)
{
    if (!authclient_is_up(env_of(c)->auth) ||
        authclient_submit(env_of(c)->auth, FRAME_PING, NULL, 0, NULL, 0, on_ping, c,
                          &c->req->auth_handle) < 0) {
        s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable\n");
        return S1_DISPATCH_DONE;
    }
    c->req->auth_pending = true;
    return S1_DISPATCH_PENDING;
}

static void metrics_page(struct s1_conn *c)
{
    const struct s1_service *sh = env_of(c)->svc;
    struct s1_body b;
    uint64_t count;
    uint64_t bytes;
    size_t len;
    char *text;

    files_stats(sh->files, &count, &bytes);
    text = metrics_render(sh->metrics, sh->nthreads, count, bytes, &len);
    if (sh->commit != NULL) {
        size_t clen;
        char *ctext = commit_metrics_render(sh->commit, &clen);
        text = xrealloc(text, len + clen + 1);
        memcpy(text + len, ctext, clen + 1);
        len += clen;
        free(ctext);
    }

    body_mem_owned(&b, text, len, text);
    s1_conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, &b);
}

/* ---- dispatch ---- */

static bool method_is_get(const struct http_request *req)
{
    return req->method == HTTP_METHOD_GET || req->method == HTTP_METHOD_HEAD;
}

static enum s1_dispatch dispatch(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *body, size_t body_len)
{
    const char *path;
    size_t len;

    if (target_path(buf, req, &path, &len) < 0) {
        s1_conn_respond_text(c, 400, NULL, "bad request target\n");
        return S1_DISPATCH_DONE;
    }
    switch (c->route) {
    case METRICS_ROUTE_FILES:
        if (req->method == HTTP_METHOD_DELETE) /* (a PUT's head went to upload_head) */
            return change_file(c, buf, req, path, len);
        if (!method_is_get(req))
            break;
        if (path[len - 1] == '/')
            return list_dir(c, buf, req, path, len);
        return get_file(c, buf, req, path, len);
    case METRICS_ROUTE_USERS:
        if (!path_is(path, len, "/users")) {
            if (req->method == HTTP_METHOD_PUT || req->method == HTTP_METHOD_DELETE)
                return change_account(c, buf, req, path, len, body, body_len);
            s1_conn_respond_text(c, 405, "Allow: PUT, DELETE\r\n", "method not allowed\n");
            return S1_DISPATCH_DONE;
        }
        if (req->method != HTTP_METHOD_POST) {
            s1_conn_respond_text(c, 405, "Allow: POST\r\n", "method not allowed\n");
            return S1_DISPATCH_DONE;
        }
        return create_user(c, buf, req, body, body_len);
    case METRICS_ROUTE_HEALTHZ:
        if (!method_is_get(req))
            break;
        return healthz(c);
    case METRICS_ROUTE_METRICS:
        if (!method_is_get(req))
            break;
        metrics_page(c);
        return S1_DISPATCH_DONE;
    default:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return S1_DISPATCH_DONE;
    }
    s1_conn_respond_text(c, 405,
                         c->route == METRICS_ROUTE_FILES ? "Allow: GET, HEAD, PUT, DELETE\r\n"
                                                         : "Allow: GET, HEAD\r\n",
                         "method not allowed\n");
    return S1_DISPATCH_DONE;
}

/* The upload's body and its place among the committer's open uploads, if still held. */
static void upload_drop(struct s1_conn *c)
{
    struct s1_request *r = c->req;
    struct committer *cm = env_of(c)->svc->commit;

    if (r->uploading)
        commit_body_abandon(cm, &r->up);
    r->uploading = false;
    if (r->up_open)
        commit_upload_close(cm);
    r->up_open = false;
}

/*
 * PUT /files/{name}: its head is checked before anyone looks at the credentials (405, 411, 413,
 * answered with the connection closing, the body unread); then server2 is asked while the body
 * waits.
 */
static enum s1_head upload_head(struct s1_conn *c, const char *buf,
                                const struct http_request *req)
{
    const struct s1_service *svc = env_of(c)->svc;
    const char *path;
    size_t len;

    if (svc->commit == NULL) {
        s1_conn_respond_fatal(c, 405, HDR_ALLOW_READ, TEXT_READ_ONLY);
        return S1_HEAD_DONE;
    }
    if (!req->has_content_length) {
        s1_conn_respond_fatal(c, 411, NULL, "Content-Length required\n");
        return S1_HEAD_DONE;
    }
    if (req->content_length > svc->cfg->max_upload) {
        s1_conn_respond_fatal(c, 413, NULL, "upload too large\n");
        return S1_HEAD_DONE;
    }
    if (target_path(buf, req, &path, &len) < 0) {
        s1_conn_respond_fatal(c, 400, NULL, "bad request target\n");
        return S1_HEAD_DONE;
    }
    c->req->up_len = req->content_length;
    c->req->up_open = true;
    commit_upload_open(svc->commit);
    return change_file(c, buf, req, path, len) == S1_DISPATCH_PENDING ? S1_HEAD_WAIT
                                                                       : S1_HEAD_DONE;
}

static enum s1_head head(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    if (c->req == NULL)
        c->req = xmalloc(sizeof(*c->req));
    /* (the name and user buffers are written before they are read) */
    c->req->name_len = 0;
    c->req->name_ok = false;
    c->req->user[0] = '\0';
    c->req->cred_cacheable = false;
    c->req->auth_pending = false;
    c->req->login_held = false;
    c->req->login_keyed = false;
    c->req->login_known = false;
    c->req->up_len = 0;
    c->req->up_open = false;
    c->req->uploading = false;
    c->req->up = (struct commit_body){.fd = -1};
    c->req->job = NULL;
    if (c->route == METRICS_ROUTE_FILES && req->method == HTTP_METHOD_PUT)
        return upload_head(c, buf, req);
    return S1_HEAD_WHOLE;
}

static void answered(struct s1_conn *c)
{
    upload_drop(c); /* an upload refused before or while its body came */
}

/*
 * The conn goes away: an answer pending, when it comes, finds nobody. Its login keeps its
 * tokens: server2 may be checking the password all the same (else a client that closes
 * right after each guess would have it hashed for free).
 */
static void release(struct s1_conn *c)
{
    struct s1_request *r = c->req;

    if (r->auth_pending)
        authclient_cancel(env_of(c)->auth, r->auth_handle);
    r->login_held = false;
    sodium_memzero(&r->login_key, sizeof(r->login_key));
    if (r->job != NULL)
        r->job->c = NULL;
    upload_drop(c);
    sodium_memzero(&r->cred_key, sizeof(r->cred_key));
    free(r);
    c->req = NULL;
}

const struct s1_conn_handler s1_handler = {
    .route = route_of,
    .head = head,
    .dispatch = dispatch,
    .answered = answered,
    .release = release,
};
