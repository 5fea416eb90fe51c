/*
 * service.h - what the handler and its route modules know of the process (struct s1_service)
 * and of their thread (struct s1_handler_env): the server2 client, the credential cache, the
 * response budget and the mailbox the committer answers to.
 *
 * DESIGN: the worker fills both before its thread serves; s1_service is shared by every thread
 * and immutable once they start, s1_handler_env is its thread's only. Below handler.h and
 * request.h, so that the route modules see it without including the handler that calls them.
 */
#ifndef S1_SERVICE_H
#define S1_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "aioread.h"
#include "authclient.h"
#include "commit.h"
#include "config.h"
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
                                              no failed-login token (login.c); NULL when both
                                              limits above are off */
    struct ratelimit *signup;          /* --signup-limit */
    struct ratelimit *list;            /* --list-limit */
    struct connlimit *conns_per_ip;    /* --max-conns-per-ip */
    uint16_t https_port;               /* the --tls-port bound, for redirects (0: none) */
};

/* One thread's handler state. Owner thread only. */
struct s1_handler_env {
    const struct s1_service *svc;
    struct authclient *auth;
    struct credcache cache;            /* --auth-cache; cache_on false when off */
    bool cache_on;
    struct respbuf_budget resp_budget; /* --response-memory */
    struct mailbox *inbox;             /* where the committer answers this thread's uploads */
    struct aioread *aio;               /* this thread's O_DIRECT reads (aioread_on: false
                                          without --read direct, or with --read-depth 0) */
};

#endif /* S1_SERVICE_H */
