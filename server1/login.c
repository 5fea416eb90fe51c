/* login.c - see login.h. */
#include "login.h"

#include <sodium.h>
#include <string.h>

#include "basic_auth.h"
#include "clock.h"
#include "credcache.h"
#include "log.h"
#include "ratelimit.h"
#include "request.h"

/*
 * server2 said the user's failed logins, counted in the database every server2 (and so every
 * server1) shares, are over its --login-fail-limit: 429, retry_ms from server2 as Retry-After.
 */
void login_limited_by_server2(struct s1_conn *c, uint32_t retry_ms)
{
    request_limited(c, METRICS_LIMIT_LOGIN_SHARED, (uint64_t)retry_ms * 1000000ull,
                    "too many failed logins for this user, retry later\n");
}

/*
 * Before a login (the request's user set): true after answering 429 if the username or the
 * client address is over its failed-login limit. A lockout holds every login as that user, the
 * right password too: otherwise the answer would tell a guesser when a guess was right.
 */
static bool login_limited(struct s1_conn *c)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *sh = request_env(c)->svc;
    uint64_t wait_user = 0;
    uint64_t wait_addr = 0;
    uint64_t now;

    if (sh->login_fail_user == NULL && sh->login_fail_addr == NULL)
        return false;
    now = clock_now_ns();
    if (sh->login_fail_user != NULL)
        wait_user = ratelimit_check(sh->login_fail_user, r->user, strlen(r->user), now);
    if (sh->login_fail_addr != NULL)
        wait_addr = ratelimit_check(sh->login_fail_addr, s1_conn_pub(c)->peer,
                                    RATELIMIT_ADDR_LEN, now);
    if (wait_user == 0 && wait_addr == 0)
        return false;
    if (wait_user >= wait_addr)
        request_limited(c, METRICS_LIMIT_LOGIN_USER, wait_user,
                        "too many failed logins for this user, retry later\n");
    else
        request_limited(c, METRICS_LIMIT_LOGIN_ADDR, wait_addr,
                        "too many failed logins from your address, retry later\n");
    return true;
}

/*
 * Just before server2 is asked to check the request's user's password pass: takes a failed-login
 * token of the username and one of the client address, as if the password were wrong, so that
 * no more guesses wait for server2 at once than tokens are left (checking first and counting
 * failures as they came back let a burst of guesses sent together all through). Credentials
 * server2 accepted lately (sh->known_logins) are no guess: they take no token, so a
 * client's burst of requests with its right password is not refused (32 parallel GETs of one
 * user held 32 tokens of a limit of 20 while server2 was slow). False after answering 429 if
 * a token is missing (nothing is held then). login_answered settles them.
 */
bool login_reserve(struct s1_conn *c, const char *pass, size_t pass_len)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *sh = request_env(c)->svc;
    uint64_t now = clock_now_ns();
    uint64_t wait;

    if (sh->known_logins != NULL) {
        if (r->cred_cacheable) /* cache_answers hashed the same (user, password) */
            r->login_key = r->cred_key;
        else
            credcache_key(r->user, strlen(r->user), pass, pass_len, &r->login_key);
        r->login_keyed = true;
        if (credcache_shared_hit(sh->known_logins, &r->login_key, now)) {
            r->login_known = true;
            return true;
        }
    }

    if (sh->login_fail_user != NULL) {
        wait = ratelimit_take(sh->login_fail_user, r->user, strlen(r->user), now);
        if (wait > 0) {
            request_limited(c, METRICS_LIMIT_LOGIN_USER, wait,
                            "too many failed logins for this user, retry later\n");
            return false;
        }
    }
    if (sh->login_fail_addr != NULL) {
        wait = ratelimit_take(sh->login_fail_addr, s1_conn_pub(c)->peer, RATELIMIT_ADDR_LEN,
                              now);
        if (wait > 0) {
            if (sh->login_fail_user != NULL)
                ratelimit_refund(sh->login_fail_user, r->user, strlen(r->user));
            request_limited(c, METRICS_LIMIT_LOGIN_ADDR, wait,
                            "too many failed logins from your address, retry later\n");
            return false;
        }
    }
    r->login_held = true;
    return true;
}

/*
 * server2 answered c's login (or it was never sent): a wrong password (wrong) keeps the tokens
 * login_reserve took; anything else gives them back: an accepted password (accepted; then the
 * credentials are known good), and an answer that says nothing about it
 * (unavailable, expired, timed out, the link lost), so that an outage does not lock out the
 * users who retry through it. (A request whose client goes away first keeps them: release.)
 * Known credentials found wrong (the password changed since) are forgotten and charged a
 * failure after the fact.
 */
void login_answered(struct s1_conn *c, bool wrong, bool accepted)
{
    struct s1_request *r = request_of(c);
    const struct s1_service *sh = request_env(c)->svc;
    uint64_t now;

    if (wrong) /* (the name as given: unknown user and wrong password alike) */
        s1_conn_audit(c, "login_failed", r->user, strlen(r->user), NULL);
    if (r->login_keyed) {
        now = clock_now_ns();
        if (accepted) {
            credcache_shared_put(sh->known_logins, &r->login_key, now);
        } else if (wrong && r->login_known) {
            credcache_shared_drop_user(sh->known_logins, r->user, strlen(r->user));
            if (sh->login_fail_user != NULL)
                (void)ratelimit_take(sh->login_fail_user, r->user, strlen(r->user),
                                     now);
            if (sh->login_fail_addr != NULL)
                (void)ratelimit_take(sh->login_fail_addr, s1_conn_pub(c)->peer,
                                     RATELIMIT_ADDR_LEN, now);
        }
        sodium_memzero(&r->login_key, sizeof(r->login_key));
        r->login_keyed = false;
        r->login_known = false;
    }
    if (!r->login_held)
        return;
    r->login_held = false;
    if (wrong)
        return;
    if (sh->login_fail_user != NULL)
        ratelimit_refund(sh->login_fail_user, r->user, strlen(r->user));
    if (sh->login_fail_addr != NULL)
        ratelimit_refund(sh->login_fail_addr, s1_conn_pub(c)->peer, RATELIMIT_ADDR_LEN);
}

/* server2's answer to a GET or HEAD's credentials: then() answers an accepted one. */
void login_verified(struct s1_conn *c, enum frame_status st, uint32_t retry_ms,
                    void (*then)(struct s1_conn *))
{
    struct s1_request *r = request_of(c);
    struct s1_handler_env *env = request_env(c);

    r->auth_pending = false;
    login_answered(c, st == FRAME_ST_DENIED || st == FRAME_ST_INVALID, st == FRAME_ST_OK);
    switch (st) {
    case FRAME_ST_LIMITED:
        login_limited_by_server2(c, retry_ms);
        break;
    case FRAME_ST_OK:
        s1_conn_log_user(c, r->user);
        if (r->cred_cacheable) {
            credcache_put(&env->cache, &r->cred_key, r->cred_epoch, clock_now_ns());
            metrics_gauge_set(&request_metrics(c)->auth_cache_entries, (int64_t)env->cache.used);
        }
        then(c);
        break;
    case FRAME_ST_DENIED:
    case FRAME_ST_INVALID:
        s1_conn_respond_text(c, 401, HDR_AUTHN, "unauthorized\n");
        break;
    default:
        request_unavailable(c);
        break;
    }
    r->cred_cacheable = false;
    sodium_memzero(&r->cred_key, sizeof(r->cred_key));
    if (r->read == NULL) /* (else the file being read answers, then resumes) */
        s1_conn_resume(c);
}

/*
 * With the cache on: true after answering through hit() if it holds these credentials; else
 * prepares c so that server2's acceptance is cached.
 */
static bool cache_answers(struct s1_conn *c, const struct http_basic_cred *cred,
                          void (*hit)(struct s1_conn *))
{
    struct s1_request *r = request_of(c);
    struct s1_handler_env *env = request_env(c);
    uint64_t now;
    bool found;

    r->cred_cacheable = false;
    if (hit == NULL || !env->cache_on || cred->user_len > ACCOUNT_USER_MAX)
        return false;
    credcache_key(cred->user, cred->user_len, cred->pass, cred->pass_len, &r->cred_key);
    now = clock_now_ns();
    /* only under a lease: while none holds, a change may go by that no server2 tells us */
    found = authclient_lease_valid(env->auth, now) &&
            credcache_hit(&env->cache, &r->cred_key, now);
    metrics_gauge_set(&request_metrics(c)->auth_cache_entries, (int64_t)env->cache.used);
    if (found) {
        metrics_add(&request_metrics(c)->auth_cache_hits, 1);
        sodium_memzero(&r->cred_key, sizeof(r->cred_key));
        s1_conn_log_user(c, r->user);
        hit(c);
        return true;
    }
    metrics_add(&request_metrics(c)->auth_cache_misses, 1);
    r->cred_epoch = env->cache.epoch;
    r->cred_cacheable = true;
    return false;
}

/*
 * Checks the Basic credentials and asks server2 to verify them; cb answers. Returns DONE after
 * answering 401/503 itself, or after hit() answered from the cache (hit may be NULL: never
 * cached), PENDING if it left the answer to a file being read. The user name is kept in the
 * request (request_of(c)->user).
 */
enum s1_dispatch login_verify(struct s1_conn *c, const char *buf, const struct http_request *req,
                              authclient_cb cb, void (*hit)(struct s1_conn *))
{
    struct s1_request *r = request_of(c);
    struct http_basic_cred cred;
    const char *why = NULL;
    enum s1_dispatch d = S1_DISPATCH_DONE;
    size_t ulen;

    if (req->authorization < 0) {
        s1_conn_respond_text(c, 401, HDR_AUTHN, "credentials required\n");
        return S1_DISPATCH_DONE;
    }
    if (http_basic_parse(http_span_ptr(buf, req->headers[req->authorization].value),
                         req->headers[req->authorization].value.len, &cred, &why) < 0) {
        log_debug("/files: bad credentials: %s", why);
        s1_conn_respond_text(c, 401, HDR_AUTHN, "bad credentials\n");
        return S1_DISPATCH_DONE;
    }
    ulen = cred.user_len < ACCOUNT_USER_MAX ? cred.user_len : ACCOUNT_USER_MAX;
    memcpy(r->user, cred.user, ulen); /* longer names are refused by server2 anyway */
    r->user[ulen] = '\0';
    if (login_limited(c)) /* (a lockout holds the cached credentials too) */
        goto out;
    if (cache_answers(c, &cred, hit)) {
        if (r->read != NULL)
            d = S1_DISPATCH_PENDING; /* answered once the file is read */
        goto out;
    }
    if (!login_reserve(c, cred.pass, cred.pass_len)) {
        r->cred_cacheable = false;
        goto out;
    }
    if (authclient_submit(request_env(c)->auth, FRAME_VERIFY, cred.user, cred.user_len, cred.pass,
                          cred.pass_len, cb, c, &r->auth_handle) < 0) {
        login_answered(c, false, false);
        r->cred_cacheable = false;
        request_unavailable(c);
        goto out;
    }
    r->auth_pending = true;
    d = S1_DISPATCH_PENDING;
out:
    explicit_bzero(&cred, sizeof(cred));
    return d;
}
