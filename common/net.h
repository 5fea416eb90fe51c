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
/* Whether a key of net_addr_key is a loopback client's: 127.0.0.0/8, or ::1 (whose /64 key is
 * all zeros, as is a Unix socket's: local too). */
bool net_addr_key_is_loopback(const uint8_t key[NET_ADDR_KEY_LEN]);

/*
 * A list of networks ("192.0.2.10", "10.0.0.0/8", "::1", "2001:db8::/32"): whom a server trusts
 * to speak for its clients (a load balancer's PROXY header). IPv4 is kept as IPv4-mapped IPv6,
 * so an IPv4 client of a dual-stack socket matches an IPv4 entry.
 */
#define NET_CIDRS_MAX 16
struct net_cidrs {
    struct {
        uint8_t addr[16]; /* the network, host bits zero */
        unsigned prefix;  /* 0..128 */
    } net[NET_CIDRS_MAX];
    unsigned n;
};
/* Parses a comma-separated list into out; 0, or -1 with a reason (naming the entry) in err. */
int net_cidrs_parse(const char *list, struct net_cidrs *out, char *err);
/* Whether the address sa is in one of l's networks (an address of another family: no). */
bool net_cidrs_match(const struct net_cidrs *l, const struct sockaddr *sa, socklen_t len);

#endif /* NET_H */
