/*
 * authclient.c - see authclient.h. Per connection, requests in flight live in a slot table, in
 * a hash index from their 64-bit id to their slot (an answer finds its request in O(1)), and in
 * a FIFO in send order; since every request has the same timeout, the FIFO head is always the
 * next to expire, and one timer per connection suffices. Ids count 1, 2, 3, ... from each
 * connect and are never reused on a connection, so an id that is not in flight but not above
 * the highest sent can only be a late answer to a request that timed out. Connection i talks to
 * server i mod nservers. A request sent again to another server2 keeps its handle, which then
 * no longer says where it is: authclient_cancel looks for it.
 */
#include "authclient.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "linkauth.h"
#include "linkseal.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "xalloc.h"

#define AC_NONE UINT32_MAX
#define AC_BACKOFF_MIN_MS 100
#define AC_BACKOFF_MAX_MS 2000
#define AC_SHUN_MAX_MS 30000 /* the longest a server2 that timed out is passed over */
#define AC_IN_SIZE (FRAME_MAX_SIZE * 16)
#define AC_CONN_BITS 6  /* a handle: sequence << 22 | slot << 6 | connection */
#define AC_SLOT_BITS 16
_Static_assert(AUTHCLIENT_MAX_CONNS <= 1u << AC_CONN_BITS, "connection index fits a handle");

enum ac_state {
    AC_DOWN,       /* waiting for the reconnect timer */
    AC_CONNECTING, /* non-blocking connect in progress */
    AC_HELLO,      /* HELLO sent, waiting for HELLO_ACK */
    AC_UP,         /* HELLO_ACK checked and AUTH sent: requests may go */
};

struct ac_slot {
    uint64_t id;     /* request id on the wire; unique for the life of the connection */
    uint64_t handle; /* what authclient_cancel is given */
    uint32_t prev;   /* FIFO links (in flight) or free-list link (next only) */
    uint32_t next;
    bool used;
    uint8_t type;
    uint8_t user_len; /* what the REPLY must echo: type and user */
    bool retried;     /* sent once more after its first connection failed */
    char user[ACCOUNT_USER_MAX];
    uint16_t pass_len; /* with several server2s, a VERIFY's or CREATE's password is kept to
                        * send it again */
    uint8_t token[FRAME_TOKEN_SIZE]; /* CREATE: its creation token, the same when sent again */
    authclient_cb cb; /* NULL once cancelled */
    void *arg;
    uint64_t sent_ns;
};

struct ac_conn {
    struct authclient *ac;
    unsigned idx;
    const struct authclient_server *server;
    unsigned server_idx;
    enum ac_state state;
    int fd;
    struct event rd_ev;
    struct event wr_ev;
    struct event timer_ev; /* DOWN: reconnect; CONNECTING/HELLO: handshake; UP: oldest request */
    bool dirty;            /* has unsent output and is on the flush list */
    bool ever_up;
    bool warned;           /* a connect failure was logged since the last time it was up */
    uint64_t lease_until_ns; /* its server2's last LEASE runs out then; 0 = none */
    uint64_t backoff_ms;
    /* output: out[out_off..out_len) not yet written */
    char *out;
    size_t out_off;
    size_t out_len;
    size_t out_cap;
    /* input */
    char in[AC_IN_SIZE];
    size_t in_len;
    /* link authentication */
    uint8_t nonce_c[LINKAUTH_NONCE_SIZE];
    struct linkseal seal; /* the session keys (linkseal.h) while sealed */
    bool sealed;          /* every frame after HELLO_ACK (in) and after AUTH (out) is sealed */
    /* requests */
    uint64_t next_id; /* 1 after each connect; ids below it were sent on this connection */
    bool suspect;     /* a request timed out: no new requests; replaced once drained */
    struct ac_slot *slots;
    char *passes;     /* with several server2s: nslots x ACCOUNT_PASS_MAX, slot i's at i */
    uint32_t *index;  /* id -> slot, open addressing; AC_NONE = empty */
    uint32_t index_cap; /* power of two, >= 2 * nslots */
    uint32_t nslots;
    uint32_t free_head;
    uint32_t head; /* oldest in flight */
    uint32_t tail;
    uint32_t inflight;
};

struct authclient {
    struct event_base *base;
    const struct authclient_config *cfg;
    struct metrics *m;
    struct ac_conn *conns;
    unsigned nconns;
    unsigned rr;
    unsigned nup;                        /* connections up, in all */
    unsigned nup_server[AUTHCLIENT_MAX_SERVERS];
    /* a server2 whose request timed out gets no new request until shun_until (when another
     * can take it): --auth-timeout, doubling with each timeout until it answers again */
    uint64_t shun_until_ns[AUTHCLIENT_MAX_SERVERS];
    unsigned shun_level[AUTHCLIENT_MAX_SERVERS];
    unsigned nshunned;                   /* servers with shun_level > 0 */
    uint64_t handle_seq;
    struct event flush_ev; /* activated when output is queued; runs late in the iteration */
    bool flush_pending;
    struct authclient_events ev;
    uint64_t lease_until_ns; /* the latest lease of any connection that is up; 0 = never had */
};

static void conn_connect(struct ac_conn *c);
static void conn_fail(struct ac_conn *c, const char *what, int err);
static void slot_fail(struct ac_conn *c, uint32_t i);
static void server_shun(struct ac_conn *c);
static void server_answered(struct ac_conn *c);
static void lease_recompute(struct authclient *ac);

static struct timeval tv_from_us(uint64_t us)
{
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000)};
    return tv;
}

/* ---- id index ---- */

static uint32_t id_hash(const struct ac_conn *c, uint64_t id)
{
    return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (c->index_cap - 1);
}

/* The slot of the request in flight with this id, or AC_NONE. */
static uint32_t index_find(const struct ac_conn *c, uint64_t id)
{
    for (uint32_t h = id_hash(c, id);; h = (h + 1) & (c->index_cap - 1)) {
        uint32_t i = c->index[h];
        if (i == AC_NONE || c->slots[i].id == id)
            return i;
    }
}

static void index_add(struct ac_conn *c, uint32_t slot)
{
    uint32_t h = id_hash(c, c->slots[slot].id);
    while (c->index[h] != AC_NONE)
        h = (h + 1) & (c->index_cap - 1);
    c->index[h] = slot;
}

/* Deletion by backward shift: later entries of the probe run move into the hole. */
static void index_remove(struct ac_conn *c, uint64_t id)
{
    uint32_t mask = c->index_cap - 1;
    uint32_t i = id_hash(c, id);
    uint32_t j;

    while (c->index[i] != AC_NONE && c->slots[c->index[i]].id != id)
        i = (i + 1) & mask;
    if (c->index[i] == AC_NONE)
        return;
    c->index[i] = AC_NONE;
    for (j = (i + 1) & mask; c->index[j] != AC_NONE; j = (j + 1) & mask) {
        uint32_t home = id_hash(c, c->slots[c->index[j]].id);
        /* entry j stays if its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            c->index[i] = c->index[j];
            c->index[j] = AC_NONE;
            i = j;
        }
    }
}

/* ---- slots ---- */

static void slots_init(struct ac_conn *c, uint32_t n)
{
    c->slots = xcalloc(n, sizeof(*c->slots));
    c->nslots = n;
    for (uint32_t i = 0; i < n; i++)
        c->slots[i].next = i + 1 < n ? i + 1 : AC_NONE;
    c->index_cap = 4;
    while (c->index_cap < 2 * n)
        c->index_cap *= 2;
    c->index = xcalloc(c->index_cap, sizeof(*c->index));
    for (uint32_t h = 0; h < c->index_cap; h++)
        c->index[h] = AC_NONE;
    c->free_head = 0;
    c->head = c->tail = AC_NONE;
    c->inflight = 0;
}

static uint32_t slot_take(struct ac_conn *c)
{
    uint32_t i = c->free_head;
    struct ac_slot *s = &c->slots[i];

    c->free_head = s->next;
    s->id = c->next_id++;
    s->handle = (++c->ac->handle_seq << (AC_SLOT_BITS + AC_CONN_BITS)) |
                (uint64_t)i << AC_CONN_BITS | c->idx;
    s->used = true;
    index_add(c, i);
    /* append to the FIFO */
    s->prev = c->tail;
    s->next = AC_NONE;
    if (c->tail != AC_NONE)
        c->slots[c->tail].next = i;
    else
        c->head = i;
    c->tail = i;
    c->inflight++;
    return i;
}

static void slot_release(struct ac_conn *c, uint32_t i)
{
    struct ac_slot *s = &c->slots[i];

    index_remove(c, s->id);
    if (s->prev != AC_NONE)
        c->slots[s->prev].next = s->next;
    else
        c->head = s->next;
    if (s->next != AC_NONE)
        c->slots[s->next].prev = s->prev;
    else
        c->tail = s->prev;
    s->used = false;
    s->retried = false;
    if (s->pass_len > 0)
        explicit_bzero(c->passes + (size_t)i * ACCOUNT_PASS_MAX, s->pass_len);
    s->pass_len = 0;
    s->cb = NULL;
    s->arg = NULL;
    s->handle = 0;
    s->next = c->free_head;
    s->prev = AC_NONE;
    c->free_head = i;
    c->inflight--;
}

/* Finishes request i with status st: frees the slot first, then calls back (which may submit). */
static void slot_finish(struct ac_conn *c, uint32_t i, enum frame_status st, uint32_t retry_ms)
{
    struct ac_slot *s = &c->slots[i];
    authclient_cb cb = s->cb;
    void *arg = s->arg;

    slot_release(c, i);
    if (cb != NULL)
        cb(arg, st, st == FRAME_ST_LIMITED ? retry_ms : 0);
}

/* ---- output ---- */

static void schedule_flush(struct ac_conn *c)
{
    struct authclient *ac = c->ac;
    if (!c->dirty)
        c->dirty = true;
    if (!ac->flush_pending) {
        ac->flush_pending = true;
        event_active(&ac->flush_ev, EV_WRITE, 1);
    }
}

static char *out_reserve(struct ac_conn *c, size_t n)
{
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
    }
    if (c->out_cap - c->out_len < n && c->out_off > 0) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    if (c->out_cap - c->out_len < n) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap - c->out_len < n)
            cap *= 2;
        c->out = xrealloc(c->out, cap);
        c->out_cap = cap;
    }
    return c->out + c->out_len;
}

/*
 * Where the next frame to send goes: room for the largest frame, sealed or not, reserved on
 * c's output; frame_commit then queues it.
 */
static char *frame_reserve(struct ac_conn *c)
{
    return out_reserve(c, LINKSEAL_RECORD_MAX) + (c->sealed ? LINKSEAL_LEN_SIZE : 0);
}

/*
 * Queues the frame of n bytes written at frame_reserve's pointer: sealed in place once the
 * link is sealed. Returns the bytes queued, 0 if n is 0 or the frame cannot be sealed (the
 * connection's 2^64 - 1 records are used up; nothing is queued).
 */
static size_t frame_commit(struct ac_conn *c, size_t n)
{
    if (n > 0 && c->sealed)
        n = linkseal_seal(&c->seal.tx, (uint8_t *)c->out + c->out_len, n);
    c->out_len += n;
    return n;
}

/* Writes what it can; arms the write event for the rest. Returns -1 if the connection failed. */
static int conn_write(struct ac_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            event_add(&c->wr_ev, NULL);
            return 0;
        }
        if (n < 0) {
            conn_fail(c, "write", errno);
            return -1;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    event_del(&c->wr_ev);
    return 0;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct authclient *ac = arg;
    UNUSED(fd);
    UNUSED(what);

    ac->flush_pending = false;
    for (unsigned i = 0; i < ac->nconns; i++) {
        struct ac_conn *c = &ac->conns[i];
        if (!c->dirty)
            continue;
        c->dirty = false;
        if (c->fd >= 0 && (c->state == AC_UP || c->state == AC_HELLO) &&
            !event_pending(&c->wr_ev, EV_WRITE, NULL))
            conn_write(c);
    }
}

/* ---- connection life cycle ---- */

static void arm_timer_us(struct ac_conn *c, uint64_t us)
{
    struct timeval tv = tv_from_us(us);
    event_add(&c->timer_ev, &tv);
}

/* UP: the timer follows the oldest request in flight. */
static void arm_request_timer(struct ac_conn *c)
{
    uint64_t now;
    uint64_t deadline;

    if (c->head == AC_NONE) {
        event_del(&c->timer_ev);
        return;
    }
    now = clock_now_ns();
    deadline = c->slots[c->head].sent_ns + c->ac->cfg->timeout_us * 1000;
    arm_timer_us(c, deadline > now ? (deadline - now) / 1000 + 1 : 0);
}

static void set_up(struct ac_conn *c)
{
    struct authclient *ac = c->ac;

    c->state = AC_UP;
    c->backoff_ms = AC_BACKOFF_MIN_MS;
    c->warned = false;
    event_del(&c->timer_ev);
    metrics_gauge_add(&ac->m->auth_conns_up, 1);
    ac->nup++;
    if (ac->nup_server[c->server_idx]++ == 0)
        log_info("auth: connected to server2 at %s", c->server->addr_str);
    else
        log_debug("auth: connection %u to %s is up", c->idx, c->server->addr_str);
    c->ever_up = true;
}

static void conn_fail(struct ac_conn *c, const char *what, int err)
{
    struct authclient *ac = c->ac;
    char ebuf[128];
    bool was_up = c->state == AC_UP;

    if (c->fd >= 0) {
        event_del(&c->rd_ev);
        event_del(&c->wr_ev);
        close(c->fd);
        c->fd = -1;
    }
    event_del(&c->timer_ev);
    c->state = AC_DOWN;
    c->sealed = false;
    linkseal_clear(&c->seal);
    c->out_off = c->out_len = 0;
    c->in_len = 0;
    c->dirty = false;
    if (was_up) {
        metrics_gauge_add(&ac->m->auth_conns_up, -1);
        ac->nup--;
        if (--ac->nup_server[c->server_idx] == 0)
            log_warn("auth: lost every connection to server2 at %s (%s%s%s); %s",
                     c->server->addr_str, what, err ? ": " : "",
                     err ? strerror_r(err, ebuf, sizeof(ebuf)) : "",
                     ac->nup == 0 ? "answering 503 until one is back"
                                  : "the other server2s take its requests");
        else
            log_debug("auth: connection %u to %s lost (%s)", c->idx, c->server->addr_str, what);
    } else if (!c->warned && c->idx == c->server_idx && ac->nup_server[c->server_idx] == 0) {
        log_warn("auth: cannot connect to server2 at %s (%s%s%s); retrying", c->server->addr_str,
                 what, err ? ": " : "", err ? strerror_r(err, ebuf, sizeof(ebuf)) : "");
        c->warned = true;
    } else {
        log_debug("auth: connection %u to %s failed (%s)", c->idx, c->server->addr_str, what);
    }
    c->suspect = false;
    c->lease_until_ns = 0;
    if (was_up)
        lease_recompute(ac);
    if (was_up && ac->ev.lost)
        ac->ev.lost(ac->ev.arg); /* an INVALIDATE may have been lost with it */
    /* every request in flight fails, or goes to another server2; callbacks may submit
     * elsewhere (this one is DOWN) */
    while (c->head != AC_NONE)
        slot_fail(c, c->head);
    arm_timer_us(c, c->backoff_ms * 1000);
    c->backoff_ms = c->backoff_ms * 2 > AC_BACKOFF_MAX_MS ? AC_BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/*
 * A suspect connection with nothing left in flight: closed and replaced by a fresh one at once
 * (from the timer, never from inside a read). The other connections carry the load meanwhile.
 */
static void conn_replace(struct ac_conn *c)
{
    log_debug("auth: replacing connection %u to %s after a timed-out request", c->idx,
              c->server->addr_str);
    conn_fail(c, "replaced after a timed-out request", 0);
    c->backoff_ms = AC_BACKOFF_MIN_MS;
    arm_timer_us(c, 0);
}

/* Closes c because server2 broke the protocol; its requests in flight get 503. */
static void conn_protocol_error(struct ac_conn *c, const char *why, uint64_t id)
{
    metrics_add(&c->ac->m->auth_protocol_errors, 1);
    log_error("auth: protocol error from server2 at %s: %s (id %llu); reconnecting",
              c->server->addr_str, why, (unsigned long long)id);
    conn_fail(c, "protocol error", 0);
}

static void send_hello(struct ac_conn *c)
{
    char *p = frame_reserve(c);
    struct frame f = {.type = FRAME_HELLO, .version = FRAME_VERSION};

    linkauth_nonce(c->nonce_c);
    memcpy(f.nonce, c->nonce_c, sizeof(f.nonce));
    frame_commit(c, frame_encode(&f, p, FRAME_MAX_SIZE));
    c->next_id = 1;
    c->suspect = false;
    c->state = AC_HELLO;
    arm_timer_us(c, c->ac->cfg->timeout_us);
    event_add(&c->rd_ev, NULL);
    conn_write(c);
}

/* HELLO_ACK: checks server2's proof, answers with ours (AUTH); requests may follow at once. */
static void handle_hello_ack(struct ac_conn *c, const struct frame *f)
{
    struct authclient *ac = c->ac;
    struct frame auth = {.type = FRAME_AUTH};
    char *p;

    if (f->type != FRAME_HELLO_ACK) {
        conn_fail(c, "first frame from server2 is not HELLO_ACK", 0);
        return;
    }
    if (f->status != FRAME_ST_OK || f->version != FRAME_VERSION) {
        if (!c->warned)
            log_error("auth: server2 at %s refused protocol version %d (%s)", c->server->addr_str,
                      FRAME_VERSION, frame_status_name((enum frame_status)f->status));
        c->warned = true;
        conn_fail(c, "version refused", 0);
        return;
    }
    if (!linkauth_check(ac->cfg->link_key, LINKAUTH_SERVER2, c->nonce_c, f->nonce, f->mac)) {
        metrics_add(&ac->m->auth_link_failures, 1);
        if (!c->warned)
            log_error("auth: server2 at %s failed link authentication (not the same secret?)",
                      c->server->addr_str);
        c->warned = true;
        conn_fail(c, "link authentication failed", 0);
        return;
    }
    linkauth_mac(ac->cfg->link_key, LINKAUTH_SERVER1, c->nonce_c, f->nonce, auth.mac);
    p = frame_reserve(c);
    frame_commit(c, frame_encode(&auth, p, FRAME_MAX_SIZE));
    /* everything after AUTH (out) and after this HELLO_ACK (in) is sealed */
    c->sealed = linkseal_enabled(ac->cfg->link_key);
    if (c->sealed)
        linkseal_init(&c->seal, ac->cfg->link_key, LINKAUTH_SERVER1, c->nonce_c, f->nonce);
    schedule_flush(c);
    set_up(c);
}

/* The latest lease of any connection that is up, after one went down or was cut short. */
static void lease_recompute(struct authclient *ac)
{
    uint64_t until = 0;

    for (unsigned i = 0; i < ac->nconns; i++)
        if (ac->conns[i].state == AC_UP && ac->conns[i].lease_until_ns > until)
            until = ac->conns[i].lease_until_ns;
    ac->lease_until_ns = until ? until : (ac->lease_until_ns ? 1 : 0);
}

/*
 * LEASE: this thread may answer from its cache for lease_ms more. If every lease had run out
 * before, an INVALIDATE may have gone by unheard meanwhile (its server2 went on without us):
 * the cache is emptied first.
 */
static void handle_lease(struct ac_conn *c, uint32_t lease_ms)
{
    struct authclient *ac = c->ac;
    uint64_t now = clock_now_ns();

    metrics_add(&ac->m->auth_leases, 1);
    if (ac->lease_until_ns != 0 && ac->lease_until_ns <= now) {
        metrics_add(&ac->m->auth_lease_lapses, 1);
        log_debug("auth: the lease had run out; the credential cache is emptied");
        if (ac->ev.lost)
            ac->ev.lost(ac->ev.arg);
    }
    c->lease_until_ns = now + (uint64_t)lease_ms * 1000000ull;
    if (c->lease_until_ns > ac->lease_until_ns)
        ac->lease_until_ns = c->lease_until_ns;
    else if (lease_ms == 0)
        lease_recompute(ac);
}

bool authclient_lease_valid(const struct authclient *ac, uint64_t now_ns)
{
    return now_ns < ac->lease_until_ns;
}

static void handle_frame(struct ac_conn *c, const struct frame *f)
{
    struct authclient *ac = c->ac;
    uint32_t i;
    struct ac_slot *s;
    enum frame_status st;

    if (c->state == AC_HELLO) {
        handle_hello_ack(c, f);
        return;
    }
    if (f->type == FRAME_INVALIDATE) {
        /* forget first, then say so: server2 answers the change once every ack is in */
        char *p;
        metrics_add(&ac->m->auth_invalidations, 1);
        if (ac->ev.invalidated)
            ac->ev.invalidated(ac->ev.arg, f->user, f->user_len);
        p = frame_reserve(c);
        frame_commit(c, frame_encode_invalidate_ack(f->id, p, FRAME_HEADER_SIZE));
        schedule_flush(c);
        return;
    }
    if (f->type == FRAME_LEASE) {
        handle_lease(c, f->lease_ms);
        return;
    }
    if (f->type != FRAME_REPLY) {
        conn_protocol_error(c, "a frame that is not a REPLY", f->id);
        return;
    }
    i = index_find(c, f->id);
    if (i == AC_NONE) {
        if (f->id == 0 || f->id >= c->next_id) {
            conn_protocol_error(c, "a REPLY to an id never sent", f->id);
            return;
        }
        /* sent on this connection and no longer in flight: it timed out, or this repeats */
        metrics_add(&ac->m->auth_late_replies, 1);
        log_debug("auth: late answer for id %llu dropped", (unsigned long long)f->id);
        return;
    }
    s = &c->slots[i];
    if (f->req_type != s->type || f->user_len != s->user_len ||
        memcmp(f->user, s->user, s->user_len) != 0) {
        conn_protocol_error(c, "a REPLY whose echo does not match its request", f->id);
        return;
    }
    if (s->type != FRAME_PING)
        metrics_auth_rtt(ac->m, clock_now_ns() - s->sent_ns);
    server_answered(c);
    st = (enum frame_status)f->status;
    if (st == FRAME_ST_EXPIRED) {
        /* server2 gave up on it unworked because our budget ran out: a timeout, told early */
        metrics_add(&ac->m->auth_timeouts, 1);
        st = FRAME_ST_UNAVAILABLE;
    }
    slot_finish(c, i, st, f->budget_ms); /* (a LIMITED REPLY's wait) */
    if (c->state == AC_UP && c->suspect && c->inflight == 0)
        conn_replace(c);
}

/*
 * On a sealed link: opens the record at c->in + off in place and decodes the one frame it
 * must hold into *f; *used is the record's size. FRAME_BAD: c failed (logged, counted).
 */
static enum frame_result next_sealed(struct ac_conn *c, size_t off, struct frame *f,
                                     size_t *used)
{
    uint8_t *rec = (uint8_t *)c->in + off;
    const char *why = NULL;
    size_t plain_len = 0;
    size_t fused = 0;
    enum frame_result r;

    switch (linkseal_open(&c->seal.rx, rec, c->in_len - off, rec + LINKSEAL_LEN_SIZE,
                          &plain_len, used, &why)) {
    case LINKSEAL_MORE:
        return FRAME_MORE;
    case LINKSEAL_BAD:
        metrics_add(&c->ac->m->auth_link_failures, 1);
        log_error("auth: server2 at %s failed link authentication: %s; reconnecting",
                  c->server->addr_str, why);
        conn_fail(c, "a sealed record did not open", 0);
        return FRAME_BAD;
    case LINKSEAL_DONE:
        break;
    }
    r = frame_decode(rec + LINKSEAL_LEN_SIZE, plain_len, f, &fused, &why);
    if (r != FRAME_DONE || fused != plain_len) {
        log_error("auth: bad frame from server2 at %s: %s", c->server->addr_str,
                  r == FRAME_BAD ? why : "a sealed record does not hold exactly one frame");
        conn_fail(c, "bad frame", 0);
        return FRAME_BAD;
    }
    return FRAME_DONE;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct ac_conn *c = arg;
    size_t off = 0;
    ssize_t n;
    UNUSED(what);

    n = recv(fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        conn_fail(c, n == 0 ? "server2 closed the connection" : "read", n == 0 ? 0 : errno);
        return;
    }
    c->in_len += (size_t)n;
    while (c->state == AC_UP || c->state == AC_HELLO) {
        struct frame f;
        const char *why = NULL;
        size_t used = 0;
        enum frame_result r;
        if (c->sealed) {
            r = next_sealed(c, off, &f, &used);
            if (r == FRAME_BAD)
                return; /* c failed */
        } else {
            r = frame_decode(c->in + off, c->in_len - off, &f, &used, &why);
        }
        if (r == FRAME_MORE)
            break;
        if (r == FRAME_BAD) {
            log_error("auth: bad frame from server2 at %s: %s", c->server->addr_str, why);
            conn_fail(c, "bad frame", 0);
            return;
        }
        off += used;
        handle_frame(c, &f);
    }
    if (c->state != AC_UP && c->state != AC_HELLO)
        return; /* failed while handling: buffers were reset */
    if (off > 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    /* lazily: a timer still armed for an earlier deadline fires early and re-arms */
    if (c->state == AC_UP && !evtimer_pending(&c->timer_ev, NULL))
        arm_request_timer(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct ac_conn *c = arg;
    UNUSED(what);

    if (c->state == AC_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        event_del(&c->wr_ev);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err != 0) {
            conn_fail(c, "connect", err);
            return;
        }
        send_hello(c);
        return;
    }
    conn_write(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ac_conn *c = arg;
    uint64_t now;
    UNUSED(fd);
    UNUSED(what);

    switch (c->state) {
    case AC_DOWN:
        conn_connect(c);
        return;
    case AC_CONNECTING:
        conn_fail(c, "connect timed out", 0);
        return;
    case AC_HELLO:
        conn_fail(c, "no HELLO_ACK in time", 0);
        return;
    case AC_UP:
        break;
    }
    now = clock_now_ns();
    while (c->head != AC_NONE &&
           c->slots[c->head].sent_ns + c->ac->cfg->timeout_us * 1000 <= now) {
        /* an answer may still come; the connection takes nothing new from now on */
        if (!c->suspect)
            log_debug("auth: connection %u to %s is suspect: a request timed out", c->idx,
                      c->server->addr_str);
        c->suspect = true;
        metrics_add(&c->ac->m->auth_timeouts, 1);
        server_shun(c);
        slot_fail(c, c->head);
        if (c->state != AC_UP)
            return; /* a callback's submit cannot fail this one, but be safe */
    }
    if (c->suspect && c->inflight == 0) {
        conn_replace(c);
        return;
    }
    arm_request_timer(c);
}

static void conn_connect(struct ac_conn *c)
{
    const struct authclient_config *cfg = c->ac->cfg;
    const struct authclient_server *sv = c->server;
    int fd;

    fd = socket(sv->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        conn_fail(c, "socket", errno);
        return;
    }
    if (net_set_nodelay(fd) < 0)
        log_debug("auth: TCP_NODELAY: %s", "failed");
    c->fd = fd;
    event_assign(&c->rd_ev, c->ac->base, fd, EV_READ | EV_PERSIST, on_read, c);
    event_assign(&c->wr_ev, c->ac->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (connect(fd, (const struct sockaddr *)&sv->addr, sv->addr_len) == 0) {
        send_hello(c);
        return;
    }
    if (errno != EINPROGRESS) {
        conn_fail(c, "connect", errno);
        return;
    }
    c->state = AC_CONNECTING;
    event_add(&c->wr_ev, NULL);
    arm_timer_us(c, cfg->timeout_us);
}

/* ---- public ---- */

struct authclient *authclient_new(struct event_base *base, const struct authclient_config *cfg,
                                  struct metrics *m)
{
    struct authclient *ac = xcalloc(1, sizeof(*ac));

    ac->base = base;
    ac->cfg = cfg;
    ac->m = m;
    ac->nconns = cfg->nconns * cfg->nservers;
    ac->conns = xcalloc(ac->nconns, sizeof(*ac->conns));
    event_assign(&ac->flush_ev, base, -1, 0, on_flush, ac);
    for (unsigned i = 0; i < ac->nconns; i++) {
        struct ac_conn *c = &ac->conns[i];
        c->ac = ac;
        c->idx = i;
        c->server_idx = i % cfg->nservers; /* the server2s alternate */
        c->server = &cfg->servers[c->server_idx];
        c->fd = -1;
        c->state = AC_DOWN;
        c->backoff_ms = AC_BACKOFF_MIN_MS;
        slots_init(c, cfg->max_inflight);
        if (cfg->nservers > 1)
            c->passes = xmalloc((size_t)cfg->max_inflight * ACCOUNT_PASS_MAX);
        evtimer_assign(&c->timer_ev, base, on_timer, c);
        conn_connect(c);
    }
    return ac;
}

void authclient_set_events(struct authclient *ac, const struct authclient_events *ev)
{
    ac->ev = *ev;
}

void authclient_free(struct authclient *ac)
{
    if (ac == NULL)
        return;
    event_del(&ac->flush_ev);
    for (unsigned i = 0; i < ac->nconns; i++) {
        struct ac_conn *c = &ac->conns[i];
        if (c->fd >= 0) {
            event_del(&c->rd_ev);
            event_del(&c->wr_ev);
            close(c->fd);
        }
        event_del(&c->timer_ev);
        if (c->passes != NULL)
            explicit_bzero(c->passes, (size_t)c->nslots * ACCOUNT_PASS_MAX);
        free(c->passes);
        free(c->slots);
        free(c->index);
        free(c->out);
    }
    free(ac->conns);
    free(ac);
}

/*
 * A connection that can take a request now (up, not suspect, below --auth-max-inflight), not to
 * server exclude (AUTHCLIENT_MAX_SERVERS: any); round-robin. NULL if there is none.
 */
static struct ac_conn *pick(struct authclient *ac, unsigned exclude)
{
    uint64_t now = ac->nshunned > 0 ? clock_now_ns() : 0;

    /* first pass: not to a server2 being passed over; second: to any (better than a 503) */
    for (int pass = ac->nshunned > 0 ? 0 : 1; pass < 2; pass++) {
        for (unsigned k = 0; k < ac->nconns; k++) {
            struct ac_conn *cand = &ac->conns[(ac->rr + k) % ac->nconns];
            if (cand->state == AC_UP && !cand->suspect && cand->inflight < cand->nslots &&
                cand->server_idx != exclude &&
                (pass == 1 || now >= ac->shun_until_ns[cand->server_idx])) {
                ac->rr = (ac->rr + k + 1) % ac->nconns;
                return cand;
            }
        }
    }
    return NULL;
}

/* A request to c's server2 timed out: pass it over for a while (only with several). */
static void server_shun(struct ac_conn *c)
{
    struct authclient *ac = c->ac;
    unsigned s = c->server_idx;
    uint64_t ms = (ac->cfg->timeout_us + 999) / 1000;

    if (ac->cfg->nservers < 2)
        return;
    if (ac->shun_level[s]++ == 0) {
        ac->nshunned++;
        log_warn("auth: server2 at %s did not answer in time; passing it over while the "
                 "others answer",
                 c->server->addr_str);
    }
    for (unsigned i = 1; i < ac->shun_level[s] && ms < AC_SHUN_MAX_MS; i++)
        ms *= 2;
    if (ms > AC_SHUN_MAX_MS)
        ms = AC_SHUN_MAX_MS;
    ac->shun_until_ns[s] = clock_now_ns() + ms * 1000000;
}

/* c's server2 answered: it is used again like the others. */
static void server_answered(struct ac_conn *c)
{
    struct authclient *ac = c->ac;
    unsigned s = c->server_idx;

    if (ac->shun_level[s] == 0)
        return;
    ac->shun_level[s] = 0;
    ac->shun_until_ns[s] = 0;
    ac->nshunned--;
    log_info("auth: server2 at %s answers again", c->server->addr_str);
}

/* Queues a request on c: its slot, or AC_NONE if the frame cannot be made. A CREATE gets a
 * fresh random creation token, or token when it is sent again. */
static uint32_t place(struct ac_conn *c, enum frame_type type, const char *user,
                      size_t user_len, const char *pass, size_t pass_len, const char *new_pass,
                      size_t new_len, const uint8_t *token, authclient_cb cb, void *arg)
{
    struct authclient *ac = c->ac;
    struct ac_slot *s;
    uint32_t i;
    size_t n;
    char *p;

    if (type != FRAME_PING && user_len > ACCOUNT_USER_MAX)
        return AC_NONE;
    i = slot_take(c);
    s = &c->slots[i];
    p = frame_reserve(c);
    if (type == FRAME_PING) {
        struct frame f = {.type = FRAME_PING, .id = s->id};
        n = frame_encode(&f, p, FRAME_MAX_SIZE);
        user_len = 0;
    } else {
        /* the budget: all of --auth-timeout is left, since the frame leaves in this iteration */
        uint64_t budget_ms = (ac->cfg->timeout_us + 999) / 1000;
        uint32_t budget = budget_ms > UINT32_MAX ? 0 : (uint32_t)budget_ms;
        if (type == FRAME_SETPASS) {
            n = frame_encode_setpass(s->id, budget, user, user_len, pass, pass_len, new_pass,
                                     new_len, p, FRAME_MAX_SIZE);
        } else if (type == FRAME_CREATE) {
            if (token != NULL)
                memcpy(s->token, token, sizeof(s->token));
            else
                randombytes_buf(s->token, sizeof(s->token));
            n = frame_encode_create(s->id, budget, s->token, user, user_len, pass, pass_len, p,
                                    FRAME_MAX_SIZE);
        } else {
            n = frame_encode_cred(type, s->id, budget, user, user_len, pass, pass_len, p,
                                  FRAME_MAX_SIZE);
        }
    }
    if (frame_commit(c, n) == 0) {
        slot_release(c, i);
        return AC_NONE;
    }
    s->type = (uint8_t)type;
    s->user_len = (uint8_t)user_len;
    if (user_len > 0)
        memcpy(s->user, user, user_len);
    if ((type == FRAME_VERIFY || type == FRAME_CREATE) && c->passes != NULL &&
        pass_len <= ACCOUNT_PASS_MAX) {
        /* to send it again if this server2 fails */
        memcpy(c->passes + (size_t)i * ACCOUNT_PASS_MAX, pass, pass_len);
        s->pass_len = (uint16_t)pass_len;
    }
    s->cb = cb;
    s->arg = arg;
    s->sent_ns = clock_now_ns();
    if (c->head == i)
        arm_request_timer(c);
    schedule_flush(c);
    return i;
}

/*
 * Request i's connection failed or its time ran out: a VERIFY, CREATE or PING not sent again
 * yet goes once more to another server2 that is up, keeping its handle and callback (a CREATE
 * keeps its creation token: if the first server2 stored the account, the second answers OK);
 * anything else, or with no other server2 up, ends UNAVAILABLE. The slot on c is freed either
 * way.
 */
static void slot_fail(struct ac_conn *c, uint32_t i)
{
    struct ac_slot *s = &c->slots[i];
    struct ac_conn *to;
    uint32_t j;

    if (s->cb == NULL || s->retried || c->ac->cfg->nservers < 2 ||
        (s->type != FRAME_VERIFY && s->type != FRAME_CREATE && s->type != FRAME_PING) ||
        (s->type != FRAME_PING && s->pass_len == 0) ||
        (to = pick(c->ac, c->server_idx)) == NULL) {
        slot_finish(c, i, FRAME_ST_UNAVAILABLE, 0);
        return;
    }
    j = place(to, (enum frame_type)s->type, s->user, s->user_len,
              c->passes != NULL ? c->passes + (size_t)i * ACCOUNT_PASS_MAX : NULL, s->pass_len,
              NULL, 0, s->token, s->cb, s->arg);
    if (j == AC_NONE) {
        slot_finish(c, i, FRAME_ST_UNAVAILABLE, 0);
        return;
    }
    to->slots[j].handle = s->handle; /* what the caller holds */
    to->slots[j].retried = true;
    metrics_add(&c->ac->m->auth_retries, 1);
    log_debug("auth: a request to %s sent again to %s", c->server->addr_str,
              to->server->addr_str);
    slot_release(c, i);
}

static int submit(struct authclient *ac, enum frame_type type, const char *user,
                  size_t user_len, const char *pass, size_t pass_len, const char *new_pass,
                  size_t new_len, authclient_cb cb, void *arg, uint64_t *handle)
{
    struct ac_conn *c = pick(ac, AUTHCLIENT_MAX_SERVERS);
    uint32_t i;

    if (c == NULL)
        return -1;
    i = place(c, type, user, user_len, pass, pass_len, new_pass, new_len, NULL, cb, arg);
    if (i == AC_NONE)
        return -1;
    *handle = c->slots[i].handle;
    return 0;
}

int authclient_submit(struct authclient *ac, enum frame_type type, const char *user,
                      size_t user_len, const char *pass, size_t pass_len, authclient_cb cb,
                      void *arg, uint64_t *handle)
{
    if (type == FRAME_SETPASS)
        return -1;
    return submit(ac, type, user, user_len, pass, pass_len, NULL, 0, cb, arg, handle);
}

int authclient_submit_setpass(struct authclient *ac, const char *user, size_t user_len,
                              const char *pass, size_t pass_len, const char *new_pass,
                              size_t new_len, authclient_cb cb, void *arg, uint64_t *handle)
{
    return submit(ac, FRAME_SETPASS, user, user_len, pass, pass_len, new_pass, new_len, cb, arg,
                  handle);
}

void authclient_cancel(struct authclient *ac, uint64_t handle)
{
    unsigned ci = (unsigned)(handle & ((1u << AC_CONN_BITS) - 1));
    uint32_t i = (uint32_t)(handle >> AC_CONN_BITS) & ((1u << AC_SLOT_BITS) - 1);
    struct ac_conn *c;

    if (ci < ac->nconns) {
        c = &ac->conns[ci];
        if (i < c->nslots && c->slots[i].used && c->slots[i].handle == handle) {
            c->slots[i].cb = NULL;
            c->slots[i].arg = NULL;
            return;
        }
    }
    if (ac->cfg->nservers < 2 || handle == 0)
        return;
    /* sent again elsewhere (slot_fail): rare, so a search */
    for (unsigned k = 0; k < ac->nconns; k++) {
        c = &ac->conns[k];
        for (uint32_t j = 0; j < c->nslots; j++) {
            if (c->slots[j].used && c->slots[j].handle == handle) {
                c->slots[j].cb = NULL;
                c->slots[j].arg = NULL;
                return;
            }
        }
    }
}

bool authclient_is_up(const struct authclient *ac)
{
    return ac->nup > 0;
}
