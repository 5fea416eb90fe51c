/*
 * request.h - what the route modules share: the handler's state of the request being answered
 * on a conn (struct s1_request, request_of), the header lines several of them send, and the
 * answers they give alike (503 while server2 is away, 429 over a per-client limit, a file
 * error as 404/403/503/500).
 *
 * DESIGN: handler.c creates it (the conn's req, conn.h's struct s1_conn_pub) at a request's first
 * head, resets it at each head and frees it with the conn (handler.h); a route module fills the
 * parts of it its route uses, and lets go of what it holds when the request is answered.
 * Everything here runs on the conn's thread.
 */
#ifndef S1_REQUEST_H
#define S1_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "account.h"
#include "commit.h"
#include "conn.h"
#include "credcache.h"
#include "files.h"
#include "httpcond.h"
#include "metrics.h"
#include "service.h"

#define HDR_RETRY "Retry-After: 1\r\n"
#define HDR_AUTHN "WWW-Authenticate: Basic realm=\"files\"\r\n"
#define HDR_ALLOW_READ "Allow: GET, HEAD\r\n" /* --read-only: no PUT, no DELETE */
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
 * The request being answered on a conn (request_of): created at its first head, reset at each
 * head, freed with the conn. What it holds (a server2 request, an upload's body, a commit job)
 * is let go when the request is answered (answered) or the conn goes (release).
 */
struct file_read;

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
    uint64_t up_len;               /* Content-Length (chunked: 0, not known yet) */
    bool up_chunked;               /* the body is chunked: its size is known at its end */
    bool up_open;                  /* counted in the committer's open uploads (until submitted) */
    bool uploading;                /* up is being received */
    struct commit_body up;
    struct commit_job *job;        /* submitted to the committer; its answer is pending */
    /* GET /files/{name}: its file being read (route_files.c); the answer waits for it */
    struct file_read *read;
    /* /files/: the fields of conditions and ranges, copied from the head (which is gone when
     * server2 answers); their values lie one after another in hv */
    struct hfield range, if_range, if_match, if_none_match;
    struct httpcond_date if_modified_since, if_unmodified_since;
    bool if_range_date_valid;
    int64_t if_range_date;
    size_t hv_len;
    char hv[HV_MAX];
};

/* The handler's state of the conn's thread (service.h). */
static inline struct s1_handler_env *request_env(const struct s1_conn *c)
{
    return s1_conn_pub(c)->home->handler_arg;
}

/* The handler's state of the request being answered on c (never NULL in a route). */
static inline struct s1_request *request_of(const struct s1_conn *c)
{
    return s1_conn_pub(c)->req;
}

/* The counters of c's thread. */
static inline struct metrics *request_metrics(const struct s1_conn *c)
{
    return s1_conn_pub(c)->home->metrics;
}

/* 503 + Retry-After: server2 cannot be asked now. */
void request_unavailable(struct s1_conn *c);
/* 429 with Retry-After (seconds until a token returns, wait_ns); counted as kind. */
void request_limited(struct s1_conn *c, enum metrics_limit kind, uint64_t wait_ns,
                     const char *text);
/* The answer to an error (errno) finding or opening a file: 404, 403, 503 or 500. */
void request_file_error(struct s1_conn *c, int err);
/* Whether header name s (in buf) is lit, n bytes, compared without case. */
bool request_field_is(const char *buf, struct http_span s, const char *lit, size_t n);

#endif /* S1_REQUEST_H */
