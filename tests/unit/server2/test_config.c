/*
 * test_config.c - server2's flags: defaults, every value checked, one clear error per
 * mistake, -v raising the level, and the backend password hidden from argv and the summary.
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

#include "../../../server2/config.h"

#define MAXARGS 40

/*
 * Parses the NULL-terminated list of flags after "server2" into c; unless the first flag is
 * "-", --insecure-no-secret comes first (the link-secret flags are tested on their own).
 */
static enum s2_config_result parse(struct s2_config *c, char *err, ...)
{
    static char store[MAXARGS][256];
    char *argv[MAXARGS + 1];
    int argc = 0;
    va_list ap;
    const char *a;
    bool raw = false;

    argv[argc++] = "server2";
    va_start(ap, err);
    a = va_arg(ap, const char *);
    if (a != NULL && strcmp(a, "-") == 0)
        raw = true;
    else
        argv[argc++] = "--insecure-no-secret";
    if (a != NULL && !raw) {
        snprintf(store[argc], sizeof(store[argc]), "%s", a);
        argv[argc] = store[argc];
        argc++;
    }
    if (a == NULL) {
        va_end(ap);
        argv[argc] = NULL;
        s2_config_defaults(c);
        err[0] = '\0';
        return s2_config_parse(c, argc, argv, err);
    }
    while ((a = va_arg(ap, const char *)) != NULL && argc < MAXARGS) {
        snprintf(store[argc], sizeof(store[argc]), "%s", a);
        argv[argc] = store[argc];
        argc++;
    }
    va_end(ap);
    argv[argc] = NULL;
    s2_config_defaults(c);
    err[0] = '\0';
    return s2_config_parse(c, argc, argv, err);
}

static void expect_error(const char *want, enum s2_config_result rc, const char *err)
{
    assert_int_equal(rc, S2_CONFIG_ERROR);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' does not mention '%s'", err, want);
    assert_null(strchr(err, '\n'));
}

static void test_s2_config_defaults(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&c, err, "--backend", "redis://127.0.0.1:6379", NULL), S2_CONFIG_OK);
    assert_string_equal(c.listen_addr, "127.0.0.1");
    assert_int_equal(c.port, 7001);
    assert_int_equal(c.mode, S2_MODE_THREADS);
    assert_true(c.workers >= 1 && c.workers <= S2_WORKERS_MAX);
    assert_int_equal(c.hash_cost, PWHASH_INTERACTIVE);
    assert_int_equal(c.auth_cache_entries, 0);
    assert_int_equal(c.auth_cache_ttl_us, 60000000);
    assert_int_equal(c.batch, 64);
    assert_int_equal(c.max_inflight, 1024);
    assert_int_equal(c.max_conns, 1024);
    assert_int_equal(c.idle_timeout_us, 300000000);
    assert_int_equal(c.handshake_timeout_us, 2000000);
    assert_int_equal(c.max_unauth_conns, 64);
    assert_int_equal(c.max_unauth_conns_per_ip, 32);
    assert_int_equal(c.log_level, LOG_INFO);
    assert_int_equal(c.backend.kind, BACKEND_REDIS);
}

static void test_s2_config_values(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&c, err, "-b", "mysql://auth@localhost/auth?socket=/tmp/m.sock", "-p",
                           "0", "-l", "::1", "--mode", "processes", "-w", "3", "--hash-cost", "min",
                           "--auth-cache", "1000", "--auth-cache-ttl", "250ms", "--batch", "16",
                           "--max-inflight", "8", "--max-conns", "10", "--idle-timeout", "0", NULL),
                     S2_CONFIG_OK);
    assert_int_equal(c.port, 0);
    assert_string_equal(c.listen_addr, "::1");
    assert_int_equal(c.mode, S2_MODE_PROCESSES);
    assert_int_equal(c.workers, 3);
    assert_int_equal(c.hash_cost, PWHASH_MIN);
    assert_int_equal(c.auth_cache_entries, 1000);
    assert_int_equal(c.auth_cache_ttl_us, 250000);
    assert_int_equal(c.batch, 16);
    assert_int_equal(c.max_inflight, 8);
    assert_int_equal(c.max_conns, 10);
    assert_int_equal(c.idle_timeout_us, 0);
    assert_int_equal(c.backend.kind, BACKEND_MYSQL);
    assert_string_equal(c.backend.socket, "/tmp/m.sock");

    assert_int_equal(parse(&c, err, "-b", "redis://h", "-vv", NULL), S2_CONFIG_OK);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_int_equal(parse(&c, err, "-b", "redis://h", "-v", "--log-level", "error", NULL),
                     S2_CONFIG_OK);
    assert_int_equal(c.log_level, LOG_WARN);
    assert_int_equal(parse(&c, err, "-b", "redis://h", "-vvvvv", NULL), S2_CONFIG_OK);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_int_equal(parse(&c, err, "--backend=redis://h", "--port=9", NULL), S2_CONFIG_OK);
    assert_int_equal(c.port, 9);
    assert_int_equal(parse(&c, err, "-b", "redis://h", "--handshake-timeout", "100ms",
                           "--max-unauth-conns", "4096", "--max-unauth-conns-per-ip", "0", NULL),
                     S2_CONFIG_OK);
    assert_int_equal(c.handshake_timeout_us, 100000);
    assert_int_equal(c.max_unauth_conns, 4096);
    assert_int_equal(c.max_unauth_conns_per_ip, 0);
}

static void test_s2_config_errors(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];

    (void)state;
    expect_error("--backend URL is required", parse(&c, err, NULL), err);
    expect_error("--backend URL is required", parse(&c, err, "-p", "1", NULL), err);
    expect_error("unknown flag '--bogus'", parse(&c, err, "-b", "redis://h", "--bogus", NULL), err);
    expect_error("unknown flag '-x'", parse(&c, err, "-b", "redis://h", "-x", NULL), err);
    expect_error("takes no value: '--help'", parse(&c, err, "--help=1", NULL), err);
    expect_error("needs a value", parse(&c, err, "-b", "redis://h", "--port", NULL), err);
    expect_error("needs a value", parse(&c, err, "-b", NULL), err);
    expect_error("unexpected argument 'extra'", parse(&c, err, "-b", "redis://h", "extra", NULL),
                 err);
    expect_error("--port", parse(&c, err, "-b", "redis://h", "-p", "65536", NULL), err);
    expect_error("--port", parse(&c, err, "-b", "redis://h", "-p", "12x", NULL), err);
    expect_error("--port", parse(&c, err, "-b", "redis://h", "-p", "-1", NULL), err);
    expect_error("--port", parse(&c, err, "-b", "redis://h", "-p", "", NULL), err);
    expect_error("--workers", parse(&c, err, "-b", "redis://h", "-w", "0", NULL), err);
    expect_error("--workers", parse(&c, err, "-b", "redis://h", "-w", "257", NULL), err);
    expect_error("--mode", parse(&c, err, "-b", "redis://h", "-m", "fork", NULL), err);
    expect_error("--hash-cost", parse(&c, err, "-b", "redis://h", "--hash-cost", "max", NULL), err);
    expect_error("--batch", parse(&c, err, "-b", "redis://h", "--batch", "0", NULL), err);
    expect_error("--batch", parse(&c, err, "-b", "redis://h", "--batch", "1025", NULL), err);
    expect_error("--max-inflight", parse(&c, err, "-b", "redis://h", "--max-inflight", "0", NULL),
                 err);
    expect_error("--max-conns", parse(&c, err, "-b", "redis://h", "--max-conns", "1e3", NULL), err);
    expect_error("--auth-cache",
                 parse(&c, err, "-b", "redis://h", "--auth-cache", "99999999999", NULL), err);
    expect_error("--auth-cache-ttl",
                 parse(&c, err, "-b", "redis://h", "--auth-cache-ttl", "5 years", NULL), err);
    expect_error("--idle-timeout", parse(&c, err, "-b", "redis://h", "--idle-timeout", "-3s", NULL),
                 err);
    expect_error("--handshake-timeout",
                 parse(&c, err, "-b", "redis://h", "--handshake-timeout", "99ms", NULL), err);
    expect_error("--handshake-timeout",
                 parse(&c, err, "-b", "redis://h", "--handshake-timeout", "61s", NULL), err);
    expect_error("--max-unauth-conns",
                 parse(&c, err, "-b", "redis://h", "--max-unauth-conns", "0", NULL), err);
    expect_error("--max-unauth-conns",
                 parse(&c, err, "-b", "redis://h", "--max-unauth-conns", "4097", NULL), err);
    expect_error("--max-unauth-conns-per-ip",
                 parse(&c, err, "-b", "redis://h", "--max-unauth-conns-per-ip", "-1", NULL), err);
    expect_error("--log-level", parse(&c, err, "-b", "redis://h", "--log-level", "loud", NULL),
                 err);
    expect_error("--listen", parse(&c, err, "-b", "redis://h", "--listen", "", NULL), err);
    expect_error("bad --backend URL: missing scheme", parse(&c, err, "-b", "localhost", NULL), err);
}

static void test_s2_config_password_hidden(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];
    char url[] = "mysql://auth:s3cr3t@127.0.0.1/auth";
    char bad[] = "mysql://auth:s3cr3t@127.0.0.1:99x/auth";
    char *argv[] = {"server2", "--backend", url, "--insecure-no-secret", NULL};
    char *argv_bad[] = {"server2", "--backend", bad, NULL};

    (void)state;
    /* a password on the command line is refused (and still hidden from `ps`) */
    s2_config_defaults(&c);
    assert_int_equal(s2_config_parse(&c, 4, argv, err), S2_CONFIG_ERROR);
    assert_non_null(strstr(err, "--backend-password-file"));
    assert_non_null(strstr(err, S2_BACKEND_PASSWORD_ENV));
    assert_null(strstr(err, "s3cr3t"));
    assert_null(strchr(err, '\n'));
    assert_string_equal(url, "mysql://auth:******@127.0.0.1/auth");
    assert_string_equal(c.backend.password, ""); /* wiped */

    s2_config_defaults(&c);
    assert_int_equal(s2_config_parse(&c, 3, argv_bad, err), S2_CONFIG_ERROR);
    assert_null(strstr(err, "s3cr3t"));
    assert_null(strstr(bad, "s3cr3t"));
}

static void test_s2_config_password_file_env(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];
    char desc[2048];
    char path[] = "/tmp/test_s2_config_pw_XXXXXX";
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "f1le-pw\nignored\n", 16), 16);
    close(fd);
    unsetenv(S2_BACKEND_PASSWORD_ENV);

    assert_int_equal(parse(&c, err, "-b", "mysql://auth@127.0.0.1/auth",
                           "--backend-password-file", path, NULL),
                     S2_CONFIG_OK);
    assert_true(c.backend.has_password);
    assert_string_equal(c.backend.password, "f1le-pw");
    s2_config_describe(&c, desc, sizeof(desc));
    assert_null(strstr(desc, "f1le-pw"));

    /* the environment, when no file is given; the file wins over it */
    setenv(S2_BACKEND_PASSWORD_ENV, "env-pw", 1);
    assert_int_equal(parse(&c, err, "-b", "redis://127.0.0.1", NULL), S2_CONFIG_OK);
    assert_true(c.backend.has_password);
    assert_string_equal(c.backend.password, "env-pw");
    assert_int_equal(parse(&c, err, "-b", "redis://127.0.0.1", "--backend-password-file", path,
                           NULL),
                     S2_CONFIG_OK);
    assert_string_equal(c.backend.password, "f1le-pw");
    /* a redis ACL user with its password from the environment; without one: refused */
    assert_int_equal(parse(&c, err, "-b", "redis://acl@127.0.0.1", NULL), S2_CONFIG_OK);
    assert_string_equal(c.backend.user, "acl");
    assert_string_equal(c.backend.password, "env-pw");
    unsetenv(S2_BACKEND_PASSWORD_ENV);
    expect_error("a redis user needs a password", parse(&c, err, "-b", "redis://acl@h", NULL), err);
    assert_int_equal(parse(&c, err, "-b", "redis://127.0.0.1", NULL), S2_CONFIG_OK);
    assert_false(c.backend.has_password);

    /* the Sentinels' own password: from a file or S2_SENTINEL_PASSWORD, redis-sentinel:// only */
    unsetenv(S2_SENTINEL_PASSWORD_ENV);
    assert_int_equal(parse(&c, err, "-b", "redis-sentinel://h1,h2/m", NULL), S2_CONFIG_OK);
    assert_false(c.backend.has_sentinel_password);
    assert_int_equal(parse(&c, err, "-b", "redis-sentinel://h1,h2/m", "--sentinel-password-file",
                           path, NULL),
                     S2_CONFIG_OK);
    assert_true(c.backend.has_sentinel_password);
    assert_string_equal(c.backend.sentinel_password, "f1le-pw");
    assert_false(c.backend.has_password);
    s2_config_describe(&c, desc, sizeof(desc));
    assert_null(strstr(desc, "f1le-pw"));
    backend_url_wipe(&c.backend);
    assert_false(c.backend.has_sentinel_password);
    assert_string_equal(c.backend.sentinel_password, "");
    setenv(S2_SENTINEL_PASSWORD_ENV, "s-env-pw", 1);
    assert_int_equal(parse(&c, err, "-b", "redis-sentinel://h1/m", NULL), S2_CONFIG_OK);
    assert_string_equal(c.backend.sentinel_password, "s-env-pw");
    assert_int_equal(parse(&c, err, "-b", "redis://h", NULL), S2_CONFIG_OK); /* not used */
    assert_false(c.backend.has_sentinel_password);
    unsetenv(S2_SENTINEL_PASSWORD_ENV);
    expect_error("redis-sentinel:// backend only",
                 parse(&c, err, "-b", "redis://h", "--sentinel-password-file", path, NULL), err);
    expect_error("--sentinel-password-file: empty path",
                 parse(&c, err, "-b", "redis-sentinel://h/m", "--sentinel-password-file", "",
                       NULL),
                 err);

    unlink(path);
    expect_error("cannot open", parse(&c, err, "-b", "redis://h", "--backend-password-file", path,
                                      NULL),
                 err);
    expect_error("--sentinel-password-file: cannot open",
                 parse(&c, err, "-b", "redis-sentinel://h/m", "--sentinel-password-file", path,
                       NULL),
                 err);
}

/* --redis-wait: 1 with Sentinels, decided at connect with redis://, an explicit value wins */
static void test_s2_config_redis_wait(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];
    char out[1024];

    (void)state;
    assert_int_equal(parse(&c, err, "-b", "redis-sentinel://s1,s2/m", NULL), S2_CONFIG_OK);
    assert_int_equal(c.backend.redis_wait, 1);
    assert_false(c.backend.redis_wait_auto);
    assert_int_equal(parse(&c, err, "-b", "redis://h", NULL), S2_CONFIG_OK);
    assert_true(c.backend.redis_wait_auto);
    s2_config_describe(&c, out, sizeof(out));
    assert_non_null(strstr(out, " redis-wait=auto "));
    assert_int_equal(parse(&c, err, "-b", "redis:///tmp/r.sock", NULL), S2_CONFIG_OK);
    assert_true(c.backend.redis_wait_auto);
    assert_int_equal(parse(&c, err, "-b", "redis://h", "--redis-wait", "0", NULL), S2_CONFIG_OK);
    assert_false(c.backend.redis_wait_auto);
    assert_int_equal(c.backend.redis_wait, 0);
    s2_config_describe(&c, out, sizeof(out));
    assert_non_null(strstr(out, " redis-wait=0 "));
    assert_int_equal(parse(&c, err, "-b", "redis://h", "--redis-wait", "2", NULL), S2_CONFIG_OK);
    assert_false(c.backend.redis_wait_auto);
    assert_int_equal(c.backend.redis_wait, 2);
    assert_int_equal(parse(&c, err, "-b", "redis-sentinel://s1/m", "--redis-wait", "0", NULL),
                     S2_CONFIG_OK);
    assert_int_equal(c.backend.redis_wait, 0);
    assert_int_equal(parse(&c, err, "-b", "mysql://u@h/db", NULL), S2_CONFIG_OK);
    assert_false(c.backend.redis_wait_auto);
    assert_int_equal(c.backend.redis_wait, 0);
    expect_error("--redis-wait applies to a Redis backend only",
                 parse(&c, err, "-b", "mysql://u@h/db", "--redis-wait", "1", NULL), err);
}

static void test_s2_config_link_secret(void **state)
{
    struct s2_config c;
    char err[S2_CONFIG_ERR_LEN];

    (void)state;
    expect_error("--secret-file PATH is required", parse(&c, err, "-", "-b", "redis://h", NULL),
                 err);
    assert_int_equal(parse(&c, err, "-", "-b", "redis://h", "--secret-file", "/s/link", NULL),
                     S2_CONFIG_OK);
    assert_string_equal(c.secret_file, "/s/link");
    assert_false(c.insecure_no_secret);
    assert_int_equal(parse(&c, err, "-", "-b", "redis://h", "--insecure-no-secret", NULL),
                     S2_CONFIG_OK);
    assert_true(c.insecure_no_secret);
    assert_null(c.secret_file);
    expect_error("exclude each other", parse(&c, err, "-", "-b", "redis://h", "--secret-file",
                                             "/s/link", "--insecure-no-secret", NULL),
                 err);
    expect_error("--secret-file: empty path",
                 parse(&c, err, "-", "-b", "redis://h", "--secret-file", "", NULL), err);
    expect_error("needs a value", parse(&c, err, "-", "-b", "redis://h", "--secret-file", NULL),
                 err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s2_config_defaults),
        cmocka_unit_test(test_s2_config_values),
        cmocka_unit_test(test_s2_config_errors),
        cmocka_unit_test(test_s2_config_password_hidden),
        cmocka_unit_test(test_s2_config_password_file_env),
        cmocka_unit_test(test_s2_config_link_secret),
        cmocka_unit_test(test_s2_config_redis_wait),
    };
    return cmocka_run_group_tests_name("s2_config", tests, NULL, NULL);
}
