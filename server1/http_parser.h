/*
 * http_parser.h - a pure, incremental HTTP/1.1 request-head parser (no I/O, no allocation).
 * The caller keeps the bytes of the current request in one contiguous buffer that only grows at
 * the end, and calls http_parser_execute() with the whole buffer each time more bytes arrive; the
 * parser resumes where it stopped. Everything it finds is recorded as offsets into that buffer,
 * so the buffer may move (realloc) between calls. It does not read the body: on DONE, the body is
 * the next content_length bytes after head_len. Strict: CRLF line ends only, no obs-fold, no
 * control characters, one Content-Length value, Transfer-Encoding refused (501).
 * Thread-safe (no global state).
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
    bool expect_continue;     /* Expect: 100-continue */
    uint64_t content_length;  /* saturates at UINT64_MAX for absurd values */
    int host;                 /* index into headers, or -1 */
    int authorization;        /* index into headers, or -1 */
    int content_type;         /* index into headers, or -1 */
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

/* True if the span equals the NUL-terminated lit, ignoring ASCII case. */
bool http_span_eq_ci(const char *buf, struct http_span s, const char *lit);
/* A pointer to the span's first byte. */
static inline const char *http_span_ptr(const char *buf, struct http_span s)
{
    return buf + s.off;
}

#endif /* HTTP_PARSER_H */
