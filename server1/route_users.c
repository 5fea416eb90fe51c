/* route_users.c - see route_users.h. */
#include "route_users.h"

#include <sodium.h>
#include <string.h>

#include "clock.h"
#include "basic_auth.h"
#include "form.h"
#include "log.h"
#include "login.h"
#include "ratelimit.h"
#include "request.h"

/* Before a CREATE: takes a token of the address; false after answering 429 if it had none. */
static bool signup_allowed(struct s1_conn *c)
{
    struct ratelimit *rl = request_env(c)->svc->signup;
    uint64_t wait;

    if (rl == NULL)
        return true;
    wait = ratelimit_take(rl, s1_conn_pub(c)->peer, RATELIMIT_ADDR_LEN, clock_now_ns());
    if (wait == 0)
        return true;
    request_limited(c, METRICS_LIMIT_SIGNUP, wait,
                    "too many accounts created from your address, retry later\n");
    return false;
}

/* A form request's head: urlencoded, with a Content-Length; false after answering 415/411. */
static bool form_body_ok(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    if (req->content_type < 0 ||
        !http_form_is_urlencoded(http_span_ptr(buf, req->headers[req->content_type].value),
                                 req->headers[req->content_type].value.len)) {
        s1_conn_respond_text(c, 415, NULL,
                             "Content-Type must be application/x-www-form-urlencoded\n");
        return false;
    }
    if (!req->has_content_length) {
        s1_conn_respond_text(c, 411, NULL, "Content-Length required\n");
        return false;
    }
    return true;
}

static void on_create(void *arg, enum frame_status st, uint32_t retry_ms)
{
    struct s1_conn *c = arg;

    UNUSED(retry_ms);
    request_of(c)->auth_pending = false;
    switch (st) {
    case FRAME_ST_OK:
        s1_conn_audit(c, "signup", request_of(c)->user, strlen(request_of(c)->user), NULL);
        s1_conn_respond_text(c, 201, NULL, "created\n");
        break;
    case FRAME_ST_EXISTS:
        s1_conn_respond_text(c, 409, NULL, "username already exists\n");
        break;
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 400, NULL, "invalid username or password\n");
        break;
    default:
        request_unavailable(c);
        break;
    }
    s1_conn_resume(c);
}

enum s1_dispatch route_users_create(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *body,
                                    size_t body_len)
{
    struct s1_request *r = request_of(c);
    char user[ACCOUNT_USER_MAX + 1];
    char pass[ACCOUNT_PASS_MAX + 1];
    struct http_form_field fields[2] = {
        {.name = "username", .out = user, .cap = sizeof(user)},
        {.name = "password", .out = pass, .cap = sizeof(pass)},
    };
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;

    if (request_env(c)->svc->cfg->signup_closed) { /* --signup closed: server2 is not asked */
        metrics_add(&request_metrics(c)->signups_refused, 1);
        s1_conn_respond_text(c, 403, NULL, "sign-up is closed; ask the administrator\n");
        return S1_DISPATCH_DONE;
    }
    if (!form_body_ok(c, buf, req))
        return S1_DISPATCH_DONE;
    if (http_form_parse(body, body_len, fields, 2, &why) < 0) {
        log_debug("POST /users: %s", why);
        s1_conn_respond_text(c, 400, NULL, "malformed form body\n");
        goto out;
    }
    if (!fields[0].found || !fields[1].found) {
        s1_conn_respond_text(c, 400, NULL, "username and password are required\n");
        goto out;
    }
    if (!account_username_valid(user, fields[0].len)) {
        s1_conn_respond_text(c, 400, NULL,
                             "username must be 1-64 characters of A-Z a-z 0-9 . _ -\n");
        goto out;
    }
    if (!account_password_valid(pass, fields[1].len)) {
        s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
        goto out;
    }
    memcpy(r->user, user, fields[0].len); /* (valid: at most ACCOUNT_USER_MAX) */
    r->user[fields[0].len] = '\0';
    if (!signup_allowed(c)) /* every CREATE costs server2 a hash, taken or not */
        goto out;
    if (authclient_submit(request_env(c)->auth, FRAME_CREATE, user, fields[0].len, pass,
                          fields[1].len, on_create, c, &r->auth_handle) < 0) {
        request_unavailable(c);
        goto out;
    }
    r->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(pass, sizeof(pass));
    return d;
}

static void on_account_change(void *arg, enum frame_status st, uint32_t retry_ms,
                              const char *event)
{
    struct s1_conn *c = arg;
    struct s1_request *r = request_of(c);

    r->auth_pending = false;
    /* (INVALID: the new password is not valid; OK: the credentials used are no longer good) */
    login_answered(c, st == FRAME_ST_DENIED, false);
    if (st == FRAME_ST_OK && request_env(c)->svc->known_logins != NULL)
        credcache_shared_drop_user(request_env(c)->svc->known_logins, r->user,
                                   strlen(r->user));
    if (st == FRAME_ST_OK || st == FRAME_ST_INVALID) /* (the credentials were right) */
        s1_conn_log_user(c, r->user);
    switch (st) {
    case FRAME_ST_OK:
        s1_conn_audit(c, event, r->user, strlen(r->user), NULL);
        s1_conn_respond(c, 204, NULL, NULL, NULL);
        break;
    case FRAME_ST_LIMITED:
        login_limited_by_server2(c, retry_ms);
        break;
    case FRAME_ST_DENIED:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        break;
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
        break;
    default:
        request_unavailable(c);
        break;
    }
    s1_conn_resume(c);
}

static void on_password_change(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_account_change(arg, st, retry_ms, "password_changed");
}

static void on_account_delete(void *arg, enum frame_status st, uint32_t retry_ms)
{
    on_account_change(arg, st, retry_ms, "account_deleted");
}

/*
 * PUT /users/{name} (form body password=NEW) changes the password, DELETE /users/{name}
 * deletes the account; both with Basic credentials of that very account. server2 checks
 * them, makes the change, and answers once every server1 has forgotten the old password.
 */
enum s1_dispatch route_users_change(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *path,
                                    size_t len, const char *body, size_t body_len)
{
    struct s1_request *r = request_of(c);
    const char *name = path + sizeof(USERS_PREFIX) - 1;
    size_t name_len = len - (sizeof(USERS_PREFIX) - 1);
    char pass[ACCOUNT_PASS_MAX + 1];
    struct http_form_field field = {.name = "password", .out = pass, .cap = sizeof(pass)};
    struct http_basic_cred cred;
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;
    int rc;

    if (!account_username_valid(name, name_len)) {
        s1_conn_respond_text(c, 404, NULL, "not found\n");
        return S1_DISPATCH_DONE;
    }
    if (req->authorization < 0) {
        s1_conn_respond_text(c, 401, HDR_AUTHN, "credentials required\n");
        return S1_DISPATCH_DONE;
    }
    if (http_basic_parse(http_span_ptr(buf, req->headers[req->authorization].value),
                         req->headers[req->authorization].value.len, &cred, &why) < 0) {
        log_debug("/users: bad credentials: %s", why);
        s1_conn_respond_text(c, 401, HDR_AUTHN, "bad credentials\n");
        return S1_DISPATCH_DONE;
    }
    pass[0] = '\0';
    if (cred.user_len != name_len || memcmp(cred.user, name, name_len) != 0) {
        s1_conn_respond_text(c, 403, NULL, "forbidden: only the account itself may change it\n");
        goto out;
    }
    memcpy(r->user, name, name_len);
    r->user[name_len] = '\0';
    if (req->method == HTTP_METHOD_PUT) {
        if (!form_body_ok(c, buf, req))
            goto out;
        if (http_form_parse(body, body_len, &field, 1, &why) < 0) {
            log_debug("PUT /users: %s", why);
            s1_conn_respond_text(c, 400, NULL, "malformed form body\n");
            goto out;
        }
        if (!field.found) {
            s1_conn_respond_text(c, 400, NULL, "password is required\n");
            goto out;
        }
        if (!account_password_valid(pass, field.len)) {
            s1_conn_respond_text(c, 400, NULL, "password must be 1-256 bytes without NUL\n");
            goto out;
        }
    }
    if (!login_reserve(c, cred.pass, cred.pass_len))
        goto out;
    if (req->method == HTTP_METHOD_PUT)
        rc = authclient_submit_setpass(request_env(c)->auth, cred.user, cred.user_len, cred.pass,
                                       cred.pass_len, pass, field.len, on_password_change, c,
                                       &r->auth_handle);
    else
        rc = authclient_submit(request_env(c)->auth, FRAME_DELETE, cred.user, cred.user_len,
                               cred.pass, cred.pass_len, on_account_delete, c,
                               &r->auth_handle);
    if (rc < 0) {
        login_answered(c, false, false);
        request_unavailable(c);
        goto out;
    }
    r->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(pass, sizeof(pass));
    explicit_bzero(&cred, sizeof(cred));
    return d;
}
