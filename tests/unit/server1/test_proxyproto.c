/*
 * test_proxyproto.c - the PROXY protocol header (server1/proxyproto): versions 1 and 2, every
 * proper prefix of a valid header asks for more, the refusals.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/proxyproto.h"

/* buf[0..len) is one whole header: every proper prefix asks for more, the whole is len */
static void whole(const void *buf, size_t len, struct proxyproto_src *out)
{
    for (size_t i = 0; i < len; i++)
        assert_int_equal(proxyproto_parse(buf, i, out), 0);
    assert_int_equal(proxyproto_parse(buf, len, out), (int)len);
}

static void is_v4(const struct proxyproto_src *s, const char *ip, unsigned port)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&s->addr;
    char got[INET_ADDRSTRLEN];

    assert_false(s->local);
    assert_int_equal(sin->sin_family, AF_INET);
    assert_int_equal(s->addr_len, sizeof(*sin));
    inet_ntop(AF_INET, &sin->sin_addr, got, sizeof(got));
    assert_string_equal(got, ip);
    assert_int_equal(ntohs(sin->sin_port), port);
}

static void is_v6(const struct proxyproto_src *s, const char *ip, unsigned port)
{
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&s->addr;
    char got[INET6_ADDRSTRLEN];

    assert_false(s->local);
    assert_int_equal(sin6->sin6_family, AF_INET6);
    inet_ntop(AF_INET6, &sin6->sin6_addr, got, sizeof(got));
    assert_string_equal(got, ip);
    assert_int_equal(ntohs(sin6->sin6_port), port);
}

static void test_proxyproto_v1(void **state)
{
    struct proxyproto_src s;
    const char *tcp4 = "PROXY TCP4 192.0.2.7 10.0.0.1 56324 443\r\nGET / HTTP/1.1\r\n";
    const char *tcp6 = "PROXY TCP6 2001:db8::7 2001:db8::1 65535 8080\r\n";
    const char *unknown = "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";
    char longest[PROXYPROTO_V1_MAX + 1];

    (void)state;
    whole(tcp4, strlen("PROXY TCP4 192.0.2.7 10.0.0.1 56324 443\r\n"), &s);
    is_v4(&s, "192.0.2.7", 56324);
    /* the request's bytes after the header are not the parser's */
    assert_int_equal(proxyproto_parse(tcp4, strlen(tcp4), &s), 41);
    whole(tcp6, strlen(tcp6), &s);
    is_v6(&s, "2001:db8::7", 65535);
    whole(unknown, strlen(unknown), &s);
    assert_true(s.local);
    whole("PROXY UNKNOWN\r\n", 15, &s);
    assert_true(s.local);
    /* the longest TCP6 line, and the longest line the protocol allows (UNKNOWN) */
    snprintf(longest, sizeof(longest), "PROXY TCP6 %s %s 65535 65535\r\n",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    whole(longest, strlen(longest), &s);
    is_v6(&s, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
    snprintf(longest, sizeof(longest), "PROXY UNKNOWN %s %s 65535 65535\r\n",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    assert_int_equal(strlen(longest), PROXYPROTO_V1_MAX);
    whole(longest, strlen(longest), &s);
    assert_true(s.local);
}

static void test_proxyproto_v1_refused(void **state)
{
    static const char *const bad[] = {
        "GET / HTTP/1.1\r\n",                           /* not a PROXY header */
        "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",           /* no such protocol */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",             /* LF alone */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n",         /* CR not before LF */
        "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",          /* two spaces */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",          /* a space at the end */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",             /* a port missing */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",         /* a field too many */
        "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",         /* not an address */
        "PROXY TCP4 ::1 5.6.7.8 1 2\r\n",               /* IPv6 in TCP4 */
        "PROXY TCP6 1.2.3.4 ::1 1 2\r\n",               /* IPv4 in TCP6 */
        "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",       /* port too big */
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",          /* leading zero */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 -2\r\n",          /* not digits */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\0\r\n",         /* a NUL */
        "PROXY \r\n",                                   /* nothing */
        "PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n",            /* no space after PROXY */
        "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",           /* case matters */
    };
    struct proxyproto_src s;
    char nocrlf[PROXYPROTO_V1_MAX + 1];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        if (i == 14)
            n += 3; /* the NUL and the CRLF after it */
        assert_int_equal(proxyproto_parse(bad[i], n, &s), -1);
    }
    /* 107 bytes without CRLF: no header can be that long */
    memset(nocrlf, 'x', sizeof(nocrlf));
    memcpy(nocrlf, "PROXY ", 6);
    assert_int_equal(proxyproto_parse(nocrlf, PROXYPROTO_V1_MAX - 1, &s), 0);
    assert_int_equal(proxyproto_parse(nocrlf, PROXYPROTO_V1_MAX, &s), -1);
}

/* A v2 header: the signature, ver_cmd, family, then body (len bytes) */
static size_t v2(unsigned char *out, unsigned char ver_cmd, unsigned char fam, const void *body,
                 size_t len)
{
    static const unsigned char sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                          0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
    memcpy(out, sig, 12);
    out[12] = ver_cmd;
    out[13] = fam;
    out[14] = (unsigned char)(len >> 8);
    out[15] = (unsigned char)len;
    memcpy(out + 16, body, len);
    return 16 + len;
}

static void test_proxyproto_v2(void **state)
{
    unsigned char buf[PROXYPROTO_MAX + 16];
    unsigned char body[64] = {0};
    struct proxyproto_src s;
    size_t n;

    (void)state;
    /* TCP over IPv4 with a TLV after the addresses (skipped) */
    memcpy(body, "\xc0\x00\x02\x07" "\x0a\x00\x00\x01" "\xdc\x04" "\x01\xbb", 12);
    memcpy(body + 12, "\x01\x00\x02h2", 5); /* PP2_TYPE_ALPN "h2" */
    n = v2(buf, 0x21, 0x11, body, 17);
    whole(buf, n, &s);
    is_v4(&s, "192.0.2.7", 56324);
    /* TCP over IPv6 */
    memset(body, 0, sizeof(body));
    inet_pton(AF_INET6, "2001:db8::7", body);
    inet_pton(AF_INET6, "2001:db8::1", body + 16);
    memcpy(body + 32, "\x1f\x90\x01\xbb", 4);
    n = v2(buf, 0x21, 0x21, body, 36);
    whole(buf, n, &s);
    is_v6(&s, "2001:db8::7", 8080);
    /* LOCAL (a health check of the balancer's own): the connection's address stays */
    n = v2(buf, 0x20, 0x00, body, 0);
    whole(buf, n, &s);
    assert_true(s.local);
    n = v2(buf, 0x20, 0x11, body, 12); /* LOCAL with addresses: ignored */
    whole(buf, n, &s);
    assert_true(s.local);
    n = v2(buf, 0x21, 0x00, body, 0); /* PROXY, family UNSPEC */
    whole(buf, n, &s);
    assert_true(s.local);
    /* the longest body accepted */
    memset(buf, 0, sizeof(buf));
    n = v2(buf, 0x21, 0x11, body, 12);
    buf[14] = PROXYPROTO_V2_MAX_LEN >> 8;
    buf[15] = PROXYPROTO_V2_MAX_LEN & 0xff;
    assert_int_equal(proxyproto_parse(buf, PROXYPROTO_MAX, &s), PROXYPROTO_MAX);
    assert_int_equal(proxyproto_parse(buf, PROXYPROTO_MAX - 1, &s), 0);
}

static void test_proxyproto_v2_refused(void **state)
{
    unsigned char buf[PROXYPROTO_MAX + 16];
    unsigned char body[64] = {0};
    struct proxyproto_src s;
    size_t n;

    (void)state;
    n = v2(buf, 0x11, 0x11, body, 12); /* version 1 in a v2 head */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    assert_int_equal(proxyproto_parse(buf, 13, &s), -1); /* known at its 13th byte */
    n = v2(buf, 0x22, 0x11, body, 12); /* command 2 */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    n = v2(buf, 0x21, 0x12, body, 12); /* UDP over IPv4 */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    n = v2(buf, 0x21, 0x31, body, 12); /* a unix socket */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    n = v2(buf, 0x21, 0x11, body, 11); /* IPv4 addresses cut short */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    n = v2(buf, 0x21, 0x21, body, 35); /* IPv6 addresses cut short */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    n = v2(buf, 0x21, 0x11, body, 12);
    buf[14] = (PROXYPROTO_V2_MAX_LEN + 1) >> 8; /* longer than accepted: known from the head */
    buf[15] = (PROXYPROTO_V2_MAX_LEN + 1) & 0xff;
    assert_int_equal(proxyproto_parse(buf, 16, &s), -1);
    n = v2(buf, 0x21, 0x11, body, 12);
    buf[6] = 0x0B; /* a signature byte wrong */
    assert_int_equal(proxyproto_parse(buf, n, &s), -1);
    assert_int_equal(proxyproto_parse(buf, 7, &s), -1);
    assert_int_equal(proxyproto_parse("\x0d\x0a\x0d", 3, &s), 0); /* could still be one */
    assert_int_equal(proxyproto_parse("", 0, &s), 0);
    assert_int_equal(proxyproto_parse("\x16\x03\x01", 3, &s), -1); /* a TLS ClientHello */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxyproto_v1),
        cmocka_unit_test(test_proxyproto_v1_refused),
        cmocka_unit_test(test_proxyproto_v2),
        cmocka_unit_test(test_proxyproto_v2_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
