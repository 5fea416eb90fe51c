/*
 * stats.h - what one worker thread counts for one request type: successes and their latency
 * histogram, errors by class, errors by kind (the HTTP status, or what failed underneath),
 * bytes. Lists are X-macros so that the struct, the merge and the report's columns come from
 * one place. DESIGN: each worker owns its struct lg_stats (no atomics, no locks); the run
 * merges them after pthread_join. The table of kinds is fixed-size: nothing is allocated per
 * request.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stddef.h>
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

/*
 * Error kinds that are not an HTTP status: X(enum suffix, name in reports, meaning). A failed
 * request is counted under exactly one kind: its status (100-599) when a response came back,
 * else one of these. Each class above is the sum of some kinds.
 */
#define LG_KINDS(X)                                                                                \
    X(REFUSED, "refused", "connect refused (nothing listens on the port)")                         \
    X(CONNECT, "connect", "could not connect otherwise (no route, reset, no local port...)")       \
    X(TLS, "tls_handshake", "the TLS handshake failed (verification, protocol, reset)")            \
    X(TIMEOUT, "timeout", "no complete response within --timeout")                                 \
    X(RESET, "reset", "connection reset by the server while sending or reading")                   \
    X(SHORT, "short", "connection closed before the response was complete")                        \
    X(INVALID, "invalid", "unparseable response, or bytes after it")                               \
    X(LENGTH, "length", "body length not --expect-length")                                         \
    X(BAD_STATUS, "status_999", "a status outside 100-599 (the parser takes up to 999)")

enum lg_kind {
#define LG_X(k, name, doc) LG_KIND_##k,
    LG_KINDS(LG_X)
#undef LG_X
        LG_KIND_COUNT
};

#define LG_STATUS_MIN 100 /* the statuses the table counts one by one: 100..599 */
#define LG_STATUS_MAX 599
#define LG_STATUS_SLOTS (LG_STATUS_MAX - LG_STATUS_MIN + 1)
/*
 * Longest text of a table, every entry used with a 20-digit count: ", 599 x N" is 28 bytes, a
 * kind at most 40 (names up to 15 characters); 4 more for a final "..." and the NUL.
 */
#define LG_ERRTAB_TEXT_LEN (LG_STATUS_SLOTS * 28 + LG_KIND_COUNT * 40 + 4)

/* Failed requests by kind: per status, then per transport kind. */
struct lg_errtab {
    uint64_t status[LG_STATUS_SLOTS]; /* [s - LG_STATUS_MIN]: responses with status s */
    uint64_t kind[LG_KIND_COUNT];     /* failures without a usable status */
};

/* Text styles of lg_errtab_format. */
enum lg_errtab_style {
    LG_ERRTAB_CONSOLE = 0, /* "404 x 5, 503 x 2, timeout x 1" */
    LG_ERRTAB_CSV = 1,     /* "404:5;503:2;timeout:1" (no comma: one CSV field) */
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
    LG_REQ_CUSTOM = 3, /* any request: --path, --requests or a URL argument (reqspec.h) */
    LG_REQ_TYPES = 4,
    LG_REQ_ALL = 4, /* index of the total in result arrays of LG_REQ_TYPES + 1 */
};

struct lg_stats {
#define LG_X(f, doc) uint64_t f;
    LG_COUNTERS(LG_X)
#undef LG_X
    uint64_t err[LG_ERR_COUNT];
    struct lg_errtab by_kind; /* the same errors by status or transport kind */
    struct lg_errtab ok_by_status; /* the successes by status (its kinds stay 0) */
    struct hist lat; /* response time of successful requests, ns */
};

void lg_stats_init(struct lg_stats *s);
void lg_stats_merge(struct lg_stats *dst, const struct lg_stats *src);
uint64_t lg_stats_errors(const struct lg_stats *s);
const char *lg_err_name(enum lg_err e);
const char *lg_kind_name(enum lg_kind k);

/*
 * Counts one failed request of class e: under status when e is a status class and status is
 * within 100-599 (else LG_KIND_BAD_STATUS), otherwise under the transport kind k. e must not
 * be LG_ERR_NONE.
 */
void lg_errtab_add(struct lg_errtab *t, enum lg_err e, int status, enum lg_kind k);
void lg_errtab_merge(struct lg_errtab *dst, const struct lg_errtab *src);
uint64_t lg_errtab_total(const struct lg_errtab *t);
/*
 * Writes the non-zero entries of t, statuses in ascending order then kinds in LG_KINDS order,
 * into out (cap bytes, LG_ERRTAB_TEXT_LEN always suffices; a shorter buffer cuts the text at an
 * entry and ends it with "..."). "" when t is empty. Returns the length written.
 */
size_t lg_errtab_format(const struct lg_errtab *t, enum lg_errtab_style style, char *out,
                        size_t cap);
/*
 * Adds n to the entry named name ("404", "timeout"): 0, or -1 when no entry has that name.
 * For reading a table back from run.json.
 */
int lg_errtab_add_named(struct lg_errtab *t, const char *name, uint64_t n);
/*
 * Every response by status, successes and errors (out: statuses only), e.g. "200 x 16, 404 x 4"
 * through lg_errtab_format.
 */
void lg_stats_statuses(const struct lg_stats *s, struct lg_errtab *out);
const char *lg_req_name(int type); /* "new", "get", "put", "custom", "all" */

#endif /* LG_STATS_H */
