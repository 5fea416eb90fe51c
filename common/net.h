/*
 * net.h - socket helpers: listening sockets (optionally SO_REUSEPORT, so every worker thread can
 * own one), non-blocking mode, TCP_NODELAY, the key that per-address limits count a client
 * under. Errors go into a caller buffer of NET_ERR_LEN bytes. Thread-safe.
 */
#ifndef NET_H
#define NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_ERR_LEN 256
#define NET_ADDR_KEY_LEN 16 /* an address key: IPv4 as ::ffff:a.b.c.d, IPv6 its /64 */

/*
 * Creates a non-blocking TCP socket listening on host:port (host is an IPv4 or IPv6 literal or a
 * name; port 0 = any). Returns the fd, or -1 with a reason in err.
 */
int net_listen_tcp(const char *host, uint16_t port, bool reuseport, int backlog, char *err);
/* The local port a socket is bound to, or 0 on error. */
uint16_t net_local_port(int fd);
int net_set_nonblock(int fd);
int net_set_nodelay(int fd);

/*
 * The key of a client address for per-address limits: IPv4 (also IPv4-mapped IPv6) as
 * ::ffff:a.b.c.d, IPv6 with its last 64 bits zeroed (one host usually holds a whole /64).
 * Anything else (a Unix socket, NULL) is all zeros.
 */
void net_addr_key(const struct sockaddr *sa, socklen_t len, uint8_t out[NET_ADDR_KEY_LEN]);

#endif /* NET_H */
