/*
 * test_upindex.c - cmocka tests for server1/upindex: values round-trip (every field, large
 * and zero ones, a version or none); keys put in order, in reverse and at random read back and
 * walk in order; seeks to present and absent keys, before the first and past the last; a
 * replaced value keeps the order and the count; removals of first, last and middle entries,
 * of whole blocks and of everything (then the index takes keys again); keys of every length
 * up to UPINDEX_KEY_MAX; a long random mix of puts and removals checked against a sorted array
 * with upindex_check after each round; and the memory per entry of numbered names put in
 * order and at random.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/upindex.h"

static void check(const struct upindex *x)
{
    char err[128];

    if (upindex_check(x, err) != 0)
        fail_msg("upindex_check: %s", err);
}

static struct upval val_of(uint64_t i)
{
    return (struct upval){.seg = (uint32_t)(i % 1000),
                          .owner = (uint32_t)(i % 7),
                          .rec_off = i * 97,
                          .size = i * 3,
                          .version = i % 5 == 0 ? 0 : 1700000000000000000ull + i,
                          .flags = i % 11 == 0 ? UPVAL_WHITEOUT : 0};
}

static void assert_val(const struct upval *a, const struct upval *b)
{
    assert_int_equal(a->seg, b->seg);
    assert_int_equal(a->owner, b->owner);
    assert_int_equal(a->rec_off, b->rec_off);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->flags, b->flags);
}

/* "d/NNN/NNNNNNN" of i: numbered names, as the store's keys of a tree of uploads look */
static size_t key_of(uint64_t i, char *k)
{
    return (size_t)sprintf(k, "d%03llu\x01%07llu", (unsigned long long)(i / 10000 % 1000),
                           (unsigned long long)i);
}

static void test_upindex_values(void **state)
{
    struct upindex x;
    struct upval v[4] = {
        {0},
        {.seg = UINT32_MAX, .owner = UINT32_MAX, .rec_off = UINT64_MAX, .size = UINT64_MAX,
         .version = UINT64_MAX, .flags = UPVAL_WHITEOUT},
        {.seg = 1, .owner = 0, .rec_off = 1ull << 32, .size = 1ull << 40, .version = 1},
        {.seg = 128, .owner = 16384, .rec_off = 127, .size = 0, .version = 1ull << 63},
    }, got;

    (void)state;
    upindex_init(&x);
    for (int i = 0; i < 4; i++) {
        char k[2] = {(char)('a' + i), 0};
        assert_false(upindex_put(&x, (const uint8_t *)k, 1, &v[i], NULL));
    }
    for (int i = 0; i < 4; i++) {
        char k[2] = {(char)('a' + i), 0};
        assert_true(upindex_get(&x, (const uint8_t *)k, 1, &got));
        assert_val(&got, &v[i]);
    }
    assert_false(upindex_get(&x, (const uint8_t *)"e", 1, &got));
    assert_false(upindex_get(&x, (const uint8_t *)"", 0, &got));
    assert_false(upindex_get(&x, (const uint8_t *)"aa", 2, &got));
    check(&x);
    upindex_release(&x);
}

/* puts n keys in the order perm gives, then checks every one and the walk */
static void put_and_walk(const uint64_t *perm, size_t n)
{
    struct upindex x;
    struct upindex_iter it;
    struct upval v, want;
    char k[64];
    size_t len;

    upindex_init(&x);
    for (size_t i = 0; i < n; i++) {
        len = key_of(perm[i], k);
        want = val_of(perm[i]);
        assert_false(upindex_put(&x, (const uint8_t *)k, len, &want, NULL));
    }
    check(&x);
    assert_int_equal(x.count, n);
    assert_true(x.nblocks > n / 128);
    for (uint64_t i = 0; i < n; i++) {
        len = key_of(i, k);
        assert_true(upindex_get(&x, (const uint8_t *)k, len, &v));
        want = val_of(i);
        assert_val(&v, &want);
    }
    upindex_seek(&x, NULL, 0, &it);
    for (uint64_t i = 0; i < n; i++) {
        assert_true(upindex_next(&it, &v));
        len = key_of(i, k);
        assert_int_equal(it.klen, len);
        assert_memory_equal(it.key, k, len);
        want = val_of(i);
        assert_val(&v, &want);
    }
    assert_false(upindex_next(&it, &v));
    upindex_release(&x);
}

static void test_upindex_orders(void **state)
{
    enum { N = 30000 };
    uint64_t *p = malloc(N * sizeof(*p));

    (void)state;
    for (size_t i = 0; i < N; i++)
        p[i] = i;
    put_and_walk(p, N);
    for (size_t i = 0; i < N; i++)
        p[i] = N - 1 - i;
    put_and_walk(p, N);
    srand(7);
    for (size_t i = N - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1);
        uint64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    put_and_walk(p, N);
    free(p);
}

static void test_upindex_seek(void **state)
{
    struct upindex x;
    struct upindex_iter it;
    struct upval v = {0};
    char k[64];

    (void)state;
    upindex_init(&x);
    upindex_seek(&x, (const uint8_t *)"a", 1, &it);
    assert_false(upindex_next(&it, NULL)); /* empty */
    for (int i = 0; i < 5000; i += 2) {    /* even numbers only */
        size_t len = (size_t)sprintf(k, "k%05d", i);
        upindex_put(&x, (const uint8_t *)k, len, &v, NULL);
    }
    for (int i = 0; i < 5000; i++) {
        size_t len = (size_t)sprintf(k, "k%05d", i);
        char want[16];
        upindex_seek(&x, (const uint8_t *)k, len, &it);
        if (i == 4999) {
            assert_false(upindex_next(&it, NULL));
            continue;
        }
        assert_true(upindex_next(&it, NULL));
        sprintf(want, "k%05d", i % 2 ? i + 1 : i); /* itself, or the next one there */
        assert_int_equal(it.klen, 6);
        assert_memory_equal(it.key, want, 6);
    }
    upindex_seek(&x, (const uint8_t *)"a", 1, &it); /* before the first */
    assert_true(upindex_next(&it, NULL));
    assert_memory_equal(it.key, "k00000", 6);
    upindex_seek(&x, (const uint8_t *)"k", 1, &it); /* a prefix of them all */
    assert_true(upindex_next(&it, NULL));
    assert_memory_equal(it.key, "k00000", 6);
    upindex_seek(&x, (const uint8_t *)"k04998\x00", 7, &it); /* just after the last */
    assert_false(upindex_next(&it, NULL));
    upindex_seek(&x, (const uint8_t *)"z", 1, &it);
    assert_false(upindex_next(&it, NULL));
    upindex_release(&x);
}

static void test_upindex_replace(void **state)
{
    struct upindex x;
    struct upval v = val_of(3), w = val_of(10), old, got;
    char k[64];
    size_t len;

    (void)state;
    upindex_init(&x);
    for (uint64_t i = 0; i < 3000; i++) {
        len = key_of(i, k);
        upindex_put(&x, (const uint8_t *)k, len, &v, NULL);
    }
    for (uint64_t i = 0; i < 3000; i += 3) {
        len = key_of(i, k);
        w = val_of(i + 1);
        assert_true(upindex_put(&x, (const uint8_t *)k, len, &w, &old));
        assert_val(&old, &v);
    }
    assert_int_equal(x.count, 3000);
    check(&x);
    for (uint64_t i = 0; i < 3000; i++) {
        len = key_of(i, k);
        assert_true(upindex_get(&x, (const uint8_t *)k, len, &got));
        w = i % 3 == 0 ? val_of(i + 1) : v;
        assert_val(&got, &w);
    }
    upindex_release(&x);
}

static void test_upindex_remove(void **state)
{
    enum { N = 6000 };
    struct upindex x;
    struct upindex_iter it;
    struct upval v, old;
    char k[64];
    size_t len;

    (void)state;
    upindex_init(&x);
    for (uint64_t i = 0; i < N; i++) {
        len = key_of(i, k);
        v = val_of(i);
        upindex_put(&x, (const uint8_t *)k, len, &v, NULL);
    }
    /* the first, the last, one in the middle; one absent */
    len = key_of(0, k);
    assert_true(upindex_del(&x, (const uint8_t *)k, len, &old));
    v = val_of(0);
    assert_val(&old, &v);
    assert_false(upindex_del(&x, (const uint8_t *)k, len, NULL));
    len = key_of(N - 1, k);
    assert_true(upindex_del(&x, (const uint8_t *)k, len, NULL));
    len = key_of(N / 2, k);
    assert_true(upindex_del(&x, (const uint8_t *)k, len, NULL));
    check(&x);
    assert_int_equal(x.count, N - 3);
    /* a new greatest key after the last was removed */
    len = key_of(N + 5, k);
    v = val_of(N + 5);
    assert_false(upindex_put(&x, (const uint8_t *)k, len, &v, NULL));
    check(&x);
    /* whole blocks: every key from 1000 to 3999 */
    for (uint64_t i = 1000; i < 4000; i++) {
        len = key_of(i, k);
        assert_int_equal(upindex_del(&x, (const uint8_t *)k, len, NULL), i != N / 2);
    }
    check(&x);
    len = key_of(999, k);
    upindex_seek(&x, (const uint8_t *)k, len, &it);
    assert_true(upindex_next(&it, NULL));
    assert_true(upindex_next(&it, &v)); /* 999, then 4000 */
    len = key_of(4000, k);
    assert_memory_equal(it.key, k, len);
    /* everything, from the end */
    for (uint64_t i = N + 6; i-- > 0;) {
        len = key_of(i, k);
        upindex_del(&x, (const uint8_t *)k, len, NULL);
    }
    check(&x);
    assert_int_equal(x.count, 0);
    assert_int_equal(x.nblocks, 1);
    assert_int_equal(x.bytes, 0);
    upindex_seek(&x, NULL, 0, &it);
    assert_false(upindex_next(&it, NULL));
    /* and it takes keys again, out of order */
    for (uint64_t i = 0; i < 2000; i++) {
        len = key_of((i * 7919) % 2000, k);
        v = val_of(i);
        assert_false(upindex_put(&x, (const uint8_t *)k, len, &v, NULL));
    }
    check(&x);
    assert_int_equal(x.count, 2000);
    upindex_release(&x);
}

/* keys of every length, long ones sharing long prefixes, a block of one key over the size */
static void test_upindex_long_keys(void **state)
{
    struct upindex x;
    struct upval v = val_of(1), got;
    static uint8_t k[UPINDEX_KEY_MAX];

    (void)state;
    upindex_init(&x);
    memset(k, 'a', sizeof(k));
    for (size_t len = 1; len <= UPINDEX_KEY_MAX; len += 7) {
        k[len - 1] = 'b';
        v.size = len;
        assert_false(upindex_put(&x, k, len, &v, NULL));
        k[len - 1] = 'a';
    }
    k[UPINDEX_KEY_MAX - 1] = 'c';
    assert_false(upindex_put(&x, k, UPINDEX_KEY_MAX, &v, NULL));
    check(&x);
    k[UPINDEX_KEY_MAX - 1] = 'a';
    for (size_t len = 1; len <= UPINDEX_KEY_MAX; len += 7) {
        k[len - 1] = 'b';
        assert_true(upindex_get(&x, k, len, &got));
        assert_int_equal(got.size, len);
        k[len - 1] = 'a';
        assert_false(upindex_get(&x, k, len, NULL));
    }
    for (size_t len = 1; len <= UPINDEX_KEY_MAX; len += 14) {
        k[len - 1] = 'b';
        assert_true(upindex_del(&x, k, len, NULL));
        k[len - 1] = 'a';
    }
    check(&x);
    upindex_release(&x);
}

/* A reference: a sorted array of (key number, value number). */
struct ref {
    uint64_t *keys, *vals;
    size_t n;
};

static size_t ref_find(const struct ref *r, uint64_t key, bool *found)
{
    size_t lo = 0, hi = r->n;
    char a[64], b[64];
    size_t al = key_of(key, a);

    while (lo < hi) { /* by the keys' bytes, as the index orders them */
        size_t mid = (lo + hi) / 2, bl = key_of(r->keys[mid], b);
        int c = memcmp(b, a, al < bl ? al : bl);
        if (c == 0)
            c = (bl > al) - (bl < al);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < r->n && r->keys[lo] == key;
    return lo;
}

static void test_upindex_random_mix(void **state)
{
    enum { KEYS = 40000, OPS = 200000, ROUNDS = 10 };
    struct upindex x;
    struct ref r = {malloc(KEYS * sizeof(uint64_t)), malloc(KEYS * sizeof(uint64_t)), 0};
    struct upindex_iter it;
    struct upval v, want, old;
    char k[64];

    (void)state;
    srand(11);
    upindex_init(&x);
    for (int round = 0; round < ROUNDS; round++) {
        for (int op = 0; op < OPS / ROUNDS; op++) {
            uint64_t key = (uint64_t)rand() % KEYS, val = (uint64_t)rand();
            size_t len = key_of(key * 13, k), at;
            bool found, had;
            at = ref_find(&r, key * 13, &found);
            if (rand() % 3 == 0) {
                had = upindex_del(&x, (const uint8_t *)k, len, &old);
                assert_int_equal(had, found);
                if (found) {
                    want = val_of(r.vals[at]);
                    assert_val(&old, &want);
                    memmove(r.keys + at, r.keys + at + 1, (r.n - at - 1) * sizeof(uint64_t));
                    memmove(r.vals + at, r.vals + at + 1, (r.n - at - 1) * sizeof(uint64_t));
                    r.n--;
                }
                continue;
            }
            v = val_of(val);
            had = upindex_put(&x, (const uint8_t *)k, len, &v, &old);
            assert_int_equal(had, found);
            if (!found) {
                memmove(r.keys + at + 1, r.keys + at, (r.n - at) * sizeof(uint64_t));
                memmove(r.vals + at + 1, r.vals + at, (r.n - at) * sizeof(uint64_t));
                r.n++;
                r.keys[at] = key * 13;
            }
            r.vals[at] = val;
        }
        check(&x);
        assert_int_equal(x.count, r.n);
        upindex_seek(&x, NULL, 0, &it);
        for (size_t i = 0; i < r.n; i++) {
            size_t len = key_of(r.keys[i], k);
            assert_true(upindex_next(&it, &v));
            assert_int_equal(it.klen, len);
            assert_memory_equal(it.key, k, len);
            want = val_of(r.vals[i]);
            assert_val(&v, &want);
        }
        assert_false(upindex_next(&it, NULL));
    }
    upindex_release(&x);
    free(r.keys);
    free(r.vals);
}

/*
 * The memory of numbered names (each key 12 bytes, a value of 17 with its version): in order
 * the blocks fill (under 26 bytes an entry), and nearly so when the names come in order in
 * 100 directories at once, each after the last of its own, as uploads do (under 30; split in
 * half, the blocks would stay half empty: 44); at random they are half to whole full (under
 * 40): all under the 48 bytes per upload the store allows its whole index.
 */
static void test_upindex_memory(void **state)
{
    enum { N = 200000 };
    struct upindex x;
    char k[64];

    (void)state;
    static const char *what[] = {"in order", "at random", "in order in 100 places"};

    for (int pass = 0; pass < 3; pass++) {
        upindex_init(&x);
        for (uint64_t i = 0; i < N; i++) {
            uint64_t n = pass == 1 ? (i * 7919) % N : i;
            size_t len = pass < 2 ? key_of(n, k)
                                  : (size_t)sprintf(k, "d%03llu\x01%07llu",
                                                    (unsigned long long)(n % 100),
                                                    (unsigned long long)n);
            struct upval v = {.seg = (uint32_t)(n / 60000),
                              .owner = 3,
                              .rec_off = n * 1100 % 67108864,
                              .size = 1024,
                              .version = 1790000000000000000ull + n * 1000};
            upindex_put(&x, (const uint8_t *)k, len, &v, NULL);
        }
        check(&x);
        print_message("%s: %.1f bytes per entry (%zu blocks, %.1f allocated bytes per entry)\n",
                      what[pass], (double)upindex_bytes(&x) / N,
                      x.nblocks, (double)x.bytes / N);
        assert_true(upindex_bytes(&x) < (size_t)N * (pass == 0 ? 26 : pass == 1 ? 40 : 30));
        upindex_release(&x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upindex_values),
        cmocka_unit_test(test_upindex_orders),
        cmocka_unit_test(test_upindex_seek),
        cmocka_unit_test(test_upindex_replace),
        cmocka_unit_test(test_upindex_remove),
        cmocka_unit_test(test_upindex_long_keys),
        cmocka_unit_test(test_upindex_random_mix),
        cmocka_unit_test(test_upindex_memory),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
