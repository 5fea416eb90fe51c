/*
 * test_auth.c - server2's batch logic (auth.c) and backend session (backend.c) against a
 * fake backend_ops: mixed batches in one round trip, repeated names inside a batch, invalid
 * input that never reaches the database, backend failures -> UNAVAILABLE, reconnect
 * throttling, per-op errors, the auth cache (hit, and a changed stored hash), expired jobs
 * answered unworked, each answer handed on before the next hash, and unknown users checked
 * against the dummy hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <sodium.h>

#include "clock.h"
#include "frame.h"
#include "log.h"

#include "../../../server2/auth.h"
#include "../../../server2/record.h"

#define FAKE_MAX_USERS 64

/* The fake database and what the tests make it do. Single-threaded. */
static struct {
    char users[FAKE_MAX_USERS][ACCOUNT_USER_MAX + 1];
    char hashes[FAKE_MAX_USERS][BACKEND_HASH_MAX];
    int nusers;
    bool fail_connect;
    bool fail_batch; /* batch() returns -1: the connection broke */
    int fail_next;   /* ... for this many more calls only */
    bool ping_fails; /* ping() says the connection is dead */
    int fail_after_apply; /* a batch holding an op of this kind is applied, then returns -1
                           * (the connection broke before the replies): once */
    int pings;
    const char *error_user;       /* ops on this user fail alone with BACKEND_ST_ERROR */
    const char *unavailable_user; /* ... with BACKEND_ST_UNAVAILABLE */
    int connects;
    int closes;
    int batches;
    int last_n;
    int last_creates;
    int last_lookups;
    int open_conns;
    /* the login limit (backend.h): failures charged per name, each DUR/N of TAT ahead */
    char failed[FAKE_MAX_USERS][ACCOUNT_USER_MAX + 1];
    uint32_t ahead_ms[FAKE_MAX_USERS];
    int nfailed;
    int charges;
} fake;

static int fail_slot(const char *u)
{
    for (int i = 0; i < fake.nfailed; i++)
        if (strcmp(fake.failed[i], u) == 0)
            return i;
    assert_true(fake.nfailed < FAKE_MAX_USERS);
    snprintf(fake.failed[fake.nfailed], sizeof(fake.failed[0]), "%s", u);
    fake.ahead_ms[fake.nfailed] = 0;
    return fake.nfailed++;
}

static int fake_conn_token;
static struct backend_url fake_url;

static int find_user(const char *u)
{
    for (int i = 0; i < fake.nusers; i++)
        if (strcmp(fake.users[i], u) == 0)
            return i;
    return -1;
}

static void *fake_connect(const struct backend_url *url, char *err)
{
    (void)url;
    if (fake.fail_connect) {
        snprintf(err, BACKEND_ERR_LEN, "fake: connection refused");
        return NULL;
    }
    fake.connects++;
    fake.open_conns++;
    return &fake_conn_token;
}

static int fake_batch(void *conn, struct backend_op *ops, size_t n, char *err)
{
    bool seen_lookup = false;

    assert_ptr_equal(conn, &fake_conn_token);
    fake.batches++;
    fake.last_n = (int)n;
    fake.last_creates = 0;
    fake.last_lookups = 0;
    if (fake.fail_batch || fake.fail_next > 0) {
        if (fake.fail_next > 0)
            fake.fail_next--;
        snprintf(err, BACKEND_ERR_LEN, "fake: connection reset");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct backend_op *op = &ops[i];
        if (op->kind == BACKEND_OP_FAIL) { /* (no time passes in the fake) */
            assert_int_equal(ops[0].kind, BACKEND_OP_FAIL);
            fake.charges++;
            fake.ahead_ms[fail_slot(op->user)] += fake_url.login_fail_interval_ms;
            op->status = BACKEND_ST_OK;
            continue;
        }
        if (op->kind == BACKEND_OP_LOOKUP)
            op->fail_ahead_ms = fake_url.login_fail_burst ? fake.ahead_ms[fail_slot(op->user)] : 0;
        if (op->kind == BACKEND_OP_REPLACE) { /* alone in its batch: a compare-and-set */
            int u = find_user(op->user);
            assert_int_equal(n, 1);
            op->status = BACKEND_ST_NOTFOUND;
            if (u >= 0 && strcmp(fake.hashes[u], op->expect) == 0) {
                snprintf(fake.hashes[u], sizeof(fake.hashes[0]), "%s", op->hash);
                op->status = BACKEND_ST_OK;
            }
            break;
        }
        /* the contract: creates first; a name at most once per kind */
        if (op->kind == BACKEND_OP_CREATE)
            assert_false(seen_lookup);
        else
            seen_lookup = true;
        for (size_t j = 0; j < i; j++)
            if (ops[j].kind == op->kind)
                assert_string_not_equal(ops[j].user, op->user);
        assert_int_equal(strlen(op->user), op->user_len);

        if (fake.error_user && strcmp(op->user, fake.error_user) == 0) {
            op->status = BACKEND_ST_ERROR;
            snprintf(err, BACKEND_ERR_LEN, "fake: WRONGTYPE");
            continue;
        }
        if (fake.unavailable_user && strcmp(op->user, fake.unavailable_user) == 0) {
            op->status = BACKEND_ST_UNAVAILABLE;
            continue;
        }
        int u = find_user(op->user);
        if (op->kind == BACKEND_OP_CREATE) {
            fake.last_creates++;
            if (u >= 0) {
                op->status = record_same_creation(fake.hashes[u], strlen(fake.hashes[u]),
                                                  op->hash, strlen(op->hash))
                                 ? BACKEND_ST_OK
                                 : BACKEND_ST_EXISTS;
            } else {
                assert_true(fake.nusers < FAKE_MAX_USERS);
                snprintf(fake.users[fake.nusers], sizeof(fake.users[0]), "%s", op->user);
                snprintf(fake.hashes[fake.nusers], sizeof(fake.hashes[0]), "%s", op->hash);
                fake.nusers++;
                op->status = BACKEND_ST_OK;
            }
        } else {
            fake.last_lookups++;
            if (u < 0) {
                op->status = BACKEND_ST_NOTFOUND;
            } else {
                op->status = BACKEND_ST_OK;
                snprintf(op->stored, sizeof(op->stored), "%s", fake.hashes[u]);
            }
        }
    }
    for (size_t i = 0; fake.fail_after_apply != 0 && i < n; i++) {
        if ((int)ops[i].kind == fake.fail_after_apply) {
            fake.fail_after_apply = 0;
            snprintf(err, BACKEND_ERR_LEN, "fake: connection reset after the write");
            return -1;
        }
    }
    return 0;
}

static void fake_close(void *conn)
{
    assert_ptr_equal(conn, &fake_conn_token);
    fake.closes++;
    fake.open_conns--;
}

static int fake_ping(void *conn)
{
    assert_ptr_equal(conn, &fake_conn_token);
    fake.pings++;
    return fake.ping_fails ? -1 : 0;
}

static const struct backend_ops fake_ops = {
    .name = "fake",
    .connect = fake_connect,
    .batch = fake_batch,
    .close = fake_close,
    .ping = fake_ping,
};

static struct backend_health health;

static int group_setup(void **state)
{
    (void)state;
    log_init("test", LOG_ERROR);
    if (sodium_init() < 0)
        return -1;
    fake_url.kind = BACKEND_REDIS;
    snprintf(fake_url.host, sizeof(fake_url.host), "fake");
    backend_health_init(&health, &fake_url, false);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    backend_health_release(&health);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    memset(&fake, 0, sizeof(fake));
    return 0;
}

static struct s2_job job(uint8_t type, const char *user, const char *pass)
{
    struct s2_job j;
    static uint32_t next_id = 1;

    memset(&j, 0, sizeof(j));
    j.type = type;
    j.id = next_id++;
    j.user_len = (uint8_t)strlen(user);
    j.pass_len = (uint16_t)strlen(pass);
    memcpy(j.user, user, j.user_len);
    memcpy(j.pass, pass, j.pass_len);
    memcpy(j.token, &j.id, sizeof(j.id)); /* every job a creation of its own */
    return j;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/*
 * At cost min a group takes jobs until its hashing took AUTH_GROUP_HASH_NS (2 ms): on a busy
 * machine or under a sanitizer that may be one hash, so the tests that count round trips lift
 * the budget; the one test of the budget sets it back.
 */
static struct s2_auth *new_auth(struct authcache *cache)
{
    struct s2_auth *a = s2_auth_new(&fake_ops, &fake_url, &health, cache, PWHASH_MIN, 64);

    s2_auth_set_group_hash(a, 60ull * 1000000000ull);
    return a;
}

static void test_s2_auth_mixed_batch(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    char longpass[ACCOUNT_PASS_MAX + 1];
    struct s2_job jobs[9];

    (void)state;
    memset(longpass, 'p', ACCOUNT_PASS_MAX);
    longpass[ACCOUNT_PASS_MAX] = '\0';
    jobs[0] = job(FRAME_VERIFY, "alice", "pw-a"); /* same batch as its create: creates go first */
    jobs[1] = job(FRAME_CREATE, "alice", "pw-a");
    jobs[2] = job(FRAME_CREATE, "bob", longpass);
    jobs[3] = job(FRAME_VERIFY, "bob", "nope");
    jobs[4] = job(FRAME_VERIFY, "nobody", "x");
    jobs[5] = job(FRAME_CREATE, "bad name", "x");
    jobs[6] = job(FRAME_VERIFY, "carol", "");
    jobs[7] = job(FRAME_VERIFY, "bob", longpass);
    jobs[8] = job(FRAME_PING, "x", "y"); /* not a request auth answers */
    s2_auth_batch(a, jobs, 9);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_OK);
    assert_int_equal(jobs[2].status, FRAME_ST_OK);
    assert_int_equal(jobs[3].status, FRAME_ST_DENIED);
    assert_int_equal(jobs[4].status, FRAME_ST_DENIED);
    assert_int_equal(jobs[5].status, FRAME_ST_INVALID);
    assert_int_equal(jobs[6].status, FRAME_ST_INVALID);
    assert_int_equal(jobs[7].status, FRAME_ST_OK);
    assert_int_equal(jobs[8].status, FRAME_ST_INVALID);
    /* one round trip: 2 creates, 3 distinct lookups (alice, bob, nobody) */
    assert_int_equal(fake.batches, 1);
    assert_int_equal(fake.last_creates, 2);
    assert_int_equal(fake.last_lookups, 3);
    /* stored as a record: the creation's token, then an argon2id string, never the password */
    assert_int_equal(fake.nusers, 2);
    assert_memory_equal(fake.hashes[0], "c:", 2);
    assert_memory_equal(record_hash(fake.hashes[0]), "$argon2id$", 10);
    assert_null(strstr(fake.hashes[0], "pw-a"));

    /* a batch of only invalid requests does not touch the database */
    jobs[0] = job(FRAME_VERIFY, "", "x");
    jobs[1] = job(FRAME_CREATE, "a/b", "x");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_INVALID);
    assert_int_equal(jobs[1].status, FRAME_ST_INVALID);
    assert_int_equal(fake.batches, 1);
    s2_auth_free(a);
    assert_int_equal(fake.open_conns, 0);
}

static void test_s2_auth_duplicate_create(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[4];
    struct s2_auth_stats st;

    (void)state;
    jobs[0] = job(FRAME_CREATE, "carol", "first");
    jobs[1] = job(FRAME_CREATE, "carol", "second");
    jobs[2] = job(FRAME_CREATE, "dave", "d");
    jobs[3] = job(FRAME_CREATE, "carol", "third");
    s2_auth_batch(a, jobs, 4);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_EXISTS);
    assert_int_equal(jobs[2].status, FRAME_ST_OK);
    assert_int_equal(jobs[3].status, FRAME_ST_EXISTS);
    assert_int_equal(fake.last_creates, 2);
    s2_auth_get_stats(a, &st);
    assert_int_equal(st.hashes, 2); /* repeats are not even hashed */

    /* later: EXISTS; and the first password is the one that counts */
    jobs[0] = job(FRAME_CREATE, "carol", "fourth");
    jobs[1] = job(FRAME_CREATE, "carol", "fifth");
    jobs[2] = job(FRAME_VERIFY, "carol", "first");
    jobs[3] = job(FRAME_VERIFY, "carol", "second");
    s2_auth_batch(a, jobs, 4);
    assert_int_equal(jobs[0].status, FRAME_ST_EXISTS);
    assert_int_equal(jobs[1].status, FRAME_ST_EXISTS);
    assert_int_equal(jobs[2].status, FRAME_ST_OK);
    assert_int_equal(jobs[3].status, FRAME_ST_DENIED);
    assert_int_equal(fake.last_creates, 1);
    assert_int_equal(fake.last_lookups, 1);
    s2_auth_free(a);
}

/*
 * A creation sent again (the same token: its first answer was lost) is answered OK, in a later
 * batch or in the same one, and the account keeps the record first stored; another creation
 * of the name, or the same token once the account was deleted, gets EXISTS.
 */
static void test_s2_auth_create_sent_again(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[3];
    struct s2_job first = job(FRAME_CREATE, "erin", "pw-e");
    char stored[BACKEND_HASH_MAX];

    (void)state;
    jobs[0] = first;
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    snprintf(stored, sizeof(stored), "%s", fake.hashes[find_user("erin")]);

    jobs[0] = first; /* sent again: a new id, the same token */
    jobs[0].id = 1000;
    jobs[1] = job(FRAME_CREATE, "erin", "pw-e"); /* another creation of the name */
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_EXISTS);
    assert_string_equal(fake.hashes[find_user("erin")], stored); /* the first record stays */

    /* twice in one batch (the second sending arrived before the first was worked) */
    jobs[0] = job(FRAME_CREATE, "fay", "pw-f");
    jobs[1] = jobs[0];
    jobs[1].id = 1001;
    jobs[2] = job(FRAME_CREATE, "fay", "pw-f");
    s2_auth_batch(a, jobs, 3);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_OK);
    assert_int_equal(jobs[2].status, FRAME_ST_EXISTS);
    jobs[0] = job(FRAME_VERIFY, "fay", "pw-f");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);

    /* deleted: the tombstone carries no token */
    snprintf(fake.hashes[find_user("erin")], BACKEND_HASH_MAX, "%s", RECORD_TOMBSTONE);
    jobs[0] = first;
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_EXISTS);
    s2_auth_free(a);
}

static void test_s2_auth_backend_failure(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[3];

    (void)state;
    /* the connection breaks during the batch */
    assert_true(s2_auth_connect(a));
    fake.fail_batch = true;
    jobs[0] = job(FRAME_CREATE, "erin", "pw");
    jobs[1] = job(FRAME_VERIFY, "erin", "pw");
    jobs[2] = job(FRAME_VERIFY, "b@d", "pw");
    s2_auth_batch(a, jobs, 3);
    assert_int_equal(jobs[0].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(jobs[1].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(jobs[2].status, FRAME_ST_INVALID);
    assert_false(s2_auth_connected(a));
    assert_int_equal(fake.open_conns, 0);
    assert_int_equal(backend_health_state(&health), BACKEND_STATE_DOWN);

    /* the database is down: no reconnect more often than every BACKEND_RETRY_MS */
    fake.fail_batch = false;
    fake.fail_connect = true;
    sleep_ms(BACKEND_RETRY_MS + 50);
    int before = fake.connects;
    for (int i = 0; i < 5; i++) {
        jobs[0] = job(FRAME_VERIFY, "erin", "pw");
        s2_auth_batch(a, jobs, 1);
        assert_int_equal(jobs[0].status, FRAME_ST_UNAVAILABLE);
    }
    assert_int_equal(fake.connects, before); /* every attempt failed */
    assert_false(s2_auth_connect(a));        /* an idle probe tries (and fails) too */

    /* it comes back: the next batch after the retry interval reconnects by itself */
    fake.fail_connect = false;
    sleep_ms(BACKEND_RETRY_MS + 50);
    jobs[0] = job(FRAME_CREATE, "erin", "pw");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_true(s2_auth_connected(a));
    assert_int_equal(backend_health_state(&health), BACKEND_STATE_UP);
    s2_auth_free(a);
    assert_int_equal(fake.open_conns, 0);
}

/*
 * A batch of lookups that fails on a connection (say the database restarted while it sat idle)
 * is retried once on a new connection; a batch with a create is not (its write may be done).
 */
static void test_s2_auth_stale_connection_retry(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[2];

    (void)state;
    jobs[0] = job(FRAME_CREATE, "frank", "pw");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(fake.connects, 1);
    sleep_ms(BACKEND_RETRY_MS + 50);

    fake.fail_next = 1;
    jobs[0] = job(FRAME_VERIFY, "frank", "pw");
    jobs[1] = job(FRAME_VERIFY, "nobody", "pw");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_DENIED);
    assert_int_equal(fake.batches, 3);
    assert_int_equal(s2_auth_session(a)->round_trips, 3);
    assert_int_equal(fake.connects, 2);
    sleep_ms(BACKEND_RETRY_MS + 50);

    /* a batch with a create is sent again too: applied before the connection broke, the
     * create is found as its own creation the second time */
    fake.fail_after_apply = BACKEND_OP_CREATE;
    jobs[0] = job(FRAME_CREATE, "gus", "pw");
    jobs[1] = job(FRAME_VERIFY, "frank", "pw");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_OK);
    assert_int_equal(fake.batches, 5);
    assert_int_equal(fake.connects, 3);
    sleep_ms(BACKEND_RETRY_MS + 50);

    /* twice in a row: UNAVAILABLE (one retry only) */
    fake.fail_next = 2;
    jobs[0] = job(FRAME_CREATE, "hal", "pw");
    jobs[1] = job(FRAME_VERIFY, "frank", "pw");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(jobs[1].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(fake.batches, 7);
    sleep_ms(BACKEND_RETRY_MS + 50);

    /* a password change applied before the connection broke is not sent again (its
     * compare-and-set would fail): UNAVAILABLE, and the new password is in place */
    fake.fail_after_apply = BACKEND_OP_REPLACE;
    jobs[0] = job(FRAME_SETPASS, "frank", "pw");
    snprintf(jobs[0].new_pass, sizeof(jobs[0].new_pass), "pw2");
    jobs[0].new_len = 3;
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(fake.batches, 9); /* the lookup and one replace */
    sleep_ms(BACKEND_RETRY_MS + 50);
    jobs[0] = job(FRAME_VERIFY, "frank", "pw2");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    s2_auth_free(a);
    assert_int_equal(fake.open_conns, 0);
}

/*
 * Two workers; the database restarts; worker 1 notices and reconnects. Worker 2's connection
 * is from before the restart: it is replaced before its next batch (a create, which must not
 * fail), instead of failing that batch.
 */
static void test_s2_auth_stale_after_restart(void **state)
{
    struct s2_auth *a1 = new_auth(NULL);
    struct s2_auth *a2 = new_auth(NULL);
    struct s2_job jobs[1];

    (void)state;
    assert_true(s2_auth_connect(a1));
    assert_true(s2_auth_connect(a2));
    assert_int_equal(fake.connects, 2);
    sleep_ms(BACKEND_RETRY_MS + 50);
    fake.fail_next = 1; /* worker 1 finds its connection broken (down), reconnects (up) */
    jobs[0] = job(FRAME_CREATE, "nell", "pw");
    s2_auth_batch(a1, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(fake.connects, 3);
    assert_int_equal(backend_health_state(&health), BACKEND_STATE_UP);
    jobs[0] = job(FRAME_CREATE, "otto", "pw"); /* worker 2: new connection first */
    s2_auth_batch(a2, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(fake.connects, 4);
    assert_int_equal(fake.open_conns, 2);
    s2_auth_free(a1);
    s2_auth_free(a2);
}

/* A connection idle for BACKEND_IDLE_CHECK_MS is pinged before use, and replaced if dead. */
static void test_s2_auth_idle_ping(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[1];

    (void)state;
    jobs[0] = job(FRAME_CREATE, "pia", "pw");
    s2_auth_batch(a, jobs, 1);
    jobs[0] = job(FRAME_CREATE, "pia", "pw");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(fake.pings, 0); /* busy: no pings */
    sleep_ms(BACKEND_IDLE_CHECK_MS + 50);
    fake.ping_fails = true;
    jobs[0] = job(FRAME_CREATE, "quin", "pw");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(fake.pings, 1);
    assert_int_equal(fake.connects, 2);
    assert_int_equal(fake.open_conns, 1);
    s2_auth_free(a);
}

static void test_s2_auth_op_errors(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[4];

    (void)state;
    fake.error_user = "gina";
    fake.unavailable_user = "hank";
    jobs[0] = job(FRAME_CREATE, "gina", "pw");
    jobs[1] = job(FRAME_VERIFY, "hank", "pw");
    jobs[2] = job(FRAME_CREATE, "ivan", "pw");
    jobs[3] = job(FRAME_VERIFY, "gina", "pw");
    s2_auth_batch(a, jobs, 4);
    assert_int_equal(jobs[0].status, FRAME_ST_INTERNAL);
    assert_int_equal(jobs[1].status, FRAME_ST_UNAVAILABLE);
    assert_int_equal(jobs[2].status, FRAME_ST_OK);
    assert_int_equal(jobs[3].status, FRAME_ST_INTERNAL);
    assert_true(s2_auth_connected(a)); /* per-op failures keep the connection */
    s2_auth_free(a);
}

static void test_s2_auth_verify_repeats(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[4];

    (void)state;
    jobs[0] = job(FRAME_CREATE, "jill", "pw");
    s2_auth_batch(a, jobs, 1);
    jobs[0] = job(FRAME_VERIFY, "jill", "pw");
    jobs[1] = job(FRAME_VERIFY, "jill", "wrong");
    jobs[2] = job(FRAME_VERIFY, "jill", "pw");
    jobs[3] = job(FRAME_VERIFY, "kim", "pw");
    s2_auth_batch(a, jobs, 4);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    assert_int_equal(jobs[1].status, FRAME_ST_DENIED);
    assert_int_equal(jobs[2].status, FRAME_ST_OK);
    assert_int_equal(jobs[3].status, FRAME_ST_DENIED);
    assert_int_equal(fake.last_lookups, 2);
    s2_auth_free(a);
}

static void test_s2_auth_cache(void **state)
{
    struct authcache *cache = authcache_new(64, 0);
    struct s2_auth *a = new_auth(cache);
    struct s2_auth_stats st;
    struct s2_job jobs[2];
    char other[PWHASH_STR_MAX];

    (void)state;
    jobs[0] = job(FRAME_CREATE, "liz", "pw");
    s2_auth_batch(a, jobs, 1);
    for (int i = 0; i < 3; i++) {
        jobs[0] = job(FRAME_VERIFY, "liz", "pw");
        jobs[1] = job(FRAME_VERIFY, "liz", "bad");
        s2_auth_batch(a, jobs, 2);
        assert_int_equal(jobs[0].status, FRAME_ST_OK);
        assert_int_equal(jobs[1].status, FRAME_ST_DENIED);
    }
    s2_auth_get_stats(a, &st);
    assert_int_equal(st.cache_hits, 2);   /* 2nd and 3rd correct verify */
    assert_int_equal(st.verifies, 1 + 3); /* first correct one, and every wrong one */
    assert_int_equal(fake.batches, 4);    /* the database is still asked every time */

    /* someone changes liz's password behind our back: the old one must stop working */
    assert_int_equal(pwhash_hash(PWHASH_MIN, "new", 3, other), 0);
    snprintf(fake.hashes[find_user("liz")], BACKEND_HASH_MAX, "%s", other);
    jobs[0] = job(FRAME_VERIFY, "liz", "pw");
    jobs[1] = job(FRAME_VERIFY, "liz", "new");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_int_equal(jobs[1].status, FRAME_ST_OK);

    /* the account disappears: denied, and its entries go */
    fake.nusers = 0;
    jobs[0] = job(FRAME_VERIFY, "liz", "new");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    s2_auth_get_stats(a, &st);
    struct authcache_stats cs;
    authcache_get_stats(cache, &cs);
    assert_int_equal(cs.entries, 0);
    s2_auth_free(a);
    authcache_free(cache);
}

/* A password hasher that counts its calls, can be slowed, and remembers what it was given. */
static struct {
    int hashes;
    int verifies;
    long sleep_ms;
    char last_stored[PWHASH_STR_MAX];
} hasher_log;

static int counting_hash(enum pwhash_cost cost, const char *pass, size_t len, char *out)
{
    (void)cost; /* always min: the tests count calls, they do not need the real cost */
    hasher_log.hashes++;
    if (hasher_log.sleep_ms > 0)
        sleep_ms(hasher_log.sleep_ms);
    return pwhash_hash(PWHASH_MIN, pass, len, out);
}

static bool counting_verify(const char *stored, const char *pass, size_t len)
{
    hasher_log.verifies++;
    snprintf(hasher_log.last_stored, sizeof(hasher_log.last_stored), "%s", stored);
    if (hasher_log.sleep_ms > 0)
        sleep_ms(hasher_log.sleep_ms);
    return pwhash_verify(stored, pass, len);
}

static const struct s2_auth_hasher counting_hasher = {.hash = counting_hash,
                                                      .verify = counting_verify};

/* What a sink saw: per settled job, how many argon2 operations had run by then. */
static struct {
    int settled;
    int flushes;
    uint64_t ids[64];
    uint8_t status[64];
    int ops_at[64];
    int flushed_ops_at_first; /* argon2 operations done when the first reply was flushed */
} sink_log;

static void log_settled(void *arg, const struct s2_job *j)
{
    (void)arg;
    assert_true(sink_log.settled < 64);
    sink_log.ids[sink_log.settled] = j->id;
    sink_log.status[sink_log.settled] = j->status;
    sink_log.ops_at[sink_log.settled] = hasher_log.hashes + hasher_log.verifies;
    sink_log.settled++;
}

static void log_flush(void *arg)
{
    (void)arg;
    if (sink_log.flushes++ == 0)
        sink_log.flushed_ops_at_first = hasher_log.hashes + hasher_log.verifies;
}

static const struct s2_auth_sink logging_sink = {.settled = log_settled, .flush = log_flush};

static void reset_logs(void)
{
    memset(&hasher_log, 0, sizeof(hasher_log));
    memset(&sink_log, 0, sizeof(sink_log));
    sink_log.flushed_ops_at_first = -1;
}

static void test_s2_auth_expired(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[4];
    struct s2_auth_stats st;

    (void)state;
    reset_logs();
    s2_auth_set_hasher(a, &counting_hasher);
    jobs[0] = job(FRAME_CREATE, "late1", "pw");
    jobs[1] = job(FRAME_VERIFY, "late2", "pw");
    jobs[2] = job(FRAME_CREATE, "late3", "pw");
    for (int i = 0; i < 3; i++)
        jobs[i].deadline_ns = 1; /* long past */
    s2_auth_run(a, jobs, 3, &logging_sink);
    for (int i = 0; i < 3; i++)
        assert_int_equal(jobs[i].status, FRAME_ST_EXPIRED);
    assert_int_equal(fake.batches, 0); /* no database work */
    assert_int_equal(hasher_log.hashes + hasher_log.verifies, 0); /* and no hashing */
    assert_int_equal(sink_log.settled, 3);
    assert_int_equal(sink_log.status[0], FRAME_ST_EXPIRED);

    /* mixed with live work: only the live job reaches the database */
    jobs[0] = job(FRAME_CREATE, "gone", "pw");
    jobs[0].deadline_ns = 1;
    jobs[1] = job(FRAME_CREATE, "kept", "pw");
    jobs[1].deadline_ns = clock_now_ns() + 60ull * 1000000000; /* a minute from now */
    jobs[2] = job(FRAME_VERIFY, "gone", "pw");
    jobs[2].deadline_ns = 1;
    s2_auth_run(a, jobs, 3, &logging_sink);
    assert_int_equal(jobs[0].status, FRAME_ST_EXPIRED);
    assert_int_equal(jobs[1].status, FRAME_ST_OK);
    assert_int_equal(jobs[2].status, FRAME_ST_EXPIRED);
    assert_int_equal(fake.batches, 1);
    assert_int_equal(fake.last_creates, 1);
    assert_int_equal(fake.last_lookups, 0);
    assert_int_equal(hasher_log.hashes, 1);
    assert_int_equal(find_user("gone"), -1);
    s2_auth_get_stats(a, &st);
    assert_int_equal(st.expired, 5);
    s2_auth_free(a);
}

static void test_s2_auth_replies_before_hashing_ends(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[8];

    (void)state;
    /* verifies: one round trip for all, then one hash each, each answered when done */
    reset_logs();
    s2_auth_set_hasher(a, &counting_hasher);
    jobs[0] = job(FRAME_CREATE, "henry", "right");
    s2_auth_batch(a, jobs, 1);
    reset_logs();
    fake.batches = 0;
    for (int i = 0; i < 8; i++)
        jobs[i] = job(FRAME_VERIFY, "henry", i == 5 ? "right" : "wrong");
    s2_auth_run(a, jobs, 8, &logging_sink);
    assert_int_equal(fake.batches, 1);
    assert_int_equal(hasher_log.verifies, 8);
    assert_int_equal(sink_log.settled, 8);
    assert_int_equal(sink_log.ops_at[0], 1); /* the first answer came after one hash ... */
    assert_int_equal(sink_log.flushed_ops_at_first, 1); /* ... and was handed on before the 2nd */
    assert_int_equal(sink_log.status[5], FRAME_ST_OK);
    assert_int_equal(sink_log.status[4], FRAME_ST_DENIED);
    s2_auth_free(a);

    /* creates at a cost above min: one hash per group, each answered before the next hash */
    a = s2_auth_new(&fake_ops, &fake_url, &health, NULL, PWHASH_INTERACTIVE, 64);
    s2_auth_set_hasher(a, &counting_hasher);
    reset_logs();
    fake.batches = 0;
    jobs[0] = job(FRAME_CREATE, "ivy0", "pw");
    jobs[1] = job(FRAME_CREATE, "ivy1", "pw");
    jobs[2] = job(FRAME_CREATE, "ivy2", "pw");
    jobs[3] = job(FRAME_CREATE, "ivy3", "pw");
    s2_auth_run(a, jobs, 4, &logging_sink);
    assert_int_equal(fake.batches, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(jobs[i].status, FRAME_ST_OK);
        assert_int_equal(sink_log.ops_at[i], i + 1);
    }
    assert_int_equal(sink_log.flushed_ops_at_first, 1);
    s2_auth_free(a);

    /* creates at cost min but slow hashes: a group stops once it has hashed ~2 ms */
    a = new_auth(NULL);
    s2_auth_set_hasher(a, &counting_hasher);
    s2_auth_set_group_hash(a, AUTH_GROUP_HASH_NS);
    reset_logs();
    hasher_log.sleep_ms = 1;
    fake.batches = 0;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "jack%d", i);
        jobs[i] = job(FRAME_CREATE, name, "pw");
    }
    s2_auth_run(a, jobs, 8, &logging_sink);
    assert_true(fake.batches >= 4); /* each hash takes >= 1 ms: at most 2 per group */
    assert_true(sink_log.ops_at[0] <= 2);
    assert_true(sink_log.flushed_ops_at_first <= 3);
    for (int i = 0; i < 8; i++)
        assert_int_equal(jobs[i].status, FRAME_ST_OK);
    s2_auth_free(a);
}

static void test_s2_auth_unknown_user_dummy(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[2];
    struct s2_auth_stats st;
    const char *dummy = pwhash_dummy(PWHASH_MIN);

    (void)state;
    assert_non_null(dummy);
    assert_memory_equal(dummy, "$argon2id$", 10);
    assert_ptr_equal(pwhash_dummy(PWHASH_MIN), dummy); /* made once */
    reset_logs();
    s2_auth_set_hasher(a, &counting_hasher);
    jobs[0] = job(FRAME_VERIFY, "nosuchuser", "guess");
    s2_auth_run(a, jobs, 1, &logging_sink);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_int_equal(hasher_log.verifies, 1); /* the verifier ran ... */
    assert_string_equal(hasher_log.last_stored, dummy); /* ... against the dummy hash */
    s2_auth_get_stats(a, &st);
    assert_int_equal(st.dummy_verifies, 1);
    assert_int_equal(st.verifies, 0);
    s2_auth_free(a);
}

/*
 * A locked account (server2 admin lock: the record behind RECORD_LOCK_MARK) is no user: its
 * right password is DENIED after a verify against the dummy hash (as for an unknown name),
 * a password change or a deletion with it too, and the record stays as it was; unlocked, the
 * same password works again.
 */
static void test_s2_auth_locked_account(void **state)
{
    struct s2_auth *a = new_auth(NULL);
    struct s2_job jobs[1];
    char rec[BACKEND_HASH_MAX];
    char locked[BACKEND_HASH_MAX];
    int u;

    (void)state;
    jobs[0] = job(FRAME_CREATE, "lena", "pw-l");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    u = find_user("lena");
    snprintf(rec, sizeof(rec), "%s", fake.hashes[u]);
    assert_true(record_lock(rec, locked, sizeof(locked)) > 0);
    snprintf(fake.hashes[u], BACKEND_HASH_MAX, "%s", locked);

    reset_logs();
    s2_auth_set_hasher(a, &counting_hasher);
    jobs[0] = job(FRAME_VERIFY, "lena", "pw-l");
    s2_auth_run(a, jobs, 1, &logging_sink);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_int_equal(hasher_log.verifies, 1);
    assert_string_equal(hasher_log.last_stored, pwhash_dummy(PWHASH_MIN));
    s2_auth_set_hasher(a, NULL);

    jobs[0] = job(FRAME_SETPASS, "lena", "pw-l");
    snprintf(jobs[0].new_pass, sizeof(jobs[0].new_pass), "pw-new");
    jobs[0].new_len = 6;
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    jobs[0] = job(FRAME_DELETE, "lena", "pw-l");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_string_equal(fake.hashes[u], locked); /* nothing changed */

    snprintf(fake.hashes[u], BACKEND_HASH_MAX, "%s", record_unlocked(locked));
    jobs[0] = job(FRAME_VERIFY, "lena", "pw-l");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_OK);
    s2_auth_free(a);
}

/*
 * --login-fail-limit 3/3s: of 5 wrong passwords in one group 3 are hashed and charged (one
 * round trip more), 2 LIMITED; then the right password too, with the wait; unknown names count
 * the same; a wrong current password of a change is a failure; with the limit off nothing is
 * read or charged.
 */
static void test_s2_auth_login_limit(void **state)
{
    struct s2_auth *a;
    struct s2_job jobs[6];
    struct s2_auth_stats st;

    (void)state;
    fake_url.login_fail_burst = 3;
    fake_url.login_fail_interval_ms = 1000;
    a = new_auth(NULL);
    jobs[0] = job(FRAME_CREATE, "bob", "right");
    s2_auth_batch(a, jobs, 1);
    for (int i = 0; i < 5; i++)
        jobs[i] = job(FRAME_VERIFY, "bob", "wrong");
    s2_auth_batch(a, jobs, 5);
    for (int i = 0; i < 3; i++)
        assert_int_equal(jobs[i].status, FRAME_ST_DENIED);
    for (int i = 3; i < 5; i++) {
        assert_int_equal(jobs[i].status, FRAME_ST_LIMITED);
        assert_int_equal(jobs[i].retry_ms, 1000); /* one more allowed in DUR/N */
    }
    assert_int_equal(fake.charges, 3);
    assert_int_equal(fake.batches, 3); /* create; lookup; the charges */
    jobs[0] = job(FRAME_VERIFY, "bob", "right");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_LIMITED); /* the right one too */
    assert_int_equal(jobs[0].retry_ms, 1000);           /* TAT 3 s ahead, 2 s tolerated */
    jobs[0] = job(FRAME_VERIFY, "ghost", "a");
    jobs[1] = job(FRAME_VERIFY, "ghost", "b");
    s2_auth_batch(a, jobs, 2);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_int_equal(jobs[1].status, FRAME_ST_DENIED);
    assert_int_equal(fake.charges, 5);
    jobs[0] = job(FRAME_SETPASS, "bob", "right");
    jobs[0].new_len = 3;
    memcpy(jobs[0].new_pass, "new", 3);
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_LIMITED);
    fake.ahead_ms[fail_slot("bob")] = 0; /* time passed */
    jobs[0] = job(FRAME_DELETE, "bob", "wrong");
    s2_auth_batch(a, jobs, 1);
    assert_int_equal(jobs[0].status, FRAME_ST_DENIED);
    assert_int_equal(fake.charges, 6);
    s2_auth_get_stats(a, &st);
    assert_int_equal(st.limited, 4);
    assert_int_equal(st.fails_charged, 6);
    s2_auth_free(a);

    fake_url.login_fail_burst = 0; /* off: no charge, no LIMITED */
    fake_url.login_fail_interval_ms = 0;
    a = new_auth(NULL);
    for (int i = 0; i < 6; i++)
        jobs[i] = job(FRAME_VERIFY, "bob", "wrong");
    s2_auth_batch(a, jobs, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(jobs[i].status, FRAME_ST_DENIED);
    assert_int_equal(fake.charges, 6);
    s2_auth_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_s2_auth_mixed_batch, setup),
        cmocka_unit_test_setup(test_s2_auth_duplicate_create, setup),
        cmocka_unit_test_setup(test_s2_auth_create_sent_again, setup),
        cmocka_unit_test_setup(test_s2_auth_backend_failure, setup),
        cmocka_unit_test_setup(test_s2_auth_stale_connection_retry, setup),
        cmocka_unit_test_setup(test_s2_auth_stale_after_restart, setup),
        cmocka_unit_test_setup(test_s2_auth_idle_ping, setup),
        cmocka_unit_test_setup(test_s2_auth_op_errors, setup),
        cmocka_unit_test_setup(test_s2_auth_verify_repeats, setup),
        cmocka_unit_test_setup(test_s2_auth_cache, setup),
        cmocka_unit_test_setup(test_s2_auth_expired, setup),
        cmocka_unit_test_setup(test_s2_auth_replies_before_hashing_ends, setup),
        cmocka_unit_test_setup(test_s2_auth_unknown_user_dummy, setup),
        cmocka_unit_test_setup(test_s2_auth_locked_account, setup),
        cmocka_unit_test_setup(test_s2_auth_login_limit, setup),
    };
    return cmocka_run_group_tests_name("s2_auth", tests, group_setup, group_teardown);
}
