/*
 * handler.h - the routes: POST /users (CREATE on server2), GET/HEAD /files/{name} (VERIFY on
 * server2, then the file), GET/HEAD /files/ and /files/{dir}/ (VERIFY, then the listing),
 * PUT/DELETE /files/{name} (VERIFY, then the committer), PUT/DELETE /users/{name}
 * (SETPASS/DELETE on server2), GET /healthz (PING on server2), GET /metrics.
 * conn calls it through s1_handler (struct s1_conn_handler) with one complete request; it
 * answers at once or starts an asynchronous request (server2, the committer) whose callback
 * answers and then calls s1_conn_resume. Runs on the conn's thread. handler.c routes; each
 * route is a module of its own (route_files, route_listing, route_users, route_admin), sharing
 * the request's state (request.h) and the credential checks (login.h).
 *
 * DESIGN: the handler knows its thread only as struct s1_handler_env (the conn's
 * home->handler_arg) and the process only as struct s1_service (service.h). The worker fills
 * both; no handler module includes worker.h.
 */
#ifndef S1_HANDLER_H
#define S1_HANDLER_H

#include "conn.h"
#include "service.h"

/* The handler, for a conn home (handler_arg: the thread's struct s1_handler_env). */
extern const struct s1_conn_handler s1_handler;

#endif /* S1_HANDLER_H */
