/*
 * test_files.c - cmocka tests for files_name_decode (server1/files): every traversal form
 * is rejected, good names (nested ones too) are accepted and decoded once; and for
 * files_name_is_reserved (the upload temp namespace).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../server1/files.h"

static char out[FILES_NAME_MAX + 1];

static void accept_name(const char *raw, const char *want)
{
    size_t len = 0;
    const char *why = NULL;
    if (files_name_decode(raw, strlen(raw), out, sizeof(out), &len, &why) != 0)
        fail_msg("'%s' rejected (%s)", raw, why);
    assert_string_equal(out, want);
    assert_int_equal(len, strlen(want));
}

static void reject_name(const char *raw)
{
    size_t len = 0;
    const char *why = NULL;
    if (files_name_decode(raw, strlen(raw), out, sizeof(out), &len, &why) == 0)
        fail_msg("'%s' accepted as '%s'", raw, out);
    assert_non_null(why);
}

static void test_files_path_good(void **state)
{
    (void)state;
    accept_name("a.txt", "a.txt");
    accept_name("1KB", "1KB");
    accept_name("a/b.txt", "a/b.txt");
    accept_name("a/b/c/d", "a/b/c/d");
    accept_name(".hidden", ".hidden");
    accept_name("..a", "..a");
    accept_name("a..", "a..");
    accept_name("...", "...");
    accept_name("a%20b", "a b");
    accept_name("%41", "A");
    accept_name("a+b", "a+b");        /* '+' is literal in paths */
    accept_name("100%25", "100%");    /* decoded once: %25 -> '%' */
    accept_name("%252e%252e", "%2e%2e");
    accept_name("caf%C3%A9", "caf\xc3\xa9");
}

static void test_files_path_traversal(void **state)
{
    (void)state;
    reject_name("..");
    reject_name("../etc/passwd");
    reject_name("a/../../etc/passwd");
    reject_name("a/..");
    reject_name("%2e%2e");
    reject_name("%2E%2e/");
    reject_name("%2e%2e/secret");
    reject_name("a/%2e%2e/%2e%2e/secret");
    reject_name(".%2e/x");
    reject_name("%2f");
    reject_name("%2F");
    reject_name("..%2fsecret");
    reject_name("a%2fb");
    reject_name("%00");
    reject_name("a%00.txt");
    reject_name("/etc/passwd");
    reject_name("%2fetc%2fpasswd");
    reject_name("a//b");
    reject_name("./a");
    reject_name("a/./b");
    reject_name(".");
    reject_name("%2e");
    reject_name("a/");
    reject_name("");
    reject_name("a\\b");
    reject_name("..%5c..%5csecret");
    reject_name("%5c");
    reject_name("a%0ab");
    reject_name("a%7f");
    reject_name("%");
    reject_name("%2");
    reject_name("%zz");
    reject_name("a%g1");
}

static void test_files_path_lengths(void **state)
{
    char raw[3000];
    (void)state;

    /* one segment of exactly 255 bytes is fine, 256 is not */
    memset(raw, 'a', 255);
    raw[255] = '\0';
    accept_name(raw, raw);
    memset(raw, 'a', 256);
    raw[256] = '\0';
    reject_name(raw);
    /* 1024 bytes in total is fine, 1025 is not */
    {
        size_t n = 0;
        while (n < 1024) {
            size_t seg = 1024 - n > 200 ? 200 : 1024 - n;
            if (n > 0) {
                raw[n++] = '/';
                seg--;
            }
            memset(raw + n, 'b', seg);
            n += seg;
        }
        raw[n] = '\0';
        assert_int_equal(strlen(raw), 1024);
        accept_name(raw, raw);
        raw[n] = 'c';
        raw[n + 1] = '\0';
        reject_name(raw);
    }
    /* escapes count decoded: 1024 x "%41" is 1024 bytes once decoded */
    for (int i = 0; i < 200; i++)
        memcpy(raw + i * 3, "%41", 3);
    raw[600] = '\0';
    {
        size_t len = 0;
        const char *why = NULL;
        assert_int_equal(files_name_decode(raw, 600, out, sizeof(out), &len, &why), 0);
        assert_int_equal(len, 200);
    }
}

static bool reserved(const char *name)
{
    return files_name_is_reserved(name, strlen(name));
}

static void test_files_name_is_reserved_cases(void **state)
{
    (void)state;
    assert_true(reserved(".s1store"));
    assert_true(reserved(".s1store/00000000.seg"));
    assert_true(reserved(".s1"));
    assert_true(reserved(".s1owner"));
    assert_true(reserved("a/.s1store"));
    assert_true(reserved("a/b/.s1x/c"));
    assert_false(reserved("s1store"));
    assert_false(reserved("a.s1store"));
    assert_false(reserved("a/x.s1"));
    assert_false(reserved(".s"));
    assert_false(reserved(".hidden"));
    assert_false(reserved(""));
    /* only the given length counts */
    assert_false(files_name_is_reserved("ab/.s1", 2));
}


/* ---- opening beneath the root: a symlink into the upload store is refused ---- */

static void put_file(const char *dir, const char *rel, const char *text)
{
    char p[512];
    FILE *fp;
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void link_at(const char *dir, const char *target, const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    assert_int_equal(symlink(target, p), 0);
}

static void test_files_open_refuses_store_symlinks(void **state)
{
    char dir[] = "/tmp/test_files_open.XXXXXX", p[512], cmd[600], err[FILES_ERR_LEN];
    struct files f;
    int fd;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof(p), "%s/.s1store", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    put_file(dir, ".s1store/00000000.seg", "someone's upload");
    put_file(dir, "real.txt", "operator's file");
    link_at(dir, ".s1store", "st");                            /* a directory link */
    link_at(dir, ".s1store/00000000.seg", "x.seg");            /* a file link */
    link_at(dir, "../.s1store/00000000.seg", "sub/deep.seg");  /* through a subdirectory */
    link_at(dir, "real.txt", "ok.txt");                        /* a link that stays allowed */
    link_at(dir, "sub", "sublink");

    assert_int_equal(files_init(&f, dir, FILES_BUFFERED, NULL, err), 0);
    assert_int_equal(files_open(&f, "st/00000000.seg", false), -EXDEV);
    assert_int_equal(files_open(&f, "x.seg", false), -EXDEV);
    assert_int_equal(files_open(&f, "sub/deep.seg", false), -EXDEV);
    assert_int_equal(files_open(&f, "sublink/deep.seg", false), -EXDEV);
    fd = files_open(&f, "ok.txt", false);
    assert_true(fd >= 0);
    close(fd);
    fd = files_open(&f, "real.txt", false);
    assert_true(fd >= 0);
    close(fd);
    files_release(&f);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_path_good),
        cmocka_unit_test(test_files_path_traversal),
        cmocka_unit_test(test_files_path_lengths),
        cmocka_unit_test(test_files_name_is_reserved_cases),
        cmocka_unit_test(test_files_open_refuses_store_symlinks),
    };
    return cmocka_run_group_tests_name("files_path", tests, NULL, NULL);
}
