/*
 * http.h - minimal incremental HTTP/1.x response parser for the load generator: status line,
 * headers (only Content-Length, Connection and Transfer-Encoding matter), then a body that is
 * counted, never copied or stored: Content-Length bytes, chunks (Transfer-Encoding: chunked,
 * RFC 9112 section 7.1: the chunks' data is counted, their size lines and the trailer are
 * parsed and dropped), or everything until the server closes. Bytes may arrive split anywhere.
 * Pure functions, no allocation; one struct lg_http per connection, owned by the thread that
 * owns the connection.
 */
#ifndef LG_HTTP_H
#define LG_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_HTTP_MAX_HEAD 16384 /* status line + headers; more is an invalid response */
#define LG_HTTP_MAX_CHUNK_LINE 4096 /* a chunk-size line with its extensions, at most */
#define LG_HTTP_MAX_TRAILER 16384   /* the trailer after the last chunk, at most */

enum lg_http_state {
    LG_HTTP_HEAD = 0,  /* reading status line and headers */
    LG_HTTP_BODY,      /* counting body_left more bytes */
    LG_HTTP_UNTIL_EOF, /* no Content-Length: the body runs until the server closes */
    LG_HTTP_CHUNK_SIZE,  /* chunked: reading a chunk-size line */
    LG_HTTP_CHUNK_DATA,  /* chunked: counting body_left more bytes of the chunk */
    LG_HTTP_CHUNK_END,   /* chunked: the CRLF after a chunk's data */
    LG_HTTP_TRAILER,     /* chunked: trailer fields after the last chunk, until an empty line */
    LG_HTTP_COMPLETE,  /* one whole response seen */
    LG_HTTP_FAILED,    /* invalid; the connection must be closed */
};

enum lg_http_result {
    LG_HTTP_ERR = -1, /* invalid response: see why */
    LG_HTTP_MORE = 0, /* need more bytes */
    LG_HTTP_DONE = 1, /* the response is complete */
};

struct lg_http {
    enum lg_http_state state;
    int status;      /* 100..999 once the status line is parsed */
    bool http10;     /* HTTP/1.0 response: no keep-alive unless asked */
    bool keep_alive; /* false after "Connection: close" (or 1.0 without keep-alive) */
    bool has_length;
    bool chunked;            /* Transfer-Encoding ends with chunked: it delimits the body */
    bool head_request;       /* the request was HEAD: no body whatever the headers say */
    uint64_t content_length; /* valid if has_length */
    uint64_t body_left;      /* in LG_HTTP_BODY and LG_HTTP_CHUNK_DATA */
    uint64_t body_bytes;     /* body bytes seen so far */
    size_t head_bytes;       /* bytes of status line + headers consumed */
    size_t trailer_bytes;    /* bytes of the chunked trailer consumed */
    const char *why;         /* static reason after LG_HTTP_ERR */
};

/* Prepares p for the next response. */
void lg_http_reset(struct lg_http *p, bool head_request);

/*
 * Feeds buf[0..len). Only whole header lines are consumed: *used tells how many bytes were
 * taken, and the caller keeps the rest (a partial line) in front of the next bytes it reads.
 * While in the body, every byte up to the end of the body is taken (chunk-size lines and the
 * trailer, like header lines, only whole). Bytes after a complete response are left unused.
 * When the head grows beyond LG_HTTP_MAX_HEAD, a chunk-size line beyond
 * LG_HTTP_MAX_CHUNK_LINE or the trailer beyond LG_HTTP_MAX_TRAILER, it is an error.
 */
enum lg_http_result lg_http_parse(struct lg_http *p, const char *buf, size_t len, size_t *used);

/*
 * Counts n body bytes that the caller discarded itself (e.g. recv with MSG_TRUNC); n must not
 * exceed lg_http_body_wanted(). Returns LG_HTTP_DONE when the body is complete.
 */
enum lg_http_result lg_http_skip(struct lg_http *p, uint64_t n);
/*
 * How many more body bytes may be read without reading past the response (UINT64_MAX: EOF);
 * in a chunked body, the rest of the current chunk's data (0 between chunks: the next bytes are
 * a line for lg_http_parse).
 */
uint64_t lg_http_body_wanted(const struct lg_http *p);

/* The peer closed the connection: completes an until-EOF body, otherwise an error. */
enum lg_http_result lg_http_eof(struct lg_http *p);

#endif /* LG_HTTP_H */
