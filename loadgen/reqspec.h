/*
 * reqspec.h - the requests of any HTTP/1.1 server (the "custom" request type): their methods,
 * paths and bodies as --method, --path, a URL, --body, --body-file and the --requests file give
 * them, and the header lines of -H, each checked and bounded. Pure parsing, no sockets; the
 * request bytes are built from a struct lg_reqlist by workload.c.
 *
 * The --requests file: one request per line, cycled in order or drawn at random:
 *   PATH                 --method's method (GET by default)
 *   METHOD PATH          e.g. "HEAD /index.html"
 *   METHOD PATH @FILE    FILE's bytes are the body (a path relative to the requests file's
 *                        directory, or absolute); Content-Length is set from its size
 * Fields are separated by blanks (spaces or tabs); blank lines and lines whose first non-blank
 * is '#' are skipped; a line may end with "\r\n". PATH starts with '/' and is visible ASCII
 * (sent as written: percent-encode what needs it); METHOD is an HTTP token.
 *
 * DESIGN: a struct lg_reqlist is built by lg_config_validate before any thread starts and is
 * immutable afterwards; it owns its paths and bodies.
 */
#ifndef LG_REQSPEC_H
#define LG_REQSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_REQSPEC_ERR_LEN 512
#define LG_METHOD_MAX 32              /* bytes of a method */
#define LG_REQ_LINE_MAX 8192          /* bytes of a --requests line, a path, a -H header */
#define LG_HEADERS_MAX 64             /* -H headers */
#define LG_REQUESTS_MAX 10000         /* requests in a --requests file */
#define LG_BODY_MAX (64ull << 20)     /* bytes of all the bodies together */

enum lg_req_order {
    LG_ORDER_SEQ = 0,    /* user u starts at request u mod n, then goes on in order */
    LG_ORDER_RANDOM = 1, /* each request drawn uniformly (the thread's RNG, --seed) */
};

struct lg_reqspec {
    char method[LG_METHOD_MAX + 1];
    char *path;       /* heap, owned by the list */
    const char *body; /* into the list's bodies; NULL: no body */
    size_t body_len;
};

struct lg_reqlist {
    struct lg_reqspec *reqs; /* heap */
    unsigned n;
    char **bodies; /* heap, each owned */
    unsigned nbodies;
    uint64_t body_total; /* bytes of all bodies, at most LG_BODY_MAX */
};

/* An HTTP token of 1..LG_METHOD_MAX bytes (RFC 9110 section 5.6.2). */
bool lg_reqspec_method_ok(const char *m, size_t len);
/* '/' then visible ASCII (0x21-0x7e), 1..LG_REQ_LINE_MAX bytes. */
bool lg_reqspec_path_ok(const char *p, size_t len);
/*
 * A -H value: "Name: value", Name a token, value without control characters but tab, at most
 * LG_REQ_LINE_MAX bytes in all; and not Content-Length or Transfer-Encoding, which loadgen
 * sets from the body. 0, or -1 with a reason in err.
 */
int lg_reqspec_header_ok(const char *h, char *err);
/* Whether header line h ("Name: value") has the name name (case-insensitive). */
bool lg_reqspec_header_is(const char *h, const char *name);

/* Adds one request; body (len bytes, may be NULL) is copied. 0, or -1 with err (limits). */
int lg_reqlist_add(struct lg_reqlist *l, const char *method, const char *path, const char *body,
                   size_t body_len, char *err);
/*
 * Reads a body file of at most what is left of LG_BODY_MAX into the list and adds the request.
 * 0, or -1 with err.
 */
int lg_reqlist_add_file(struct lg_reqlist *l, const char *method, const char *path,
                        const char *file, char *err);
/*
 * Parses the text of a --requests file (len bytes; name and dir, the directory @FILE names are
 * relative to, for errors and bodies) into l. Every error names "name:LINE". 0, or -1.
 */
int lg_reqlist_parse(struct lg_reqlist *l, const char *text, size_t len, const char *name,
                     const char *dir, const char *default_method, char *err);
/* Reads and parses the --requests file path. 0, or -1 with err naming the file (and line). */
int lg_reqlist_load(struct lg_reqlist *l, const char *path, const char *default_method,
                    char *err);
void lg_reqlist_release(struct lg_reqlist *l);

#endif /* LG_REQSPEC_H */
