/*
 * test_names.c - loadgen/names, the --names set: patterns ({A..B} fields as the digits of the
 * index, zero-padded or not, the numbered tree of 100 x 100 x 100 directories of 100 files,
 * literal text percent-encoded) and every bad pattern's error; names files (comments, blank
 * lines, CRLF, blanks around a name, %XX, the arena compacted in place) and their limits and
 * bad lines, named by file and line; and through loadgen/config and loadgen/workload, --names
 * and --pick accepted and refused, and the request bytes with a name drawn into them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/config.h"
#include "../../../loadgen/names.h"
#include "../../../loadgen/workload.h"

/* Name i of n as a C string (in a static buffer). */
static const char *name_of(const struct lg_names *n, uint64_t i)
{
    static char buf[4 * LG_NAMES_PATTERN_LEN];
    size_t len = lg_names_get(n, i, buf);

    assert_true(len <= n->len_max);
    buf[len] = '\0';
    return buf;
}

static void test_names_pattern(void **state)
{
    static struct lg_names n;
    char err[LG_NAMES_ERR_LEN];

    (void)state;
    /* the numbered tree: i -> d{i/10^6 % 100}/d{i/10^4 % 100}/d{i/100 % 100}/f{i % 100} */
    assert_int_equal(lg_names_parse_pattern(&n, "d{00..99}/d{00..99}/d{00..99}/f{00..99}", err),
                     0);
    assert_int_equal(n.kind, LG_NAMES_PATTERN);
    assert_int_equal(n.n, 100000000);
    assert_int_equal(n.len_max, 15);
    assert_string_equal(name_of(&n, 0), "d00/d00/d00/f00");
    assert_string_equal(name_of(&n, 1), "d00/d00/d00/f01");
    assert_string_equal(name_of(&n, 100), "d00/d00/d01/f00");
    assert_string_equal(name_of(&n, 42079342), "d42/d07/d93/f42");
    assert_string_equal(name_of(&n, 99999999), "d99/d99/d99/f99");
    /* unpadded, a range not from 0, padding from either end (bash), literal text encoded */
    assert_int_equal(lg_names_parse_pattern(&n, "f{1..12}", err), 0);
    assert_int_equal(n.n, 12);
    assert_int_equal(n.len_max, 3);
    assert_string_equal(name_of(&n, 0), "f1");
    assert_string_equal(name_of(&n, 11), "f12");
    assert_int_equal(lg_names_parse_pattern(&n, "{007..9}", err), 0);
    assert_int_equal(n.n, 3);
    assert_string_equal(name_of(&n, 0), "007");
    assert_string_equal(name_of(&n, 2), "009");
    assert_int_equal(lg_names_parse_pattern(&n, "{1..010}.txt", err), 0);
    assert_string_equal(name_of(&n, 0), "001.txt");
    assert_string_equal(name_of(&n, 9), "010.txt");
    assert_int_equal(lg_names_parse_pattern(&n, "a%b?{0..1}#c[{5..5}]", err), 0);
    assert_int_equal(n.n, 2);
    assert_string_equal(name_of(&n, 1), "a%25b%3F1%23c%5B5%5D");
    assert_int_equal(n.len_max, strlen("a%25b%3F1%23c%5B5%5D"));
    /* 8 fields; 10^15 names */
    assert_int_equal(lg_names_parse_pattern(&n, "{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}",
                                            err), 0);
    assert_int_equal(n.n, 256);
    assert_string_equal(name_of(&n, 255), "11111111");
    assert_int_equal(lg_names_parse_pattern(&n, "{0..999999999}/{000000..999999}", err), 0);
    assert_int_equal(n.n, 1000000000000000ull);
    assert_string_equal(name_of(&n, 1000000000000000ull - 1), "999999999/999999");
    assert_string_equal(name_of(&n, 1000001), "1/000001");
    lg_names_release(&n);
}

static void test_names_pattern_errors(void **state)
{
    static struct lg_names n;
    static char long_pat[LG_NAMES_PATTERN_LEN + 2];
    char err[LG_NAMES_ERR_LEN];
    static const struct {
        const char *pat;
        const char *why;
    } bad[] = {
        {"", "a pattern of 1-1024 bytes"},
        {"plain", "needs a {A..B} field"},
        {"d{", "is not closed by its '}'"},
        {"d{1..2", "is not closed by its '}'"},
        {"d{{1..2}}", "is not closed by its '}'"},
        {"d}{1..2}", "a '}' without its '{'"},
        {"d{1..2}}", "a '}' without its '{'"},
        {"d{}", "is not {A..B}"},
        {"d{1..}", "is not {A..B}"},
        {"d{..2}", "is not {A..B}"},
        {"d{a..b}", "is not {A..B}"},
        {"d{1-9}", "is not {A..B}"},
        {"d{1...9}", "is not {A..B}"},
        {"d{-1..9}", "is not {A..B}"},
        {"d{0..1234567890}", "is not {A..B}"},
        {"d{9..1}", "runs backwards"},
        {"a b{0..1}", "a blank or control byte at offset 1"},
        {"a{0..1}\x01", "a blank or control byte"},
        {"\xc3\xa9{0..1}", "a blank or control byte"},
        {"{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}", "more than 8 {A..B} fields"},
        {"{0..999999999}/{0..999999}/{0..9}", "more than 1000000000000000 names"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(lg_names_parse_pattern(&n, bad[i].pat, err), -1);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("pattern '%s': got '%s', want '%s'", bad[i].pat, err, bad[i].why);
        assert_int_equal(n.kind, LG_NAMES_NONE);
    }
    memset(long_pat, 'a', sizeof(long_pat) - 1);
    memcpy(long_pat, "{0..1}", 6);
    assert_int_equal(lg_names_parse_pattern(&n, long_pat, err), -1);
    assert_non_null(strstr(err, "a pattern of 1-1024 bytes"));
    long_pat[LG_NAMES_PATTERN_LEN] = '\0'; /* at the limit: fine */
    assert_int_equal(lg_names_parse_pattern(&n, long_pat, err), 0);
    assert_int_equal(n.len_max, LG_NAMES_PATTERN_LEN - 6 + 1);
    lg_names_release(&n);
}

/* Parses text (copied: the parser takes it over) with at most max names. */
static int parse_text(struct lg_names *n, const char *text, uint64_t max, char *err)
{
    size_t len = strlen(text);
    char *copy = malloc(len + 1);

    memcpy(copy, text, len + 1);
    return lg_names_parse_text(n, copy, len, "n.txt", max, err);
}

static void test_names_file(void **state)
{
    static struct lg_names n;
    char err[LG_NAMES_ERR_LEN];

    (void)state;
    assert_int_equal(parse_text(&n, "# names\n\nd00/f00\r\n  d00/f01\t\n\t# x\nlast", 3, err), 0);
    assert_int_equal(n.kind, LG_NAMES_FILE);
    assert_int_equal(n.n, 3);
    assert_int_equal(n.len_max, 7);
    assert_string_equal(name_of(&n, 0), "d00/f00");
    assert_string_equal(name_of(&n, 1), "d00/f01");
    assert_string_equal(name_of(&n, 2), "last");
    assert_memory_equal(n.arena, "d00/f00d00/f01last", 18); /* compacted in place */
    /* a name that needs %XX: the whole arena is encoded */
    assert_int_equal(parse_text(&n, "a\n100%\nq?x#y\n", 10, err), 0);
    assert_int_equal(n.n, 3);
    assert_string_equal(name_of(&n, 0), "a");
    assert_string_equal(name_of(&n, 1), "100%25");
    assert_string_equal(name_of(&n, 2), "q%3Fx%23y");
    assert_int_equal(n.len_max, 9);
    /* one name, no newline; exactly the limit */
    assert_int_equal(parse_text(&n, "x", 1, err), 0);
    assert_string_equal(name_of(&n, 0), "x");
    lg_names_release(&n);
}

static void test_names_file_errors(void **state)
{
    static struct lg_names n;
    static char long_line[LG_NAME_LEN_MAX + 8];
    char err[LG_NAMES_ERR_LEN];
    char *nul;

    (void)state;
    assert_int_equal(parse_text(&n, "a\nb\nc\n", 2, err), -1);
    assert_string_equal(err, "--names n.txt:3: more than 2 names");
    assert_int_equal(parse_text(&n, "\n# only comments\n  \r\n", 10, err), -1);
    assert_string_equal(err, "--names n.txt: no name in it");
    assert_int_equal(parse_text(&n, "", 10, err), -1);
    assert_string_equal(err, "--names n.txt: no name in it");
    assert_int_equal(parse_text(&n, "ok\na b\n", 10, err), -1);
    assert_non_null(strstr(err, "--names n.txt:2: byte 0x20 in the name"));
    assert_int_equal(parse_text(&n, "ok\n\xc3\xa9t\xc3\xa9\n", 10, err), -1);
    assert_non_null(strstr(err, "--names n.txt:2: byte 0xc3 in the name"));
    assert_int_equal(parse_text(&n, "a\rb\n", 10, err), -1);
    assert_non_null(strstr(err, "n.txt:1: byte 0x0d"));
    nul = malloc(5);
    memcpy(nul, "a\n\0b\n", 5);
    assert_int_equal(lg_names_parse_text(&n, nul, 5, "n.txt", 10, err), -1);
    assert_non_null(strstr(err, "n.txt:2: byte 0x00"));
    memset(long_line, 'x', LG_NAME_LEN_MAX + 1);
    assert_int_equal(parse_text(&n, long_line, 10, err), -1);
    assert_string_equal(err, "--names n.txt:1: a name longer than 1024 bytes");
    long_line[LG_NAME_LEN_MAX] = '\0'; /* at the limit: fine */
    assert_int_equal(parse_text(&n, long_line, 10, err), 0);
    assert_int_equal(n.len_max, LG_NAME_LEN_MAX);
    lg_names_release(&n);
}

static void test_names_load(void **state)
{
    static struct lg_names n;
    char err[LG_NAMES_ERR_LEN];
    char path[] = "/tmp/lg-names-XXXXXX";
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "one\ntwo\n", 8), 8);
    close(fd);
    assert_int_equal(lg_names_load(&n, path, err), 0);
    assert_int_equal(n.kind, LG_NAMES_FILE);
    assert_int_equal(n.n, 2);
    assert_string_equal(name_of(&n, 1), "two");
    assert_int_equal(lg_names_load(&n, "f{0..4}", err), 0); /* a '{': a pattern */
    assert_int_equal(n.kind, LG_NAMES_PATTERN);
    assert_int_equal(n.n, 5);
    assert_int_equal(lg_names_load(&n, "/nonexistent/names.txt", err), -1);
    assert_non_null(strstr(err, "cannot open '/nonexistent/names.txt'"));
    assert_int_equal(lg_names_load(&n, "/tmp", err), -1);
    assert_non_null(strstr(err, "'/tmp' is not a regular file"));
    /* a file over the byte limit is refused by its size, before it is read (sparse here) */
    assert_int_equal(truncate(path, (off_t)LG_NAMES_BYTES_MAX + 1), 0);
    assert_int_equal(lg_names_load(&n, path, err), -1);
    assert_non_null(strstr(err, "is 2147483649 bytes, over the limit of 2147483648"));
    assert_int_equal(n.kind, LG_NAMES_NONE);
    unlink(path);
    lg_names_release(&n);
}

static int parse(struct lg_config *cfg, char err[LG_ERR_LEN], int argc, char **argv)
{
    lg_config_release(cfg);
    lg_config_defaults(cfg);
    if (lg_config_parse(cfg, argc, argv, err) != 0)
        return -1;
    return lg_config_validate(cfg, err);
}

static void test_names_config(void **state)
{
    static char *ok1[] = {"loadgen", "--names", "f{0..9}", "--pick", "zipf:0.99"};
    static char *ok2[] = {"loadgen", "http://127.0.0.1:1/x/{name}?q=1", "--names", "{0..2}"};
    static char *b1[] = {"loadgen", "--names", "f{0..9}", "--file", "a"};
    static char *b2[] = {"loadgen", "http://127.0.0.1:1/x/{name}"};
    static char *b3[] = {"loadgen", "--file", "a", "--pick", "uniform"};
    static char *b4[] = {"loadgen", "http://127.0.0.1:1/x", "--names", "{0..2}"};
    static char *b5[] = {"loadgen", "http://127.0.0.1:1/{name}/{name}", "--names", "{0..2}"};
    static char *b6[] = {"loadgen", "--names", "f{0..9}", "--type", "new"};
    static char *b7[] = {"loadgen", "--names", "f{0..9}", "--pick", "zipf"};
    static char *b8[] = {"loadgen", "--names", "f{9..0}"};
    static char *b9[] = {"loadgen", "--names", "f{0..9}", "--spread"};
    static char *b10[] = {"loadgen", "--file", "a", "--spread"};
    static char *ok3[] = {"loadgen", "--names", "f{0..9}", "--pick", "zipf:1", "--spread"};
    static char long_arg[LG_NAMES_SOURCE_MAX + 2];
    static char *b11[] = {"loadgen", "--names", long_arg};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&cfg, err, 5, ok1), 0);
    assert_true(lg_config_has(&cfg, LG_REQ_GET)); /* --names alone means get */
    assert_int_equal(cfg.names.n, 10);
    assert_int_equal(cfg.pick_kind, LG_PICK_ZIPF);
    assert_true(cfg.zipf_s == 0.99);
    assert_int_equal(parse(&cfg, err, 4, ok2), 0);
    assert_true(lg_config_has(&cfg, LG_REQ_CUSTOM));
    assert_int_equal(cfg.pick_kind, LG_PICK_UNIFORM);
    assert_int_equal(parse(&cfg, err, 5, b1), -1);
    assert_string_equal(err, "give --file or --names, not both");
    assert_int_equal(parse(&cfg, err, 2, b2), -1);
    assert_string_equal(err, "a path has {name} but no --names gives them");
    assert_int_equal(parse(&cfg, err, 5, b3), -1);
    assert_string_equal(err, "--pick and --spread need --names");
    assert_int_equal(parse(&cfg, err, 4, b4), -1);
    assert_non_null(strstr(err, "no {name} in --path, the URL's path or a --requests line"));
    assert_int_equal(parse(&cfg, err, 4, b5), -1);
    assert_non_null(strstr(err, "more than one {name}"));
    assert_int_equal(parse(&cfg, err, 5, b6), -1);
    assert_string_equal(err, "--names applies to get and to custom requests");
    assert_int_equal(parse(&cfg, err, 5, b7), -1);
    assert_non_null(strstr(err, "--pick 'zipf': uniform or zipf:S"));
    assert_int_equal(parse(&cfg, err, 3, b8), -1);
    assert_non_null(strstr(err, "runs backwards"));
    assert_int_equal(parse(&cfg, err, 4, b9), -1);
    assert_non_null(strstr(err, "--spread applies to --pick zipf:S"));
    assert_int_equal(parse(&cfg, err, 4, b10), -1);
    assert_string_equal(err, "--pick and --spread need --names");
    assert_int_equal(parse(&cfg, err, 6, ok3), 0);
    assert_true(cfg.names_spread);
    memset(long_arg, 'a', LG_NAMES_SOURCE_MAX + 1);
    assert_int_equal(parse(&cfg, err, 3, b11), -1);
    assert_string_equal(err, "--names: a file name or pattern of at most 1024 bytes");
    lg_config_release(&cfg);
}

/* The request bytes: GET /files/NAME and a custom path, a name drawn into each request. */
static void test_names_request_bytes(void **state)
{
    static char *get[] = {"loadgen", "--url", "http://127.0.0.1:8080/api", "--names",
                          "d{0..1}/f{00..02}", "--username", "alice", "--password", "s3cret"};
    static char *custom[] = {"loadgen", "http://127.0.0.1:8080/x/{name}?q=1", "--names",
                             "a?{0..0}", "-H", "X-A: b"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    struct lg_reqbuf r = {0};
    struct lg_namebuf nb = {0};
    uint64_t rng = lg_rng_seed(1, 0);
    unsigned seen[6] = {0};

    (void)state;
    assert_int_equal(parse(&cfg, err, 9, get), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    lg_workload_build_get(&w, -1, 0, &r);
    assert_true(r.has_name);
    for (int i = 0; i < 600; i++) {
        char want[160];
        const char *d;
        unsigned k;

        assert_true(lg_workload_fill_name(&w, &r, &nb, &rng));
        assert_memory_equal(nb.buf, "GET /api/files/d", 16);
        d = nb.buf + 16;
        k = (unsigned)(d[0] - '0') * 3 + (unsigned)(d[4] - '0');
        assert_true(k < 6);
        seen[k]++;
        snprintf(want, sizeof(want), "GET /api/files/d%c/f0%c HTTP/1.1\r\nHost: 127.0.0.1:8080"
                 "\r\nAuthorization: Basic YWxpY2U6czNjcmV0\r\n\r\n", d[0], d[4]);
        assert_int_equal(nb.len, strlen(want));
        assert_memory_equal(nb.buf, want, nb.len);
    }
    for (int k = 0; k < 6; k++)
        assert_true(seen[k] > 50); /* uniform: 100 each */
    lg_reqbuf_release(&r);
    lg_workload_release(&w);

    assert_int_equal(parse(&cfg, err, 6, custom), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_int_equal(w.ncustom, 1);
    assert_true(lg_workload_fill_name(&w, &w.custom[0], &nb, &rng));
    assert_int_equal(nb.len, strlen("GET /x/a%3F0?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                    "X-A: b\r\n\r\n"));
    assert_memory_equal(nb.buf, "GET /x/a%3F0?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                "X-A: b\r\n\r\n", nb.len);
    lg_workload_release(&w);
    lg_namebuf_release(&nb);
    lg_config_release(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_pattern),
        cmocka_unit_test(test_names_pattern_errors),
        cmocka_unit_test(test_names_file),
        cmocka_unit_test(test_names_file_errors),
        cmocka_unit_test(test_names_load),
        cmocka_unit_test(test_names_config),
        cmocka_unit_test(test_names_request_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
