/*
 * auth.c - see auth.h. All per-batch scratch space is allocated once, for batch_max jobs.
 * Duplicate names within a batch are found with a small open-addressing table whose slots are
 * stamped with the batch number, so it never needs clearing.
 */
#include "auth.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "frame.h"
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
    char (*hashes)[PWHASH_STR_MAX];
    struct authcache_key *keys;
    struct backend_op *ops;
    struct dedupe_slot *dedupe;
    size_t dedupe_cap;
    struct s2_auth_stats st;
};

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
    a->hashes = xcalloc(a->batch_max, sizeof(*a->hashes));
    a->keys = xcalloc(a->batch_max, sizeof(*a->keys));
    a->ops = xcalloc(a->batch_max, sizeof(*a->ops));
    a->dedupe_cap = 4;
    while (a->dedupe_cap < 2 * a->batch_max)
        a->dedupe_cap *= 2;
    a->dedupe = xcalloc(a->dedupe_cap, sizeof(*a->dedupe));
    return a;
}

void s2_auth_free(struct s2_auth *a)
{
    if (a == NULL)
        return;
    backend_session_release(&a->session);
    free(a->op_of_job);
    free(a->first_of);
    free(a->hashes);
    free(a->keys);
    free(a->ops);
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

static void finish_verify(struct s2_auth *a, struct s2_job *j, const struct backend_op *op,
                          const struct authcache_key *key)
{
    if (op->status == BACKEND_ST_NOTFOUND) {
        j->status = FRAME_ST_DENIED;
        if (a->cache)
            authcache_remove(a->cache, key);
        return;
    }
    if (op->status != BACKEND_ST_OK) {
        j->status = status_of_op(op->status);
        return;
    }
    if (a->cache && authcache_check(a->cache, key, op->stored, clock_now_ns())) {
        a->st.cache_hits++;
        j->status = FRAME_ST_OK;
        return;
    }
    a->st.verifies++;
    if (pwhash_verify(op->stored, j->pass, j->pass_len)) {
        j->status = FRAME_ST_OK;
        if (a->cache)
            authcache_put(a->cache, key, op->stored, clock_now_ns());
    } else {
        j->status = FRAME_ST_DENIED;
    }
}

void s2_auth_batch(struct s2_auth *a, struct s2_job *jobs, size_t n)
{
    size_t nops = 0;
    int rc;

    if (n > a->batch_max)
        n = a->batch_max; /* caller bug; the rest keep their status */
    a->batch_no++;
    a->st.batches++;
    a->st.jobs += n;

    /* 1-2: validate, find repeats, hash distinct creates (creates go first in ops). */
    for (size_t i = 0; i < n; i++) {
        struct s2_job *j = &jobs[i];
        a->op_of_job[i] = NO_INDEX;
        a->first_of[i] = NO_INDEX;
        j->status = FRAME_ST_INTERNAL;
        if ((j->type != FRAME_CREATE && j->type != FRAME_VERIFY) ||
            !account_username_valid(j->user, j->user_len) ||
            !account_password_valid(j->pass, j->pass_len)) {
            j->status = FRAME_ST_INVALID;
            continue;
        }
        if (j->type != FRAME_CREATE)
            continue;
        a->first_of[i] = dedupe(a, jobs, (int)i, FRAME_CREATE);
        if (a->first_of[i] != NO_INDEX)
            continue;
        a->st.hashes++;
        if (pwhash_hash(a->cost, j->pass, j->pass_len, a->hashes[i]) < 0)
            continue; /* INTERNAL: out of memory for argon2 */
        a->ops[nops] = (struct backend_op){.kind = BACKEND_OP_CREATE,
                                           .user = j->user,
                                           .user_len = j->user_len,
                                           .hash = a->hashes[i]};
        a->op_of_job[i] = (int)nops++;
    }
    for (size_t i = 0; i < n; i++) {
        struct s2_job *j = &jobs[i];
        int first;
        if (j->type != FRAME_VERIFY || j->status == FRAME_ST_INVALID)
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

    /* 5: statuses. */
    for (size_t i = 0; i < n; i++) {
        struct s2_job *j = &jobs[i];
        int o = a->op_of_job[i];
        if (j->status == FRAME_ST_INVALID)
            continue;
        if (j->type == FRAME_CREATE && a->first_of[i] != NO_INDEX)
            continue; /* repeats are settled below, once their first is */
        if (o == NO_INDEX)
            continue; /* hashing failed: INTERNAL */
        if (rc < 0)
            j->status = FRAME_ST_UNAVAILABLE;
        else if (j->type == FRAME_CREATE)
            j->status = status_of_op(a->ops[o].status);
        else
            finish_verify(a, j, &a->ops[o], &a->keys[i]);
    }
    for (size_t i = 0; i < n; i++) {
        struct s2_job *j = &jobs[i];
        if (j->type != FRAME_CREATE || j->status == FRAME_ST_INVALID || a->first_of[i] == NO_INDEX)
            continue;
        uint8_t first = jobs[a->first_of[i]].status;
        j->status = (first == FRAME_ST_OK || first == FRAME_ST_EXISTS) ? FRAME_ST_EXISTS : first;
    }
    for (size_t i = 0; i < n; i++)
        if (jobs[i].status == FRAME_ST_UNAVAILABLE)
            a->st.unavailable++;
}
