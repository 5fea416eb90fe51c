/*
 * sentinelwatch.c - see sentinelwatch.h. The subscription runs on a blocking connection
 * (redislink.h; TLS with rediss-sentinel://; logged in with the Sentinels' password first, when
 * server2 has one) whose socket is polled together with an eventfd, so that stopping never
 * waits for a Sentinel to speak.
 */
#include "sentinelwatch.h"

#include <errno.h>
#include <hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "redislink.h"
#include "xalloc.h"

#define CONNECT_TIMEOUT_MS 1000
#define RETRY_MS 500 /* between two attempts to subscribe */
#define AGREE_MS 3000     /* the longest a move waits for the Sentinels to agree */
#define AGREE_POLL_MS 100

struct sentinelwatch {
    pthread_t tid;
    const struct backend_url *url;
    struct backend_health *health;
    int stop_fd; /* eventfd: readable once sentinelwatch_stop was called */
};

bool sentinelwatch_names(const char *payload, size_t len, const char *master)
{
    size_t n = strlen(master);
    return len > n && memcmp(payload, master, n) == 0 && payload[n] == ' ';
}

/* Waits up to ms for fd to be readable; false once the watcher is told to stop. */
static bool wait_readable(struct sentinelwatch *w, int fd, int ms)
{
    struct pollfd pf[2] = {{.fd = w->stop_fd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    int n;

    do
        n = poll(pf, fd >= 0 ? 2 : 1, ms);
    while (n < 0 && errno == EINTR);
    return !(pf[0].revents & POLLIN);
}

/*
 * Waits (at most AGREE_MS) until the Sentinel a new connection would ask names the announced
 * primary new_host:new_port: the announcing Sentinel knows first, the others a moment later,
 * and a worker that reconnected before they agree would find the old primary, not yet
 * demoted, still saying it is one. False once the watcher is told to stop.
 */
static bool wait_agreement(struct sentinelwatch *w, const char *new_host, int new_port)
{
    char host[BACKEND_URL_HOST_MAX + 1];
    char err[BACKEND_ERR_LEN];
    int port;

    for (int waited = 0; waited < AGREE_MS; waited += AGREE_POLL_MS) {
        if (backend_redis_sentinel_primary(w->url, host, sizeof(host), &port, err) == 0 &&
            port == new_port && strcmp(host, new_host) == 0)
            return true;
        if (!wait_readable(w, -1, AGREE_POLL_MS))
            return false;
    }
    log_warn("the Sentinels did not agree on the new primary within %d ms; reconnecting anyway",
             AGREE_MS);
    return true;
}

/* A pushed message: ["message", "+switch-master", "MASTER OLDIP OLDPORT NEWIP NEWPORT"]. */
static bool on_message(struct sentinelwatch *w, const redisReply *r, const char *from)
{
    char master[BACKEND_URL_MASTER_MAX + 1];
    char old_host[BACKEND_URL_HOST_MAX + 1];
    char new_host[BACKEND_URL_HOST_MAX + 1];
    int old_port;
    int new_port;
    const redisReply *p;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0)
        return true;
    p = r->element[2];
    if (p->type != REDIS_REPLY_STRING || !sentinelwatch_names(p->str, p->len, w->url->master) ||
        sscanf(p->str, "%64s %255s %d %255s %d", master, old_host, &old_port, new_host,
               &new_port) != 5)
        return true;
    log_info("sentinel %s: the primary of '%s' moved from %s:%d to %s:%d; reconnecting", from,
             master, old_host, old_port, new_host, new_port);
    if (!wait_agreement(w, new_host, new_port))
        return false;
    backend_health_moved(w->health);
    return true;
}

/* Reads announcements from c until it fails or the watcher is told to stop (then false). */
static bool listen_on(struct sentinelwatch *w, struct redislink *c, const char *from)
{
    for (;;) {
        void *reply = NULL;

        /* bytes TLS has already read are not the socket's to show */
        if (!redislink_pending(c) && !wait_readable(w, c->fd, -1))
            return false;
        if (redislink_read(c) != REDIS_OK) {
            log_warn("sentinel %s: %s; subscribing elsewhere", from,
                     c->errstr[0] ? c->errstr : "connection lost");
            return true;
        }
        while (redislink_buffered_reply(c, &reply) == REDIS_OK && reply != NULL) {
            bool go_on = on_message(w, reply, from);
            freeReplyObject(reply);
            reply = NULL;
            if (!go_on)
                return false;
        }
        if (c->err) {
            log_warn("sentinel %s: %s; subscribing elsewhere", from, c->errstr);
            return true;
        }
    }
}

static void *sentinelwatch_thread_main(void *arg)
{
    struct sentinelwatch *w = arg;
    bool subscribed_before = false;
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the serving thread's */
    pthread_setname_np(pthread_self(), "s2-sentinel");
    for (unsigned i = 0;; i = (i + 1) % w->url->nhosts) {
        const struct backend_host *h = &w->url->hosts[i];
        char from[BACKEND_URL_HOST_MAX + 16];
        char err[BACKEND_ERR_LEN];
        struct redislink *c;
        redisReply *r;
        bool go_on = true;

        snprintf(from, sizeof(from), "%s:%u", h->host, h->port);
        c = backend_redis_open(h->host, h->port, NULL, w->url, CONNECT_TIMEOUT_MS, err);
        if (c == NULL) {
            log_debug("sentinel %s: cannot connect: %s", from, err);
        } else if (backend_redis_sentinel_auth(c, w->url, err) < 0) {
            log_debug("sentinel %s: %s", from, err);
        } else {
            r = redislink_command(c, "SUBSCRIBE +switch-master");
            if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
                log_debug("sentinel %s: watching +switch-master of '%s'", from, w->url->master);
                if (subscribed_before) /* an announcement may have gone by meanwhile */
                    backend_health_moved(w->health);
                subscribed_before = true;
                go_on = listen_on(w, c, from);
            } else {
                log_debug("sentinel %s: cannot subscribe: %s", from,
                          r == NULL                        ? c->errstr
                          : r->type == REDIS_REPLY_ERROR ? r->str
                                                           : "unexpected reply");
            }
            if (r != NULL)
                freeReplyObject(r);
        }
        redislink_free(c);
        if (!go_on || !wait_readable(w, -1, RETRY_MS))
            break;
    }
    return NULL;
}

struct sentinelwatch *sentinelwatch_start(const struct backend_url *url,
                                          struct backend_health *health)
{
    struct sentinelwatch *w = xcalloc(1, sizeof(*w));
    char ebuf[128];
    int e;

    w->url = url;
    w->health = health;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        log_error("cannot watch the Sentinels: eventfd: %s",
                  strerror_r(errno, ebuf, sizeof(ebuf)));
        free(w);
        return NULL;
    }
    e = pthread_create(&w->tid, NULL, sentinelwatch_thread_main, w);
    if (e != 0) {
        log_error("cannot watch the Sentinels: %s", strerror_r(e, ebuf, sizeof(ebuf)));
        close(w->stop_fd);
        free(w);
        return NULL;
    }
    return w;
}

void sentinelwatch_stop(struct sentinelwatch *w)
{
    uint64_t one = 1;

    if (w == NULL)
        return;
    if (write(w->stop_fd, &one, sizeof(one)) != sizeof(one))
        log_warn("cannot tell the Sentinel watcher to stop");
    pthread_join(w->tid, NULL);
    close(w->stop_fd);
    free(w);
}
