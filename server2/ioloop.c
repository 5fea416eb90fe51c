/*
 * ioloop.c - see ioloop.h. Each connection has a bufferevent and a "kick" event that is
 * activated (never called directly from a reply) whenever something may let the connection
 * move on: replies drained its in-flight count, its output emptied, or it is closing. This
 * keeps reply -> resume -> decode -> dispatch -> reply from ever recursing.
 */
#include "ioloop.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "frame.h"
#include "linkauth.h"
#include "linkseal.h"
#include "log.h"
#include "net.h"
#include "xalloc.h"

#define WARN_INTERVAL_NS 1000000000ull
#define ACCEPT_PAUSE_MS 100
#define BALANCE_RECHECK_MS 5
#define OUT_LIMIT_MIN 4096
#define REPLY_MAX_SIZE (FRAME_HEADER_SIZE + 2 + ACCOUNT_USER_MAX)
#define INVAL_MAX_SIZE (FRAME_HEADER_SIZE + 1 + ACCOUNT_USER_MAX)
#define ECHO_MIN_CAP 16
#define MAX_SINGLE_READ (256 * 1024) /* bytes one read of a connection may take */

enum conn_state {
    CONN_HELLO = 0,   /* waiting for the client's HELLO */
    CONN_AUTH = 1,    /* HELLO_ACK sent; waiting for the client's AUTH */
    CONN_READY = 2,   /* serving requests */
    CONN_CLOSING = 3, /* no more reading; freed once replies are written */
};

/*
 * What a request in flight was, so that its REPLY can echo it (docs/protocol.md): the workers'
 * replies carry only the id and the status. Open addressing on the id, linear probing,
 * deletion by backward shift (no tombstones); at most half full.
 */
struct echo {
    uint64_t id;
    bool used;
    uint8_t type;
    uint8_t user_len;
    char user[ACCOUNT_USER_MAX];
};

struct echo_table {
    struct echo *e;
    uint32_t cap; /* 0 or a power of two */
    uint32_t n;
};

struct s2_conn {
    struct s2_ioloop *loop;
    struct bufferevent *bev;
    struct event *kick;
    uint32_t slot;
    uint32_t gen;
    uint32_t inflight; /* jobs dispatched and not yet answered */
    enum conn_state state;
    struct echo_table echo; /* one entry per CREATE/VERIFY in flight */
    uint64_t inv_sent;     /* the last INVALIDATE sent on c (its bus number) */
    uint64_t inv_acked;    /* the last acknowledged; < inv_sent: c owes an ack */
    uint64_t inv_since_ns; /* when c started owing */
    uint8_t nonce_c[LINKAUTH_NONCE_SIZE];
    uint8_t nonce_s[LINKAUTH_NONCE_SIZE];
    struct linkseal seal; /* the session keys (linkseal.h), once HELLO is answered */
    bool seal_tx;         /* what we send is sealed: from the frame after HELLO_ACK */
    bool seal_rx;         /* what we read is sealed: from the frame after AUTH */
    uint8_t addr[NET_ADDR_KEY_LEN]; /* the peer's address key (net_addr_key) */
    struct s2_conn *hs_prev;        /* the loop's list of connections in their handshake, */
    struct s2_conn *hs_next;        /* oldest first (state HELLO or AUTH, or closing from them) */
    uint64_t hs_deadline_ns;
    bool hs_listed;
    bool reading; /* EV_READ enabled */
    bool eof;     /* the peer will send nothing more */
    char peer[64];
};

/* Rate limit for one kind of warning: at most one line per WARN_INTERVAL_NS. */
struct ratelimit {
    uint64_t last_ns;
    unsigned suppressed;
};

/* A reply to an account change, held until every server1 has dropped that user (or later). */
struct parked {
    struct s2_reply r;
    uint64_t seq;         /* feed: the change's number in the database's feed; else on the bus */
    bool feed;            /* a change made: held until no live server2 is behind it */
    uint64_t deadline_ns; /* answered then anyway: UNAVAILABLE if feed, else as it is */
};

struct s2_ioloop {
    struct s2_ioloop_params p;
    size_t out_limit; /* reply bytes unread by the peer before we stop reading it */
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *sig_term;
    struct event *sig_int;
    struct event *accept_resume;
    struct event *balance_timer;
    struct event *drain_guard;
    struct event *bus_ev;    /* our bus eventfd: another member published or applied */
    struct event *inv_timer; /* ack timeouts and held replies */
    struct event *lease_timer; /* LEASE to every ready connection while the feed allows */
    uint64_t bus_cursor;     /* the last bus number we sent to our connections */
    uint64_t bus_applied;    /* what we last told the bus */
    struct parked *parked;
    size_t nparked;
    size_t parked_cap;
    bool accept_error_pause; /* listener off after an accept error, until accept_resume */
    bool balance_pause;      /* listener off: other processes have fewer connections */
    struct s2_conn **conns;  /* max_conns slots */
    uint32_t *gens;          /* current generation of each slot */
    uint32_t *free_slots;    /* stack of unused slots */
    uint32_t nfree;
    uint32_t nconns;
    struct s2_job *pending; /* jobs read but not yet dispatched, all from pending_conn */
    size_t npending;
    struct s2_conn *pending_conn;
    struct s2_conn *hs_head; /* connections in their handshake, oldest first */
    struct s2_conn *hs_tail;
    unsigned nhs;
    struct event *hs_timer; /* the oldest handshake's deadline */
    bool stopping;
    struct ratelimit rl_bad;
    struct ratelimit rl_full;
    struct ratelimit rl_accept;
    struct ratelimit rl_auth;
    struct ratelimit rl_hs;
    struct s2_ioloop_stats st;
};

static void conn_kick(struct s2_conn *c);
static void conn_free(struct s2_conn *c, const char *why);
static void bus_process(struct s2_ioloop *l);
static void send_lease(struct s2_conn *c);
static void send_reply_now(struct s2_ioloop *l, const struct s2_reply *r);

/* The link key (linkauth.h); all zero until s2_ioloop_set_link_key. */
static uint8_t link_key[LINKAUTH_KEY_SIZE];

void s2_ioloop_set_link_key(const uint8_t key[LINKAUTH_KEY_SIZE])
{
    memcpy(link_key, key, LINKAUTH_KEY_SIZE);
}

/* ---- echo table ---- */

static uint32_t echo_hash(uint64_t id, uint32_t cap)
{
    return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct echo *echo_find(struct echo_table *t, uint64_t id)
{
    if (t->cap == 0)
        return NULL;
    for (uint32_t i = echo_hash(id, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (!t->e[i].used)
            return NULL;
        if (t->e[i].id == id)
            return &t->e[i];
    }
}

static void echo_grow(struct echo_table *t)
{
    struct echo *old = t->e;
    uint32_t oldcap = t->cap;

    t->cap = oldcap ? oldcap * 2 : ECHO_MIN_CAP;
    t->e = xcalloc(t->cap, sizeof(*t->e));
    for (uint32_t k = 0; k < oldcap; k++) {
        uint32_t i;
        if (!old[k].used)
            continue;
        for (i = echo_hash(old[k].id, t->cap); t->e[i].used; i = (i + 1) & (t->cap - 1))
            ;
        t->e[i] = old[k];
    }
    free(old);
}

/* Adds a request; false if its id is already in flight (the client broke the rules). */
static bool echo_add(struct echo_table *t, uint64_t id, uint8_t type, const char *user,
                     uint8_t user_len)
{
    uint32_t i;

    if (echo_find(t, id) != NULL)
        return false;
    if ((t->n + 1) * 2 > t->cap)
        echo_grow(t);
    for (i = echo_hash(id, t->cap); t->e[i].used; i = (i + 1) & (t->cap - 1))
        ;
    t->e[i].used = true;
    t->e[i].id = id;
    t->e[i].type = type;
    t->e[i].user_len = user_len;
    memcpy(t->e[i].user, user, user_len);
    t->n++;
    return true;
}

static void echo_remove(struct echo_table *t, struct echo *e)
{
    uint32_t i = (uint32_t)(e - t->e);
    uint32_t j = i;

    t->e[i].used = false;
    t->n--;
    /* backward shift: move up every later entry of the run that may live in the hole */
    for (;;) {
        uint32_t h;
        j = (j + 1) & (t->cap - 1);
        if (!t->e[j].used)
            return;
        h = echo_hash(t->e[j].id, t->cap);
        /* entry j may move to i if its home h is not cyclically in (i, j] */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            t->e[i] = t->e[j];
            t->e[j].used = false;
            i = j;
        }
    }
}

/* True if a line may be logged now; *suppressed gets how many were skipped since the last. */
static bool ratelimit_ok(struct ratelimit *rl, unsigned *suppressed)
{
    uint64_t now = clock_now_ns();
    if (rl->last_ns != 0 && now - rl->last_ns < WARN_INTERVAL_NS) {
        rl->suppressed++;
        return false;
    }
    *suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last_ns = now;
    return true;
}

static void format_peer(const struct sockaddr *sa, int len, char *out, size_t cap)
{
    char host[48];
    char serv[8];
    if (sa == NULL || getnameinfo(sa, (socklen_t)len, host, sizeof(host), serv, sizeof(serv),
                                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    if (strchr(host, ':') != NULL)
        snprintf(out, cap, "[%s]:%s", host, serv);
    else
        snprintf(out, cap, "%s:%s", host, serv);
}

static size_t out_len(const struct s2_conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

static void listener_update(struct s2_ioloop *l)
{
    if (l->listener == NULL || l->stopping)
        return;
    if (l->accept_error_pause || l->balance_pause)
        evconnlistener_disable(l->listener);
    else
        evconnlistener_enable(l->listener);
}

/* Processes mode: publishes our connection count, pauses accepting if others have fewer. */
static void balance_update(struct s2_ioloop *l)
{
    uint32_t min_other = S2_IOLOOP_ABSENT;
    bool pause;

    if (l->p.shared_counts == NULL)
        return;
    atomic_store(&l->p.shared_counts[l->p.shared_index], l->nconns);
    for (unsigned i = 0; i < l->p.nshared; i++) {
        uint32_t v;
        if (i == l->p.shared_index)
            continue;
        v = atomic_load(&l->p.shared_counts[i]);
        if (v < min_other)
            min_other = v;
    }
    pause = min_other != S2_IOLOOP_ABSENT && l->nconns > min_other;
    if (pause != l->balance_pause) {
        l->balance_pause = pause;
        listener_update(l);
    }
    if (pause && !l->stopping) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = BALANCE_RECHECK_MS * 1000};
        evtimer_add(l->balance_timer, &tv);
    }
}

static void on_balance_timer(evutil_socket_t fd, short what, void *arg)
{
    UNUSED(fd);
    UNUSED(what);
    balance_update(arg);
}

/* ---- handshakes: deadline and caps ---- */

static void hs_unlink(struct s2_conn *c)
{
    struct s2_ioloop *l = c->loop;

    if (!c->hs_listed)
        return;
    if (c->hs_prev != NULL)
        c->hs_prev->hs_next = c->hs_next;
    else
        l->hs_head = c->hs_next;
    if (c->hs_next != NULL)
        c->hs_next->hs_prev = c->hs_prev;
    else
        l->hs_tail = c->hs_prev;
    c->hs_prev = c->hs_next = NULL;
    c->hs_listed = false;
    l->nhs--;
}

/* Arms the timer for the oldest handshake's deadline, unless it will fire before that anyway. */
static void hs_arm(struct s2_ioloop *l)
{
    uint64_t now;
    uint64_t us;
    struct timeval tv;

    if (l->hs_head == NULL || evtimer_pending(l->hs_timer, NULL))
        return;
    now = clock_now_ns();
    us = l->hs_head->hs_deadline_ns > now ? (l->hs_head->hs_deadline_ns - now) / 1000 + 1 : 0;
    tv.tv_sec = (time_t)(us / 1000000);
    tv.tv_usec = (suseconds_t)(us % 1000000);
    evtimer_add(l->hs_timer, &tv);
}

/* Closes c, still in its handshake, counted in *counter; warns at most once a second. */
static void hs_close(struct s2_conn *c, uint64_t *counter, const char *why)
{
    struct s2_ioloop *l = c->loop;
    unsigned skipped;

    (*counter)++;
    if (ratelimit_ok(&l->rl_hs, &skipped))
        log_warn("closing connection from %s in its handshake: %s%s", c->peer, why,
                 skipped ? " (more like this not logged)" : "");
    else
        log_debug("closing connection from %s in its handshake: %s", c->peer, why);
    conn_free(c, why);
}

static void on_hs_timer(evutil_socket_t fd, short what, void *arg)
{
    struct s2_ioloop *l = arg;
    uint64_t now = clock_now_ns();
    UNUSED(fd);
    UNUSED(what);

    while (l->hs_head != NULL && l->hs_head->hs_deadline_ns <= now)
        hs_close(l->hs_head, &l->st.hs_timeouts, "not authenticated within --handshake-timeout");
    hs_arm(l);
}

/*
 * Before a connection from addr is set up: closes the oldest handshake of addr if addr has
 * max_unauth_per_addr, else the oldest of all if max_unauth are in their handshake or every
 * slot is taken.
 */
static void hs_make_room(struct s2_ioloop *l, const uint8_t addr[NET_ADDR_KEY_LEN])
{
    if (l->p.max_unauth_per_addr > 0) {
        struct s2_conn *oldest = NULL;
        unsigned n = 0;
        for (struct s2_conn *c = l->hs_head; c != NULL; c = c->hs_next) {
            if (memcmp(c->addr, addr, NET_ADDR_KEY_LEN) != 0)
                continue;
            if (oldest == NULL)
                oldest = c;
            n++;
        }
        if (n >= l->p.max_unauth_per_addr) {
            l->st.hs_evicted_addr++;
            hs_close(oldest, &l->st.hs_evicted,
                     "room for a newer one from its address (--max-unauth-conns-per-ip)");
        }
    }
    if (l->hs_head != NULL && l->nhs >= l->p.max_unauth)
        hs_close(l->hs_head, &l->st.hs_evicted, "room for a newer connection (--max-unauth-conns)");
    else if (l->hs_head != NULL && l->nfree == 0)
        hs_close(l->hs_head, &l->st.hs_evicted, "room for a newer connection (--max-conns)");
}

static void conn_free(struct s2_conn *c, const char *why)
{
    struct s2_ioloop *l = c->loop;

    log_debug("connection %s closed: %s (%u requests unanswered)", c->peer, why, c->inflight);
    hs_unlink(c);
    if (l->pending_conn == c) {
        sodium_memzero(l->pending, sizeof(*l->pending) * l->npending);
        l->npending = 0;
        l->pending_conn = NULL;
    }
    l->conns[c->slot] = NULL;
    l->gens[c->slot]++;
    free(c->echo.e);
    l->free_slots[l->nfree++] = c->slot;
    l->nconns--;
    bool owed = c->inv_acked < c->inv_sent;
    event_free(c->kick);
    bufferevent_free(c->bev);
    linkseal_clear(&c->seal);
    free(c);
    balance_update(l);
    if (owed)
        event_active(l->inv_timer, EV_TIMEOUT, 0); /* what it owed is owed no more */
    if (l->stopping && l->nconns == 0 && l->nparked == 0)
        event_base_loopexit(l->base, NULL);
}

/* Closes c for a protocol violation. */
static void conn_bad(struct s2_conn *c, const char *why)
{
    unsigned skipped;
    c->loop->st.bad_input++;
    if (ratelimit_ok(&c->loop->rl_bad, &skipped)) {
        if (skipped)
            log_warn("closing connection from %s: %s (%u more like this not logged)", c->peer, why,
                     skipped);
        else
            log_warn("closing connection from %s: %s", c->peer, why);
    } else {
        log_debug("closing connection from %s: %s", c->peer, why);
    }
    conn_free(c, why);
}

/* Whether c may decode another request now. */
static bool conn_can_take(const struct s2_conn *c)
{
    const struct s2_ioloop *l = c->loop;
    if (c->state == CONN_CLOSING)
        return false;
    if (l->stopping || c->eof)
        return true; /* no more reads: answer whatever is already buffered */
    return c->inflight < l->p.max_inflight && out_len(c) < l->out_limit;
}

static void update_reading(struct s2_conn *c)
{
    bool want = c->state != CONN_CLOSING && !c->loop->stopping && !c->eof && conn_can_take(c);
    if (want && !c->reading) {
        bufferevent_enable(c->bev, EV_READ);
        c->reading = true;
    } else if (!want && c->reading) {
        bufferevent_disable(c->bev, EV_READ);
        c->reading = false;
    }
}

static void flush_pending(struct s2_ioloop *l)
{
    size_t n = l->npending;
    if (n == 0)
        return;
    l->npending = 0; /* before the call: processes mode replies from inside it */
    l->st.requests += n;
    l->p.dispatch(l, l->pending, n, l->p.arg);
    sodium_memzero(l->pending, sizeof(*l->pending) * n);
    l->pending_conn = NULL;
}

/*
 * Writes the frame of n bytes at rec + LINKSEAL_LEN_SIZE to c: sealed in place once c's
 * output is sealed (rec then has room for n + LINKSEAL_OVERHEAD), else as it is. A frame that
 * cannot be sealed (the direction's 2^64 - 1 records are used up) is not sent, and c closes.
 */
static void conn_write_frame(struct s2_conn *c, uint8_t *rec, size_t n)
{
    size_t r;

    if (n == 0)
        return;
    if (!c->seal_tx) {
        bufferevent_write(c->bev, rec + LINKSEAL_LEN_SIZE, n);
        return;
    }
    r = linkseal_seal(&c->seal.tx, rec, n);
    if (r == 0) {
        log_error("connection %s: cannot seal another frame; closing it", c->peer);
        c->state = CONN_CLOSING;
        update_reading(c);
        event_active(c->kick, EV_TIMEOUT, 0);
        return;
    }
    bufferevent_write(c->bev, rec, r);
}

static void send_frame(struct s2_conn *c, const struct frame *f)
{
    uint8_t rec[LINKSEAL_RECORD_MAX];
    conn_write_frame(c, rec,
                     frame_encode(f, rec + LINKSEAL_LEN_SIZE, sizeof(rec) - LINKSEAL_OVERHEAD));
}

static void send_reply(struct s2_conn *c, uint64_t id, uint8_t status, uint8_t req_type,
                       const char *user, size_t user_len, uint32_t retry_ms)
{
    uint8_t rec[REPLY_MAX_SIZE + LINKSEAL_OVERHEAD];
    size_t n = frame_encode_reply_retry(id, (enum frame_status)status, req_type, user, user_len,
                                        retry_ms, rec + LINKSEAL_LEN_SIZE, REPLY_MAX_SIZE);
    conn_write_frame(c, rec, n);
}

/* Closes c for a failed link authentication: counted, logged with the peer, never the key. */
static void conn_auth_failed(struct s2_conn *c, const char *why)
{
    struct s2_ioloop *l = c->loop;
    unsigned skipped;

    l->st.auth_failed++;
    l->st.bad_input++;
    if (ratelimit_ok(&l->rl_auth, &skipped))
        log_warn("connection from %s failed link authentication: %s%s", c->peer, why,
                 skipped ? " (more like this not logged)" : "");
    else
        log_debug("connection from %s failed link authentication: %s", c->peer, why);
    conn_free(c, "link authentication failed");
}

/* HELLO: answers HELLO_ACK with our nonce and our proof; the client proves itself in AUTH. */
static int handle_hello(struct s2_conn *c, const struct frame *f)
{
    struct s2_ioloop *l = c->loop;
    struct frame ack = {.type = FRAME_HELLO_ACK, .version = FRAME_VERSION};
    unsigned skipped;

    if (f->type != FRAME_HELLO) {
        conn_auth_failed(c, "first frame is not HELLO");
        return -1;
    }
    if (f->version != FRAME_VERSION) {
        l->st.bad_input++;
        if (ratelimit_ok(&l->rl_bad, &skipped))
            log_warn("closing connection from %s: protocol version %u not supported (want %u)",
                     c->peer, f->version, FRAME_VERSION);
        ack.status = FRAME_ST_BAD_VERSION;
        ack.id = f->id;
        send_frame(c, &ack);
        c->state = CONN_CLOSING;
        update_reading(c);
        event_active(c->kick, EV_TIMEOUT, 0);
        return 1;
    }
    memcpy(c->nonce_c, f->nonce, LINKAUTH_NONCE_SIZE);
    linkauth_nonce(c->nonce_s);
    memcpy(ack.nonce, c->nonce_s, LINKAUTH_NONCE_SIZE);
    linkauth_mac(link_key, LINKAUTH_SERVER2, c->nonce_c, c->nonce_s, ack.mac);
    ack.id = f->id;
    send_frame(c, &ack);
    /* from here on what we send is sealed; what we read, once AUTH is checked */
    c->seal_tx = linkseal_enabled(link_key);
    if (c->seal_tx)
        linkseal_init(&c->seal, link_key, LINKAUTH_SERVER2, c->nonce_c, c->nonce_s);
    c->state = CONN_AUTH;
    log_debug("connection %s: HELLO version %u", c->peer, f->version);
    return 0;
}

/* Handles one decoded frame: 0 = go on, 1 = stop (c is closing), -1 = stop (c was freed). */
static int handle_frame(struct s2_conn *c, const struct frame *f)
{
    struct s2_ioloop *l = c->loop;
    struct s2_job *j;

    if (c->state == CONN_HELLO)
        return handle_hello(c, f);
    if (c->state == CONN_AUTH) {
        /* nothing is read as a request before the client has proved it holds the key */
        if (f->type != FRAME_AUTH) {
            conn_auth_failed(c, "a frame other than AUTH after HELLO");
            return -1;
        }
        if (!linkauth_check(link_key, LINKAUTH_SERVER1, c->nonce_c, c->nonce_s, f->mac)) {
            conn_auth_failed(c, "wrong MAC in AUTH (not the same secret)");
            return -1;
        }
        c->state = CONN_READY;
        c->seal_rx = c->seal_tx;
        hs_unlink(c);
        log_debug("connection %s: link authenticated", c->peer);
        send_lease(c); /* a new server1 may use its cache at once */
        return 0;
    }
    switch (f->type) {
    case FRAME_PING:
        send_reply(c, f->id, FRAME_ST_OK, FRAME_PING, NULL, 0, 0);
        return 0;
    case FRAME_INVALIDATE_ACK:
        if (f->id <= c->inv_acked || f->id > c->inv_sent) {
            conn_bad(c, "INVALIDATE_ACK for an id not sent or already acknowledged");
            return -1;
        }
        c->inv_acked = f->id;
        c->inv_since_ns = clock_now_ns(); /* if it still owes, it owes a later one */
        event_active(l->inv_timer, EV_TIMEOUT, 0);
        return 0;
    case FRAME_CREATE:
    case FRAME_VERIFY:
    case FRAME_SETPASS:
    case FRAME_DELETE:
        if (!echo_add(&c->echo, f->id, f->type, f->user, f->user_len)) {
            conn_bad(c, "request id already in flight");
            return -1;
        }
        j = &l->pending[l->npending++];
        l->pending_conn = c;
        j->conn_slot = c->slot;
        j->conn_gen = c->gen;
        j->id = f->id;
        /* relative to when we read it, so the two hosts' clocks need not agree */
        j->deadline_ns = f->budget_ms ? clock_now_ns() + (uint64_t)f->budget_ms * 1000000 : 0;
        j->type = f->type;
        j->status = FRAME_ST_INTERNAL;
        j->flags = 0;
        j->change_seq = 0;
        j->user_len = f->user_len;
        j->pass_len = f->pass_len;
        memcpy(j->user, f->user, sizeof(j->user));
        memcpy(j->pass, f->pass, sizeof(j->pass));
        j->new_len = f->new_len;
        if (f->type == FRAME_SETPASS)
            memcpy(j->new_pass, f->new_pass, sizeof(j->new_pass));
        if (f->type == FRAME_CREATE)
            memcpy(j->token, f->token, sizeof(j->token));
        c->inflight++;
        if (l->npending == l->p.batch)
            flush_pending(l);
        return 0;
    case FRAME_HELLO:
    case FRAME_AUTH:
        conn_bad(c, "second HELLO or AUTH");
        return -1;
    default:
        conn_bad(c, "frame type a client must not send");
        return -1;
    }
}

/*
 * The next whole frame of c's input into *f, drained from it: in clear during the handshake,
 * then, on a sealed link, opened from its record first (at most LINKSEAL_RECORD_MAX bytes are
 * looked at before the record is authenticated). FRAME_BAD: c was freed.
 */
static enum frame_result next_frame(struct s2_conn *c, struct evbuffer *in, struct frame *f)
{
    size_t len = evbuffer_get_length(in);
    size_t cap = c->seal_rx ? LINKSEAL_RECORD_MAX : FRAME_MAX_SIZE;
    size_t want = len < cap ? len : cap;
    const char *why = "malformed frame";
    uint8_t plain[FRAME_MAX_SIZE];
    size_t plain_len = 0;
    size_t used = 0;
    size_t fused = 0;
    unsigned char *p;
    enum frame_result r;

    if (len < (c->seal_rx ? LINKSEAL_LEN_SIZE : FRAME_HEADER_SIZE))
        return FRAME_MORE;
    p = evbuffer_pullup(in, (ev_ssize_t)want);
    if (p == NULL) {
        conn_free(c, "out of memory");
        return FRAME_BAD;
    }
    if (!c->seal_rx) {
        r = frame_decode(p, want, f, &used, &why);
        if (r == FRAME_BAD) {
            sodium_memzero(f, sizeof(*f));
            conn_bad(c, why);
        } else if (r == FRAME_DONE) {
            evbuffer_drain(in, used);
        }
        return r;
    }
    switch (linkseal_open(&c->seal.rx, p, want, plain, &plain_len, &used, &why)) {
    case LINKSEAL_MORE:
        return FRAME_MORE;
    case LINKSEAL_BAD:
        conn_auth_failed(c, why);
        return FRAME_BAD;
    case LINKSEAL_DONE:
        break;
    }
    r = frame_decode(plain, plain_len, f, &fused, &why);
    sodium_memzero(plain, sizeof(plain));
    if (r == FRAME_DONE && fused != plain_len)
        why = "a sealed record holds more than one frame";
    else if (r == FRAME_MORE)
        why = "a sealed record holds part of a frame";
    if (r != FRAME_DONE || fused != plain_len) {
        sodium_memzero(f, sizeof(*f));
        conn_bad(c, why);
        return FRAME_BAD;
    }
    evbuffer_drain(in, used);
    return FRAME_DONE;
}

/* Decodes and handles every whole frame c may take now, then dispatches them. -1: c freed. */
static int process_input(struct s2_conn *c)
{
    struct s2_ioloop *l = c->loop;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct frame f;
    int rc;

    while (conn_can_take(c)) {
        enum frame_result r = next_frame(c, in, &f);
        if (r == FRAME_MORE)
            break;
        if (r == FRAME_BAD)
            return -1;
        rc = handle_frame(c, &f);
        if (rc != 0) {
            sodium_memzero(&f, sizeof(f));
            return rc < 0 ? -1 : 0;
        }
    }
    sodium_memzero(&f, sizeof(f));
    flush_pending(l);
    update_reading(c);
    return 0;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    UNUSED(fd);
    UNUSED(what);
    conn_kick(arg);
}

/* Moves c on: frees it when it is closing and done, else resumes reading if it may. */
static void conn_kick(struct s2_conn *c)
{
    struct s2_ioloop *l = c->loop;

    if (c->state == CONN_CLOSING || l->stopping || c->eof) {
        if (c->state != CONN_CLOSING && process_input(c) < 0)
            return; /* frames that waited for in-flight room; c was freed */
        if (c->inflight == 0 && out_len(c) == 0)
            conn_free(c, c->state == CONN_CLOSING ? "closed after the last reply"
                         : c->eof                 ? "peer closed"
                                                  : "shutdown");
        return;
    }
    if (!c->reading && conn_can_take(c))
        (void)process_input(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    UNUSED(bev);
    (void)process_input(arg);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    UNUSED(bev);
    conn_kick(arg); /* output is empty now */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct s2_conn *c = arg;

    if (what & BEV_EVENT_ERROR) {
        char ebuf[128];
        int e = EVUTIL_SOCKET_ERROR();
        conn_free(c, e ? strerror_r(e, ebuf, sizeof(ebuf)) : "socket error");
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        if (c->inflight > 0 || out_len(c) > 0) {
            /* Not idle: waiting for us. libevent disabled reading; turn it back on. */
            bufferevent_enable(bev, EV_READ);
            c->reading = true;
            update_reading(c);
            return;
        }
        conn_free(c, "idle timeout");
        return;
    }
    if (what & BEV_EVENT_EOF) {
        c->eof = true;
        c->reading = false; /* libevent stopped reading */
        conn_kick(c);
    }
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct s2_ioloop *l = arg;
    struct s2_conn *c;
    unsigned skipped;

    uint8_t addr[NET_ADDR_KEY_LEN];

    UNUSED(lis);
    net_addr_key(sa, (socklen_t)salen, addr);
    if (!l->stopping)
        hs_make_room(l, addr);
    if (l->nfree == 0 || l->stopping) {
        l->st.rejected++;
        if (ratelimit_ok(&l->rl_full, &skipped))
            log_warn("connection refused: %u connections open (--max-conns)%s", l->nconns,
                     skipped ? ", more refusals not logged" : "");
        close(fd);
        return;
    }
    if (net_set_nodelay(fd) < 0)
        log_debug("TCP_NODELAY failed on an accepted socket");
    c = xcalloc(1, sizeof(*c));
    c->loop = l;
    memcpy(c->addr, addr, sizeof(addr));
    format_peer(sa, salen, c->peer, sizeof(c->peer));
    c->bev = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->kick = event_new(l->base, -1, 0, on_kick, c);
    if (c->bev == NULL || c->kick == NULL) {
        log_error("cannot set up a connection from %s: out of memory", c->peer);
        if (c->bev)
            bufferevent_free(c->bev);
        else
            close(fd);
        if (c->kick)
            event_free(c->kick);
        free(c);
        return;
    }
    /* what a client pipelined is read in one go (libevent reads 16 KiB at a time otherwise):
     * in processes mode the loop hashes between reads, and a request read late waits for the
     * hashes done before it was read; at most --max-inflight frames are taken anyway */
    bufferevent_set_max_single_read(c->bev, MAX_SINGLE_READ);
    c->slot = l->free_slots[--l->nfree];
    c->gen = ++l->gens[c->slot];
    l->conns[c->slot] = c;
    l->nconns++;
    l->st.accepted++;
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    if (l->p.idle_timeout_us > 0) {
        struct timeval tv = {.tv_sec = (time_t)(l->p.idle_timeout_us / 1000000),
                             .tv_usec = (suseconds_t)(l->p.idle_timeout_us % 1000000)};
        bufferevent_set_timeouts(c->bev, &tv, NULL);
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->reading = true;
    c->hs_deadline_ns = clock_now_ns() + l->p.handshake_timeout_us * 1000;
    c->hs_prev = l->hs_tail;
    if (l->hs_tail != NULL)
        l->hs_tail->hs_next = c;
    else
        l->hs_head = c;
    l->hs_tail = c;
    c->hs_listed = true;
    l->nhs++;
    hs_arm(l);
    log_debug("connection from %s accepted (%u open)", c->peer, l->nconns);
    balance_update(l);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    struct s2_ioloop *l = arg;
    UNUSED(fd);
    UNUSED(what);
    l->accept_error_pause = false;
    listener_update(l);
}

static void on_accept_error(struct evconnlistener *lis, void *arg)
{
    struct s2_ioloop *l = arg;
    int e = EVUTIL_SOCKET_ERROR();
    char ebuf[128];
    unsigned skipped;
    struct timeval tv = {.tv_sec = 0, .tv_usec = ACCEPT_PAUSE_MS * 1000};

    if (ratelimit_ok(&l->rl_accept, &skipped))
        log_warn("accept failed: %s; pausing accepts for %d ms", strerror_r(e, ebuf, sizeof(ebuf)),
                 ACCEPT_PAUSE_MS);
    /* Out of descriptors or memory: retrying at once would spin. */
    UNUSED(lis);
    l->accept_error_pause = true;
    listener_update(l);
    evtimer_add(l->accept_resume, &tv);
}

static void on_drain_guard(evutil_socket_t fd, short what, void *arg)
{
    struct s2_ioloop *l = arg;
    UNUSED(fd);
    UNUSED(what);
    log_warn("shutdown: %u connections still have unanswered requests after %llu ms; "
             "closing them",
             l->nconns, (unsigned long long)l->p.drain_timeout_ms);
    for (uint32_t i = 0; i < l->p.max_conns; i++)
        if (l->conns[i] != NULL)
            conn_free(l->conns[i], "shutdown timeout");
    event_base_loopexit(l->base, NULL);
}

void s2_ioloop_stop(struct s2_ioloop *l)
{
    uint32_t inflight = 0;

    if (l->stopping)
        return;
    l->stopping = true;
    for (uint32_t i = 0; i < l->p.max_conns; i++)
        if (l->conns[i] != NULL)
            inflight += l->conns[i]->inflight;
    log_info("shutting down: %u connections, %u requests in flight", l->nconns, inflight);
    if (l->listener != NULL) {
        evconnlistener_free(l->listener);
        l->listener = NULL;
    }
    evtimer_del(l->accept_resume);
    evtimer_del(l->balance_timer);
    event_del(l->lease_timer); /* the connections close: no new lease */
    for (uint32_t i = 0; i < l->p.max_conns; i++) {
        struct s2_conn *c = l->conns[i];
        if (c == NULL)
            continue;
        update_reading(c); /* off */
        conn_kick(c);      /* decode what is buffered; close if already done */
    }
    if (l->nconns == 0) {
        event_base_loopexit(l->base, NULL);
    } else if (l->p.drain_timeout_ms > 0) {
        struct timeval tv = {.tv_sec = (time_t)(l->p.drain_timeout_ms / 1000),
                             .tv_usec = (suseconds_t)(l->p.drain_timeout_ms % 1000) * 1000};
        evtimer_add(l->drain_guard, &tv);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    UNUSED(what);
    log_info("got %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
    s2_ioloop_stop(arg);
}

/* Whether the reply to an account change says it may have been applied. */
static bool change_may_be_applied(uint8_t status)
{
    return status == FRAME_ST_OK || status == FRAME_ST_UNAVAILABLE ||
           status == FRAME_ST_INTERNAL;
}

static void park(struct s2_ioloop *l, const struct s2_reply *r, uint64_t seq, bool feed)
{
    if (l->nparked == l->parked_cap) {
        l->parked_cap = l->parked_cap ? l->parked_cap * 2 : 8;
        l->parked = xrealloc(l->parked, l->parked_cap * sizeof(*l->parked));
    }
    l->parked[l->nparked++] = (struct parked){
        .r = *r, .seq = seq, .feed = feed, .deadline_ns = clock_now_ns() + INVAL_WAIT_MS * 1000000ull};
}

/* The request r answers, and its connection; NULL (counted as dropped) if either is gone. */
static struct echo *reply_echo(struct s2_ioloop *l, const struct s2_reply *r,
                               struct s2_conn **conn)
{
    struct s2_conn *c = r->conn_slot < l->p.max_conns ? l->conns[r->conn_slot] : NULL;
    struct echo *e = NULL;

    if (c != NULL && c->gen == r->conn_gen)
        e = echo_find(&c->echo, r->id); /* (always there: added when the job was read) */
    if (e == NULL)
        l->st.dropped++;
    *conn = c;
    return e;
}

/* Writes the reply r to request e of c. */
static void answer(struct s2_ioloop *l, struct s2_conn *c, struct echo *e, const struct s2_reply *r)
{
    send_reply(c, e->id, r->status, e->type, e->user, e->user_len,
               r->status == FRAME_ST_LIMITED ? r->retry_ms : 0);
    echo_remove(&c->echo, e);
    l->st.replies++;
    if (c->inflight > 0)
        c->inflight--;
    if (!c->reading || c->state == CONN_CLOSING || l->stopping || c->eof)
        event_active(c->kick, EV_TIMEOUT, 0);
}

/* Writes r if its connection is still there (a held account change's, once released). */
static void send_reply_now(struct s2_ioloop *l, const struct s2_reply *r)
{
    struct s2_conn *c;
    struct echo *e = reply_echo(l, r, &c);

    if (e != NULL)
        answer(l, c, e, r);
}

void s2_ioloop_reply(struct s2_ioloop *l, const struct s2_reply *r, size_t n)
{
    bool published = false;

    for (size_t i = 0; i < n; i++) {
        struct s2_conn *c;
        struct echo *e = reply_echo(l, &r[i], &c);
        if (e == NULL)
            continue;
        if ((e->type == FRAME_SETPASS || e->type == FRAME_DELETE) && r[i].status == FRAME_ST_OK &&
            r[i].change_seq > 0) {
            /* made: every server2 learns it from the database's feed, ours included */
            park(l, &r[i], r[i].change_seq, true);
            invalbus_want(l->p.bus, r[i].change_seq);
            published = true;
            continue;
        }
        if ((e->type == FRAME_SETPASS || e->type == FRAME_DELETE) &&
            change_may_be_applied(r[i].status)) {
            /* outcome unknown: at least our own server1s forget the user now */
            park(l, &r[i], invalbus_publish(l->p.bus, l->p.bus_member, e->user, e->user_len),
                 false);
            published = true;
            continue;
        }
        answer(l, c, e, &r[i]);
    }
    if (published)
        bus_process(l);
}

/* ---- invalidation and leases ---- */

/* LEASE on c if the feed allows it now (changefeed.h); recorded on the bus. */
static void send_lease(struct s2_conn *c)
{
    struct s2_ioloop *l = c->loop;
    uint8_t rec[FRAME_HEADER_SIZE + FRAME_LEASE_PAYLOAD + LINKSEAL_OVERHEAD];
    uint64_t now = clock_now_ns();
    size_t n;

    if (l->stopping || !invalbus_may_lease(l->p.bus, now))
        return;
    n = frame_encode_lease(INVALBUS_LEASE_MS, rec + LINKSEAL_LEN_SIZE,
                           sizeof(rec) - LINKSEAL_OVERHEAD);
    invalbus_lease_sent(l->p.bus, l->p.bus_member, now); /* (before it can arrive) */
    conn_write_frame(c, rec, n);
    l->st.leases++;
}

static void on_lease_timer(evutil_socket_t fd, short what, void *arg)
{
    struct s2_ioloop *l = arg;

    UNUSED(fd);
    UNUSED(what);
    for (uint32_t i = 0; i < l->p.max_conns; i++)
        if (l->conns[i] != NULL && l->conns[i]->state == CONN_READY)
            send_lease(l->conns[i]);
}

/* INVALIDATE for bus number seq on every connection that is serving requests. */
static void broadcast(struct s2_ioloop *l, uint64_t seq, const char *user, uint8_t len)
{
    uint8_t buf[INVAL_MAX_SIZE];
    uint8_t rec[INVAL_MAX_SIZE + LINKSEAL_OVERHEAD];
    size_t n = frame_encode_invalidate(seq, user, len, buf, sizeof(buf));
    uint64_t now = clock_now_ns();

    if (n == 0)
        return;
    for (uint32_t i = 0; i < l->p.max_conns; i++) {
        struct s2_conn *c = l->conns[i];
        if (c == NULL || c->state != CONN_READY)
            continue;
        if (c->inv_acked == c->inv_sent)
            c->inv_since_ns = now;
        c->inv_sent = seq;
        memcpy(rec + LINKSEAL_LEN_SIZE, buf, n); /* each connection seals its own copy */
        conn_write_frame(c, rec, n);
        l->st.invalidations++;
    }
}

/*
 * Sends what the bus has that we have not sent, closes connections that owe an ack for too
 * long, tells the bus what all ours acknowledged, and answers the held replies that may go.
 */
static void bus_process(struct s2_ioloop *l)
{
    char user[ACCOUNT_USER_MAX];
    uint8_t len = 0;
    uint64_t now;
    uint64_t applied;
    bool owing = false;
    int rc;

    while ((rc = invalbus_next(l->p.bus, &l->bus_cursor, user, &len)) != 0) {
        if (rc > 0 && len > 0) {
            log_debug("account change %llu: INVALIDATE to every connection",
                      (unsigned long long)l->bus_cursor);
            broadcast(l, l->bus_cursor, user, len);
            continue;
        }
        /* lost entries: we cannot say whom to forget, so every server1 forgets everything */
        if (rc > 0)
            log_debug("account changes missed by the feed: closing every connection");
        else
            log_warn("missed account changes (more than %d at once); closing every connection",
                     INVALBUS_RING);
        for (uint32_t i = 0; i < l->p.max_conns; i++)
            if (l->conns[i] != NULL && l->conns[i]->state == CONN_READY)
                conn_free(l->conns[i], "missed account changes");
    }
    applied = l->bus_cursor;
    now = clock_now_ns(); /* (after broadcast stamped the connections) */
    for (uint32_t i = 0; i < l->p.max_conns; i++) {
        struct s2_conn *c = l->conns[i];
        unsigned skipped;
        if (c == NULL || c->inv_acked >= c->inv_sent)
            continue;
        if (now - c->inv_since_ns >= INVAL_ACK_TIMEOUT_MS * 1000000ull) {
            l->st.ack_timeouts++;
            if (ratelimit_ok(&l->rl_bad, &skipped))
                log_warn("closing connection from %s: no INVALIDATE_ACK within %d ms", c->peer,
                         INVAL_ACK_TIMEOUT_MS);
            conn_free(c, "no INVALIDATE_ACK in time");
            continue;
        }
        owing = true;
        if (c->inv_acked < applied)
            applied = c->inv_acked;
    }
    if (applied != l->bus_applied) {
        l->bus_applied = applied;
        invalbus_set_applied(l->p.bus, l->p.bus_member, applied);
    }
    for (size_t i = 0; i < l->nparked;) {
        struct parked *pk = &l->parked[i];
        struct s2_reply r = pk->r;
        bool done = pk->feed ? invalbus_feed_done(l->p.bus) >= pk->seq
                             : invalbus_done(l->p.bus, pk->seq, now);
        if (!done) {
            if (now < pk->deadline_ns) {
                i++;
                continue;
            }
            l->st.change_timeouts++;
            if (pk->feed) {
                /* made, but some server1 may still accept the old password: not an "ok" */
                log_warn("an account change is answered UNAVAILABLE: after %d ms a live server2 "
                         "still had not told its server1s",
                         INVAL_WAIT_MS);
                r.status = FRAME_ST_UNAVAILABLE;
            } else {
                log_warn("an account change is answered before every server1 acknowledged it "
                         "(waited %d ms)",
                         INVAL_WAIT_MS);
            }
        } else {
            log_debug("account change %llu answered once every server1 forgot it",
                      (unsigned long long)pk->seq);
        }
        l->parked[i] = l->parked[--l->nparked];
        send_reply_now(l, &r);
    }
    if (owing || l->nparked > 0) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 100 * 1000};
        if (!evtimer_pending(l->inv_timer, NULL))
            evtimer_add(l->inv_timer, &tv);
    } else if (l->stopping && l->nconns == 0) {
        event_base_loopexit(l->base, NULL);
    }
}

static void on_bus(evutil_socket_t fd, short what, void *arg)
{
    struct s2_ioloop *l = arg;
    UNUSED(fd);
    UNUSED(what);
    invalbus_clear_wake(l->p.bus, l->p.bus_member);
    bus_process(l);
}

static void on_inv_timer(evutil_socket_t fd, short what, void *arg)
{
    UNUSED(fd);
    UNUSED(what);
    bus_process(arg);
}

struct s2_ioloop *s2_ioloop_new(const struct s2_ioloop_params *p)
{
    struct s2_ioloop *l = xcalloc(1, sizeof(*l));
    struct timeval lease_every = {.tv_sec = 0, .tv_usec = INVALBUS_LEASE_EVERY_MS * 1000};

    l->p = *p;
    if (l->p.batch == 0)
        l->p.batch = 1;
    l->out_limit = (size_t)l->p.max_inflight * REPLY_MAX_SIZE;
    if (l->out_limit < OUT_LIMIT_MIN)
        l->out_limit = OUT_LIMIT_MIN;
    l->conns = xcalloc(l->p.max_conns, sizeof(*l->conns));
    l->gens = xcalloc(l->p.max_conns, sizeof(*l->gens));
    l->free_slots = xcalloc(l->p.max_conns, sizeof(*l->free_slots));
    for (uint32_t i = 0; i < l->p.max_conns; i++)
        l->free_slots[i] = l->p.max_conns - 1 - i;
    l->nfree = l->p.max_conns;
    l->pending = xcalloc(l->p.batch, sizeof(*l->pending));

    l->base = event_base_new();
    if (l->base == NULL) {
        log_error("cannot create an event base");
        goto fail;
    }
    l->listener = evconnlistener_new(l->base, on_accept, l, LEV_OPT_CLOSE_ON_EXEC, 0, p->listen_fd);
    if (!p->no_signals) {
        l->sig_term = evsignal_new(l->base, SIGTERM, on_signal, l);
        l->sig_int = evsignal_new(l->base, SIGINT, on_signal, l);
    }
    l->accept_resume = evtimer_new(l->base, on_accept_resume, l);
    l->balance_timer = evtimer_new(l->base, on_balance_timer, l);
    l->drain_guard = evtimer_new(l->base, on_drain_guard, l);
    l->inv_timer = evtimer_new(l->base, on_inv_timer, l);
    l->hs_timer = evtimer_new(l->base, on_hs_timer, l);
    l->lease_timer = event_new(l->base, -1, EV_PERSIST, on_lease_timer, l);
    l->bus_ev = event_new(l->base, invalbus_fd(p->bus, p->bus_member), EV_READ | EV_PERSIST,
                          on_bus, l);
    if (l->listener == NULL ||
        (!p->no_signals && (l->sig_term == NULL || l->sig_int == NULL ||
                            evsignal_add(l->sig_term, NULL) < 0 ||
                            evsignal_add(l->sig_int, NULL) < 0)) ||
        l->accept_resume == NULL || l->balance_timer == NULL || l->drain_guard == NULL ||
        l->inv_timer == NULL || l->hs_timer == NULL || l->bus_ev == NULL ||
        event_add(l->bus_ev, NULL) < 0 || l->lease_timer == NULL ||
        event_add(l->lease_timer, &lease_every) < 0) {
        log_error("cannot set up the event loop");
        goto fail;
    }
    evconnlistener_set_error_cb(l->listener, on_accept_error);
    invalbus_join(p->bus, p->bus_member, &l->bus_cursor);
    l->bus_applied = l->bus_cursor;
    balance_update(l);
    return l;

fail:
    s2_ioloop_free(l);
    return NULL;
}

struct event_base *s2_ioloop_base(struct s2_ioloop *l)
{
    return l->base;
}

int s2_ioloop_run(struct s2_ioloop *l)
{
    if (event_base_dispatch(l->base) < 0) {
        log_error("event loop failed");
        return -1;
    }
    return 0;
}

void s2_ioloop_get_stats(const struct s2_ioloop *l, struct s2_ioloop_stats *out)
{
    *out = l->st;
}

void s2_ioloop_stats_add(struct s2_ioloop_stats *a, const struct s2_ioloop_stats *b)
{
    a->accepted += b->accepted;
    a->rejected += b->rejected;
    a->bad_input += b->bad_input;
    a->requests += b->requests;
    a->replies += b->replies;
    a->dropped += b->dropped;
    a->auth_failed += b->auth_failed;
    a->invalidations += b->invalidations;
    a->ack_timeouts += b->ack_timeouts;
    a->change_timeouts += b->change_timeouts;
    a->leases += b->leases;
    a->hs_timeouts += b->hs_timeouts;
    a->hs_evicted += b->hs_evicted;
    a->hs_evicted_addr += b->hs_evicted_addr;
}

void s2_ioloop_log_stats(const struct s2_ioloop_stats *st)
{
    log_info("connections: %llu accepted, %llu closed for bad input, %llu of them for failing "
             "link authentication; %llu INVALIDATEs sent, %llu connections closed for not "
             "acknowledging one, %llu account changes answered before every acknowledgement; "
             "%llu LEASEs sent",
             (unsigned long long)st->accepted, (unsigned long long)st->bad_input,
             (unsigned long long)st->auth_failed, (unsigned long long)st->invalidations,
             (unsigned long long)st->ack_timeouts, (unsigned long long)st->change_timeouts,
             (unsigned long long)st->leases);
    log_info("handshakes: %llu connections refused (every --max-conns slot authenticated), "
             "%llu closed for not authenticating within --handshake-timeout, %llu closed to "
             "make room for a newer connection (%llu for one from the same address)",
             (unsigned long long)st->rejected, (unsigned long long)st->hs_timeouts,
             (unsigned long long)st->hs_evicted, (unsigned long long)st->hs_evicted_addr);
}

void s2_ioloop_free(struct s2_ioloop *l)
{
    if (l == NULL)
        return;
    for (uint32_t i = 0; i < l->p.max_conns; i++) {
        struct s2_conn *c = l->conns[i];
        if (c == NULL)
            continue;
        event_free(c->kick);
        bufferevent_free(c->bev);
        free(c->echo.e);
        free(c);
    }
    if (l->listener)
        evconnlistener_free(l->listener);
    if (l->sig_term)
        event_free(l->sig_term);
    if (l->sig_int)
        event_free(l->sig_int);
    if (l->accept_resume)
        event_free(l->accept_resume);
    if (l->balance_timer)
        event_free(l->balance_timer);
    if (l->drain_guard)
        event_free(l->drain_guard);
    if (l->inv_timer)
        event_free(l->inv_timer);
    if (l->hs_timer)
        event_free(l->hs_timer);
    if (l->lease_timer)
        event_free(l->lease_timer);
    if (l->bus_ev) {
        event_free(l->bus_ev);
        invalbus_leave(l->p.bus, l->p.bus_member);
    }
    free(l->parked);
    if (l->base)
        event_base_free(l->base);
    sodium_memzero(l->pending, sizeof(*l->pending) * l->p.batch);
    free(l->pending);
    free(l->conns);
    free(l->gens);
    free(l->free_slots);
    free(l);
}
