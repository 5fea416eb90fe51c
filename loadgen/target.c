/*
 * target.c - see target.h.
 */
#include "target.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static bool is_ip_literal(const char *host)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

int lg_target_parse(const char *url, struct lg_target *t, char *err)
{
    const char *p;
    const char *host;
    const char *host_end;
    const char *path;
    size_t hlen;

    memset(t, 0, sizeof(*t));
    if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        p = url + 8;
        t->tls = true;
    } else {
        snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' must start with http:// or https://", url);
        return -1;
    }
    path = strchr(p, '/');
    if (path == NULL)
        path = p + strlen(p);
    if (path - p >= (long)sizeof(t->host_header)) {
        snprintf(err, LG_TARGET_ERR_LEN, "--url host is too long");
        return -1;
    }
    memcpy(t->host_header, p, (size_t)(path - p));
    t->host_header[path - p] = '\0';

    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(path - host));
        if (host_end == NULL) {
            snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' has an unclosed '['", url);
            return -1;
        }
        p = host_end + 1;
    } else {
        host = p;
        host_end = memchr(host, ':', (size_t)(path - host));
        if (host_end == NULL)
            host_end = path;
        p = host_end;
    }
    hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof(t->host)) {
        snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' has no valid host", url);
        return -1;
    }
    memcpy(t->host, host, hlen);
    t->host[hlen] = '\0';
    t->host_is_ip = is_ip_literal(t->host);

    t->port = t->tls ? 443 : 80;
    if (p < path) {
        unsigned long port = 0;
        if (*p != ':' || p + 1 == path) {
            snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' has a bad port", url);
            return -1;
        }
        for (p++; p < path; p++) {
            if (*p < '0' || *p > '9' || port > 65535) {
                snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' has a bad port", url);
                return -1;
            }
            port = port * 10 + (unsigned long)(*p - '0');
        }
        if (port == 0 || port > 65535) {
            snprintf(err, LG_TARGET_ERR_LEN, "--url '%s' has a bad port", url);
            return -1;
        }
        t->port = (uint16_t)port;
    }

    hlen = strlen(path);
    while (hlen > 0 && path[hlen - 1] == '/')
        hlen--;
    if (hlen >= sizeof(t->prefix)) {
        snprintf(err, LG_TARGET_ERR_LEN, "--url path is too long");
        return -1;
    }
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c <= ' ' || c >= 0x7f || c == '?' || c == '#') {
            snprintf(err, LG_TARGET_ERR_LEN, "--url path must be a plain prefix like /api");
            return -1;
        }
    }
    memcpy(t->prefix, path, hlen);
    t->prefix[hlen] = '\0';
    return 0;
}

bool lg_target_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && a[12] == 127;
    }
    return false;
}

int lg_target_resolve(struct lg_target *t, bool allow_remote, char *err)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res;
    char port[8];
    int rc;

    snprintf(port, sizeof(port), "%u", t->port);
    rc = getaddrinfo(t->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, LG_TARGET_ERR_LEN, "cannot resolve '%s': %s", t->host, gai_strerror(rc));
        return -1;
    }
    if (!allow_remote && !lg_target_is_loopback(res->ai_addr)) {
        snprintf(err, LG_TARGET_ERR_LEN,
                 "--url host '%s' is not a loopback address; this tool measures the local "
                 "machine (add --allow-remote to drive a remote host)",
                 t->host);
        freeaddrinfo(res);
        return -1;
    }
    memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
    t->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}
