/*
 * route_users.h - the accounts: POST /users (a form username=...&password=...: CREATE on
 * server2, within --signup-limit per client address; with --signup closed, 403 before anything
 * is parsed or sent to server2), and PUT/DELETE /users/{name} (SETPASS or
 * DELETE on server2), which change or delete the account the credentials are for (only one's
 * own: 403 otherwise).
 *
 * DESIGN: on the conn's thread; the passwords read from the body and the credentials are wiped
 * before returning; server2's answer completes the request (c->req holds the request handle).
 */
#ifndef S1_ROUTE_USERS_H
#define S1_ROUTE_USERS_H

#include <stddef.h>

#include "conn.h"
#include "http_parser.h"

/* POST /users, with its form body. */
enum s1_dispatch route_users_create(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *body,
                                    size_t body_len);
/* PUT (form body password=NEW) or DELETE /users/{name} (path, len: the target's path). */
enum s1_dispatch route_users_change(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *path,
                                    size_t len, const char *body, size_t body_len);

#endif /* S1_ROUTE_USERS_H */
