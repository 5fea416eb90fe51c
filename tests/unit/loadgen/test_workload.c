/*
 * test_workload.c - loadgen/workload and loadgen/config: request bytes (GET with Basic
 * credentials, POST /users templates and their patched username digits, PUT heads with their
 * patched name digit and the shared body, sent whole through partial writes), base64 and
 * percent-encoding, the weighted mix, flag parsing and validation errors, and that the
 * password never appears in what reports print of the command line.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/client.h"
#include "../../../loadgen/config.h"
#include "../../../loadgen/report.h"
#include "../../../loadgen/workload.h"

static void test_workload_base64(void **state)
{
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char b[32];

    (void)state;
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        assert_int_equal(lg_base64(in[i], strlen(in[i]), b), strlen(out[i]));
        assert_string_equal(b, out[i]);
    }
}

static void test_workload_urlencode(void **state)
{
    char b[64];

    (void)state;
    lg_urlencode("a b&c=d%e~f.g-h_i", 17, b);
    assert_string_equal(b, "a%20b%26c%3Dd%25e~f.g-h_i");
}

/* A config as main would build it for the given flags. */
static int parse(struct lg_config *cfg, char err[LG_ERR_LEN], int argc, char **argv)
{
    lg_config_defaults(cfg);
    if (lg_config_parse(cfg, argc, argv, err) != 0)
        return -1;
    return lg_config_validate(cfg, err);
}

static void test_workload_get_request(void **state)
{
    static char *argv[] = {"loadgen",    "--url",      "http://127.0.0.1:8080/api/",
                           "--type",     "get",        "--file",
                           "1k",         "--username", "alice",
                           "--password", "s3cret"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    struct lg_reqbuf r = {0};

    (void)state;
    assert_int_equal(parse(&cfg, err, 11, argv), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    lg_workload_build_get(&w, -1, 0, &r);
    /* base64("alice:s3cret") = YWxpY2U6czNjcmV0 */
    assert_string_equal(r.buf, "GET /api/files/1k HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                               "Authorization: Basic YWxpY2U6czNjcmV0\r\n\r\n");
    assert_int_equal(r.len, strlen(r.buf));
    lg_reqbuf_release(&r);
    lg_workload_build_get(&w, -2, 0, &r);
    assert_string_equal(r.buf, "GET /api/files/1k HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    lg_reqbuf_release(&r);
}

/* --file with several names: user u gets the (u mod count)th; 64 names are allowed. */
static void test_workload_get_several_files(void **state)
{
    static char *argv[] = {"loadgen", "--type", "get", "--file", "a,bb,c/d", "--username",
                           "alice", "--password", "s3cret"};
    static struct lg_config cfg;
    static char sixty_four[LG_FILES_MAX * 4 + 8];
    static char *argv64[] = {"loadgen", "--type", "get", "--file", sixty_four};
    char err[LG_ERR_LEN];
    char name[16];
    struct lg_workload w;
    struct lg_reqbuf r = {0};
    const char *want[] = {"a", "bb", "c/d", "a", "bb"};

    (void)state;
    assert_int_equal(parse(&cfg, err, 9, argv), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    for (unsigned u = 0; u < 5; u++) {
        char line[64];
        lg_workload_file_of(cfg.file, u, name, sizeof(name));
        assert_string_equal(name, want[u]);
        lg_workload_build_get(&w, -2, u, &r);
        snprintf(line, sizeof(line), "GET /files/%s HTTP/1.1\r\n", want[u]);
        assert_memory_equal(r.buf, line, strlen(line));
        lg_reqbuf_release(&r);
    }
    lg_workload_file_of("only", 7, name, sizeof(name));
    assert_string_equal(name, "only");
    lg_workload_file_of("abcdefgh,x", 0, name, 4); /* truncated to cap */
    assert_string_equal(name, "abc");
    lg_workload_release(&w);
    for (unsigned k = 0; k < LG_FILES_MAX; k++)
        snprintf(sixty_four + strlen(sixty_four), sizeof(sixty_four) - strlen(sixty_four),
                 "%sf%u", k ? "," : "", k);
    assert_int_equal(parse(&cfg, err, 5, argv64), 0);
}

static void test_workload_new_request_slot(void **state)
{
    static char *argv[] = {"loadgen", "--type", "new", "--password", "p w&d"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    struct lg_reqbuf r = {0};
    const char *body;

    (void)state;
    assert_int_equal(parse(&cfg, err, 5, argv), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    lg_workload_build_new(&w, 1234, &r);
    lg_reqbuf_set_slot(&r, 42);
    body = strstr(r.buf, "\r\n\r\n") + 4;
    assert_string_equal(body, "username=lg0badc0den000001234c0000000042&password=p%20w%26d");
    assert_non_null(strstr(r.buf, "POST /users HTTP/1.1\r\n"));
    assert_non_null(strstr(r.buf, "Content-Type: application/x-www-form-urlencoded\r\n"));
    {
        char cl[64];
        snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
        assert_non_null(strstr(r.buf, cl));
    }
    /* patching keeps the length: the counter wraps within its 10 digits */
    lg_reqbuf_set_slot(&r, 12345678901ull);
    assert_non_null(strstr(r.buf, "c2345678901&"));
    lg_reqbuf_release(&r);

    lg_workload_build_prepare(&w, &r);
    lg_reqbuf_set_slot(&r, 7);
    assert_non_null(strstr(r.buf, "username=lg0badc0dep000000007&"));
    {
        char name[64];
        lg_workload_prepared_name(&w, 7, name, sizeof(name));
        assert_string_equal(name, "lg0badc0dep000000007");
    }
    lg_reqbuf_release(&r);
}

static void test_workload_mix(void **state)
{
    static char *argv[] = {"loadgen", "--mix", "new:1,get:9", "--file", "x"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    uint64_t rng = lg_rng_seed(1, 0);
    uint64_t rng2 = lg_rng_seed(1, 0);
    unsigned counts[2] = {0, 0};

    (void)state;
    assert_int_equal(parse(&cfg, err, 5, argv), 0);
    lg_workload_init(&w, &cfg, "00000000");
    for (int i = 0; i < 100000; i++)
        counts[lg_workload_pick(&w, &rng)]++;
    assert_true(counts[LG_REQ_NEW] > 9000 && counts[LG_REQ_NEW] < 11000);
    /* deterministic for a seed */
    rng = lg_rng_seed(1, 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(lg_workload_pick(&w, &rng), lg_workload_pick(&w, &rng2));
}

static void test_workload_put_request(void **state)
{
    static char *argv[] = {"loadgen",    "--url",      "http://127.0.0.1:8080/",
                           "--type",     "put",        "--size",
                           "3000",       "--username", "alice",
                           "--password", "s3cret",     "--seed",
                           "7"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    struct lg_reqbuf r = {0};
    struct lg_reqbuf r2 = {0};

    (void)state;
    assert_int_equal(parse(&cfg, err, 13, argv), 0);
    assert_true(lg_config_has(&cfg, LG_REQ_PUT));
    assert_false(lg_config_has(&cfg, LG_REQ_GET));
    assert_string_equal(cfg.mix_desc, "put");
    lg_workload_init(&w, &cfg, "0badc0de");
    assert_int_equal(lg_workload_pick(&w, &(uint64_t){1}), LG_REQ_PUT);
    lg_workload_build_put(&w, -1, 17, &r);
    lg_reqbuf_set_slot(&r, 0);
    assert_string_equal(r.buf, "PUT /files/lg-0badc0de-17-0 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                               "Authorization: Basic YWxpY2U6czNjcmV0\r\n"
                               "Content-Type: application/octet-stream\r\n"
                               "Content-Length: 3000\r\n\r\n");
    assert_int_equal(r.len, strlen(r.buf));
    /* the body is shared, not copied: every connection points at the workload's bytes */
    assert_ptr_equal(r.body, w.put_body);
    assert_int_equal(r.body_len, 3000);
    lg_workload_build_put(&w, -1, 18, &r2);
    assert_ptr_equal(r2.body, r.body);
    /* the name cycles through LG_PUT_NAMES per user */
    lg_reqbuf_set_slot(&r, 9);
    assert_non_null(strstr(r.buf, "/files/lg-0badc0de-17-1 HTTP"));
    lg_reqbuf_set_slot(&r, LG_PUT_NAMES * 5 + 7);
    assert_non_null(strstr(r.buf, "/files/lg-0badc0de-17-7 HTTP"));
    lg_reqbuf_release(&r);
    lg_reqbuf_release(&r2);
    lg_workload_release(&w);
    assert_null(w.put_body);

    /* prepared accounts log in as for get; the body is deterministic for a seed */
    {
        static char *argv2[] = {"loadgen",         "--mix", "put:1,get:1", "--file", "f",
                                "--prepare-users", "4",     "--size",      "0"};
        static struct lg_config cfg2;
        char user[64];
        char b64[512];
        char plain[384];

        assert_int_equal(parse(&cfg2, err, 9, argv2), 0);
        assert_int_equal(cfg2.put_size, 0);
        lg_workload_init(&w, &cfg2, "00000001");
        lg_workload_build_put(&w, 3, 3, &r);
        lg_workload_prepared_name(&w, 3, user, sizeof(user));
        snprintf(plain, sizeof(plain), "%s:%s", user, cfg2.password);
        lg_base64(plain, strlen(plain), b64);
        assert_non_null(strstr(r.buf, b64));
        assert_non_null(strstr(r.buf, "Content-Length: 0\r\n\r\n"));
        assert_int_equal(r.body_len, 0);
        lg_reqbuf_release(&r);
        lg_workload_release(&w);
    }
}

static void test_workload_put_mix(void **state)
{
    static char *argv[] = {"loadgen",         "--mix", "new:1,get:2,put:1", "--file", "x",
                           "--prepare-users", "2"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    uint64_t rng = lg_rng_seed(3, 0);
    unsigned counts[LG_REQ_TYPES] = {0};

    (void)state;
    assert_int_equal(parse(&cfg, err, 7, argv), 0);
    lg_workload_init(&w, &cfg, "00000000");
    for (int i = 0; i < 100000; i++)
        counts[lg_workload_pick(&w, &rng)]++;
    assert_true(counts[LG_REQ_NEW] > 23000 && counts[LG_REQ_NEW] < 27000);
    assert_true(counts[LG_REQ_GET] > 48000 && counts[LG_REQ_GET] < 52000);
    assert_true(counts[LG_REQ_PUT] > 23000 && counts[LG_REQ_PUT] < 27000);
    lg_workload_release(&w);
}

/*
 * A PUT body far larger than the socket buffer goes out whole: lg_conn_send returns AGAIN on a
 * full buffer and resumes at the right byte, and the peer receives head + body exactly.
 */
static void test_workload_put_partial_writes(void **state)
{
    static char *argv[] = {"loadgen", "--type", "put", "--size", "3m", "--username", "u"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    struct lg_workload w;
    struct lg_conn c;
    int sv[2];
    int sndbuf = 4096;
    size_t total;
    size_t got = 0;
    char *rx;
    unsigned agains = 0;
    enum lg_io r;

    (void)state;
    assert_int_equal(parse(&cfg, err, 7, argv), 0);
    lg_workload_init(&w, &cfg, "0badc0de");
    lg_conn_init(&c, 0);
    lg_workload_build_put(&w, -1, 0, &c.req[LG_REQ_PUT]);
    c.slot_step = 1;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    c.fd = sv[0];
    lg_conn_begin(&c, LG_REQ_PUT, 0);
    total = c.req[LG_REQ_PUT].len + (size_t)cfg.put_size;
    rx = malloc(total + 1);
    assert_non_null(rx);
    while ((r = lg_conn_send(&c)) == LG_IO_AGAIN) {
        ssize_t n = read(sv[1], rx + got, total + 1 - got);
        assert_true(n > 0);
        got += (size_t)n;
        agains++;
    }
    assert_int_equal(r, LG_IO_DONE);
    assert_int_equal(c.state, LG_CS_WAITING);
    assert_true(agains > 0); /* the test did exercise partial writes */
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    for (;;) {
        ssize_t n = read(sv[1], rx + got, total + 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    assert_int_equal(got, total);
    assert_memory_equal(rx, c.req[LG_REQ_PUT].buf, c.req[LG_REQ_PUT].len);
    assert_memory_equal(rx + c.req[LG_REQ_PUT].len, w.put_body, (size_t)cfg.put_size);
    free(rx);
    close(sv[1]);
    lg_conn_release(&c); /* closes sv[0] */
    lg_workload_release(&w);
}

static void test_config_errors(void **state)
{
    static char *bad[][8] = {
        {"loadgen", "--users", "0"},
        {"loadgen", "--users", "1x"},
        {"loadgen", "--type", "get"},
        {"loadgen", "--type", "put"},
        {"loadgen", "--type", "put", "--size", "1k"},
        {"loadgen", "--type", "get", "--file", "f", "--size", "1k"},
        {"loadgen", "--mix", "put:1,del:1", "--username", "u"},
        {"loadgen", "--type", "put", "--username", "u", "--size", "2g"},
        {"loadgen", "--mix", "new:0,get:0"},
        {"loadgen", "--url", "http://10.1.2.3:80"},
        {"loadgen", "--url", "ftp://127.0.0.1"},
        {"loadgen", "--rate", "100", "--model", "threads"},
        {"loadgen", "--rate", "100", "--sweep", "auto"},
        {"loadgen", "--duration", "5", "--requests-per-user", "3"},
        {"loadgen", "--bogus"},
        {"loadgen", "--watch", "server1=abc"},
        {"loadgen", "--watch-comm", "a-very-long-process-name"},
        {"loadgen", "--sweep", "1,,2"},
        {"loadgen", "--expect-length", "1k"},
        {"loadgen", "--timeout"},
        {"loadgen", "extra"},
        {"loadgen", "--thread-hz", "5001"}, /* LG_THREAD_HZ_MAX */
        {"loadgen", "--thread-hz", "-1"},
        {"loadgen", "--hardware-model"},    /* only with --predict-only */
        {"loadgen", "--type", "get", "--file", "a,,b"},
        {"loadgen", "--type", "get", "--file", "a,"},
        {"loadgen", "--type", "get", "--file", "a,b c"},
        {"loadgen", "--type", "get", "--file", NULL /* 65 names: set below */},
    };
    static struct lg_config cfg;
    char err[LG_ERR_LEN];

    static char many[LG_FILES_MAX * 4 + 8];

    (void)state;
    for (unsigned k = 0; k <= LG_FILES_MAX; k++) /* one name too many */
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sf%u", k ? "," : "", k);
    bad[sizeof(bad) / sizeof(bad[0]) - 1][4] = many;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int argc = 0;
        while (argc < 8 && bad[i][argc] != NULL)
            argc++;
        err[0] = '\0';
        if (parse(&cfg, err, argc, bad[i]) != -1)
            fail_msg("accepted bad flags #%zu (%s)", i, bad[i][1]);
        assert_true(strlen(err) > 0);
        assert_null(strchr(err, '\n'));
    }
}

static void test_config_ok_and_redaction(void **state)
{
    static char *argv[] = {"loadgen",    "--sweep",    "1,2,4",     "--think",
                           "5",          "--password", "topsecret", "--pass=hidden2",
                           "--file",     "f",          "--watch",   "server1=1,server2=2",
                           "--pin-cpus", "0-1"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];
    int argc = (int)(sizeof(argv) / sizeof(argv[0]));

    (void)state;
    assert_int_equal(parse(&cfg, err, argc, argv), 0);
    assert_int_equal(cfg.nsweep, 3);
    assert_int_equal(cfg.sweep[2], 4);
    assert_int_equal(cfg.think_us, 5000); /* bare numbers are milliseconds */
    assert_string_equal(cfg.password, "hidden2");
    assert_int_equal(cfg.nwatch, 2);
    assert_true(lg_config_has(&cfg, LG_REQ_GET)); /* --file implies get */
    for (int i = 0; i < argc; i++) {
        const char *shown = lg_report_arg(argc, argv, i);
        assert_null(strstr(shown, "topsecret"));
        assert_null(strstr(shown, "hidden2"));
    }
    assert_string_equal(lg_report_arg(argc, argv, 6), "(redacted)");
    assert_string_equal(lg_report_arg(argc, argv, 9), "f");
    assert_string_equal(lg_report_arg(argc, argv, 7), "--password=(redacted)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_base64),
        cmocka_unit_test(test_workload_urlencode),
        cmocka_unit_test(test_workload_get_request),
        cmocka_unit_test(test_workload_get_several_files),
        cmocka_unit_test(test_workload_new_request_slot),
        cmocka_unit_test(test_workload_mix),
        cmocka_unit_test(test_workload_put_request),
        cmocka_unit_test(test_workload_put_mix),
        cmocka_unit_test(test_workload_put_partial_writes),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_ok_and_redaction),
    };
    return cmocka_run_group_tests_name("lg_workload", tests, NULL, NULL);
}
