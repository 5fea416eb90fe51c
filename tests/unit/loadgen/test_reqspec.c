/*
 * test_reqspec.c - loadgen/reqspec, custom requests to any server: methods, paths and -H
 * header lines checked; the --requests file (PATH, METHOD PATH, METHOD PATH @FILE, comments,
 * CRLF) and each of its limits and errors, named by file and line; and through loadgen/config
 * and loadgen/workload, the flags (a URL argument anywhere among them, the combinations
 * refused), the request bytes built (Host replaced, credentials, Content-Length, the shared
 * body), the seq and random orders, and -H and --body values kept out of the reports.
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
#include "../../../loadgen/report.h"
#include "../../../loadgen/reqspec.h"
#include "../../../loadgen/workload.h"

static void test_reqspec_method_path_header(void **state)
{
    char err[LG_REQSPEC_ERR_LEN];
    char big[LG_REQ_LINE_MAX + 2];

    (void)state;
    assert_true(lg_reqspec_method_ok("GET", 3));
    assert_true(lg_reqspec_method_ok("M-SEARCH", 8));
    assert_false(lg_reqspec_method_ok("", 0));
    assert_false(lg_reqspec_method_ok("GE T", 4));
    assert_false(lg_reqspec_method_ok("GET/", 4));
    assert_false(lg_reqspec_method_ok("ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG", 33));
    assert_true(lg_reqspec_path_ok("/a/b?c=d&e", 10));
    assert_false(lg_reqspec_path_ok("a/b", 3));
    assert_false(lg_reqspec_path_ok("/a b", 4));
    assert_false(lg_reqspec_path_ok("/a\x7f", 3));
    memset(big, 'a', sizeof(big));
    big[0] = '/';
    assert_true(lg_reqspec_path_ok(big, LG_REQ_LINE_MAX));
    assert_false(lg_reqspec_path_ok(big, LG_REQ_LINE_MAX + 1));

    assert_int_equal(lg_reqspec_header_ok("X-Test: a b\tc", err), 0);
    assert_int_equal(lg_reqspec_header_ok("X-Empty:", err), 0);
    assert_int_equal(lg_reqspec_header_ok("NoColon", err), -1);
    assert_int_equal(lg_reqspec_header_ok(": v", err), -1);
    assert_int_equal(lg_reqspec_header_ok("X Y: v", err), -1);
    assert_int_equal(lg_reqspec_header_ok("X: a\r\nInjected: 1", err), -1);
    assert_non_null(strstr(err, "control character"));
    assert_int_equal(lg_reqspec_header_ok("content-length: 5", err), -1);
    assert_non_null(strstr(err, "sets it from the body"));
    assert_int_equal(lg_reqspec_header_ok("Transfer-Encoding: chunked", err), -1);
    big[0] = 'X';
    big[1] = ':';
    big[LG_REQ_LINE_MAX] = '\0';
    assert_int_equal(lg_reqspec_header_ok(big, err), 0);
    big[LG_REQ_LINE_MAX] = 'a';
    big[LG_REQ_LINE_MAX + 1] = '\0';
    assert_int_equal(lg_reqspec_header_ok(big, err), -1);
    assert_true(lg_reqspec_header_is("host: x", "Host"));
    assert_false(lg_reqspec_header_is("Hostname: x", "Host"));
}

/* A temporary directory with a body file in it; returns its path (static). */
static const char *tmp_dir_with_body(const char *body)
{
    static char dir[64];
    char path[128];
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/lg-reqspec-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/b.txt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    return dir;
}

static void rm_tmp(const char *dir, const char *name)
{
    char path[160];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static void test_reqlist_parse_lines(void **state)
{
    static const char text[] = "# a comment\n"
                               "/plain?x=1\n"
                               "\n"
                               "   \t\n"
                               "  # indented comment\n"
                               "HEAD /h\r\n"
                               "POST\t/p   @b.txt\n"
                               "DELETE /d";
    const char *dir = tmp_dir_with_body("hello body");
    struct lg_reqlist l = {0};
    char err[LG_REQSPEC_ERR_LEN];

    (void)state;
    assert_int_equal(lg_reqlist_parse(&l, text, strlen(text), "r.txt", dir, "GET", err), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.reqs[0].method, "GET");
    assert_string_equal(l.reqs[0].path, "/plain?x=1");
    assert_null(l.reqs[0].body);
    assert_string_equal(l.reqs[1].method, "HEAD");
    assert_string_equal(l.reqs[1].path, "/h");
    assert_string_equal(l.reqs[2].method, "POST");
    assert_string_equal(l.reqs[2].path, "/p");
    assert_int_equal(l.reqs[2].body_len, 10);
    assert_memory_equal(l.reqs[2].body, "hello body", 10);
    assert_string_equal(l.reqs[3].method, "DELETE");
    assert_int_equal(l.body_total, 10);
    lg_reqlist_release(&l);
    /* the default method of bare paths is --method's */
    assert_int_equal(lg_reqlist_parse(&l, "/x\n", 3, "r.txt", dir, "OPTIONS", err), 0);
    assert_string_equal(l.reqs[0].method, "OPTIONS");
    lg_reqlist_release(&l);
    rm_tmp(dir, "b.txt");
    rmdir(dir);
}

/* Every bad line is refused with "--requests NAME:LINE: why". */
static void test_reqlist_parse_errors(void **state)
{
    static const struct {
        const char *text;
        const char *want;
    } bad[] = {
        {"/ok\nno-slash\n", "r.txt:2: 'no-slash' is not a path"},
        {"/ok\n\nGET /a b c\n", "r.txt:3: more than 3 fields"},
        {"G(T /a\n", "r.txt:1: 'G(T' is not a method"},
        {"POST /a b.txt\n", "r.txt:1: the third field must be @FILE"},
        {"POST /a @\n", "r.txt:1: the third field must be @FILE"},
        {"POST /a @missing\n", "r.txt:1: cannot open body file"},
        {"/a\r\r\n", "r.txt:1: a NUL or CR in the line"},
        {"# only comments\n\n", "r.txt: no request in it"},
        {"", "r.txt: no request in it"},
    };
    char err[LG_REQSPEC_ERR_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct lg_reqlist l = {0};
        assert_int_equal(lg_reqlist_parse(&l, bad[i].text, strlen(bad[i].text), "r.txt", "/tmp",
                                          "GET", err),
                         -1);
        if (strstr(err, bad[i].want) == NULL)
            fail_msg("#%zu: '%s' does not say '%s'", i, err, bad[i].want);
        assert_memory_equal(err, "--requests ", 11);
        lg_reqlist_release(&l);
    }
    {
        /* a NUL inside a line */
        static const char nul[] = "/a\n/b\0c\n";
        struct lg_reqlist l = {0};
        assert_int_equal(lg_reqlist_parse(&l, nul, sizeof(nul) - 1, "r.txt", "/", "GET", err), -1);
        assert_non_null(strstr(err, "r.txt:2: a NUL"));
        lg_reqlist_release(&l);
    }
}

/* The limits: line length, number of requests, bodies in all. */
static void test_reqlist_limits(void **state)
{
    size_t cap = (size_t)(LG_REQUESTS_MAX + 1) * 4 + LG_REQ_LINE_MAX + 16;
    char *text = malloc(cap);
    char err[LG_REQSPEC_ERR_LEN];
    struct lg_reqlist l = {0};
    size_t n = 0;

    (void)state;
    assert_non_null(text);
    /* a line of exactly LG_REQ_LINE_MAX bytes (CRLF not counted), then one byte more */
    text[0] = '/';
    memset(text + 1, 'a', LG_REQ_LINE_MAX - 1);
    memcpy(text + LG_REQ_LINE_MAX, "\r\n", 2);
    assert_int_equal(lg_reqlist_parse(&l, text, LG_REQ_LINE_MAX + 2, "r", "/", "GET", err), 0);
    assert_int_equal(strlen(l.reqs[0].path), LG_REQ_LINE_MAX);
    lg_reqlist_release(&l);
    memset(text + 1, 'a', LG_REQ_LINE_MAX);
    assert_int_equal(lg_reqlist_parse(&l, text, LG_REQ_LINE_MAX + 1, "r", "/", "GET", err), -1);
    assert_non_null(strstr(err, "r:1: longer than 8192 bytes"));
    lg_reqlist_release(&l);

    /* LG_REQUESTS_MAX requests pass, one more does not */
    for (unsigned i = 0; i < LG_REQUESTS_MAX; i++) {
        memcpy(text + n, "/a\n", 3);
        n += 3;
    }
    assert_int_equal(lg_reqlist_parse(&l, text, n, "r", "/", "GET", err), 0);
    assert_int_equal(l.n, LG_REQUESTS_MAX);
    lg_reqlist_release(&l);
    memcpy(text + n, "/a\n", 3);
    assert_int_equal(lg_reqlist_parse(&l, text, n + 3, "r", "/", "GET", err), -1);
    assert_non_null(strstr(err, "r:10001: more than 10000 requests"));
    lg_reqlist_release(&l);
    free(text);

    /* the bodies together: up to LG_BODY_MAX */
    {
        char *body = calloc(1, (size_t)LG_BODY_MAX);
        assert_non_null(body);
        assert_int_equal(lg_reqlist_add(&l, "PUT", "/a", body, LG_BODY_MAX - 1, err), 0);
        assert_int_equal(lg_reqlist_add(&l, "PUT", "/b", body, 1, err), 0);
        assert_int_equal(lg_reqlist_add(&l, "PUT", "/c", body, 1, err), -1);
        assert_non_null(strstr(err, "bodies over 67108864 bytes"));
        assert_int_equal(lg_reqlist_add(&l, "GET", "/d", NULL, 0, err), 0);
        lg_reqlist_release(&l);
        free(body);
    }
}

/* A body file over what is left of the limit is refused before it is read. */
static void test_reqlist_body_file_limit(void **state)
{
    const char *dir = tmp_dir_with_body("0123456789");
    char path[128];
    char err[LG_REQSPEC_ERR_LEN];
    struct lg_reqlist l = {0};
    char *body = calloc(1, (size_t)LG_BODY_MAX);

    (void)state;
    assert_non_null(body);
    snprintf(path, sizeof(path), "%s/b.txt", dir);
    assert_int_equal(lg_reqlist_add(&l, "PUT", "/a", body, LG_BODY_MAX - 10, err), 0);
    assert_int_equal(lg_reqlist_add_file(&l, "PUT", "/b", path, err), 0);
    lg_reqlist_release(&l);
    assert_int_equal(lg_reqlist_add(&l, "PUT", "/a", body, LG_BODY_MAX - 9, err), 0);
    assert_int_equal(lg_reqlist_add_file(&l, "PUT", "/b", path, err), -1);
    assert_non_null(strstr(err, "is 10 bytes, over the limit of 9"));
    lg_reqlist_release(&l);
    assert_int_equal(lg_reqlist_add_file(&l, "PUT", "/b", dir, err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    lg_reqlist_release(&l);
    free(body);
    rm_tmp(dir, "b.txt");
    rmdir(dir);
}

static int parse(struct lg_config *cfg, char err[LG_ERR_LEN], int argc, char **argv)
{
    lg_config_release(cfg);
    lg_config_defaults(cfg);
    if (lg_config_parse(cfg, argc, argv, err) != 0)
        return -1;
    return lg_config_validate(cfg, err);
}

/* A URL argument anywhere among the flags: the target and the path. */
static void test_config_url_argument(void **state)
{
    static char *a1[] = {"loadgen", "-u", "2", "http://127.0.0.1:8081/a/b?q=1", "-d", "3"};
    static char *a2[] = {"loadgen", "http://localhost:8082"};
    static char *a3[] = {"loadgen", "http://127.0.0.1:1/", "http://127.0.0.1:2/"};
    static char *a4[] = {"loadgen", "--url", "http://127.0.0.1:1", "http://127.0.0.1:2/x"};
    static char *a5[] = {"loadgen", "http://127.0.0.1:1?x"};
    static char *a6[] = {"loadgen", "127.0.0.1:1/x"};
    static char *a7[] = {"loadgen", "http://127.0.0.1:1/x", "--path", "/y"};
    static char *a8[] = {"loadgen", "--path", "/y", "http://127.0.0.1:1"};
    static char *a9[] = {"loadgen", "http://127.0.0.1:1/x", "--requests", "/dev/null"};
    static char *a10[] = {"loadgen", "http://127.0.0.1:1/x", "--config", "/dev/null"};
    static char *a11[] = {"loadgen", "-u", "2", "http://127.0.0.1:1/x", "extra"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&cfg, err, 6, a1), 0);
    assert_int_equal(cfg.users, 2);
    assert_int_equal(cfg.duration_us, 3000000);
    assert_string_equal(cfg.url, "http://127.0.0.1:8081");
    assert_int_equal(cfg.target.port, 8081);
    assert_int_equal(cfg.reqs.n, 1);
    assert_string_equal(cfg.reqs.reqs[0].method, "GET");
    assert_string_equal(cfg.reqs.reqs[0].path, "/a/b?q=1");
    assert_true(lg_config_has(&cfg, LG_REQ_CUSTOM));
    assert_false(lg_config_has(&cfg, LG_REQ_NEW));
    assert_int_equal(parse(&cfg, err, 2, a2), 0);
    assert_string_equal(cfg.reqs.reqs[0].path, "/");
    assert_int_equal(parse(&cfg, err, 3, a3), -1);
    assert_non_null(strstr(err, "one URL at most"));
    assert_int_equal(parse(&cfg, err, 4, a4), -1);
    assert_non_null(strstr(err, "give the target once"));
    assert_int_equal(parse(&cfg, err, 2, a5), -1);
    assert_non_null(strstr(err, "write the path"));
    assert_int_equal(parse(&cfg, err, 2, a6), -1);
    assert_non_null(strstr(err, "unexpected argument"));
    /* the path once: in the URL, or --path (or --requests) with a URL without one */
    assert_int_equal(parse(&cfg, err, 4, a7), -1);
    assert_non_null(strstr(err, "the URL has a path"));
    assert_int_equal(parse(&cfg, err, 4, a9), -1);
    assert_non_null(strstr(err, "the URL has a path"));
    assert_int_equal(parse(&cfg, err, 4, a8), 0);
    assert_string_equal(cfg.reqs.reqs[0].path, "/y");
    assert_string_equal(cfg.url, "http://127.0.0.1:1");
    /* --config after the URL would be read after flags it must yield to: refused */
    assert_int_equal(parse(&cfg, err, 4, a10), -1);
    assert_non_null(strstr(err, "--config: give it before the URL"));
    /* after the URL, another argument that is no URL */
    assert_int_equal(parse(&cfg, err, 5, a11), -1);
    assert_non_null(strstr(err, "unexpected argument 'extra'"));
    lg_config_release(&cfg);
}

static void test_config_custom_combinations(void **state)
{
    static const struct {
        int argc;
        char *argv[8];
        const char *want;
    } bad[] = {
        {3, {"loadgen", "--method", "PUT"}, "need --path, --requests or a URL"},
        {3, {"loadgen", "-H", "X: 1"}, "need --path, --requests or a URL"},
        {5, {"loadgen", "--path", "/", "--type", "get"}, "not with --type"},
        {5, {"loadgen", "--path", "/", "--prepare-users", "3"}, "--prepare-users"},
        {5, {"loadgen", "--path", "/", "--requests", "/dev/null"}, "not both"},
        {7, {"loadgen", "--path", "/", "--body", "x", "--body-file", "/dev/null"}, "not both"},
        {5, {"loadgen", "--path", "/", "--requests-order", "random"}, "needs --requests"},
        {5, {"loadgen", "--path", "/", "--method", "G T"}, "not an HTTP token"},
        {3, {"loadgen", "--path", "x"}, "--path 'x'"},
        {7, {"loadgen", "--path", "/", "--username", "alice", "-H", "authorization: x"},
         "not both"},
        {3, {"loadgen", "--requests", "/nonexistent/r.txt"}, "cannot open --requests file"},
    };
    static char many[LG_HEADERS_MAX + 1][24];
    static char *argv[2 * (LG_HEADERS_MAX + 1) + 3];
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    int argc = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(&cfg, err, bad[i].argc, (char **)bad[i].argv) != -1)
            fail_msg("#%zu accepted", i);
        if (strstr(err, bad[i].want) == NULL)
            fail_msg("#%zu: '%s' does not say '%s'", i, err, bad[i].want);
    }
    /* LG_HEADERS_MAX headers pass, one more does not */
    argv[argc++] = "loadgen";
    argv[argc++] = "--path";
    argv[argc++] = "/";
    for (int i = 0; i < LG_HEADERS_MAX; i++) {
        snprintf(many[i], sizeof(many[i]), "X-%d: v", i);
        argv[argc++] = "-H";
        argv[argc++] = many[i];
    }
    assert_int_equal(parse(&cfg, err, argc, argv), 0);
    assert_int_equal(cfg.nheaders, LG_HEADERS_MAX);
    snprintf(many[LG_HEADERS_MAX], sizeof(many[0]), "X-last: v");
    argv[argc++] = "-H";
    argv[argc++] = many[LG_HEADERS_MAX];
    assert_int_equal(parse(&cfg, err, argc, argv), -1);
    assert_non_null(strstr(err, "at most 64 headers"));
    lg_config_release(&cfg);
}

static void test_workload_custom_bytes(void **state)
{
    static char *a1[] = {"loadgen", "--url",  "http://127.0.0.1:8080/api", "--path", "/x?y",
                         "-H",      "X-A: 1", "--body",                    "k=v"};
    static char *a2[] = {"loadgen", "http://127.0.0.1:8080/h", "--method", "HEAD",
                         "-H", "host: example.test", "--username", "alice", "--password",
                         "s3cret"};
    static char *a3[] = {"loadgen", "--path", "/p", "--method", "PUT"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;

    (void)state;
    assert_int_equal(parse(&cfg, err, 9, a1), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_int_equal(w.ncustom, 1);
    assert_string_equal(w.custom[0].buf, "POST /api/x?y HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                         "X-A: 1\r\nContent-Length: 3\r\n\r\n");
    assert_int_equal(w.custom[0].body_len, 3);
    assert_memory_equal(w.custom[0].body, "k=v", 3);
    assert_false(w.custom[0].head);
    lg_workload_release(&w);

    assert_int_equal(parse(&cfg, err, 10, a2), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_string_equal(w.custom[0].buf, "HEAD /h HTTP/1.1\r\nAuthorization: Basic "
                                         "YWxpY2U6czNjcmV0\r\nhost: example.test\r\n\r\n");
    assert_null(w.custom[0].body);
    assert_true(w.custom[0].head);
    lg_workload_release(&w);

    assert_int_equal(parse(&cfg, err, 5, a3), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_string_equal(w.custom[0].buf,
                        "PUT /p HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 0\r\n\r\n");
    lg_workload_release(&w);
    lg_config_release(&cfg);
}

/* seq: user u starts at u mod n and goes on in order; random: every index, from the RNG. */
static void test_workload_custom_order(void **state)
{
    static char dir[64];
    static char path[128];
    static char *a1[] = {"loadgen", "--requests", path};
    static char *a2[] = {"loadgen", "--requests", path, "--requests-order", "random"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    unsigned next = 5;
    unsigned seen[3] = {0};
    uint64_t rng = lg_rng_seed(1, 0);
    FILE *f;

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/lg-reqspec-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/r.txt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("/a\n/b\n/c\n", f);
    fclose(f);
    assert_int_equal(parse(&cfg, err, 3, a1), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_int_equal(lg_workload_next_custom(&w, &next, &rng), 2);
    assert_int_equal(lg_workload_next_custom(&w, &next, &rng), 0);
    assert_int_equal(lg_workload_next_custom(&w, &next, &rng), 1);
    assert_int_equal(lg_workload_next_custom(&w, &next, &rng), 2);
    lg_workload_release(&w);
    assert_int_equal(parse(&cfg, err, 5, a2), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    for (int i = 0; i < 300; i++)
        seen[lg_workload_next_custom(&w, &next, &rng)]++;
    for (int i = 0; i < 3; i++)
        assert_in_range(seen[i], 60, 140);
    lg_workload_release(&w);
    lg_config_release(&cfg);
    unlink(path);
    rmdir(dir);
}

static void test_report_arg_redacts_headers_and_body(void **state)
{
    static char *argv[] = {"loadgen", "-H", "Authorization: Bearer tok", "--header=Cookie: c=1",
                           "-HX-Key: k", "--body", "password=pw", "--body=pw2", "--path", "/"};
    char all[512] = "";

    (void)state;
    for (int i = 0; i < 10; i++) {
        strcat(all, lg_report_arg(10, argv, i));
        strcat(all, " ");
    }
    assert_string_equal(all, "loadgen -H (redacted) --header=(redacted) -H(redacted) --body "
                             "(redacted) --body=(redacted) --path / ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reqspec_method_path_header),
        cmocka_unit_test(test_reqlist_parse_lines),
        cmocka_unit_test(test_reqlist_parse_errors),
        cmocka_unit_test(test_reqlist_limits),
        cmocka_unit_test(test_reqlist_body_file_limit),
        cmocka_unit_test(test_config_url_argument),
        cmocka_unit_test(test_config_custom_combinations),
        cmocka_unit_test(test_workload_custom_bytes),
        cmocka_unit_test(test_workload_custom_order),
        cmocka_unit_test(test_report_arg_redacts_headers_and_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
