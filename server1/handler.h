/*
 * handler.h - the routes: POST /users (CREATE on server2), GET/HEAD /files/{name} (VERIFY on
 * server2, then the file), GET/HEAD /files/ and /files/{dir}/ (VERIFY, then the listing),
 * PUT/DELETE /files/{name} (VERIFY, then the committer), PUT/DELETE /users/{name}
 * (SETPASS/DELETE on server2), GET /healthz (PING on server2), GET /metrics.
 * conn calls it through s1_handler (struct s1_conn_handler) with one complete request; it
 * answers at once or starts an asynchronous request (server2, the committer) whose callback
 * answers and then calls s1_conn_resume. Runs on the conn's thread.
 *
 * DESIGN: the handler knows its thread only as struct s1_handler_env (the conn's
 * home->handler_arg): the server2 client, the credential cache, the response budget and the
 * mailbox the committer answers to; and the process only as struct s1_service. The worker fills
 * both; handler.c includes no worker.h.
 */
#ifndef S1_HANDLER_H
#define S1_HANDLER_H

#include <stdbool.h>
#include <stddef.h>

#include "authclient.h"
#include "commit.h"
#include "config.h"
#include "conn.h"
#include "credcache.h"
#include "files.h"
#include "mailbox.h"
#include "metrics.h"
#include "mimetypes.h"
#include "ratelimit.h"
#include "respbuf.h"

/* What the handlers of every thread share; immutable after the threads start. */
struct s1_service {
    const struct s1_config *cfg;
    struct files *files;            /* its prefetch table is read-only after start: no lock */
    struct committer *commit;       /* NULL with --read-only; thread-safe calls only */
    struct metrics *const *metrics; /* every thread's metrics, for /metrics */
    size_t nthreads;
    const struct mimetypes *types;  /* Content-Type by extension (read-only) */
    /* per-client limits, NULL when off; thread-safe (ratelimit.h) */
    struct ratelimit *login_fail_user; /* --login-fail-limit */
    struct ratelimit *login_fail_addr; /* --login-fail-addr-limit */
    struct credcache_shared *known_logins; /* credentials server2 accepted lately, which take
                                              no failed-login token (handler.c); NULL when both
                                              limits above are off */
    struct ratelimit *signup;          /* --signup-limit */
    struct ratelimit *list;            /* --list-limit */
    struct connlimit *conns_per_ip;    /* --max-conns-per-ip */
};

/* One thread's handler state. Owner thread only. */
struct s1_handler_env {
    const struct s1_service *svc;
    struct authclient *auth;
    struct credcache cache;            /* --auth-cache; cache_on false when off */
    bool cache_on;
    struct respbuf_budget resp_budget; /* --response-memory */
    struct mailbox *inbox;             /* where the committer answers this thread's uploads */
};

/* The handler, for a conn home (handler_arg: the thread's struct s1_handler_env). */
extern const struct s1_conn_handler s1_handler;

#endif /* S1_HANDLER_H */
