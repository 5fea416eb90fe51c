/*
 * test_credcache.c - server1's cache of accepted credentials (credcache.h): a hit only for the
 * exact (user, password) put in and only within the TTL; the epoch rule that keeps an answer
 * sent before a change out; dropping one user; clearing; the per-user bound that keeps one
 * user from pushing out others; the keys, which never hold the password; and the shared table
 * (credcache_shared: the known logins), used by two threads at once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/credcache.h"

#define SEC 1000000000ull

static void key(const char *user, const char *pass, struct credcache_key *k)
{
    credcache_key(user, strlen(user), pass, strlen(pass), k);
}

static int setup(void **state)
{
    (void)state;
    return credcache_global_init();
}

static void test_credcache_hit_only_exact_pair(void **state)
{
    struct credcache c;
    struct credcache_key k;
    struct credcache_key other;

    (void)state;
    assert_true(credcache_init(&c, 64, 10 * SEC));
    key("alice", "secret", &k);
    assert_false(credcache_hit(&c, &k, 1));
    credcache_put(&c, &k, c.epoch, 1);
    assert_true(credcache_hit(&c, &k, 2));
    key("alice", "secreT", &other);
    assert_false(credcache_hit(&c, &other, 2));
    key("alic", "esecret", &other); /* same bytes end to end: a different pair */
    assert_false(credcache_hit(&c, &other, 2));
    key("bob", "secret", &other);
    assert_false(credcache_hit(&c, &other, 2));
    assert_int_equal(c.st.hits, 1);
    assert_int_equal(c.st.misses, 4);
    assert_int_equal(c.used, 1);
    credcache_release(&c);
}

struct shared_arg {
    struct credcache_shared *s;
    int id;
    int hits;
};

/*
 * Puts 200 users of its own, then looks each up: every one a hit (no lost or torn entry). In
 * 16384 sets of 4, 400 entries overflow a set about once in a million runs.
 */
static void *shared_worker(void *p)
{
    struct shared_arg *a = p;
    char user[32];
    struct credcache_key k;

    for (int i = 0; i < 200; i++) {
        snprintf(user, sizeof(user), "t%d-u%d", a->id, i);
        key(user, "pw", &k);
        credcache_shared_put(a->s, &k, 10 * SEC);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(user, sizeof(user), "t%d-u%d", a->id, i);
        key(user, "pw", &k);
        a->hits += credcache_shared_hit(a->s, &k, 10 * SEC);
    }
    return NULL;
}

static void test_credcache_shared(void **state)
{
    struct credcache_shared *s = credcache_shared_new(65536, 60 * SEC); /* (server1's size) */
    struct shared_arg a[2] = {{s, 0, 0}, {s, 1, 0}};
    pthread_t t[2];
    struct credcache_key k, other;

    (void)state;
    assert_non_null(s);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, shared_worker, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(a[0].hits, 200);
    assert_int_equal(a[1].hits, 200);
    /* the TTL holds as in the thread's own cache; dropping a user drops only that user */
    key("t0-u7", "pw", &k);
    key("t1-u7", "pw", &other);
    assert_true(credcache_shared_hit(s, &k, 70 * SEC - 1));
    assert_false(credcache_shared_hit(s, &other, 70 * SEC));
    credcache_shared_put(s, &other, 100 * SEC);
    credcache_shared_drop_user(s, "t0-u7", 5);
    assert_false(credcache_shared_hit(s, &k, 100 * SEC));
    assert_true(credcache_shared_hit(s, &other, 100 * SEC));
    credcache_shared_free(s);
    credcache_shared_free(NULL);
}

static void test_credcache_ttl(void **state)
{
    struct credcache c;
    struct credcache_key k;

    (void)state;
    assert_true(credcache_init(&c, 64, 5 * SEC));
    key("alice", "secret", &k);
    credcache_put(&c, &k, c.epoch, 100 * SEC);
    assert_true(credcache_hit(&c, &k, 105 * SEC - 1));
    assert_false(credcache_hit(&c, &k, 105 * SEC)); /* expired: gone */
    assert_int_equal(c.used, 0);
    assert_false(credcache_hit(&c, &k, 100 * SEC));
    /* a new acceptance starts a new TTL */
    credcache_put(&c, &k, c.epoch, 200 * SEC);
    credcache_put(&c, &k, c.epoch, 203 * SEC);
    assert_true(credcache_hit(&c, &k, 207 * SEC));
    assert_int_equal(c.used, 1);
    credcache_release(&c);
}

static void test_credcache_epoch_keeps_stale_answers_out(void **state)
{
    struct credcache c;
    struct credcache_key k;
    uint64_t sent;

    (void)state;
    assert_true(credcache_init(&c, 64, 10 * SEC));
    key("alice", "old", &k);
    sent = c.epoch; /* a VERIFY is sent now */
    assert_int_equal(credcache_drop_user(&c, "alice", 5), 0); /* an INVALIDATE arrives */
    credcache_put(&c, &k, sent, 1);                            /* then the old answer */
    assert_false(credcache_hit(&c, &k, 2));
    sent = c.epoch;
    credcache_clear(&c); /* a lost connection moves it too */
    credcache_put(&c, &k, sent, 1);
    assert_false(credcache_hit(&c, &k, 2));
    credcache_put(&c, &k, c.epoch, 1);
    assert_true(credcache_hit(&c, &k, 2));
    credcache_release(&c);
}

static void test_credcache_drop_user_and_clear(void **state)
{
    struct credcache c;
    struct credcache_key a1;
    struct credcache_key a2;
    struct credcache_key b;

    (void)state;
    assert_true(credcache_init(&c, 64, 10 * SEC));
    key("alice", "one", &a1);
    key("alice", "two", &a2);
    key("bob", "pw", &b);
    credcache_put(&c, &a1, c.epoch, 1);
    credcache_put(&c, &a2, c.epoch, 1);
    credcache_put(&c, &b, c.epoch, 1);
    assert_int_equal(c.used, 3);
    assert_int_equal(credcache_drop_user(&c, "alice", 5), 2);
    assert_false(credcache_hit(&c, &a1, 2));
    assert_false(credcache_hit(&c, &a2, 2));
    assert_true(credcache_hit(&c, &b, 2));
    assert_int_equal(c.used, 1);
    assert_int_equal(credcache_drop_user(&c, "nobody", 6), 0);
    credcache_clear(&c);
    assert_false(credcache_hit(&c, &b, 2));
    assert_int_equal(c.used, 0);
    assert_int_equal(credcache_count(&c, 2), 0);
    credcache_release(&c);
}

/* One user with many accepted passwords holds at most CREDCACHE_PER_USER entries. */
static void test_credcache_bounded_per_user(void **state)
{
    struct credcache c;
    struct credcache_key k;
    struct credcache_key others[512];
    char pw[32];
    char name[32];
    unsigned before = 0;
    unsigned survived = 0;

    (void)state;
    assert_true(credcache_init(&c, 1024, 100 * SEC));
    for (unsigned i = 0; i < 512; i++) {
        snprintf(name, sizeof(name), "user%u", i);
        key(name, "pw", &others[i]);
        credcache_put(&c, &others[i], c.epoch, 1);
    }
    /* (sets are picked by hash: a few of the 512 already pushed each other out) */
    for (unsigned i = 0; i < 512; i++)
        before += credcache_hit(&c, &others[i], 1);
    for (unsigned i = 0; i < 10000; i++) {
        snprintf(pw, sizeof(pw), "guess%u", i);
        key("mallory", pw, &k);
        credcache_put(&c, &k, c.epoch, 2 + i);
        assert_true(credcache_hit(&c, &k, 2 + i)); /* the newest is there */
    }
    assert_true(credcache_count(&c, 20000) <= 512 + CREDCACHE_PER_USER);
    for (unsigned i = 0; i < 512; i++)
        survived += credcache_hit(&c, &others[i], 20000);
    /* mallory's set lost at most CREDCACHE_PER_USER entries to it, no other set any */
    assert_true(before > 400);
    assert_true(survived >= before - CREDCACHE_PER_USER);
    /* exactly the newest CREDCACHE_PER_USER (2) of mallory's are there */
    key("mallory", "guess9999", &k);
    assert_true(credcache_hit(&c, &k, 20000));
    key("mallory", "guess9998", &k);
    assert_true(credcache_hit(&c, &k, 20000));
    key("mallory", "guess9997", &k);
    assert_false(credcache_hit(&c, &k, 20000));
    credcache_release(&c);
}

/* Sizes round up to whole sets; a full set gives up the entry that expires first. */
static void test_credcache_capacity(void **state)
{
    struct credcache c;
    struct credcache_key k[200];
    char name[32];

    (void)state;
    assert_true(credcache_init(&c, 1, SEC));
    assert_int_equal(c.nsets, 1);
    credcache_release(&c);
    assert_true(credcache_init(&c, 100, SEC) && c.nsets * CREDCACHE_WAYS >= 100);
    credcache_release(&c);
    assert_true(credcache_init(&c, 8, 100 * SEC));
    for (unsigned i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "u%u", i);
        key(name, "pw", &k[i]);
        credcache_put(&c, &k[i], c.epoch, 1 + i);
    }
    assert_int_equal(credcache_count(&c, 300), 8);
    assert_int_equal(c.used, 8);
    assert_true(credcache_hit(&c, &k[199], 300));
    assert_int_equal(c.st.evictions, 200 - 8);
    credcache_release(&c);
}

/* The key depends on the whole pair, and the table never holds the password's bytes. */
static void test_credcache_no_password_in_memory(void **state)
{
    struct credcache c;
    struct credcache_key k;
    const char *pass = "hunter2-hunter2";

    (void)state;
    assert_true(credcache_init(&c, 16, SEC));
    key("alice", pass, &k);
    credcache_put(&c, &k, c.epoch, 1);
    assert_null(memmem(c.e, (size_t)c.nsets * CREDCACHE_WAYS * sizeof(*c.e), "hunter", 6));
    assert_null(memmem(&k, sizeof(k), "hunter", 6));
    credcache_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credcache_hit_only_exact_pair),
        cmocka_unit_test(test_credcache_ttl),
        cmocka_unit_test(test_credcache_epoch_keeps_stale_answers_out),
        cmocka_unit_test(test_credcache_drop_user_and_clear),
        cmocka_unit_test(test_credcache_bounded_per_user),
        cmocka_unit_test(test_credcache_capacity),
        cmocka_unit_test(test_credcache_no_password_in_memory),
        cmocka_unit_test(test_credcache_shared),
    };
    return cmocka_run_group_tests_name("credcache", tests, setup, NULL);
}
