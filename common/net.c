/*
 * net.c - see net.h.
 */
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
