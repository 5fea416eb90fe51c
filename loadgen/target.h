/*
 * target.h - the server the load generator drives: "http://HOST[:PORT][/PREFIX]" or
 * "https://..." parsed into scheme, host, port, path prefix and Host header, then resolved once
 * to a socket address. By default
 * only loopback addresses are accepted: this tool measures a stack on the local machine.
 * Immutable after lg_target_resolve(); read by every worker.
 */
#ifndef LG_TARGET_H
#define LG_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define LG_TARGET_ERR_LEN 512

struct lg_target {
    bool tls;              /* https:// */
    bool host_is_ip;       /* host is an IPv4 or IPv6 literal (no SNI, IP checked in the cert) */
    char host[256];        /* as written, without [] for IPv6 */
    uint16_t port;         /* 80 (http) or 443 (https) when absent */
    char prefix[256];      /* path prefix without trailing '/', "" for none */
    char host_header[300]; /* "host[:port]" as written in the URL */
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

/* Parses url into t (no name resolution). Returns 0, or -1 with a reason in err. */
int lg_target_parse(const char *url, struct lg_target *t, char *err);
/* Resolves t->host; refuses non-loopback addresses unless allow_remote. */
int lg_target_resolve(struct lg_target *t, bool allow_remote, char *err);
bool lg_target_is_loopback(const struct sockaddr *sa);

#endif /* LG_TARGET_H */
