/*
 * http.c - see http.h. Accepts "\r\n" or a bare "\n" as line end. Rejects what a load
 * generator cannot measure correctly: transfer codings whose last one is not chunked,
 * conflicting Content-Length headers, lengths and chunk sizes that overflow, folded headers,
 * and heads over 16 KB. With both Transfer-Encoding: chunked and Content-Length, the chunks
 * delimit the body (RFC 9112 section 6.3).
 */
#include "http.h"

#include <string.h>
#include <strings.h>

#define LG_HTTP_MAX_LENGTH (1ull << 62) /* larger Content-Length values are refused */

void lg_http_reset(struct lg_http *p, bool head_request)
{
    memset(p, 0, sizeof(*p));
    p->state = LG_HTTP_HEAD;
    p->head_request = head_request;
}

static enum lg_http_result fail(struct lg_http *p, const char *why)
{
    p->state = LG_HTTP_FAILED;
    p->why = why;
    return LG_HTTP_ERR;
}

/* Case-insensitive: does the comma-separated list s[0..len) contain token tok? */
static bool list_has(const char *s, size_t len, const char *tok)
{
    size_t tlen = strlen(tok);
    size_t i = 0;

    while (i < len) {
        size_t start;
        size_t end;
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
            i++;
        start = i;
        while (i < len && s[i] != ',')
            i++;
        end = i;
        while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t'))
            end--;
        if (end - start == tlen && strncasecmp(s + start, tok, tlen) == 0)
            return true;
    }
    return false;
}

static enum lg_http_result status_line(struct lg_http *p, const char *s, size_t len)
{
    int code;

    /* "HTTP/1.x SSS[ reason]" */
    if (len < 12 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
        return fail(p, "bad status line");
    if (s[9] < '1' || s[9] > '9' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9')
        return fail(p, "bad status code");
    if (len > 12 && s[12] != ' ')
        return fail(p, "bad status code");
    code = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    p->status = code;
    p->http10 = s[7] == '0';
    p->keep_alive = !p->http10;
    return LG_HTTP_MORE;
}

static int parse_length(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > LG_HTTP_MAX_LENGTH)
            return -1;
    }
    *out = v;
    return 0;
}

static enum lg_http_result header_line(struct lg_http *p, const char *s, size_t len)
{
    const char *colon = memchr(s, ':', len);
    const char *v;
    size_t nlen;
    size_t vlen;

    if (s[0] == ' ' || s[0] == '\t')
        return fail(p, "folded header");
    if (colon == NULL || colon == s)
        return fail(p, "header without name or colon");
    nlen = (size_t)(colon - s);
    v = colon + 1;
    vlen = len - nlen - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;

    if (nlen == 14 && strncasecmp(s, "Content-Length", 14) == 0) {
        uint64_t n;
        if (parse_length(v, vlen, &n) < 0)
            return fail(p, "bad Content-Length");
        if (p->has_length && n != p->content_length)
            return fail(p, "conflicting Content-Length");
        p->has_length = true;
        p->content_length = n;
    } else if (nlen == 10 && strncasecmp(s, "Connection", 10) == 0) {
        if (list_has(v, vlen, "close"))
            p->keep_alive = false;
        else if (list_has(v, vlen, "keep-alive"))
            p->keep_alive = true;
    } else if (nlen == 17 && strncasecmp(s, "Transfer-Encoding", 17) == 0) {
        /* the last coding must be chunked: it alone says where the body ends (the others,
         * e.g. gzip, are counted as they come) */
        size_t end = vlen;
        size_t start;
        while (end > 0 && (v[end - 1] == ' ' || v[end - 1] == '\t' || v[end - 1] == ','))
            end--;
        start = end;
        while (start > 0 && v[start - 1] != ',' && v[start - 1] != ' ' && v[start - 1] != '\t')
            start--;
        if (end - start == 7 && strncasecmp(v + start, "chunked", 7) == 0)
            p->chunked = true;
        else if (!(vlen == 8 && strncasecmp(v, "identity", 8) == 0))
            return fail(p, "transfer coding not supported (only chunked)");
    }
    return LG_HTTP_MORE;
}

/* The head ended: decide how the body is delimited. */
static enum lg_http_result end_of_head(struct lg_http *p)
{
    if (p->status == 0)
        return fail(p, "empty line before status line");
    if (p->status >= 100 && p->status < 200 && p->status != 101) {
        /* interim response (100 Continue): the real one follows */
        bool head = p->head_request;
        size_t head_bytes = p->head_bytes;
        lg_http_reset(p, head);
        p->head_bytes = head_bytes;
        return LG_HTTP_MORE;
    }
    if (p->head_request || p->status == 204 || p->status == 304 || p->status == 101 ||
        (!p->chunked && p->has_length && p->content_length == 0)) {
        p->state = LG_HTTP_COMPLETE;
        return LG_HTTP_DONE;
    }
    if (p->chunked) {
        p->state = LG_HTTP_CHUNK_SIZE;
        return LG_HTTP_MORE;
    }
    if (p->has_length) {
        p->state = LG_HTTP_BODY;
        p->body_left = p->content_length;
        return LG_HTTP_MORE;
    }
    p->state = LG_HTTP_UNTIL_EOF;
    p->keep_alive = false;
    return LG_HTTP_MORE;
}

/* "HEX[;extensions]": the next chunk's size; 0 starts the trailer. */
static enum lg_http_result chunk_size_line(struct lg_http *p, const char *s, size_t len)
{
    uint64_t v = 0;
    size_t i = 0;

    for (; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        v = v * 16 + d;
        if (v > LG_HTTP_MAX_LENGTH)
            return fail(p, "chunk size too large");
    }
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == 0 || (i < len && s[i] != ';'))
        return fail(p, "bad chunk size");
    if (v == 0) {
        p->state = LG_HTTP_TRAILER;
        return LG_HTTP_MORE;
    }
    p->state = LG_HTTP_CHUNK_DATA;
    p->body_left = v;
    return LG_HTTP_MORE;
}

/* One whole line (without its end) in a line-based state. */
static enum lg_http_result line(struct lg_http *p, const char *s, size_t len)
{
    switch (p->state) {
    case LG_HTTP_HEAD:
        if (len == 0)
            return end_of_head(p);
        if (p->status == 0)
            return status_line(p, s, len);
        return header_line(p, s, len);
    case LG_HTTP_CHUNK_SIZE:
        return chunk_size_line(p, s, len);
    case LG_HTTP_CHUNK_END:
        if (len != 0)
            return fail(p, "no line end after chunk data");
        p->state = LG_HTTP_CHUNK_SIZE;
        return LG_HTTP_MORE;
    default: /* LG_HTTP_TRAILER: fields are dropped; an empty line ends the response */
        if (len > 0)
            return LG_HTTP_MORE;
        p->state = LG_HTTP_COMPLETE;
        return LG_HTTP_DONE;
    }
}

static bool line_state(enum lg_http_state s)
{
    return s == LG_HTTP_HEAD || s == LG_HTTP_CHUNK_SIZE || s == LG_HTTP_CHUNK_END ||
           s == LG_HTTP_TRAILER;
}

/*
 * The budget of the current line-based state: the head and the trailer are limited in all,
 * a chunk-size line on its own. Returns the bytes counted so far; *limit gets the limit.
 */
static size_t *line_counter(struct lg_http *p, size_t *scratch, size_t *limit)
{
    if (p->state == LG_HTTP_HEAD) {
        *limit = LG_HTTP_MAX_HEAD;
        return &p->head_bytes;
    }
    if (p->state == LG_HTTP_TRAILER) {
        *limit = LG_HTTP_MAX_TRAILER;
        return &p->trailer_bytes;
    }
    *limit = LG_HTTP_MAX_CHUNK_LINE;
    *scratch = 0;
    return scratch;
}

static const char *too_long(const struct lg_http *p)
{
    if (p->state == LG_HTTP_HEAD)
        return "response head too large";
    if (p->state == LG_HTTP_TRAILER)
        return "chunked trailer too large";
    return "chunk-size line too long";
}

enum lg_http_result lg_http_parse(struct lg_http *p, const char *buf, size_t len, size_t *used)
{
    size_t pos = 0;

    for (;;) {
        enum lg_http_result r;

        if (line_state(p->state)) {
            const char *nl = memchr(buf + pos, '\n', len - pos);
            size_t scratch;
            size_t limit;
            size_t *counted = line_counter(p, &scratch, &limit);
            size_t llen;

            *used = pos;
            if (nl == NULL) /* a partial line: counted when it is whole */
                return *counted + (len - pos) > limit ? fail(p, too_long(p)) : LG_HTTP_MORE;
            llen = (size_t)(nl - (buf + pos));
            *counted += llen + 1;
            if (*counted > limit)
                return fail(p, too_long(p));
            if (llen > 0 && buf[pos + llen - 1] == '\r')
                llen--;
            r = line(p, buf + pos, llen);
            pos = (size_t)(nl - buf) + 1;
            *used = pos;
            if (r != LG_HTTP_MORE)
                return r;
            continue;
        }
        if (p->state == LG_HTTP_BODY || p->state == LG_HTTP_CHUNK_DATA) {
            size_t take = len - pos;
            if ((uint64_t)take > p->body_left)
                take = (size_t)p->body_left;
            pos += take;
            *used = pos;
            r = lg_http_skip(p, take);
            if (r != LG_HTTP_MORE || p->state == LG_HTTP_BODY || pos == len)
                return r;
            continue; /* the chunk's end line follows */
        }
        if (p->state == LG_HTTP_UNTIL_EOF) {
            p->body_bytes += len - pos;
            *used = len;
            return LG_HTTP_MORE;
        }
        *used = pos;
        if (p->state == LG_HTTP_COMPLETE)
            return LG_HTTP_DONE;
        return LG_HTTP_ERR; /* LG_HTTP_FAILED: fed again after an error */
    }
}

enum lg_http_result lg_http_skip(struct lg_http *p, uint64_t n)
{
    if (p->state == LG_HTTP_UNTIL_EOF) {
        p->body_bytes += n;
        return LG_HTTP_MORE;
    }
    if ((p->state != LG_HTTP_BODY && p->state != LG_HTTP_CHUNK_DATA) || n > p->body_left)
        return fail(p, "body bytes past the response");
    p->body_left -= n;
    p->body_bytes += n;
    if (p->body_left > 0)
        return LG_HTTP_MORE;
    if (p->state == LG_HTTP_CHUNK_DATA) {
        p->state = LG_HTTP_CHUNK_END;
        return LG_HTTP_MORE;
    }
    p->state = LG_HTTP_COMPLETE;
    return LG_HTTP_DONE;
}

uint64_t lg_http_body_wanted(const struct lg_http *p)
{
    if (p->state == LG_HTTP_BODY || p->state == LG_HTTP_CHUNK_DATA)
        return p->body_left;
    if (p->state == LG_HTTP_UNTIL_EOF)
        return UINT64_MAX;
    return 0;
}

enum lg_http_result lg_http_eof(struct lg_http *p)
{
    if (p->state == LG_HTTP_UNTIL_EOF) {
        p->state = LG_HTTP_COMPLETE;
        return LG_HTTP_DONE;
    }
    if (p->state == LG_HTTP_COMPLETE)
        return LG_HTTP_DONE;
    if (p->state == LG_HTTP_HEAD && p->head_bytes == 0 && p->status == 0)
        return fail(p, "connection closed before any response byte");
    return fail(p, "connection closed mid-response");
}
