/*
 * s1_harness.h - server1's real handler behind one connection over a socketpair, for the unit
 * tests of the route modules (test_handler.c, test_route_*.c). The thread it gives the handler
 * has files under a temp root (a.txt, "hello\n", and sub/b.txt), no committer (--read-only), no
 * per-client limits, and a server2 client whose only server2 never answers (a port nothing
 * listens on): what a route answers before or without server2 can be asked, and an answer that
 * needs server2 is 503. h_ask sends one request on a new connection and returns the response.
 */
#ifndef S1_HARNESS_H
#define S1_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "../../../common/clock.h"
#include "../../../server1/authclient.h"
#include "../../../server1/conn.h"
#include "../../../server1/files.h"
#include "../../../server1/handler.h"
#include "../../../server1/metrics.h"
#include "../../../server1/mimetypes.h"

#define H_WAIT_NS (20 * 1000000000ull) /* a hard bound on each wait: the machine may be busy */

#define H_ALICE "Authorization: Basic YWxpY2U6cHc=\r\n" /* alice:pw */

struct harness {
    struct event_base *base;
    struct s1_config cfg;
    struct metrics metrics;
    struct metrics *all[1];
    struct mimetypes types;
    struct files files;
    char root[64];
    struct authclient_config acfg;
    struct s1_service svc;
    struct s1_handler_env env;
    struct timeval tv;
    struct s1_conn_home home;
    unsigned closed; /* conns freed */
    bool metrics_port; /* new connections come to --metrics-listen */
    char resp[65536]; /* the last response (NUL-terminated) */
    size_t resp_len;
    int status;      /* its status code */
    const char *body; /* its body, in resp */
};

static inline void h_on_closed(struct s1_conn_home *home)
{
    struct harness *h = (struct harness *)((char *)home - offsetof(struct harness, home));
    h->closed++;
}

static inline void h_write_file(const struct harness *h, const char *name, const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", h->root, name);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static inline struct harness *h_new(void)
{
    struct harness *h = calloc(1, sizeof(*h));
    struct sockaddr_in *sin;
    char err[FILES_ERR_LEN];
    char sub[96];

    assert_non_null(h);
    signal(SIGPIPE, SIG_IGN);
    h->base = event_base_new();
    assert_non_null(h->base);
    snprintf(h->root, sizeof(h->root), "/tmp/s1-harness.XXXXXX");
    assert_non_null(mkdtemp(h->root));
    h_write_file(h, "a.txt", "hello\n");
    snprintf(sub, sizeof(sub), "%s/sub", h->root);
    assert_int_equal(mkdir(sub, 0755), 0);
    h_write_file(h, "sub/b.txt", "bee\n");
    mimetypes_init_builtin(&h->types);
    assert_int_equal(files_init(&h->files, h->root, FILES_BUFFERED, &h->types, err), 0);

    h->cfg.max_header_bytes = 8192;
    h->cfg.max_body = 1 << 16;
    h->cfg.max_upload = 1 << 20;
    h->cfg.max_list = 100;
    h->cfg.header_timeout_us = 30 * 1000000ull;
    h->cfg.idle_timeout_us = 30 * 1000000ull;
    h->cfg.send_timeout_us = 30 * 1000000ull;
    h->cfg.upload_timeout_us = 30 * 1000000ull;
    h->cfg.min_rate = 1;
    h->cfg.min_rate_grace_us = 60 * 1000000ull;
    metrics_init(&h->metrics);
    h->all[0] = &h->metrics;

    /* one server2 that never answers: a port taken from the kernel and not listened on */
    sin = (struct sockaddr_in *)&h->acfg.servers[0].addr;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(1);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->acfg.servers[0].addr_len = sizeof(*sin);
    snprintf(h->acfg.servers[0].addr_str, sizeof(h->acfg.servers[0].addr_str), "127.0.0.1:1");
    h->acfg.nservers = 1;
    h->acfg.nconns = 1;
    h->acfg.timeout_us = 1000000;
    h->acfg.max_inflight = 4;

    h->svc = (struct s1_service){.cfg = &h->cfg, .files = &h->files, .metrics = h->all,
                                 .nthreads = 1, .types = &h->types};
    h->env.svc = &h->svc;
    h->env.auth = authclient_new(h->base, &h->acfg, &h->metrics);
    assert_non_null(h->env.auth);
    h->env.resp_budget = (struct respbuf_budget){.limit = 1 << 20};

    h->tv = (struct timeval){.tv_sec = 30};
    h->home.base = h->base;
    h->home.cfg = &h->cfg;
    h->home.metrics = &h->metrics;
    h->home.header_tv = &h->tv;
    h->home.idle_tv = &h->tv;
    h->home.linger_tv = &h->tv;
    h->home.handler = &s1_handler;
    h->home.handler_arg = &h->env;
    h->home.closed = h_on_closed;
    httpdate_cache_init(&h->home.date);
    TAILQ_INIT(&h->home.conns);
    return h;
}

static inline void h_free(struct harness *h)
{
    char cmd[96];

    while (!TAILQ_EMPTY(&h->home.conns))
        s1_conn_free(TAILQ_FIRST(&h->home.conns));
    authclient_free(h->env.auth);
    files_release(&h->files);
    mimetypes_release(&h->types);
    event_base_free(h->base);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->root);
    assert_int_equal(system(cmd), 0);
    free(h);
}

/*
 * Whether resp holds a whole response: a head, and the body its Content-Length says (none
 * after a HEAD's, head_only).
 */
/* cmocka's per-test setup and teardown: a fresh harness in *state. */
static inline int h_setup(void **state)
{
    *state = h_new();
    return 0;
}

static inline int h_teardown(void **state)
{
    h_free(*state);
    return 0;
}

static inline bool h_whole(struct harness *h, bool head_only)
{
    char *end = memmem(h->resp, h->resp_len, "\r\n\r\n", 4);
    char *cl;
    size_t clen = 0;

    if (end == NULL)
        return false;
    *end = '\0'; /* (searched within the head only) */
    cl = strstr(h->resp, "Content-Length: ");
    if (cl != NULL)
        clen = strtoull(cl + 16, NULL, 10);
    *end = '\r';
    if (!head_only && h->resp_len < (size_t)(end + 4 - h->resp) + clen)
        return false;
    h->body = end + 4;
    h->status = atoi(h->resp + 9);
    return true;
}

/*
 * Sends req on a new connection (to --metrics-listen with h->metrics_port) and reads the
 * response into h->resp (status and body set); head_only: a HEAD (no body follows the head).
 * The connection is closed after.
 */
static inline void h_ask_as(struct harness *h, const char *req, bool head_only)
{
    uint64_t until = clock_now_ns() + H_WAIT_NS;
    uint8_t peer[RATELIMIT_ADDR_LEN] = {0};
    unsigned closed = h->closed;
    bool whole = false;
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    s1_conn_pub(s1_conn_new(&h->home, sv[0], peer, NULL, false, false))->metrics_only =
        h->metrics_port;
    assert_int_equal(write(sv[1], req, strlen(req)), (ssize_t)strlen(req));
    h->resp_len = 0;
    h->status = 0;
    h->body = NULL;
    while (!whole) {
        ssize_t n;
        assert_true(clock_now_ns() < until);
        event_base_loop(h->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        n = read(sv[1], h->resp + h->resp_len, sizeof(h->resp) - 1 - h->resp_len);
        if (n > 0)
            h->resp_len += (size_t)n;
        h->resp[h->resp_len] = '\0';
        whole = h_whole(h, head_only);
        if (!whole)
            usleep(200);
    }
    close(sv[1]);
    while (h->closed == closed) {
        assert_true(clock_now_ns() < until);
        event_base_loop(h->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (h->closed == closed)
            usleep(200);
    }
}

static inline void h_ask(struct harness *h, const char *req)
{
    h_ask_as(h, req, false);
}

/* Whether the last response's head has line (without its CRLF). */
static inline bool h_has(const struct harness *h, const char *line)
{
    char want[256];
    const char *end = strstr(h->resp, "\r\n\r\n");

    snprintf(want, sizeof(want), "\r\n%s\r\n", line);
    return end != NULL && memmem(h->resp, (size_t)(end + 2 - h->resp), want, strlen(want)) != NULL;
}

#endif /* S1_HARNESS_H */
