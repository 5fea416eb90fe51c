/*
 * commit.c - see commit.h. One batch: decide every job in queue order (seeing the earlier
 * jobs of the same batch), append the accepted ones to the store, one store_sync, publish
 * them in the index, answer all. Uploads are served from the store in every mode: with
 * --prefetch too they are never copied into memory.
 */
#include "commit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pack.h"
#include "xalloc.h"

bool commit_should_wait(bool group, size_t queued, int open_uploads, uint64_t now_ns,
                        uint64_t deadline_ns)
{
    return group && queued > 0 && open_uploads > 0 && now_ns < deadline_ns;
}

/* ---- PUT bodies ---- */

/* An unnamed temp file in the store directory: nothing to clean up after a crash. */
static int tmpfile_open(struct committer *cm)
{
    static _Atomic unsigned long next;
    char name[64];
    int fd = openat(cm->store.dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd < 0 ? -errno : fd;
    /* no O_TMPFILE here: a named file, unlinked at once */
    snprintf(name, sizeof(name), ".up-%ld-%lu", (long)getpid(),
             atomic_fetch_add_explicit(&next, 1, memory_order_relaxed));
    fd = openat(cm->store.dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    unlinkat(cm->store.dir_fd, name, 0);
    return fd;
}

int commit_body_begin(struct committer *cm, struct commit_body *b, uint64_t len,
                      const char *user)
{
    int place;

    *b = (struct commit_body){.fd = -1, .len = len, .sized = true};
    place = upbudget_take(&cm->budget, user, len, &b->held);
    if (place < 0)
        return place;
    if (place == UPBUDGET_MEM) {
        b->mem = malloc(len > 0 ? (size_t)len : 1);
        if (b->mem == NULL) {
            upbudget_release(&cm->budget, &b->held);
            return -ENOMEM;
        }
    } else {
        b->fd = tmpfile_open(cm);
        if (b->fd < 0) {
            upbudget_release(&cm->budget, &b->held);
            return b->fd;
        }
    }
    return 0;
}

int commit_body_begin_unsized(struct committer *cm, struct commit_body *b, const char *user)
{
    int rc;

    *b = (struct commit_body){.fd = -1, .grow_in = &cm->budget};
    rc = upbudget_take_temp(&cm->budget, user, 0, &b->held);
    if (rc < 0)
        return rc;
    b->fd = tmpfile_open(cm);
    if (b->fd < 0) {
        upbudget_release(&cm->budget, &b->held);
        return b->fd;
    }
    return 0;
}

int commit_body_write(struct commit_body *b, const void *p, size_t n)
{
    const char *q = p;

    if (!b->sized) {
        int rc = upbudget_grow(b->grow_in, &b->held, n);
        if (rc < 0)
            return rc;
        b->len += n;
    }
    b->crc = store_crc32(b->crc, p, n);
    if (b->mem != NULL) {
        memcpy(b->mem + b->have, p, n);
        b->have += n;
        return 0;
    }
    while (n > 0) {
        ssize_t w = write(b->fd, q, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        q += w;
        n -= (size_t)w;
        b->have += (uint64_t)w;
    }
    return 0;
}

/* Frees what b holds and gives its memory back to the budget. */
static void body_release(struct committer *cm, struct commit_body *b)
{
    upbudget_release(&cm->budget, &b->held);
    free(b->mem);
    b->mem = NULL;
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}

void commit_body_abandon(struct committer *cm, struct commit_body *b)
{
    body_release(cm, b);
}

void commit_upload_open(struct committer *cm)
{
    atomic_fetch_add_explicit(&cm->open_uploads, 1, memory_order_relaxed);
}

void commit_upload_close(struct committer *cm)
{
    atomic_fetch_sub_explicit(&cm->open_uploads, 1, memory_order_relaxed);
}

int commit_lookup(struct committer *cm, const char *name, size_t len, struct store_found *f)
{
    return store_lookup(&cm->store, name, len, true, f);
}

/* ---- quotas ---- */

enum { QUOTA_USER, QUOTA_STORE };

/*
 * Which quota (QUOTA_*) a PUT that grows user's live bytes by grow (the new size less the
 * version it replaces) would exceed, given user_bytes and total_bytes live now; -1 if none.
 * A PUT that does not grow anything always passes, even over a quota lowered since.
 */
static int quota_exceeded(const struct committer *cm, int64_t grow, uint64_t user_bytes,
                          uint64_t total_bytes)
{
    if (grow <= 0)
        return -1;
    if (cm->user_quota > 0 && user_bytes + (uint64_t)grow > cm->user_quota)
        return QUOTA_USER;
    if (cm->store_max > 0 && total_bytes + (uint64_t)grow > cm->store_max)
        return QUOTA_STORE;
    return -1;
}

int commit_quota_check(struct committer *cm, const char *user, const char *name, size_t len,
                       uint64_t size)
{
    struct store_found f;
    uint64_t user_bytes, total_bytes, old = 0;
    int q;

    if (cm->user_quota == 0 && cm->store_max == 0)
        return 0;
    if (store_lookup(&cm->store, name, len, false, &f) == STORE_FILE &&
        strcmp(f.owner, user) == 0)
        old = f.size; /* (someone else's is refused later with 403) */
    store_usage(&cm->store, user, &user_bytes, &total_bytes);
    q = quota_exceeded(cm, (int64_t)size - (int64_t)old, user_bytes, total_bytes);
    if (q < 0)
        return 0;
    atomic_fetch_add_explicit(&cm->quota_refused[q], 1, memory_order_relaxed);
    return 507;
}

void commit_submit(struct committer *cm, struct commit_job *job)
{
    bool wake;

    pthread_mutex_lock(&cm->lock);
    STAILQ_INSERT_TAIL(&cm->queue, job, link);
    /* wake the committer only if it sleeps for want of work, or waits for company that is
     * no longer coming: a wake-up per upload costs it more than it gains */
    wake = cm->queued++ == 0;
    if (job->op == COMMIT_PUT && /* received: no longer company worth waiting for */
        atomic_fetch_sub_explicit(&cm->open_uploads, 1, memory_order_relaxed) == 1)
        wake = true;
    if (wake)
        pthread_cond_signal(&cm->cond);
    pthread_mutex_unlock(&cm->lock);
}

/* Whether a whiteout still hides something: an operator's file of that name. */
static bool operator_has(void *arg, const char *name)
{
    struct committer *cm = arg;
    struct pack_entry e;
    int fd;

    if (cm->files->pack != NULL) /* --pack: the operator's files are the pack's */
        return pack_lookup(cm->files->pack, name, strlen(name), &e) == 1;
    fd = files_open(cm->files, name, false);
    if (fd >= 0)
        close(fd);
    return fd != -ENOENT && fd != -ENOTDIR;
}

/* One observation of ns into a histogram of COMMIT_SECONDS_BOUNDS (buckets, sum). */
static void hist_record(_Atomic uint64_t *bucket, _Atomic uint64_t *sum_ns, uint64_t ns)
{
    static const double bounds[] = COMMIT_SECONDS_BOUNDS;
    double secs = (double)ns / 1e9;
    size_t i = 0;

    while (i < COMMIT_SECONDS_NBOUNDS && secs > bounds[i])
        i++;
    atomic_fetch_add_explicit(&bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(sum_ns, ns, memory_order_relaxed);
}

static void record_batch(struct committer *cm, size_t n, uint64_t ns, uint64_t publish_ns)
{
    struct commit_stats *s = &cm->stats;

    hist_record(s->seconds_bucket, &s->seconds_sum_ns, ns);
    hist_record(s->publish_bucket, &s->publish_sum_ns, publish_ns);
    if (publish_ns > atomic_load_explicit(&s->publish_max_ns, memory_order_relaxed))
        atomic_store_explicit(&s->publish_max_ns, publish_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->jobs, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->batches, 1, memory_order_relaxed);
}

/* ---- one batch ---- */

struct batch {
    struct commit_job *jobs[COMMIT_BATCH_MAX];
    struct store_pos pos[COMMIT_BATCH_MAX];
    int64_t grow[COMMIT_BATCH_MAX]; /* accepted jobs: live upload bytes they add (or free) */
    size_t n;
};

static bool accepted(const struct commit_job *job)
{
    return job->status == 201 || job->status == 204;
}

/* A name's state just before a job of the batch: what the job is decided on. */
struct name_now {
    char owner[STORE_OWNER_MAX + 1]; /* its uploader; "" for an operator's file */
    uint64_t size;                   /* an upload's bytes (0 for anything else) */
    char etag[FILES_ETAG_MAX + 1];   /* its ETag as a GET sends it, "" if it has none */
    size_t etag_len;
    int64_t last_modified;           /* seconds, -1 if not known */
};

static void version_is(struct name_now *now, uint64_t ino, uint64_t size, int64_t mtime_ns)
{
    now->etag_len = files_etag(ino, size, mtime_ns, now->etag);
    now->last_modified = mtime_ns >= 0 ? mtime_ns / 1000000000 : -1;
}

/*
 * A packed file's state (--pack): 1 and its version, -EISDIR for a directory of the pack (a
 * file lies beneath the name), else 0.
 */
static int packed_state(const struct pack *p, const char *name, size_t len,
                        struct name_now *now)
{
    char prefix[FILES_NAME_MAX + 2];
    struct pack_entry e;

    if (pack_lookup(p, name, len, &e) == 1) {
        version_is(now, pack_entry_ino(p, &e), e.size, e.mtime_s * 1000000000);
        return 1;
    }
    if (len > FILES_NAME_MAX)
        return 0;
    memcpy(prefix, name, len);
    prefix[len] = '/';
    return pack_has_prefix(p, prefix, len + 1) ? -EISDIR : 0;
}

/*
 * The state of the name of job k just before it: the latest accepted job of this batch on
 * the same name, else the store, else the operator's files (the pack with --pack, else the
 * tree under --root). Returns 1 (exists),
 * 0 (absent), -EISDIR (a directory) or -errno; *now describes what exists.
 */
static int name_state(struct committer *cm, const struct batch *b, size_t k,
                      struct name_now *now)
{
    const struct commit_job *job = b->jobs[k];
    struct store_found f;
    struct stat st;
    int st_store, fd;

    *now = (struct name_now){.last_modified = -1};
    for (size_t i = k; i-- > 0;) {
        const struct commit_job *p = b->jobs[i];
        if (!accepted(p) || p->name_len != job->name_len ||
            memcmp(p->name, job->name, job->name_len) != 0)
            continue;
        if (p->op == COMMIT_DELETE)
            return 0;
        memcpy(now->owner, p->user, sizeof(p->user));
        now->size = p->body.len;
        version_is(now, 0, p->body.len, (int64_t)p->version);
        return 1;
    }
    st_store = store_lookup(&cm->store, job->name, job->name_len, false, &f);
    if (st_store == STORE_FILE) {
        memcpy(now->owner, f.owner, sizeof(f.owner));
        now->size = f.size;
        version_is(now, 0, f.size, f.version > 0 ? (int64_t)f.version : -1);
        return 1;
    }
    if (st_store == STORE_WHITEOUT)
        return 0;
    if (cm->files->pack != NULL)
        return packed_state(cm->files->pack, job->name, job->name_len, now);
    fd = files_open(cm->files, job->name, false);
    if (fd == -ENOENT || fd == -ENOTDIR)
        return 0;
    if (fd == -EXDEV || fd == -ELOOP)
        return 1; /* a symlink of the operator's: theirs (and no version a client could know) */
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    close(fd);
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    version_is(now, (uint64_t)st.st_ino, (uint64_t)st.st_size,
               (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
    return 1;
}

/*
 * Whether job's preconditions (RFC 9110 13.2.2) hold for the name as now describes it. A
 * version without a modification time ignores If-Unmodified-Since (13.1.4).
 */
static bool preconditions_hold(const struct commit_job *job, bool exists,
                               const struct name_now *now)
{
    struct httpcond_request q = job->cond;
    struct httpcond_repr rep = {.exists = exists, .etag = now->etag, .etag_len = now->etag_len,
                                .last_modified = now->last_modified};

    if (!q.if_match.present && !q.if_none_match.present && !q.if_unmodified_since.valid)
        return true;
    q.method = HTTPCOND_WRITE;
    q.if_modified_since.valid = false;
    if (now->last_modified < 0)
        q.if_unmodified_since.valid = false;
    return httpcond_evaluate(&q, &rep) == HTTPCOND_PROCEED;
}

/*
 * Job k's quota (QUOTA_*) if it would exceed one, counting the accepted jobs before it in the
 * batch; -1 if not. grow: the live bytes it adds.
 */
static int batch_quota(struct committer *cm, const struct batch *b, size_t k, int64_t grow)
{
    const struct commit_job *job = b->jobs[k];
    uint64_t user_bytes, total_bytes;

    if (cm->user_quota == 0 && cm->store_max == 0)
        return -1;
    store_usage(&cm->store, job->user, &user_bytes, &total_bytes);
    for (size_t i = 0; i < k; i++) {
        if (!accepted(b->jobs[i]))
            continue;
        total_bytes += (uint64_t)b->grow[i]; /* (two's complement: a negative one subtracts) */
        if (strcmp(b->jobs[i]->user, job->user) == 0)
            user_bytes += (uint64_t)b->grow[i];
    }
    return quota_exceeded(cm, grow, user_bytes, total_bytes);
}

/*
 * Sets job k's status: 201/204 when it may go ahead, else its refusal. Preconditions are judged
 * last (RFC 9110 13.2.1: only when the answer would otherwise be a success): 409, 500, 403, a
 * DELETE's 404 and 507 come first.
 */
static void decide(struct committer *cm, struct batch *b, size_t k)
{
    struct commit_job *job = b->jobs[k];
    struct name_now now;
    int exists = name_state(cm, b, k, &now);
    int64_t grow = (job->op == COMMIT_PUT ? (int64_t)job->body.len : 0) - (int64_t)now.size;
    int q;

    if (exists == -EISDIR) {
        job->status = 409;
    } else if (exists < 0) {
        log_warn("cannot look up '%s' before a change: %s", job->name, strerror(-exists));
        job->status = 500;
    } else if (exists &&
               (now.owner[0] == '\0' ? !cm->writable_root : strcmp(now.owner, job->user) != 0)) {
        job->status = 403;
    } else if (job->op == COMMIT_DELETE && !exists) {
        job->status = 404;
    } else if (job->op == COMMIT_PUT && (q = batch_quota(cm, b, k, grow)) >= 0) {
        job->status = 507;
        job->over_quota = true;
        atomic_fetch_add_explicit(&cm->quota_refused[q], 1, memory_order_relaxed);
    } else if (!preconditions_hold(job, exists, &now)) {
        job->status = 412;
    } else {
        job->status = job->op == COMMIT_PUT && !exists ? 201 : 204;
        b->grow[k] = grow;
        if (job->op == COMMIT_PUT)
            job->version = store_next_version(&cm->store);
    }
}

/* After a failed append or sync: every accepted job of the batch is refused. */
static void fail_accepted(struct batch *b, int e)
{
    for (size_t k = 0; k < b->n; k++) {
        if (accepted(b->jobs[k]))
            b->jobs[k]->status = e == ENOSPC || e == EDQUOT ? 507 : 500;
    }
}

/* Posts every job of the batch to its mailbox: one list and one wake-up per mailbox. */
static void answer(struct batch *b)
{
    struct mailbox *to[COMMIT_BATCH_MAX]; /* a job may be freed as soon as it is posted */
    struct mailbox_list list;

    for (size_t k = 0; k < b->n; k++)
        to[k] = b->jobs[k]->reply_to;
    for (size_t k = 0; k < b->n; k++) {
        struct mailbox *mb = to[k];
        if (mb == NULL)
            continue; /* posted with an earlier job's list */
        STAILQ_INIT(&list);
        for (size_t i = k; i < b->n; i++) {
            if (to[i] == mb) {
                STAILQ_INSERT_TAIL(&list, &b->jobs[i]->done, link);
                to[i] = NULL;
            }
        }
        mailbox_post(mb, &list);
    }
}

/*
 * Appends the accepted jobs of b and makes them durable; *appended: how many records. On a
 * failure it drops the records again (*rewound: 0, or -errno if even that failed) and returns
 * -errno.
 */
static int write_batch(struct committer *cm, struct batch *b, size_t *appended, int *rewound)
{
    uint64_t tail = store_tail(&cm->store);
    int rc = 0;

    *appended = 0;
    *rewound = 0;
    for (size_t k = 0; k < b->n && rc == 0; k++) {
        struct commit_job *job = b->jobs[k];
        struct store_body body = {.mem = job->body.mem,
                                  .fd = job->body.fd,
                                  .len = job->body.len,
                                  .has_crc = true,
                                  .data_crc = job->body.crc,
                                  .version = job->version};
        if (!accepted(job))
            continue;
        if (job->op == COMMIT_PUT)
            rc = store_append_put(&cm->store, job->name, job->name_len, job->user, &body,
                                  &b->pos[k]);
        else
            rc = store_append_delete(&cm->store, job->name, job->name_len, &b->pos[k]);
        (*appended)++;
    }
    if (rc == 0 && *appended > 0)
        rc = store_sync(&cm->store);
    if (rc < 0)
        *rewound = store_rewind(&cm->store, tail);
    return rc;
}

static void run_batch(struct committer *cm, struct batch *b)
{
    uint64_t t0 = clock_now_ns(), t_pub;
    size_t appended = 0;
    int rc = 0, rw, spares;

    for (size_t k = 0; k < b->n; k++) {
        b->jobs[k]->status = 0;
        b->grow[k] = 0;
        decide(cm, b, k);
    }
    if ((rc = store_roll(&cm->store)) < 0)
        log_warn("cannot start a new store segment: %s", strerror(-rc));
    rc = write_batch(cm, b, &appended, &rw);
    if ((rc == -ENOSPC || rc == -EDQUOT) && rw == 0 &&
        (spares = store_release_spares(&cm->store)) > 0) {
        /* a full disk while spare segments held blocks: they are given back, so once more */
        log_warn("upload store: the disk is full: removed %d spare segment%s; "
                 "writing the batch again", spares, spares == 1 ? "" : "s");
        rc = write_batch(cm, b, &appended, &rw);
    }
    if (rc < 0) {
        log_error("cannot make a batch of %zu changes durable: %s; %s", appended, strerror(-rc),
                  rw == 0 ? "its records were dropped" : "and dropping its records failed too");
        fail_accepted(b, -rc);
    }
    t_pub = clock_now_ns();
    for (size_t k = 0; k < b->n; k++) {
        struct commit_job *job = b->jobs[k];
        if (accepted(job))
            store_publish(&cm->store, job->name, job->name_len, job->user, &b->pos[k]);
        if (job->op == COMMIT_PUT)
            body_release(cm, &job->body);
    }
    store_settle(&cm->store); /* the batch's versions are visible, or dropped */
    {
        uint64_t t1 = clock_now_ns();
        record_batch(cm, b->n, t1 - t0, t1 - t_pub);
    }
    answer(b);
    b->n = 0;
    if (appended > 0 && (rc = store_compact(&cm->store, operator_has, cm)) < 0)
        log_error("store compaction failed: %s", strerror(-rc));
    store_checkpoint(&cm->store, false); /* (one bounded step; it logs a failure) */
}

static void *committer_thread_main(void *arg)
{
    struct committer *cm = arg;
    struct batch *b = xcalloc(1, sizeof(*b));
    size_t max = cm->group ? ARRAY_SIZE(b->jobs) : 1;

    pthread_setname_np(pthread_self(), "s1-commit");
    pthread_mutex_lock(&cm->lock);
    for (;;) {
        uint64_t deadline;

        while (cm->queued == 0 && !cm->stop) {
            if (store_checkpoint_pending(&cm->store)) {
                /* idle: the checkpoint's next step (bounded: a job waits for one at most) */
                pthread_mutex_unlock(&cm->lock);
                store_checkpoint(&cm->store, false);
                pthread_mutex_lock(&cm->lock);
                continue;
            }
            pthread_cond_wait(&cm->cond, &cm->lock);
        }
        if (cm->queued == 0)
            break; /* stopping, nothing left */
        deadline = clock_now_ns() + cm->window_ns;
        while (!cm->stop &&
               commit_should_wait(cm->group, cm->queued,
                                  atomic_load_explicit(&cm->open_uploads, memory_order_relaxed),
                                  clock_now_ns(), deadline)) {
            struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                                  .tv_nsec = (long)(deadline % 1000000000u)};
            pthread_cond_timedwait(&cm->cond, &cm->lock, &ts);
        }
        while (b->n < max && !STAILQ_EMPTY(&cm->queue)) {
            b->jobs[b->n++] = STAILQ_FIRST(&cm->queue);
            STAILQ_REMOVE_HEAD(&cm->queue, link);
            cm->queued--;
        }
        pthread_mutex_unlock(&cm->lock);
        run_batch(cm, b);
        pthread_mutex_lock(&cm->lock);
    }
    pthread_mutex_unlock(&cm->lock);
    free(b);
    return NULL;
}

/* ---- start-up ---- */

int committer_init(struct committer *cm, struct files *f, bool group, uint64_t window_ns,
                   bool writable_root, const struct commit_budgets *budgets,
                   unsigned store_flags, char *err)
{
    struct store_recovery rec;
    pthread_condattr_t ca;
    uint64_t segment_bytes = STORE_SEGMENT_BYTES;
    const char *seg_env;

    memset(cm, 0, sizeof(*cm));
    cm->files = f;
    cm->group = group;
    cm->window_ns = window_ns;
    cm->writable_root = writable_root;
    STAILQ_INIT(&cm->queue);
    /* test hook: small segments, so that tests see segments roll and compaction run */
    if ((seg_env = getenv("S1_TEST_STORE_SEGMENT_BYTES")) != NULL && atoll(seg_env) > 0)
        segment_bytes = (uint64_t)atoll(seg_env);
    if (store_open(&cm->store, f->root_fd, segment_bytes, store_flags, &rec, err) < 0)
        return -1;
    /* test hook: checkpoints after this many records, so that tests see them written */
    if ((seg_env = getenv("S1_TEST_STORE_CKPT_RECORDS")) != NULL && atoll(seg_env) > 0)
        cm->store.ckpt_every_records = (uint64_t)atoll(seg_env);
    upbudget_init(&cm->budget, budgets->mem, budgets->temp, budgets->user_share,
                  COMMIT_MEM_BODY_MAX);
    if (rec.ckpt_loaded)
        log_info("store: checkpoint of %llu entries at seg %u off %llu loaded, replayed %llu "
                 "records after it in %llu ms",
                 (unsigned long long)rec.ckpt_entries, rec.ckpt_seg,
                 (unsigned long long)rec.ckpt_off, (unsigned long long)rec.records,
                 (unsigned long long)rec.ms);
    else
        log_info("store: no checkpoint used (%s): replayed the whole log, %llu records in "
                 "%llu ms",
                 rec.ckpt_why, (unsigned long long)rec.records, (unsigned long long)rec.ms);
    log_info("recovery: upload store: %u segments, %llu records replayed, %llu files, "
             "%llu deletions; %llu bytes of an unfinished batch dropped; %u segments "
             "started anew",
             rec.segments, (unsigned long long)rec.records, (unsigned long long)rec.files,
             (unsigned long long)rec.whiteouts, (unsigned long long)rec.torn_bytes,
             rec.restarted);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cm->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&cm->lock, NULL);
    cm->initialized = true;
    return 0;
}

int committer_start(struct committer *cm)
{
    int rc = pthread_create(&cm->thread, NULL, committer_thread_main, cm);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    cm->started = true;
    return 0;
}

void committer_stop(struct committer *cm)
{
    if (!cm->started)
        return;
    pthread_mutex_lock(&cm->lock);
    cm->stop = true;
    pthread_cond_signal(&cm->cond);
    pthread_mutex_unlock(&cm->lock);
    pthread_join(cm->thread, NULL);
    cm->started = false;
}

void committer_release(struct committer *cm)
{
    if (!cm->initialized)
        return;
    store_close(&cm->store);
    upbudget_release_all(&cm->budget);
    pthread_cond_destroy(&cm->cond);
    pthread_mutex_destroy(&cm->lock);
    cm->initialized = false;
}

char *commit_metrics_render(struct committer *cm, size_t *len)
{
    static const double bounds[] = COMMIT_SECONDS_BOUNDS;
    const struct commit_stats *s = &cm->stats;
    size_t cap = 16384;
    char *out = xmalloc(cap);
    size_t n = 0;
    uint64_t cum = 0;
    uint64_t batches = atomic_load_explicit(&s->batches, memory_order_relaxed);

#define PUT(...) n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__)
    PUT("# HELP server1_commit_batches_total Group commits (one data flush each).\n"
        "# TYPE server1_commit_batches_total counter\n"
        "server1_commit_batches_total %llu\n",
        (unsigned long long)batches);
    PUT("# HELP server1_commit_batch_size Uploads and deletes made durable per group commit.\n"
        "# TYPE server1_commit_batch_size summary\n"
        "server1_commit_batch_size_sum %llu\nserver1_commit_batch_size_count %llu\n",
        (unsigned long long)atomic_load_explicit(&s->jobs, memory_order_relaxed),
        (unsigned long long)batches);
    PUT("# HELP server1_commit_seconds Time to make one group durable.\n"
        "# TYPE server1_commit_seconds histogram\n");
    for (size_t i = 0; i <= COMMIT_SECONDS_NBOUNDS; i++) {
        cum += atomic_load_explicit(&s->seconds_bucket[i], memory_order_relaxed);
        if (i < COMMIT_SECONDS_NBOUNDS)
            PUT("server1_commit_seconds_bucket{le=\"%g\"} %llu\n", bounds[i],
                (unsigned long long)cum);
        else
            PUT("server1_commit_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    PUT("server1_commit_seconds_sum %.9f\nserver1_commit_seconds_count %llu\n",
        (double)atomic_load_explicit(&s->seconds_sum_ns, memory_order_relaxed) / 1e9,
        (unsigned long long)cum);
    PUT("# HELP server1_commit_publish_seconds Time to publish one durable group in the "
        "index (waits for readers of the index, e.g. a listing).\n"
        "# TYPE server1_commit_publish_seconds histogram\n");
    cum = 0;
    for (size_t i = 0; i <= COMMIT_SECONDS_NBOUNDS; i++) {
        cum += atomic_load_explicit(&s->publish_bucket[i], memory_order_relaxed);
        if (i < COMMIT_SECONDS_NBOUNDS)
            PUT("server1_commit_publish_seconds_bucket{le=\"%g\"} %llu\n", bounds[i],
                (unsigned long long)cum);
        else
            PUT("server1_commit_publish_seconds_bucket{le=\"+Inf\"} %llu\n",
                (unsigned long long)cum);
    }
    PUT("server1_commit_publish_seconds_sum %.9f\nserver1_commit_publish_seconds_count %llu\n"
        "# HELP server1_commit_publish_seconds_max The longest publish since start.\n"
        "# TYPE server1_commit_publish_seconds_max gauge\n"
        "server1_commit_publish_seconds_max %.9f\n",
        (double)atomic_load_explicit(&s->publish_sum_ns, memory_order_relaxed) / 1e9,
        (unsigned long long)cum,
        (double)atomic_load_explicit(&s->publish_max_ns, memory_order_relaxed) / 1e9);
    {
        struct store_stats st;
        store_stats(&cm->store, &st);
        PUT("# HELP server1_store_files Uploaded files (newest versions) in the upload store.\n"
            "# TYPE server1_store_files gauge\nserver1_store_files %llu\n"
            "# HELP server1_store_deletions Names deleted through the server (whiteouts).\n"
            "# TYPE server1_store_deletions gauge\nserver1_store_deletions %llu\n"
            "# HELP server1_store_segments Log segments of the upload store.\n"
            "# TYPE server1_store_segments gauge\nserver1_store_segments %llu\n"
            "# HELP server1_store_bytes Bytes in the log segments.\n"
            "# TYPE server1_store_bytes gauge\nserver1_store_bytes %llu\n"
            "# HELP server1_store_live_bytes Bytes of records that are newest versions.\n"
            "# TYPE server1_store_live_bytes gauge\nserver1_store_live_bytes %llu\n"
            "# HELP server1_store_data_bytes Bytes of uploaded files (what --store-max "
            "limits).\n"
            "# TYPE server1_store_data_bytes gauge\nserver1_store_data_bytes %llu\n"
            "# HELP server1_store_index_bytes Memory of the upload index (each name's newest "
            "record).\n"
            "# TYPE server1_store_index_bytes gauge\nserver1_store_index_bytes %llu\n"
            "# HELP server1_store_pins Pins on log segments held by responses being sent.\n"
            "# TYPE server1_store_pins gauge\nserver1_store_pins %llu\n"
            "# HELP server1_store_zombie_segments Segments compacted away but still pinned.\n"
            "# TYPE server1_store_zombie_segments gauge\nserver1_store_zombie_segments %llu\n"
            "# HELP server1_quota_refusals_total PUTs refused with 507 by a quota.\n"
            "# TYPE server1_quota_refusals_total counter\n"
            "server1_quota_refusals_total{quota=\"user\"} %llu\n"
            "server1_quota_refusals_total{quota=\"store\"} %llu\n"
            "# HELP server1_store_compactions_total Segments removed by compaction.\n"
            "# TYPE server1_store_compactions_total counter\n"
            "server1_store_compactions_total %llu\n"
            "# HELP server1_store_segments_reused_total Segments started in a dead one's file.\n"
            "# TYPE server1_store_segments_reused_total counter\n"
            "server1_store_segments_reused_total %llu\n"
            "# HELP server1_store_checkpoints_total Index checkpoints written since start.\n"
            "# TYPE server1_store_checkpoints_total counter\n"
            "server1_store_checkpoints_total %llu\n"
            "# HELP server1_store_checkpoint_timestamp_seconds When the last complete index "
            "checkpoint was written (0: none).\n"
            "# TYPE server1_store_checkpoint_timestamp_seconds gauge\n"
            "server1_store_checkpoint_timestamp_seconds %llu\n"
            "# HELP server1_store_checkpoint_entries Entries in the last complete index "
            "checkpoint.\n"
            "# TYPE server1_store_checkpoint_entries gauge\n"
            "server1_store_checkpoint_entries %llu\n",
            (unsigned long long)st.files, (unsigned long long)st.whiteouts,
            (unsigned long long)st.segments, (unsigned long long)st.bytes,
            (unsigned long long)st.live_bytes, (unsigned long long)st.data_bytes,
            (unsigned long long)st.index_bytes, (unsigned long long)st.pins,
            (unsigned long long)st.zombies,
            (unsigned long long)atomic_load_explicit(&cm->quota_refused[QUOTA_USER],
                                                     memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&cm->quota_refused[QUOTA_STORE],
                                                     memory_order_relaxed),
            (unsigned long long)st.compactions,
            (unsigned long long)st.reused, (unsigned long long)st.ckpts,
            (unsigned long long)st.ckpt_unix, (unsigned long long)st.ckpt_entries);
    }
#undef PUT
    *len = n;
    return out;
}
