/*
 * workload.h - what the users send: request bytes preformatted once per connection (GET with
 * the user's credentials, POST /users templates whose username digits are patched in place per
 * request, PUT heads whose name digit is patched the same way and whose body, --size random
 * bytes, is made once and shared by every connection, so no request costs a malloc or a printf),
 * the custom requests of --path, --requests or a URL (reqspec.h; built once, shared by every
 * connection: they carry no per-user part), the weighted choice of the next request type, and,
 * with --names, each request's name written into the connection's copy of the request. Usernames are unique per
 * run: "lg" + run id + serial digits. struct lg_workload is built before the workers start and
 * is immutable afterwards.
 */
#ifndef LG_WORKLOAD_H
#define LG_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pick.h"
#include "rng.h"

#define LG_RUN_ID_LEN 8    /* hex digits */
#define LG_SLOT_DIGITS 10  /* the patched counter of a username */
#define LG_SERIAL_DIGITS 9 /* connection serial / prepared-account index */

struct lg_workload {
    const struct lg_config *cfg;
    char run_id[LG_RUN_ID_LEN + 1];
    unsigned weight_total;
    unsigned weight_upto[LG_REQ_TYPES]; /* cumulative: a draw d picks the first t with d < it */
    char *put_body;                     /* heap, owned: --size random bytes; NULL without put */
    struct lg_reqbuf *custom;           /* heap, owned: one per cfg->reqs request; NULL: none */
    unsigned ncustom;
    struct lg_pick pick; /* which of cfg->names a request gets (kind NONE: no --names) */
};

/*
 * One request's bytes; when slot_len > 0, the decimal digits at slot_off are patchable. body,
 * when not NULL, is sent after buf (not owned: the workload's shared PUT body).
 */
struct lg_reqbuf {
    char *buf; /* heap, owned; NULL when unused */
    size_t len;
    size_t slot_off;
    size_t slot_len;
    unsigned slot_mod; /* > 0: the slot takes value % slot_mod */
    const char *body;  /* not owned; NULL: no separate body */
    size_t body_len;   /* bytes of body */
    bool head;         /* a HEAD request: its response has no body */
    bool has_name;     /* a name of --names goes at name_off (buf holds the rest) */
    size_t name_off;
};

/* A connection's copy of a request with a name in it (lg_workload_fill_name). */
struct lg_namebuf {
    char *buf; /* heap, owned */
    size_t len;
    size_t cap;
};

/*
 * Builds w; with put in the mix it allocates the body, with custom requests their bytes (freed
 * by lg_workload_release).
 */
void lg_workload_init(struct lg_workload *w, const struct lg_config *cfg, const char *run_id);
void lg_workload_release(struct lg_workload *w);
/* Draws the next request type from the weights. */
int lg_workload_pick(const struct lg_workload *w, uint64_t *rng);

/*
 * Builds GET /files/NAME for user (NAME: the (user mod count)th of --file's names, or with
 * --names the place of the name drawn for each request); with cred
 * >= 0 it carries the credentials of prepared account cred, with cred == -1 those of
 * --username, with cred == -2 none.
 */
void lg_workload_build_get(const struct lg_workload *w, long cred, unsigned user,
                           struct lg_reqbuf *out);
/* The (user mod count)th name of a comma-separated list into out (cap bytes, truncated). */
void lg_workload_file_of(const char *list, unsigned user, char *out, size_t cap);
/* Builds POST /users for "lg<run><'n'><serial>c<counter>"; the counter is the slot. */
void lg_workload_build_new(const struct lg_workload *w, uint64_t serial, struct lg_reqbuf *out);
/* Builds POST /users for prepared account names "lg<run>p<index>"; the index is the slot. */
void lg_workload_build_prepare(const struct lg_workload *w, struct lg_reqbuf *out);
/*
 * Builds PUT /files/lg-<run>-<user>-<k> with the credentials of cred (as for get, but -2 is not
 * allowed) and the shared body; k (one digit, slot_mod LG_PUT_NAMES) is the slot.
 */
void lg_workload_build_put(const struct lg_workload *w, long cred, unsigned user,
                           struct lg_reqbuf *out);
/*
 * Builds custom request r: "METHOD <--url prefix>PATH HTTP/1.1" (a "{name}" in PATH is the
 * place of the name drawn for each request, when there are --names), Host (unless a -H gives one),
 * Basic credentials of --username (if given), the -H lines in order, Content-Length when there
 * is a body (or the method is POST, PUT or PATCH: then 0), and r's body as the separate body.
 */
void lg_workload_build_custom(const struct lg_workload *w, const struct lg_reqspec *r,
                              struct lg_reqbuf *out);
/* The index of the next custom request of a connection: seq advances *next, random draws. */
unsigned lg_workload_next_custom(const struct lg_workload *w, unsigned *next, uint64_t *rng);
/*
 * With --names: whether request r has a name, and then draws one (cfg->pick, from *rng) and
 * writes r with it into nb (grown on first use, then reused).
 */
bool lg_workload_fill_name(const struct lg_workload *w, const struct lg_reqbuf *r,
                           struct lg_namebuf *nb, uint64_t *rng);
void lg_namebuf_release(struct lg_namebuf *nb);
/* Writes value (value % slot_mod when slot_mod > 0) into the slot (zero-padded, the least
 * significant digits if it is too long). */
void lg_reqbuf_set_slot(struct lg_reqbuf *r, uint64_t value);
void lg_reqbuf_release(struct lg_reqbuf *r);

/* The name of prepared account index. */
void lg_workload_prepared_name(const struct lg_workload *w, uint64_t index, char *out, size_t cap);

/* Helpers, exposed for tests. out needs 4 * ceil(len / 3) + 1 bytes. */
size_t lg_base64(const void *in, size_t len, char *out);
/* Percent-encodes everything but [A-Za-z0-9-._~]; out needs 3 * len + 1 bytes. */
size_t lg_urlencode(const char *in, size_t len, char *out);

#endif /* LG_WORKLOAD_H */
