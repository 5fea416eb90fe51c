/*
 * backend_redis.c - backend_ops on Redis (hiredis, blocking context with timeouts). An account
 * is the string key "user:<name>" holding its record (record.h). A batch is pipelined: every
 * command is appended to the output buffer, the buffer goes out in one write, and the replies
 * are read in order. CREATE = SET key record NX GET (nil: stored; else the record already there,
 * which is this creation's if it carries the same token: record.h), LOOKUP = GET key,
 * REPLACE = a Lua script that SETs the new hash only if GET still returns the expected one
 * (scripts run atomically, and their writes go to the AOF like any other).
 * Durability is the server's job: with appendfsync always, Redis fsyncs the AOF before it
 * sends a write's reply, so an "OK" here is on disk.
 *
 * With redis-sentinel:// the primary is found by asking the Sentinels in turn (SENTINEL
 * get-master-addr-by-name, after AUTH with the Sentinels' own password when server2 has one),
 * and checked to say it is a primary (ROLE) before it is used. A
 * failover is followed by connecting anew: the batch that meets a closed connection, or a
 * READONLY or MASTERDOWN error (the node was demoted, or lost its primary), reports the
 * connection unusable, and the next connect asks the Sentinels again. With --redis-wait N a
 * batch that wrote sends WAIT N after its commands, and a write is answered OK only if at least
 * N replicas have it: the old primary of a failover cannot acknowledge what the new one lacks.
 * With Sentinels N is also at least the replicas the primary lists online, and a primary they
 * voted down while it still ran is fenced off by asking its former replicas (fence_check).
 * With redis:// and no --redis-wait, N is 1 if the primary lists replicas, else 0: asked at
 * connect and again before a write once the last answer is ROLE_RECHECK_MS old, as Redis
 * itself counts its good replicas again every second for min-replicas-to-write.
 *
 * The change feed (backend.h): a REPLACE is a Lua script that, if the record is still the
 * expected one, appends the user to the stream "s2:changes" (XADD with the id "0-*": Redis
 * numbers the entries 0-1, 0-2, ... so an entry's sequence part is the change's number) and
 * then writes the record; it returns the entry's id. Each server2 is a field of the hash
 * "s2:peers": its name -> "APPLIED EXPIRES_MS", the expiry on the Redis server's own clock
 * (TIME), written and judged inside scripts so that one clock decides every lease.
 */
#include "backend.h"

#include <hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "clock.h"
#include "log.h"
#include "record.h"
#include "redislink.h"
#include "xalloc.h"

#define WAIT_TIMEOUT_MS 1000 /* WAIT's bound, at most half the URL's io_timeout_ms */
#define ROLE_RECHECK_MS 1000 /* how old the replica count may be before a write */
#define FENCE_REPLICAS_MAX 16 /* replicas a fence check looks at (--redis-wait's bound too) */
#define FENCE_HOST_MAX BACKEND_URL_HOST_MAX /* an address as ROLE and the Sentinels give it */
#define FENCE_PROBE_MS 500    /* connect, read and write bound of a probe of another node */
#define REPLID_LEN 40         /* a replication id, hex */
#define KEY_PREFIX "user:"
#define KEY_PREFIX_LEN (sizeof(KEY_PREFIX) - 1)
#define REPLACE_SCRIPT                                                                             \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "                                              \
    "redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0"
#define FAIL_PREFIX "fail:"
#define FAIL_PREFIX_LEN (sizeof(FAIL_PREFIX) - 1)
/* KEYS: fail:NAME, expiring at the user's TAT; ARGV: DUR/N in ms. TAT = max(TAT, now) + DUR/N,
 * by the key's remaining life: no clock is read in the script. */
#define FAIL_SCRIPT                                                                                \
    "local t = redis.call('PTTL', KEYS[1]) if t < 0 then t = 0 end "                               \
    "t = t + tonumber(ARGV[1]) redis.call('SET', KEYS[1], '1', 'PX', t) return t"
#define FEED_KEY "s2:changes"
#define PEERS_KEY "s2:peers"
#define FEED_MAXLEN "100000" /* entries kept (about); a reader further behind forgets all */
/* KEYS: the user's key, the feed; ARGV: expected record, new record, user. Returns the
 * feed entry's id ("0-N"), or 0 if the record was not the expected one. */
#define CHANGE_SCRIPT                                                                              \
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "                                 \
    "local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', '" FEED_MAXLEN "', '0-*', 'u', "      \
    "ARGV[3]) "                                                                                    \
    "redis.call('SET', KEYS[1], ARGV[2]) return id"
#define NOW_MS_LUA                                                                                 \
    "local t = redis.call('TIME') "                                                                \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
/* KEYS: the registry; ARGV: peer, applied, lease_ms (0: leave). Also forgets registrations
 * that ran out a minute ago. */
#define RENEW_SCRIPT                                                                               \
    NOW_MS_LUA                                                                                     \
    "if tonumber(ARGV[3]) == 0 then redis.call('HDEL', KEYS[1], ARGV[1]) return now end "        \
    "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3]))) "         \
    "local all = redis.call('HGETALL', KEYS[1]) "                                                  \
    "for i = 1, #all, 2 do "                                                                       \
    "local e = tonumber(string.match(all[i + 1], ' (%d+)$')) "                                     \
    "if e == nil or e + 60000 < now then redis.call('HDEL', KEYS[1], all[i]) end end "            \
    "return now"
/* KEYS: the registry; ARGV: a change number. The live peers that have not applied it. */
#define BEHIND_SCRIPT                                                                              \
    NOW_MS_LUA                                                                                     \
    "local seq = tonumber(ARGV[1]) local n = 0 "                                                   \
    "local all = redis.call('HGETALL', KEYS[1]) "                                                  \
    "for i = 1, #all, 2 do "                                                                       \
    "local a, e = string.match(all[i + 1], '^(%d+) (%d+)$') "                                      \
    "if a == nil or (tonumber(e) > now and tonumber(a) < seq) then n = n + 1 end end "            \
    "return n"

/* One connection: its context and how many replicas a write must reach (--redis-wait). */
struct rconn {
    struct redislink *c;
    const struct backend_url *u;
    unsigned io_ms;   /* reads and writes are bounded by this (a blocking XREAD must end first) */
    unsigned wait;
    bool wait_auto;   /* --redis-wait not given with redis://: wait follows the node's replicas */
    bool fence;       /* redis-sentinel://: wait for every replica listed; see fence_check */
    uint64_t role_ns; /* wait_auto, fence: when ROLE last answered (CLOCK_MONOTONIC) */
    unsigned listed;  /* fence: the replicas the node listed online at that answer */
    char host[FENCE_HOST_MAX + 1]; /* fence: the node's address, as the Sentinels name it */
    int port;
    unsigned sentinel_i; /* fence: the Sentinel that named it, asked first */
    unsigned wait_ms; /* WAIT's timeout: below the read timeout, so WAIT answers first */
    unsigned fail_burst;       /* the login limit (backend.h): N, 0 = off */
    unsigned fail_interval_ms; /* DUR / N */
};

/* Sends one command and checks for a status reply "OK"; -1 with a reason in err. */
static int simple_command(struct redislink *c, int argc, const char **argv, const size_t *lens,
                          const char *what, char *err)
{
    redisReply *r = redislink_command_argv(c, argc, argv, lens);

    if (r == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "%s: %s", what, c->errstr);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, BACKEND_ERR_LEN, "%s: %.*s", what, (int)(r->len > 120 ? 120 : r->len),
                 r->str);
        freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

/*
 * rediss://: the TLS context of the calling thread, made at its first connection (config.c has
 * made and dropped one at start, so a bad --backend-tls-* file was reported then). One per
 * thread, as loadgen has: with one shared by the workers, TSan saw a data race inside
 * libcrypto's certificate checks (ASN1_STRING_cmp under X509 verification). Every context made
 * stays on one list until exit, so none is lost with its thread.
 */
struct tls_ctx_node {
    struct ssl_ctx_st *ctx;
    struct tls_ctx_node *next;
};

static struct ssl_ctx_st *tls_context(const struct backend_url *u, char *err)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct tls_ctx_node *all;
    static _Thread_local struct ssl_ctx_st *mine;
    struct tls_ctx_node *n;

    if (mine != NULL)
        return mine;
    n = malloc(sizeof(*n));
    if (n == NULL) {
        snprintf(err, REDISLINK_TLS_ERR_LEN, "out of memory");
        return NULL;
    }
    n->ctx = redislink_tls_context(u->tls_ca, u->tls_cert, u->tls_key, err);
    if (n->ctx == NULL) {
        free(n);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    n->next = all;
    all = n;
    pthread_mutex_unlock(&lock);
    mine = n->ctx;
    return mine;
}

struct redislink *backend_redis_open(const char *host, int port, const char *socket,
                                     const struct backend_url *u, unsigned io_ms, char *err)
{
    char why[REDISLINK_TLS_ERR_LEN];
    struct ssl_ctx_st *tls = NULL;
    struct redislink *l;

    if (u->tls && (tls = tls_context(u, why)) == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "%.200s", why);
        return NULL;
    }
    l = redislink_connect(host, port, socket, BACKEND_CONNECT_TIMEOUT_MS, io_ms, tls, why);
    if (l == NULL)
        snprintf(err, BACKEND_ERR_LEN, "%.200s", why);
    return l;
}

int backend_redis_sentinel_auth(struct redislink *c, const struct backend_url *u, char *err)
{
    const char *argv[2] = {"AUTH", u->sentinel_password};
    size_t lens[2] = {4, strlen(u->sentinel_password)};

    if (!u->has_sentinel_password)
        return 0;
    return simple_command(c, 2, argv, lens, "AUTH", err);
}

/*
 * Asks the Sentinel at h for the primary of u->master: 0 with its address in host/port, or -1
 * with a reason in err.
 */
static int ask_sentinel(const struct backend_url *u, const struct backend_host *h, char *host,
                        size_t cap, int *port, char *err)
{
    struct redislink *c = backend_redis_open(h->host, h->port, NULL, u, u->io_timeout_ms, err);
    redisReply *r;
    char why[BACKEND_ERR_LEN];
    int rc = -1;

    if (c == NULL)
        return -1;
    if (backend_redis_sentinel_auth(c, u, why) < 0) {
        snprintf(err, BACKEND_ERR_LEN, "Sentinel %.64s:%u: %.160s", h->host, h->port, why);
        redislink_free(c);
        return -1;
    }
    r = redislink_command(c, "SENTINEL get-master-addr-by-name %s", u->master);
    if (r == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "Sentinel %.64s:%u: %s", h->host, h->port, c->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* e.g. NOAUTH: this Sentinel wants a password (--sentinel-password-file) */
        snprintf(err, BACKEND_ERR_LEN, "Sentinel %.64s:%u: %.*s", h->host, h->port,
                 (int)(r->len > 120 ? 120 : r->len), r->str);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
               r->element[0]->type != REDIS_REPLY_STRING ||
               r->element[1]->type != REDIS_REPLY_STRING || r->element[0]->len >= cap) {
        snprintf(err, BACKEND_ERR_LEN, "Sentinel %.64s:%u does not know master '%s'", h->host,
                 h->port, u->master);
    } else {
        memcpy(host, r->element[0]->str, r->element[0]->len);
        host[r->element[0]->len] = '\0';
        *port = atoi(r->element[1]->str);
        rc = *port > 0 && *port <= 65535 ? 0 : -1;
        if (rc < 0)
            snprintf(err, BACKEND_ERR_LEN, "Sentinel %.64s:%u gave a bad port", h->host, h->port);
    }
    if (r != NULL)
        freeReplyObject(r);
    redislink_free(c);
    return rc;
}

int backend_redis_sentinel_primary(const struct backend_url *u, char *host, size_t cap,
                                   int *port, char *err)
{
    for (unsigned i = 0; i < u->nhosts; i++)
        if (ask_sentinel(u, &u->hosts[i], host, cap, port, err) == 0)
            return 0;
    return -1;
}

/*
 * ROLE: whether c's node says it is a primary, and the replicas it lists if so (connected, or
 * connecting); 0, or -1 with err if it cannot say (c->err set: the connection failed).
 */
static int read_role(struct redislink *c, bool *primary, unsigned *replicas, char *err)
{
    redisReply *r = redislink_command(c, "ROLE");

    if (r == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "ROLE: %s", c->errstr);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, BACKEND_ERR_LEN, "ROLE: %.*s", (int)(r->len > 120 ? 120 : r->len),
                 r->str);
        freeReplyObject(r);
        return -1;
    }
    *primary = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               strcmp(r->element[0]->str, "master") == 0;
    *replicas = *primary && r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY
                    ? (unsigned)r->element[2]->elements
                    : 0;
    freeReplyObject(r);
    return 0;
}

/* Whether c says it is a primary (ROLE); -1 with err if it cannot say. */
static int is_primary(struct redislink *c, char *err)
{
    bool primary;
    unsigned replicas;

    if (read_role(c, &primary, &replicas, err) < 0)
        return -1;
    return primary ? 1 : 0;
}

/*
 * redis:// without --redis-wait: WAIT for 1 replica if rc's node lists any now, else none.
 * Decided at each connect, before a write once the last decision is ROLE_RECHECK_MS old, and
 * after a WAIT falls short: a replica that attaches later counts within a second, on the
 * connection there is; a write while a listed replica does not answer is unavailable, and once
 * the node no longer lists any, writes stop waiting. A node that will not answer ROLE (an ACL)
 * gets no WAIT, with a warning. 0 with the choice in rc->wait, or -1 with err if the
 * connection failed.
 */
static int auto_wait(struct rconn *rc, char *err)
{
    struct redislink *c = rc->c;
    unsigned *wait = &rc->wait;
    static atomic_int logged = -1; /* the last choice logged: each change is logged once */
    bool primary;
    unsigned replicas;

    if (read_role(c, &primary, &replicas, err) < 0) {
        if (c->err != 0)
            return -1;
        log_warn("cannot tell whether the primary has replicas (%s): writes do not WAIT; "
                 "give --redis-wait", err);
        err[0] = '\0';
        replicas = 0;
    }
    rc->role_ns = clock_now_ns();
    *wait = replicas > 0 ? 1 : 0;
    if (atomic_exchange(&logged, (int)*wait) != (int)*wait)
        log_info("the primary lists %u replica%s: writes WAIT for %u (--redis-wait not given)",
                 replicas, replicas == 1 ? "" : "s", *wait);
    return 0;
}

/* The credentials and database of u on a new context; -1 with err. */
static int log_in(struct redislink *c, const struct backend_url *u, char *err)
{
    if (u->has_password) {
        const char *argv[3] = {"AUTH", u->user, u->password};
        size_t lens[3] = {4, strlen(u->user), strlen(u->password)};
        if (u->user[0] != '\0') {
            if (simple_command(c, 3, argv, lens, "AUTH", err) < 0)
                return -1;
        } else {
            argv[1] = u->password;
            lens[1] = lens[2];
            if (simple_command(c, 2, argv, lens, "AUTH", err) < 0)
                return -1;
        }
    }
    {
        /* named, so that an operator sees server2's connections in CLIENT LIST; an ACL user
         * may not be allowed to: then unnamed */
        const char *argv[3] = {"CLIENT", "SETNAME", "server2"};
        size_t lens[3] = {6, 7, 7};
        if (simple_command(c, 3, argv, lens, "CLIENT SETNAME", err) < 0 && c->err != 0)
            return -1;
        err[0] = '\0';
    }
    if (u->redis_db != 0) {
        char db[16];
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, 0};
        lens[1] = (size_t)snprintf(db, sizeof(db), "%u", u->redis_db);
        if (simple_command(c, 2, argv, lens, "SELECT", err) < 0)
            return -1;
    }
    return 0;
}

/*
 * The primary the Sentinels name, logged in and checked to say it is one (the fence check comes
 * after), with its address and the Sentinel's index in rc; NULL with err from the last try.
 */
static struct redislink *connect_via_sentinels(const struct backend_url *u, struct rconn *rc,
                                           char *err)
{
    for (unsigned i = 0; i < u->nhosts; i++) {
        char host[BACKEND_URL_HOST_MAX + 1];
        int port;
        struct redislink *c;

        if (ask_sentinel(u, &u->hosts[i], host, sizeof(host), &port, err) < 0)
            continue;
        c = backend_redis_open(host, port, NULL, u, u->io_timeout_ms, err);
        if (c == NULL)
            continue;
        if (log_in(c, u, err) == 0) {
            int p = is_primary(c, err);
            if (p == 1) {
                log_debug("connected to the primary %s:%d, named by Sentinel %s:%u", host, port,
                          u->hosts[i].host, u->hosts[i].port);
                snprintf(rc->host, sizeof(rc->host), "%s", host);
                rc->port = port;
                rc->sentinel_i = i;
                return c;
            }
            if (p == 0)
                snprintf(err, BACKEND_ERR_LEN, "%.64s:%d, named by Sentinel %.64s:%u, is not a "
                         "primary", host, port, u->hosts[i].host, u->hosts[i].port);
        }
        redislink_free(c);
    }
    return NULL;
}

/* ---- the fence (redis-sentinel://) ---- */

struct node_addr {
    char host[FENCE_HOST_MAX + 1];
    int port;
};

/* What ROLE and INFO replication say of a node. */
struct node_state {
    bool primary;
    struct node_addr follows;                  /* a replica: its primary */
    struct node_addr rep[FENCE_REPLICAS_MAX];  /* a primary: the replicas it lists online */
    unsigned nrep;
    char replid[REPLID_LEN + 1], replid2[REPLID_LEN + 1]; /* its history, and the one before */
};

static void copy_str(char *dst, size_t cap, const redisReply *r)
{
    size_t n = r->type == REDIS_REPLY_STRING && r->len < cap ? r->len : 0;

    memcpy(dst, n > 0 ? r->str : "", n);
    dst[n] = '\0';
}

static int reply_port(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return (int)r->integer;
    return r->type == REDIS_REPLY_STRING ? atoi(r->str) : 0;
}

/* The value of "name:" in an INFO reply into out (empty if absent). */
static void info_field(const char *info, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = info;

    out[0] = '\0';
    while ((p = strstr(p, name)) != NULL) {
        if ((p == info || p[-1] == '\n') && p[nlen] == ':') {
            size_t n = strcspn(p + nlen + 1, "\r\n");
            if (n < cap) {
                memcpy(out, p + nlen + 1, n);
                out[n] = '\0';
            }
            return;
        }
        p += nlen;
    }
}

/* ROLE of c's node into st; 0, or -1 with err. */
static int read_state(struct redislink *c, struct node_state *st, char *err)
{
    redisReply *r = redislink_command(c, "ROLE");

    memset(st, 0, sizeof(*st));
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        snprintf(err, BACKEND_ERR_LEN, "ROLE: %s", r == NULL ? c->errstr : "unexpected reply");
        goto fail;
    }
    st->primary = strcmp(r->element[0]->str, "master") == 0;
    if (st->primary && r->element[2]->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->element[2]->elements && st->nrep < FENCE_REPLICAS_MAX; i++) {
            const redisReply *e = r->element[2]->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
                continue;
            copy_str(st->rep[st->nrep].host, sizeof(st->rep[0].host), e->element[0]);
            st->rep[st->nrep++].port = reply_port(e->element[1]);
        }
    } else if (!st->primary) {
        copy_str(st->follows.host, sizeof(st->follows.host), r->element[1]);
        st->follows.port = reply_port(r->element[2]);
    }
    freeReplyObject(r);
    return 0;
fail:
    if (r != NULL)
        freeReplyObject(r);
    return -1;
}

/* The replication ids of c's node (INFO replication) into st; 0, or -1 with err. */
static int read_replids(struct redislink *c, struct node_state *st, char *err)
{
    redisReply *r = redislink_command(c, "INFO replication");

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        snprintf(err, BACKEND_ERR_LEN, "INFO: %s", r == NULL ? c->errstr : "unexpected reply");
        goto fail;
    }
    info_field(r->str, "master_replid", st->replid, sizeof(st->replid));
    info_field(r->str, "master_replid2", st->replid2, sizeof(st->replid2));
    freeReplyObject(r);
    return 0;
fail:
    if (r != NULL)
        freeReplyObject(r);
    return -1;
}

static bool same_node(const struct node_addr *a, const char *host, int port)
{
    return a->port == port && strcmp(a->host, host) == 0;
}

/*
 * What one Sentinel says of the primary (rc's Sentinel asked first): the node it names, into
 * *named, and the replicas it knows, but for those it judges down or disconnected (SENTINEL
 * REPLICAS), up to FENCE_REPLICAS_MAX into out: their number, or -1 if no Sentinel answers.
 */
static int sentinel_view(const struct rconn *rc, struct node_addr *named, struct node_addr *out)
{
    const struct backend_url *u = rc->u;

    for (unsigned k = 0; k < u->nhosts; k++) {
        const struct backend_host *h = &u->hosts[(rc->sentinel_i + k) % u->nhosts];
        char err[BACKEND_ERR_LEN];
        struct redislink *c = backend_redis_open(h->host, h->port, NULL, u, FENCE_PROBE_MS, err);
        redisReply *m = NULL, *r = NULL;
        int n = 0;

        if (c == NULL)
            continue;
        if (backend_redis_sentinel_auth(c, u, err) < 0 ||
            (m = redislink_command(c, "SENTINEL get-master-addr-by-name %s", u->master)) == NULL ||
            (r = redislink_command(c, "SENTINEL REPLICAS %s", u->master)) == NULL ||
            r->type != REDIS_REPLY_ARRAY) {
            if (m != NULL)
                freeReplyObject(m);
            if (r != NULL)
                freeReplyObject(r);
            redislink_free(c);
            continue;
        }
        named->port = 0;
        if (m->type == REDIS_REPLY_ARRAY && m->elements == 2) {
            copy_str(named->host, sizeof(named->host), m->element[0]);
            named->port = reply_port(m->element[1]);
        }
        for (size_t i = 0; i < r->elements && n < FENCE_REPLICAS_MAX; i++) {
            const redisReply *e = r->element[i];
            char flags[128] = "";
            struct node_addr a = {.port = 0};
            if (e->type != REDIS_REPLY_ARRAY)
                continue;
            for (size_t j = 0; j + 1 < e->elements; j += 2) {
                const redisReply *key = e->element[j], *v = e->element[j + 1];
                if (key->type != REDIS_REPLY_STRING)
                    continue;
                if (strcmp(key->str, "ip") == 0)
                    copy_str(a.host, sizeof(a.host), v);
                else if (strcmp(key->str, "port") == 0)
                    a.port = reply_port(v);
                else if (strcmp(key->str, "flags") == 0)
                    copy_str(flags, sizeof(flags), v);
            }
            if (a.port > 0 && strstr(flags, "s_down") == NULL &&
                strstr(flags, "o_down") == NULL && strstr(flags, "disconnected") == NULL)
                out[n++] = a;
        }
        freeReplyObject(m);
        freeReplyObject(r);
        redislink_free(c);
        return n;
    }
    return -1;
}

/* Up to FENCE_REPLICAS_MAX nodes to look at, each once. */
struct node_set {
    struct node_addr a[FENCE_REPLICAS_MAX];
    unsigned n;
};

static void node_set_add(struct node_set *set, const struct node_addr *a)
{
    for (unsigned i = 0; i < set->n; i++)
        if (same_node(&set->a[i], a->host, a->port))
            return;
    if (a->port > 0 && set->n < FENCE_REPLICAS_MAX)
        set->a[set->n++] = *a;
}

/*
 * Looks at node a (see fence_check): true, with the reason in err, if it is a primary that is
 * not one rc's node (state self) took over from; a replica of another node adds that node to
 * set. A node that does not answer says nothing.
 */
static bool deposed_by(const struct rconn *rc, const struct node_state *self,
                       const struct node_addr *a, struct node_set *set, char *err)
{
    char why[BACKEND_ERR_LEN];
    struct node_state st;
    struct redislink *c = backend_redis_open(a->host, a->port, NULL, rc->u, FENCE_PROBE_MS, why);

    if (c == NULL)
        return false;
    if (log_in(c, rc->u, why) < 0 || read_state(c, &st, why) < 0 ||
        (st.primary && read_replids(c, &st, why) < 0)) {
        redislink_free(c);
        return false;
    }
    redislink_free(c);
    if (!st.primary) {
        if (!same_node(&st.follows, rc->host, rc->port))
            node_set_add(set, &st.follows);
        return false;
    }
    if (self->replid2[0] != '\0' && strcmp(self->replid2, st.replid) == 0)
        return false; /* rc's node took over from it: a former primary not yet told */
    snprintf(err, BACKEND_ERR_LEN, "%.64s:%d also says it is a primary%s", a->host, a->port,
             strcmp(st.replid2, self->replid) == 0 ? ", promoted from this one"
                                                    : ", of another history");
    return true;
}

/* A deposed primary, logged at most once a second (each connection finds it). */
static void log_deposed(const struct rconn *rc, const char *why)
{
    static _Atomic uint64_t last_ns;
    uint64_t now = clock_now_ns(), then = atomic_load(&last_ns);

    if (now - then >= 1000000000ull && atomic_compare_exchange_strong(&last_ns, &then, now))
        log_warn("the primary %s:%d is deposed: %s; connecting anew", rc->host, rc->port, why);
    else
        log_debug("the primary %s:%d is deposed: %s", rc->host, rc->port, why);
}

/*
 * redis-sentinel://: whether rc's node is still the primary, and how many replicas a write
 * must reach: every replica it lists online, at least --redis-wait. A primary the Sentinels
 * voted down while it still ran (it stalled longer than down-after-milliseconds) goes on taking
 * writes until they tell it otherwise, and its other replicas acknowledge them until they are
 * moved to the promoted one, which lacks them: WAIT 1 would let such writes be lost. Waiting
 * for every listed replica makes the first write after a promotion fall short; then, at a new
 * connection, and when the node lists fewer replicas (probe), this check looks at the node the
 * Sentinels name, the replicas they know that the node does not list online, and the nodes
 * those follow: if one of them says it is a primary, promoted from this one's history or of a
 * history this one did not take over, this node is deposed. Else one ROLE. 0 with rc->wait
 * set, or -1 with err: connect anew.
 */
static int fence_check(struct rconn *rc, bool probe, char *err)
{
    struct node_state self;
    struct node_addr named, known[FENCE_REPLICAS_MAX];
    struct node_set look = {.n = 0};
    int nknown;

    if (read_state(rc->c, &self, err) < 0)
        return -1;
    rc->role_ns = clock_now_ns();
    if (!self.primary) {
        snprintf(err, BACKEND_ERR_LEN, "%.64s:%d is no longer a primary", rc->host, rc->port);
        return -1;
    }
    if (probe || self.nrep < rc->listed) {
        if (read_replids(rc->c, &self, err) < 0)
            return -1;
        nknown = sentinel_view(rc, &named, known);
        if (nknown >= 0 && !same_node(&named, rc->host, rc->port))
            node_set_add(&look, &named);
        for (int i = 0; i < nknown; i++) {
            bool listed = same_node(&known[i], rc->host, rc->port);
            for (unsigned j = 0; j < self.nrep && !listed; j++)
                listed = same_node(&self.rep[j], known[i].host, known[i].port);
            if (!listed)
                node_set_add(&look, &known[i]);
        }
        for (unsigned i = 0; i < look.n; i++) { /* look.n grows with the nodes replicas follow */
            if (deposed_by(rc, &self, &look.a[i], &look, err)) {
                log_deposed(rc, err);
                return -1;
            }
        }
    }
    if (self.nrep != rc->listed)
        log_info("the primary %s:%d lists %u replica%s online: writes WAIT for %u", rc->host,
                 rc->port, self.nrep, self.nrep == 1 ? "" : "s",
                 self.nrep > rc->u->redis_wait ? self.nrep : rc->u->redis_wait);
    rc->listed = self.nrep;
    rc->wait = self.nrep > rc->u->redis_wait ? self.nrep : rc->u->redis_wait;
    return 0;
}

static void *redis_connect(const struct backend_url *u, char *err)
{
    struct redislink *c;
    struct rconn *rc;

    rc = calloc(1, sizeof(*rc));
    if (rc == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "out of memory");
        return NULL;
    }
    if (u->sentinel) {
        c = connect_via_sentinels(u, rc, err);
    } else {
        c = backend_redis_open(u->host, u->port, u->socket[0] != '\0' ? u->socket : NULL, u,
                               u->io_timeout_ms, err);
        if (c != NULL && log_in(c, u, err) < 0) {
            redislink_free(c);
            c = NULL;
        }
    }
    if (c == NULL) {
        free(rc);
        return NULL;
    }
    rc->c = c;
    rc->u = u;
    rc->io_ms = u->io_timeout_ms;
    rc->fail_burst = u->login_fail_burst;
    rc->fail_interval_ms = u->login_fail_interval_ms;
    rc->wait = u->redis_wait;
    rc->wait_auto = u->redis_wait_auto;
    rc->fence = u->sentinel;
    rc->role_ns = 0;
    if ((rc->wait_auto && auto_wait(rc, err) < 0) ||
        (rc->fence && fence_check(rc, true, err) < 0)) {
        redislink_free(c);
        free(rc);
        return NULL;
    }
    rc->wait_ms = u->io_timeout_ms / 2 < WAIT_TIMEOUT_MS ? u->io_timeout_ms / 2 : WAIT_TIMEOUT_MS;
    return rc;
}

/* An error reply that means the node is no longer the writable primary: connect anew. */
static bool demoted(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR &&
           ((r->len >= 8 && strncmp(r->str, "READONLY", 8) == 0) ||
            (r->len >= 10 && strncmp(r->str, "MASTERDOWN", 10) == 0));
}

/* Error replies that mean "try again later" rather than "this request is wrong". */
static bool transient_error(const redisReply *r)
{
    static const char *const prefixes[] = {"LOADING", "MISCONF",  "READONLY", "MASTERDOWN",
                                           "BUSY",    "TRYAGAIN", "NOAUTH"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i]);
        if (r->len >= n && strncmp(r->str, prefixes[i], n) == 0)
            return true;
    }
    return false;
}

/* A feed entry's id "0-N": 0 with N in *seq (N >= 1), or -1 if it is not one of ours. */
static int parse_feed_id(const char *s, size_t len, uint64_t *seq)
{
    uint64_t v = 0;

    if (len < 3 || len > 22 || s[0] != '0' || s[1] != '-')
        return -1;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v == 0)
        return -1;
    *seq = v;
    return 0;
}

static void apply_reply(struct backend_op *op, const redisReply *r, char *err)
{
    if (r->type == REDIS_REPLY_ERROR) {
        op->status = transient_error(r) ? BACKEND_ST_UNAVAILABLE : BACKEND_ST_ERROR;
        snprintf(err, BACKEND_ERR_LEN, "redis error reply: %.*s",
                 (int)(r->len > 120 ? 120 : r->len), r->str);
        return;
    }
    if (op->kind == BACKEND_OP_FAIL) {
        op->status = r->type == REDIS_REPLY_INTEGER ? BACKEND_ST_OK : BACKEND_ST_ERROR;
        return;
    }
    if (op->kind == BACKEND_OP_REPLACE) {
        op->change_seq = 0;
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
            op->status = BACKEND_ST_NOTFOUND;
        } else if (r->type == REDIS_REPLY_STRING && parse_feed_id(r->str, r->len,
                                                                    &op->change_seq) == 0) {
            op->status = BACKEND_ST_OK;
        } else {
            op->status = BACKEND_ST_ERROR;
            snprintf(err, BACKEND_ERR_LEN, "unexpected reply to the change script (type %d)",
                     r->type);
        }
        return;
    }
    if (op->kind == BACKEND_OP_CREATE) {
        op->stored[0] = '\0';
        if (r->type == REDIS_REPLY_NIL) {
            op->status = BACKEND_ST_OK; /* there was none: ours is stored */
        } else if (r->type == REDIS_REPLY_STRING) {
            if (record_same_creation(r->str, r->len, op->hash, strlen(op->hash)) &&
                r->len < BACKEND_HASH_MAX) {
                /* stored by an earlier sending of this creation: see confirm_resent */
                op->status = BACKEND_ST_OK;
                memcpy(op->stored, r->str, r->len);
                op->stored[r->len] = '\0';
            } else {
                op->status = BACKEND_ST_EXISTS;
            }
        } else {
            op->status = BACKEND_ST_ERROR;
            snprintf(err, BACKEND_ERR_LEN, "unexpected reply type %d to SET", r->type);
        }
        return;
    }
    if (r->type == REDIS_REPLY_NIL) {
        op->status = BACKEND_ST_NOTFOUND;
    } else if (r->type == REDIS_REPLY_STRING) {
        op->status = BACKEND_ST_OK;
        if (r->len < BACKEND_HASH_MAX) {
            memcpy(op->stored, r->str, r->len);
            op->stored[r->len] = '\0';
        } else {
            op->stored[0] = '\0'; /* cannot be a hash we made: verification will fail */
        }
    } else {
        op->status = BACKEND_ST_ERROR;
        snprintf(err, BACKEND_ERR_LEN, "unexpected reply type %d to GET", r->type);
    }
}

/*
 * WAIT's answer r: unless at least rc->wait replicas have the batch's writes, none of them is
 * answered OK (the primary has them, but a failover could lose them). Whether it fell short.
 */
static bool confirm_writes(struct backend_op *ops, size_t n, const redisReply *r,
                           const struct rconn *rc, char *err)
{
    long long got = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (got >= (long long)rc->wait)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind != BACKEND_OP_LOOKUP && ops[i].status == BACKEND_ST_OK)
            ops[i].status = BACKEND_ST_UNAVAILABLE;
    }
    if (got < 0)
        snprintf(err, BACKEND_ERR_LEN, "WAIT failed: reply type %d", r->type);
    else
        snprintf(err, BACKEND_ERR_LEN, "WAIT: %lld of %u replicas confirmed the writes in %u ms",
                 got, rc->wait, rc->wait_ms);
    return true;
}

/*
 * Appends the compare-and-set of user's record (REPLACE_SCRIPT): `update` stored iff the record
 * still is `expect`. Its reply is 1 if it wrote, 0 if not. 0, or -1 (out of memory).
 */
static int append_cas(struct redislink *c, const char *user, size_t user_len, const char *expect,
                      const char *update)
{
    char key[KEY_PREFIX_LEN + BACKEND_URL_USER_MAX + 1];
    const char *argv[6] = {"EVAL", REPLACE_SCRIPT, "1", key, expect, update};
    size_t lens[6] = {4, sizeof(REPLACE_SCRIPT) - 1, 1, KEY_PREFIX_LEN + user_len, strlen(expect),
                      strlen(update)};

    memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
    memcpy(key + KEY_PREFIX_LEN, user, user_len);
    return redislink_append_argv(c, 6, argv, lens) == REDIS_OK ? 0 : -1;
}

/*
 * Appends an account change (CHANGE_SCRIPT): op->hash stored iff the record still is
 * op->expect, and the user appended to the feed in the same script. 0, or -1 (out of memory).
 */
static int append_change(struct redislink *c, const struct backend_op *op)
{
    char key[KEY_PREFIX_LEN + BACKEND_URL_USER_MAX + 1];
    const char *argv[8] = {"EVAL", CHANGE_SCRIPT, "2", key, FEED_KEY, op->expect, op->hash,
                           op->user};
    size_t lens[8] = {4,
                      sizeof(CHANGE_SCRIPT) - 1,
                      1,
                      KEY_PREFIX_LEN + op->user_len,
                      sizeof(FEED_KEY) - 1,
                      strlen(op->expect),
                      strlen(op->hash),
                      op->user_len};

    memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
    memcpy(key + KEY_PREFIX_LEN, op->user, op->user_len);
    return redislink_append_argv(c, 8, argv, lens) == REDIS_OK ? 0 : -1;
}

/* A CREATE answered OK because an earlier sending of it had stored its record. */
static bool resent(const struct backend_op *op)
{
    return op->kind == BACKEND_OP_CREATE && op->status == BACKEND_ST_OK && op->stored[0] != '\0';
}

/*
 * With --redis-wait: a CREATE found stored by an earlier sending of the same creation wrote
 * nothing here, so this batch's WAIT did not cover it (WAIT counts a connection's own writes),
 * and that sending's own WAIT may have failed. Each such record is written again as it is (a
 * compare-and-set of the record with itself: a real write, replicated like any other), then
 * WAIT; unless the replicas confirm, the CREATE is UNAVAILABLE. Rare: only creations sent
 * again after a lost answer. 0, or -1 if the connection is unusable.
 */
static int confirm_resent(struct rconn *rc, struct backend_op *ops, size_t n, char *err)
{
    struct redislink *c = rc->c;
    redisReply *r;
    size_t sent = 0;

    for (size_t i = 0; i < n; i++) {
        if (!resent(&ops[i]))
            continue;
        if (append_cas(c, ops[i].user, ops[i].user_len, ops[i].stored, ops[i].stored) < 0)
            goto fail;
        sent++;
    }
    if (sent == 0)
        return 0;
    if (redislink_append(c, "WAIT %u %u", rc->wait, rc->wait_ms) != REDIS_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if (!resent(&ops[i]))
            continue;
        if (redislink_get_reply(c, (void **)&r) != REDIS_OK || r == NULL)
            goto fail;
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
            ops[i].status = BACKEND_ST_UNAVAILABLE; /* changed meanwhile, or failed */
        freeReplyObject(r);
    }
    if (redislink_get_reply(c, (void **)&r) != REDIS_OK || r == NULL)
        goto fail;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < (long long)rc->wait) {
        for (size_t i = 0; i < n; i++)
            if (resent(&ops[i]))
                ops[i].status = BACKEND_ST_UNAVAILABLE;
        snprintf(err, BACKEND_ERR_LEN, "WAIT: the replicas did not confirm a creation sent "
                                       "again");
    }
    freeReplyObject(r);
    return 0;
fail:
    snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "connection lost");
    return -1;
}

static bool has_writes(const struct backend_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == BACKEND_OP_CREATE || ops[i].kind == BACKEND_OP_REPLACE)
            return true;
    return false;
}

/* Appends the commands of op (LOOKUP: GET, and PTTL of fail:NAME with a login limit). */
static int append_op(struct rconn *rc, const struct backend_op *op)
{
    struct redislink *c = rc->c;
    char key[KEY_PREFIX_LEN + BACKEND_URL_USER_MAX + 1];
    char fkey[FAIL_PREFIX_LEN + BACKEND_URL_USER_MAX + 1];
    char ms[16];
    const char *argv[6];
    size_t lens[6];
    int argc;

    memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
    memcpy(key + KEY_PREFIX_LEN, op->user, op->user_len);
    memcpy(fkey, FAIL_PREFIX, FAIL_PREFIX_LEN);
    memcpy(fkey + FAIL_PREFIX_LEN, op->user, op->user_len);
    switch (op->kind) {
    case BACKEND_OP_REPLACE:
        return append_change(c, op);
    case BACKEND_OP_FAIL:
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = FAIL_SCRIPT;
        lens[1] = sizeof(FAIL_SCRIPT) - 1;
        argv[2] = "1";
        lens[2] = 1;
        argv[3] = fkey;
        lens[3] = FAIL_PREFIX_LEN + op->user_len;
        argv[4] = ms;
        lens[4] = (size_t)snprintf(ms, sizeof(ms), "%u", rc->fail_interval_ms);
        return redislink_append_argv(c, 5, argv, lens) == REDIS_OK ? 0 : -1;
    case BACKEND_OP_CREATE:
        argv[0] = "SET";
        lens[0] = 3;
        argv[2] = op->hash;
        lens[2] = strlen(op->hash);
        argv[3] = "NX";
        lens[3] = 2;
        argv[4] = "GET"; /* the record already there, if any: whose creation it is */
        lens[4] = 3;
        argc = 5;
        break;
    default:
        argv[0] = "GET";
        lens[0] = 3;
        argc = 2;
        break;
    }
    argv[1] = key;
    lens[1] = KEY_PREFIX_LEN + op->user_len;
    /* hiredis formats the command into its own buffer */
    if (redislink_append_argv(c, argc, argv, lens) != REDIS_OK)
        return -1;
    if (op->kind == BACKEND_OP_LOOKUP && rc->fail_burst > 0) {
        argv[0] = "PTTL";
        lens[0] = 4;
        argv[1] = fkey;
        lens[1] = FAIL_PREFIX_LEN + op->user_len;
        if (redislink_append_argv(c, 2, argv, lens) != REDIS_OK)
            return -1;
    }
    return 0;
}

/* PTTL of fail:NAME (the TAT is when it expires) into op->fail_ahead_ms. */
static void apply_fail_ttl(struct backend_op *op, const redisReply *r)
{
    long long ahead = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? r->integer : 0;

    op->fail_ahead_ms = ahead > UINT32_MAX ? UINT32_MAX : (uint32_t)ahead;
}

static int redis_batch(void *conn, struct backend_op *ops, size_t n, char *err)
{
    struct rconn *rc = conn;
    struct redislink *c = rc->c;
    bool writes = false, lost_primary = false, short_wait = false;
    redisReply *reply;

    err[0] = '\0';
    if ((rc->wait_auto || rc->fence) && has_writes(ops, n) &&
        clock_now_ns() - rc->role_ns >= ROLE_RECHECK_MS * 1000000ull &&
        (rc->fence ? fence_check(rc, false, err) : auto_wait(rc, err)) < 0)
        return -1; /* one round trip, at most once a second */
    for (size_t i = 0; i < n; i++) {
        if (ops[i].user_len > BACKEND_URL_USER_MAX) {
            snprintf(err, BACKEND_ERR_LEN, "username too long");
            return -1;
        }
        /* (a FAIL is not waited for: a charge lost in a failover is one guess more) */
        writes = writes || ops[i].kind == BACKEND_OP_CREATE || ops[i].kind == BACKEND_OP_REPLACE;
        ops[i].fail_ahead_ms = 0;
        if (append_op(rc, &ops[i]) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "out of memory");
            return -1;
        }
    }
    writes = writes && rc->wait > 0;
    if (writes && redislink_append(c, "WAIT %u %u", rc->wait, rc->wait_ms) != REDIS_OK) {
        snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "out of memory");
        return -1;
    }
    for (size_t i = 0; i <= n; i++) {
        unsigned replies = i == n ? (writes ? 1 : 0)
                                  : ops[i].kind == BACKEND_OP_LOOKUP && rc->fail_burst > 0 ? 2
                                                                                           : 1;
        for (unsigned k = 0; k < replies; k++) {
            reply = NULL;
            if (redislink_get_reply(c, (void **)&reply) != REDIS_OK || reply == NULL) {
                snprintf(err, BACKEND_ERR_LEN, "%s",
                         c->errstr[0] ? c->errstr : "connection lost");
                return -1;
            }
            lost_primary = lost_primary || demoted(reply);
            if (i == n)
                short_wait = confirm_writes(ops, n, reply, rc, err);
            else if (k == 1)
                apply_fail_ttl(&ops[i], reply);
            else
                apply_reply(&ops[i], reply, err);
            freeReplyObject(reply);
        }
    }
    if (lost_primary) {
        snprintf(err, BACKEND_ERR_LEN, "the node is no longer a writable primary; connecting "
                                       "anew");
        return -1;
    }
    if (short_wait && (rc->wait_auto || rc->fence)) {
        /* a replica that left for good would otherwise fail every write from now on; with
         * Sentinels, a promotion elsewhere shows first as a WAIT that falls short */
        char why[BACKEND_ERR_LEN];
        if ((rc->fence ? fence_check(rc, true, why) : auto_wait(rc, why)) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "%s", why);
            return -1;
        }
    }
    return rc->wait > 0 ? confirm_resent(rc, ops, n, err) : 0;
}

static void redis_close(void *conn)
{
    struct rconn *rc = conn;

    redislink_free(rc->c);
    free(rc);
}

static int redis_ping(void *conn)
{
    struct rconn *rc = conn;
    redisReply *r = redislink_command(rc->c, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS ? 0 : -1;
    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

/* ---- the change feed ---- */

/* A reply that is not an error: else -1 with err (c->err set: the connection failed). */
static redisReply *feed_command(struct rconn *rc, int argc, const char **argv, const size_t *lens,
                                const char *what, char *err)
{
    redisReply *r = redislink_command_argv(rc->c, argc, argv, lens);

    if (r == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "%s: %s", what, rc->c->errstr);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, BACKEND_ERR_LEN, "%s: %.*s", what, (int)(r->len > 120 ? 120 : r->len),
                 r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Entry e of a stream reply ([id, [field, value, ...]]) into out; -1 if malformed. */
static int parse_entry(const redisReply *e, struct backend_change *out)
{
    const redisReply *f;

    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
        return -1;
    if (parse_feed_id(e->element[0]->str, e->element[0]->len, &out->seq) < 0)
        return -1;
    f = e->element[1];
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        const redisReply *k = f->element[i], *v = f->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && k->len == 1 && k->str[0] == 'u' &&
            v->type == REDIS_REPLY_STRING && v->len >= 1 && v->len <= ACCOUNT_USER_MAX) {
            out->user_len = (uint8_t)v->len;
            memcpy(out->user, v->str, v->len);
            return 0;
        }
    }
    return -1;
}

static int redis_feed_head(void *conn, uint64_t *seq, char *err)
{
    const char *argv[6] = {"XREVRANGE", FEED_KEY, "+", "-", "COUNT", "1"};
    size_t lens[6] = {9, sizeof(FEED_KEY) - 1, 1, 1, 5, 1};
    struct backend_change ch;
    redisReply *r = feed_command(conn, 6, argv, lens, "XREVRANGE", err);
    int rc = 0;

    if (r == NULL)
        return -1;
    *seq = 0;
    if (r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, BACKEND_ERR_LEN, "XREVRANGE: unexpected reply type %d", r->type);
        rc = -1;
    } else if (r->elements > 0) {
        if (parse_entry(r->element[0], &ch) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "the stream %s holds an entry server2 did not write",
                     FEED_KEY);
            rc = -1;
        } else {
            *seq = ch.seq;
        }
    }
    freeReplyObject(r);
    return rc;
}

static int redis_feed_read(void *conn, uint64_t after, unsigned wait_ms,
                           struct backend_change *out, size_t cap, char *err)
{
    struct rconn *rc = conn;
    char count[24], block[24], from[32];
    /* XREAD COUNT n [BLOCK ms] STREAMS key id; without BLOCK when wait_ms is 0 (BLOCK 0 would
     * wait for ever) */
    const char *argv[8] = {"XREAD", "COUNT", count, "BLOCK", block, "STREAMS", FEED_KEY, from};
    size_t lens[8] = {5, 5, 0, 5, 0, 7, sizeof(FEED_KEY) - 1, 0};
    redisReply *r;
    const redisReply *entries;
    int n = 0;

    if (wait_ms > rc->io_ms / 2)
        wait_ms = rc->io_ms / 2; /* answered before the read times out */
    lens[2] = (size_t)snprintf(count, sizeof(count), "%zu", cap);
    lens[4] = (size_t)snprintf(block, sizeof(block), "%u", wait_ms);
    lens[7] = (size_t)snprintf(from, sizeof(from), "0-%llu", (unsigned long long)after);
    if (wait_ms == 0) { /* the last three move over BLOCK ms */
        memmove(&argv[3], &argv[5], 3 * sizeof(argv[0]));
        memmove(&lens[3], &lens[5], 3 * sizeof(lens[0]));
    }
    r = feed_command(rc, wait_ms == 0 ? 6 : 8, argv, lens, "XREAD", err);
    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
        r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2 ||
        r->element[0]->element[1]->type != REDIS_REPLY_ARRAY) {
        snprintf(err, BACKEND_ERR_LEN, "XREAD: unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    entries = r->element[0]->element[1];
    for (size_t i = 0; i < entries->elements && (size_t)n < cap; i++) {
        if (parse_entry(entries->element[i], &out[n]) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "the stream %s holds an entry server2 did not write",
                     FEED_KEY);
            freeReplyObject(r);
            return -1;
        }
        n++;
    }
    freeReplyObject(r);
    return n;
}

static int redis_feed_renew(void *conn, const char *peer, uint64_t applied, unsigned lease_ms,
                            char *err)
{
    char a[24], l[16];
    const char *argv[7] = {"EVAL", RENEW_SCRIPT, "1", PEERS_KEY, peer, a, l};
    size_t lens[7] = {4, sizeof(RENEW_SCRIPT) - 1, 1, sizeof(PEERS_KEY) - 1, strlen(peer), 0, 0};
    redisReply *r;

    lens[5] = (size_t)snprintf(a, sizeof(a), "%llu", (unsigned long long)applied);
    lens[6] = (size_t)snprintf(l, sizeof(l), "%u", lease_ms);
    r = feed_command(conn, 7, argv, lens, "the registry's renewal", err);
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

static int redis_feed_behind(void *conn, uint64_t seq, unsigned *count, char *err)
{
    char q[24];
    const char *argv[5] = {"EVAL", BEHIND_SCRIPT, "1", PEERS_KEY, q};
    size_t lens[5] = {4, sizeof(BEHIND_SCRIPT) - 1, 1, sizeof(PEERS_KEY) - 1, 0};
    redisReply *r;
    int rc = 0;

    lens[4] = (size_t)snprintf(q, sizeof(q), "%llu", (unsigned long long)seq);
    r = feed_command(conn, 5, argv, lens, "the registry's check", err);
    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
        *count = (unsigned)r->integer;
    } else {
        snprintf(err, BACKEND_ERR_LEN, "the registry's check: unexpected reply type %d", r->type);
        rc = -1;
    }
    freeReplyObject(r);
    return rc;
}

/* ---- the admin's listing ---- */

#define LIST_PAGE "500" /* SCAN's COUNT hint, and so about the keys one MGET reads */

/* The keys of one SCAN page (an array of strings) read with MGET and handed to cb. */
static int list_page(struct rconn *rc, const redisReply *keys, backend_list_cb cb, void *arg,
                     char *err)
{
    size_t n = keys->elements;
    const char **argv = xcalloc(n + 1, sizeof(*argv));
    size_t *lens = xcalloc(n + 1, sizeof(*lens));
    char rec[BACKEND_HASH_MAX];
    redisReply *r;
    int ret = 0;

    argv[0] = "MGET";
    lens[0] = 4;
    for (size_t i = 0; i < n; i++) {
        argv[i + 1] = keys->element[i]->str;
        lens[i + 1] = keys->element[i]->len;
    }
    r = feed_command(rc, (int)(n + 1), argv, lens, "MGET", err);
    free(argv);
    free(lens);
    if (r == NULL)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        snprintf(err, BACKEND_ERR_LEN, "MGET: unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    for (size_t i = 0; i < n && ret == 0; i++) {
        const redisReply *k = keys->element[i], *v = r->element[i];
        if (v->type != REDIS_REPLY_STRING ||
            !account_username_valid(k->str + KEY_PREFIX_LEN, k->len - KEY_PREFIX_LEN))
            continue; /* deleted since the SCAN, or not an account's key */
        if (v->len < sizeof(rec)) {
            memcpy(rec, v->str, v->len);
            rec[v->len] = '\0';
        } else {
            rec[0] = '\0';
        }
        if (cb(arg, k->str + KEY_PREFIX_LEN, k->len - KEY_PREFIX_LEN, rec) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "the listing was stopped");
            ret = -1;
        }
    }
    freeReplyObject(r);
    return ret;
}

/*
 * SCAN MATCH user:* over the whole keyspace (a key may come twice across pages: SCAN's
 * promise), each page's values read with one MGET.
 */
static int redis_list(void *conn, backend_list_cb cb, void *arg, char *err)
{
    struct rconn *rc = conn;
    char cursor[32] = "0";

    do {
        const char *argv[6] = {"SCAN", cursor, "MATCH", KEY_PREFIX "*", "COUNT", LIST_PAGE};
        size_t lens[6] = {4, strlen(cursor), 5, KEY_PREFIX_LEN + 1, 5, sizeof(LIST_PAGE) - 1};
        redisReply *r = feed_command(rc, 6, argv, lens, "SCAN", err);
        redisReply *keys;
        int ok = 0;

        if (r == NULL)
            return -1;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof(cursor) ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(err, BACKEND_ERR_LEN, "SCAN: unexpected reply");
            freeReplyObject(r);
            return -1;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
        keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++)
            if (keys->element[i]->type != REDIS_REPLY_STRING) {
                snprintf(err, BACKEND_ERR_LEN, "SCAN: a key that is not a string");
                ok = -1;
            }
        if (ok == 0 && keys->elements > 0)
            ok = list_page(rc, keys, cb, arg, err);
        freeReplyObject(r);
        if (ok < 0)
            return -1;
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

const struct backend_ops backend_redis_ops = {
    .name = "redis",
    .thread_init = NULL,
    .thread_end = NULL,
    .connect = redis_connect,
    .batch = redis_batch,
    .close = redis_close,
    .ping = redis_ping,
    .feed_head = redis_feed_head,
    .feed_read = redis_feed_read,
    .feed_renew = redis_feed_renew,
    .feed_behind = redis_feed_behind,
    .feed_blocks = true,
    .list = redis_list,
};
