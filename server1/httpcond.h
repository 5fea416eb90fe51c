/*
 * httpcond.h - conditional requests (RFC 9110 §13): entity-tag lists (If-Match, If-None-Match),
 * the precedence of preconditions (§13.2.2) as one function, If-Range (§13.1.5), and the strong
 * ETag the file server sends. Pure: no I/O, no allocation, no global mutable state; thread-safe.
 * Dates are parsed by the caller (HTTP-date, §5.6.7); this module only compares seconds.
 *
 * Rules and decisions:
 *  - entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / %x80-FF (§8.8.3);
 *    "W/" is case-sensitive. Strong comparison: both strong and the opaque-tags equal byte for
 *    byte; weak comparison: the opaque-tags equal, W/ or not (§8.8.3.2).
 *  - A list is "*" alone, or 1#entity-tag (§5.6.1: OWS around commas, empty elements allowed
 *    and not counted, at least one tag). Anything else, e.g. `"a", *`, an unquoted tag, `w/"a"`,
 *    an empty value, is malformed, and a malformed list matches nothing.
 *  - If-Match uses strong comparison (§13.1.1); a malformed If-Match is false: 412, the safe
 *    answer for a request whose precondition cannot be read.
 *  - If-None-Match uses weak comparison (§13.1.2). RFC 9110 says nothing about a malformed one;
 *    we take it as "no tag matched" for GET/HEAD (the full 200, never a wrong 304; it still
 *    counts as present, so If-Modified-Since stays ignored) and as false (412) for a
 *    state-changing method, which must not change state on a precondition it cannot read.
 *  - "*": If-Match true, If-None-Match false, exactly when the representation exists.
 *  - A field sent in several lines is one list (§5.3): the caller joins the lines with ", ", or
 *    passes a repeated If-Match/If-None-Match as malformed (value "," does), which the rules
 *    above turn into the safe answer.
 *  - If-Modified-Since / If-Unmodified-Since with an invalid date (or a list of dates) are
 *    ignored (§13.1.3, §13.1.4); so are they when the representation does not exist (it has no
 *    modification date). If-Modified-Since applies to GET and HEAD only.
 *  - Out of scope: §13.2.2's "412 unless it can be determined that the state-changing request
 *    has already succeeded" (a retried PUT whose change is already there); we always say 412.
 *  - §13.2.1: preconditions are evaluated only if the response without them would be 2xx or
 *    412. The caller skips httpcond_evaluate when it would send e.g. 404 for a GET, HEAD or
 *    DELETE of a missing file, and calls it with exists = false for a PUT that creates one.
 *  - Last-Modified names whole seconds, so two versions made within one second share it: as a
 *    validator it is weak unless the server can tell that the second it names held one version
 *    only (§8.8.2.2), and an If-Range date must be strong (§13.1.5), or a client resuming a
 *    download gets the rest of a newer version after the start of an older one. The server
 *    makes sure of it from both ends (httpcond_last_modified, httpcond_strong_date):
 *    a response carries Last-Modified only once the second it names was over when the version
 *    was looked up, and no change still being made is dated within that second: any later
 *    change then gets a later second, so every date sent names one version (for the client,
 *    §8.8.2.2 asks the same: a Date at least one second after the Last-Modified). An If-Range
 *    date holds only if it equals the Last-Modified this response would carry, and the
 *    version was in place before the end of its second (an operator's file's ctime: a file
 *    renamed into place, or given an old date by touch -d, tar, cp -p or rsync -t, may share
 *    its date with an older one that was served after that second); else the whole file.
 *    Apache keeps a date weak for 60 s after the change at comparison only, and nginx takes
 *    any equal date; neither stops a client that got the older date within its second.
 */
#ifndef HTTPCOND_H
#define HTTPCOND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest tag httpcond_etag_format writes, "\"<16 hex>-<16 hex>\"", plus the NUL. */
#define HTTPCOND_ETAG_MAX (sizeof("\"-\"") + 2 * 16)

enum httpcond_method {
    HTTPCOND_READ,  /* GET or HEAD: a false If-None-Match is 304 */
    HTTPCOND_WRITE, /* a state-changing method (PUT, DELETE, POST): a false one is 412 */
};

/* An If-Match or If-None-Match field of the request. */
struct httpcond_list {
    bool present;      /* the request has the field (even with an empty value) */
    const char *value; /* its value, surrounding whitespace removed; need not be NUL-terminated */
    size_t len;
};

/* An If-Modified-Since or If-Unmodified-Since field, parsed by the caller. */
struct httpcond_date {
    bool valid;   /* present and one valid HTTP-date; false if absent or invalid (ignored) */
    int64_t secs; /* the date, seconds since the epoch */
};

struct httpcond_request {
    enum httpcond_method method;
    struct httpcond_list if_match;
    struct httpcond_list if_none_match;
    struct httpcond_date if_modified_since;
    struct httpcond_date if_unmodified_since;
};

/* The selected representation, as it is now. */
struct httpcond_repr {
    bool exists;           /* false: the target has no representation (a PUT creating it) */
    const char *etag;      /* our ETag as sent, e.g. "\"5f3a-1c\"" (ignored if !exists) */
    size_t etag_len;
    int64_t last_modified; /* seconds since the epoch (ignored if !exists) */
};

enum httpcond_outcome {
    HTTPCOND_PROCEED,             /* perform the method (then If-Range decides about Range) */
    HTTPCOND_NOT_MODIFIED,        /* 304: only for HTTPCOND_READ */
    HTTPCOND_PRECONDITION_FAILED, /* 412 */
};

/*
 * True if the If-Match / If-None-Match value list[0..len) is "*" or a well-formed list with a
 * tag that matches etag[0..etag_len) (our tag as sent: quotes included, normally strong) under
 * the weak (weak_compare) or the strong comparison. "*" is true whatever etag is: the caller
 * checks that the representation exists (httpcond_evaluate does). A malformed list, or a
 * malformed etag, matches nothing. Never reads past len or etag_len.
 */
bool httpcond_etag_list_match(const char *list, size_t len, const char *etag, size_t etag_len,
                              bool weak_compare);

/*
 * Evaluates the preconditions of req against rep in the order of RFC 9110 §13.2.2:
 *  1. If-Match present: false (no strong match; "*" and no representation; malformed) -> 412.
 *  2. Else If-Unmodified-Since valid and the representation exists: modified after it -> 412.
 *  3. If-None-Match present: false (a weak match; "*" and a representation exists; malformed
 *     for a write) -> 304 for GET/HEAD, 412 otherwise.
 *  4. Else GET/HEAD, If-Modified-Since valid, the representation exists, and it was not
 *     modified after that date -> 304.
 *  5. Otherwise HTTPCOND_PROCEED; for a GET with Range, If-Range is next (httpcond_if_range).
 */
enum httpcond_outcome httpcond_evaluate(const struct httpcond_request *req,
                                        const struct httpcond_repr *rep);

/*
 * What makes a version's Last-Modified a validator, all times on the wall clock (the kernel's
 * file times and CLOCK_REALTIME_COARSE share one timebase; a clock set back is not covered).
 */
struct httpcond_stamp {
    int64_t mtime_ns;   /* the version's modification time, ns since the epoch; < 0: unknown */
    int64_t read_s;     /* when it was looked up (its bytes read from then on), seconds */
    int64_t pending_ns; /* the earliest date of a change still being made that could become
                           a newer version of it (an upload being committed); INT64_MAX: none */
    int64_t since_ns;   /* when it became the version served under its name, at the latest:
                           an operator's file's ctime; an upload's own date */
};

/*
 * The Last-Modified a response sends for s, in seconds since the epoch, or -1 for none: the
 * second of mtime_ns once that second was over at read_s and pending_ns lies after it (no
 * change being made can get that second). Pure.
 */
int64_t httpcond_last_modified(const struct httpcond_stamp *s);

/*
 * The date an If-Range must equal (httpcond_if_range's last_modified): the Last-Modified sent
 * (httpcond_last_modified) if the version was in place before the end of its second (since_ns),
 * else -1: no date validates it. Pure.
 */
int64_t httpcond_strong_date(const struct httpcond_stamp *s);

/*
 * True if the If-Range value value[0..len) is an entity-tag rather than an HTTP-date: it has a
 * DQUOTE among its first three characters (§13.1.5), as in "x" and W/"x". If not, the caller
 * parses it as an HTTP-date for httpcond_if_range.
 */
bool httpcond_if_range_is_etag(const char *value, size_t len);

/*
 * Evaluates If-Range (§13.1.5; only for a GET that has a Range, after httpcond_evaluate said
 * PROCEED). True: the Range applies; false: ignore the Range and send 200 with everything.
 * An entity-tag value (httpcond_if_range_is_etag) must be exactly one strong tag equal to
 * etag[0..etag_len) under the strong comparison: a weak or malformed tag is false. Otherwise
 * the value is a date, which the caller parsed: true only if date_valid and date equals
 * last_modified exactly, which is the strong date of the version (httpcond_strong_date: the
 * Last-Modified this response carries if it is a strong validator, §8.8.2.2), or -1 when
 * there is none: then no date holds. Never reads past len or etag_len.
 */
bool httpcond_if_range(const char *value, size_t len, const char *etag, size_t etag_len,
                       bool date_valid, int64_t date, int64_t last_modified);

/*
 * Formats the strong tag "\"<hex a>-<hex b>\"" (lowercase, no leading zeros) into out with a
 * NUL, e.g. a = an upload record id, or a and b mixed from inode, size and mtime. Returns its
 * length, or 0 (out emptied if cap > 0) if it does not fit; HTTPCOND_ETAG_MAX always does.
 */
size_t httpcond_etag_format(char *out, size_t cap, uint64_t a, uint64_t b);

#endif /* HTTPCOND_H */
