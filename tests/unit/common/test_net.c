/*
 * test_net.c - common/net: the address key of per-address limits, and lists of networks
 * (net_cidrs): parsing, refusals, matching IPv4, IPv6 and IPv4-mapped addresses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../common/net.h"

static struct sockaddr_storage ss;

/* ip as a sockaddr (in ss); its length */
static socklen_t sa_of(const char *ip)
{
    memset(&ss, 0, sizeof(ss));
    if (strchr(ip, ':') == NULL) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    in6->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
    return sizeof(*in6);
}

static bool in(const struct net_cidrs *l, const char *ip)
{
    socklen_t len = sa_of(ip);
    return net_cidrs_match(l, (struct sockaddr *)&ss, len);
}

static void test_net_cidrs_match(void **state)
{
    struct net_cidrs l;
    char err[NET_ERR_LEN];

    (void)state;
    assert_int_equal(net_cidrs_parse("127.0.0.1,10.1.0.0/16,2001:db8::/32,::1", &l, err), 0);
    assert_int_equal(l.n, 4);
    assert_true(in(&l, "127.0.0.1"));
    assert_false(in(&l, "127.0.0.2"));
    assert_true(in(&l, "10.1.255.3"));
    assert_false(in(&l, "10.2.0.1"));
    assert_true(in(&l, "2001:db8:ffff::1"));
    assert_false(in(&l, "2001:db9::1"));
    assert_true(in(&l, "::1"));
    assert_false(in(&l, "::2"));
    /* an IPv4 client of a dual-stack socket matches its IPv4 entry */
    assert_true(in(&l, "::ffff:10.1.2.3"));
    assert_false(in(&l, "::ffff:10.2.2.3"));
    /* host bits in the entry are ignored; /0 of a family matches that family only */
    assert_int_equal(net_cidrs_parse("10.1.2.3/8,0.0.0.0/0", &l, err), 0);
    assert_true(in(&l, "10.200.0.1"));
    assert_true(in(&l, "192.0.2.1"));
    assert_false(in(&l, "2001:db8::1"));
    assert_int_equal(net_cidrs_parse("::/0", &l, err), 0);
    assert_true(in(&l, "2001:db8::1"));
    assert_false(net_cidrs_match(&l, NULL, 0));
}

static void test_net_cidrs_refused(void **state)
{
    static const struct {
        const char *list, *why;
    } bad[] = {
        {"", "empty"},
        {"10.0.0.1,", "not an address or network"},
        {",10.0.0.1", "not an address or network"},
        {"10.0.0.256", "not an IPv4 or IPv6 address"},
        {"lb.example", "not an IPv4 or IPv6 address"},
        {"10.0.0.0/33", "0..32"},
        {"::/129", "0..128"},
        {"10.0.0.0/", "0..32"},
        {"10.0.0.0/-1", "0..32"},
        {"10.0.0.0/8x", "0..32"},
        {"1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,6.6.6.6,7.7.7.7,8.8.8.8,9.9.9.9,10.0.0.1,"
         "11.0.0.1,12.0.0.1,13.0.0.1,14.0.0.1,15.0.0.1,16.0.0.1,17.0.0.1", "more than 16"},
    };
    struct net_cidrs l;
    char err[NET_ERR_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(net_cidrs_parse(bad[i].list, &l, err), -1);
        assert_non_null(strstr(err, bad[i].why));
    }
}

static void test_net_addr_key(void **state)
{
    uint8_t a[NET_ADDR_KEY_LEN], b[NET_ADDR_KEY_LEN];
    socklen_t len;

    (void)state;
    len = sa_of("192.0.2.7");
    net_addr_key((struct sockaddr *)&ss, len, a);
    len = sa_of("::ffff:192.0.2.7");
    net_addr_key((struct sockaddr *)&ss, len, b);
    assert_memory_equal(a, b, sizeof(a)); /* the same client either way */
    len = sa_of("2001:db8::1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    len = sa_of("2001:db8::ffff:2");
    net_addr_key((struct sockaddr *)&ss, len, b);
    assert_memory_equal(a, b, sizeof(a)); /* one /64, one key */
    assert_false(net_addr_key_is_loopback(a));
    len = sa_of("127.3.2.1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    assert_true(net_addr_key_is_loopback(a));
    len = sa_of("128.0.0.1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    assert_false(net_addr_key_is_loopback(a));
    len = sa_of("::ffff:127.0.0.1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    assert_true(net_addr_key_is_loopback(a));
    len = sa_of("::1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    assert_true(net_addr_key_is_loopback(a));
    len = sa_of("2001:db8::1");
    net_addr_key((struct sockaddr *)&ss, len, a);
    assert_false(net_addr_key_is_loopback(a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_net_cidrs_match),
        cmocka_unit_test(test_net_cidrs_refused),
        cmocka_unit_test(test_net_addr_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
