/*
 * login.h - the credentials of a request: HTTP Basic checked, the per-client failed-login limits
 * (ratelimit.h) applied before server2 is asked, the thread's credential cache (--auth-cache,
 * credcache.h), and server2's VERIFY. A username or client address over its failed-login limit
 * gets 429 with Retry-After and server2 never sees the request. The check before each login
 * (also one the credential cache answers) is a lock-free read; a login sent to server2 first
 * takes a token of both (login_reserve), which it gives back unless the password was wrong
 * (login_answered), so that guesses sent at once cannot outnumber the tokens left. With
 * --auth-cache, a GET or HEAD whose (user, password) this thread's cache holds is answered at
 * once, without server2, while a server2 leases this thread (authclient.h); uploads, deletions
 * and account changes always ask it.
 *
 * DESIGN: used by the route modules on the conn's thread; the state of a login in flight is
 * kept in c->req (request.h) and settled by login_answered, or by the handler's release when
 * the conn goes first (its tokens are kept then).
 */
#ifndef S1_LOGIN_H
#define S1_LOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "authclient.h"
#include "conn.h"

/* 429: server2 says the user is over its shared --login-fail-limit (retry_ms from it). */
void login_limited_by_server2(struct s1_conn *c, uint32_t retry_ms);
/* Takes the failed-login tokens of a login about to be sent; false after answering 429. */
bool login_reserve(struct s1_conn *c, const char *pass, size_t pass_len);
/* Settles the tokens login_reserve took, once server2 answered (or never was asked). */
void login_answered(struct s1_conn *c, bool wrong, bool accepted);
/*
 * server2's answer to a GET or HEAD's VERIFY: then() answers an accepted one; resumes c, unless
 * then() left the answer to a file being read (request_of(c)->read), which resumes it.
 */
void login_verified(struct s1_conn *c, enum frame_status st, uint32_t retry_ms,
                    void (*then)(struct s1_conn *));
/*
 * Checks the Basic credentials and asks server2 (cb answers) or the cache (hit answers; PENDING
 * if it left the answer to a file being read).
 */
enum s1_dispatch login_verify(struct s1_conn *c, const char *buf, const struct http_request *req,
                              authclient_cb cb, void (*hit)(struct s1_conn *));

#endif /* S1_LOGIN_H */
