/*
 * handler.h - the routes: POST /users (CREATE on server2), GET/HEAD /files/{name} (VERIFY on
 * server2, then the file), PUT/DELETE /files/{name} (VERIFY, then the committer), GET /healthz
 * (PING on server2), GET /metrics. Called by conn with one
 * complete request; answers at once or starts an asynchronous server2 request whose callback
 * answers and then calls s1_conn_resume. Runs on the conn's worker thread.
 */
#ifndef S1_HANDLER_H
#define S1_HANDLER_H

#include <stddef.h>

#include "conn.h"
#include "http_parser.h"
#include "metrics.h"

enum s1_dispatch {
    S1_DISPATCH_DONE,    /* the response is queued */
    S1_DISPATCH_PENDING, /* waiting for server2; the conn must not read the next request yet */
};

/* Which route a request is for (for metrics labels), from its target. */
enum metrics_route s1_handler_route(const char *buf, const struct http_request *req);

/*
 * Handles one request: buf holds its head (spans of req index into it), body its body. Nothing
 * in buf or body may be used after the call returns.
 */
enum s1_dispatch s1_handler_dispatch(struct s1_conn *c, const char *buf,
                                     const struct http_request *req, const char *body,
                                     size_t body_len);

/* The body of c's PUT is all received: it goes to the committer (c waits for the answer). */
void s1_handler_upload_received(struct s1_conn *c);

/* On the worker thread, for a job the committer finished: answers its conn, frees job. */
void s1_handler_commit_done(struct commit_job *job);

#endif /* S1_HANDLER_H */
