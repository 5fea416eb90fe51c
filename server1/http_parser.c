/*
 * http_parser.c - see http_parser.h. A byte-at-a-time state machine over the request head; every
 * state can stop at any byte and resume on the next call, which is what makes it incremental.
 * Header semantics (Content-Length, Connection, Host, ...) are applied as each line completes.
 * A chunked body has a state machine of its own in the same style (as nginx's
 * ngx_http_parse_chunked), that hands out its data in place instead of copying it.
 */
#include "http_parser.h"

#include <string.h>

#include "compat.h"

enum {
    S_START,      /* before the request line; empty lines are skipped */
    S_START_LF,   /* CR seen before the request line */
    S_METHOD,
    S_TARGET,
    S_VERSION,
    S_RL_LF,      /* CR seen after the version */
    S_LINE_START, /* start of a header line, or of the final empty line */
    S_NAME,
    S_VALUE_WS,   /* whitespace between ':' and the value */
    S_VALUE,
    S_HDR_LF,     /* CR seen at the end of a header line */
    S_END_LF,     /* CR of the final empty line seen */
    S_DONE,
};

/* tchar from RFC 9110 5.6.2 */
static const uint8_t tchar_table[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
};

static inline bool is_tchar(unsigned char c)
{
    return tchar_table[c] != 0;
}

/* field-vchar or obs-text: visible ASCII and bytes >= 0x80 (RFC 9110 5.5) */
static inline bool is_value_char(unsigned char c)
{
    return (c > 0x20 && c < 0x7f) || c >= 0x80;
}

static inline unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static bool mem_eq_ci(const char *a, size_t alen, const char *lit)
{
    size_t n = strlen(lit);
    if (alen != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (lower((unsigned char)a[i]) != (unsigned char)lit[i])
            return false;
    }
    return true;
}

bool http_span_eq_ci(const char *buf, struct http_span s, const char *lit)
{
    size_t n = strlen(lit);
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (lower((unsigned char)buf[s.off + i]) != lower((unsigned char)lit[i]))
            return false;
    }
    return true;
}

void http_parser_reset(struct http_parser *p)
{
    p->req.method = HTTP_METHOD_OTHER;
    p->req.method_tok = (struct http_span){0, 0};
    p->req.target = (struct http_span){0, 0};
    p->req.version_minor = 1;
    p->req.keep_alive = false;
    p->req.has_content_length = false;
    p->req.chunked = false;
    p->req.expect_continue = false;
    p->req.content_length = 0;
    p->req.host = -1;
    p->req.authorization = -1;
    p->req.content_type = -1;
    p->req.user_agent = -1;
    p->req.referer = -1;
    p->req.head_len = 0;
    p->req.nheaders = 0;
    p->status = 0;
    p->error = NULL;
    p->_state = S_START;
    p->_pos = 0;
    p->_mark = 0;
    p->_vend = 0;
    p->_conn_close = false;
    p->_conn_keep_alive = false;
    p->_has_te = false;
    p->_te_codings = 0;
    p->_te_chunked = false;
}

void http_parser_init(struct http_parser *p, size_t max_head_bytes)
{
    p->max_head_bytes = max_head_bytes < 16 ? 16 : max_head_bytes;
    http_parser_reset(p);
}

static enum http_parse_result fail(struct http_parser *p, int status, const char *why)
{
    p->status = status;
    p->error = why;
    p->_state = S_DONE;
    return HTTP_PARSE_ERROR;
}

static enum http_method method_of(const char *m, size_t len)
{
    if (len == 3 && memcmp(m, "GET", 3) == 0)
        return HTTP_METHOD_GET;
    if (len == 4 && memcmp(m, "HEAD", 4) == 0)
        return HTTP_METHOD_HEAD;
    if (len == 4 && memcmp(m, "POST", 4) == 0)
        return HTTP_METHOD_POST;
    if (len == 3 && memcmp(m, "PUT", 3) == 0)
        return HTTP_METHOD_PUT;
    if (len == 6 && memcmp(m, "DELETE", 6) == 0)
        return HTTP_METHOD_DELETE;
    return HTTP_METHOD_OTHER;
}

/* "HTTP/" DIGIT "." DIGIT; 0 = ok, else the status to answer. */
static int parse_version(const char *v, size_t len, int *minor)
{
    if (len != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9')
        return 400;
    if (v[5] != '1' || v[7] > '1')
        return 505;
    *minor = v[7] - '0';
    return 0;
}

/* Content-Length: 1*DIGIT; absurdly large values saturate (the caller answers 413). */
static int parse_content_length(const char *v, size_t len, uint64_t *out)
{
    uint64_t n = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        if (n > (UINT64_MAX - 9) / 10)
            n = UINT64_MAX;
        else
            n = n * 10 + (uint64_t)(v[i] - '0');
    }
    *out = n;
    return 0;
}

/* Connection: a comma-separated list of tokens; only "close" and "keep-alive" matter. */
static void parse_connection(struct http_parser *p, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t start;
        size_t end;
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        start = i;
        while (i < len && v[i] != ',')
            i++;
        end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        if (mem_eq_ci(v + start, end - start, "close"))
            p->_conn_close = true;
        else if (mem_eq_ci(v + start, end - start, "keep-alive"))
            p->_conn_keep_alive = true;
    }
}

/*
 * Transfer-Encoding: a comma-separated list of codings (with parameters), over any number of
 * lines; counts them and remembers whether the last one is exactly "chunked".
 */
static void parse_transfer_encoding(struct http_parser *p, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t start;
        size_t end;
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        if (i == len)
            break;
        start = i;
        while (i < len && v[i] != ',')
            i++;
        end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        p->_te_codings++;
        p->_te_chunked = mem_eq_ci(v + start, end - start, "chunked");
    }
}

/* Applies the meaning of the header line just completed; 0 or an error status. */
static enum http_parse_result header_done(struct http_parser *p, const char *buf)
{
    struct http_request *r = &p->req;
    struct http_header *h = &r->headers[r->nheaders - 1];
    const char *name = buf + h->name.off;
    const char *val = buf + h->value.off;
    size_t nlen = h->name.len;
    int idx = (int)r->nheaders - 1;

    switch (nlen) {
    case 4:
        if (mem_eq_ci(name, nlen, "host")) {
            if (r->host >= 0)
                return fail(p, 400, "more than one Host header");
            r->host = idx;
        }
        break;
    case 6:
        if (mem_eq_ci(name, nlen, "expect") && mem_eq_ci(val, h->value.len, "100-continue"))
            r->expect_continue = true;
        break;
    case 7:
        if (r->referer < 0 && mem_eq_ci(name, nlen, "referer"))
            r->referer = idx;
        break;
    case 10:
        if (mem_eq_ci(name, nlen, "connection"))
            parse_connection(p, val, h->value.len);
        else if (r->user_agent < 0 && mem_eq_ci(name, nlen, "user-agent"))
            r->user_agent = idx;
        break;
    case 12:
        if (mem_eq_ci(name, nlen, "content-type")) {
            if (r->content_type >= 0)
                return fail(p, 400, "more than one Content-Type header");
            r->content_type = idx;
        }
        break;
    case 13:
        if (mem_eq_ci(name, nlen, "authorization")) {
            if (r->authorization >= 0)
                return fail(p, 400, "more than one Authorization header");
            r->authorization = idx;
        }
        break;
    case 14:
        if (mem_eq_ci(name, nlen, "content-length")) {
            uint64_t n;
            if (parse_content_length(val, h->value.len, &n) < 0)
                return fail(p, 400, "Content-Length is not a number");
            if (r->has_content_length && r->content_length != n)
                return fail(p, 400, "conflicting Content-Length headers");
            r->has_content_length = true;
            r->content_length = n;
        }
        break;
    case 17:
        if (mem_eq_ci(name, nlen, "transfer-encoding")) {
            p->_has_te = true;
            parse_transfer_encoding(p, val, h->value.len);
        }
        break;
    default:
        break;
    }
    return HTTP_PARSE_MORE;
}

static enum http_parse_result head_done(struct http_parser *p)
{
    struct http_request *r = &p->req;

    if (p->_has_te && r->has_content_length)
        return fail(p, 400, "both Transfer-Encoding and Content-Length");
    if (p->_has_te && r->version_minor == 0)
        return fail(p, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (p->_has_te && (p->_te_codings != 1 || !p->_te_chunked))
        return fail(p, 501, "a transfer coding other than chunked");
    r->chunked = p->_has_te;
    if (r->version_minor == 1 && r->host < 0)
        return fail(p, 400, "HTTP/1.1 request without Host");
    if (r->version_minor == 1)
        r->keep_alive = !p->_conn_close;
    else
        r->keep_alive = p->_conn_keep_alive && !p->_conn_close;
    r->head_len = p->_pos;
    p->_state = S_DONE;
    return HTTP_PARSE_DONE;
}

enum http_parse_result http_parser_execute(struct http_parser *p, const char *buf, size_t len)
{
    struct http_request *r = &p->req;
    size_t pos = p->_pos;
    int st = p->_state;

    if (st == S_DONE)
        return p->status ? HTTP_PARSE_ERROR : HTTP_PARSE_DONE;

    while (pos < len) {
        unsigned char c;

        if (pos >= p->max_head_bytes)
            return fail(p, 431, "request head too large");
        c = (unsigned char)buf[pos];
        switch (st) {
        case S_START:
            if (c == '\r') {
                st = S_START_LF;
            } else if (is_tchar(c)) {
                p->_mark = pos;
                st = S_METHOD;
            } else {
                return fail(p, 400, "bad request line");
            }
            break;
        case S_START_LF:
            if (c != '\n')
                return fail(p, 400, "bare CR");
            st = S_START;
            break;
        case S_METHOD:
            if (c == ' ') {
                r->method_tok = (struct http_span){(uint32_t)p->_mark, (uint32_t)(pos - p->_mark)};
                r->method = method_of(buf + p->_mark, pos - p->_mark);
                p->_mark = pos + 1;
                st = S_TARGET;
            } else if (!is_tchar(c)) {
                return fail(p, 400, "bad method");
            }
            break;
        case S_TARGET:
            if (c == ' ') {
                if (pos == p->_mark)
                    return fail(p, 400, "empty request target");
                r->target = (struct http_span){(uint32_t)p->_mark, (uint32_t)(pos - p->_mark)};
                p->_mark = pos + 1;
                st = S_VERSION;
            } else if (c <= 0x20 || c >= 0x7f) {
                return fail(p, 400, "bad character in request target");
            }
            break;
        case S_VERSION:
            if (c == '\r') {
                int minor = 1;
                int rc = parse_version(buf + p->_mark, pos - p->_mark, &minor);
                if (rc == 505)
                    return fail(p, 505, "HTTP version not supported");
                if (rc != 0)
                    return fail(p, 400, "bad HTTP version");
                r->version_minor = minor;
                st = S_RL_LF;
            } else if (c <= 0x20 || c >= 0x7f || pos - p->_mark >= 8) {
                return fail(p, 400, "bad HTTP version");
            }
            break;
        case S_RL_LF:
            if (c != '\n')
                return fail(p, 400, "bare CR");
            st = S_LINE_START;
            break;
        case S_LINE_START:
            if (c == '\r') {
                st = S_END_LF;
            } else if (is_tchar(c)) {
                if (r->nheaders >= HTTP_MAX_HEADERS)
                    return fail(p, 431, "too many headers");
                p->_mark = pos;
                st = S_NAME;
            } else if (c == ' ' || c == '\t') {
                return fail(p, 400, "obsolete line folding");
            } else if (c == ':') {
                return fail(p, 400, "empty header name");
            } else {
                return fail(p, 400, "bad character in header name");
            }
            break;
        case S_NAME:
            if (c == ':') {
                struct http_header *h = &r->headers[r->nheaders++];
                h->name = (struct http_span){(uint32_t)p->_mark, (uint32_t)(pos - p->_mark)};
                h->value = (struct http_span){(uint32_t)(pos + 1), 0};
                st = S_VALUE_WS;
            } else if (c == ' ' || c == '\t') {
                return fail(p, 400, "whitespace before colon in header");
            } else if (c == '\r' || c == '\n') {
                return fail(p, 400, "header line without colon");
            } else if (!is_tchar(c)) {
                return fail(p, 400, "bad character in header name");
            }
            break;
        case S_VALUE_WS:
            if (c == ' ' || c == '\t') {
                break;
            } else if (c == '\r') {
                p->_mark = pos;
                p->_vend = pos;
                st = S_HDR_LF;
            } else if (is_value_char(c)) {
                p->_mark = pos;
                p->_vend = pos + 1;
                st = S_VALUE;
            } else {
                return fail(p, 400, "bad character in header value");
            }
            break;
        case S_VALUE:
            if (is_value_char(c)) {
                p->_vend = pos + 1;
            } else if (c == '\r') {
                st = S_HDR_LF;
            } else if (c != ' ' && c != '\t') {
                return fail(p, 400, "bad character in header value");
            }
            break;
        case S_HDR_LF: {
            struct http_header *h = &r->headers[r->nheaders - 1];
            if (c != '\n')
                return fail(p, 400, "bare CR");
            h->value = (struct http_span){(uint32_t)p->_mark, (uint32_t)(p->_vend - p->_mark)};
            if (header_done(p, buf) == HTTP_PARSE_ERROR)
                return HTTP_PARSE_ERROR;
            st = S_LINE_START;
            break;
        }
        case S_END_LF:
            if (c != '\n')
                return fail(p, 400, "bare CR");
            p->_pos = pos + 1;
            return head_done(p);
        default:
            return fail(p, 400, "parser in a bad state");
        }
        pos++;
    }
    p->_pos = pos;
    p->_state = st;
    if (pos >= p->max_head_bytes)
        return fail(p, 431, "request head too large");
    return HTTP_PARSE_MORE;
}


/* ---- chunked bodies ---- */

enum {
    C_SIZE,        /* the first hex digit of a chunk-size */
    C_SIZE_HEX,    /* more hex digits, or the end of the size */
    C_EXT,         /* chunk extensions, up to the CR */
    C_SIZE_LF,     /* CR seen after the chunk-size line */
    C_DATA,        /* _left bytes of data */
    C_DATA_CR,     /* the CRLF after the data */
    C_DATA_LF,
    C_TRAILER,     /* the start of a trailer field line, or of the final CRLF */
    C_TRAILER_NAME,
    C_TRAILER_VALUE,
    C_TRAILER_LF,  /* CR seen at the end of a trailer field line */
    C_END_LF,      /* CR of the final CRLF seen */
    C_DONE,
};

void http_chunked_init(struct http_chunked *d, uint64_t max_body, size_t max_trailer)
{
    *d = (struct http_chunked){.max_body = max_body, .max_trailer = max_trailer,
                               ._state = C_SIZE};
}

static enum http_chunked_result chunked_fail(struct http_chunked *d, int status,
                                             const char *why)
{
    d->status = status;
    d->error = why;
    d->_state = C_DONE;
    return HTTP_CHUNKED_ERROR;
}

enum http_chunked_result http_chunked_decode(struct http_chunked *d, const char *buf, size_t len,
                                             size_t *used, struct http_span *data)
{
    size_t pos = 0;

    *data = (struct http_span){0, 0};
    *used = 0;
    if (d->_state == C_DONE)
        return d->status ? HTTP_CHUNKED_ERROR : HTTP_CHUNKED_DONE;
    while (pos < len) {
        unsigned char c = (unsigned char)buf[pos];
        int st = d->_state;

        if (st == C_DATA) {
            size_t n = len - pos;
            if (n > d->_left)
                n = (size_t)d->_left;
            if (n > UINT32_MAX)
                n = UINT32_MAX;
            *data = (struct http_span){(uint32_t)pos, (uint32_t)n};
            d->_left -= n;
            if (d->_left == 0)
                d->_state = C_DATA_CR;
            *used = pos + n;
            return HTTP_CHUNKED_MORE;
        }
        if (st <= C_SIZE_LF && ++d->_line > HTTP_CHUNK_LINE_MAX)
            return chunked_fail(d, 400, "chunk-size line too long");
        if (st >= C_TRAILER && ++d->_trailer > d->max_trailer)
            return chunked_fail(d, 400, "trailer section too large");
        switch (st) {
        case C_SIZE:
            if (hex_digit_value(c) < 0)
                return chunked_fail(d, 400, "bad chunk size");
            d->_left = (uint64_t)hex_digit_value(c);
            d->_state = C_SIZE_HEX;
            break;
        case C_SIZE_HEX:
            if (hex_digit_value(c) >= 0) {
                if (d->_left > (UINT64_MAX >> 4))
                    return chunked_fail(d, 400, "chunk size overflows");
                d->_left = d->_left << 4 | (uint64_t)hex_digit_value(c);
            } else if (c == ';' || c == ' ' || c == '\t') {
                d->_state = C_EXT;
            } else if (c == '\r') {
                d->_state = C_SIZE_LF;
            } else {
                return chunked_fail(d, 400, "bad chunk size");
            }
            break;
        case C_EXT:
            if (c == '\r')
                d->_state = C_SIZE_LF;
            else if (c != '\t' && !is_value_char(c) && c != ' ')
                return chunked_fail(d, 400, "bad character in chunk extension");
            break;
        case C_SIZE_LF:
            if (c != '\n')
                return chunked_fail(d, 400, "chunk-size line without CRLF");
            d->_line = 0;
            if (d->_left == 0) {
                d->_state = C_TRAILER;
                break;
            }
            if (d->_left > d->max_body - d->total)
                return chunked_fail(d, 413, "chunked body too large");
            d->total += d->_left;
            d->_state = C_DATA;
            break;
        case C_DATA_CR:
            if (c != '\r')
                return chunked_fail(d, 400, "chunk data without CRLF");
            d->_state = C_DATA_LF;
            break;
        case C_DATA_LF:
            if (c != '\n')
                return chunked_fail(d, 400, "chunk data without CRLF");
            d->_state = C_SIZE;
            break;
        case C_TRAILER:
            if (c == '\r')
                d->_state = C_END_LF;
            else if (is_tchar(c))
                d->_state = C_TRAILER_NAME;
            else
                return chunked_fail(d, 400, "bad trailer field");
            break;
        case C_TRAILER_NAME:
            if (c == ':')
                d->_state = C_TRAILER_VALUE;
            else if (!is_tchar(c))
                return chunked_fail(d, 400, "bad trailer field");
            break;
        case C_TRAILER_VALUE:
            if (c == '\r')
                d->_state = C_TRAILER_LF;
            else if (c != '\t' && c != ' ' && !is_value_char(c))
                return chunked_fail(d, 400, "bad trailer field");
            break;
        case C_TRAILER_LF:
            if (c != '\n')
                return chunked_fail(d, 400, "trailer field without CRLF");
            d->_state = C_TRAILER;
            break;
        case C_END_LF:
            if (c != '\n')
                return chunked_fail(d, 400, "chunked body without its final CRLF");
            d->_state = C_DONE;
            *used = pos + 1;
            return HTTP_CHUNKED_DONE;
        default:
            return chunked_fail(d, 400, "chunked decoder in a bad state");
        }
        pos++;
    }
    *used = pos;
    return HTTP_CHUNKED_MORE;
}
