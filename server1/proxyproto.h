/*
 * proxyproto.h - the PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) a
 * load balancer sends before the client's bytes, so that the server learns the client's
 * address. Pure functions, no allocation, thread-safe.
 * DESIGN: one call over the bytes received so far says "a whole header of N bytes", "a prefix
 * of one: read more" or "not one": the caller keeps reading until it knows, bounded by
 * PROXYPROTO_MAX, and accepts a header only from the addresses it trusts (anyone else could
 * claim any address). Version 1 is the text line "PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n" (or
 * "PROXY UNKNOWN ...\r\n"), at most 107 bytes; version 2 a 16-byte binary head (signature,
 * version and command, family, length) and the addresses, then TLVs, which are skipped. A LOCAL
 * command (the balancer's own health check), UNKNOWN or an unspecified family keeps the
 * connection's own address; UDP and unix-socket families are refused, as are addresses or ports
 * that do not parse exactly (no leading zeros in v1 ports, no spaces but one between fields).
 */
#ifndef PROXYPROTO_H
#define PROXYPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define PROXYPROTO_V1_MAX 107  /* the longest version 1 line, CRLF included */
#define PROXYPROTO_V2_HEAD 16  /* signature 12, version/command 1, family 1, length 2 */
#define PROXYPROTO_V2_MAX_LEN 1024 /* the most of addresses + TLVs accepted after the head */
#define PROXYPROTO_MAX (PROXYPROTO_V2_HEAD + PROXYPROTO_V2_MAX_LEN)

struct proxyproto_src {
    bool local; /* LOCAL, UNKNOWN or no address: keep the connection's own */
    struct sockaddr_storage addr; /* else the client's address and port (AF_INET or AF_INET6) */
    socklen_t addr_len;
};

/*
 * The PROXY header at the start of buf[0..len): its length (> 0) with the client in *out; 0 if
 * buf is a proper prefix of a header that could still be valid (read more; len 0 too); -1 if
 * it is not a valid header (or one longer than PROXYPROTO_MAX).
 */
int proxyproto_parse(const void *buf, size_t len, struct proxyproto_src *out);

#endif
