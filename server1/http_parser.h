/*
 * http_parser.h - a pure, incremental HTTP/1.1 request-head parser (no I/O, no allocation).
 * The caller keeps the bytes of the current request in one contiguous buffer that only grows at
 * the end, and calls http_parser_execute() with the whole buffer each time more bytes arrive; the
 * parser resumes where it stopped. Everything it finds is recorded as offsets into that buffer,
 * so the buffer may move (realloc) between calls. It does not read the body: on DONE, the body is
 * the next content_length bytes after head_len, or with chunked a chunked body, which
 * http_chunked_decode() decodes as it arrives. Strict: CRLF line ends only, no obs-fold, no
 * control characters, one Content-Length value; Transfer-Encoding only as exactly "chunked"
 * (another coding: 501), never with Content-Length (400: RFC 9112 6.3, request smuggling)
 * nor in HTTP/1.0 (400). Thread-safe (no global state).
 */
#ifndef HTTP_PARSER_H
#define HTTP_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEADERS 64 /* a request with more header lines gets 431 */

enum http_method {
    HTTP_METHOD_OTHER = 0, /* any other syntactically valid token */
    HTTP_METHOD_GET,
    HTTP_METHOD_HEAD,
    HTTP_METHOD_POST,
    HTTP_METHOD_PUT,
    HTTP_METHOD_DELETE,
};

/* A byte range [off, off + len) of the request buffer. */
struct http_span {
    uint32_t off;
    uint32_t len;
};

struct http_header {
    struct http_span name;
    struct http_span value; /* leading and trailing whitespace removed */
};

struct http_request {
    enum http_method method;
    struct http_span method_tok;
    struct http_span target;
    int version_minor;        /* HTTP/1.<version_minor>: 0 or 1 */
    bool keep_alive;          /* after the Connection rules for this version */
    bool has_content_length;
    bool chunked;             /* Transfer-Encoding: chunked (then has_content_length is false) */
    bool expect_continue;     /* Expect: 100-continue */
    uint64_t content_length;  /* saturates at UINT64_MAX for absurd values */
    int host;                 /* index into headers, or -1 */
    int authorization;        /* index into headers, or -1 */
    int content_type;         /* index into headers, or -1 */
    int user_agent;           /* index into headers (the first), or -1 */
    int referer;              /* index into headers (the first), or -1 */
    size_t head_len;          /* request line + headers incl. the final empty line */
    unsigned nheaders;
    struct http_header headers[HTTP_MAX_HEADERS];
};

enum http_parse_result {
    HTTP_PARSE_ERROR = -1, /* see parser.status and parser.error */
    HTTP_PARSE_MORE = 0,   /* the head is incomplete: call again with more bytes */
    HTTP_PARSE_DONE = 1,   /* parser.req is complete */
};

struct http_parser {
    size_t max_head_bytes; /* the head (incl. leading empty lines) may be at most this long */
    struct http_request req;
    int status;            /* after ERROR: 400, 431, 501 or 505 */
    const char *error;     /* after ERROR: a static, loggable reason */
    /* private */
    int _state;
    size_t _pos;   /* next byte to look at */
    size_t _mark;  /* start of the token being scanned */
    size_t _vend;  /* end of the header value without trailing whitespace */
    bool _conn_close;
    bool _conn_keep_alive;
    bool _has_te;
    unsigned _te_codings;  /* transfer codings named in Transfer-Encoding */
    bool _te_chunked;      /* ... of which the last was "chunked" */
};

/* Prepares p for a new connection; max_head_bytes >= 16. */
void http_parser_init(struct http_parser *p, size_t max_head_bytes);
/* Prepares p for the next request on the same connection (keeps the limit). */
void http_parser_reset(struct http_parser *p);
/*
 * Parses buf[0..len), the bytes of the current request received so far (the same prefix as in
 * the previous call, possibly longer). Bytes after the head are never looked at.
 */
enum http_parse_result http_parser_execute(struct http_parser *p, const char *buf, size_t len);

/*
 * A chunked request body (RFC 9112 7.1), decoded as its bytes arrive, in pieces of any size:
 * chunk-size in hex (at most 16 significant digits), chunk extensions (skipped), CRLF, data,
 * CRLF; the last chunk "0"; trailer fields (checked as field lines, then dropped); CRLF.
 * Pure (no I/O, no allocation); the data is returned as spans of the caller's bytes.
 */
#define HTTP_CHUNK_LINE_MAX 4096 /* bytes of a chunk-size line with its extensions, CRLF too */

enum http_chunked_result {
    HTTP_CHUNKED_ERROR = -1, /* see d->status (400, 413) and d->error; nothing more to decode */
    HTTP_CHUNKED_MORE = 0,   /* not finished: call again with the bytes after *used */
    HTTP_CHUNKED_DONE = 1,   /* the body ended at buf[*used - 1] (what follows is not its) */
};

struct http_chunked {
    uint64_t max_body;     /* decoded bytes allowed in all; more: 413 */
    size_t max_trailer;    /* bytes of the trailer section (after the last chunk's line) */
    uint64_t total;        /* the sizes of the chunks begun so far: all of them once DONE */
    int status;            /* after ERROR: 400 or 413 */
    const char *error;     /* after ERROR: a static, loggable reason */
    /* private */
    int _state;
    uint64_t _left;        /* the current chunk's size, then its data bytes still to come */
    size_t _line;          /* bytes of the current chunk-size line so far */
    size_t _trailer;       /* bytes of the trailer section so far */
};

/* Prepares d for a new body. */
void http_chunked_init(struct http_chunked *d, uint64_t max_body, size_t max_trailer);
/*
 * Decodes buf[0..len), the next bytes of the body (the bytes of earlier calls are not needed
 * again). *used: how many of them it took; *data: the body bytes among them (a span of buf,
 * len 0 if none). It stops after the first piece of data, so call it again while it returns
 * MORE with bytes left. A span of data is never longer than what the chunk sizes announced.
 */
enum http_chunked_result http_chunked_decode(struct http_chunked *d, const char *buf, size_t len,
                                             size_t *used, struct http_span *data);

/* True if the span equals the NUL-terminated lit, ignoring ASCII case. */
bool http_span_eq_ci(const char *buf, struct http_span s, const char *lit);
/* A pointer to the span's first byte. */
static inline const char *http_span_ptr(const char *buf, struct http_span s)
{
    return buf + s.off;
}

#endif /* HTTP_PARSER_H */
