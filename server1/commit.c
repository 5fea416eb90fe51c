/*
 * commit.c - see commit.h. One batch: fsync every temp file's data (or one syncfs with
 * --commit-sync syncfs), read it into memory if --prefetch, then in queue order check owner +
 * rename/unlink + swap the prefetched copy, fsync each touched directory once, answer all.
 * The test hook S1_TEST_NO_XATTR=1 makes the start-up xattr probe fail as on a filesystem
 * without user xattrs.
 */
#include "commit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "worker.h"
#include "xalloc.h"

#define COMMIT_PROBE_NAME "probe"

bool commit_should_wait(bool group, size_t queued, int open_uploads, uint64_t now_ns,
                        uint64_t deadline_ns)
{
    return group && queued > 0 && open_uploads > 0 && now_ns < deadline_ns;
}

/* ---- temp files ---- */

int commit_tmp_open(struct committer *cm, char *tmp_name)
{
    unsigned long n = atomic_fetch_add_explicit(&cm->next_tmp, 1, memory_order_relaxed);
    int fd;

    snprintf(tmp_name, COMMIT_TMP_NAME_MAX, "up-%ld-%lu", (long)getpid(), n);
    fd = openat(cm->tmp_fd, tmp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return -errno;
    atomic_fetch_add_explicit(&cm->open_uploads, 1, memory_order_relaxed);
    return fd;
}

void commit_tmp_abandon(struct committer *cm, int fd, const char *tmp_name)
{
    if (unlinkat(cm->tmp_fd, tmp_name, 0) < 0)
        log_warn("cannot remove temp file '%s': %d", tmp_name, errno);
    if (fd >= 0)
        close(fd);
    atomic_fetch_sub_explicit(&cm->open_uploads, 1, memory_order_relaxed);
}

void commit_submit(struct committer *cm, struct commit_job *job)
{
    pthread_mutex_lock(&cm->lock);
    STAILQ_INSERT_TAIL(&cm->queue, job, link);
    cm->queued++;
    if (job->op == COMMIT_PUT)
        atomic_fetch_sub_explicit(&cm->open_uploads, 1, memory_order_relaxed);
    pthread_cond_signal(&cm->cond);
    pthread_mutex_unlock(&cm->lock);
}

/* ---- one batch ---- */

/* Splits name into its directory ("" for the root) and returns the last segment. */
static const char *split_name(const char *name, char *dir)
{
    const char *slash = strrchr(name, '/');

    if (slash == NULL) {
        dir[0] = '\0';
        return name;
    }
    memcpy(dir, name, (size_t)(slash - name));
    dir[slash - name] = '\0';
    return slash + 1;
}

/*
 * Whether base exists in dirfd (1) or not (0), with its owner ("" if none: an operator file or
 * a symlink); -EISDIR for a directory, -errno on other errors.
 */
static int target_owner(int dirfd, const char *base, char *owner, size_t cap)
{
    struct stat st;
    ssize_t n;
    int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

    owner[0] = '\0';
    if (fd < 0)
        return errno == ENOENT ? 0 : errno == ELOOP ? 1 : -errno;
    if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return -EISDIR;
    }
    n = fgetxattr(fd, COMMIT_OWNER_XATTR, owner, cap - 1);
    owner[n > 0 ? n : 0] = '\0';
    close(fd);
    return 1;
}

struct batch_dir {
    int fd;
    dev_t dev;
    ino_t ino;
    bool failed;
};

struct batch {
    struct commit_job *jobs[256];
    struct files_blob *blobs[256];
    int dir_of[256]; /* index into dirs, or -1 */
    size_t n;
    struct batch_dir dirs[256];
    size_t ndirs;
};

/* Opens dir for this batch (shared by all its jobs); index or -errno. */
static int batch_dir(struct committer *cm, struct batch *b, const char *dir)
{
    struct stat st;
    int fd = files_open_dir(cm->files, dir);

    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    for (size_t i = 0; i < b->ndirs; i++) {
        if (b->dirs[i].dev == st.st_dev && b->dirs[i].ino == st.st_ino) {
            close(fd);
            return (int)i;
        }
    }
    b->dirs[b->ndirs] = (struct batch_dir){.fd = fd, .dev = st.st_dev, .ino = st.st_ino};
    return (int)b->ndirs++;
}

static int err_status(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
    case EXDEV:
    case ELOOP:
        return 404;
    case EISDIR:
    case ENOTEMPTY:
    case EEXIST:
        return 409;
    default:
        return 500;
    }
}

/* Ownership check, then rename or unlink; sets job->status. */
static void apply_one(struct committer *cm, struct batch *b, size_t k)
{
    struct commit_job *job = b->jobs[k];
    char dir[FILES_NAME_MAX + 1];
    char owner[ACCOUNT_USER_MAX + 2];
    const char *base = split_name(job->name, dir);
    int di = batch_dir(cm, b, dir);
    int dfd;
    int exists;

    if (di < 0) {
        job->status = err_status(-di);
        return;
    }
    dfd = b->dirs[di].fd;
    exists = target_owner(dfd, base, owner, sizeof(owner));
    if (exists < 0) {
        job->status = err_status(-exists);
        return;
    }
    if (exists && (owner[0] == '\0' ? !cm->writable_root : strcmp(owner, job->user) != 0)) {
        job->status = 403;
        return;
    }
    if (job->op == COMMIT_DELETE) {
        if (!exists) {
            job->status = 404;
            return;
        }
        if (unlinkat(dfd, base, 0) < 0) {
            job->status = err_status(errno);
            return;
        }
        files_replace(cm->files, job->name, job->name_len, NULL);
        job->status = 204;
    } else {
        if (renameat(cm->tmp_fd, job->tmp_name, dfd, base) < 0) {
            job->status = err_status(errno);
            return;
        }
        job->tmp_name[0] = '\0'; /* renamed: nothing to clean up */
        files_replace(cm->files, job->name, job->name_len, b->blobs[k]);
        b->blobs[k] = NULL;
        job->status = exists ? 204 : 201;
    }
    b->dir_of[k] = di;
}

/* fsync (or syncfs) the data of every PUT; a failed one gets 500. */
static void flush_data(struct committer *cm, struct batch *b)
{
    if (cm->use_syncfs) {
        if (syncfs(cm->files->root_fd) == 0)
            return;
        log_error("syncfs failed: %d", errno);
        for (size_t k = 0; k < b->n; k++)
            b->jobs[k]->status = 500;
        return;
    }
    /* start every file's writeback first: the first fsync's journal commit then carries the
     * others' metadata too, and the remaining fsyncs mostly find nothing left to do */
    for (size_t k = 0; k < b->n; k++) {
        struct commit_job *job = b->jobs[k];
        if (job->op == COMMIT_PUT &&
            sync_file_range(job->tmp_fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0)
            log_debug("sync_file_range of upload '%s': %d", job->name, errno);
    }
    for (size_t k = 0; k < b->n; k++) {
        struct commit_job *job = b->jobs[k];
        if (job->op == COMMIT_PUT && fsync(job->tmp_fd) < 0) {
            log_error("fsync of upload '%s' failed: %d", job->name, errno);
            job->status = 500;
        }
    }
}

/* With --prefetch: the new versions' bytes, read before they become visible. */
static void load_blobs(struct committer *cm, struct batch *b)
{
    for (size_t k = 0; k < b->n; k++) {
        struct commit_job *job = b->jobs[k];
        struct stat st;
        void *buf = NULL;
        long got;

        if (job->op != COMMIT_PUT || job->status != 0)
            continue;
        if (fstat(job->tmp_fd, &st) < 0 ||
            (got = files_read_direct(cm->files, job->tmp_fd, (size_t)st.st_size, &buf)) < 0) {
            log_error("cannot read back upload '%s'", job->name);
            job->status = 500;
            continue;
        }
        b->blobs[k] = files_blob_new(buf, (size_t)got);
    }
}

static void record_batch(struct committer *cm, size_t n, uint64_t ns)
{
    static const double bounds[] = COMMIT_SECONDS_BOUNDS;
    struct commit_stats *s = &cm->stats;
    double secs = (double)ns / 1e9;
    size_t i = 0;

    while (i < COMMIT_SECONDS_NBOUNDS && secs > bounds[i])
        i++;
    atomic_fetch_add_explicit(&s->seconds_bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->seconds_sum_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->jobs, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->batches, 1, memory_order_relaxed);
}

static void run_batch(struct committer *cm, struct batch *b)
{
    uint64_t t0 = clock_now_ns();
    bool any_put = false;

    for (size_t k = 0; k < b->n; k++) {
        b->jobs[k]->status = 0;
        b->dir_of[k] = -1;
        b->blobs[k] = NULL;
        any_put |= b->jobs[k]->op == COMMIT_PUT;
    }
    if (any_put)
        flush_data(cm, b);
    if (any_put && cm->files->mode == FILES_PREFETCH)
        load_blobs(cm, b);
    for (size_t k = 0; k < b->n; k++) {
        if (b->jobs[k]->status == 0)
            apply_one(cm, b, k);
    }
    /* the names: each touched directory once */
    for (size_t i = 0; i < b->ndirs; i++) {
        if (fsync(b->dirs[i].fd) < 0) {
            log_error("fsync of a directory failed: %d", errno);
            b->dirs[i].failed = true;
        }
    }
    for (size_t k = 0; k < b->n; k++) {
        struct commit_job *job = b->jobs[k];
        if (b->dir_of[k] >= 0 && b->dirs[b->dir_of[k]].failed)
            job->status = 500;
        files_blob_unref(b->blobs[k]);
        if (job->op == COMMIT_PUT) {
            if (job->tmp_name[0] != '\0' && unlinkat(cm->tmp_fd, job->tmp_name, 0) < 0)
                log_warn("cannot remove temp file '%s': %d", job->tmp_name, errno);
            close(job->tmp_fd);
            job->tmp_fd = -1;
        }
    }
    for (size_t i = 0; i < b->ndirs; i++)
        close(b->dirs[i].fd);
    b->ndirs = 0;
    record_batch(cm, b->n, clock_now_ns() - t0);
    for (size_t k = 0; k < b->n; k++)
        s1_worker_commit_done(b->jobs[k]->w, b->jobs[k]);
    b->n = 0;
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

        while (cm->queued == 0 && !cm->stop)
            pthread_cond_wait(&cm->cond, &cm->lock);
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

/* Removes every entry of the temp dir (what a crash left); returns how many. */
static int recover(struct committer *cm, char *err)
{
    char ebuf[128];
    struct dirent *de;
    int dfd = openat(cm->tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    int n = 0;

    if (d == NULL) {
        snprintf(err, FILES_ERR_LEN, "cannot list '%s': %s", FILES_TMP_DIR,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(cm->tmp_fd, de->d_name, 0) < 0) {
            snprintf(err, FILES_ERR_LEN, "cannot remove '%s/%s': %s", FILES_TMP_DIR,
                     de->d_name, strerror_r(errno, ebuf, sizeof(ebuf)));
            closedir(d);
            return -1;
        }
        n++;
    }
    closedir(d);
    if (n > 0 && fsync(cm->tmp_fd) < 0) {
        snprintf(err, FILES_ERR_LEN, "cannot fsync '%s': %s", FILES_TMP_DIR,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    return n;
}

/* Checks that a user xattr can be stored on a file in the temp dir. */
static int probe_xattr(struct committer *cm, char *err)
{
    char ebuf[128];
    const char *v = getenv("S1_TEST_NO_XATTR");
    int fd = openat(cm->tmp_fd, COMMIT_PROBE_NAME, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = 0;
    bool refused;

    if (fd < 0) {
        snprintf(err, FILES_ERR_LEN, "cannot create a file in '%s': %s", FILES_TMP_DIR,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (v != NULL && strcmp(v, "1") == 0) {
        errno = ENOTSUP;
        refused = true;
    } else {
        refused = fsetxattr(fd, COMMIT_OWNER_XATTR, "probe", 5, 0) < 0;
    }
    if (refused) {
        snprintf(err, FILES_ERR_LEN,
                 "the filesystem of --root refuses user xattrs (%s), which uploads need to "
                 "record owners; use ext4/xfs/btrfs, or run with --read-only",
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        rc = -1;
    }
    close(fd);
    unlinkat(cm->tmp_fd, COMMIT_PROBE_NAME, 0);
    return rc;
}

int committer_init(struct committer *cm, struct files *f, bool group, uint64_t window_ns,
                   bool writable_root, char *err)
{
    pthread_condattr_t ca;
    char ebuf[128];
    int n;

    memset(cm, 0, sizeof(*cm));
    cm->files = f;
    cm->group = group;
    cm->window_ns = window_ns;
    cm->writable_root = writable_root;
    STAILQ_INIT(&cm->queue);
    if (mkdirat(f->root_fd, FILES_TMP_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(err, FILES_ERR_LEN, "cannot create '%s' under --root: %s (or use --read-only)",
                 FILES_TMP_DIR, strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    cm->tmp_fd = openat(f->root_fd, FILES_TMP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                       O_CLOEXEC);
    if (cm->tmp_fd < 0) {
        snprintf(err, FILES_ERR_LEN, "cannot open '%s' under --root: %s", FILES_TMP_DIR,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (fsync(f->root_fd) < 0) { /* the temp dir itself must survive a crash */
        snprintf(err, FILES_ERR_LEN, "cannot fsync --root: %s",
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_close;
    }
    if (probe_xattr(cm, err) < 0)
        goto err_close;
    n = recover(cm, err);
    if (n < 0)
        goto err_close;
    log_info("recovery: removed %d unfinished uploads", n);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cm->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&cm->lock, NULL);
    return 0;

err_close:
    close(cm->tmp_fd);
    cm->tmp_fd = -1;
    return -1;
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
    if (cm->tmp_fd < 0)
        return;
    close(cm->tmp_fd);
    cm->tmp_fd = -1;
    pthread_cond_destroy(&cm->cond);
    pthread_mutex_destroy(&cm->lock);
}

char *commit_metrics_render(struct committer *cm, size_t *len)
{
    static const double bounds[] = COMMIT_SECONDS_BOUNDS;
    const struct commit_stats *s = &cm->stats;
    size_t cap = 4096;
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
#undef PUT
    *len = n;
    return out;
}
