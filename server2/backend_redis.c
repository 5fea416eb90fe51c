/*
 * backend_redis.c - backend_ops on Redis (hiredis, blocking context with timeouts). An account
 * is the string key "user:<name>" holding the argon2id hash. A batch is pipelined: every
 * command is appended to the output buffer, the buffer goes out in one write, and the replies
 * are read in order. CREATE = SET key hash NX (nil reply: the name is taken), LOOKUP = GET key,
 * REPLACE = a Lua script that SETs the new hash only if GET still returns the expected one
 * (scripts run atomically, and their writes go to the AOF like any other).
 * Durability is the server's job: with appendfsync always, Redis fsyncs the AOF before it
 * sends a write's reply, so an "OK" here is on disk.
 */
#include "backend.h"

#include <hiredis.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#define KEY_PREFIX "user:"
#define KEY_PREFIX_LEN (sizeof(KEY_PREFIX) - 1)
#define REPLACE_SCRIPT                                                                             \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "                                              \
    "redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0"

static struct timeval ms_to_tv(int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

/* Sends one command and checks for a status reply "OK"; -1 with a reason in err. */
static int simple_command(redisContext *c, int argc, const char **argv, const size_t *lens,
                          const char *what, char *err)
{
    redisReply *r = redisCommandArgv(c, argc, argv, lens);

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

static void *redis_connect(const struct backend_url *u, char *err)
{
    redisContext *c;

    if (u->socket[0] != '\0')
        c = redisConnectUnixWithTimeout(u->socket, ms_to_tv(BACKEND_CONNECT_TIMEOUT_MS));
    else
        c = redisConnectWithTimeout(u->host, u->port, ms_to_tv(BACKEND_CONNECT_TIMEOUT_MS));
    if (c == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "cannot allocate a redis context");
        return NULL;
    }
    if (c->err) {
        snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr);
        goto fail;
    }
    if (redisSetTimeout(c, ms_to_tv(BACKEND_IO_TIMEOUT_MS)) != REDIS_OK) {
        snprintf(err, BACKEND_ERR_LEN, "cannot set the redis timeout: %s", c->errstr);
        goto fail;
    }
    if (u->has_password) {
        const char *argv[3] = {"AUTH", u->user, u->password};
        size_t lens[3] = {4, strlen(u->user), strlen(u->password)};
        if (u->user[0] != '\0') {
            if (simple_command(c, 3, argv, lens, "AUTH", err) < 0)
                goto fail;
        } else {
            argv[1] = u->password;
            lens[1] = lens[2];
            if (simple_command(c, 2, argv, lens, "AUTH", err) < 0)
                goto fail;
        }
    }
    if (u->redis_db != 0) {
        char db[16];
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, 0};
        lens[1] = (size_t)snprintf(db, sizeof(db), "%u", u->redis_db);
        if (simple_command(c, 2, argv, lens, "SELECT", err) < 0)
            goto fail;
    }
    return c;

fail:
    redisFree(c);
    return NULL;
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

static void apply_reply(struct backend_op *op, const redisReply *r, char *err)
{
    if (r->type == REDIS_REPLY_ERROR) {
        op->status = transient_error(r) ? BACKEND_ST_UNAVAILABLE : BACKEND_ST_ERROR;
        snprintf(err, BACKEND_ERR_LEN, "redis error reply: %.*s",
                 (int)(r->len > 120 ? 120 : r->len), r->str);
        return;
    }
    if (op->kind == BACKEND_OP_REPLACE) {
        if (r->type == REDIS_REPLY_INTEGER) {
            op->status = r->integer == 1 ? BACKEND_ST_OK : BACKEND_ST_NOTFOUND;
        } else {
            op->status = BACKEND_ST_ERROR;
            snprintf(err, BACKEND_ERR_LEN, "unexpected reply type %d to EVAL", r->type);
        }
        return;
    }
    if (op->kind == BACKEND_OP_CREATE) {
        if (r->type == REDIS_REPLY_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0) {
            op->status = BACKEND_ST_OK;
        } else if (r->type == REDIS_REPLY_NIL) {
            op->status = BACKEND_ST_EXISTS;
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

static int redis_batch(void *conn, struct backend_op *ops, size_t n, char *err)
{
    redisContext *c = conn;
    char key[KEY_PREFIX_LEN + BACKEND_URL_USER_MAX + 1];

    err[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        struct backend_op *op = &ops[i];
        const char *argv[6];
        size_t lens[6];
        int argc;

        if (op->user_len > BACKEND_URL_USER_MAX) {
            snprintf(err, BACKEND_ERR_LEN, "username too long");
            return -1;
        }
        memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
        memcpy(key + KEY_PREFIX_LEN, op->user, op->user_len);
        if (op->kind == BACKEND_OP_REPLACE) {
            argv[0] = "EVAL";
            lens[0] = 4;
            argv[1] = REPLACE_SCRIPT;
            lens[1] = sizeof(REPLACE_SCRIPT) - 1;
            argv[2] = "1";
            lens[2] = 1;
            argv[3] = key;
            lens[3] = KEY_PREFIX_LEN + op->user_len;
            argv[4] = op->expect;
            lens[4] = strlen(op->expect);
            argv[5] = op->hash;
            lens[5] = strlen(op->hash);
            if (redisAppendCommandArgv(c, 6, argv, lens) != REDIS_OK) {
                snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "out of memory");
                return -1;
            }
            continue;
        }
        if (op->kind == BACKEND_OP_CREATE) {
            argv[0] = "SET";
            lens[0] = 3;
            argv[2] = op->hash;
            lens[2] = strlen(op->hash);
            argv[3] = "NX";
            lens[3] = 2;
            argc = 4;
        } else {
            argv[0] = "GET";
            lens[0] = 3;
            argc = 2;
        }
        argv[1] = key;
        lens[1] = KEY_PREFIX_LEN + op->user_len;
        /* hiredis formats the command into its own buffer: key can be reused. */
        if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) {
            snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "out of memory");
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        void *reply = NULL;
        if (redisGetReply(c, &reply) != REDIS_OK || reply == NULL) {
            snprintf(err, BACKEND_ERR_LEN, "%s", c->errstr[0] ? c->errstr : "connection lost");
            return -1;
        }
        apply_reply(&ops[i], reply, err);
        freeReplyObject(reply);
    }
    return 0;
}

static void redis_close(void *conn)
{
    redisFree(conn);
}

static int redis_ping(void *conn)
{
    redisReply *r = redisCommand(conn, "PING");
    int rc = r != NULL && r->type == REDIS_REPLY_STATUS ? 0 : -1;
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

const struct backend_ops backend_redis_ops = {
    .name = "redis",
    .thread_init = NULL,
    .thread_end = NULL,
    .connect = redis_connect,
    .batch = redis_batch,
    .close = redis_close,
    .ping = redis_ping,
};
