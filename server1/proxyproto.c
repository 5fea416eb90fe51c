/*
 * proxyproto.c - see proxyproto.h.
 */
#include "proxyproto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

static const unsigned char V2_SIG[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                         0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/* A v1 port: 1-5 digits, no leading zero, at most 65535; -1 if not one. */
static long v1_port(const char *s, size_t n)
{
    long v = 0;

    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 65535 ? v : -1;
}

/* The next space-separated field of line[*pos..end): its start and length; false if empty. */
static bool v1_field(const char *line, size_t end, size_t *pos, const char **f, size_t *n)
{
    size_t i = *pos;

    while (i < end && line[i] != ' ')
        i++;
    if (i == *pos)
        return false;
    *f = line + *pos;
    *n = i - *pos;
    *pos = i < end ? i + 1 : i; /* past the one space */
    return true;
}

/* The line "PROXY ...\r\n" of n bytes (CRLF included) into out; 0, or -1. */
static int v1_line(const char *line, size_t n, struct proxyproto_src *out)
{
    size_t end = n - 2, pos = 6;
    const char *f[5];
    size_t fl[5];
    int family;
    char ip[INET6_ADDRSTRLEN];
    long port;

    if (end - pos >= 7 && memcmp(line + pos, "UNKNOWN", 7) == 0 &&
        (end == pos + 7 || line[pos + 7] == ' ')) {
        out->local = true; /* the rest of the line says nothing we use */
        return 0;
    }
    if (end - pos < 5 || line[pos] != 'T' || line[pos + 1] != 'C' || line[pos + 2] != 'P' ||
        (line[pos + 3] != '4' && line[pos + 3] != '6') || line[pos + 4] != ' ')
        return -1;
    family = line[pos + 3] == '4' ? AF_INET : AF_INET6;
    pos += 5;
    for (int i = 0; i < 4; i++) {
        if (!v1_field(line, end, &pos, &f[i], &fl[i]))
            return -1;
        if (i < 3 && (pos > end || line[pos - 1] != ' '))
            return -1; /* a field is missing */
    }
    if (f[3] + fl[3] != line + end)
        return -1; /* something after the last field, a space at least */
    /* the destination must parse too, though only the source is used */
    for (int i = 0; i < 2; i++) {
        unsigned char bin[16];
        if (fl[i] >= sizeof(ip))
            return -1;
        memcpy(ip, f[i], fl[i]);
        ip[fl[i]] = '\0';
        if (inet_pton(family, ip, bin) != 1)
            return -1;
        if (i == 0) {
            if (family == AF_INET) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&out->addr;
                sin->sin_family = AF_INET;
                memcpy(&sin->sin_addr, bin, 4);
                out->addr_len = sizeof(*sin);
            } else {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->addr;
                sin6->sin6_family = AF_INET6;
                memcpy(&sin6->sin6_addr, bin, 16);
                out->addr_len = sizeof(*sin6);
            }
        }
    }
    port = v1_port(f[2], fl[2]);
    if (port < 0 || v1_port(f[3], fl[3]) < 0)
        return -1;
    if (family == AF_INET)
        ((struct sockaddr_in *)&out->addr)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)&out->addr)->sin6_port = htons((uint16_t)port);
    out->local = false;
    return 0;
}

static int parse_v1(const char *p, size_t len, struct proxyproto_src *out)
{
    size_t n = len < PROXYPROTO_V1_MAX ? len : PROXYPROTO_V1_MAX;

    if (memcmp(p, "PROXY ", n < 6 ? n : 6) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\r') {
            if (i + 1 == n)
                return len > i + 1 ? -1 : 0; /* the '\n' is still to come */
            if (p[i + 1] != '\n' || i < 6)
                return -1;
            return v1_line(p, i + 2, out) == 0 ? (int)(i + 2) : -1;
        }
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return -1; /* a line of printable ASCII only */
    }
    return len >= PROXYPROTO_V1_MAX ? -1 : 0;
}

static int parse_v2(const unsigned char *p, size_t len, struct proxyproto_src *out)
{
    size_t body;

    if (memcmp(p, V2_SIG, len < sizeof(V2_SIG) ? len : sizeof(V2_SIG)) != 0)
        return -1;
    if (len >= 13 && (p[12] >> 4 != 2 || (p[12] & 0x0F) > 1))
        return -1; /* version 2; LOCAL or PROXY */
    if (len < PROXYPROTO_V2_HEAD)
        return 0;
    body = (size_t)p[14] << 8 | p[15];
    if (body > PROXYPROTO_V2_MAX_LEN)
        return -1;
    if (len < PROXYPROTO_V2_HEAD + body)
        return 0;
    if ((p[12] & 0x0F) == 0) /* LOCAL: whatever follows is ignored */
        return (int)(PROXYPROTO_V2_HEAD + body);
    switch (p[13]) {
    case 0x00: /* UNSPEC */
        break;
    case 0x11: { /* TCP over IPv4: src, dst, sport, dport */
        struct sockaddr_in *sin = (struct sockaddr_in *)&out->addr;
        if (body < 12)
            return -1;
        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, p + 16, 4);
        memcpy(&sin->sin_port, p + 24, 2);
        out->addr_len = sizeof(*sin);
        out->local = false;
        break;
    }
    case 0x21: { /* TCP over IPv6 */
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->addr;
        if (body < 36)
            return -1;
        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, p + 16, 16);
        memcpy(&sin6->sin6_port, p + 48, 2);
        out->addr_len = sizeof(*sin6);
        out->local = false;
        break;
    }
    default: /* UDP, unix sockets: not for a TCP server */
        return -1;
    }
    return (int)(PROXYPROTO_V2_HEAD + body);
}

int proxyproto_parse(const void *buf, size_t len, struct proxyproto_src *out)
{
    const unsigned char *p = buf;

    memset(out, 0, sizeof(*out));
    out->local = true;
    if (len == 0)
        return 0;
    if (p[0] == 'P')
        return parse_v1(buf, len, out);
    if (p[0] == V2_SIG[0])
        return parse_v2(p, len, out);
    return -1;
}
