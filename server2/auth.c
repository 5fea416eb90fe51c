/*
 * auth.c - see auth.h. All per-batch scratch space is allocated once, for batch_max jobs.
 * Duplicate names within a batch are found with a small open-addressing table whose slots are
 * stamped with the batch number, so it never needs clearing.
 */
#include "auth.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "clock.h"
#include "frame.h"
#include "record.h"
#include "xalloc.h"

#define NO_INDEX (-1)

struct dedupe_slot {
    uint64_t stamp; /* batch number that filled the slot; older = empty */
    int job;        /* index of the first job with this (kind, user) */
    uint8_t kind;
};

struct s2_auth {
    struct backend_session session;
    struct authcache *cache; /* shared, may be NULL */
    enum pwhash_cost cost;
    size_t batch_max;
    uint64_t batch_no;
    /* scratch, batch_max entries each (dedupe: 2 * batch_max rounded up to a power of 2) */
    int *op_of_job; /* backend op index serving job i, or NO_INDEX */
    int *first_of;  /* for a repeated CREATE: the job it repeats, else NO_INDEX */
    char (*records)[BACKEND_HASH_MAX]; /* a CREATE's record: its token and its hash */
    struct authcache_key *keys;
    struct backend_op *ops;
    unsigned *fails_left; /* per LOOKUP op: failed logins its user may still have now */
    int *denied;          /* the group's DENIED verifications (indices in group_jobs), to be
                           * charged, then answered */
    size_t ndenied;
    struct s2_job *group_jobs; /* the jobs of the group being worked */
    struct dedupe_slot *dedupe;
    size_t dedupe_cap;
    struct s2_auth_hasher hasher;
    uint64_t group_hash_ns; /* AUTH_GROUP_HASH_NS unless a test changes it */
    const char *dummy; /* pwhash_dummy(cost), made at the first need if not at start */
    const struct s2_auth_sink *sink;
    size_t unflushed; /* jobs handed to sink->settled since its last flush */
    struct s2_auth_stats st;
};

static const struct s2_auth_hasher default_hasher = {.hash = pwhash_hash, .verify = pwhash_verify};

struct s2_auth *s2_auth_new(const struct backend_ops *ops, const struct backend_url *url,
                            struct backend_health *health, struct authcache *cache,
                            enum pwhash_cost cost, size_t batch_max)
{
    struct s2_auth *a = xcalloc(1, sizeof(*a));

    backend_session_init(&a->session, ops, url, health);
    a->cache = cache;
    a->cost = cost;
    a->batch_max = batch_max ? batch_max : 1;
    a->op_of_job = xcalloc(a->batch_max, sizeof(*a->op_of_job));
    a->first_of = xcalloc(a->batch_max, sizeof(*a->first_of));
    a->records = xcalloc(a->batch_max, sizeof(*a->records));
    a->keys = xcalloc(a->batch_max, sizeof(*a->keys));
    a->ops = xcalloc(a->batch_max, sizeof(*a->ops));
    a->fails_left = xcalloc(a->batch_max, sizeof(*a->fails_left));
    a->denied = xcalloc(a->batch_max, sizeof(*a->denied));
    a->dedupe_cap = 4;
    while (a->dedupe_cap < 2 * a->batch_max)
        a->dedupe_cap *= 2;
    a->dedupe = xcalloc(a->dedupe_cap, sizeof(*a->dedupe));
    a->hasher = default_hasher;
    a->group_hash_ns = AUTH_GROUP_HASH_NS;
    a->dummy = pwhash_dummy(cost);
    return a;
}

void s2_auth_free(struct s2_auth *a)
{
    if (a == NULL)
        return;
    backend_session_release(&a->session);
    free(a->op_of_job);
    free(a->first_of);
    free(a->records);
    free(a->keys);
    free(a->ops);
    free(a->fails_left);
    free(a->denied);
    free(a->dedupe);
    free(a);
}

bool s2_auth_connect(struct s2_auth *a)
{
    return backend_session_probe(&a->session, clock_now_ns());
}

bool s2_auth_connected(const struct s2_auth *a)
{
    return a->session.conn != NULL;
}

void s2_auth_get_stats(const struct s2_auth *a, struct s2_auth_stats *out)
{
    *out = a->st;
}

const struct backend_session *s2_auth_session(const struct s2_auth *a)
{
    return &a->session;
}

void s2_auth_set_hasher(struct s2_auth *a, const struct s2_auth_hasher *h)
{
    a->hasher = h ? *h : default_hasher;
}

void s2_auth_set_group_hash(struct s2_auth *a, uint64_t ns)
{
    a->group_hash_ns = ns;
}

void s2_auth_mark_cheap(struct authcache *cache, struct s2_job *jobs, size_t n)
{
    struct authcache_key key;
    uint64_t now;

    if (cache == NULL)
        return;
    now = clock_now_ns();
    for (size_t i = 0; i < n; i++) {
        struct s2_job *j = &jobs[i];
        if (j->type != FRAME_VERIFY)
            continue;
        authcache_key(cache, j->user, j->user_len, j->pass, j->pass_len, &key);
        if (authcache_contains(cache, &key, now))
            j->flags |= S2_JOB_CHEAP;
    }
    sodium_memzero(&key, sizeof(key));
}

size_t s2_auth_take_max(const struct s2_auth *a)
{
    return a->cost == PWHASH_MIN ? a->batch_max : 1;
}

static uint64_t fnv1a(uint8_t kind, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ kind;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Index of an earlier job of this kind with the same user, or NO_INDEX after recording job. */
static int dedupe(struct s2_auth *a, struct s2_job *jobs, int job, uint8_t kind)
{
    const struct s2_job *j = &jobs[job];
    size_t mask = a->dedupe_cap - 1;
    size_t i = (size_t)fnv1a(kind, j->user, j->user_len) & mask;

    for (;;) {
        struct dedupe_slot *s = &a->dedupe[i];
        if (s->stamp != a->batch_no) {
            s->stamp = a->batch_no;
            s->job = job;
            s->kind = kind;
            return NO_INDEX;
        }
        if (s->kind == kind && jobs[s->job].user_len == j->user_len &&
            memcmp(jobs[s->job].user, j->user, j->user_len) == 0)
            return s->job;
        i = (i + 1) & mask;
    }
}

static uint8_t status_of_op(enum backend_op_status st)
{
    switch (st) {
    case BACKEND_ST_OK:
        return FRAME_ST_OK;
    case BACKEND_ST_EXISTS:
        return FRAME_ST_EXISTS;
    case BACKEND_ST_NOTFOUND:
        return FRAME_ST_DENIED;
    case BACKEND_ST_UNAVAILABLE:
        return FRAME_ST_UNAVAILABLE;
    case BACKEND_ST_ERROR:
    default:
        return FRAME_ST_INTERNAL;
    }
}

static bool expired(const struct s2_job *j, uint64_t now_ns)
{
    return j->deadline_ns != 0 && now_ns >= j->deadline_ns;
}

/* Job j's status is final: hand it on. */
static void settle(struct s2_auth *a, struct s2_job *j, uint8_t status)
{
    j->status = status;
    if (status == FRAME_ST_UNAVAILABLE)
        a->st.unavailable++;
    else if (status == FRAME_ST_EXPIRED)
        a->st.expired++;
    if (a->sink && a->sink->settled) {
        a->sink->settled(a->sink->arg, j);
        a->unflushed++;
    }
}

/* Before CPU-heavy work: let the caller send what is settled so far. */
static void flush(struct s2_auth *a)
{
    if (a->unflushed > 0 && a->sink && a->sink->flush)
        a->sink->flush(a->sink->arg);
    a->unflushed = 0;
}

/*
 * A LOOKUP that found a deleted account's tombstone, or a locked account (server2 admin lock),
 * found no user: the same argon2 work and the same DENIED as a wrong password, so that nobody
 * learns from server1's 401 whether an account is locked, deleted or was never there.
 */
static bool found_nobody(const struct backend_op *op)
{
    return op->status == BACKEND_ST_NOTFOUND ||
           (op->status == BACKEND_ST_OK &&
            (record_deleted(op->stored) || record_locked(op->stored)));
}

/* No such user: the same argon2 work as a wrong password's. False if j expired (settled). */
static bool verify_dummy(struct s2_auth *a, struct s2_job *j)
{
    if (expired(j, clock_now_ns())) {
        settle(a, j, FRAME_ST_EXPIRED);
        return false;
    }
    if (a->dummy == NULL)
        a->dummy = pwhash_dummy(a->cost);
    if (a->dummy != NULL) {
        flush(a);
        a->st.dummy_verifies++;
        (void)a->hasher.verify(a->dummy, j->pass, j->pass_len);
    }
    return true;
}

/* ---- the login limit (backend.h) ---- */

static bool limit_on(const struct s2_auth *a)
{
    return a->session.url->login_fail_burst > 0;
}

/* How long op's user must wait before failing again: 0 = it may now. */
static uint32_t limit_wait_ms(const struct s2_auth *a, const struct backend_op *op)
{
    const struct backend_url *u = a->session.url;
    uint64_t tolerance = (uint64_t)(u->login_fail_burst - 1) * u->login_fail_interval_ms;

    return op->fail_ahead_ms > tolerance ? (uint32_t)(op->fail_ahead_ms - tolerance) : 0;
}

/* How many failures op's user may still have now (each takes DUR/N of the TAT's room). */
static unsigned limit_fails_left(const struct s2_auth *a, const struct backend_op *op)
{
    const struct backend_url *u = a->session.url;
    uint64_t used = ((uint64_t)op->fail_ahead_ms + u->login_fail_interval_ms - 1) /
                    u->login_fail_interval_ms;

    return used >= u->login_fail_burst ? 0 : (unsigned)(u->login_fail_burst - used);
}

static void settle_limited(struct s2_auth *a, struct s2_job *j, uint32_t retry_ms)
{
    j->retry_ms = retry_ms ? retry_ms : 1;
    a->st.limited++;
    settle(a, j, FRAME_ST_LIMITED);
}

/*
 * Whether the job of LOOKUP op o may try a password: else it is answered LIMITED. A failure
 * the group already counted against the user takes one of its failures left.
 */
static bool limit_allows(struct s2_auth *a, struct s2_job *j, int o)
{
    uint32_t wait;

    if (!limit_on(a))
        return true;
    wait = limit_wait_ms(a, &a->ops[o]);
    if (wait == 0 && a->fails_left[o] > 0)
        return true;
    settle_limited(a, j, wait ? wait : a->session.url->login_fail_interval_ms);
    return false;
}

/* A wrong password (or no such user) for the job of LOOKUP op o: DENIED, charged first. */
static void deny(struct s2_auth *a, struct s2_job *j, int o)
{
    if (!limit_on(a)) {
        settle(a, j, FRAME_ST_DENIED);
        return;
    }
    if (o >= 0 && a->fails_left[o] > 0)
        a->fails_left[o]--;
    a->denied[a->ndenied++] = (int)(j - a->group_jobs);
}

/*
 * The group's failed logins go to the database in one round trip, then are answered DENIED
 * (whether the charge was written or not: the answer is the same).
 */
static void charge_denied(struct s2_auth *a)
{
    size_t n = a->ndenied;

    if (n == 0)
        return;
    for (size_t k = 0; k < n; k++) {
        const struct s2_job *j = &a->group_jobs[a->denied[k]];
        a->ops[k] = (struct backend_op){
            .kind = BACKEND_OP_FAIL, .user = j->user, .user_len = j->user_len};
    }
    if (backend_session_batch(&a->session, a->ops, n, clock_now_ns()) == 0)
        for (size_t k = 0; k < n; k++)
            a->st.fails_charged += a->ops[k].status == BACKEND_ST_OK;
    for (size_t k = 0; k < n; k++)
        settle(a, &a->group_jobs[a->denied[k]], FRAME_ST_DENIED);
    a->ndenied = 0;
}

static void finish_verify(struct s2_auth *a, struct s2_job *j, int o,
                          const struct authcache_key *key)
{
    const struct backend_op *op = &a->ops[o];

    if (op->status != BACKEND_ST_OK && op->status != BACKEND_ST_NOTFOUND) {
        settle(a, j, status_of_op(op->status));
        return;
    }
    if (!limit_allows(a, j, o))
        return;
    if (found_nobody(op)) {
        if (a->cache)
            authcache_remove(a->cache, key);
        if (verify_dummy(a, j))
            deny(a, j, o);
        return;
    }
    if (a->cache && authcache_check(a->cache, key, record_hash(op->stored), clock_now_ns())) {
        a->st.cache_hits++;
        settle(a, j, FRAME_ST_OK);
        return;
    }
    if (expired(j, clock_now_ns())) {
        settle(a, j, FRAME_ST_EXPIRED);
        return;
    }
    flush(a);
    a->st.verifies++;
    if (a->hasher.verify(record_hash(op->stored), j->pass, j->pass_len)) {
        if (a->cache)
            authcache_put(a->cache, key, record_hash(op->stored), clock_now_ns());
        settle(a, j, FRAME_ST_OK);
    } else {
        deny(a, j, o);
    }
}

/* Marks a job that is not settled yet (its status until then). */
#define PENDING 0xff

/*
 * One account change, alone: look the user up, check the current password (argon2, like a
 * VERIFY, never from the cache), hash the new one (SETPASS), then replace the stored hash iff
 * it is still the one just checked (a compare-and-set, so of two concurrent changes with the
 * same old password only one wins; the other gets DENIED). A deletion replaces it with
 * RECORD_TOMBSTONE. Two round trips; changes are rare. The login limit holds as for a VERIFY:
 * a wrong current password is a failed login.
 */
static void run_change(struct s2_auth *a, struct s2_job *j)
{
    struct backend_op *op = &a->ops[0];
    char stored[BACKEND_HASH_MAX];
    char fresh[PWHASH_STR_MAX];
    uint8_t st;

    a->batch_no++;
    a->group_jobs = j;
    j->status = PENDING;
    j->change_seq = 0;
    if (j->flags & S2_JOB_REJECTED) { /* over --max-queue */
        settle(a, j, FRAME_ST_UNAVAILABLE);
        return;
    }
    if (!account_username_valid(j->user, j->user_len) ||
        !account_password_valid(j->pass, j->pass_len) ||
        (j->type == FRAME_SETPASS && !account_password_valid(j->new_pass, j->new_len))) {
        settle(a, j, FRAME_ST_INVALID);
        return;
    }
    if (expired(j, clock_now_ns())) {
        settle(a, j, FRAME_ST_EXPIRED);
        return;
    }
    *op = (struct backend_op){.kind = BACKEND_OP_LOOKUP, .user = j->user, .user_len = j->user_len};
    if (backend_session_batch(&a->session, op, 1, clock_now_ns()) < 0) {
        settle(a, j, FRAME_ST_UNAVAILABLE);
        return;
    }
    if (op->status != BACKEND_ST_OK && op->status != BACKEND_ST_NOTFOUND) {
        settle(a, j, status_of_op(op->status));
        return;
    }
    a->fails_left[0] = limit_on(a) ? limit_fails_left(a, op) : 0;
    if (!limit_allows(a, j, 0))
        return;
    if (found_nobody(op)) {
        if (verify_dummy(a, j)) {
            deny(a, j, 0);
            charge_denied(a);
        }
        return;
    }
    memcpy(stored, op->stored, sizeof(stored));
    flush(a);
    a->st.verifies++;
    if (!a->hasher.verify(record_hash(stored), j->pass, j->pass_len)) {
        deny(a, j, 0);
        charge_denied(a);
        return;
    }
    if (j->type == FRAME_SETPASS) {
        a->st.hashes++;
        if (a->hasher.hash(a->cost, j->new_pass, j->new_len, fresh) < 0) {
            settle(a, j, FRAME_ST_INTERNAL);
            return;
        }
    } else {
        memcpy(fresh, RECORD_TOMBSTONE, sizeof(RECORD_TOMBSTONE));
    }
    *op = (struct backend_op){.kind = BACKEND_OP_REPLACE,
                              .user = j->user,
                              .user_len = j->user_len,
                              .hash = fresh,
                              .expect = stored};
    /* not expired from here on: the change costs the work done; say what became of it */
    if (backend_session_batch(&a->session, op, 1, clock_now_ns()) < 0)
        st = FRAME_ST_UNAVAILABLE; /* may have been applied: the caller invalidates anyway */
    else if (op->status == BACKEND_ST_NOTFOUND)
        st = FRAME_ST_DENIED; /* changed or deleted meanwhile */
    else
        st = status_of_op(op->status);
    j->change_seq = st == FRAME_ST_OK ? op->change_seq : 0;
    if (a->cache)
        authcache_invalidate_user(a->cache, j->user, j->user_len);
    a->st.changes += st == FRAME_ST_OK;
    sodium_memzero(fresh, sizeof(fresh));
    settle(a, j, st);
}

/*
 * Works one group starting at jobs[start] (see auth.h for the steps); returns the index after
 * the group's last job.
 */
static size_t run_group(struct s2_auth *a, struct s2_job *jobs, size_t start, size_t n)
{
    uint64_t hash_ns = 0;
    size_t nops = 0;
    size_t end;
    int rc;

    if (s2_job_is_change(&jobs[start])) {
        run_change(a, &jobs[start]);
        return start + 1;
    }
    a->batch_no++; /* repeats are found within a group only */
    a->group_jobs = jobs;

    /* 1-3: validate, drop the expired, hash distinct creates one at a time. */
    for (end = start; end < n; end++) {
        struct s2_job *j = &jobs[end];
        if (end > start && (hash_ns >= a->group_hash_ns ||
                            (hash_ns > 0 && a->cost != PWHASH_MIN) || s2_job_is_change(j)))
            break;
        a->op_of_job[end] = NO_INDEX;
        a->first_of[end] = NO_INDEX;
        j->status = PENDING;
        if (j->flags & S2_JOB_REJECTED) { /* over --max-queue */
            settle(a, j, FRAME_ST_UNAVAILABLE);
            continue;
        }
        if ((j->type != FRAME_CREATE && j->type != FRAME_VERIFY) ||
            !account_username_valid(j->user, j->user_len) ||
            !account_password_valid(j->pass, j->pass_len)) {
            settle(a, j, FRAME_ST_INVALID);
            continue;
        }
        if (expired(j, clock_now_ns())) {
            settle(a, j, FRAME_ST_EXPIRED);
            continue;
        }
        if (j->type != FRAME_CREATE)
            continue;
        a->first_of[end] = dedupe(a, jobs, (int)end, FRAME_CREATE);
        if (a->first_of[end] != NO_INDEX)
            continue;
        uint64_t t0 = clock_now_ns();
        char hash[PWHASH_STR_MAX];
        flush(a);
        a->st.hashes++;
        if (a->hasher.hash(a->cost, j->pass, j->pass_len, hash) < 0 ||
            record_make(j->token, hash, a->records[end], sizeof(a->records[end])) < 0)
            settle(a, j, FRAME_ST_INTERNAL); /* out of memory for argon2 */
        hash_ns += clock_now_ns() - t0;
    }

    /* Just before the round trip: drop what expired meanwhile, then collect the ops. */
    uint64_t now = clock_now_ns();
    for (size_t i = start; i < end; i++) {
        struct s2_job *j = &jobs[i];
        if (j->status != PENDING)
            continue;
        if (expired(j, now) && !(j->type == FRAME_CREATE && a->first_of[i] != NO_INDEX)) {
            settle(a, j, FRAME_ST_EXPIRED);
            continue;
        }
        if (j->type != FRAME_CREATE || a->first_of[i] != NO_INDEX)
            continue;
        a->ops[nops] = (struct backend_op){.kind = BACKEND_OP_CREATE,
                                           .user = j->user,
                                           .user_len = j->user_len,
                                           .hash = a->records[i]};
        a->op_of_job[i] = (int)nops++;
    }
    for (size_t i = start; i < end; i++) {
        struct s2_job *j = &jobs[i];
        int first;
        if (j->type != FRAME_VERIFY || j->status != PENDING)
            continue;
        if (a->cache)
            authcache_key(a->cache, j->user, j->user_len, j->pass, j->pass_len, &a->keys[i]);
        first = dedupe(a, jobs, (int)i, FRAME_VERIFY);
        if (first != NO_INDEX) {
            a->op_of_job[i] = a->op_of_job[first];
            continue;
        }
        a->ops[nops] = (struct backend_op){
            .kind = BACKEND_OP_LOOKUP, .user = j->user, .user_len = j->user_len};
        a->op_of_job[i] = (int)nops++;
    }

    /* 4: one round trip. */
    rc = nops > 0 ? backend_session_batch(&a->session, a->ops, nops, clock_now_ns()) : 0;
    for (size_t o = 0; rc == 0 && limit_on(a) && o < nops; o++)
        if (a->ops[o].kind == BACKEND_OP_LOOKUP)
            a->fails_left[o] = limit_fails_left(a, &a->ops[o]);

    /* Creates first (no more CPU work for them), then their repeats. */
    for (size_t i = start; i < end; i++) {
        struct s2_job *j = &jobs[i];
        int o = a->op_of_job[i];
        if (j->type != FRAME_CREATE || j->status != PENDING || a->first_of[i] != NO_INDEX)
            continue;
        settle(a, j, rc < 0 ? FRAME_ST_UNAVAILABLE : status_of_op(a->ops[o].status));
    }
    for (size_t i = start; i < end; i++) {
        struct s2_job *j = &jobs[i];
        if (j->type != FRAME_CREATE || j->status != PENDING)
            continue;
        const struct s2_job *f = &jobs[a->first_of[i]];
        bool same = memcmp(f->token, j->token, sizeof(j->token)) == 0; /* sent twice */
        settle(a, j,
               same || (f->status != FRAME_ST_OK && f->status != FRAME_ST_EXISTS) ? f->status
                                                                                  : FRAME_ST_EXISTS);
    }
    /* 5: verifies, one hash at a time, each answered when done. */
    for (size_t i = start; i < end; i++) {
        struct s2_job *j = &jobs[i];
        if (j->type != FRAME_VERIFY || j->status != PENDING)
            continue;
        if (rc < 0)
            settle(a, j, FRAME_ST_UNAVAILABLE);
        else
            finish_verify(a, j, a->op_of_job[i], &a->keys[i]);
    }
    charge_denied(a);
    return end;
}

void s2_auth_run(struct s2_auth *a, struct s2_job *jobs, size_t n, const struct s2_auth_sink *sink)
{
    if (n > a->batch_max)
        n = a->batch_max; /* caller bug; the rest keep their status */
    a->st.batches++;
    a->st.jobs += n;
    a->sink = sink;
    a->unflushed = 0;
    for (size_t i = 0; i < n;)
        i = run_group(a, jobs, i, n);
    flush(a);
    a->sink = NULL;
}

void s2_auth_batch(struct s2_auth *a, struct s2_job *jobs, size_t n)
{
    s2_auth_run(a, jobs, n, NULL);
}
