/*
 * test_backend_url.c - server2's --backend URL parser: every accepted form, every malformed
 * form we know of, and that the password never shows up in errors, masks or descriptions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/backend_url.h"

static void parse_ok(const char *s, struct backend_url *u)
{
    char err[BACKEND_URL_ERR_LEN] = "";
    int rc = backend_url_parse(s, u, err);
    if (rc != 0)
        fail_msg("'%s' should parse, got: %s", s, err);
}

/* Parses s, which must fail with an error containing `want`. */
static void parse_bad(const char *s, const char *want)
{
    struct backend_url u;
    char err[BACKEND_URL_ERR_LEN] = "";

    if (backend_url_parse(s, &u, err) == 0)
        fail_msg("'%s' should not parse", s);
    if (strstr(err, want) == NULL)
        fail_msg("'%s': error '%s' does not mention '%s'", s, err, want);
    assert_false(u.has_password);
    assert_string_equal(u.password, "");
}

static void test_backend_url_redis_tcp(void **state)
{
    struct backend_url u;

    (void)state;
    parse_ok("redis://127.0.0.1:6380", &u);
    assert_int_equal(u.kind, BACKEND_REDIS);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.redis_db, 0);
    assert_string_equal(u.socket, "");
    assert_false(u.has_password);

    parse_ok("redis://localhost", &u);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);

    parse_ok("redis://cache.example.com:7000/3", &u);
    assert_string_equal(u.host, "cache.example.com");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.redis_db, 3);

    parse_ok("redis://h/", &u);
    assert_int_equal(u.redis_db, 0);

    parse_ok("redis://[::1]:6390/2", &u);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6390);
    assert_int_equal(u.redis_db, 2);

    parse_ok("redis://[fe80::1]", &u);
    assert_string_equal(u.host, "fe80::1");
    assert_int_equal(u.port, 6379);

    parse_ok("redis://h:1?db=4", &u);
    assert_int_equal(u.redis_db, 4);
}

static void test_backend_url_redis_unix(void **state)
{
    struct backend_url u;

    (void)state;
    parse_ok("redis:///tmp/run/redis.sock", &u);
    assert_int_equal(u.kind, BACKEND_REDIS);
    assert_string_equal(u.socket, "/tmp/run/redis.sock");
    assert_string_equal(u.host, "");
    assert_int_equal(u.redis_db, 0);

    parse_ok("redis:///tmp/redis.sock?db=9", &u);
    assert_string_equal(u.socket, "/tmp/redis.sock");
    assert_int_equal(u.redis_db, 9);

    parse_ok("redis://:pw@/tmp/redis.sock", &u);
    assert_string_equal(u.socket, "/tmp/redis.sock");
    assert_true(u.has_password);
    assert_string_equal(u.password, "pw");
}

static void test_backend_url_redis_auth(void **state)
{
    struct backend_url u;

    (void)state;
    parse_ok("redis://:s3cr3t@h:1/0", &u);
    assert_true(u.has_password);
    assert_string_equal(u.user, "");
    assert_string_equal(u.password, "s3cr3t");

    parse_ok("redis://app:s3cr3t@h", &u);
    assert_string_equal(u.user, "app");
    assert_string_equal(u.password, "s3cr3t");
    backend_url_wipe(&u);
    assert_false(u.has_password);
    assert_string_equal(u.password, "");

    /* an ACL user whose password server2 takes from a file or the environment */
    parse_ok("redis://app@h", &u);
    assert_string_equal(u.user, "app");
    assert_false(u.has_password);
}

static void test_backend_url_mysql(void **state)
{
    struct backend_url u;

    (void)state;
    parse_ok("mysql://auth@127.0.0.1:3307/auth", &u);
    assert_int_equal(u.kind, BACKEND_MYSQL);
    assert_string_equal(u.user, "auth");
    assert_false(u.has_password);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 3307);
    assert_string_equal(u.db, "auth");
    assert_string_equal(u.socket, "");

    parse_ok("mysql://auth:pw@db.example.com/auth_db", &u);
    assert_int_equal(u.port, 3306);
    assert_true(u.has_password);
    assert_string_equal(u.password, "pw");
    assert_string_equal(u.db, "auth_db");

    parse_ok("mysql://auth:@h/d", &u); /* explicit empty password */
    assert_true(u.has_password);
    assert_string_equal(u.password, "");

    parse_ok("mysql://auth@localhost/auth?socket=/tmp/x/mysqld.sock", &u);
    assert_string_equal(u.host, "localhost");
    assert_string_equal(u.socket, "/tmp/x/mysqld.sock");
    assert_string_equal(u.db, "auth");

    parse_ok("mysql://auth@/auth?socket=/tmp/mysqld.sock", &u);
    assert_string_equal(u.host, "localhost");

    parse_ok("mariadb://auth@h/auth", &u);
    assert_int_equal(u.kind, BACKEND_MYSQL);

    parse_ok("mysql://auth@[::1]:3310/auth", &u);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 3310);
}

static void test_backend_url_password_chars(void **state)
{
    struct backend_url u;

    (void)state;
    parse_ok("mysql://auth:p%40ss%3Fw%25@h/db", &u);
    assert_string_equal(u.password, "p@ss?w%");
    /* unescaped '@', ':' and '/' still work: userinfo ends at the last '@' */
    parse_ok("mysql://auth:p@ss:/w@h/db", &u);
    assert_string_equal(u.user, "auth");
    assert_string_equal(u.password, "p@ss:/w");
    assert_string_equal(u.host, "h");
    assert_string_equal(u.db, "db");
    parse_ok("mysql://a%3Ab:c@h/db", &u);
    assert_string_equal(u.user, "a:b");
    assert_string_equal(u.password, "c");
}

static void test_backend_url_malformed(void **state)
{
    char longsock[300];
    char longhost[300];

    (void)state;
    parse_bad("", "empty URL");
    parse_bad("127.0.0.1:6379", "missing scheme");
    parse_bad("http://h", "unknown scheme 'http'");
    parse_bad("redis:/h", "missing scheme");
    parse_bad("redis://", "missing host");
    parse_bad("redis:///", "missing host");
    parse_bad("redis://h:0", "port '0'");
    parse_bad("redis://h:65536", "port '65536'");
    parse_bad("redis://h:abc", "port 'abc'");
    parse_bad("redis://h:", "port ''");
    parse_bad("redis://h:-1", "port '-1'");
    parse_bad("redis://h/abc", "database 'abc'");
    parse_bad("redis://h/1/2", "database '1/2'");
    parse_bad("redis://h/99999999", "database");
    parse_bad("redis://h?foo=1", "unknown parameter 'foo'");
    parse_bad("redis://h?db", "without '='");
    parse_bad("redis://h?", "empty query");
    parse_bad("redis://h?db=1&", "empty query parameter");
    parse_bad("redis://h/1?db=2", "database given twice");
    parse_bad("redis://h#x", "fragments");
    parse_bad("redis://[::1", "unclosed '['");
    parse_bad("redis://[::1]x", "after ']'");
    parse_bad("redis://[]:1", "IPv6");
    parse_bad("redis://[zz::1]", "IPv6");
    parse_bad("redis://::1:6379", "brackets");
    parse_bad("redis://h o", "space");
    parse_bad("redis://h\tx", "control");
    parse_bad("redis://ho$t", "bad character in host");
    parse_bad("redis://@h", "empty user info");
    parse_bad("redis://:6379", "port given without a host");
    parse_bad("redis://h?socket=/x", "unknown parameter 'socket'");
    memset(longsock, 'a', sizeof(longsock));
    memcpy(longsock, "redis:///", 9);
    longsock[9 + 120] = '\0';
    parse_bad(longsock, "too long");
    memset(longhost, 'a', sizeof(longhost));
    memcpy(longhost, "redis://", 8);
    longhost[8 + 260] = '\0';
    parse_bad(longhost, "too long");

    parse_bad("mysql://h/db", "missing user");
    parse_bad("mysql://@h/db", "missing user");
    parse_bad("mysql://:pw@h/db", "missing user");
    parse_bad("mysql://auth@h", "missing database");
    parse_bad("mysql://auth@h/", "missing database");
    parse_bad("mysql://auth@h/bad-db", "bad database name 'bad-db'");
    parse_bad("mysql://auth@h/a/b", "bad database name");
    parse_bad("mysql://auth@/db", "missing host");
    parse_bad("mysql://auth@h/db?socket=rel.sock", "absolute");
    parse_bad("mysql://auth@h/db?socket=", "empty socket path");
    parse_bad("mysql://auth@127.0.0.1/db?socket=/s", "needs the host 'localhost'");
    parse_bad("mysql://auth@localhost:3306/db?socket=/s", "port");
    parse_bad("mysql://auth@h/db?socket=/a&socket=/b", "given twice");
    parse_bad("mysql://auth@h/db?db=1", "unknown");
    parse_bad("mysql://auth:%zz@h/db", "escape");
    parse_bad("mysql://auth:%4@h/db", "escape");
    parse_bad("mysql://auth:%00@h/db", "escape");
    parse_bad("mysql://a%0ab@h/db", "control character");
}

/* Error messages of URLs holding a password never contain it. */
static void test_backend_url_errors_hide_password(void **state)
{
    static const char *const bad[] = {
        "mysql://auth:s3cr3t@h:99x/db",
        "mysql://auth:s3cr3t@h/bad-db!",
        "redis://:s3cr3t@h:0",
        "mysql://auth:s3cr3t@",
        "mysql://auth:s3cr3t@h",
        "redis://:s3cr3t@ho$t",
        "mysql://auth:s3cr3t?x@h:1/db",
        "mysql://auth:s3cr3t@h/db?s3cr3t=1",
        "ftp://auth:s3cr3t@h/db",
        "s3cr3t://a:s3cr3t@h",
        "mysql://auth:s3cr3t@h/db#frag",
        "redis://x:s3cr3t:y@h:s3cr3t",
        "mysql://auth:s3cr3t@127.0.0.1/db?socket=/s",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct backend_url u;
        char err[BACKEND_URL_ERR_LEN] = "";
        if (backend_url_parse(bad[i], &u, err) == 0)
            fail_msg("'%s' should not parse", bad[i]);
        if (strstr(err, "s3cr3t") != NULL || strstr(err, "cr3t") != NULL)
            fail_msg("error for URL %zu leaks the password: %s", i, err);
    }
}

static void test_backend_url_mask(void **state)
{
    char out[256];
    char buf[64];

    (void)state;
    backend_url_mask("mysql://auth:s3cr3t@h/db", out, sizeof(out));
    assert_string_equal(out, "mysql://auth:***@h/db");
    backend_url_mask("redis://:pw@h:1/0", out, sizeof(out));
    assert_string_equal(out, "redis://:***@h:1/0");
    backend_url_mask("mysql://auth@h:3306/db", out, sizeof(out));
    assert_string_equal(out, "mysql://auth@h:3306/db");
    backend_url_mask("redis://h:6379/0", out, sizeof(out));
    assert_string_equal(out, "redis://h:6379/0");
    backend_url_mask("mysql://u:p@ss/w@h/db", out, sizeof(out));
    assert_string_equal(out, "mysql://u:***@h/db");
    /* malformed: still hidden (too much rather than too little) */
    backend_url_mask("mysql:u:s3cr3t@h/db", out, sizeof(out));
    assert_null(strstr(out, "s3cr3t"));
    backend_url_mask("mysql://u:s3cr3t?x@h/db", out, sizeof(out));
    assert_null(strstr(out, "s3cr3t"));
    /* truncation is safe */
    backend_url_mask("mysql://auth:s3cr3t@h/db", out, 10);
    assert_string_equal(out, "mysql://a");

    snprintf(buf, sizeof(buf), "mysql://auth:s3cr3t@h/db");
    backend_url_mask_inplace(buf);
    assert_string_equal(buf, "mysql://auth:******@h/db");
    snprintf(buf, sizeof(buf), "redis://h:1");
    backend_url_mask_inplace(buf);
    assert_string_equal(buf, "redis://h:1");
}

static void test_backend_url_describe(void **state)
{
    struct backend_url u;
    char out[600];

    (void)state;
    parse_ok("mysql://auth:s3cr3t@127.0.0.1/auth", &u);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "mysql://auth:***@127.0.0.1:3306/auth");
    parse_ok("mysql://auth@localhost/auth?socket=/run/m.sock", &u);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "mysql://auth@localhost/auth?socket=/run/m.sock");
    parse_ok("redis://:s3cr3t@[::1]/5", &u);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "redis://:***@[::1]:6379/5");
    parse_ok("redis:///run/r.sock?db=2", &u);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "redis:///run/r.sock?db=2");
    parse_ok("redis://h", &u);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "redis://h:6379/0");
}

/* redis-sentinel://: a list of Sentinels and the master's name; mysql:// with several nodes */
static void test_backend_url_several_hosts(void **state)
{
    struct backend_url u;
    char out[700];

    (void)state;
    parse_ok("redis-sentinel://127.0.0.1:26380,10.0.0.2,[::1]:26382/mymaster", &u);
    assert_int_equal(u.kind, BACKEND_REDIS);
    assert_true(u.sentinel);
    assert_string_equal(u.master, "mymaster");
    assert_int_equal(u.nhosts, 3);
    assert_string_equal(u.hosts[0].host, "127.0.0.1");
    assert_int_equal(u.hosts[0].port, 26380);
    assert_string_equal(u.hosts[1].host, "10.0.0.2");
    assert_int_equal(u.hosts[1].port, 26379); /* the Sentinel default */
    assert_string_equal(u.hosts[2].host, "::1");
    assert_int_equal(u.hosts[2].port, 26382);
    assert_string_equal(u.host, "127.0.0.1"); /* the first, for single-host code */
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "redis-sentinel://127.0.0.1:26380,10.0.0.2:26379,[::1]:26382/mymaster");
    parse_ok("redis-sentinel://auth@s1:1,s2:2/m-1.x?db=4", &u);
    assert_string_equal(u.user, "auth");
    assert_int_equal(u.redis_db, 4);
    assert_string_equal(u.master, "m-1.x");
    parse_bad("redis-sentinel://s1:1,s2:2", "missing master name");
    parse_bad("redis-sentinel://s1:1,s2:2/", "missing master name");
    parse_bad("redis-sentinel:///m", "missing Sentinel host");
    parse_bad("redis-sentinel://s1,,s2/m", "empty host");
    parse_bad("redis-sentinel://s1:0/m", "port");
    parse_bad("redis-sentinel://s1/m!", "bad master name");
    parse_bad("redis-sentinel://a,b,c,d,e,f,g,h,i/m", "more than 8 hosts");
    parse_bad("redis://a,b/0", "bad character");

    parse_ok("redis://127.0.0.1:6380", &u);
    assert_false(u.sentinel);
    assert_int_equal(u.nhosts, 1);
    assert_int_equal(u.hosts[0].port, 6380);

    parse_ok("mysql://auth@db-1:3307,db-2,db-3:3309/accounts", &u);
    assert_int_equal(u.kind, BACKEND_MYSQL);
    assert_int_equal(u.nhosts, 3);
    assert_string_equal(u.hosts[0].host, "db-1");
    assert_int_equal(u.hosts[0].port, 3307);
    assert_int_equal(u.hosts[1].port, 3306);
    assert_int_equal(u.hosts[2].port, 3309);
    assert_string_equal(u.db, "accounts");
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "mysql://auth@db-1:3307,db-2:3306,db-3:3309/accounts");
    parse_ok("mysql://auth@db-1/accounts", &u);
    assert_int_equal(u.nhosts, 1);
    parse_ok("mysql://auth@localhost/accounts?socket=/run/m.sock", &u);
    assert_int_equal(u.nhosts, 0);
    parse_bad("mysql://auth@a,b/accounts?socket=/run/m.sock", "one host");
    parse_bad("mysql://auth@a,,b/accounts", "empty host");
}

/* rediss://, rediss-sentinel:// and mysql ?tls=on ask for TLS; the plain forms do not */
static void test_backend_url_tls(void **state)
{
    struct backend_url u;
    char out[700];

    (void)state;
    parse_ok("redis://h:6380/2", &u);
    assert_false(u.tls);
    parse_ok("rediss://h:6380/2", &u);
    assert_true(u.tls);
    assert_false(u.sentinel);
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.redis_db, 2);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "rediss://h:6380/2");
    parse_ok("rediss-sentinel://s1:1,s2:2/m?db=3", &u);
    assert_true(u.tls);
    assert_true(u.sentinel);
    assert_int_equal(u.nhosts, 2);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "rediss-sentinel://s1:1,s2:2/m?db=3");
    parse_bad("rediss:///run/redis.sock", "TLS over TCP");
    parse_ok("mysql://auth@db/accounts?tls=on", &u);
    assert_true(u.tls);
    backend_url_describe(&u, out, sizeof(out));
    assert_string_equal(out, "mysql://auth@db:3306/accounts?tls=on");
    parse_ok("mysql://auth@db/accounts?tls=off", &u);
    assert_false(u.tls);
    parse_bad("mysql://auth@db/accounts?tls=yes", "tls= takes on or off");
    parse_bad("mysql://auth@db/accounts?tls=on&tls=on", "given twice");
    parse_bad("mysql://auth@localhost/accounts?socket=/run/m.sock&tls=on", "not with ?socket=");
    parse_bad("redis://h/0?tls=on", "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_url_redis_tcp),
        cmocka_unit_test(test_backend_url_redis_unix),
        cmocka_unit_test(test_backend_url_redis_auth),
        cmocka_unit_test(test_backend_url_mysql),
        cmocka_unit_test(test_backend_url_password_chars),
        cmocka_unit_test(test_backend_url_malformed),
        cmocka_unit_test(test_backend_url_errors_hide_password),
        cmocka_unit_test(test_backend_url_mask),
        cmocka_unit_test(test_backend_url_describe),
        cmocka_unit_test(test_backend_url_several_hosts),
        cmocka_unit_test(test_backend_url_tls),
    };
    return cmocka_run_group_tests_name("backend_url", tests, NULL, NULL);
}
