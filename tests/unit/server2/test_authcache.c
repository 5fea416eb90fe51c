/*
 * test_authcache.c - server2's cache of successful verifications: hit, miss, a changed stored
 * hash, expiry, the capacity bound and CLOCK eviction, invalidation, and two threads at once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "../../../server2/authcache.h"

#define H1 "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaDE"
#define H2 "$argon2id$v=19$m=8,t=1,p=1$b3RoZXJzYWx0$aGFzaDI"
#define SEC 1000000000ull

static int setup(void **state)
{
    (void)state;
    return sodium_init() < 0 ? -1 : 0;
}

static void key(struct authcache *c, const char *user, const char *pass, struct authcache_key *k)
{
    authcache_key(c, user, strlen(user), pass, strlen(pass), k);
}

static void test_authcache_hit_miss(void **state)
{
    struct authcache *c = authcache_new(16, 60 * SEC);
    struct authcache_key ka;
    struct authcache_key kb;
    struct authcache_key kc;
    struct authcache_stats st;

    (void)state;
    assert_non_null(c);
    key(c, "alice", "right", &ka);
    key(c, "alice", "wrong", &kb);
    key(c, "bob", "right", &kc);
    assert_false(authcache_check(c, &ka, H1, 1)); /* empty */
    authcache_put(c, &ka, H1, 1);
    assert_true(authcache_check(c, &ka, H1, 2));
    assert_true(authcache_check(c, &ka, H1, 3));
    assert_false(authcache_check(c, &kb, H1, 3)); /* other password */
    assert_false(authcache_check(c, &kc, H1, 3)); /* other user */
    authcache_get_stats(c, &st);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.entries, 1);
    authcache_free(c);
}

/* The key depends on a secret made per cache, and on how user and password are split. */
static void test_authcache_key(void **state)
{
    struct authcache *c1 = authcache_new(4, 0);
    struct authcache *c2 = authcache_new(4, 0);
    struct authcache_key a;
    struct authcache_key b;

    (void)state;
    key(c1, "alice", "pw", &a);
    key(c2, "alice", "pw", &b);
    assert_memory_not_equal(a.b, b.b, AUTHCACHE_KEY_BYTES);
    key(c1, "alice", "pw", &b);
    assert_memory_equal(a.b, b.b, AUTHCACHE_KEY_BYTES);
    key(c1, "alic", "epw", &b);
    assert_memory_not_equal(a.b, b.b, AUTHCACHE_KEY_BYTES);
    assert_true(a.user_tag != b.user_tag);
    authcache_free(c1);
    authcache_free(c2);
}

/* An entry recorded for one stored hash never matches another: the account was changed. */
static void test_authcache_stale_hash(void **state)
{
    struct authcache *c = authcache_new(16, 0);
    struct authcache_key k;
    struct authcache_stats st;

    (void)state;
    key(c, "alice", "pw", &k);
    authcache_put(c, &k, H1, 1);
    assert_false(authcache_check(c, &k, H2, 2)); /* password changed elsewhere: new hash */
    assert_false(authcache_check(c, &k, H1, 3)); /* and the stale entry is gone */
    authcache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.invalidations, 1);
    /* too long to be one of our hashes: not cached */
    char longhash[300];
    memset(longhash, 'x', sizeof(longhash) - 1);
    longhash[sizeof(longhash) - 1] = '\0';
    authcache_put(c, &k, longhash, 4);
    authcache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    authcache_free(c);
}

static void test_authcache_ttl(void **state)
{
    struct authcache *c = authcache_new(16, 10 * SEC);
    struct authcache_key k;

    (void)state;
    key(c, "alice", "pw", &k);
    authcache_put(c, &k, H1, 100 * SEC);
    assert_true(authcache_check(c, &k, H1, 109 * SEC));
    assert_false(authcache_check(c, &k, H1, 110 * SEC));
    assert_false(authcache_check(c, &k, H1, 111 * SEC)); /* dropped, not just hidden */
    /* a new put refreshes the expiry */
    authcache_put(c, &k, H1, 200 * SEC);
    authcache_put(c, &k, H1, 205 * SEC);
    assert_true(authcache_check(c, &k, H1, 212 * SEC));
    authcache_free(c);
}

static void test_authcache_bound(void **state)
{
    struct authcache *c = authcache_new(8, 0);
    struct authcache_stats st;
    struct authcache_key k;
    char user[32];

    (void)state;
    for (int i = 0; i < 100; i++) {
        snprintf(user, sizeof(user), "user%d", i);
        key(c, user, "pw", &k);
        authcache_put(c, &k, H1, 1);
    }
    authcache_get_stats(c, &st);
    assert_int_equal(st.entries, 8);
    assert_int_equal(st.inserts, 100);
    assert_int_equal(st.evictions, 92);
    assert_true(authcache_check(c, &k, H1, 2)); /* the newest is there */
    authcache_free(c);

    /* many stripes: the total bound is exact too */
    c = authcache_new(1000, 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(user, sizeof(user), "u%d", i);
        key(c, user, "pw", &k);
        authcache_put(c, &k, H1, 1);
    }
    authcache_get_stats(c, &st);
    assert_true(st.entries <= 1000);
    assert_true(st.entries >= 900);
    assert_int_equal(st.inserts - st.evictions, st.entries);
    authcache_free(c);

    assert_null(authcache_new(0, 0));
    assert_null(authcache_new(AUTHCACHE_MAX_ENTRIES + 1, 0));
}

/* CLOCK: an entry hit since the hand last passed survives the next eviction. */
static void test_authcache_clock(void **state)
{
    struct authcache *c = authcache_new(4, 0);
    struct authcache_key k[5];
    char user[16];

    (void)state;
    for (int i = 0; i < 5; i++) {
        snprintf(user, sizeof(user), "u%d", i);
        key(c, user, "pw", &k[i]);
    }
    for (int i = 0; i < 4; i++)
        authcache_put(c, &k[i], H1, 1);
    assert_true(authcache_check(c, &k[0], H1, 2)); /* referenced */
    authcache_put(c, &k[4], H1, 3);                /* evicts u1, not u0 */
    assert_true(authcache_check(c, &k[0], H1, 4));
    assert_false(authcache_check(c, &k[1], H1, 4));
    assert_true(authcache_check(c, &k[4], H1, 4));
    authcache_free(c);
}

static void test_authcache_invalidate(void **state)
{
    struct authcache *c = authcache_new(256, 0);
    struct authcache_key a1;
    struct authcache_key a2;
    struct authcache_key b1;
    struct authcache_stats st;

    (void)state;
    key(c, "alice", "one", &a1);
    key(c, "alice", "two", &a2);
    key(c, "bob", "one", &b1);
    authcache_put(c, &a1, H1, 1);
    authcache_put(c, &a2, H2, 1);
    authcache_put(c, &b1, H1, 1);
    assert_int_equal(authcache_invalidate_user(c, "alice", 5), 2);
    assert_false(authcache_check(c, &a1, H1, 2));
    assert_false(authcache_check(c, &a2, H2, 2));
    assert_true(authcache_check(c, &b1, H1, 2));
    assert_int_equal(authcache_invalidate_user(c, "alice", 5), 0);
    authcache_remove(c, &b1);
    assert_false(authcache_check(c, &b1, H1, 3));
    authcache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    /* freed slots are reused */
    for (int i = 0; i < 3; i++)
        authcache_put(c, &a1, H1, 4);
    authcache_get_stats(c, &st);
    assert_int_equal(st.entries, 1);
    authcache_free(c);
}

#define THREAD_OPS 20000

struct worker_arg {
    struct authcache *c;
    int seed;
    uint64_t checks;
    uint64_t hits;
};

static void *hammer(void *p)
{
    struct worker_arg *w = p;
    struct authcache_key k;
    char user[16];
    uint32_t x = (uint32_t)w->seed * 2654435761u + 1;

    for (int i = 0; i < THREAD_OPS; i++) {
        x = x * 1103515245u + 12345u;
        snprintf(user, sizeof(user), "u%u", (x >> 16) % 200);
        authcache_key(w->c, user, strlen(user), "pw", 2, &k);
        switch ((x >> 8) % 8) {
        case 0:
            authcache_remove(w->c, &k);
            break;
        case 1:
        case 2:
        case 3:
            authcache_put(w->c, &k, (x & 1) ? H1 : H2, (uint64_t)i);
            break;
        case 4:
            if (i % 1000 == 0)
                authcache_invalidate_user(w->c, user, strlen(user));
            break;
        default:
            w->checks++;
            if (authcache_check(w->c, &k, H1, (uint64_t)i))
                w->hits++;
            break;
        }
    }
    return NULL;
}

static void test_authcache_threads(void **state)
{
    struct authcache *c = authcache_new(150, 5000);
    struct worker_arg w[2] = {{.c = c, .seed = 1}, {.c = c, .seed = 2}};
    pthread_t t[2];
    struct authcache_stats st;

    (void)state;
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    authcache_get_stats(c, &st);
    assert_true(st.entries <= 150);
    assert_int_equal(st.hits + st.misses, w[0].checks + w[1].checks);
    assert_int_equal(st.hits, w[0].hits + w[1].hits);
    assert_true(st.hits > 0);
    authcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authcache_hit_miss),   cmocka_unit_test(test_authcache_key),
        cmocka_unit_test(test_authcache_stale_hash), cmocka_unit_test(test_authcache_ttl),
        cmocka_unit_test(test_authcache_bound),      cmocka_unit_test(test_authcache_clock),
        cmocka_unit_test(test_authcache_invalidate), cmocka_unit_test(test_authcache_threads),
    };
    return cmocka_run_group_tests_name("authcache", tests, setup, NULL);
}
