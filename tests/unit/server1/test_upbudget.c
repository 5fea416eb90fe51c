/*
 * test_upbudget.c - cmocka tests for server1/upbudget: bodies go to memory while the total and
 * the account's share allow, then to temp files; the temp share refuses an account's second
 * body but never its first; other accounts are not held back by one that fills its share;
 * release gives everything back (and forgets the account); a growing (chunked) body grows by
 * the same rules; many threads taking and releasing leave the totals at 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <errno.h>
#include <pthread.h>

#include <cmocka.h>

#include "../../../server1/upbudget.h"

#define MiB (1024ull * 1024)

static void test_upbudget_memory_then_temp(void **state)
{
    struct upbudget b;
    struct upbudget_ticket t[4];
    uint64_t mem, temp;
    (void)state;

    /* 8 MiB of memory, 100 MiB of temp files, 50% each per account; bodies of 16 MiB at most
     * in memory */
    upbudget_init(&b, 8 * MiB, 100 * MiB, 50, 16 * MiB);
    assert_int_equal(upbudget_take(&b, "alice", 3 * MiB, &t[0]), UPBUDGET_MEM);
    /* alice's share of memory is 4 MiB: the next 3 MiB go to a temp file */
    assert_int_equal(upbudget_take(&b, "alice", 3 * MiB, &t[1]), UPBUDGET_TEMP);
    /* bob has a share of his own */
    assert_int_equal(upbudget_take(&b, "bob", 4 * MiB, &t[2]), UPBUDGET_MEM);
    /* the total is 7 of 8 MiB: carol's 2 MiB no longer fit in memory */
    assert_int_equal(upbudget_take(&b, "carol", 2 * MiB, &t[3]), UPBUDGET_TEMP);
    upbudget_held(&b, "alice", &mem, &temp);
    assert_int_equal(mem, 3 * MiB);
    assert_int_equal(temp, 3 * MiB);
    assert_int_equal(b.mem_used, 7 * MiB);
    assert_int_equal(b.temp_used, 5 * MiB);
    for (int i = 0; i < 4; i++)
        upbudget_release(&b, &t[i]);
    assert_int_equal(b.mem_used, 0);
    assert_int_equal(b.temp_used, 0);
    assert_int_equal(b.naccounts, 0);
    upbudget_held(&b, "alice", &mem, &temp);
    assert_int_equal(mem + temp, 0);
    upbudget_release_all(&b);
    /* a body larger than body_mem_max never goes to memory */
    upbudget_init(&b, 64 * MiB, 100 * MiB, 100, 16 * MiB);
    assert_int_equal(upbudget_take(&b, "alice", 17 * MiB, &t[0]), UPBUDGET_TEMP);
    upbudget_release(&b, &t[0]);
    upbudget_release_all(&b);
}

static void test_upbudget_grow(void **state)
{
    struct upbudget b;
    struct upbudget_ticket t[3];
    uint64_t mem, temp;
    (void)state;

    /* 100 MiB of temp files, 30% per account */
    upbudget_init(&b, 64 * MiB, 100 * MiB, 30, 16 * MiB);
    /* a growing body is in a temp file even when memory has room */
    assert_int_equal(upbudget_take_temp(&b, "alice", 0, &t[0]), UPBUDGET_TEMP);
    /* alone, it may grow past the share, up to the total */
    assert_int_equal(upbudget_grow(&b, &t[0], 60 * MiB), 0);
    assert_int_equal(upbudget_grow(&b, &t[0], 40 * MiB), 0);
    assert_int_equal(upbudget_grow(&b, &t[0], 1), -EAGAIN);
    upbudget_held(&b, "alice", &mem, &temp);
    assert_int_equal(temp, 100 * MiB);
    assert_int_equal(t[0].len, 100 * MiB);
    upbudget_release(&b, &t[0]);
    assert_int_equal(b.temp_used, 0);
    /* with a second body of the account, the share holds */
    assert_int_equal(upbudget_take(&b, "alice", 20 * MiB, &t[0]), UPBUDGET_TEMP);
    assert_int_equal(upbudget_take_temp(&b, "alice", 0, &t[1]), UPBUDGET_TEMP);
    assert_int_equal(upbudget_grow(&b, &t[1], 10 * MiB), 0);
    assert_int_equal(upbudget_grow(&b, &t[1], 1), -EAGAIN); /* 30 MiB of 30% of 100 */
    assert_int_equal(t[1].len, 10 * MiB);
    /* another account is not held back */
    assert_int_equal(upbudget_take_temp(&b, "bob", 0, &t[2]), UPBUDGET_TEMP);
    assert_int_equal(upbudget_grow(&b, &t[2], 30 * MiB), 0);
    for (int i = 0; i < 3; i++)
        upbudget_release(&b, &t[i]);
    assert_int_equal(b.temp_used, 0);
    assert_int_equal(b.naccounts, 0);
    upbudget_release_all(&b);
}

static void test_upbudget_temp_share(void **state)
{
    struct upbudget b;
    struct upbudget_ticket a1, a2, bob, big, none = {0};
    (void)state;

    /* no memory: everything in temp files, 4 MiB in all, 25% (1 MiB) per account */
    upbudget_init(&b, 0, 4 * MiB, 25, 16 * MiB);
    /* alice's first body is over her share, but one body always fits a share */
    assert_int_equal(upbudget_take(&b, "alice", 2 * MiB, &a1), UPBUDGET_TEMP);
    /* her second is refused: she holds 2 MiB of her 1 MiB */
    assert_int_equal(upbudget_take(&b, "alice", 2 * MiB, &a2), -EAGAIN);
    assert_null(a2.account);
    /* bob's fits: the other 2 MiB are his to take */
    assert_int_equal(upbudget_take(&b, "bob", 2 * MiB, &bob), UPBUDGET_TEMP);
    /* the total is full: carol's first gets nothing either */
    assert_int_equal(upbudget_take(&b, "carol", 1, &big), -EAGAIN);
    /* once alice's first is done, she may send the next */
    upbudget_release(&b, &a1);
    assert_int_equal(upbudget_take(&b, "alice", 2 * MiB, &a2), UPBUDGET_TEMP);
    upbudget_release(&b, &a2);
    upbudget_release(&b, &bob);
    upbudget_release(&b, &none); /* holds nothing: nothing happens */
    assert_int_equal(b.temp_used, 0);
    /* within her share, several bodies of one account are fine */
    assert_int_equal(upbudget_take(&b, "alice", 512 * 1024, &a1), UPBUDGET_TEMP);
    assert_int_equal(upbudget_take(&b, "alice", 512 * 1024, &a2), UPBUDGET_TEMP);
    assert_int_equal(upbudget_take(&b, "alice", 1, &big), -EAGAIN);
    upbudget_release(&b, &a1);
    upbudget_release(&b, &a2);
    /* 100%: one account may take all of it */
    b.share_pct = 100;
    assert_int_equal(upbudget_take(&b, "alice", 2 * MiB, &a1), UPBUDGET_TEMP);
    assert_int_equal(upbudget_take(&b, "alice", 2 * MiB, &a2), UPBUDGET_TEMP);
    upbudget_release(&b, &a1);
    upbudget_release(&b, &a2);
    upbudget_release_all(&b);
}

static void test_upbudget_many_accounts(void **state)
{
    struct upbudget b;
    static struct upbudget_ticket t[1000];
    char name[32];
    (void)state;

    /* more accounts than the table's first size: it grows, every one is found again */
    upbudget_init(&b, 1000, 0, 100, 16 * MiB);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "user%d", i);
        assert_int_equal(upbudget_take(&b, name, 1, &t[i]), UPBUDGET_MEM);
    }
    assert_int_equal(b.naccounts, 1000);
    assert_int_equal(b.mem_used, 1000);
    for (int i = 0; i < 1000; i += 2)
        upbudget_release(&b, &t[i]);
    for (int i = 1; i < 1000; i += 2) {
        uint64_t mem, temp;
        snprintf(name, sizeof(name), "user%d", i);
        upbudget_held(&b, name, &mem, &temp);
        assert_int_equal(mem, 1);
        upbudget_release(&b, &t[i]);
    }
    assert_int_equal(b.naccounts, 0);
    assert_int_equal(b.mem_used, 0);
    upbudget_release_all(&b);
}

static struct upbudget shared;

static void *churn(void *arg)
{
    const char *user = arg;
    for (int i = 0; i < 20000; i++) {
        struct upbudget_ticket t;
        if (upbudget_take(&shared, user, 1000, &t) > 0)
            upbudget_release(&shared, &t);
    }
    return NULL;
}

static void test_upbudget_threads(void **state)
{
    static char users[4][8] = {"a", "b", "c", "a"};
    pthread_t th[4];
    (void)state;

    upbudget_init(&shared, 2500, 2500, 50, 16 * MiB);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, churn, users[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(shared.mem_used, 0);
    assert_int_equal(shared.temp_used, 0);
    assert_int_equal(shared.naccounts, 0);
    upbudget_release_all(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upbudget_memory_then_temp),
        cmocka_unit_test(test_upbudget_temp_share),
        cmocka_unit_test(test_upbudget_grow),
        cmocka_unit_test(test_upbudget_many_accounts),
        cmocka_unit_test(test_upbudget_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
