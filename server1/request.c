/* request.c - see request.h. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ratelimit.h"

void request_unavailable(struct s1_conn *c)
{
    s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable, retry later\n");
}

void request_limited(struct s1_conn *c, enum metrics_limit kind, uint64_t wait_ns,
                     const char *text)
{
    char hdr[48];

    snprintf(hdr, sizeof(hdr), "Retry-After: %llu\r\n",
             (unsigned long long)ratelimit_retry_after_s(wait_ns));
    metrics_add(&request_metrics(c)->ratelimited[kind], 1);
    s1_conn_audit(c, "rate_limited", request_of(c)->user[0] != '\0' ? request_of(c)->user : NULL,
                  strlen(request_of(c)->user), metrics_limit_name(kind));
    s1_conn_respond_text(c, 429, hdr, text);
}

void request_file_error(struct s1_conn *c, int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EXDEV: /* resolves outside the root */
    case ELOOP:
    case EISDIR:
    case ENXIO:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        break;
    case EACCES:
    case EPERM:
        s1_conn_respond_text(c, 403, NULL, "forbidden\n");
        break;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        request_unavailable(c);
        break;
    default:
        s1_conn_respond_text(c, 500, NULL, "cannot read the file\n");
        break;
    }
}

bool request_field_is(const char *buf, struct http_span s, const char *lit, size_t n)
{
    return s.len == n && strncasecmp(buf + s.off, lit, n) == 0;
}
