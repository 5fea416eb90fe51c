/*
 * test_target.c - loadgen/target and the https:// flags of loadgen/config: URL parsing (scheme,
 * default ports 80 and 443, IPv6 literals, host literals vs names, path prefix, bad URLs) and
 * the checks of --cacert, --insecure, --tls-resume, --new-conn-per-request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/config.h"
#include "../../../loadgen/target.h"

static void test_target_parse_http(void **state)
{
    struct lg_target t;
    char err[LG_TARGET_ERR_LEN];

    (void)state;
    assert_int_equal(lg_target_parse("http://127.0.0.1:8080/api/", &t, err), 0);
    assert_false(t.tls);
    assert_true(t.host_is_ip);
    assert_string_equal(t.host, "127.0.0.1");
    assert_int_equal(t.port, 8080);
    assert_string_equal(t.prefix, "/api");
    assert_string_equal(t.host_header, "127.0.0.1:8080");
    assert_int_equal(lg_target_parse("http://localhost", &t, err), 0);
    assert_int_equal(t.port, 80);
    assert_false(t.host_is_ip);
}

static void test_target_parse_https(void **state)
{
    struct lg_target t;
    char err[LG_TARGET_ERR_LEN];

    (void)state;
    assert_int_equal(lg_target_parse("https://localhost", &t, err), 0);
    assert_true(t.tls);
    assert_false(t.host_is_ip); /* a name: sent as SNI, checked against DNS names */
    assert_string_equal(t.host, "localhost");
    assert_int_equal(t.port, 443);
    assert_string_equal(t.host_header, "localhost");
    assert_string_equal(t.prefix, "");
    assert_int_equal(lg_target_parse("https://127.0.0.1:8443/p", &t, err), 0);
    assert_true(t.tls);
    assert_true(t.host_is_ip);
    assert_int_equal(t.port, 8443);
    assert_string_equal(t.prefix, "/p");
}

static void test_target_parse_ipv6(void **state)
{
    struct lg_target t;
    char err[LG_TARGET_ERR_LEN];

    (void)state;
    assert_int_equal(lg_target_parse("https://[::1]/", &t, err), 0);
    assert_true(t.tls);
    assert_true(t.host_is_ip);
    assert_string_equal(t.host, "::1");
    assert_int_equal(t.port, 443);
    assert_string_equal(t.host_header, "[::1]");
    assert_int_equal(lg_target_parse("http://[::1]:8080", &t, err), 0);
    assert_int_equal(t.port, 8080);
    assert_string_equal(t.host_header, "[::1]:8080");
}

static void test_target_parse_errors(void **state)
{
    static const char *bad[] = {
        "ftp://127.0.0.1", "https:/127.0.0.1", "HTTPS://127.0.0.1", "https://",
        "https://:443",    "https://[::1",     "https://h:0",       "https://h:65536",
        "https://h:44x",   "https://h:",       "https://h/a b",     "127.0.0.1:443",
    };
    struct lg_target t;
    char err[LG_TARGET_ERR_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (lg_target_parse(bad[i], &t, err) != -1)
            fail_msg("accepted '%s'", bad[i]);
        assert_true(strlen(err) > 0);
    }
}

static int parse(struct lg_config *cfg, char err[LG_ERR_LEN], int argc, char **argv)
{
    lg_config_defaults(cfg);
    if (lg_config_parse(cfg, argc, argv, err) != 0)
        return -1;
    return lg_config_validate(cfg, err);
}

static void test_config_tls_errors(void **state)
{
    static char *bad[][6] = {
        {"loadgen", "--url", "http://127.0.0.1", "--insecure"},
        {"loadgen", "--url", "http://127.0.0.1", "--cacert", "/etc/hostname"},
        {"loadgen", "--url", "http://127.0.0.1", "--tls-resume", "off"},
        {"loadgen", "--url", "https://127.0.0.1", "--tls-resume", "maybe"},
        {"loadgen", "--url", "https://127.0.0.1", "--model", "threads"},
        {"loadgen", "--url", "https://127.0.0.1", "--cacert", "/nonexistent/ca.pem"},
        {"loadgen", "--url", "https://127.0.0.1", "--insecure", "--cacert", "/etc/hostname"},
    };
    static const char *why[] = {"need an https://", "need an https://", "need an https://",
                                "tls-resume",       "--model events",   "cannot read",
                                "not both"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int argc = 0;
        while (argc < 6 && bad[i][argc] != NULL)
            argc++;
        err[0] = '\0';
        if (parse(&cfg, err, argc, bad[i]) != -1)
            fail_msg("accepted bad flags #%zu", i);
        if (strstr(err, why[i]) == NULL)
            fail_msg("#%zu: '%s' does not say '%s'", i, err, why[i]);
        assert_null(strchr(err, '\n'));
    }
}

static void test_config_tls_ok(void **state)
{
    static char *argv[] = {"loadgen", "--url", "https://127.0.0.1", "--insecure", "--tls-resume",
                           "off", "--new-conn-per-request"};
    static char *plain[] = {"loadgen", "--url", "http://127.0.0.1:8080", "--new-conn-per-request"};
    static struct lg_config cfg;
    char err[LG_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&cfg, err, 7, argv), 0);
    assert_true(cfg.target.tls);
    assert_int_equal(cfg.target.port, 443);
    assert_true(cfg.insecure);
    assert_int_equal(cfg.tls_resume, 0);
    assert_true(cfg.new_conn);
    assert_int_equal(parse(&cfg, err, 4, plain), 0); /* useful for plain http too */
    assert_true(cfg.new_conn);
    assert_int_equal(cfg.tls_resume, 1); /* the default */
    assert_false(cfg.target.tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_parse_http),   cmocka_unit_test(test_target_parse_https),
        cmocka_unit_test(test_target_parse_ipv6),   cmocka_unit_test(test_target_parse_errors),
        cmocka_unit_test(test_config_tls_errors), cmocka_unit_test(test_config_tls_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
