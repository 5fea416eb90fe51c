/*
 * authclient.h - one worker thread's client for server2 (docs/protocol.md): --auth-conns
 * persistent TCP connections to each server2 of --auth in the worker's event base, the link
 * handshake first (HELLO, HELLO_ACK checked against the shared key, AUTH), then requests
 * pipelined with 64-bit ids and matched to their answers in any order, every frame after the
 * handshake sealed in place in the output buffer and opened in place in the input buffer
 * (common/linkseal.h; in clear with --insecure-no-secret).
 *
 * DESIGN: owned by one worker thread; nothing here is shared. A request goes round-robin to a
 * connection that is up and below --auth-max-inflight (the connections of the server2s
 * alternate, so the requests spread over every server2 that is up); if there is none,
 * authclient_submit fails at once so the HTTP side answers 503 without waiting. With several
 * server2s, a VERIFY, CREATE or PING whose connection fails or times out is sent once more, to
 * another server2 that is up, with a fresh --auth-timeout; its handle stays valid. A VERIFY
 * and a PING are idempotent; a CREATE carries a random creation token, the same when sent
 * again, which server2 stores with the account, so a creation the first server2 applied is
 * answered OK by the second (docs/protocol.md). A SETPASS or DELETE is not sent again (it
 * may have been applied, and its compare-and-set would then be denied). Frames queued during
 * one event-loop iteration leave in one write at its end. Each request gets exactly one callback: the answer,
 * UNAVAILABLE on timeout (--auth-timeout) or disconnect — unless it was cancelled first
 * (authclient_cancel), after which it gets none. A lost connection reconnects with backoff
 * (100 ms doubling to 2 s), forever. Callbacks may submit or cancel requests.
 * An answer is taken only if its id is in flight on that connection and it echoes the
 * request's type and user; any other answer (except a late one to a request that timed out,
 * counted and dropped) closes the connection (503 for its requests) and reconnects. A
 * connection on which a request timed out takes no new requests, and is replaced once nothing
 * is left in flight on it.
 * server2 may send INVALIDATE (an account changed) at any time on a connection that is up: the
 * client calls events.invalidated before it reads another byte, then acknowledges it
 * (INVALIDATE_ACK, same id), so server2 knows the user's cached credentials are gone. A
 * connection that was up and goes down calls events.lost: an INVALIDATE may have been lost
 * with it. server2 also sends LEASE while it hears every account change (docs/protocol.md,
 * "Leases"): the owner may answer from its cache only while authclient_lease_valid, and a
 * LEASE that comes after every lease had run out calls events.lost first (while none was
 * valid, a change may have been made that no server2 told us about).
 */
#ifndef AUTHCLIENT_H
#define AUTHCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "frame.h"
#include "linkauth.h"

struct event_base;
struct metrics;
struct authclient;

#define AUTHCLIENT_MAX_SERVERS 8 /* server2s in --auth */

struct authclient_server {
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char addr_str[300]; /* "host:port" as given, for log lines */
};

struct authclient_config {
    struct authclient_server servers[AUTHCLIENT_MAX_SERVERS]; /* --auth */
    unsigned nservers;
    unsigned nconns;       /* --auth-conns, per server2 */
    uint64_t timeout_us;   /* --auth-timeout */
    unsigned max_inflight; /* --auth-max-inflight, per connection, <= 65535 */
    uint8_t link_key[LINKAUTH_KEY_SIZE]; /* from --auth-secret-file; never logged */
};

#define AUTHCLIENT_MAX_CONNS 64 /* --auth-conns times the server2s, at most */

/* st is the REPLY status, or FRAME_ST_UNAVAILABLE on timeout, EXPIRED, disconnect or a
 * protocol error; retry_ms, with FRAME_ST_LIMITED, how long until the user may try again. */
typedef void (*authclient_cb)(void *arg, enum frame_status st, uint32_t retry_ms);

/* What the client tells its owner; both may be NULL. */
struct authclient_events {
    void (*invalidated)(void *arg, const char *user, size_t user_len);
    void (*lost)(void *arg);
    void *arg;
};

/* Starts connecting at once. cfg must outlive the client. */
struct authclient *authclient_new(struct event_base *base, const struct authclient_config *cfg,
                                  struct metrics *m);
/* Sets the event hooks (before the event loop runs). */
void authclient_set_events(struct authclient *ac, const struct authclient_events *ev);
/* Closes the connections; pending callbacks are dropped without being called. */
void authclient_free(struct authclient *ac);

/*
 * Queues a CREATE, VERIFY, DELETE (user and pass required) or PING (both NULL). Returns 0 and a
 * handle for authclient_cancel, or -1 when no connection can take it (the callback is never
 * called).
 */
int authclient_submit(struct authclient *ac, enum frame_type type, const char *user,
                      size_t user_len, const char *pass, size_t pass_len, authclient_cb cb,
                      void *arg, uint64_t *handle);
/* The same for a SETPASS (user, current password, new password). */
int authclient_submit_setpass(struct authclient *ac, const char *user, size_t user_len,
                              const char *pass, size_t pass_len, const char *new_pass,
                              size_t new_len, authclient_cb cb, void *arg, uint64_t *handle);
/* The request's callback will not be called. Unknown or finished handles are ignored. */
void authclient_cancel(struct authclient *ac, uint64_t handle);
/* True if at least one connection has completed its HELLO. */
bool authclient_is_up(const struct authclient *ac);
/* Whether a connection that is up holds a lease at now_ns: cached credentials may be used. */
bool authclient_lease_valid(const struct authclient *ac, uint64_t now_ns);

#endif /* AUTHCLIENT_H */
