/*
 * net.c - see net.h.
 */
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int net_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -1;
    return 0;
}

int net_set_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void net_addr_key(const struct sockaddr *sa, socklen_t len, uint8_t out[NET_ADDR_KEY_LEN])
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    memset(out, 0, NET_ADDR_KEY_LEN);
    if (sa == NULL)
        return;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        memcpy(out, v4_prefix, sizeof(v4_prefix));
        memcpy(out + 12, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;
        if (memcmp(a, v4_prefix, sizeof(v4_prefix)) == 0) {
            memcpy(out, a, 16); /* an IPv4 client of a dual-stack socket: the whole address */
        } else {
            memcpy(out, a, 8); /* the /64 */
        }
    }
}

bool net_addr_key_is_loopback(const uint8_t key[NET_ADDR_KEY_LEN])
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t zero[NET_ADDR_KEY_LEN] = {0};

    if (memcmp(key, v4_prefix, sizeof(v4_prefix)) == 0)
        return key[12] == 127;
    return memcmp(key, zero, sizeof(zero)) == 0;
}

/* addr with every bit past prefix cleared */
static void cidr_mask(uint8_t addr[16], unsigned prefix)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;
        addr[i] &= keep >= 8 ? 0xff : (uint8_t)(0xff << (8 - keep));
    }
}

/* sa as 16 bytes (IPv4 as IPv4-mapped IPv6); false for another family. */
static bool addr16(const struct sockaddr *sa, socklen_t len, uint8_t out[16])
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (sa != NULL && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(out, v4_prefix, sizeof(v4_prefix));
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return true;
    }
    if (sa != NULL && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(out, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, 16);
        return true;
    }
    return false;
}

int net_cidrs_parse(const char *list, struct net_cidrs *out, char *err)
{
    const char *p = list;

    out->n = 0;
    if (list == NULL || *list == '\0') {
        snprintf(err, NET_ERR_LEN, "an empty list of networks");
        return -1;
    }
    for (;;) {
        size_t len = strcspn(p, ",");
        char entry[INET6_ADDRSTRLEN + 5];
        char *slash;
        unsigned max = 128, prefix;
        uint8_t a[16];

        if (len == 0 || len >= sizeof(entry)) {
            snprintf(err, NET_ERR_LEN, "'%.*s': not an address or network",
                     (int)(len > 64 ? 64 : len), p);
            return -1;
        }
        memcpy(entry, p, len);
        entry[len] = '\0';
        slash = strchr(entry, '/');
        if (slash != NULL)
            *slash = '\0';
        if (inet_pton(AF_INET, entry, a + 12) == 1) {
            memset(a, 0, 10);
            a[10] = a[11] = 0xff;
            max = 32;
        } else if (inet_pton(AF_INET6, entry, a) != 1) {
            snprintf(err, NET_ERR_LEN, "'%s': not an IPv4 or IPv6 address", entry);
            return -1;
        }
        prefix = max;
        if (slash != NULL) {
            char *end;
            unsigned long v = strtoul(slash + 1, &end, 10);
            if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || v > max) {
                snprintf(err, NET_ERR_LEN, "'%s/%s': the prefix length must be 0..%u", entry,
                         slash + 1, max);
                return -1;
            }
            prefix = (unsigned)v;
        }
        if (out->n == NET_CIDRS_MAX) {
            snprintf(err, NET_ERR_LEN, "more than %d networks", NET_CIDRS_MAX);
            return -1;
        }
        prefix += 128 - max; /* IPv4: past the 96 bits of the mapping */
        cidr_mask(a, prefix);
        memcpy(out->net[out->n].addr, a, 16);
        out->net[out->n++].prefix = prefix;
        p += len;
        if (*p == '\0')
            return 0;
        p++; /* the comma */
    }
}

bool net_cidrs_match(const struct net_cidrs *l, const struct sockaddr *sa, socklen_t len)
{
    uint8_t a[16];

    if (!addr16(sa, len, a))
        return false;
    for (unsigned i = 0; i < l->n; i++) {
        uint8_t m[16];
        memcpy(m, a, 16);
        cidr_mask(m, l->net[i].prefix);
        if (memcmp(m, l->net[i].addr, 16) == 0)
            return true;
    }
    return false;
}

int net_listen_tcp(const char *host, uint16_t port, bool reuseport, int backlog, char *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    char portstr[8];
    char ebuf[128];
    int one = 1;
    int fd = -1;
    int rc;

    snprintf(portstr, sizeof(portstr), "%u", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, NET_ERR_LEN, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, NET_ERR_LEN, "socket: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_free;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)) {
        snprintf(err, NET_ERR_LEN, "setsockopt: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_close;
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
        snprintf(err, NET_ERR_LEN, "cannot bind %s:%u: %s", host, port,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_close;
    }
    if (listen(fd, backlog) < 0) {
        snprintf(err, NET_ERR_LEN, "cannot listen on %s:%u: %s", host, port,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_close;
    }
    freeaddrinfo(res);
    return fd;

err_close:
    close(fd);
    fd = -1;
err_free:
    freeaddrinfo(res);
    return fd;
}

uint16_t net_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}
