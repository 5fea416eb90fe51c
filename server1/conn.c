/*
 * conn.c - see conn.h. Entry points: on_read, on_write, on_timeout, s1_conn_resume and
 * s1_conn_drain; each ends in conn_settle(), which flushes output, decides about closing,
 * re-arms timers and reading, and frees the conn if it died.
 */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "accesslog.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "net.h"
#include "proxyproto.h"
#include "textput.h"
#include "tls.h"
#include "transport.h"
#include "xalloc.h"

/* A connection (conn.h): its public part first, the rest conn.c's. */
struct s1_conn {
    struct s1_conn_pub pub; /* home, the handler's req, peer, route, head_only */
    TAILQ_ENTRY(s1_conn) link;
    int fd;
    struct s1_transport tr; /* how its bytes move: plain or TLS (transport.h) */
    enum s1_conn_state state;
    struct event rd_ev;
    struct event wr_ev;
    struct event tmo_ev;
    bool reading;        /* rd_ev is added */
    bool proxy_wait;     /* from a trusted balancer: its PROXY header is still to come */
    size_t proxy_len;    /* ... of which in[0..proxy_len) came already */
    bool counted;        /* holds a slot of home->conns_per_ip under pub.peer */
    bool timer_is_header; /* tmo_ev is the header timer of the request being received */

    /* input: in[in_start..in_end) not yet consumed */
    char *in;
    size_t in_start;
    size_t in_end;
    size_t in_cap;
    struct http_parser parser;
    bool head_done;         /* parser finished the current head; waiting for its body */
    bool sent_continue;

    /* output: NULL until a response cannot be written at once */
    struct evbuffer *out;
    unsigned zero_writes;   /* consecutive flushes that wrote nothing */
    uint64_t send_deadline_ns; /* the output queued now must be taken by then (0: none) */
    uint64_t send_last_ns;  /* when the output last moved (or was queued into an empty one) */
    struct minrate send_rate; /* how fast the output queued since it was empty is taken */
    /* a body that gives its bytes a part at a time (body.h): filled again once the output
     * has drained; no next request is handled until it is all given (ops NULL: none) */
    struct s1_body body;

    /* the request being answered (and pub.route, pub.head_only) */
    bool keep_alive;
    bool http10;            /* HTTP/1.0: keep-alive must be announced */
    bool req_inflight;      /* counted in server1_inflight_requests */
    bool more_input;        /* more requests are already buffered: batch the writes */

    /* the body of the request */
    bool body_unread;       /* a body follows and is not accepted yet: an answer closes */
    bool expect_continue;   /* ... and its client waits for 100 Continue */
    bool streaming;         /* the body goes to sink as it arrives */
    const struct s1_body_sink *sink;
    uint64_t body_deadline_ns; /* the whole streamed body must be here by then */
    uint64_t body_left;     /* streamed body bytes still to receive (chunked: 1 until its
                               end is in) */
    bool chunked;           /* the body is chunked: the bytes go through chunk */
    struct http_chunked chunk;
    uint64_t body_last_ns;  /* when bytes of it last arrived (or it was accepted) */
    struct minrate body_rate; /* how fast it arrives */

    bool close_after;  /* close once the output is flushed */
    bool linger_after; /* ... after a lingering close (the peer may still be sending) */
    bool peer_eof;
    bool reset;        /* close with a reset: what is still unsent is dropped */
    bool dead;         /* free at the end of the current entry point */

    /* the access log (home->alog; all unused when it is off) */
    char addr[ACCESSLOG_ADDR_MAX];     /* the client's address as text (PROXY's, if any) */
    struct accesslog_entry *log_cur;   /* the request being answered, from its head */
    struct accesslog_entry *log_head;  /* answered, response not all sent yet: oldest first */
    struct accesslog_entry *log_tail;
    struct accesslog_entry *log_spare; /* one to reuse: no allocation per request */
    uint64_t out_queued; /* bytes of responses given to send_response, since the start */
    uint64_t out_sent;   /* ... of which written to the socket */
};

#define S1_IN_INIT 4096
_Static_assert(PROXYPROTO_MAX <= S1_IN_INIT, "a PROXY header is gathered in a conn's input");
#define S1_IN_MIN_READ 1024
#define S1_READS_PER_EVENT 4 /* bounds one connection's turn in its thread */
#define S1_OUT_HIGH_WATER (256 * 1024) /* stop handling pipelined requests above this */
/* bounds one connection's writes in a turn of its thread (as nginx's sendfile_max_chunk): with
 * a client that reads as fast as we write, one large response would otherwise keep the thread
 * from its other connections until it is all sent */
#define S1_WRITE_BUDGET (2 * 1024 * 1024)

static void conn_settle(struct s1_conn *c);
static void conn_process(struct s1_conn *c);

static size_t in_max(const struct s1_conn *c)
{
    const struct s1_config *cfg = c->pub.home->cfg;
    return cfg->max_header_bytes + cfg->max_body;
}

static size_t out_len(const struct s1_conn *c)
{
    return c->out ? evbuffer_get_length(c->out) : 0;
}

/* Makes room at the end of the input buffer (compacting, growing up to in_max); returns it. */
static size_t make_space(struct s1_conn *c)
{
    size_t avail;

    if (c->in_start == c->in_end)
        c->in_start = c->in_end = 0;
    avail = c->in_cap - c->in_end;
    if (avail >= S1_IN_MIN_READ)
        return avail;
    if (c->in_start > 0) {
        memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
        c->in_end -= c->in_start;
        c->in_start = 0;
        avail = c->in_cap - c->in_end;
    }
    if (avail == 0 && c->in_cap < in_max(c)) {
        size_t cap = c->in_cap * 2;
        if (cap > in_max(c))
            cap = in_max(c);
        c->in = xrealloc(c->in, cap);
        c->in_cap = cap;
        avail = cap - c->in_end;
    }
    return avail;
}

static void arm_timer(struct s1_conn *c, const struct timeval *tv, bool header)
{
    event_add(&c->tmo_ev, tv);
    c->timer_is_header = header;
}

static void stop_timer(struct s1_conn *c)
{
    event_del(&c->tmo_ev);
    c->timer_is_header = false;
}

/* ---- the access log (accesslog.h): one line per response, once it is all sent ---- */

static struct accesslog_entry *log_entry_new(struct s1_conn *c)
{
    struct accesslog_entry *e = c->log_spare;

    if (e != NULL)
        c->log_spare = NULL;
    else
        e = xmalloc(sizeof(*e));
    e->next = NULL;
    return e;
}

static void log_entry_done(struct s1_conn *c, struct accesslog_entry *e)
{
    if (c->log_spare == NULL)
        c->log_spare = e;
    else
        free(e);
}

/* A head was parsed: what its line will say, and its request id. */
static void log_head(struct s1_conn *c, const struct http_request *req)
{
    struct accesslog_thread *t = c->pub.home->alog;

    if (t == NULL)
        return;
    if (c->log_cur == NULL)
        c->log_cur = log_entry_new(c);
    accesslog_entry_head(c->log_cur, c->in + c->in_start, req,
                         t->log->format != ACCESSLOG_COMMON, clock_now_ns());
    c->log_cur->id = accesslog_next_id(t);
}

/*
 * The response to the current request is being queued with a head of hlen bytes and a body of
 * body_len: its line waits until the output reaches its end (log_progress).
 */
static void log_answer(struct s1_conn *c, struct accesslog_entry *e, int status, size_t hlen,
                       uint64_t body_len)
{
    e->status = status;
    e->body_off = c->out_queued + hlen;
    e->end_off = e->body_off + body_len;
    e->body_len = body_len;
    if (c->log_tail != NULL)
        c->log_tail->next = e;
    else
        c->log_head = e;
    c->log_tail = e;
}

/* The entry of the current request's answer (one made for it if no head was parsed). */
static struct accesslog_entry *log_take(struct s1_conn *c)
{
    struct accesslog_entry *e = c->log_cur;

    if (e == NULL) {
        e = log_entry_new(c);
        accesslog_entry_blank(e, clock_now_ns());
        e->id = accesslog_next_id(c->pub.home->alog);
    }
    c->log_cur = NULL;
    return e;
}

/* Lines of the responses the output has sent all of. */
static void log_progress(struct s1_conn *c)
{
    uint64_t now = 0;

    while (c->log_head != NULL && c->out_sent >= c->log_head->end_off) {
        struct accesslog_entry *e = c->log_head;
        c->log_head = e->next;
        if (c->log_head == NULL)
            c->log_tail = NULL;
        if (now == 0)
            now = clock_now_ns();
        accesslog_request(c->pub.home->alog, c->addr, e, e->body_len, now);
        log_entry_done(c, e);
    }
}

/*
 * The conn goes: responses cut short log the body bytes they sent; a request never answered
 * (the client went first) logs 499, as nginx does.
 */
static void log_conn_end(struct s1_conn *c)
{
    struct accesslog_thread *t = c->pub.home->alog;
    uint64_t now = clock_now_ns();

    while (c->log_head != NULL) {
        struct accesslog_entry *e = c->log_head;
        uint64_t sent = c->out_sent > e->body_off ? c->out_sent - e->body_off : 0;
        c->log_head = e->next;
        accesslog_request(t, c->addr, e, sent < e->body_len ? sent : e->body_len, now);
        free(e);
    }
    c->log_tail = NULL;
    if (c->log_cur != NULL) {
        c->log_cur->status = 499;
        accesslog_request(t, c->addr, c->log_cur, 0, now);
        free(c->log_cur);
        c->log_cur = NULL;
    }
    free(c->log_spare);
    c->log_spare = NULL;
}

void s1_conn_log_user(struct s1_conn *c, const char *user)
{
    if (c->pub.home->alog != NULL && c->log_cur != NULL)
        accesslog_entry_user(c->log_cur, user, strlen(user));
}

void s1_conn_audit(struct s1_conn *c, const char *event, const char *user, size_t user_len,
                   const char *detail)
{
    struct accesslog_thread *t = c->pub.home->alog;

    if (t != NULL)
        accesslog_event(t, c->addr, event, user, user_len, detail,
                        c->log_cur != NULL ? c->log_cur->id : 0);
}

/* ---- responses ---- */

static const char *reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

static struct evbuffer *out_buf(struct s1_conn *c)
{
    if (c->out == NULL) {
        c->out = evbuffer_new();
        if (c->out == NULL) {
            fprintf(stderr, "server1: out of memory (evbuffer_new)\n");
            abort();
        }
        /* lets evbuffer_add_file use sendfile (not through TLS in user space) */
        if (c->tr.sendfile)
            evbuffer_set_flags(c->out, EVBUFFER_FLAG_DRAINS_TO_FD);
    }
    return c->out;
}

/* The rate rule of transfers (minrate.h), from the config. */
static struct minrate_cfg rate_rule(const struct s1_conn *c)
{
    const struct s1_config *cfg = c->pub.home->cfg;
    return (struct minrate_cfg){.rate = cfg->min_rate,
                                .grace_ns = cfg->min_rate_grace_us * 1000,
                                .window_ns = cfg->min_rate_window_us * 1000};
}

/*
 * Output queued for later writes must be taken within --send-timeout (from the moment the
 * queue was empty) plus bytes / --min-rate for each response in it, and at --min-rate over
 * every window from the grace on.
 */
static void deadline_extend(struct s1_conn *c, uint64_t bytes)
{
    const struct s1_config *cfg = c->pub.home->cfg;
    uint64_t add = (uint64_t)((double)bytes / (double)cfg->min_rate * 1e9);

    if (c->send_deadline_ns == 0) {
        uint64_t now = clock_now_ns();
        c->send_deadline_ns = now + cfg->send_timeout_us * 1000;
        c->send_last_ns = now;
        minrate_start(&c->send_rate, now);
    }
    c->send_deadline_ns += add;
}

/*
 * Appends head + body to the output buffer (for later writes) and takes the body: released at
 * once if it gave all its bytes, else held in c->body until it has (conn_flush).
 */
static void queue_out(struct s1_conn *c, const char *head, size_t hlen, struct s1_body *b)
{
    struct evbuffer *out = out_buf(c);

    deadline_extend(c, hlen + (b->ops == NULL ? 0 : b->len));
    b->copy_files = !c->tr.sendfile;
    if (hlen > 0 && evbuffer_add(out, head, hlen) < 0) {
        log_warn("cannot queue a response: out of memory");
        goto fail;
    }
    if (b->ops != NULL && b->len > 0 && b->ops->fill(b, out, S1_WRITE_BUDGET) < 0)
        goto fail; /* (out of memory, or the bytes could not be read: logged) */
    if (b->ops != NULL && b->len > 0) {
        c->body = *b; /* the rest once the output has drained */
        *b = (struct s1_body){.ops = NULL, ._fd = -1};
        return;
    }
    body_release(b);
    return;

fail:
    body_release(b);
    c->dead = true;
}

/* Sends head + body: straight to the socket when nothing is queued, else through the evbuffer. */
static void send_response(struct s1_conn *c, const char *head, size_t hlen, struct s1_body *b)
{
    struct iovec iov[2];
    size_t total = hlen;
    int cnt = 1;
    ssize_t n;

    c->out_queued += hlen + (b->ops == NULL ? 0 : b->len);
    if (c->dead) {
        body_release(b);
        return;
    }
    if (out_len(c) > 0 || c->more_input ||
        (b->ops != NULL && b->len > 0 && (b->data == NULL || b->len > S1_WRITE_BUDGET))) {
        queue_out(c, head, hlen, b);
        return;
    }
    iov[0].iov_base = (void *)head;
    iov[0].iov_len = hlen;
    if (b->ops != NULL && b->len > 0) {
        iov[1].iov_base = (void *)b->data;
        iov[1].iov_len = (size_t)b->len;
        total += (size_t)b->len;
        cnt = 2;
    }
    n = c->tr.ops->writev(&c->tr, iov, cnt);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            c->dead = true;
            body_release(b);
            return;
        }
        n = 0;
    }
    metrics_add(&c->pub.home->metrics->bytes_sent, (uint64_t)n);
    c->out_sent += (uint64_t)n;
    if ((size_t)n == total) {
        body_release(b);
        return;
    }
    if ((size_t)n < hlen) {
        queue_out(c, head + n, hlen - (size_t)n, b);
    } else {
        body_consume(b, (size_t)n - hlen);
        queue_out(c, NULL, 0, b);
    }
}

void s1_conn_respond(struct s1_conn *c, int status, const char *content_type, const char *extra,
                     struct s1_body *body)
{
    struct s1_body none = {.ops = NULL, ._fd = -1};
    /* the status line and the headers written here take at most 512 bytes (a Content-Type is
     * at most MIMETYPES_TYPE_MAX); the caller's extra headers get the rest */
    char head[2048];
    char *p = head;
    size_t extra_len = extra ? strlen(extra) : 0;
    struct accesslog_entry *le = NULL;

    if (body == NULL)
        body = &none;
    if (c->pub.home->alog != NULL)
        le = log_take(c);
    if (!c->keep_alive || c->pub.home->draining || c->peer_eof)
        c->close_after = true;
    if (c->pub.req != NULL)
        c->pub.home->handler->answered(c);
    if (c->streaming) {
        /* the rest of the body will not be read: the connection cannot go on */
        c->streaming = false;
        c->close_after = true;
        c->linger_after = true;
    }
    if (c->body_unread) {
        /* its body is never read, so the connection cannot go on */
        c->body_unread = false;
        c->close_after = true;
        c->linger_after = true;
    }

    p = textput_str(p, "HTTP/1.1 ");
    p = textput_u64(p, (uint64_t)status);
    *p++ = ' ';
    p = textput_str(p, reason(status));
    p = textput_str(p, "\r\nServer: server1\r\nDate: ");
    p = textput_str(p, httpdate_cached(&c->pub.home->date, clock_wall_s()));
    p = textput_str(p, "\r\n");
    /* a 204 must not carry Content-Length (RFC 9110 8.6); a 304 may only with the length
     * of the 200 it stands for, which it leaves out here */
    if (status != 204 && status != 304) {
        p = textput_str(p, "Content-Length: ");
        p = textput_u64(p, body->ops == NULL ? 0 : body->len);
        p = textput_str(p, "\r\n");
    }
    if (content_type != NULL) {
        p = textput_str(p, "X-Content-Type-Options: nosniff\r\nContent-Type: ");
        p = textput_str(p, content_type);
        p = textput_str(p, "\r\n");
    }
    if (extra_len > sizeof(head) - 512) { /* no caller sends that many: a bug, said once */
        log_error("%zu bytes of extra headers for a %d: left out", extra_len, status);
        extra_len = 0;
    }
    if (extra_len > 0) {
        memcpy(p, extra, extra_len);
        p += extra_len;
    }
    if (c->pub.secure && c->pub.home->cfg->hsts_us > 0) {
        p = textput_str(p, "Strict-Transport-Security: max-age=");
        p = textput_u64(p, c->pub.home->cfg->hsts_us / 1000000);
        p = textput_str(p, "\r\n");
    }
    if (le != NULL) {
        p = textput_str(p, "X-Request-Id: ");
        p += accesslog_id_text(c->pub.home->alog, le->id, p);
        p = textput_str(p, "\r\n");
    }
    if (c->close_after)
        p = textput_str(p, "Connection: close\r\n");
    else if (c->http10)
        p = textput_str(p, "Connection: keep-alive\r\n");
    p = textput_str(p, "\r\n");

    metrics_request(c->pub.home->metrics, c->pub.route, status);
    if (c->req_inflight) {
        c->req_inflight = false;
        metrics_gauge_add(&c->pub.home->metrics->inflight, -1);
    }
    if (c->pub.head_only)
        body_release(body);
    if (le != NULL)
        log_answer(c, le, status, (size_t)(p - head), body->ops == NULL ? 0 : body->len);
    send_response(c, head, (size_t)(p - head), body);
    if (le != NULL)
        log_progress(c);
}

void s1_conn_respond_text(struct s1_conn *c, int status, const char *extra, const char *text)
{
    struct s1_body b;

    body_mem(&b, text, strlen(text));
    s1_conn_respond(c, status, "text/plain; charset=utf-8", extra, &b);
}

/* An error that ends the connection: the peer's framing can no longer be trusted. */
void s1_conn_respond_fatal(struct s1_conn *c, int status, const char *extra, const char *text)
{
    c->close_after = true;
    c->linger_after = true;
    s1_conn_respond_text(c, status, extra, text);
}

/* ---- request processing ---- */

static void parse_error(struct s1_conn *c)
{
    int status = c->parser.status;

    log_debug("bad request from fd %d: %s (%d)", c->fd, c->parser.error, status);
    c->pub.route = METRICS_ROUTE_OTHER;
    switch (status) {
    case 431:
        s1_conn_respond_fatal(c, 431, NULL, "request header fields too large\n");
        break;
    case 501:
        s1_conn_respond_fatal(c, 501, NULL, "only the chunked transfer coding is supported\n");
        break;
    case 505:
        s1_conn_respond_fatal(c, 505, NULL, "HTTP version not supported\n");
        break;
    default:
        s1_conn_respond_fatal(c, 400, NULL, "bad request\n");
        break;
    }
}

static void send_continue(struct s1_conn *c)
{
    static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct s1_body none = {.ops = NULL, ._fd = -1};
    bool more = c->more_input;

    c->more_input = false;
    send_response(c, msg, sizeof(msg) - 1, &none);
    c->more_input = more;
    c->sent_continue = true;
}

/* ---- streamed bodies ---- */

static struct timeval tv_of_ns(uint64_t ns)
{
    return (struct timeval){.tv_sec = (time_t)(ns / 1000000000u),
                            .tv_usec = (suseconds_t)(ns % 1000000000u / 1000)};
}

/*
 * The body timer: at the deadline, the next judgement of its rate, or when the current stall
 * would reach --header-timeout, whichever comes first. Bytes that arrive meanwhile do not move
 * it: it fires, finds the body on time (body_late), and is armed again.
 */
static void arm_body_timer(struct s1_conn *c, uint64_t now)
{
    struct minrate_cfg rule = rate_rule(c);
    uint64_t at = c->body_last_ns + c->pub.home->cfg->header_timeout_us * 1000;
    uint64_t check = minrate_next_ns(&c->body_rate, &rule, now);
    struct timeval tv;

    if (c->body_deadline_ns < at)
        at = c->body_deadline_ns;
    if (check != 0 && check < at)
        at = check;
    tv = tv_of_ns(at > now ? at - now : 0);
    arm_timer(c, &tv, true);
}

/* Why the streamed body is late at now, or NULL if it is not. */
static const char *body_late(struct s1_conn *c, uint64_t now)
{
    struct minrate_cfg rule = rate_rule(c);

    if (now >= c->body_deadline_ns)
        return "not received within --upload-timeout + size / --min-rate";
    if (now - c->body_last_ns >= c->pub.home->cfg->header_timeout_us * 1000)
        return "stalled for --header-timeout";
    if (minrate_too_slow(&c->body_rate, &rule, now))
        return "slower than --min-rate over --min-rate-window";
    return NULL;
}

void s1_conn_stream_body(struct s1_conn *c, const struct s1_body_sink *sink,
                         uint64_t deadline_ns, uint64_t max_chunked)
{
    uint64_t now = clock_now_ns();

    if (c->chunked)
        http_chunked_init(&c->chunk, max_chunked, c->pub.home->cfg->max_header_bytes);
    c->sink = sink;
    c->streaming = true;
    c->body_unread = false;
    c->body_deadline_ns = deadline_ns;
    c->body_last_ns = now;
    minrate_start(&c->body_rate, now);
    if (c->expect_continue && c->body_left > 0)
        send_continue(c);
    arm_body_timer(c, now);
}

/*
 * Decodes the chunked body's bytes received so far, the data into the sink; body_left is 0
 * once its end is in. Returns the bytes taken, or -1 after answering an error (the sink's,
 * or 400 / 413 for the body itself).
 */
static long chunk_feed(struct s1_conn *c)
{
    size_t taken = 0;
    enum http_chunked_result r = HTTP_CHUNKED_MORE;

    while (r == HTTP_CHUNKED_MORE && c->in_start < c->in_end) {
        const char *p = c->in + c->in_start;
        struct http_span data;
        size_t used;

        r = http_chunked_decode(&c->chunk, p, c->in_end - c->in_start, &used, &data);
        if (r == HTTP_CHUNKED_ERROR) {
            log_debug("bad chunked body from fd %d: %s (%d)", c->fd, c->chunk.error,
                      c->chunk.status);
            if (c->chunk.status == 413)
                s1_conn_respond_fatal(c, 413, NULL, "request body too large\n");
            else
                s1_conn_respond_fatal(c, 400, NULL, "bad chunked body\n");
            return -1;
        }
        if (data.len > 0 && c->sink->write(c, p + data.off, data.len) < 0)
            return -1;
        c->in_start += used;
        taken += used;
    }
    if (r == HTTP_CHUNKED_DONE)
        c->body_left = 0;
    return (long)taken;
}

/*
 * Moves the body bytes received so far from the input buffer into the sink. Returns the bytes
 * taken, or -1 after answering an error.
 */
static long body_feed(struct s1_conn *c)
{
    size_t have = c->in_end - c->in_start;
    size_t n = have < c->body_left ? have : (size_t)c->body_left;

    if (c->chunked) {
        long taken = chunk_feed(c);
        if (taken > 0) {
            struct minrate_cfg rule = rate_rule(c);
            c->body_last_ns = clock_now_ns();
            minrate_add(&c->body_rate, &rule, c->body_last_ns, (uint64_t)taken);
        }
        return taken;
    }
    if (n > 0) {
        struct minrate_cfg rule = rate_rule(c);
        c->body_last_ns = clock_now_ns();
        minrate_add(&c->body_rate, &rule, c->body_last_ns, n);
        if (c->sink->write(c, c->in + c->in_start, n) < 0)
            return -1;
    }
    c->in_start += n;
    c->body_left -= n;
    return (long)n;
}

/*
 * A head the handler takes before its body (S1_HEAD_DONE or S1_HEAD_WAIT): the head is
 * consumed; the body stays unread until the handler installs a sink, if it does.
 */
static void head_taken(struct s1_conn *c, const struct http_request *req, enum s1_head h)
{
    if (!c->streaming && evtimer_pending(&c->tmo_ev, NULL))
        stop_timer(c); /* the client waits for us now */
    if (!c->streaming)
        c->timer_is_header = false;
    c->in_start += req->head_len;
    c->head_done = false;
    http_parser_reset(&c->parser);
    if (h == S1_HEAD_WAIT)
        c->state = S1_CONN_WAIT;
}

/* Handles every complete request in the buffer, in order, until one goes asynchronous. */
static void conn_process(struct s1_conn *c)
{
    const struct s1_config *cfg = c->pub.home->cfg;

    while (!c->dead && c->state == S1_CONN_READ && !c->close_after) {
        size_t avail;
        const struct http_request *req = &c->parser.req;
        enum s1_dispatch d;
        enum s1_head h;
        size_t need;

        if (c->streaming) {
            long fed = body_feed(c);
            if (fed < 0)
                break;
            if (c->body_left > 0) {
                if (!evtimer_pending(&c->tmo_ev, NULL))
                    arm_body_timer(c, clock_now_ns());
                break;
            }
            stop_timer(c);
            c->streaming = false;
            c->sink->received(c);
            c->state = S1_CONN_WAIT;
            break;
        }
        avail = c->in_end - c->in_start;
        if (avail == 0)
            break;
        if (out_len(c) > S1_OUT_HIGH_WATER || c->body.ops != NULL)
            break; /* resumed by conn_settle once the output drains */
        if (!c->head_done) {
            enum http_parse_result r = http_parser_execute(&c->parser, c->in + c->in_start, avail);
            if (r == HTTP_PARSE_MORE) {
                /* part of a request: it must be complete within --header-timeout */
                if (!c->timer_is_header)
                    arm_timer(c, c->pub.home->header_tv, true);
                break;
            }
            if (r == HTTP_PARSE_ERROR) {
                parse_error(c);
                break;
            }
            c->head_done = true;
            c->sent_continue = false;
            c->req_inflight = true;
            metrics_gauge_add(&c->pub.home->metrics->inflight, 1);
            c->pub.route = c->pub.home->handler->route(c->in + c->in_start, req);
            c->keep_alive = req->keep_alive;
            c->http10 = req->version_minor == 0;
            c->pub.head_only = req->method == HTTP_METHOD_HEAD;
            c->chunked = req->chunked;
            c->body_left = req->chunked ? 1 : req->content_length;
            c->body_unread = c->body_left > 0;
            c->expect_continue = req->expect_continue && req->version_minor == 1;
            log_head(c, req);
            h = c->pub.home->handler->head(c, c->in + c->in_start, req);
            if (h != S1_HEAD_WHOLE) {
                head_taken(c, req, h);
                continue; /* (an answer with a body unread closed the connection) */
            }
            c->body_unread = false;
            if (req->chunked) { /* (the account forms, the only bodies read whole, are small) */
                s1_conn_respond_fatal(c, 411, NULL, "Content-Length required\n");
                break;
            }
            if (req->content_length > cfg->max_body) {
                s1_conn_respond_fatal(c, 413, NULL, "request body too large\n");
                break;
            }
        }
        need = req->head_len + (size_t)req->content_length;
        if (avail < need) {
            if (!c->timer_is_header)
                arm_timer(c, c->pub.home->header_tv, true);
            if (req->expect_continue && !c->sent_continue && req->version_minor == 1)
                send_continue(c);
            break;
        }
        /* the whole request is here */
        if (evtimer_pending(&c->tmo_ev, NULL))
            stop_timer(c);
        c->timer_is_header = false;
        c->more_input = avail > need;
        d = c->pub.home->handler->dispatch(c, c->in + c->in_start, req,
                                       c->in + c->in_start + req->head_len, need - req->head_len);
        c->more_input = false;
        c->in_start += need;
        c->head_done = false;
        http_parser_reset(&c->parser);
        if (d == S1_DISPATCH_PENDING) {
            c->state = S1_CONN_WAIT;
            break;
        }
    }
}

/*
 * With the output drained: has the body being given add its next bytes (true), or releases it
 * once it gave them all or on error (false; c->dead if it could not give the bytes promised).
 */
static bool body_more(struct s1_conn *c)
{
    if (c->body.len > 0 && c->body.ops->fill(&c->body, out_buf(c), S1_WRITE_BUDGET) < 0)
        c->dead = true;
    if (c->dead || c->body.len == 0) {
        body_release(&c->body);
        return !c->dead && out_len(c) > 0;
    }
    return true;
}

/*
 * Arms the write event (again): its timeout is when the current stall would reach
 * --idle-timeout, the send deadline, or the next judgement of the output's rate, whichever
 * comes first.
 */
static void arm_write(struct s1_conn *c)
{
    struct minrate_cfg rule = rate_rule(c);
    uint64_t now = clock_now_ns();
    uint64_t at = c->send_last_ns + c->pub.home->cfg->idle_timeout_us * 1000;
    uint64_t check = minrate_next_ns(&c->send_rate, &rule, now);
    struct timeval tv;

    if (c->send_deadline_ns != 0 && c->send_deadline_ns < at)
        at = c->send_deadline_ns;
    if (c->send_deadline_ns != 0 && check != 0 && check < at)
        at = check;
    tv = tv_of_ns(at > now ? at - now : 0);
    event_add(&c->wr_ev, &tv);
}

/*
 * Writes queued output (filling it from a body that gives its bytes a part at a time); arms
 * the write event if the socket is full.
 */
static void flush_out(struct s1_conn *c)
{
    struct minrate_cfg rule = rate_rule(c);
    size_t budget = S1_WRITE_BUDGET;

    do {
        while (!c->dead && out_len(c) > 0) {
            int n;
            if (budget == 0) {
                /* the socket is still writable: the write event fires on the next turn */
                arm_write(c);
                return;
            }
            n = c->tr.ops->write_out(&c->tr, c->out, budget);
            /* libevent's sendfile path reports EAGAIN as 0; so would a file cut short under
             * us, which must not spin forever: give up after many writable-but-no-progress
             * rounds */
            if (n == 0 && ++c->zero_writes > 64) {
                log_warn("closing fd %d: a file being sent stopped growing (truncated?)", c->fd);
                c->dead = true;
                return;
            }
            if (n == 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
                arm_write(c);
                return;
            }
            if (n < 0) {
                c->dead = true;
                return;
            }
            c->send_last_ns = clock_now_ns();
            minrate_add(&c->send_rate, &rule, c->send_last_ns, (uint64_t)n);
            c->zero_writes = 0;
            budget -= (size_t)n < budget ? (size_t)n : budget;
            metrics_add(&c->pub.home->metrics->bytes_sent, (uint64_t)n);
            c->out_sent += (uint64_t)n;
        }
    } while (!c->dead && c->body.ops != NULL && body_more(c));
    if (c->dead)
        return;
    c->send_deadline_ns = 0; /* everything queued was taken */
    if (event_pending(&c->wr_ev, EV_WRITE, NULL))
        event_del(&c->wr_ev);
}

/* flush_out, then the access log's lines of the responses it completed. */
static void conn_flush(struct s1_conn *c)
{
    flush_out(c);
    if (c->log_head != NULL)
        log_progress(c);
}

static void start_linger(struct s1_conn *c)
{
    if (c->tr.ops->shutdown(&c->tr) < 0) {
        c->dead = true;
        return;
    }
    c->state = S1_CONN_LINGER;
    c->in_start = c->in_end = 0;
    arm_timer(c, c->pub.home->linger_tv, false);
}

static void conn_settle(struct s1_conn *c)
{
    /* ends: every round that continues consumed input or produced output */
    while (!c->dead) {
        size_t before = out_len(c);
        conn_flush(c);
        if (c->dead || out_len(c) > 0)
            break;
        /* the output drained: requests held back by the high-water mark can go on */
        if (before > 0 && c->state == S1_CONN_READ && !c->close_after &&
            c->in_end > c->in_start) {
            conn_process(c);
            continue;
        }
        break;
    }
    if (!c->dead && out_len(c) == 0) {
        bool idle = c->state == S1_CONN_READ && c->in_end == c->in_start && !c->head_done &&
                    !c->streaming;
        if (c->close_after && c->state != S1_CONN_WAIT && c->state != S1_CONN_LINGER) {
            if (c->linger_after && !c->peer_eof)
                start_linger(c);
            else
                c->dead = true;
        } else if (c->state == S1_CONN_READ && c->peer_eof) {
            c->dead = true; /* everything complete was answered; the peer sends no more */
        } else if (idle && c->pub.home->draining) {
            c->dead = true;
        } else if (idle && !c->close_after && !evtimer_pending(&c->tmo_ev, NULL)) {
            arm_timer(c, c->pub.home->idle_tv, false);
        }
    }
    if (!c->dead) {
        bool want = !c->peer_eof &&
                    (c->state == S1_CONN_LINGER || make_space(c) > 0 || c->tr.want_read);
        if (want && !c->reading)
            event_add(&c->rd_ev, NULL);
        else if (!want && c->reading)
            event_del(&c->rd_ev);
        c->reading = want;
        /* bytes TLS took off the socket already: no readiness will tell of them (a read
         * that waits for writability is tried again by the write event, not here) */
        if (want && c->state != S1_CONN_LINGER && !c->tr.want_write &&
            c->tr.ops->pending(&c->tr))
            event_active(&c->rd_ev, EV_READ, 1);
        /* a TLS read (a handshake step) waits for writability */
        if (c->tr.want_write && !c->peer_eof && !event_pending(&c->wr_ev, EV_WRITE, NULL))
            event_add(&c->wr_ev, NULL);
    }
    if (c->dead)
        s1_conn_free(c);
}

/* ---- event callbacks ---- */

/*
 * Reads what the socket has (at most S1_READS_PER_EVENT buffers) and handles the requests
 * complete in it. False when nothing happened (the first read would block and waits for
 * nothing else): no need to settle. The caller settles otherwise.
 */
static bool read_input(struct s1_conn *c)
{
    ssize_t n;

    /* a read that fills the buffer is followed by another at once (an upload's head and
     * body rarely fit the first): one wake-up per request, not two */
    for (int reads = 0; reads < S1_READS_PER_EVENT; reads++) {
        size_t space = make_space(c);
        if (space == 0)
            break; /* conn_settle pauses reading */
        n = c->tr.ops->recv(&c->tr, c->in + c->in_end, space);
        if (n > 0) {
            c->in_end += (size_t)n;
        } else if (n == 0) {
            c->peer_eof = true;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (reads == 0 && !c->tr.want_write)
                return false;
            break;
        } else {
            c->dead = true; /* ECONNRESET and friends */
        }
        if (c->state == S1_CONN_READ)
            conn_process(c);
        if (n < (ssize_t)space || c->dead || c->state != S1_CONN_READ)
            break;
    }
    return true;
}

/*
 * A trusted balancer's connection (--trusted-proxy): its PROXY header, peeked at and taken off
 * the socket exactly, so the bytes after it (the client's TLS or HTTP) stay there. A header not
 * all here yet is taken as far as it goes (into in[], every byte of it the header's), so that
 * the next read sees new bytes or the end, never the same ones again. The client it names
 * becomes pub.peer, counted in conns_per_ip (over the limit: 503 and close, as at accept; a TLS
 * connection is closed without a word). 1 when the conn goes on reading, 0 when the header is
 * not all here yet, -1 when the conn ends (settle it).
 */
static int take_proxy_header(struct s1_conn *c)
{
    struct s1_conn_home *home = c->pub.home;
    uint8_t *buf = (uint8_t *)c->in; /* in_cap >= PROXYPROTO_MAX; unused until the header ends */
    struct proxyproto_src src;
    ssize_t n;
    int r;

    do
        n = recv(c->fd, buf + c->proxy_len, PROXYPROTO_MAX - c->proxy_len, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    r = n > 0 ? proxyproto_parse(buf, c->proxy_len + (size_t)n, &src) : -1;
    if (r == 0) { /* all of it is the header's: take it */
        if (recv(c->fd, buf + c->proxy_len, (size_t)n, 0) != n) {
            c->dead = true;
            return -1;
        }
        c->proxy_len += (size_t)n;
        return 0;
    }
    if (r < 0 || recv(c->fd, buf + c->proxy_len, (size_t)r - c->proxy_len, 0) !=
                     (ssize_t)((size_t)r - c->proxy_len)) {
        log_debug("fd %d: closed: %s", c->fd,
                  n == 0 ? "the balancer closed before its PROXY header"
                  : n < 0 ? "error before the PROXY header"
                          : "no valid PROXY header from a --trusted-proxy address");
        metrics_add(&home->metrics->proxy_headers_refused, 1);
        c->dead = true;
        return -1;
    }
    c->proxy_wait = false;
    c->proxy_len = 0;
    if (src.local)
        return 1; /* the balancer's own connection: its address, not counted */
    net_addr_key((struct sockaddr *)&src.addr, src.addr_len, c->pub.peer);
    if (home->alog != NULL)
        accesslog_addr_text((struct sockaddr *)&src.addr, src.addr_len, c->addr);
    if (home->conns_per_ip != NULL && !connlimit_acquire(home->conns_per_ip, c->pub.peer)) {
        metrics_add(&home->metrics->connections_rejected_per_ip, 1);
        if (c->tr.ssl != NULL) {
            c->dead = true;
            return -1;
        }
        c->pub.route = METRICS_ROUTE_OTHER;
        s1_conn_respond_fatal(c, 503, "Retry-After: 1\r\n",
                              "too many connections from your address\r\n");
        return -1;
    }
    c->counted = home->conns_per_ip != NULL;
    return 1;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct s1_conn *c = arg;
    UNUSED(what);

    if (c->state == S1_CONN_LINGER) {
        /* discarded as they come, raw: after close_notify a TLS peer's bytes mean nothing */
        char sink[4096];
        ssize_t n = recv(fd, sink, sizeof(sink), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            c->dead = true;
        conn_settle(c);
        return;
    }
    if (c->proxy_wait) {
        int r = take_proxy_header(c);
        if (r < 0)
            conn_settle(c);
        if (r <= 0)
            return;
    }
    if (read_input(c))
        conn_settle(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct s1_conn *c = arg;
    UNUSED(fd);

    struct minrate_cfg rule = rate_rule(c);
    uint64_t now;
    bool slow;

    if (c->tr.want_write && (what & EV_WRITE)) {
        c->tr.want_write = false; /* a TLS read waited for this */
        if (c->state != S1_CONN_LINGER)
            (void)read_input(c);
        if (c->dead) {
            conn_settle(c);
            return;
        }
    }
    now = clock_now_ns();
    slow = c->send_deadline_ns != 0 && minrate_too_slow(&c->send_rate, &rule, now);
    if ((c->send_deadline_ns != 0 && now >= c->send_deadline_ns) || slow) {
        log_debug("closing fd %d: the client reads its response %s", c->fd,
                  slow ? "slower than --min-rate over --min-rate-window"
                       : "too slowly for --send-timeout + size / --min-rate");
        metrics_add(&c->pub.home->metrics->sends_timed_out, 1);
        c->reset = true; /* the kernel would go on sending its buffered bytes at their pace */
        c->dead = true;
    } else if ((what & EV_TIMEOUT) &&
               now - c->send_last_ns >= c->pub.home->cfg->idle_timeout_us * 1000) {
        log_debug("closing fd %d: the client stopped reading", c->fd);
        c->dead = true;
    }
    conn_settle(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct s1_conn *c = arg;
    UNUSED(fd);
    UNUSED(what);

    if (c->state == S1_CONN_LINGER) {
        c->dead = true;
    } else if (c->state == S1_CONN_READ && c->streaming) {
        uint64_t now = clock_now_ns();
        const char *why = body_late(c, now);
        if (why == NULL) {
            arm_body_timer(c, now); /* (bytes came meanwhile) */
        } else {
            log_debug("fd %d: upload %s", c->fd, why);
            metrics_add(&c->pub.home->metrics->uploads_timed_out, 1);
            c->timer_is_header = false;
            s1_conn_respond_fatal(c, 408, NULL, "upload not received in time\n");
        }
    } else if (c->state == S1_CONN_READ && c->timer_is_header) {
        c->timer_is_header = false;
        if (c->in_end > c->in_start || c->head_done) {
            log_debug("fd %d: request not complete in --header-timeout", c->fd);
            if (!c->head_done)
                c->pub.route = METRICS_ROUTE_OTHER;
            c->close_after = true;
            s1_conn_respond_text(c, 408, NULL, "request timeout\n");
        } else {
            c->dead = true; /* never sent a byte */
        }
    } else if (c->state == S1_CONN_READ) {
        c->dead = true; /* keep-alive idle */
    }
    conn_settle(c);
}

/* ---- life cycle ---- */

struct s1_conn *s1_conn_new(struct s1_conn_home *home, int fd,
                            const uint8_t peer[RATELIMIT_ADDR_LEN], const char *addr, bool tls,
                            bool proxy)
{
    struct s1_conn *c = xcalloc(1, sizeof(*c));

    if (!tls) {
        s1_transport_plain(&c->tr, fd);
    } else if (s1_tls_attach(&c->tr, home->tls, fd, home->metrics) < 0) {
        log_warn("cannot start TLS on fd %d: out of memory", fd);
        if (close(fd) < 0)
            log_debug("close fd %d: %d", fd, errno);
        if (home->conns_per_ip != NULL && !proxy)
            connlimit_release(home->conns_per_ip, peer);
        free(c);
        home->closed(home);
        return NULL;
    }
    c->proxy_wait = proxy;
    c->counted = home->conns_per_ip != NULL && !proxy;
    c->pub.home = home;
    c->fd = fd;
    memcpy(c->pub.peer, peer, sizeof(c->pub.peer));
    snprintf(c->addr, sizeof(c->addr), "%s", addr != NULL ? addr : "-");
    c->pub.secure = tls;
    c->state = S1_CONN_READ;
    c->body = (struct s1_body){.ops = NULL, ._fd = -1};
    c->in_cap = S1_IN_INIT;
    c->in = xmalloc(c->in_cap);
    http_parser_init(&c->parser, home->cfg->max_header_bytes);
    if (net_set_nodelay(fd) < 0)
        log_debug("TCP_NODELAY on fd %d failed", fd);
    event_assign(&c->rd_ev, home->base, fd, EV_READ | EV_PERSIST, on_read, c);
    event_assign(&c->wr_ev, home->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    evtimer_assign(&c->tmo_ev, home->base, on_timeout, c);
    TAILQ_INSERT_TAIL(&home->conns, c, link);
    home->nconns++;
    metrics_gauge_add(&home->metrics->connections, 1);
    event_add(&c->rd_ev, NULL);
    c->reading = true;
    /* the first request must arrive within --header-timeout */
    arm_timer(c, home->header_tv, true);
    return c;
}

void s1_conn_free(struct s1_conn *c)
{
    struct s1_conn_home *home = c->pub.home;

    if (c->pub.req != NULL)
        home->handler->release(c); /* an answer pending finds nobody */
    if (home->alog != NULL)
        log_conn_end(c);
    event_del(&c->rd_ev);
    event_del(&c->wr_ev);
    event_del(&c->tmo_ev);
    if (c->reset) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        c->tr.fatal = true; /* no close_notify either */
    }
    c->tr.ops->close(&c->tr);
    if (c->out != NULL)
        evbuffer_free(c->out); /* (before the body: nothing it gave is read any more) */
    body_release(&c->body);
    free(c->in);
    if (c->req_inflight)
        metrics_gauge_add(&home->metrics->inflight, -1);
    metrics_gauge_add(&home->metrics->connections, -1);
    TAILQ_REMOVE(&home->conns, c, link);
    home->nconns--;
    if (c->counted)
        connlimit_release(home->conns_per_ip, c->pub.peer);
    free(c);
    home->closed(home);
}

void s1_conn_drain(struct s1_conn *c)
{
    /* idle ones close now; conn_settle closes the others after their current response */
    conn_settle(c);
}

void s1_conn_drain_all(struct s1_conn_home *home)
{
    struct s1_conn *c;
    struct s1_conn *next;

    for (c = TAILQ_FIRST(&home->conns); c != NULL; c = next) {
        next = TAILQ_NEXT(c, link); /* (c may be freed) */
        s1_conn_drain(c);
    }
}

void s1_conn_resume(struct s1_conn *c)
{
    if (c->state == S1_CONN_WAIT)
        c->state = S1_CONN_READ;
    conn_process(c);
    conn_settle(c);
}
