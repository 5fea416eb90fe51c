/*
 * backend.h - the account store behind server2, as an ops table with one implementation per
 * database (backend_redis.c, backend_mysql.c; unit tests plug in a fake), plus what every
 * worker wraps around it: a session that connects lazily, drops a broken connection and
 * reconnects at most every BACKEND_RETRY_MS, and a process-wide health record that logs each
 * down/up transition once.
 *
 * DESIGN
 * - A batch is an array of ops sent to the database in ONE round trip. The caller guarantees a
 *   username appears at most once per kind in a batch, and puts every CREATE before every
 *   LOOKUP, so a batch that creates and looks up the same name sees the new row. A batch with
 *   a REPLACE holds nothing but that one REPLACE (account changes are rare; each is a
 *   compare-and-set on its own: a Lua script in Redis, an UPDATE ... WHERE hash = ? in SQL).
 * - batch() returns 0 when every op's status is meaningful (an op may still fail alone, e.g.
 *   a Redis error reply), or -1 when the connection is unusable: the session closes it and the
 *   caller answers the whole batch UNAVAILABLE. Error strings never contain hashes, passwords
 *   or the URL password.
 * - A session belongs to one thread (or process). The health record is shared by all sessions
 *   (in processes mode it lives in shared memory and its mutex is process-shared and robust)
 *   and is touched only on connects and failures, except its epoch, which every batch reads
 *   atomically without the lock.
 * - Reconnects: a batch finding no connection tries to connect at most every BACKEND_RETRY_MS
 *   (meanwhile its batches get UNAVAILABLE at once); idle workers also probe once a second, and
 *   those probes neither wait for nor delay the batches' attempts.
 * - Before a batch, a session drops a connection that is probably stale, rather than fail a
 *   write on it: one made before the backend's latest down->up transition (another worker saw
 *   the database go away and come back), or one idle for BACKEND_IDLE_CHECK_MS that fails a
 *   ping. A batch that still fails on its connection is retried once on a new one (a create
 *   applied before the failure is then found as its own creation, record.h), unless it holds
 *   a REPLACE (a compare-and-set applied before the failure would fail when sent again).
 * - Failed logins (server2's --login-fail-limit N/DUR, in backend_url): a generic cell rate
 *   algorithm per username, kept in the database so every server2 (and so every server1)
 *   shares it: a theoretical arrival time TAT that each FAIL moves to max(TAT, now) + DUR/N;
 *   a LOOKUP reads, in the same round trip, how far TAT is ahead of now (auth.c: beyond
 *   (N-1) * DUR/N the user must wait). N failures in a burst, then one per DUR/N; the database's
 *   clock decides (Redis: the key fail:NAME expiring at TAT, read with PTTL; SQL: the table
 *   login_failures, with NOW(3)). Unknown names count like real ones.
 * - Account changes are announced through the database (docs/protocol.md, "Invalidation"): a
 *   REPLACE that writes also appends the user to the database's change feed in the same atomic
 *   operation and returns the change's number (consecutive from 1, in the order the changes
 *   were made); the feed_* ops let every server2's change feed (changefeed.h) read the feed,
 *   keep this server2's registration alive, and ask whether a live server2 is behind a change.
 */
#ifndef BACKEND_H
#define BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "account.h"
#include "backend_url.h"

#define BACKEND_ERR_LEN 256
#define BACKEND_HASH_MAX 256 /* room for a stored record with its NUL */
#define BACKEND_RETRY_MS 250 /* minimum time between two connection attempts of one session */
#define BACKEND_CONNECT_TIMEOUT_MS 1000 /* redis connect (reads and writes, and MySQL's connect:
                                         * the URL's io_timeout_ms, --backend-timeout) */
#define BACKEND_IDLE_CHECK_MS 200       /* a connection idle this long is pinged before use */

/* The strings stored are records (record.h): a hash marked with its creation's token. */
enum backend_op_kind {
    BACKEND_OP_CREATE = 1, /* store the record `hash` under user unless user exists */
    BACKEND_OP_LOOKUP = 2, /* fetch user's stored record */
    BACKEND_OP_REPLACE = 3, /* store `hash` under user iff it still holds `expect` (a password
                             * change, or RECORD_TOMBSTONE for a deletion) */
    BACKEND_OP_FAIL = 4,    /* a failed login as user: its login limit is charged (a batch of
                             * FAILs holds nothing else) */
};

enum backend_op_status {
    BACKEND_ST_OK = 0,          /* CREATE: user holds a record of this creation (stored now,
                                 * or by an earlier sending of it: record_same_creation; with
                                 * --redis-wait, on as many replicas as a new write would be);
                                 * LOOKUP: found, record in `stored` */
    BACKEND_ST_EXISTS = 1,      /* CREATE: user exists with another creation's record */
    BACKEND_ST_NOTFOUND = 2,    /* LOOKUP: no such user; REPLACE: user gone or hash changed */
    BACKEND_ST_UNAVAILABLE = 3, /* this op failed for a transient reason (loading, read-only) */
    BACKEND_ST_ERROR = 4,       /* this op failed for any other reason */
};

struct backend_op {
    enum backend_op_kind kind;
    const char *user; /* valid username (account.h), NUL-terminated */
    size_t user_len;
    const char *hash;              /* CREATE, REPLACE: the string to store, NUL-terminated */
    const char *expect;            /* REPLACE: the hash the row must still hold */
    enum backend_op_status status; /* out */
    uint64_t change_seq;           /* out, REPLACE OK: the change's number in the feed */
    uint32_t fail_ahead_ms;        /* out, LOOKUP with a login limit (backend_url): how far the
                                    * user's TAT is ahead of now, 0 if not (also for no user) */
    char stored[BACKEND_HASH_MAX]; /* out, LOOKUP found: the record, NUL-terminated ("" if it
                                    * did not fit) */
};

/* One entry of the change feed: the account that changed and the change's number. */
struct backend_change {
    uint64_t seq;
    uint8_t user_len;
    char user[ACCOUNT_USER_MAX];
};

#define BACKEND_PEER_ID_MAX 32

/*
 * backend_ops.list's callback: one account, user[0..user_len) and its record rec (NUL-terminated,
 * "" if it did not fit in BACKEND_HASH_MAX). Returns 0 to go on, -1 to stop the listing.
 */
typedef int (*backend_list_cb)(void *arg, const char *user, size_t user_len, const char *rec);

struct backend_ops {
    const char *name;
    /* Optional per-thread set-up/tear-down (mysql_thread_init/end); may be NULL. */
    void (*thread_init)(void);
    void (*thread_end)(void);
    /* Opens a connection; NULL with a reason in err (BACKEND_ERR_LEN bytes). */
    void *(*connect)(const struct backend_url *url, char *err);
    /*
     * Runs n ops in one round trip; 0, or -1 if the connection is unusable (reason in err).
     * On 0, err is "" unless some op failed alone (then it says why, for a rate-limited log).
     */
    int (*batch)(void *conn, struct backend_op *ops, size_t n, char *err);
    void (*close)(void *conn);
    /* Optional cheap liveness check (PING / mysql_ping): 0 if the connection works. */
    int (*ping)(void *conn);
    /*
     * The change feed, on a connection of its own (NULL in a backend without one). Each returns
     * -1 with a reason in err when the connection is unusable or the feed's keys or tables are
     * not there.
     * feed_head: the newest change's number (0: none yet).
     * feed_read: up to cap changes after number `after`, in order; waits up to wait_ms for the
     *   first where the database can (Redis), else returns at once; their count, or -1.
     * feed_renew: this server2 (peer, BACKEND_PEER_ID_MAX chars) is alive and has applied every
     *   change <= applied, for lease_ms from now on the database's clock (0: it leaves).
     * feed_behind: how many live server2s (their lease not run out) have not applied `seq`.
     */
    int (*feed_head)(void *conn, uint64_t *seq, char *err);
    int (*feed_read)(void *conn, uint64_t after, unsigned wait_ms, struct backend_change *out,
                     size_t cap, char *err);
    int (*feed_renew)(void *conn, const char *peer, uint64_t applied, unsigned lease_ms,
                      char *err);
    int (*feed_behind)(void *conn, uint64_t seq, unsigned *count, char *err);
    bool feed_blocks; /* feed_read waits in the database for a change (else the caller polls) */
    /*
     * Every account in the database, tombstones included, each once, in no promised order
     * (server2 admin list; never on a server2's hot path): 0, or -1 with a reason in err
     * (also when cb stopped it).
     */
    int (*list)(void *conn, backend_list_cb cb, void *arg, char *err);
};

extern const struct backend_ops backend_redis_ops;
extern const struct backend_ops backend_mysql_ops;

/* The ops for the URL's kind. */
const struct backend_ops *backend_ops_for(const struct backend_url *url);

/* Process-wide library set-up; call once in main before any thread starts. 0 or -1. */
int backend_library_init(void);
void backend_library_end(void);
/* Their MySQL part, in backend_mysql.c. */
int backend_mysql_library_init(void);
void backend_mysql_library_end(void);
/*
 * Redis Sentinel: the primary of u->master as named by the first Sentinel of the URL that
 * answers (the node a new connection goes to): 0 with its address (host: cap bytes), or -1
 * with a reason in err (BACKEND_ERR_LEN bytes).
 */
int backend_redis_sentinel_primary(const struct backend_url *u, char *host, size_t cap,
                                   int *port, char *err);
struct redislink;
/*
 * Logs c, a new connection to a Sentinel, in with the Sentinels' password if u has one (AUTH):
 * 0, or -1 with a reason in err (BACKEND_ERR_LEN bytes; never the password).
 */
int backend_redis_sentinel_auth(struct redislink *c, const struct backend_url *u, char *err);
/*
 * A connection to a Redis node or Sentinel at host:port (or the unix socket path), over TLS
 * with u's TLS settings when u->tls, reads and writes bounded by io_ms; NULL with err.
 */
struct redislink *backend_redis_open(const char *host, int port, const char *socket,
                                     const struct backend_url *u, unsigned io_ms, char *err);
/* The client flags backend_mysql connects with (never CLIENT_MULTI_STATEMENTS). */
unsigned long backend_mysql_client_flags(void);
/* The number of rows a prepared statement for n names is made for: n rounded up to 2^k. */
size_t backend_mysql_stmt_rows(size_t n);

enum backend_state {
    BACKEND_STATE_UNKNOWN = 0,
    BACKEND_STATE_UP = 1,
    BACKEND_STATE_DOWN = 2,
};

struct backend_health {
    pthread_mutex_t mu; /* protects every field below; robust, process-shared if asked */
    enum backend_state state;
    _Atomic uint64_t epoch; /* incremented at every transition to UP, and when the primary
                             * moved (written under mu) */
    uint64_t last_query_err_ns;
    unsigned query_errs_suppressed;
    char desc[512]; /* the URL without its password, for log lines; immutable */
};

/* process_shared: h is in memory shared by several processes (processes mode). */
void backend_health_init(struct backend_health *h, const struct backend_url *url,
                         bool process_shared);
void backend_health_release(struct backend_health *h);
enum backend_state backend_health_state(struct backend_health *h);
/*
 * The database's primary moved (Redis Sentinel announced a failover): every session drops its
 * connection before its next batch and connects anew, as after a restart. Thread-safe.
 */
void backend_health_moved(struct backend_health *h);

struct backend_session {
    const struct backend_ops *ops;
    const struct backend_url *url;
    struct backend_health *health;
    void *conn;               /* NULL while disconnected */
    uint64_t conn_epoch;      /* health epoch when conn was made */
    uint64_t last_attempt_ns; /* last connect attempt, 0 = never */
    uint64_t attempt_epoch;   /* health epoch at the last connect attempt */
    uint64_t last_used_ns;    /* last successful connect or batch */
    uint64_t connects;        /* successful connects, for tests and stats */
    uint64_t round_trips;     /* batch() calls, for tests and stats */
};

void backend_session_init(struct backend_session *s, const struct backend_ops *ops,
                          const struct backend_url *url, struct backend_health *health);
/*
 * Connects if disconnected and the last attempt is older than BACKEND_RETRY_MS, or at once if
 * another worker has reached the backend since that attempt (it is back: don't make a request
 * fail for the sake of the retry interval).
 */
bool backend_session_ready(struct backend_session *s, uint64_t now_ns);
/*
 * Idle probe: connects now if disconnected, outside the batches' retry interval, or anew if
 * the connection was made before the backend's last restart or failover (so an idle worker
 * leaves a demoted primary too).
 */
bool backend_session_probe(struct backend_session *s, uint64_t now_ns);
/* Runs a batch (connecting first if needed): 0, or -1 = backend unavailable for the batch. */
int backend_session_batch(struct backend_session *s, struct backend_op *ops, size_t n,
                          uint64_t now_ns);
void backend_session_release(struct backend_session *s);

#endif /* BACKEND_H */
