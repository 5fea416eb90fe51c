/*
 * authclient.c - see authclient.h. Per connection, requests in flight live in a slot table
 * (id = generation << 16 | slot, so an answer finds its slot in O(1) and a late answer to a
 * timed-out request is recognised as stale) and in a FIFO in send order; since every request
 * has the same timeout, the FIFO head is always the next to expire, and one timer per
 * connection suffices.
 */
#include "authclient.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "xalloc.h"

#define AC_NONE UINT32_MAX
#define AC_BACKOFF_MIN_MS 100
#define AC_BACKOFF_MAX_MS 2000
#define AC_IN_SIZE (FRAME_MAX_SIZE * 16)

enum ac_state {
    AC_DOWN,       /* waiting for the reconnect timer */
    AC_CONNECTING, /* non-blocking connect in progress */
    AC_HELLO,      /* HELLO sent, waiting for HELLO_ACK */
    AC_UP,
};

struct ac_slot {
    uint32_t id;  /* generation << 16 | index; generation advances on each use */
    uint32_t prev; /* FIFO links (in flight) or free-list link (next only) */
    uint32_t next;
    bool used;
    uint8_t type;
    authclient_cb cb; /* NULL once cancelled */
    void *arg;
    uint64_t sent_ns;
};

struct ac_conn {
    struct authclient *ac;
    unsigned idx;
    enum ac_state state;
    int fd;
    struct event rd_ev;
    struct event wr_ev;
    struct event timer_ev; /* DOWN: reconnect; CONNECTING/HELLO: handshake; UP: oldest request */
    bool dirty;            /* has unsent output and is on the flush list */
    bool ever_up;
    bool warned;           /* a connect failure was logged since the last time it was up */
    uint64_t backoff_ms;
    /* output: out[out_off..out_len) not yet written */
    char *out;
    size_t out_off;
    size_t out_len;
    size_t out_cap;
    /* input */
    char in[AC_IN_SIZE];
    size_t in_len;
    /* requests */
    struct ac_slot *slots;
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
    unsigned nup;
    struct event flush_ev; /* activated when output is queued; runs late in the iteration */
    bool flush_pending;
};

static void conn_connect(struct ac_conn *c);
static void conn_fail(struct ac_conn *c, const char *what, int err);

static struct timeval tv_from_us(uint64_t us)
{
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000)};
    return tv;
}

/* ---- slots ---- */

static void slots_init(struct ac_conn *c, uint32_t n)
{
    c->slots = xcalloc(n, sizeof(*c->slots));
    c->nslots = n;
    for (uint32_t i = 0; i < n; i++) {
        c->slots[i].id = i;
        c->slots[i].next = i + 1 < n ? i + 1 : AC_NONE;
    }
    c->free_head = 0;
    c->head = c->tail = AC_NONE;
    c->inflight = 0;
}

static uint32_t slot_take(struct ac_conn *c)
{
    uint32_t i = c->free_head;
    struct ac_slot *s = &c->slots[i];

    c->free_head = s->next;
    s->id = (s->id + 0x10000u) & ~0xffffu;
    s->id |= i;
    s->used = true;
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

    if (s->prev != AC_NONE)
        c->slots[s->prev].next = s->next;
    else
        c->head = s->next;
    if (s->next != AC_NONE)
        c->slots[s->next].prev = s->prev;
    else
        c->tail = s->prev;
    s->used = false;
    s->cb = NULL;
    s->arg = NULL;
    s->next = c->free_head;
    s->prev = AC_NONE;
    c->free_head = i;
    c->inflight--;
}

/* Finishes request i with status st: frees the slot first, then calls back (which may submit). */
static void slot_finish(struct ac_conn *c, uint32_t i, enum frame_status st)
{
    struct ac_slot *s = &c->slots[i];
    authclient_cb cb = s->cb;
    void *arg = s->arg;

    slot_release(c, i);
    if (cb != NULL)
        cb(arg, st);
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
    if (ac->nup++ == 0)
        log_info("auth: connected to server2 at %s", ac->cfg->addr_str);
    else
        log_debug("auth: connection %u to %s is up", c->idx, ac->cfg->addr_str);
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
    c->out_off = c->out_len = 0;
    c->in_len = 0;
    c->dirty = false;
    if (was_up) {
        metrics_gauge_add(&ac->m->auth_conns_up, -1);
        if (--ac->nup == 0)
            log_warn("auth: lost every connection to server2 at %s (%s%s%s); answering 503 "
                     "until one is back",
                     ac->cfg->addr_str, what, err ? ": " : "",
                     err ? strerror_r(err, ebuf, sizeof(ebuf)) : "");
        else
            log_debug("auth: connection %u to %s lost (%s)", c->idx, ac->cfg->addr_str, what);
    } else if (!c->warned && c->idx == 0 && ac->nup == 0) {
        log_warn("auth: cannot connect to server2 at %s (%s%s%s); retrying", ac->cfg->addr_str,
                 what, err ? ": " : "", err ? strerror_r(err, ebuf, sizeof(ebuf)) : "");
        c->warned = true;
    } else {
        log_debug("auth: connection %u to %s failed (%s)", c->idx, ac->cfg->addr_str, what);
    }
    /* every request in flight fails; callbacks may submit elsewhere (this one is DOWN) */
    while (c->head != AC_NONE)
        slot_finish(c, c->head, FRAME_ST_UNAVAILABLE);
    arm_timer_us(c, c->backoff_ms * 1000);
    c->backoff_ms = c->backoff_ms * 2 > AC_BACKOFF_MAX_MS ? AC_BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void send_hello(struct ac_conn *c)
{
    char *p = out_reserve(c, FRAME_MAX_SIZE);
    c->out_len += frame_encode_hello(p, FRAME_MAX_SIZE);
    c->state = AC_HELLO;
    arm_timer_us(c, c->ac->cfg->timeout_us);
    event_add(&c->rd_ev, NULL);
    conn_write(c);
}

static void handle_frame(struct ac_conn *c, const struct frame *f)
{
    struct authclient *ac = c->ac;
    uint32_t i;
    struct ac_slot *s;

    if (c->state == AC_HELLO) {
        if (f->type != FRAME_HELLO_ACK) {
            conn_fail(c, "first frame from server2 is not HELLO_ACK", 0);
            return;
        }
        if (f->status != FRAME_ST_OK) {
            if (!c->warned)
                log_error("auth: server2 at %s refused protocol version %d (%s)",
                          ac->cfg->addr_str, FRAME_VERSION,
                          frame_status_name((enum frame_status)f->status));
            c->warned = true;
            conn_fail(c, "version refused", 0);
            return;
        }
        set_up(c);
        return;
    }
    if (f->type != FRAME_REPLY) {
        conn_fail(c, "unexpected frame type from server2", 0);
        return;
    }
    i = f->id & 0xffffu;
    if (i >= c->nslots || !c->slots[i].used || c->slots[i].id != f->id) {
        /* the answer to a request that already timed out */
        log_debug("auth: stale answer for id %u", f->id);
        return;
    }
    s = &c->slots[i];
    if (s->type != FRAME_PING)
        metrics_auth_rtt(ac->m, clock_now_ns() - s->sent_ns);
    slot_finish(c, i, (enum frame_status)f->status);
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
        enum frame_result r = frame_decode(c->in + off, c->in_len - off, &f, &used, &why);
        if (r == FRAME_MORE)
            break;
        if (r == FRAME_BAD) {
            log_error("auth: bad frame from server2 at %s: %s", c->ac->cfg->addr_str, why);
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
        metrics_add(&c->ac->m->auth_timeouts, 1);
        slot_finish(c, c->head, FRAME_ST_UNAVAILABLE);
    }
    if (c->state == AC_UP)
        arm_request_timer(c);
}

static void conn_connect(struct ac_conn *c)
{
    const struct authclient_config *cfg = c->ac->cfg;
    int fd;

    fd = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        conn_fail(c, "socket", errno);
        return;
    }
    if (net_set_nodelay(fd) < 0)
        log_debug("auth: TCP_NODELAY: %s", "failed");
    c->fd = fd;
    event_assign(&c->rd_ev, c->ac->base, fd, EV_READ | EV_PERSIST, on_read, c);
    event_assign(&c->wr_ev, c->ac->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (connect(fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) == 0) {
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
    ac->nconns = cfg->nconns;
    ac->conns = xcalloc(cfg->nconns, sizeof(*ac->conns));
    event_assign(&ac->flush_ev, base, -1, 0, on_flush, ac);
    for (unsigned i = 0; i < ac->nconns; i++) {
        struct ac_conn *c = &ac->conns[i];
        c->ac = ac;
        c->idx = i;
        c->fd = -1;
        c->state = AC_DOWN;
        c->backoff_ms = AC_BACKOFF_MIN_MS;
        slots_init(c, cfg->max_inflight);
        evtimer_assign(&c->timer_ev, base, on_timer, c);
        conn_connect(c);
    }
    return ac;
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
        free(c->slots);
        free(c->out);
    }
    free(ac->conns);
    free(ac);
}

int authclient_submit(struct authclient *ac, enum frame_type type, const char *user,
                      size_t user_len, const char *pass, size_t pass_len, authclient_cb cb,
                      void *arg, uint64_t *handle)
{
    struct ac_conn *c = NULL;
    struct ac_slot *s;
    uint32_t i;
    size_t n;
    char *p;

    for (unsigned k = 0; k < ac->nconns; k++) {
        struct ac_conn *cand = &ac->conns[(ac->rr + k) % ac->nconns];
        if (cand->state == AC_UP && cand->inflight < cand->nslots) {
            c = cand;
            ac->rr = (ac->rr + k + 1) % ac->nconns;
            break;
        }
    }
    if (c == NULL)
        return -1;
    i = slot_take(c);
    s = &c->slots[i];
    p = out_reserve(c, FRAME_MAX_SIZE);
    if (type == FRAME_PING) {
        struct frame f = {.type = FRAME_PING, .id = s->id};
        n = frame_encode(&f, p, FRAME_MAX_SIZE);
    } else {
        n = frame_encode_cred(type, s->id, user, user_len, pass, pass_len, p, FRAME_MAX_SIZE);
    }
    if (n == 0) {
        slot_release(c, i);
        return -1;
    }
    c->out_len += n;
    s->type = (uint8_t)type;
    s->cb = cb;
    s->arg = arg;
    s->sent_ns = clock_now_ns();
    if (c->head == i)
        arm_request_timer(c);
    schedule_flush(c);
    *handle = (uint64_t)c->idx << 32 | s->id;
    return 0;
}

void authclient_cancel(struct authclient *ac, uint64_t handle)
{
    unsigned ci = (unsigned)(handle >> 32);
    uint32_t id = (uint32_t)handle;
    struct ac_conn *c;
    uint32_t i = id & 0xffffu;

    if (ci >= ac->nconns)
        return;
    c = &ac->conns[ci];
    if (i < c->nslots && c->slots[i].used && c->slots[i].id == id) {
        c->slots[i].cb = NULL;
        c->slots[i].arg = NULL;
    }
}

bool authclient_is_up(const struct authclient *ac)
{
    return ac->nup > 0;
}
