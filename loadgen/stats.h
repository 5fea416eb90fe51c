/*
 * stats.h - what one worker thread counts for one request type: successes and their latency
 * histogram, errors by class, bytes. Lists are X-macros so that the struct, the merge and the
 * report's columns come from one place. DESIGN: each worker owns its struct lg_stats (no
 * atomics, no locks); the run merges them after pthread_join.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stdint.h>

#include "hist.h"

/* Error classes: X(enum suffix, CSV/JSON name, meaning). Never counted as throughput. */
#define LG_ERRORS(X)                                                                               \
    X(CONNECT, "connect", "could not connect (refused, reset during connect, no route)")           \
    X(TIMEOUT, "timeout", "no complete response within --timeout")                                 \
    X(STATUS_4XX, "status_4xx", "a 4xx status")                                                    \
    X(STATUS_5XX, "status_5xx", "a 5xx status")                                                    \
    X(STATUS_OTHER, "status_other", "any other status than the expected one (e.g. 200 for new)")   \
    X(INVALID, "invalid", "unparseable response, or body length not --expect-length")              \
    X(SHORT, "short", "connection closed or reset before the response was complete")

enum lg_err {
    LG_ERR_NONE = -1,
#define LG_X(e, name, doc) LG_ERR_##e,
    LG_ERRORS(LG_X)
#undef LG_X
        LG_ERR_COUNT
};

/* Plain counters: X(field, meaning). */
#define LG_COUNTERS(X)                                                                             \
    X(ok, "requests with the expected status (and length): the throughput")                        \
    X(body_bytes, "body bytes of successful responses")                                            \
    X(connects, "TCP connections opened")

/* Request types; LG_REQ_ALL is the sum of the others in results. */
enum lg_req {
    LG_REQ_NEW = 0, /* POST /users with a fresh username */
    LG_REQ_GET = 1, /* GET /files/NAME */
    LG_REQ_PUT = 2, /* PUT /files/NAME of --size bytes, overwriting one of a user's names */
    LG_REQ_TYPES = 3,
    LG_REQ_ALL = 3, /* index of the total in result arrays of LG_REQ_TYPES + 1 */
};

struct lg_stats {
#define LG_X(f, doc) uint64_t f;
    LG_COUNTERS(LG_X)
#undef LG_X
    uint64_t err[LG_ERR_COUNT];
    struct hist lat; /* response time of successful requests, ns */
};

void lg_stats_init(struct lg_stats *s);
void lg_stats_merge(struct lg_stats *dst, const struct lg_stats *src);
uint64_t lg_stats_errors(const struct lg_stats *s);
const char *lg_err_name(enum lg_err e);
const char *lg_req_name(int type); /* "new", "get", "all" */

#endif /* LG_STATS_H */
