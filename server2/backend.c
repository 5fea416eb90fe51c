/*
 * backend.c - see backend.h: picking the ops for a URL, the reconnecting session and the
 * shared health record that turns many workers' failures into one "down" and one "up" line.
 *
 * A failure on a connection made before the latest transition to UP is "stale" (the database
 * was restarted and another worker already found it back): it closes the connection quietly
 * instead of declaring the backend down again.
 */
#include "backend.h"

#include <errno.h>
#include <string.h>

#include "clock.h"
#include "log.h"

#define RETRY_NS ((uint64_t)BACKEND_RETRY_MS * 1000000ull)
#define QUERY_ERR_LOG_INTERVAL_NS 1000000000ull
#define IDLE_CHECK_NS ((uint64_t)BACKEND_IDLE_CHECK_MS * 1000000ull)

const struct backend_ops *backend_ops_for(const struct backend_url *url)
{
    return url->kind == BACKEND_MYSQL ? &backend_mysql_ops : &backend_redis_ops;
}

int backend_library_init(void)
{
    return backend_mysql_library_init();
}

void backend_library_end(void)
{
    backend_mysql_library_end();
}

void backend_health_init(struct backend_health *h, const struct backend_url *url,
                         bool process_shared)
{
    pthread_mutexattr_t ma;

    memset(h, 0, sizeof(*h));
    pthread_mutexattr_init(&ma);
    /* robust: a process killed while holding it must not block the others forever */
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    if (process_shared)
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&h->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    h->state = BACKEND_STATE_UNKNOWN;
    backend_url_describe(url, h->desc, sizeof(h->desc));
}

static void health_lock(struct backend_health *h)
{
    if (pthread_mutex_lock(&h->mu) == EOWNERDEAD)
        pthread_mutex_consistent(&h->mu); /* its holder died; the fields are plain values */
}

void backend_health_release(struct backend_health *h)
{
    pthread_mutex_destroy(&h->mu);
}

enum backend_state backend_health_state(struct backend_health *h)
{
    enum backend_state st;
    health_lock(h);
    st = h->state;
    pthread_mutex_unlock(&h->mu);
    return st;
}

void backend_health_moved(struct backend_health *h)
{
    health_lock(h);
    atomic_fetch_add(&h->epoch, 1);
    pthread_mutex_unlock(&h->mu);
}

/* A connect succeeded: UP (logged on transition); returns the epoch the connection belongs to. */
static uint64_t health_connected(struct backend_health *h)
{
    uint64_t epoch;

    health_lock(h);
    if (h->state != BACKEND_STATE_UP) {
        if (h->state == BACKEND_STATE_DOWN)
            log_info("backend %s is back up", h->desc);
        else
            log_info("backend %s is up", h->desc);
        h->state = BACKEND_STATE_UP;
        atomic_fetch_add(&h->epoch, 1);
    }
    epoch = atomic_load(&h->epoch);
    pthread_mutex_unlock(&h->mu);
    return epoch;
}

/* A connect failed, or a connection of epoch conn_epoch broke (conn_epoch 0 = connect). */
static void health_failed(struct backend_health *h, bool connecting, uint64_t conn_epoch,
                          const char *why)
{
    health_lock(h);
    if (connecting) {
        if (h->state != BACKEND_STATE_DOWN)
            log_warn("backend %s is unreachable: %s (retrying every %d ms while requests come, "
                     "every second when idle)",
                     h->desc, why, BACKEND_RETRY_MS);
        h->state = BACKEND_STATE_DOWN;
    } else if (conn_epoch == atomic_load(&h->epoch) && h->state == BACKEND_STATE_UP) {
        log_warn("backend %s went down: %s", h->desc, why);
        h->state = BACKEND_STATE_DOWN;
    } else {
        log_debug("backend connection from before the last reconnect failed: %s", why);
    }
    pthread_mutex_unlock(&h->mu);
}

static void health_query_error(struct backend_health *h, const char *why, uint64_t now_ns)
{
    health_lock(h);
    if (now_ns - h->last_query_err_ns >= QUERY_ERR_LOG_INTERVAL_NS || h->last_query_err_ns == 0) {
        if (h->query_errs_suppressed > 0)
            log_error("backend query failed: %s (%u more not logged)", why,
                      h->query_errs_suppressed);
        else
            log_error("backend query failed: %s", why);
        h->last_query_err_ns = now_ns;
        h->query_errs_suppressed = 0;
    } else {
        h->query_errs_suppressed++;
    }
    pthread_mutex_unlock(&h->mu);
}

void backend_session_init(struct backend_session *s, const struct backend_ops *ops,
                          const struct backend_url *url, struct backend_health *health)
{
    memset(s, 0, sizeof(*s));
    s->ops = ops;
    s->url = url;
    s->health = health;
}

static bool session_connect(struct backend_session *s, uint64_t now_ns)
{
    char err[BACKEND_ERR_LEN] = "";

    s->conn = s->ops->connect(s->url, err);
    if (s->conn == NULL) {
        health_failed(s->health, true, 0, err[0] ? err : "cannot connect");
        return false;
    }
    s->connects++;
    s->conn_epoch = health_connected(s->health);
    s->last_used_ns = now_ns;
    return true;
}

bool backend_session_ready(struct backend_session *s, uint64_t now_ns)
{
    uint64_t epoch;

    if (s->conn != NULL)
        return true;
    epoch = atomic_load_explicit(&s->health->epoch, memory_order_relaxed);
    if (s->last_attempt_ns != 0 && now_ns - s->last_attempt_ns < RETRY_NS &&
        epoch == s->attempt_epoch)
        return false;
    s->last_attempt_ns = now_ns ? now_ns : 1;
    s->attempt_epoch = epoch;
    return session_connect(s, now_ns);
}

/* Closes the session's connection; the next batch or probe connects at once. */
static void drop(struct backend_session *s, const char *why)
{
    log_debug("reconnecting to the backend: %s", why);
    s->ops->close(s->conn);
    s->conn = NULL;
    s->last_attempt_ns = 0; /* reconnect now, not after the retry interval */
}

static bool outdated(const struct backend_session *s)
{
    return s->conn_epoch != atomic_load_explicit(&s->health->epoch, memory_order_relaxed);
}

#define OUTDATED_WHY "it was made before the backend's last restart or failover"

bool backend_session_probe(struct backend_session *s, uint64_t now_ns)
{
    if (s->conn != NULL && !outdated(s))
        return true;
    if (s->conn != NULL)
        drop(s, OUTDATED_WHY);
    return session_connect(s, now_ns);
}

/* Closes the connection if it is probably stale (see backend.h). */
static void drop_if_stale(struct backend_session *s, uint64_t now_ns)
{
    const char *why = NULL;

    if (s->conn == NULL)
        return;
    if (outdated(s))
        why = OUTDATED_WHY;
    else if (now_ns - s->last_used_ns >= IDLE_CHECK_NS && s->ops->ping != NULL &&
             s->ops->ping(s->conn) < 0)
        why = "it was idle and does not answer a ping";
    else if (now_ns - s->last_used_ns >= IDLE_CHECK_NS)
        s->last_used_ns = now_ns;
    if (why != NULL)
        drop(s, why);
}

static bool has_replace(const struct backend_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == BACKEND_OP_REPLACE)
            return true;
    return false;
}

int backend_session_batch(struct backend_session *s, struct backend_op *ops, size_t n,
                          uint64_t now_ns)
{
    char err[BACKEND_ERR_LEN];
    /*
     * When a batch fails on a connection that may just have gone stale (the database restarted
     * while it sat idle), it is retried once on a new one: a lookup changes nothing, and a
     * create applied before the failure is found again as its own creation (the same token in
     * the record: OK). A REPLACE is not: a compare-and-set applied before the failure would
     * fail when sent again.
     */
    int tries = has_replace(ops, n) ? 1 : 2;

    drop_if_stale(s, now_ns);
    for (int t = 0; t < tries; t++) {
        if (!backend_session_ready(s, now_ns))
            return -1;
        err[0] = '\0';
        s->round_trips++;
        if (s->ops->batch(s->conn, ops, n, err) == 0) {
            s->last_used_ns = now_ns;
            if (err[0] != '\0')
                health_query_error(s->health, err, now_ns);
            return 0;
        }
        health_failed(s->health, false, s->conn_epoch, err[0] ? err : "connection lost");
        s->ops->close(s->conn);
        s->conn = NULL;
    }
    return -1;
}

void backend_session_release(struct backend_session *s)
{
    if (s->conn != NULL)
        s->ops->close(s->conn);
    s->conn = NULL;
}
