/*
 * test_pack.c - cmocka tests for server1/pack: the index coder (round trips at every block
 * size, block edges, absent names between and beyond entries, prefixes, the name limit), the
 * header and index checks of pack_open_mem, and pack_check's structural checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/pack.h"

#define MAXN 300

static char names[MAXN][64];
static struct pack_src src[MAXN];

/* n sorted names: "dAA/fBB" with a few longer ones, sizes and mtimes that vary up and down. */
static void make_src(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "d%02zu/%sf%02zu", i / 10,
                 i % 7 == 3 ? "long-prefix-\xc3\xa9/" : "", i % 10);
        src[i] = (struct pack_src){.name = names[i], .name_len = strlen(names[i]),
                                   .size = (i * 37) % 3000,
                                   .mtime_s = 1700000000 + (int64_t)((i * 7919) % 1000) - 500,
                                   .crc = (uint32_t)(i * 2654435761u)};
    }
    /* in bytewise order ("dAA/fBB" and "dAA/long-prefix-.../fBB" interleave) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(src[j - 1].name, src[j].name) > 0; j--) {
            struct pack_src t = src[j];
            src[j] = src[j - 1];
            src[j - 1] = t;
        }
}

/* A whole pack image of src[0..n): header, zeroed data, index. Free with free(). */
static uint8_t *make_image(size_t n, unsigned block_names, unsigned align, size_t *len)
{
    char err[PACK_ERR_LEN];
    uint8_t *index;
    size_t index_len;
    uint64_t data_len;
    int64_t base;
    uint8_t *img;
    uint64_t off;

    assert_int_equal(pack_index_encode(src, n, block_names, align, &index, &index_len,
                                       &data_len, &base, err),
                     0);
    off = pack_index_off(data_len);
    *len = (size_t)(off + index_len);
    img = calloc(1, *len);
    assert_non_null(img);
    pack_header_make(img, n, block_names, align, data_len, index_len, base,
                     pack_crc32(0, index, index_len), pack_index_id(index, index_len));
    if (index_len > 0)
        memcpy(img + off, index, index_len);
    free(index);
    return img;
}

static void test_pack_round_trip(void **state)
{
    static const unsigned blocks[] = {1, 2, 3, 16, 32, 64, 1024};
    static const size_t counts[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 100, MAXN};
    char err[PACK_ERR_LEN];

    (void)state;
    make_src(MAXN);
    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            size_t n = counts[c], len, k = 0;
            uint8_t *img = make_image(n, blocks[b], 512, &len);
            struct pack p;
            struct pack_iter it;
            struct pack_entry e;
            uint64_t off = PACK_HEADER_BYTES;

            assert_int_equal(pack_open_mem(&p, img, len, true, err), 0);
            assert_int_equal(pack_check(&p, err), 0);
            assert_true(p.count == n);
            pack_iter_seek(&it, &p, "", 0);
            while (pack_iter_next(&it, &e)) {
                assert_true(k < n);
                assert_string_equal(it.name, src[k].name);
                assert_true(e.seq == k);
                assert_true(e.size == src[k].size);
                assert_true(e.mtime_s == src[k].mtime_s);
                assert_true(e.crc == src[k].crc);
                assert_true(e.off == off);
                assert_true(e.off % 512 == 0);
                off += pack_round_up(e.size, 512);
                k++;
            }
            assert_false(it.failed);
            assert_true(k == n);
            pack_close(&p);
            free(img);
        }
    }
}

static void test_pack_lookup_every_name_and_between(void **state)
{
    char err[PACK_ERR_LEN];
    char key[80];
    size_t n = 97, len;
    uint8_t *img;
    struct pack p;
    struct pack_entry e;

    (void)state;
    make_src(n);
    img = make_image(n, 16, 4096, &len);
    assert_int_equal(pack_open_mem(&p, img, len, true, err), 0);
    for (size_t i = 0; i < n; i++) {
        /* every name, the first and last of each block among them */
        assert_int_equal(pack_lookup(&p, src[i].name, src[i].name_len, &e), 1);
        assert_true(e.seq == i);
        assert_true(e.size == src[i].size);
        assert_true(e.off % 4096 == 0);
        /* just after it (a name with one more byte), and a prefix of it: absent */
        snprintf(key, sizeof(key), "%s0", src[i].name);
        assert_int_equal(pack_lookup(&p, key, strlen(key), &e), 0);
        assert_int_equal(pack_lookup(&p, src[i].name, src[i].name_len - 1, &e), 0);
    }
    /* before the first, after the last, empty, over-long */
    assert_int_equal(pack_lookup(&p, "a", 1, &e), 0);
    assert_int_equal(pack_lookup(&p, "c99", 3, &e), 0);
    assert_int_equal(pack_lookup(&p, "zzz", 3, &e), 0);
    assert_int_equal(pack_lookup(&p, "", 0, &e), 0);
    assert_int_equal(pack_lookup(&p, "d00/f00", FILES_NAME_MAX + 1, &e), 0);
    pack_close(&p);
    free(img);
}

static void test_pack_prefix(void **state)
{
    char err[PACK_ERR_LEN];
    size_t n = 100, len, k = 0, want = 0;
    uint8_t *img;
    struct pack p;
    struct pack_iter it;
    struct pack_entry e;

    (void)state;
    make_src(n);
    img = make_image(n, 32, 512, &len);
    assert_int_equal(pack_open_mem(&p, img, len, true, err), 0);
    assert_true(pack_has_prefix(&p, "d05/", 4));
    assert_true(pack_has_prefix(&p, "d03/long-prefix-\xc3\xa9/",
                                strlen("d03/long-prefix-\xc3\xa9/")));
    assert_true(pack_has_prefix(&p, "", 0));
    assert_false(pack_has_prefix(&p, "d10/", 4));
    assert_true(pack_has_prefix(&p, "d05/f", 5));
    assert_false(pack_has_prefix(&p, "d05/g", 5));
    assert_false(pack_has_prefix(&p, "e", 1));
    for (size_t i = 0; i < n; i++)
        want += strncmp(src[i].name, "d03/", 4) == 0;
    pack_iter_seek(&it, &p, "d03/", 4);
    while (pack_iter_next(&it, &e) && strncmp(it.name, "d03/", 4) == 0)
        k++;
    assert_true(k == want && k > 0);
    /* a seek past the end yields nothing */
    pack_iter_seek(&it, &p, "zz", 2);
    assert_false(pack_iter_next(&it, &e));
    assert_false(it.failed);
    pack_close(&p);
    free(img);
}

static void test_pack_name_max(void **state)
{
    static char longname[FILES_NAME_MAX + 2];
    char err[PACK_ERR_LEN];
    uint8_t *index;
    size_t index_len, len;
    uint64_t data_len;
    int64_t base;
    uint8_t *img;
    struct pack p;
    struct pack_entry e;

    (void)state;
    /* segments of 200 bytes: a name of exactly FILES_NAME_MAX bytes */
    memset(longname, 'a', FILES_NAME_MAX);
    for (size_t i = 200; i < FILES_NAME_MAX; i += 201)
        longname[i] = '/';
    src[0] = (struct pack_src){.name = "a", .name_len = 1, .size = 1};
    src[1] = (struct pack_src){.name = longname, .name_len = FILES_NAME_MAX, .size = 5};
    img = make_image(2, 2, 512, &len);
    assert_int_equal(pack_open_mem(&p, img, len, true, err), 0);
    assert_int_equal(pack_check(&p, err), 0);
    assert_int_equal(pack_lookup(&p, longname, FILES_NAME_MAX, &e), 1);
    assert_true(e.size == 5);
    pack_close(&p);
    free(img);
    /* one byte more is refused */
    longname[FILES_NAME_MAX] = 'a';
    src[1].name_len = FILES_NAME_MAX + 1;
    assert_int_equal(pack_index_encode(src, 2, 2, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_non_null(strstr(err, "not a name server1 serves"));
}

static void test_pack_encode_refuses(void **state)
{
    char err[PACK_ERR_LEN];
    uint8_t *index;
    size_t index_len;
    uint64_t data_len;
    int64_t base;

    (void)state;
    src[0] = (struct pack_src){.name = "b", .name_len = 1};
    src[1] = (struct pack_src){.name = "a", .name_len = 1};
    assert_int_equal(pack_index_encode(src, 2, 32, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_non_null(strstr(err, "out of order"));
    src[1] = (struct pack_src){.name = "b", .name_len = 1};
    assert_int_equal(pack_index_encode(src, 2, 32, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_non_null(strstr(err, "named twice"));
    src[1] = (struct pack_src){.name = "c/.s1store/x", .name_len = 12};
    assert_int_equal(pack_index_encode(src, 2, 32, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_non_null(strstr(err, "not a name"));
    src[1] = (struct pack_src){.name = "c", .name_len = 1, .size = PACK_FILE_SIZE_MAX + 1};
    assert_int_equal(pack_index_encode(src, 2, 32, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_non_null(strstr(err, "too big"));
    src[1].size = 1;
    assert_int_equal(pack_index_encode(src, 2, 32, 1000, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_int_equal(pack_index_encode(src, 2, 0, 512, &index, &index_len, &data_len, &base,
                                       err),
                     -1);
    assert_int_equal(pack_index_encode(src, 2, PACK_BLOCK_NAMES_MAX + 1, 512, &index,
                                       &index_len, &data_len, &base, err),
                     -1);
}

/* Opens img (len bytes) and expects it refused with want in the message. */
static void refused(const uint8_t *img, size_t len, bool check_crc, const char *want)
{
    char err[PACK_ERR_LEN] = "";
    struct pack p;

    assert_int_equal(pack_open_mem(&p, img, len, check_crc, err), -1);
    if (strstr(err, want) == NULL)
        fail_msg("'%s' does not say '%s'", err, want);
}

static void test_pack_open_refuses_damage(void **state)
{
    size_t len;
    uint8_t *img;

    (void)state;
    make_src(50);
    img = make_image(50, 16, 512, &len);
    refused(img, 10, true, "not a pack");
    refused(img, len - 1, true, "truncated or grown");
    img[len - 2] ^= 1; /* in the index */
    refused(img, len, true, "checksum does not match");
    img[len - 2] ^= 1;
    img[0] ^= 1;
    refused(img, len, true, "not a pack");
    img[0] ^= 1;
    img[8] = 2;
    refused(img, len, true, "pack version 2");
    img[8] = 1;
    img[20] ^= 1; /* the count: the header's own checksum */
    refused(img, len, true, "damaged pack header");
    img[20] ^= 1;
    free(img);
}

static void test_pack_check_finds_disorder(void **state)
{
    char err[PACK_ERR_LEN];
    size_t len;
    uint8_t *img;
    uint8_t *index;
    struct pack p;

    (void)state;
    src[0] = (struct pack_src){.name = "aa", .name_len = 2, .size = 1};
    src[1] = (struct pack_src){.name = "ab", .name_len = 2, .size = 1};
    img = make_image(2, 2, 512, &len);
    /* index: table (16 bytes), then "aa": len 2, 'a', 'a', ...: make it "ac" > "ab" */
    index = img + pack_index_off(1024);
    assert_int_equal(index[16], 2);
    index[18] = 'c';
    assert_int_equal(pack_open_mem(&p, img, len, false, err), 0);
    assert_int_equal(pack_check(&p, err), -1);
    assert_non_null(strstr(err, "out of order"));
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_lookup_every_name_and_between),
        cmocka_unit_test(test_pack_prefix),
        cmocka_unit_test(test_pack_name_max),
        cmocka_unit_test(test_pack_encode_refuses),
        cmocka_unit_test(test_pack_open_refuses_damage),
        cmocka_unit_test(test_pack_check_finds_disorder),
    };
    return cmocka_run_group_tests_name("pack", tests, NULL, NULL);
}
