/*
 * test_btree.c - cmocka tests for server1/btree: items in order after inserts in order, in
 * reverse and at random; seeks to present and absent keys and past the end; removals of
 * first items (separators follow), of whole leaves and of everything; a long random mix of
 * inserts and removals checked against a sorted array; and the fill of leaves when items come
 * in order (the memory per item); each without prefixes, with exact ones and with coarse ones
 * (separators' prefixes kept through splits and removals, ties decided in full).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/btree.h"

#define N 20000

static int cmp_int(const void *a, const void *b, void *arg)
{
    (void)arg;
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int vals[N];

/* The prefix the trees use: none, exact, or coarse (many ties: the full comparison decides). */
static int prefix_mode;

static btree_pfx int_prefix(const void *item, void *arg)
{
    (void)arg;
    btree_pfx v = (btree_pfx)((long long)*(const int *)item + 1000000);
    return prefix_mode == 1 ? v << 64 : v / 64;
}

#define prefix_fn (prefix_mode == 0 ? NULL : int_prefix)

static void check(const struct btree *t)
{
    char err[128];
    int rc = btree_check(t, err);
    if (rc != 0)
        fail_msg("btree_check: %s", err);
}

/* The items of t in order must be want[0..n). */
static void expect_items(const struct btree *t, const int *want, size_t n)
{
    struct btree_iter it;
    size_t i = 0;
    const int *p;

    btree_first(t, &it);
    while ((p = btree_next(&it)) != NULL) {
        assert_true(i < n);
        assert_int_equal(*p, want[i]);
        i++;
    }
    assert_int_equal(i, n);
    assert_int_equal(t->count, n);
}

static void test_btree_orders(void **state)
{
    int want[N];
    struct btree t;
    (void)state;

    for (int i = 0; i < N; i++)
        vals[i] = want[i] = 2 * i; /* even: odd keys are absent */
    for (int order = 0; order < 3; order++) {
        int idx[N];
        for (int i = 0; i < N; i++)
            idx[i] = order == 1 ? N - 1 - i : i;
        if (order == 2) { /* a fixed shuffle */
            srand(7);
            for (int i = N - 1; i > 0; i--) {
                int j = rand() % (i + 1), x = idx[i];
                idx[i] = idx[j];
                idx[j] = x;
            }
        }
        btree_init(&t, cmp_int, prefix_fn, NULL);
        for (int i = 0; i < N; i++)
            btree_insert(&t, &vals[idx[i]]);
        check(&t);
        expect_items(&t, want, N);
        assert_true(t.height >= 3);
        btree_release(&t);
        assert_null(t.root);
    }
}

static void test_btree_seek(void **state)
{
    struct btree t;
    struct btree_iter it;
    int key;
    (void)state;

    btree_init(&t, cmp_int, prefix_fn, NULL);
    btree_seek(&t, &key, NULL, cmp_int, &it); /* empty */
    assert_null(btree_next(&it));
    for (int i = 0; i < N; i++) {
        vals[i] = 2 * i;
        btree_insert(&t, &vals[i]);
    }
    for (key = -1; key <= 2 * N; key += 1) {
        int *p;
        btree_pfx kp = int_prefix(&key, NULL);
        /* (with the trees' prefixes: the key's too, every other time) */
        btree_seek(&t, &key, prefix_fn != NULL && key % 2 ? &kp : NULL, cmp_int, &it);
        p = btree_next(&it);
        if (key > 2 * N - 2) {
            assert_null(p);
        } else {
            assert_non_null(p);
            assert_int_equal(*p, key <= 0 ? 0 : (key + 1) / 2 * 2);
            /* and on from there */
            p = btree_next(&it);
            if (p != NULL)
                assert_int_equal(*p, (key <= 0 ? 0 : (key + 1) / 2 * 2) + 2);
        }
    }
    btree_release(&t);
}

static void test_btree_remove(void **state)
{
    struct btree t;
    int want[N];
    size_t n = 0;
    int absent = 1;
    (void)state;

    btree_init(&t, cmp_int, prefix_fn, NULL);
    for (int i = 0; i < N; i++) {
        vals[i] = 2 * i;
        btree_insert(&t, &vals[i]);
    }
    assert_false(btree_remove(&t, &absent));
    /* every item that is first of a leaf or a subtree goes, in order: separators move on */
    for (int i = 0; i < N; i += 3)
        assert_true(btree_remove(&t, &vals[i]));
    check(&t);
    for (int i = 0; i < N; i++)
        if (i % 3 != 0)
            want[n++] = 2 * i;
    expect_items(&t, want, n);
    /* a whole stretch, leaves and inner nodes with it */
    for (int i = 1000; i < 15000; i++)
        if (i % 3 != 0)
            assert_true(btree_remove(&t, &vals[i]));
    check(&t);
    n = 0;
    for (int i = 0; i < N; i++)
        if (i % 3 != 0 && (i < 1000 || i >= 15000))
            want[n++] = 2 * i;
    expect_items(&t, want, n);
    assert_false(btree_remove(&t, &vals[3])); /* gone already */
    /* everything */
    for (int i = 0; i < N; i++)
        btree_remove(&t, &vals[i]);
    check(&t);
    assert_int_equal(t.count, 0);
    assert_null(t.root);
    assert_int_equal(btree_bytes(&t), 0);
    /* and it works again */
    btree_insert(&t, &vals[5]);
    expect_items(&t, &vals[5], 1);
    btree_release(&t);
}

static void test_btree_random_mix(void **state)
{
    static int in[N]; /* 1 if vals[i] is in the tree */
    struct btree t;
    uint64_t x = 88172645463325252ull;
    (void)state;

    btree_init(&t, cmp_int, prefix_fn, NULL);
    memset(in, 0, sizeof(in));
    for (int i = 0; i < N; i++)
        vals[i] = i;
    for (int step = 0; step < 400000; step++) {
        int i;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i = (int)(x % N);
        if (in[i]) {
            assert_true(btree_remove(&t, &vals[i]));
        } else {
            btree_insert(&t, &vals[i]);
        }
        in[i] = !in[i];
        if (step % 50000 == 0)
            check(&t);
    }
    check(&t);
    {
        int want[N];
        size_t n = 0;
        for (int i = 0; i < N; i++)
            if (in[i])
                want[n++] = i;
        expect_items(&t, want, n);
    }
    btree_release(&t);
}

static void test_btree_fill(void **state)
{
    struct btree t;
    (void)state;

    /* in order, the leaves fill: 8.4 bytes per item, and the inner nodes about 0.6 */
    btree_init(&t, cmp_int, prefix_fn, NULL);
    for (int i = 0; i < N; i++) {
        vals[i] = i;
        btree_insert(&t, &vals[i]);
    }
    check(&t);
    assert_true(btree_bytes(&t) < (size_t)N * 10);
    btree_release(&t);
    /* at random, about two thirds full: under 14 bytes per item */
    btree_init(&t, cmp_int, prefix_fn, NULL);
    srand(11);
    for (int i = 0; i < N; i++)
        vals[i] = rand();
    for (int i = 0; i < N; i++) {
        int dup = 0;
        /* (rand() may repeat: skip equal items, which a tree of names never holds) */
        struct btree_iter it;
        int *p;
        btree_seek(&t, &vals[i], NULL, cmp_int, &it);
        p = btree_next(&it);
        dup = p != NULL && *p == vals[i];
        if (!dup)
            btree_insert(&t, &vals[i]);
    }
    check(&t);
    assert_true(btree_bytes(&t) < t.count * 14);
    btree_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_btree_orders),
        cmocka_unit_test(test_btree_seek),
        cmocka_unit_test(test_btree_remove),
        cmocka_unit_test(test_btree_random_mix),
        cmocka_unit_test(test_btree_fill),
    };
    int failed = 0;

    /* every test without prefixes, with exact ones, and with coarse ones */
    for (prefix_mode = 0; prefix_mode < 3; prefix_mode++)
        failed += cmocka_run_group_tests(tests, NULL, NULL);
    return failed;
}
