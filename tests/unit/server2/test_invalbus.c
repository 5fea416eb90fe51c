/*
 * test_invalbus.c - how server2's threads or processes share account changes (invalbus.h):
 * entries in order with their users, the ring's bound (INVALBUS_RING entries behind is still
 * readable, one more is an overrun that jumps to the newest), the wake-ups, and when a change
 * counts as applied everywhere (present members only).
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/invalbus.h"

#define NOW 1000000000ull /* a clock reading for invalbus_done */

static struct invalbus *bus_new(unsigned n)
{
    struct invalbus *b = calloc(1, invalbus_size(n));
    assert_non_null(b);
    assert_int_equal(invalbus_init(b, n, false), 0);
    return b;
}

static void bus_free(struct invalbus *b)
{
    invalbus_release(b);
    free(b);
}

static bool woken(struct invalbus *b, unsigned me)
{
    struct pollfd pfd = {.fd = invalbus_fd(b, me), .events = POLLIN};
    return poll(&pfd, 1, 0) == 1;
}

static void test_invalbus_order_and_wakes(void **state)
{
    struct invalbus *b = bus_new(2);
    uint64_t c0;
    uint64_t c1;
    char user[ACCOUNT_USER_MAX];
    uint8_t len = 0;

    (void)state;
    invalbus_join(b, 0, &c0);
    invalbus_join(b, 1, &c1);
    assert_int_equal(c0, 0);
    assert_false(woken(b, 1));
    assert_int_equal(invalbus_publish(b, 0, "alice", 5), 1);
    assert_int_equal(invalbus_publish(b, 0, "bob", 3), 2);
    assert_true(woken(b, 1));  /* the others are woken */
    assert_false(woken(b, 0)); /* not the publisher */
    invalbus_clear_wake(b, 1);
    assert_false(woken(b, 1));
    assert_int_equal(invalbus_next(b, &c1, user, &len), 1);
    assert_int_equal(c1, 1);
    assert_int_equal(len, 5);
    assert_memory_equal(user, "alice", 5);
    assert_int_equal(invalbus_next(b, &c1, user, &len), 1);
    assert_memory_equal(user, "bob", 3);
    assert_int_equal(invalbus_next(b, &c1, user, &len), 0);
    assert_int_equal(c1, 2);
    bus_free(b);
}

static void test_invalbus_done_counts_present_members(void **state)
{
    struct invalbus *b = bus_new(3);
    uint64_t c;

    (void)state;
    invalbus_join(b, 0, &c);
    invalbus_join(b, 1, &c);
    invalbus_lease_sent(b, 0, NOW); /* both lease their connections */
    invalbus_lease_sent(b, 1, NOW);
    /* member 2 never started: it holds nobody up */
    assert_int_equal(invalbus_publish(b, 0, "alice", 5), 1);
    assert_false(invalbus_done(b, 1, NOW));
    invalbus_set_applied(b, 0, 1);
    assert_false(invalbus_done(b, 1, NOW));
    invalbus_clear_wake(b, 0);
    invalbus_set_applied(b, 1, 1);
    assert_true(woken(b, 0)); /* news for whoever waits */
    assert_true(invalbus_done(b, 1, NOW));
    assert_int_equal(invalbus_publish(b, 1, "bob", 3), 2);
    invalbus_set_applied(b, 1, 2);
    assert_false(invalbus_done(b, 2, NOW));
    invalbus_leave(b, 0); /* a member that stops (or died) no longer counts */
    assert_true(invalbus_done(b, 2, NOW));
    /* one that joins later starts with everything applied */
    invalbus_join(b, 2, &c);
    invalbus_lease_sent(b, 2, NOW);
    assert_int_equal(c, 2);
    assert_true(invalbus_done(b, 2, NOW));
    bus_free(b);
}

/*
 * A member that has sent no LEASE for INVALBUS_SILENT_MS (or never) holds nobody up: none of
 * its connections' server1s may use a cache through it; one that sent one just now does.
 */
static void test_invalbus_done_skips_silent_members(void **state)
{
    struct invalbus *b = bus_new(2);
    const uint64_t ms = 1000000;
    uint64_t c;

    (void)state;
    invalbus_join(b, 0, &c);
    invalbus_join(b, 1, &c);
    assert_int_equal(invalbus_publish(b, INVALBUS_FEED, "alice", 5), 1);
    assert_true(woken(b, 0)); /* the feed wakes every member */
    assert_true(woken(b, 1));
    assert_true(invalbus_done(b, 1, NOW)); /* neither ever leased */
    invalbus_lease_sent(b, 1, NOW);
    assert_false(invalbus_done(b, 1, NOW));
    assert_false(invalbus_done(b, 1, NOW + (INVALBUS_SILENT_MS - 1) * ms));
    assert_true(invalbus_done(b, 1, NOW + INVALBUS_SILENT_MS * ms)); /* stuck: its leases ran out */
    invalbus_lease_sent(b, 1, NOW + INVALBUS_SILENT_MS * ms); /* back: it holds up again */
    assert_false(invalbus_done(b, 1, NOW + INVALBUS_SILENT_MS * ms));
    invalbus_set_applied(b, 1, 1);
    assert_true(invalbus_done(b, 1, NOW + INVALBUS_SILENT_MS * ms));
    bus_free(b);
}

/* The feed's side: grants, what a member waits for, what every live server2 applied. */
static void test_invalbus_feed_fields(void **state)
{
    struct invalbus *b = bus_new(2);
    struct pollfd pfd;
    uint64_t c;

    (void)state;
    invalbus_join(b, 0, &c);
    invalbus_join(b, 1, &c);
    assert_int_equal(strlen(b->peer_id), INVALBUS_PEER_ID_LEN);
    assert_false(invalbus_may_lease(b, NOW));
    invalbus_set_grant(b, NOW + 10);
    assert_true(invalbus_may_lease(b, NOW + 9));
    assert_false(invalbus_may_lease(b, NOW + 10));
    pfd = (struct pollfd){.fd = invalbus_feed_fd(b), .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 0), 0);
    invalbus_want(b, 7);
    invalbus_want(b, 5); /* never lowers it */
    assert_int_equal(invalbus_wanted(b), 7);
    assert_int_equal(poll(&pfd, 1, 0), 1); /* the feed is woken */
    invalbus_clear_feed_wake(b);
    assert_int_equal(poll(&pfd, 1, 0), 0);
    invalbus_set_applied(b, 0, 3); /* a member applied: the feed is woken too */
    assert_int_equal(poll(&pfd, 1, 0), 1);
    invalbus_clear_feed_wake(b);
    invalbus_clear_wake(b, 0);
    invalbus_clear_wake(b, 1);
    invalbus_set_feed_done(b, 7);
    assert_int_equal(invalbus_feed_done(b), 7);
    assert_true(woken(b, 0)); /* every waiting loop looks again */
    assert_true(woken(b, 1));
    invalbus_set_feed_done(b, 6); /* never goes back */
    assert_int_equal(invalbus_feed_done(b), 7);
    bus_free(b);
}

/* INVALBUS_RING entries behind: every one still readable; one more: an overrun. */
static void test_invalbus_ring_bound(void **state)
{
    struct invalbus *b = bus_new(2);
    uint64_t c0;
    uint64_t c1;
    char user[ACCOUNT_USER_MAX];
    char want[16];
    uint8_t len = 0;

    (void)state;
    invalbus_join(b, 0, &c0);
    invalbus_join(b, 1, &c1);
    for (unsigned i = 1; i <= INVALBUS_RING; i++) {
        snprintf(want, sizeof(want), "u%u", i);
        invalbus_publish(b, 0, want, strlen(want));
    }
    for (unsigned i = 1; i <= INVALBUS_RING; i++) {
        assert_int_equal(invalbus_next(b, &c1, user, &len), 1);
        snprintf(want, sizeof(want), "u%u", i);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(user, want, len);
    }
    assert_int_equal(invalbus_next(b, &c1, user, &len), 0);
    for (unsigned i = 0; i <= INVALBUS_RING; i++)
        invalbus_publish(b, 0, "x", 1);
    assert_int_equal(invalbus_next(b, &c1, user, &len), -1);
    assert_int_equal(c1, 2 * INVALBUS_RING + 1); /* jumped to the newest */
    assert_int_equal(invalbus_next(b, &c1, user, &len), 0);
    bus_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalbus_order_and_wakes),
        cmocka_unit_test(test_invalbus_done_counts_present_members),
        cmocka_unit_test(test_invalbus_done_skips_silent_members),
        cmocka_unit_test(test_invalbus_feed_fields),
        cmocka_unit_test(test_invalbus_ring_bound),
    };
    return cmocka_run_group_tests_name("invalbus", tests, NULL, NULL);
}
