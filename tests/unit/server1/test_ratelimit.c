/*
 * test_ratelimit.c - cmocka tests for server1/ratelimit: rate parsing, token buckets (burst,
 * refill, a key over its limit stays there, keys apart, a reservation given back, also from
 * several threads), eviction from a full set, address keys
 * (IPv4, IPv4-mapped, IPv6 by /64), 0 = off, and the per-address connection count (limit,
 * release, many addresses coming and going through one small table).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "../../../server1/ratelimit.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC) /* an arbitrary "now" well after the clock's start */

static void test_rate_parse(void **state)
{
    struct opts_rate r;
    char err[OPTS_ERR_LEN];
    char buf[48];
    (void)state;

    assert_int_equal(opts_parse_rate("20/1m", &r, err), 0);
    assert_int_equal(r.count, 20);
    assert_int_equal(r.period_us, 60000000);
    assert_string_equal(opts_format_rate(&r, buf, sizeof(buf)), "20/1m");
    assert_int_equal(opts_parse_rate("5/30s", &r, err), 0);
    assert_int_equal(r.period_us, 30000000);
    assert_string_equal(opts_format_rate(&r, buf, sizeof(buf)), "5/30s");
    assert_int_equal(opts_parse_rate("3/250ms", &r, err), 0);
    assert_string_equal(opts_format_rate(&r, buf, sizeof(buf)), "3/250ms");
    /* 0 turns it off, with or without a duration */
    assert_int_equal(opts_parse_rate("0", &r, err), 0);
    assert_int_equal(r.count, 0);
    assert_string_equal(opts_format_rate(&r, buf, sizeof(buf)), "0");
    assert_int_equal(opts_parse_rate("0/1m", &r, err), 0);
    assert_int_equal(r.count, 0);
    /* refused */
    assert_int_equal(opts_parse_rate("20", &r, err), -1);
    assert_int_equal(opts_parse_rate("/1m", &r, err), -1);
    assert_int_equal(opts_parse_rate("x/1m", &r, err), -1);
    assert_int_equal(opts_parse_rate("20/", &r, err), -1);
    assert_int_equal(opts_parse_rate("20/1x", &r, err), -1);
    assert_int_equal(opts_parse_rate("-1/1m", &r, err), -1);
    assert_int_equal(opts_parse_rate("20/0", &r, err), -1); /* below 1 ms */
    assert_int_equal(opts_parse_rate("", &r, err), -1);
}

static void test_rate_off_table(void **state)
{
    struct opts_rate off = {0, 0};
    (void)state;
    /* a limit that is off has no table: the server checks for NULL */
    assert_null(ratelimit_new(&off, 1024));
}

static struct ratelimit *table(uint64_t count, uint64_t period_s, size_t entries)
{
    struct opts_rate r = {count, period_s * 1000000};
    struct ratelimit *rl = ratelimit_new(&r, entries);
    assert_non_null(rl);
    return rl;
}

static void test_burst_then_limited(void **state)
{
    struct ratelimit *rl = table(20, 60, 1024);
    uint64_t wait;
    (void)state;

    /* 20 events in a burst go through; the 21st check and take are refused */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(ratelimit_check(rl, "alice", 5, T0), 0);
        assert_int_equal(ratelimit_take(rl, "alice", 5, T0), 0);
    }
    wait = ratelimit_check(rl, "alice", 5, T0);
    assert_int_equal(wait, 3 * SEC); /* one token returns every 60/20 s */
    assert_int_equal(ratelimit_retry_after_s(wait), 3);
    assert_int_equal(ratelimit_take(rl, "alice", 5, T0), 3 * SEC);
    /* a refused take changes nothing: it is still 3 s, not more */
    assert_int_equal(ratelimit_check(rl, "alice", 5, T0), 3 * SEC);
    /* another key is not affected */
    assert_int_equal(ratelimit_check(rl, "bob", 3, T0), 0);
    assert_int_equal(ratelimit_check(rl, "alic", 4, T0), 0);
    ratelimit_free(rl);
}

static void test_refill(void **state)
{
    struct ratelimit *rl = table(4, 8, 1024); /* a token every 2 s */
    (void)state;

    for (int i = 0; i < 4; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0), 0);
    assert_int_equal(ratelimit_check(rl, "k", 1, T0 + SEC), SEC);
    assert_int_equal(ratelimit_retry_after_s(SEC + 1), 2);
    /* after 2 s exactly one token is back */
    assert_int_equal(ratelimit_check(rl, "k", 1, T0 + 2 * SEC), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0 + 2 * SEC), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0 + 2 * SEC), 2 * SEC);
    /* after a whole period of quiet the bucket is full again: 4 more */
    for (int i = 0; i < 4; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0 + 12 * SEC), 0);
    assert_true(ratelimit_take(rl, "k", 1, T0 + 12 * SEC) > 0);
    /* the tokens never pile up beyond the burst: a long quiet gives 4, not more */
    for (int i = 0; i < 4; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0 + 1000 * SEC), 0);
    assert_true(ratelimit_take(rl, "k", 1, T0 + 1000 * SEC) > 0);
    ratelimit_free(rl);
}

/*
 * A reservation given back: the token is there again, as if never taken; never more than a
 * full bucket; a key no longer in the table is left alone.
 */
static void test_refund(void **state)
{
    struct ratelimit *rl = table(3, 60, 1024); /* a token every 20 s */
    (void)state;

    for (int i = 0; i < 3; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0), 20 * SEC);
    ratelimit_refund(rl, "k", 1); /* one of the three given back */
    assert_int_equal(ratelimit_check(rl, "k", 1, T0), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0), 20 * SEC);
    /* three given back: full again, and more refunds do not make it fuller than full */
    for (int i = 0; i < 10; i++)
        ratelimit_refund(rl, "k", 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0), 0);
    assert_int_equal(ratelimit_take(rl, "k", 1, T0), 20 * SEC);
    /* a token given back after it came back anyway: still a burst of 3, not 4 */
    ratelimit_refund(rl, "k", 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ratelimit_take(rl, "k", 1, T0 + 3600 * SEC), 0);
    assert_true(ratelimit_take(rl, "k", 1, T0 + 3600 * SEC) > 0);
    /* a key never seen: nothing happens to it or to others */
    ratelimit_refund(rl, "never", 5);
    assert_int_equal(ratelimit_check(rl, "never", 5, T0), 0);
    assert_true(ratelimit_check(rl, "k", 1, T0 + 3600 * SEC) > 0);
    ratelimit_free(rl);
}

struct reserver {
    struct ratelimit *rl;
    int kept;
};

/* Takes a token and gives it back, over and over: the failed half keeps it. */
static void *reserve_many(void *arg)
{
    struct reserver *t = arg;
    for (int i = 0; i < 20000; i++) {
        if (ratelimit_take(t->rl, "user", 4, T0) != 0)
            continue;
        if (i % 2 == 0)
            ratelimit_refund(t->rl, "user", 4);
        else
            t->kept++;
    }
    return NULL;
}

/*
 * Four threads reserve and give back at once: a token is never handed out twice, so the ones
 * kept add up to the burst exactly.
 */
static void test_concurrent_reservations(void **state)
{
    struct ratelimit *rl = table(100, 3600, 1);
    struct reserver t[4];
    pthread_t th[4];
    int kept = 0;
    (void)state;

    for (int i = 0; i < 4; i++) {
        t[i] = (struct reserver){.rl = rl};
        assert_int_equal(pthread_create(&th[i], NULL, reserve_many, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        kept += t[i].kept;
    }
    assert_int_equal(kept, 100);
    assert_true(ratelimit_take(rl, "user", 4, T0) > 0);
    ratelimit_free(rl);
}

static void test_eviction_keeps_limited_keys(void **state)
{
    /* the smallest table: one set of RATELIMIT_WAYS slots */
    struct ratelimit *rl = table(3, 60, 1);
    char key[32];
    (void)state;

    assert_int_equal(rl->mask, 0);
    for (int i = 0; i < 3; i++)
        ratelimit_take(rl, "victim", 6, T0);
    assert_true(ratelimit_check(rl, "victim", 6, T0) > 0);
    /* a flood of fresh keys, one event each, many more than the set holds */
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof(key), "fresh%d", i);
        assert_int_equal(ratelimit_take(rl, key, (size_t)n, T0 + (uint64_t)i), 0);
    }
    assert_true(atomic_load(&rl->evictions) > 0);
    /* the key over its limit is the most useful entry: it was never pushed out */
    assert_true(ratelimit_check(rl, "victim", 6, T0 + 1000) > 0);
    /* a set full of limited keys evicts the one closest to full */
    for (int i = 0; i < 3 * (RATELIMIT_WAYS + 1); i++) {
        int n = snprintf(key, sizeof(key), "locked%d", i / 3);
        ratelimit_take(rl, key, (size_t)n, T0 + 2000 + (uint64_t)(i / 3) * SEC);
    }
    /* "victim" (oldest, so closest to full) is gone now: it starts over with a full bucket */
    assert_int_equal(ratelimit_check(rl, "victim", 6, T0 + 2000 + 10 * SEC), 0);
    ratelimit_free(rl);
}

static void test_full_buckets_are_free_slots(void **state)
{
    struct ratelimit *rl = table(2, 2, 1);
    char key[32];
    (void)state;

    for (int i = 0; i < RATELIMIT_WAYS; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i);
        ratelimit_take(rl, key, (size_t)n, T0);
    }
    /* 10 s later every bucket is full again: new keys reuse them without an eviction */
    for (int i = 0; i < RATELIMIT_WAYS; i++) {
        int n = snprintf(key, sizeof(key), "n%d", i);
        ratelimit_take(rl, key, (size_t)n, T0 + 10 * SEC);
    }
    assert_int_equal(atomic_load(&rl->evictions), 0);
    ratelimit_free(rl);
}

struct taker {
    struct ratelimit *rl;
    int taken;
    int checked_ok;
};

static void *take_many(void *arg)
{
    struct taker *t = arg;
    for (int i = 0; i < 20000; i++) {
        if (ratelimit_take(t->rl, "shared", 6, T0) == 0)
            t->taken++;
        /* a reader of the same set alongside the writers: "other" stays over its limit */
        if (ratelimit_check(t->rl, "other", 5, T0) > 0)
            t->checked_ok++;
    }
    return NULL;
}

/* Four threads take from one key at once: exactly `count` tokens are handed out in all. */
static void test_concurrent_takes(void **state)
{
    struct ratelimit *rl = table(1000, 3600, 1); /* one set: every key shares its lock */
    struct taker t[4];
    pthread_t th[4];
    int total = 0;
    (void)state;

    for (int i = 0; i < 1000; i++)
        ratelimit_take(rl, "other", 5, T0);

    for (int i = 0; i < 4; i++) {
        t[i] = (struct taker){.rl = rl};
        assert_int_equal(pthread_create(&th[i], NULL, take_many, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += t[i].taken;
        assert_int_equal(t[i].checked_ok, 20000);
    }
    assert_int_equal(total, 1000);
    ratelimit_free(rl);
}

static void addr6(const char *s, uint8_t key[RATELIMIT_ADDR_LEN])
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, s, &sa.sin6_addr), 1);
    net_addr_key((struct sockaddr *)&sa, sizeof(sa), key);
}

static void addr4(const char *s, uint8_t key[RATELIMIT_ADDR_LEN])
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, s, &sa.sin_addr), 1);
    net_addr_key((struct sockaddr *)&sa, sizeof(sa), key);
}

static void test_addr_keys(void **state)
{
    uint8_t a[RATELIMIT_ADDR_LEN];
    uint8_t b[RATELIMIT_ADDR_LEN];
    (void)state;

    /* IPv6: one /64 is one key */
    addr6("2001:db8:1:2:aaaa:bbbb:cccc:dddd", a);
    addr6("2001:db8:1:2::1", b);
    assert_memory_equal(a, b, sizeof(a));
    addr6("2001:db8:1:3::1", b);
    assert_memory_not_equal(a, b, sizeof(a));
    /* IPv4: the whole address; the same for an IPv4-mapped IPv6 address */
    addr4("192.0.2.7", a);
    addr6("::ffff:192.0.2.7", b);
    assert_memory_equal(a, b, sizeof(a));
    addr4("192.0.2.8", b);
    assert_memory_not_equal(a, b, sizeof(a));
    /* two IPv4 addresses are never folded together like a /64 */
    addr6("::ffff:192.0.2.8", a);
    assert_memory_equal(a, b, sizeof(a));
    /* unknown families: all zeros */
    net_addr_key(NULL, 0, a);
    memset(b, 0, sizeof(b));
    assert_memory_equal(a, b, sizeof(a));
}

static void test_addr_keys_limit_together(void **state)
{
    struct ratelimit *rl = table(2, 60, 1024);
    uint8_t a[RATELIMIT_ADDR_LEN];
    uint8_t b[RATELIMIT_ADDR_LEN];
    (void)state;

    addr6("2001:db8::1", a);
    addr6("2001:db8::2:3:4", b); /* the same /64 */
    assert_int_equal(ratelimit_take(rl, a, sizeof(a), T0), 0);
    assert_int_equal(ratelimit_take(rl, b, sizeof(b), T0), 0);
    assert_true(ratelimit_check(rl, a, sizeof(a), T0) > 0);
    addr6("2001:db8:0:1::1", b); /* the next /64 */
    assert_int_equal(ratelimit_check(rl, b, sizeof(b), T0), 0);
    ratelimit_free(rl);
}

static void test_connlimit(void **state)
{
    struct connlimit *cl = connlimit_new(3, 4);
    uint8_t a[RATELIMIT_ADDR_LEN];
    uint8_t b[RATELIMIT_ADDR_LEN];
    (void)state;

    assert_non_null(cl);
    addr4("10.0.0.1", a);
    addr6("2001:db8::1", b);
    for (int i = 0; i < 3; i++)
        assert_true(connlimit_acquire(cl, a));
    assert_false(connlimit_acquire(cl, a));
    assert_int_equal(connlimit_count(cl, a), 3);
    assert_true(connlimit_acquire(cl, b));
    connlimit_release(cl, a);
    assert_int_equal(connlimit_count(cl, a), 2);
    assert_true(connlimit_acquire(cl, a));
    assert_false(connlimit_acquire(cl, a));
    for (int i = 0; i < 3; i++)
        connlimit_release(cl, a);
    assert_int_equal(connlimit_count(cl, a), 0);
    assert_int_equal(connlimit_count(cl, b), 1);
    connlimit_free(cl);
}

/* Many addresses opening and closing through a small table: every count stays exact (the
 * deletions keep all probe chains intact). */
static void test_connlimit_churn(void **state)
{
    enum { NADDR = 24, ROUNDS = 20000 };
    struct connlimit *cl = connlimit_new(1000, NADDR * 4); /* capacity 256 */
    uint8_t keys[NADDR][RATELIMIT_ADDR_LEN];
    unsigned want[NADDR] = {0};
    uint32_t x = 12345;
    (void)state;

    assert_non_null(cl);
    for (int i = 0; i < NADDR; i++) {
        char s[32];
        snprintf(s, sizeof(s), "10.1.%d.%d", i / 7, i);
        addr4(s, keys[i]);
    }
    for (int r = 0; r < ROUNDS; r++) {
        int k;
        x = x * 1103515245u + 12345u;
        k = (int)((x >> 8) % NADDR);
        if ((x >> 20) & 1 || want[k] == 0) {
            if (want[k] < 4) {
                assert_true(connlimit_acquire(cl, keys[k]));
                want[k]++;
            }
        } else {
            connlimit_release(cl, keys[k]);
            want[k]--;
        }
        if (r % 97 == 0)
            for (int i = 0; i < NADDR; i++)
                assert_int_equal(connlimit_count(cl, keys[i]), want[i]);
    }
    for (int i = 0; i < NADDR; i++)
        assert_int_equal(connlimit_count(cl, keys[i]), want[i]);
    connlimit_free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_parse),
        cmocka_unit_test(test_rate_off_table),
        cmocka_unit_test(test_burst_then_limited),
        cmocka_unit_test(test_refill),
        cmocka_unit_test(test_refund),
        cmocka_unit_test(test_concurrent_reservations),
        cmocka_unit_test(test_eviction_keeps_limited_keys),
        cmocka_unit_test(test_full_buckets_are_free_slots),
        cmocka_unit_test(test_concurrent_takes),
        cmocka_unit_test(test_addr_keys),
        cmocka_unit_test(test_addr_keys_limit_together),
        cmocka_unit_test(test_connlimit),
        cmocka_unit_test(test_connlimit_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
