/* route_admin.c - see route_admin.h. */
#include "route_admin.h"

#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "xalloc.h"

static void on_ping(void *arg, enum frame_status st, uint32_t retry_ms)
{
    struct s1_conn *c = arg;

    UNUSED(retry_ms);
    request_of(c)->auth_pending = false;
    if (st == FRAME_ST_OK)
        s1_conn_respond_text(c, 200, NULL, "ok\n");
    else
        s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable\n");
    s1_conn_resume(c);
}

enum s1_dispatch route_admin_healthz(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);

    if (!authclient_is_up(request_env(c)->auth) ||
        authclient_submit(request_env(c)->auth, FRAME_PING, NULL, 0, NULL, 0, on_ping, c,
                          &r->auth_handle) < 0) {
        s1_conn_respond_text(c, 503, HDR_RETRY, "auth backend unavailable\n");
        return S1_DISPATCH_DONE;
    }
    r->auth_pending = true;
    return S1_DISPATCH_PENDING;
}

void route_admin_metrics(struct s1_conn *c)
{
    const struct s1_service *sh = request_env(c)->svc;
    struct s1_body b;
    uint64_t count;
    uint64_t bytes;
    size_t len;
    char *text;

    files_stats(sh->files, &count, &bytes);
    text = metrics_render(sh->metrics, sh->nthreads, count, bytes, &len);
    if (sh->commit != NULL) {
        size_t clen;
        char *ctext = commit_metrics_render(sh->commit, &clen);
        text = xrealloc(text, len + clen + 1);
        memcpy(text + len, ctext, clen + 1);
        len += clen;
        free(ctext);
    }

    body_mem_owned(&b, text, len, text);
    s1_conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, &b);
}
