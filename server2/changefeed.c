/*
 * changefeed.c - see changefeed.h.
 */
#include "changefeed.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

#define MS_NS 1000000ull

/* A change published on the bus and not yet applied by every loop. */
struct pending {
    uint64_t seq;     /* its number in the database's feed */
    uint64_t bus_seq; /* its number on the bus */
};

struct changefeed {
    struct changefeed_params p;
    pthread_t tid;
    int stop_fd;              /* eventfd; the thread's only */
    void *conn;               /* NULL while disconnected */
    uint64_t conn_epoch;      /* the health record's epoch when conn was made */
    uint64_t retry_at_ns;     /* no connection attempt before then */
    bool started;             /* cursor is known */
    bool following;           /* the last renewal succeeded (for the log's transitions) */
    bool warned;              /* a failure was logged since */
    uint64_t cursor;          /* the last change published on the bus */
    uint64_t applied;         /* every change <= this is applied by every loop */
    uint64_t renewed_applied; /* what the last renewal said */
    uint64_t renew_due_ns;    /* the next renewal is due then; 0 = now */
    struct pending q[CHANGEFEED_QUEUE]; /* published, not yet applied: a ring */
    size_t qhead;
    size_t qlen;
    struct backend_change buf[CHANGEFEED_BATCH];
    struct changefeed_stats st;
};

static void push(struct changefeed *f, uint64_t seq, uint64_t bus_seq)
{
    f->q[(f->qhead + f->qlen) % CHANGEFEED_QUEUE] = (struct pending){seq, bus_seq};
    f->qlen++;
}

/* Closes the connection after a failure; connects again after CHANGEFEED_RETRY_MS. */
static void give_up(struct changefeed *f, const char *what, const char *err, uint64_t now_ns)
{
    if (!f->warned)
        log_warn("cannot follow account changes: %s: %s; server1s stop answering from their "
                 "caches within %d ms, and account changes wait until this server2's "
                 "registration runs out (%d ms)",
                 what, err[0] ? err : "failed", CHANGEFEED_GRANT_MS + INVALBUS_LEASE_MS,
                 CHANGEFEED_LEASE_MS);
    else
        log_debug("change feed: %s: %s", what, err);
    f->warned = true;
    f->following = false;
    f->st.failures++;
    if (f->conn != NULL)
        f->p.ops->close(f->conn);
    f->conn = NULL;
    f->retry_at_ns = now_ns + CHANGEFEED_RETRY_MS * MS_NS;
}

/*
 * The feed cannot say which changes were missed: every loop closes its connections (their
 * server1s forget everything) and the feed carries on after number `to`.
 */
static void forget_all(struct changefeed *f, uint64_t to, const char *why)
{
    uint64_t bus_seq = invalbus_publish(f->p.bus, INVALBUS_FEED, NULL, 0);

    log_warn("account changes may have been missed (%s): every server1 connection is closed, so "
             "that their caches are emptied",
             why);
    f->st.resets++;
    f->qlen = 0;
    push(f, to, bus_seq);
    f->cursor = to;
    atomic_store(&f->p.bus->feed_cursor, to);
}

/* After a connect: where to start reading, and whether the feed went backwards. 0 or -1. */
static int sync_start(struct changefeed *f, char *err)
{
    uint64_t head;
    uint64_t kept;

    if (f->p.ops->feed_head(f->conn, &head, err) < 0)
        return -1;
    if (!f->started) {
        f->started = true;
        kept = atomic_load(&f->p.bus->feed_cursor);
        if (kept != 0 && kept <= head) {
            /* the feed's process was restarted: carry on where it was, and count what it had
             * published as applied only once the bus says so */
            f->cursor = kept;
            push(f, kept, invalbus_seq(f->p.bus));
        } else {
            f->cursor = f->applied = head; /* a new server2 has no server1 to tell yet */
        }
        atomic_store(&f->p.bus->feed_cursor, f->cursor);
        return 0;
    }
    if (head < f->cursor)
        forget_all(f, head, "the database's feed is behind what this server2 read: a failover "
                            "to a replica that missed changes, or a restore");
    return 0;
}

/* A change read from the feed: published on the bus. */
static void accept_change(struct changefeed *f, const struct backend_change *ch)
{
    char why[96];

    if (ch->seq <= f->cursor)
        return; /* seen */
    if (ch->seq != f->cursor + 1) {
        snprintf(why, sizeof(why), "the feed jumps from %llu to %llu",
                 (unsigned long long)f->cursor, (unsigned long long)ch->seq);
        forget_all(f, ch->seq - 1, why);
    }
    push(f, ch->seq, invalbus_publish(f->p.bus, INVALBUS_FEED, ch->user, ch->user_len));
    f->cursor = ch->seq;
    atomic_store(&f->p.bus->feed_cursor, f->cursor);
    f->st.changes++;
    log_debug("account change %llu: every server1 of this server2 is told",
              (unsigned long long)ch->seq);
}

/* Pops what every loop has applied. */
static void advance_applied(struct changefeed *f, uint64_t now_ns)
{
    while (f->qlen > 0 && invalbus_done(f->p.bus, f->q[f->qhead].bus_seq, now_ns)) {
        f->applied = f->q[f->qhead].seq;
        f->qhead = (f->qhead + 1) % CHANGEFEED_QUEUE;
        f->qlen--;
    }
    if (f->qlen == 0)
        f->applied = f->cursor;
}

static bool busy(struct changefeed *f)
{
    return f->qlen > 0 || invalbus_wanted(f->p.bus) > invalbus_feed_done(f->p.bus);
}

unsigned changefeed_step(struct changefeed *f, uint64_t now_ns)
{
    char err[BACKEND_ERR_LEN] = "";
    uint64_t wanted;
    int n;

    if (f->conn != NULL && f->p.health != NULL &&
        atomic_load(&f->p.health->epoch) != f->conn_epoch) {
        f->p.ops->close(f->conn); /* the primary moved, or the database came back */
        f->conn = NULL;
        f->retry_at_ns = 0;
    }
    if (f->conn == NULL) {
        if (now_ns < f->retry_at_ns)
            return (unsigned)((f->retry_at_ns - now_ns + MS_NS - 1) / MS_NS);
        if (f->p.health != NULL)
            f->conn_epoch = atomic_load(&f->p.health->epoch);
        f->conn = f->p.ops->connect(f->p.url, err);
        if (f->conn == NULL) {
            give_up(f, "cannot connect", err, now_ns);
            return CHANGEFEED_RETRY_MS;
        }
        if (sync_start(f, err) < 0) {
            give_up(f, "cannot read the feed", err, now_ns);
            return CHANGEFEED_RETRY_MS;
        }
        f->renew_due_ns = 0;
    }

    if (f->qlen + CHANGEFEED_BATCH <= CHANGEFEED_QUEUE) {
        n = f->p.ops->feed_read(f->conn, f->cursor, busy(f) ? 0 : CHANGEFEED_IDLE_MS, f->buf,
                                CHANGEFEED_BATCH, err);
        if (n < 0) {
            give_up(f, "cannot read the feed", err, now_ns);
            return CHANGEFEED_RETRY_MS;
        }
        for (int i = 0; i < n; i++)
            accept_change(f, &f->buf[i]);
        if (f->p.ops->feed_blocks)
            now_ns = clock_now_ns(); /* (the read may have waited) */
    }
    advance_applied(f, now_ns);

    if (f->applied != f->renewed_applied || now_ns >= f->renew_due_ns) {
        if (f->p.ops->feed_renew(f->conn, f->p.bus->peer_id, f->applied, CHANGEFEED_LEASE_MS,
                                 err) < 0) {
            give_up(f, "cannot renew this server2's registration", err, now_ns);
            return CHANGEFEED_RETRY_MS;
        }
        /* the registration runs out CHANGEFEED_LEASE_MS after the database ran the renewal,
         * which is after now_ns: leases granted until now_ns + CHANGEFEED_GRANT_MS end first */
        invalbus_set_grant(f->p.bus, now_ns + CHANGEFEED_GRANT_MS * MS_NS);
        f->renewed_applied = f->applied;
        f->renew_due_ns = now_ns + CHANGEFEED_RENEW_MS * MS_NS;
        f->st.renewals++;
        if (!f->following)
            log_info("following account changes in the database (change %llu)",
                     (unsigned long long)f->cursor);
        f->following = true;
        f->warned = false;
    }

    wanted = invalbus_wanted(f->p.bus);
    if (wanted > invalbus_feed_done(f->p.bus)) {
        unsigned behind = 0;
        if (f->p.ops->feed_behind(f->conn, wanted, &behind, err) < 0) {
            give_up(f, "cannot read the registry", err, now_ns);
            return CHANGEFEED_RETRY_MS;
        }
        if (behind == 0)
            invalbus_set_feed_done(f->p.bus, wanted);
    }
    if (busy(f))
        return CHANGEFEED_BUSY_MS;
    return f->p.ops->feed_blocks ? 0 : CHANGEFEED_IDLE_MS;
}

struct changefeed *changefeed_new(const struct changefeed_params *p)
{
    struct changefeed *f;

    if (p->ops->feed_head == NULL || p->ops->feed_read == NULL || p->ops->feed_renew == NULL ||
        p->ops->feed_behind == NULL) {
        log_error("the %s backend has no change feed", p->ops->name);
        return NULL;
    }
    f = xcalloc(1, sizeof(*f));
    f->p = *p;
    f->stop_fd = -1;
    return f;
}

void changefeed_free(struct changefeed *f)
{
    if (f == NULL)
        return;
    if (f->conn != NULL)
        f->p.ops->close(f->conn);
    if (f->stop_fd >= 0)
        close(f->stop_fd);
    free(f);
}

void changefeed_get_stats(const struct changefeed *f, struct changefeed_stats *out)
{
    *out = f->st;
}

/*
 * At a stop: once no loop is left on the bus (each closed its connections, so no server1 uses
 * a cache through this server2), the registration is removed.
 */
static void leave(struct changefeed *f)
{
    char err[BACKEND_ERR_LEN] = "";
    uint64_t until = clock_now_ns() + CHANGEFEED_LEAVE_WAIT_MS * MS_NS;

    if (f->conn == NULL || !f->following)
        return;
    while (invalbus_any_present(f->p.bus) && clock_now_ns() < until)
        poll(NULL, 0, 20);
    if (invalbus_any_present(f->p.bus)) {
        log_info("change feed: loops still serve; the registration is left to run out");
        return;
    }
    if (f->p.ops->feed_renew(f->conn, f->p.bus->peer_id, f->applied, 0, err) < 0)
        log_info("change feed: cannot leave the registry (%s); it runs out in %d ms", err,
                 CHANGEFEED_LEASE_MS);
    else
        log_debug("change feed: left the registry");
}

static void *changefeed_thread_main(void *arg)
{
    struct changefeed *f = arg;
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the serving thread's */
    pthread_setname_np(pthread_self(), "s2-feed");
    if (f->p.ops->thread_init)
        f->p.ops->thread_init();
    for (;;) {
        unsigned wait_ms = changefeed_step(f, clock_now_ns());
        struct pollfd pf[2] = {{.fd = f->stop_fd, .events = POLLIN},
                               {.fd = invalbus_feed_fd(f->p.bus), .events = POLLIN}};
        int rc;

        do
            rc = poll(pf, 2, (int)wait_ms);
        while (rc < 0 && errno == EINTR);
        if (pf[0].revents & POLLIN)
            break;
        if (pf[1].revents & POLLIN)
            invalbus_clear_feed_wake(f->p.bus);
    }
    invalbus_set_grant(f->p.bus, 0); /* no lease from here on */
    leave(f);
    if (f->conn != NULL)
        f->p.ops->close(f->conn);
    f->conn = NULL;
    if (f->p.ops->thread_end)
        f->p.ops->thread_end();
    return NULL;
}

struct changefeed *changefeed_start(const struct changefeed_params *p)
{
    struct changefeed *f = changefeed_new(p);
    char ebuf[128];
    int e;

    if (f == NULL)
        return NULL;
    f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (f->stop_fd < 0) {
        log_error("cannot start the change feed: eventfd: %s",
                  strerror_r(errno, ebuf, sizeof(ebuf)));
        changefeed_free(f);
        return NULL;
    }
    e = pthread_create(&f->tid, NULL, changefeed_thread_main, f);
    if (e != 0) {
        log_error("cannot start the change feed: %s", strerror_r(e, ebuf, sizeof(ebuf)));
        changefeed_free(f);
        return NULL;
    }
    return f;
}

void changefeed_stop(struct changefeed *f)
{
    uint64_t one = 1;

    if (f == NULL)
        return;
    if (write(f->stop_fd, &one, sizeof(one)) != sizeof(one))
        log_warn("cannot tell the change feed to stop");
    pthread_join(f->tid, NULL);
    log_info("change feed: %llu account changes followed, %llu times every server1 made to "
             "forget everything, %llu renewals, %llu connections given up",
             (unsigned long long)f->st.changes, (unsigned long long)f->st.resets,
             (unsigned long long)f->st.renewals, (unsigned long long)f->st.failures);
    changefeed_free(f);
}
