/* accesslog.c - see accesslog.h. */
#include "accesslog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "textput.h"
#include "xalloc.h"

static const char hex[] = "0123456789abcdef";

/* Whether a byte is escaped (in both forms): '"', '\\', < 0x20, >= 0x7f. */
static bool needs_escape(unsigned char ch)
{
    return ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x7f;
}

/* The length of the run of bytes at the start of s[0..n) that are written as they are. */
static size_t plain_run(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n && !needs_escape((unsigned char)s[i]))
        i++;
    return i;
}

size_t accesslog_escape_clf(const char *s, size_t n, char *out)
{
    char *p = out;

    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        size_t run = plain_run(s + i, n - i);
        if (run > 0) { /* (most targets and agents are one run: one copy) */
            memcpy(p, s + i, run);
            p += run;
            i += run - 1;
            continue;
        }
        *p++ = '\\'; /* (ch needs it: the run before it was empty) */
        *p++ = 'x';
        *p++ = hex[ch >> 4];
        *p++ = hex[ch & 15];
    }
    return (size_t)(p - out);
}

size_t accesslog_escape_json(const char *s, size_t n, char *out)
{
    char *p = out;

    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        size_t run = plain_run(s + i, n - i);
        if (run > 0) {
            memcpy(p, s + i, run);
            p += run;
            i += run - 1;
            continue;
        }
        if (ch == '"' || ch == '\\') {
            *p++ = '\\';
            *p++ = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            memcpy(p, "\\u00", 4);
            p[4] = hex[ch >> 4];
            p[5] = hex[ch & 15];
            p += 6;
        } else {
            *p++ = (char)ch;
        }
    }
    return (size_t)(p - out);
}

/* ns as milliseconds with microseconds: "12.345" */
static char *put_ms(char *p, uint64_t ns)
{
    uint64_t us = ns / 1000;
    unsigned frac = (unsigned)(us % 1000);

    p = textput_u64(p, us / 1000);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    return p;
}

/* A CLF field: the escaped text, or "-" when absent or empty. */
static char *put_clf(char *p, const char *s, size_t n, bool present)
{
    if (!present || n == 0)
        return textput_str(p, "-");
    return p + accesslog_escape_clf(s, n, p);
}

/* A JSON member: ,"name":"text" or ,"name":null when absent. */
static char *put_json(char *p, const char *name, const char *s, size_t n, bool present)
{
    *p++ = ',';
    *p++ = '"';
    p = textput_str(p, name);
    p = textput_str(p, "\":");
    if (!present)
        return textput_str(p, "null");
    *p++ = '"';
    p += accesslog_escape_json(s, n, p);
    *p++ = '"';
    return p;
}

static char *put_protocol(char *p, const struct accesslog_entry *e)
{
    p = textput_str(p, "HTTP/1.");
    *p++ = (char)('0' + (e->version_minor == 0 ? 0 : 1));
    return p;
}

static size_t format_request_clf(const struct accesslog_line *l, const struct accesslog_entry *e,
                                 char *out)
{
    char *p = out;

    p = textput_str(p, l->addr);
    p = textput_str(p, " - ");
    p = put_clf(p, e->user, e->user_len, e->user_len > 0);
    p = textput_str(p, " [");
    p = textput_str(p, l->time);
    p = textput_str(p, "] \"");
    if (e->has_head) {
        p += accesslog_escape_clf(e->method, e->method_len, p);
        *p++ = ' ';
        p += accesslog_escape_clf(e->target, e->target_len, p);
        *p++ = ' ';
        p = put_protocol(p, e);
    } else {
        *p++ = '-';
    }
    p = textput_str(p, "\" ");
    p = textput_u64(p, (uint64_t)e->status);
    *p++ = ' ';
    p = textput_u64(p, l->bytes);
    if (l->format == ACCESSLOG_COMBINED) {
        p = textput_str(p, " \"");
        p = put_clf(p, e->referer, e->referer_len, e->has_referer);
        p = textput_str(p, "\" \"");
        p = put_clf(p, e->ua, e->ua_len, e->has_ua);
        *p++ = '"';
    }
    *p++ = ' ';
    p = put_ms(p, l->duration_ns);
    *p++ = ' ';
    p = textput_str(p, l->id);
    *p++ = '\n';
    return (size_t)(p - out);
}

static size_t format_request_json(const struct accesslog_line *l, const struct accesslog_entry *e,
                                  char *out)
{
    char *p = out;

    p = textput_str(p, "{\"time\":\"");
    p = textput_str(p, l->time);
    p = textput_str(p, "\",\"addr\":\"");
    p = textput_str(p, l->addr);
    *p++ = '"';
    p = put_json(p, "user", e->user, e->user_len, e->user_len > 0);
    p = put_json(p, "method", e->method, e->method_len, e->has_head);
    p = put_json(p, "path", e->target, e->target_len, e->has_head);
    if (e->has_head) {
        p = textput_str(p, ",\"protocol\":\"");
        p = put_protocol(p, e);
        *p++ = '"';
    } else {
        p = textput_str(p, ",\"protocol\":null");
    }
    p = textput_str(p, ",\"status\":");
    p = textput_u64(p, (uint64_t)e->status);
    p = textput_str(p, ",\"bytes\":");
    p = textput_u64(p, l->bytes);
    p = put_json(p, "referer", e->referer, e->referer_len, e->has_referer);
    p = put_json(p, "user_agent", e->ua, e->ua_len, e->has_ua);
    p = textput_str(p, ",\"duration_ms\":");
    p = put_ms(p, l->duration_ns);
    p = textput_str(p, ",\"request_id\":\"");
    p = textput_str(p, l->id);
    p = textput_str(p, "\"}\n");
    return (size_t)(p - out);
}

size_t accesslog_format_request(const struct accesslog_line *l, const struct accesslog_entry *e,
                                char *out)
{
    if (l->format == ACCESSLOG_JSON)
        return format_request_json(l, e, out);
    return format_request_clf(l, e, out);
}

size_t accesslog_format_event(const struct accesslog_line *l, const char *event,
                              const char *user, size_t user_len, const char *detail, char *out)
{
    size_t dlen = detail == NULL ? 0 : strnlen(detail, ACCESSLOG_DETAIL_MAX);
    char *p = out;

    if (user_len > ACCESSLOG_USER_MAX)
        user_len = ACCESSLOG_USER_MAX;
    if (l->format == ACCESSLOG_JSON) {
        p = textput_str(p, "{\"time\":\"");
        p = textput_str(p, l->time);
        p = textput_str(p, "\",\"event\":\"");
        p += accesslog_escape_json(event, strnlen(event, ACCESSLOG_DETAIL_MAX), p);
        p = textput_str(p, "\",\"addr\":\"");
        p = textput_str(p, l->addr);
        *p++ = '"';
        p = put_json(p, "user", user, user_len, user != NULL);
        p = put_json(p, "detail", detail, dlen, detail != NULL);
        p = textput_str(p, ",\"request_id\":\"");
        p = textput_str(p, l->id);
        p = textput_str(p, "\"}\n");
        return (size_t)(p - out);
    }
    p = textput_str(p, l->addr);
    p = textput_str(p, " - ");
    p = put_clf(p, user, user_len, user != NULL);
    p = textput_str(p, " [");
    p = textput_str(p, l->time);
    p = textput_str(p, "] \"AUDIT ");
    p += accesslog_escape_clf(event, strnlen(event, ACCESSLOG_DETAIL_MAX), p);
    p = textput_str(p, "\" ");
    p = put_clf(p, detail, dlen, detail != NULL);
    *p++ = ' ';
    p = textput_str(p, l->id);
    *p++ = '\n';
    return (size_t)(p - out);
}

/* ---- entries ---- */

static uint16_t keep(char *dst, size_t cap, const char *src, size_t n)
{
    if (n > cap)
        n = cap;
    memcpy(dst, src, n);
    return (uint16_t)n;
}

void accesslog_entry_head(struct accesslog_entry *e, const char *buf,
                          const struct http_request *req, bool headers, uint64_t now_ns)
{
    e->start_ns = now_ns;
    e->status = 0;
    e->has_head = true;
    e->version_minor = req->version_minor;
    e->method_len = keep(e->method, sizeof(e->method), http_span_ptr(buf, req->method_tok),
                         req->method_tok.len);
    e->target_len = keep(e->target, sizeof(e->target), http_span_ptr(buf, req->target),
                         req->target.len);
    e->user_len = 0;
    e->has_referer = false;
    e->has_ua = false;
    e->referer_len = 0;
    e->ua_len = 0;
    if (!headers)
        return;
    if (req->user_agent >= 0) {
        const struct http_header *h = &req->headers[req->user_agent];
        e->has_ua = true;
        e->ua_len = keep(e->ua, sizeof(e->ua), http_span_ptr(buf, h->value), h->value.len);
    }
    if (req->referer >= 0) {
        const struct http_header *h = &req->headers[req->referer];
        e->has_referer = true;
        e->referer_len =
            keep(e->referer, sizeof(e->referer), http_span_ptr(buf, h->value), h->value.len);
    }
}

void accesslog_entry_blank(struct accesslog_entry *e, uint64_t now_ns)
{
    e->start_ns = now_ns;
    e->status = 0;
    e->has_head = false;
    e->has_referer = false;
    e->has_ua = false;
    e->version_minor = 1;
    e->method_len = e->target_len = e->referer_len = e->ua_len = e->user_len = 0;
}

void accesslog_entry_user(struct accesslog_entry *e, const char *user, size_t len)
{
    e->user_len = keep(e->user, sizeof(e->user), user, len);
}

void accesslog_addr_text(const struct sockaddr *sa, socklen_t len, char *out)
{
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, out, ACCESSLOG_ADDR_MAX) != NULL)
            return;
    } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
            inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], out, ACCESSLOG_ADDR_MAX) != NULL)
            return;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, out, ACCESSLOG_ADDR_MAX) != NULL)
            return;
    }
    strcpy(out, "-");
}

/* ---- the file, and the thread that writes it ---- */

_Static_assert(ACCESSLOG_QUEUE_MAX == 256 && ACCESSLOG_BUF_SIZE == 64 * 1024,
               "the message of lines_lost names 256 buffers (16 MiB)");

/* A buffer of lines handed to the writer (or free, in the pool). */
struct accesslog_buf {
    struct accesslog_buf *next;
    size_t len;
    char data[ACCESSLOG_BUF_SIZE];
};

/* Whether fd is something other than a regular file (a pipe, a terminal). */
static bool is_not_file(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && !S_ISREG(st.st_mode);
}

static int open_path(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* A write lost, or lines dropped: counted, and logged once per process. */
static void lines_lost(struct accesslog *l, const char *why, int err)
{
    char ebuf[128];

    if (l->write_errors != NULL)
        atomic_fetch_add_explicit(l->write_errors, 1, memory_order_relaxed);
    if (!atomic_exchange(&l->warned, true))
        log_error("access log: %s, lines dropped (counted in "
                  "server1_access_log_write_errors_total; said once)%s%s",
                  why, err == 0 ? "" : ": ", err == 0 ? "" : strerror_r(err, ebuf, sizeof(ebuf)));
}

/* How much of b[off..len) the next write takes: all, or to a pipe whole lines <= PIPE_BUF. */
static size_t chunk_len(const char *b, size_t off, size_t len, bool not_file)
{
    size_t n = len - off;
    const char *end;

    if (!not_file || n <= PIPE_BUF)
        return n;
    end = memrchr(b + off, '\n', PIPE_BUF);
    if (end != NULL)
        return (size_t)(end - (b + off)) + 1;
    end = memchr(b + off + PIPE_BUF, '\n', n - PIPE_BUF); /* a line longer than that */
    return end != NULL ? (size_t)(end - (b + off)) + 1 : n;
}

/* The writer: b's lines to fd (writer thread only). */
static void write_buf(struct accesslog *l, int fd, bool not_file, const struct accesslog_buf *b)
{
    size_t off = 0;

    while (off < b->len) {
        ssize_t n = write(fd, b->data + off, chunk_len(b->data, off, b->len, not_file));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            lines_lost(l, "write failed", n < 0 ? errno : 0);
            return;
        }
        off += (size_t)n;
    }
}

/*
 * The writer thread: takes every buffer handed so far, writes them in order, gives them back
 * to the pool; then takes a reopened file if one waits (what was handed before it went to the
 * old file). Ends once stopping and nothing is left.
 */
static void *writer_main(void *arg)
{
    struct accesslog *l = arg;
    int fd = l->fd;
    bool not_file = is_not_file(fd);

    pthread_setname_np(pthread_self(), "s1-accesslog");
    pthread_mutex_lock(&l->lock);
    for (;;) {
        struct accesslog_buf *batch;
        int next;

        while (l->queue == NULL && l->next_fd < 0 && !l->stopping) {
            l->idle = true;
            pthread_cond_broadcast(&l->drained);
            pthread_cond_wait(&l->wake, &l->lock);
        }
        l->idle = false;
        batch = l->queue;
        l->queue = NULL;
        l->queue_tail = NULL;
        next = l->next_fd;
        l->next_fd = -1;
        if (batch == NULL && next < 0 && l->stopping)
            break;
        pthread_mutex_unlock(&l->lock);
        for (struct accesslog_buf *b = batch; b != NULL; b = b->next)
            write_buf(l, fd, not_file, b);
        if (next >= 0) {
            if (fd != STDOUT_FILENO)
                close(fd);
            fd = next;
            not_file = is_not_file(fd);
        }
        pthread_mutex_lock(&l->lock);
        while (batch != NULL) { /* written: back to the pool */
            struct accesslog_buf *b = batch;
            batch = b->next;
            b->next = l->pool;
            l->pool = b;
            l->queued--;
        }
    }
    l->idle = true;
    pthread_cond_broadcast(&l->drained);
    pthread_mutex_unlock(&l->lock);
    if (fd != STDOUT_FILENO)
        close(fd);
    return NULL;
}

int accesslog_open(struct accesslog *l, const char *path, enum accesslog_format format,
                   unsigned nthreads, char *err)
{
    char ebuf[128];
    int rc;

    memset(l, 0, sizeof(*l));
    if (path != NULL && strcmp(path, "-") == 0)
        path = NULL;
    l->fd = path == NULL ? STDOUT_FILENO : open_path(path);
    if (l->fd < 0) {
        snprintf(err, ACCESSLOG_ERR_LEN, "--access-log: cannot open '%s': %s", path,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    l->format = format;
    l->path = path;
    l->next_fd = -1;
    if (getrandom(&l->boot, sizeof(l->boot), GRND_NONBLOCK) != sizeof(l->boot))
        l->boot = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16;
    atomic_init(&l->warned, false);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    pthread_cond_init(&l->drained, NULL);
    l->nthreads = nthreads;
    l->threads = xcalloc(nthreads, sizeof(*l->threads));
    for (unsigned i = 0; i < nthreads; i++) {
        struct accesslog_thread *t = &l->threads[i];
        t->log = l;
        t->index = i;
        t->time_s = -1;
        t->cur = xmalloc(sizeof(*t->cur));
        t->buf = t->cur->data;
        t->id_prefix_len = (size_t)snprintf(t->id_prefix, sizeof(t->id_prefix), "%08x-%u-",
                                            (unsigned)l->boot, i);
    }
    rc = pthread_create(&l->writer, NULL, writer_main, l);
    if (rc != 0) {
        snprintf(err, ACCESSLOG_ERR_LEN, "--access-log: cannot start its thread: %s",
                 strerror_r(rc, ebuf, sizeof(ebuf)));
        l->stopping = true; /* (accesslog_close: no thread to join) */
        accesslog_close(l);
        return -1;
    }
    l->started = true;
    return 0;
}

int accesslog_reopen(struct accesslog *l, char *err)
{
    char ebuf[128];
    int fd;
    int old;

    if (l->path == NULL)
        return 0;
    fd = open_path(l->path);
    if (fd < 0) {
        snprintf(err, ACCESSLOG_ERR_LEN, "cannot open '%s': %s", l->path,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    pthread_mutex_lock(&l->lock);
    old = l->next_fd; /* (two signals before the writer woke: the first's is not needed) */
    l->next_fd = fd;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    if (old >= 0)
        close(old);
    return 0;
}

void accesslog_drain(struct accesslog *l)
{
    pthread_mutex_lock(&l->lock);
    while (!l->idle || l->queue != NULL || l->next_fd >= 0)
        pthread_cond_wait(&l->drained, &l->lock);
    pthread_mutex_unlock(&l->lock);
}

void accesslog_close(struct accesslog *l)
{
    if (l == NULL || l->threads == NULL)
        return;
    if (l->started) {
        pthread_mutex_lock(&l->lock);
        l->stopping = true;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->writer, NULL); /* (it wrote what was handed, and closed its file) */
    } else if (l->fd != STDOUT_FILENO) {
        close(l->fd);
    }
    if (l->next_fd >= 0)
        close(l->next_fd);
    for (unsigned i = 0; i < l->nthreads; i++)
        free(l->threads[i].cur);
    while (l->pool != NULL) {
        struct accesslog_buf *b = l->pool;
        l->pool = b->next;
        free(b);
    }
    while (l->queue != NULL) { /* (only if the thread never ran) */
        struct accesslog_buf *b = l->queue;
        l->queue = b->next;
        free(b);
    }
    pthread_cond_destroy(&l->drained);
    pthread_cond_destroy(&l->wake);
    pthread_mutex_destroy(&l->lock);
    free(l->threads);
    l->threads = NULL;
}

/* ---- a thread's lines ---- */

uint64_t accesslog_next_id(struct accesslog_thread *t)
{
    return ++t->next_seq;
}

size_t accesslog_id_text(const struct accesslog_thread *t, uint64_t id, char *out)
{
    char *p = out;

    memcpy(p, t->id_prefix, t->id_prefix_len);
    p += t->id_prefix_len;
    p = textput_u64(p, id);
    *p = '\0';
    return (size_t)(p - out);
}

void accesslog_flush(struct accesslog_thread *t)
{
    struct accesslog *l = t->log;
    struct accesslog_buf *fresh = NULL;
    bool dropped = false;

    if (t->len == 0)
        return;
    t->cur->len = t->len;
    t->cur->next = NULL;
    pthread_mutex_lock(&l->lock);
    if (l->queued >= ACCESSLOG_QUEUE_MAX) {
        dropped = true; /* the disk is that far behind: these lines go, the thread does not wait */
    } else {
        if (l->queue_tail != NULL)
            l->queue_tail->next = t->cur;
        else
            l->queue = t->cur;
        l->queue_tail = t->cur;
        l->queued++;
        fresh = l->pool;
        if (fresh != NULL)
            l->pool = fresh->next;
        pthread_cond_signal(&l->wake);
    }
    pthread_mutex_unlock(&l->lock);
    if (dropped) {
        lines_lost(l, "the writer is 256 buffers (16 MiB) behind", 0);
    } else {
        t->cur = fresh != NULL ? fresh : xmalloc(sizeof(*t->cur));
        t->buf = t->cur->data;
    }
    t->len = 0;
}

/* Room for one more line of the longest kind, flushing first if there is not. */
static char *line_room(struct accesslog_thread *t)
{
    if (ACCESSLOG_BUF_SIZE - t->len < ACCESSLOG_LINE_MAX)
        accesslog_flush(t);
    return t->buf + t->len;
}

/*
 * The wall time at now_ns (monotonic) as the format wants it, into out (>= 40 bytes). The coarse
 * clock (no system call, no timer read) tells when a second has passed; then the offset between
 * wall and monotonic time is taken again (one precise read a second, not one a line).
 */
static const char *time_text(struct accesslog_thread *t, uint64_t now_ns, char *out)
{
    struct timespec ts;
    struct tm tm;
    time_t s;
    unsigned ms;
    char *p;
    int64_t wall_ns;

    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if ((int64_t)ts.tv_sec != t->time_s) {
        struct timespec mono;
        clock_gettime(CLOCK_REALTIME, &ts);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        t->wall_minus_mono_ns = ((int64_t)ts.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
                                ((int64_t)ts.tv_nsec - (int64_t)mono.tv_nsec);
    }
    wall_ns = (int64_t)now_ns + t->wall_minus_mono_ns;
    s = (time_t)(wall_ns / 1000000000);
    ts.tv_nsec = (long)(wall_ns % 1000000000);
    if ((int64_t)s != t->time_s) {
        long off;
        unsigned hh;
        unsigned mm;
        char sign;
        size_t n;
        localtime_r(&s, &tm);
        off = tm.tm_gmtoff;
        sign = off < 0 ? '-' : '+';
        off = off < 0 ? -off : off;
        hh = (unsigned)(off / 3600 % 100);
        mm = (unsigned)(off % 3600 / 60);
        n = strftime(t->clf_time, sizeof(t->clf_time) - 7, "%d/%b/%Y:%H:%M:%S", &tm);
        t->clf_time[n++] = ' ';
        t->clf_time[n++] = sign;
        t->clf_time[n++] = (char)('0' + hh / 10);
        t->clf_time[n++] = (char)('0' + hh % 10);
        t->clf_time[n++] = (char)('0' + mm / 10);
        t->clf_time[n++] = (char)('0' + mm % 10);
        t->clf_time[n] = '\0';
        strftime(t->iso_time, sizeof(t->iso_time), "%Y-%m-%dT%H:%M:%S", &tm);
        t->iso_zone[0] = sign;
        t->iso_zone[1] = (char)('0' + hh / 10);
        t->iso_zone[2] = (char)('0' + hh % 10);
        t->iso_zone[3] = ':';
        t->iso_zone[4] = (char)('0' + mm / 10);
        t->iso_zone[5] = (char)('0' + mm % 10);
        t->iso_zone[6] = '\0';
        t->time_s = (int64_t)s;
    }
    if (t->log->format != ACCESSLOG_JSON)
        return t->clf_time;
    ms = (unsigned)(ts.tv_nsec / 1000000);
    p = textput_str(out, t->iso_time);
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    p = textput_str(p, t->iso_zone);
    *p = '\0';
    return out;
}

void accesslog_request(struct accesslog_thread *t, const char *addr,
                       const struct accesslog_entry *e, uint64_t body_sent, uint64_t now_ns)
{
    char tbuf[40];
    char id[48];
    struct accesslog_line l = {.format = t->log->format, .addr = addr, .id = id,
                               .bytes = body_sent,
                               .duration_ns = now_ns > e->start_ns ? now_ns - e->start_ns : 0};
    char *out = line_room(t);

    l.time = time_text(t, now_ns, tbuf);
    accesslog_id_text(t, e->id, id);
    t->len += accesslog_format_request(&l, e, out);
}

void accesslog_event(struct accesslog_thread *t, const char *addr, const char *event,
                     const char *user, size_t user_len, const char *detail, uint64_t id)
{
    char tbuf[40];
    char idt[48];
    struct accesslog_line l = {.format = t->log->format, .addr = addr, .id = idt};
    char *out = line_room(t);

    l.time = time_text(t, clock_now_ns(), tbuf);
    accesslog_id_text(t, id, idt);
    t->len += accesslog_format_event(&l, event, user, user_len, detail, out);
}
