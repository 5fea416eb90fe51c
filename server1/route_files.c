/* route_files.c - see route_files.h. */
#include "route_files.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "httpdate.h"
#include "httprange.h"
#include "listing.h"
#include "log.h"
#include "login.h"
#include "mimetypes.h"
#include "request.h"
#include "source.h"
#include "xalloc.h"

/* a file that could run script in the server's origin: a download, and if it is opened
 * anyway, a document of its own opaque origin that runs nothing and loads nothing */
#define HDR_SANDBOX                                                                            \
    "Content-Disposition: attachment\r\n"                                                      \
    "Content-Security-Policy: sandbox; default-src 'none'\r\n"

/*
 * A file's bytes that could not be had (-rc): 503 + Retry-After with the thread's
 * --response-memory spent (-EAGAIN), else 500.
 */
static void respond_unread(struct s1_conn *c, const struct s1_request *r, int rc)
{
    if (rc == -EAGAIN) {
        metrics_add(&request_metrics(c)->responses_busy, 1);
        s1_conn_respond_text(c, 503, HDR_RETRY, "server busy, try again\n");
        return;
    }
    if (rc == -ENODATA)
        log_warn("'%s' shrank while being read", r->name);
    else
        log_warn("cannot read '%s' with O_DIRECT: error %d", r->name, -rc);
    s1_conn_respond_text(c, 500, NULL, "cannot read the file\n");
}

/*
 * The body for bytes [off, off + count) of src, which moves into it (source_body; a HEAD's, or
 * an empty one's, is its length only); false after answering 503 + Retry-After with the
 * thread's --response-memory spent, or 500 when the file cannot be read.
 */
static bool body_of(struct s1_conn *c, struct source *src, uint64_t off, uint64_t count,
                    struct s1_body *b)
{
    struct s1_request *r = request_of(c);
    int rc;

    if (s1_conn_pub(c)->head_only || count == 0) {
        body_length_only(b, count);
        return true;
    }
    rc = source_body(src, off, count, request_env(c)->svc->files, &request_env(c)->resp_budget, b);
    if (rc == 0)
        return true;
    respond_unread(c, r, rc);
    return false;
}

/* Content-Type of the file: by the name's extension; unknown ones are octets. */
static const char *type_of(const struct s1_conn *c)
{
    struct s1_request *r = request_of(c);
    const char *t = mimetypes_lookup(request_env(c)->svc->types, r->name, r->name_len);
    return t != NULL ? t : "application/octet-stream";
}

/*
 * Whether src of this type is served with HDR_SANDBOX: an upload (anyone's, read by anyone
 * whose browser holds credentials for this origin), or with --sandbox-root an operator's file,
 * whose type can run script (mimetypes_is_active).
 */
static bool sandboxed(const struct s1_conn *c, const struct source *src, const char *type)
{
    return (src->upload || request_env(c)->svc->cfg->sandbox_root) && mimetypes_is_active(type);
}

/* The version's ETag and Last-Modified lines, if it has them (files_validators). */
static size_t validators(const struct source *src, char *out)
{
    if (src->blob != NULL) { /* made when it was prefetched */
        memcpy(out, src->blob->validators, src->blob->validators_len + 1);
        return src->blob->validators_len;
    }
    return files_validators(src->ino, src->size, src->mtime_ns, src->last_modified, out);
}

/* Field f as httpcond.h takes it, its value in hv (r->hv, or a copy of it). */
static struct httpcond_list cond_list(const struct hfield *f, const char *hv)
{
    if (f->bad) /* unreadable: malformed (httpcond.h) */
        return (struct httpcond_list){.present = true, .value = ",", .len = 1};
    return (struct httpcond_list){.present = f->present, .value = hv + f->off, .len = f->len};
}

/*
 * Whether the Range of a GET applies to this version (RFC 9110 13.1.5): with no If-Range, yes;
 * with one, only if it names this version: a strong ETag, or the Last-Modified sent when it
 * is a strong validator (strong_date, httpcond_strong_date; -1: no date names it).
 */
static bool range_applies(const struct s1_request *r, const char *etag, size_t etag_len,
                          int64_t strong_date)
{
    if (!r->if_range.present)
        return true;
    if (r->if_range.bad || (etag == NULL && strong_date < 0))
        return false;
    return httpcond_if_range(r->hv + r->if_range.off, r->if_range.len, etag, etag_len,
                             r->if_range_date_valid, r->if_range_date, strong_date);
}

/* Appends "Content-Range: ...\r\n" to extra at *n: a range, or (count 0) the unsatisfied form. */
static void put_content_range(char *extra, size_t *n, uint64_t off, uint64_t count,
                              uint64_t size)
{
    memcpy(extra + *n, "Content-Range: ", 15);
    *n += 15;
    *n += count > 0 ? httprange_content_range(extra + *n, HTTPRANGE_CONTENT_RANGE_MAX, off,
                                              count, size)
                    : httprange_unsatisfied(extra + *n, HTTPRANGE_CONTENT_RANGE_MAX, size);
    memcpy(extra + *n, "\r\n", 3);
    *n += 2;
}

/*
 * A prefetched file's 200 to a GET or HEAD without conditions or a range, with the header block
 * made when it was loaded (the same lines answer_get would write): true if it answered.
 */
static bool answer_prefetched(struct s1_conn *c, struct source *src)
{
    const struct s1_request *r = request_of(c);
    const struct files_blob *blob = src->blob;
    struct s1_body b;

    if (blob == NULL || blob->head_len == 0 ||
        (blob->active && request_env(c)->svc->cfg->sandbox_root) || r->if_match.present ||
        r->if_none_match.present || r->if_modified_since.valid ||
        r->if_unmodified_since.valid || (r->range.present && !s1_conn_pub(c)->head_only))
        return false;
    body_of(c, src, 0, src->size, &b); /* (memory: never fails) */
    s1_conn_respond(c, 200, NULL, blob->head, &b);
    source_release(src);
    return true;
}

#define HDR_ACCEPT_RANGES "Accept-Ranges: bytes\r\n"
/*
 * a GET's headers beyond the status and type: the validators, Accept-Ranges, HDR_SANDBOX, and
 * "Content-Range: " + its value + "\r\n" + NUL
 */
#define GET_EXTRA_MAX                                                                              \
    (FILES_VALIDATORS_MAX + sizeof(HDR_ACCEPT_RANGES) - 1 + sizeof(HDR_SANDBOX) - 1 +              \
     sizeof("Content-Range: ") - 1 + HTTPRANGE_CONTENT_RANGE_MAX - 1 + sizeof("\r\n"))

/* A GET whose file is being read without stopping the thread: its answer, but for the bytes. */
struct file_read {
    struct source_read rd;
    struct s1_conn *c; /* NULL once the conn went away (route_files_drop) */
    int status;
    const char *type;  /* (the MIME table's: lives as long as the server) */
    char extra[GET_EXTRA_MAX];
};

/* The file's bytes are in (or could not be read): the answer, if the conn is still there. */
static void file_read_ready(struct source_read *rd, int rc, struct s1_body *b)
{
    struct file_read *fr = (struct file_read *)((char *)rd - offsetof(struct file_read, rd));
    struct s1_conn *c = fr->c;

    if (c == NULL) {
        body_release(b);
    } else {
        request_of(c)->read = NULL;
        if (rc == 0)
            s1_conn_respond(c, fr->status, fr->type, fr->extra, b);
        else
            respond_unread(c, request_of(c), rc);
    }
    free(fr);
    if (c != NULL)
        s1_conn_resume(c);
}

/*
 * Answers with bytes [off, off + count) of src read without stopping the thread (source.h's
 * source_read_start), if they are a span for it: true when the read is in flight (the answer
 * comes from file_read_ready; request_of(c)->read is set) or 503 was answered.
 */
static bool answer_later(struct s1_conn *c, struct source *src, uint64_t off, uint64_t count,
                         int status, const char *type, const char *extra)
{
    struct s1_handler_env *env = request_env(c);
    struct file_read *fr;
    int rc;

    if (s1_conn_pub(c)->head_only || count == 0 || !aioread_on(env->aio))
        return false;
    fr = xcalloc(1, sizeof(*fr));
    fr->rd.ready = file_read_ready;
    rc = source_read_start(src, off, count, env->svc->files, &env->resp_budget, env->aio,
                           &fr->rd);
    if (rc <= 0) {
        free(fr);
        if (rc == -EBUSY)
            metrics_add(&request_metrics(c)->reads_depth_full, 1);
        else if (rc < 0)
            respond_unread(c, request_of(c), rc);
        return rc < 0 && rc != -EBUSY;
    }
    metrics_add(&request_metrics(c)->reads_async, 1);
    fr->c = c;
    fr->status = status;
    fr->type = type;
    snprintf(fr->extra, sizeof(fr->extra), "%s", extra);
    request_of(c)->read = fr;
    return true;
}

/*
 * Answers a GET or HEAD from src (and releases it): the one place a file's answer is built.
 * Preconditions first (RFC 9110 13.2.2: 412, 304), then the Range of a GET (206, 416), else
 * 200. Every answer names the version: its ETag when it is known, its Last-Modified once it
 * is a validator (httpcond.h); If-Modified-Since and If-Unmodified-Since compare with the
 * modification time whether it is sent or not (a weak comparison is enough for them).
 */
static void answer_get(struct s1_conn *c, struct source *src)
{
    static const char accept_ranges[] = HDR_ACCEPT_RANGES;
    const struct s1_request *r = request_of(c);
    const char *type = type_of(c);
    char extra[GET_EXTRA_MAX];
    size_t n = validators(src, extra);
    const char *etag = n > 0 ? extra + 6 : NULL; /* after "ETag: " */
    size_t etag_len = n > 0 ? (size_t)(strchr(extra, '\r') - etag) : 0;
    int64_t lm = src->mtime_ns >= 0 ? src->mtime_ns / 1000000000 : -1;
    uint64_t off = 0, count = src->size;
    int status = 200;
    struct s1_body b;

    if (r->if_match.present || r->if_none_match.present || r->if_modified_since.valid ||
        r->if_unmodified_since.valid) {
        struct httpcond_request q = {
            .method = HTTPCOND_READ,
            .if_match = cond_list(&r->if_match, r->hv),
            .if_none_match = cond_list(&r->if_none_match, r->hv),
            /* a version without a modification time ignores the dates (13.1.3, 13.1.4) */
            .if_modified_since = lm >= 0 ? r->if_modified_since : (struct httpcond_date){0},
            .if_unmodified_since = lm >= 0 ? r->if_unmodified_since : (struct httpcond_date){0},
        };
        struct httpcond_repr rep = {.exists = true, .etag = etag, .etag_len = etag_len,
                                    .last_modified = lm};
        switch (httpcond_evaluate(&q, &rep)) {
        case HTTPCOND_NOT_MODIFIED:
            s1_conn_respond(c, 304, NULL, extra, NULL);
            source_release(src);
            return;
        case HTTPCOND_PRECONDITION_FAILED:
            s1_conn_respond_text(c, 412, extra, "precondition failed\n");
            source_release(src);
            return;
        case HTTPCOND_PROCEED:
            break;
        }
    }
    memcpy(extra + n, accept_ranges, sizeof(accept_ranges));
    n += sizeof(accept_ranges) - 1;
    if (sandboxed(c, src, type)) {
        memcpy(extra + n, HDR_SANDBOX, sizeof(HDR_SANDBOX));
        n += sizeof(HDR_SANDBOX) - 1;
    }
    if (r->range.present && !r->range.bad && !s1_conn_pub(c)->head_only &&
        range_applies(r, etag, etag_len, src->strong_date)) {
        switch (httprange_parse(r->hv + r->range.off, r->range.len, src->size, &off, &count)) {
        case HTTPRANGE_ONE:
            status = 206;
            put_content_range(extra, &n, off, count, src->size);
            break;
        case HTTPRANGE_UNSATISFIABLE:
            put_content_range(extra, &n, 0, 0, src->size);
            s1_conn_respond_text(c, 416, extra, "range not satisfiable\n");
            source_release(src);
            return;
        case HTTPRANGE_IGNORE:
            off = 0;
            count = src->size;
            break;
        }
    }
    if (!answer_later(c, src, off, count, status, type, extra) &&
        body_of(c, src, off, count, &b))
        s1_conn_respond(c, status, type, extra, &b);
    source_release(src);
}

/*
 * --private-uploads: true if src is an upload of another account (answered 404 like a missing
 * name, so a GET does not tell whether it is taken). The operator's files stay readable by
 * every account.
 */
static bool upload_hidden(const struct s1_conn *c, const struct source *src)
{
    return request_env(c)->svc->cfg->private_uploads && src->upload && src->owner[0] != '\0' &&
           strcmp(src->owner, request_of(c)->user) != 0;
}

/*
 * A GET of /files/DIR that names a directory (with nothing at DIR itself): 301 to /files/DIR/,
 * as nginx answers, so that the listing's relative links resolve. False when DIR is no
 * directory the user could list (the caller answers 404).
 */
static bool redirect_dir(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *svc = request_env(c)->svc;
    struct listing_scope sc = {.dir = r->name, .dir_len = r->name_len, .user = r->user,
                               .private_uploads = svc->cfg->private_uploads, .max = 1};
    char extra[sizeof("Location: \r\n") + 3 * FILES_SEGMENT_MAX + 1];
    size_t len;
    char *loc;

    if (listing_dir_exists(svc->files, svc->commit, &sc) != 1)
        return false;
    loc = listing_dir_location(r->name, r->name_len, &len);
    snprintf(extra, sizeof(extra), "Location: %s\r\n", loc);
    free(loc);
    s1_conn_respond_text(c, 301, extra, "a directory: its listing is at the same path with a /\n");
    return true;
}

/* A GET or HEAD whose credentials are accepted: the file, a redirect to a directory, or 404. */
static void serve_verified(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *svc = request_env(c)->svc;
    struct source src;
    int rc;

    if (!r->name_ok) {
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return;
    }
    rc = source_resolve(svc->files, svc->commit, r->name, r->name_len, &src);
    if (rc == -ENOENT && redirect_dir(c)) {
        return;
    } else if (rc < 0) {
        request_file_error(c, -rc);
    } else if (upload_hidden(c, &src)) {
        source_release(&src);
        s1_conn_respond_text(c, 404, NULL, "not found\n");
    } else if (!answer_prefetched(c, &src)) {
        answer_get(c, &src);
    }
}

static void on_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    login_verified(arg, st, retry_ms, serve_verified);
}

/* Decodes {name} into the request's name; its name_ok is false for invalid and reserved names. */
static void decode_name(struct s1_conn *c, const char *path, size_t len)
{
    struct s1_request *r = request_of(c);
    const char *why = NULL;

    r->name_ok = files_name_decode(path + sizeof(FILES_PREFIX) - 1,
                                        len - (sizeof(FILES_PREFIX) - 1), r->name,
                                        sizeof(r->name), &r->name_len, &why) == 0;
    if (r->name_ok && files_name_is_reserved(r->name, r->name_len)) {
        r->name_ok = false;
        why = "reserved name";
    }
    if (!r->name_ok)
        log_debug("/files: bad name: %s", why);
}

/* Keeps value as field f of r: a second line of a list field is joined to it with ", ". */
static void keep_field(struct s1_request *r, struct hfield *f, bool list, const char *v,
                       size_t len)
{
    size_t need = f->present ? len + 2 : len;

    if (f->present && !list)
        f->bad = true; /* a repeated Range or If-Range */
    if (f->bad || r->hv_len + need > sizeof(r->hv) ||
        (f->present && f->off + f->len != r->hv_len)) {
        f->present = true;
        f->bad = true;
        return;
    }
    if (!f->present) {
        f->present = true;
        f->off = (uint16_t)r->hv_len;
    } else {
        memcpy(r->hv + r->hv_len, ", ", 2);
        r->hv_len += 2;
        f->len += 2;
    }
    memcpy(r->hv + r->hv_len, v, len);
    r->hv_len += len;
    f->len += (uint16_t)len;
}

/* An HTTP date field: valid if it appears once with one valid date (else ignored). */
static void keep_date(struct httpcond_date *d, bool *seen, const char *v, size_t len, int64_t now)
{
    int64_t t;

    if (*seen) {
        d->valid = false;
        return;
    }
    *seen = true;
    d->valid = httpdate_parse(v, len, now, &t) == 0;
    d->secs = d->valid ? t : 0;
}

/* Copies the fields a request's conditions and range need from the head into the request. */
static void keep_conditions(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    struct s1_request *r = request_of(c);
    int64_t now = clock_wall_s();
    bool ims_seen = false, ius_seen = false, ir_seen = false;

    r->range = r->if_range = r->if_match = r->if_none_match = (struct hfield){0};
    r->if_modified_since = r->if_unmodified_since = (struct httpcond_date){0};
    r->if_range_date_valid = false;
    r->hv_len = 0;
    for (unsigned i = 0; i < req->nheaders; i++) {
        struct http_span n = req->headers[i].name;
        const char *v = http_span_ptr(buf, req->headers[i].value);
        size_t len = req->headers[i].value.len;

        if (n.len < 5 || (buf[n.off] | 0x20) != (n.len == 5 ? 'r' : 'i'))
            continue; /* neither Range nor If-... (most headers end here) */
        if (request_field_is(buf, n, "range", 5)) {
            keep_field(r, &r->range, false, v, len);
        } else if (request_field_is(buf, n, "if-range", 8)) {
            keep_field(r, &r->if_range, false, v, len);
            if (!ir_seen && !httpcond_if_range_is_etag(v, len))
                r->if_range_date_valid = httpdate_parse(v, len, now, &r->if_range_date) == 0;
            ir_seen = true;
        } else if (request_field_is(buf, n, "if-match", 8)) {
            keep_field(r, &r->if_match, true, v, len);
        } else if (request_field_is(buf, n, "if-none-match", 13)) {
            keep_field(r, &r->if_none_match, true, v, len);
        } else if (request_field_is(buf, n, "if-modified-since", 17)) {
            keep_date(&r->if_modified_since, &ims_seen, v, len, now);
        } else if (request_field_is(buf, n, "if-unmodified-since", 19)) {
            keep_date(&r->if_unmodified_since, &ius_seen, v, len, now);
        }
    }
}

enum s1_dispatch route_files_get(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *path, size_t len)
{
    keep_conditions(c, buf, req);
    decode_name(c, path, len);
    return login_verify(c, buf, req, on_verify, serve_verified);
}

static void respond_commit(struct s1_conn *c, const struct commit_job *job)
{
    /* a stored PUT names its version (the bytes are stored as sent: RFC 9110 9.3.4) by its
     * ETag; its Last-Modified only comes with a GET once its second is over (httpcond.h) */
    char extra[FILES_VALIDATORS_MAX + 1] = "";

    if (job->op == COMMIT_PUT && job->version > 0)
        files_validators(0, job->body.len, (int64_t)job->version, -1, extra);
    switch (job->status) {
    case 201:
        s1_conn_respond_text(c, 201, extra, "created\n");
        break;
    case 204:
        s1_conn_respond(c, 204, NULL, extra, NULL);
        break;
    case 403:
        s1_conn_respond_text(c, 403, NULL, "forbidden: the file belongs to someone else\n");
        break;
    case 404:
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        break;
    case 409:
        s1_conn_respond_text(c, 409, NULL, "a directory has that name\n");
        break;
    case 412:
        s1_conn_respond_text(c, 412, NULL, "precondition failed\n");
        break;
    case 507:
        s1_conn_respond_text(c, 507, NULL, "no space left for the change\n");
        break;
    default:
        s1_conn_respond_text(c, 500, NULL, "cannot store the change\n");
        break;
    }
}

/*
 * The committer's answer, on the worker's thread (mailbox.h): answers the conn, if still there,
 * and frees the job. Not live: the worker is stopping and the conn is gone.
 */
static void commit_done(struct mailbox_msg *m, bool live)
{
    struct commit_job *job = (struct commit_job *)((char *)m - offsetof(struct commit_job, done));
    struct s1_conn *c = job->c;

    if (live && c != NULL) {
        request_of(c)->job = NULL;
        if (job->over_quota)
            s1_conn_respond_text(c, 507, NULL, "storage quota exceeded\n");
        else
            respond_commit(c, job);
        s1_conn_resume(c);
    }
    free(job);
}

/* After server2 accepted the credentials (and a PUT's body arrived): to the committer. */
static void submit_change(struct s1_conn *c, enum commit_op op)
{
    struct s1_request *r = request_of(c);
    struct commit_job *job = xcalloc(1, sizeof(*job));

    job->op = op;
    job->reply_to = request_env(c)->inbox;
    job->done.deliver = commit_done;
    memcpy(job->name, r->name, r->name_len + 1);
    job->name_len = r->name_len;
    memcpy(job->user, r->user, strlen(r->user) + 1);
    memcpy(job->cond_text, r->hv, r->hv_len);
    job->cond = (struct httpcond_request){
        .method = HTTPCOND_WRITE,
        .if_match = cond_list(&r->if_match, job->cond_text),
        .if_none_match = cond_list(&r->if_none_match, job->cond_text),
        .if_unmodified_since = r->if_unmodified_since,
    };
    job->body = (struct commit_body){.fd = -1};
    if (op == COMMIT_PUT) {
        job->body = r->up; /* the committer owns the body now */
        r->up = (struct commit_body){.fd = -1};
        r->uploading = false;
        r->up_open = false; /* (commit_submit counts it out) */
    }
    job->c = c;
    r->job = job;
    commit_submit(request_env(c)->svc->commit, job);
    /* stays S1_CONN_WAIT until commit_done */
}

static void upload_received(struct s1_conn *c)
{
    submit_change(c, COMMIT_PUT);
}

/* The upload's body sink: the bytes into memory or the temp file (commit_body_write). */
static int upload_write(struct s1_conn *c, const char *p, size_t n)
{
    char ebuf[128];
    int rc = commit_body_write(&request_of(c)->up, p, n);

    if (rc == 0)
        return 0;
    if (rc == -EAGAIN) { /* a chunked body outgrew the temp space free now */
        log_debug("a chunked upload outgrew the free temp space after %llu bytes: 503",
                  (unsigned long long)request_of(c)->up.have);
        metrics_add(&request_metrics(c)->uploads_busy, 1);
        s1_conn_respond_fatal(c, 503, HDR_RETRY, "server busy, try again\n");
        return -1;
    }
    log_warn("cannot write an upload: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
    if (rc == -ENOSPC || rc == -EDQUOT)
        s1_conn_respond_fatal(c, 507, NULL, "no space left for the upload\n");
    else
        s1_conn_respond_fatal(c, 500, NULL, "cannot store the upload\n");
    return -1;
}

static const struct s1_body_sink upload_sink = {
    .write = upload_write,
    .received = upload_received,
};

/*
 * Gets the body's place ready (memory or a temp file; a chunked one's always a temp file that
 * grows) and has the conn stream the body into it; or answers 503 (no room now) or 507/500.
 * A chunked body may take as long as one of --max-upload.
 */
static void upload_begin(struct s1_conn *c)
{
    const struct s1_config *cfg = request_env(c)->svc->cfg;
    struct s1_request *r = request_of(c);
    struct committer *cm = request_env(c)->svc->commit;
    uint64_t size = r->up_chunked ? cfg->max_upload : r->up_len;
    char ebuf[128];
    int rc = r->up_chunked ? commit_body_begin_unsized(cm, &r->up, r->user)
                           : commit_body_begin(cm, &r->up, r->up_len, r->user);

    if (rc < 0) {
        if (rc == -EAGAIN || rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM) {
            /* out of temp space, descriptors or memory for now: the client may try again */
            log_debug("no room for an upload now: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
            metrics_add(&request_metrics(c)->uploads_busy, 1);
            s1_conn_respond_text(c, 503, HDR_RETRY, "server busy, try again\n");
        } else {
            log_warn("cannot make room for an upload: %s", strerror_r(-rc, ebuf, sizeof(ebuf)));
            s1_conn_respond_text(c, rc == -ENOSPC || rc == -EDQUOT ? 507 : 500, NULL,
                                 "cannot store the upload\n");
        }
        return;
    }
    r->uploading = true;
    s1_conn_stream_body(c, &upload_sink,
                        clock_now_ns() + cfg->upload_timeout_us * 1000 +
                            (uint64_t)((double)size / (double)cfg->min_rate * 1e9),
                        cfg->max_upload);
}

/*
 * A PUT whose credentials server2 accepted, its body still unread: refused now (404, 507)
 * unless the name and the quotas allow it, else its body is received next. A chunked body's
 * size is not known yet: it passes here as an empty one, and the committer judges the quotas
 * with its size once it is all here.
 */
static void put_accepted(struct s1_conn *c)
{
    struct committer *cm = request_env(c)->svc->commit;
    struct s1_request *r = request_of(c);

    if (!r->name_ok)
        s1_conn_respond_text(c, 404, NULL, "not found\n");
    else if (commit_quota_check(cm, r->user, r->name, r->name_len, r->up_len) != 0)
        s1_conn_respond_text(c, 507, NULL, "storage quota exceeded\n");
    else
        upload_begin(c);
    s1_conn_resume(c);
}

static void on_change_verify(struct s1_conn *c, enum frame_status st, uint32_t retry_ms,
                             enum commit_op op)
{
    struct s1_request *r = request_of(c);

    r->auth_pending = false;
    login_answered(c, st == FRAME_ST_DENIED || st == FRAME_ST_INVALID, st == FRAME_ST_OK);
    switch (st) {
    case FRAME_ST_LIMITED:
        login_limited_by_server2(c, retry_ms);
        s1_conn_resume(c);
        return;
    case FRAME_ST_OK:
        s1_conn_log_user(c, r->user);
        if (op == COMMIT_PUT) {
            put_accepted(c);
            return;
        }
        if (!r->name_ok)
            break;
        submit_change(c, op);
        return;
    case FRAME_ST_DENIED:
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        s1_conn_resume(c);
        return;
    default:
        request_unavailable(c);
        s1_conn_resume(c);
        return;
    }
    s1_conn_respond_text(c, 404, NULL, "not found\n");
    s1_conn_resume(c);
}

static void on_put_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_change_verify(arg, st, retry_ms, COMMIT_PUT);
}

static void on_delete_verify(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_change_verify(arg, st, retry_ms, COMMIT_DELETE);
}

enum s1_dispatch route_files_change(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *path, size_t len)
{
    if (request_env(c)->svc->commit == NULL) { /* (a PUT was answered by upload_head) */
        s1_conn_respond_text(c, 405, HDR_ALLOW_READ, TEXT_READ_ONLY);
        return S1_DISPATCH_DONE;
    }
    keep_conditions(c, buf, req);
    decode_name(c, path, len);
    return login_verify(c, buf, req,
                        req->method == HTTP_METHOD_PUT ? on_put_verify : on_delete_verify, NULL);
}

/* The upload's body and its place among the committer's open uploads, if still held. */
void route_files_drop(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);
    struct committer *cm = request_env(c)->svc->commit;

    if (r->read != NULL)
        r->read->c = NULL; /* the read ends without it (file_read_ready) */
    r->read = NULL;
    if (r->uploading)
        commit_body_abandon(cm, &r->up);
    r->uploading = false;
    if (r->up_open)
        commit_upload_close(cm);
    r->up_open = false;
}

/*
 * PUT /files/{name}: its head is checked before anyone looks at the credentials (405, 411, 413,
 * answered with the connection closing, the body unread); then server2 is asked while the body
 * waits. A chunked body (its size unknown) is judged against --max-upload as it arrives.
 */
enum s1_head route_files_put_head(struct s1_conn *c, const char *buf,
                                  const struct http_request *req, const char *path, size_t len)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *svc = request_env(c)->svc;

    if (svc->commit == NULL) {
        s1_conn_respond_fatal(c, 405, HDR_ALLOW_READ, TEXT_READ_ONLY);
        return S1_HEAD_DONE;
    }
    if (!req->has_content_length && !req->chunked) {
        s1_conn_respond_fatal(c, 411, NULL, "Content-Length required\n");
        return S1_HEAD_DONE;
    }
    if (req->content_length > svc->cfg->max_upload) {
        s1_conn_respond_fatal(c, 413, NULL, "upload too large\n");
        return S1_HEAD_DONE;
    }
    r->up_len = req->content_length;
    r->up_chunked = req->chunked;
    r->up_open = true;
    commit_upload_open(svc->commit);
    return route_files_change(c, buf, req, path, len) == S1_DISPATCH_PENDING ? S1_HEAD_WAIT
                                                                             : S1_HEAD_DONE;
}
