/*
 * net.h - socket helpers: listening sockets (optionally SO_REUSEPORT, so every worker thread can
 * own one), non-blocking mode, TCP_NODELAY. Errors go into a caller buffer of NET_ERR_LEN bytes.
 * Thread-safe.
 */
#ifndef NET_H
#define NET_H

#include <stdbool.h>
#include <stdint.h>

#define NET_ERR_LEN 256

/*
 * Creates a non-blocking TCP socket listening on host:port (host is an IPv4 or IPv6 literal or a
 * name; port 0 = any). Returns the fd, or -1 with a reason in err.
 */
int net_listen_tcp(const char *host, uint16_t port, bool reuseport, int backlog, char *err);
/* The local port a socket is bound to, or 0 on error. */
uint16_t net_local_port(int fd);
int net_set_nonblock(int fd);
int net_set_nodelay(int fd);

#endif /* NET_H */
