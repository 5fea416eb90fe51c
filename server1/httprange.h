/*
 * httprange.h - the Range request header (RFC 9110 §14) for a representation of size bytes:
 * decides between 206 with one byte range, 416, and ignoring the header (200, whole body).
 * Pure: no I/O, no allocation, no global mutable state; thread-safe.
 *
 * Rules (RFC 9110 §14.1.1, §14.1.2, §14.2):
 *  - ranges-specifier = range-unit "=" range-set. The unit is "bytes" in any case; another unit
 *    is ignored. No whitespace around "=" and none inside a range-spec.
 *  - range-set = 1#range-spec, as a list (§5.6.1): OWS around commas (and, leniently, before the
 *    first element), empty elements allowed and not counted, at least one range-spec.
 *  - range-spec: first-last, first- or -suffix; 1*DIGIT, no sign. A number above UINT64_MAX is
 *    a syntax error: it cannot be represented, so the header is ignored rather than answered
 *    with a 416 that might be wrong for some other element of the list.
 *  - Any syntax error anywhere (including first > last, "bytes=" and "bytes=,") ignores the
 *    whole header: §14.2 lets a server ignore an invalid ranges-specifier, and a 200 is always
 *    a correct answer.
 *  - More than HTTPRANGE_MAX_PARTS range-specs: ignored (a guard against many tiny ranges,
 *    §14.2 and the "overlapping ranges" attack of §17.15); counted before satisfiability.
 *  - first-last and first- are satisfiable if first < size; last >= size is clamped to size-1.
 *    -suffix is satisfiable if suffix > 0; it selects the last min(suffix, size) bytes. No satisfiable range-spec: HTTPRANGE_UNSATISFIABLE (416).
 *  - A zero-length representation: Range is always ignored (200 with Content-Length: 0), as
 *    §14.2 permits ("A server that supports range requests MAY ignore a Range header field when
 *    the selected representation has no content"). By §14.1.2 a first-pos range is then
 *    unsatisfiable but a non-zero suffix-range is satisfiable, and it selects no byte, which no
 *    206 can describe (§14.4 incl-range needs first-pos <= last-pos); the empty 200 is the one
 *    answer right for both, and clients that fetch in slices ("bytes=0-N") get the file rather
 *    than an error. Apache httpd answers so; a 416 there was reported as a bug against Go
 *    net/http (golang/go#54794), minio (#17708), rack (#2159) and werkzeug (#1937).
 *  - Several satisfiable ranges: we never send multipart/byteranges. They are sorted by start
 *    and merged when they overlap or touch; one result is HTTPRANGE_ONE, several are IGNORED
 *    (§14.2: a server MAY ignore Range).
 */
#ifndef HTTPRANGE_H
#define HTTPRANGE_H

#include <stddef.h>
#include <stdint.h>

#define HTTPRANGE_MAX_PARTS 16 /* more range-specs than this: the header is ignored */
/* Longest Content-Range value, "bytes a-b/size" with 20-digit numbers, plus the NUL. */
#define HTTPRANGE_CONTENT_RANGE_MAX (sizeof("bytes -/") + 3 * 20)

enum httprange_result {
    HTTPRANGE_IGNORE,        /* no range applies: 200 with the whole representation */
    HTTPRANGE_ONE,           /* 206 with the bytes [*off, *off + *count) */
    HTTPRANGE_UNSATISFIABLE, /* 416 with Content-Range "bytes *" "/size" */
};

/*
 * Parses the Range field value value[0..len) (surrounding whitespace already removed; need not
 * be NUL-terminated; never read past len) for a representation of size bytes. On HTTPRANGE_ONE
 * sets *off and *count, with off < size, count >= 1 and off + count <= size; otherwise leaves
 * them alone. §14.2 defines Range for GET only (a HEAD ignores it and gets 200), and §13.2.2
 * step 5 applies it only if If-Range, when present, holds (httpcond_if_range).
 */
enum httprange_result httprange_parse(const char *value, size_t len, uint64_t size, uint64_t *off,
                                      uint64_t *count);

/*
 * Formats the Content-Range value of a 206, "bytes <off>-<off+count-1>/<size>", into out with a
 * NUL. Returns its length, or 0 (out emptied if cap > 0) if it does not fit in cap
 * (HTTPRANGE_CONTENT_RANGE_MAX always does) or the range is not inside the representation
 * (count == 0 or off + count > size).
 */
size_t httprange_content_range(char *out, size_t cap, uint64_t off, uint64_t count,
                               uint64_t size);

/* Formats the Content-Range value of a 416, "bytes *" "/<size>", as the above does. */
size_t httprange_unsatisfied(char *out, size_t cap, uint64_t size);

#endif /* HTTPRANGE_H */
