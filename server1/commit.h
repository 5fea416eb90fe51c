/*
 * commit.h - durable uploads: temp files under <root>/.s1tmp, start-up recovery, and the
 * committer thread that makes PUT/DELETE durable in groups (group commit) before they are
 * acknowledged.
 *
 * DESIGN: a worker streams a PUT body into a temp file (commit_tmp_open), then, once server2
 * accepted the credentials, tags it with the owner xattr and hands a struct commit_job to
 * commit_submit. The committer thread takes every queued job (after waiting up to
 * --commit-window while other uploads are still being received), flushes their data together
 * (writeback started for all, then fsync each, so one journal commit carries them; or one
 * syncfs with --commit-sync syncfs), then in queue order
 * checks ownership and renames each into place (or unlinks, for DELETE), swaps the prefetched
 * copy, fsyncs each affected directory once, and only then returns every job to its worker via
 * s1_worker_commit_done (a locked list + eventfd; it never touches a worker's event base).
 * Ownership checks and renames all happen on this one thread, so they are serialized.
 */
#ifndef S1_COMMIT_H
#define S1_COMMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "account.h"
#include "files.h"

#define COMMIT_OWNER_XATTR "user.s1owner"
#define COMMIT_TMP_NAME_MAX 48
#define COMMIT_SECONDS_BOUNDS                                                                      \
    {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
#define COMMIT_SECONDS_NBOUNDS 15

struct s1_worker;
struct s1_conn;

enum commit_op {
    COMMIT_PUT,    /* rename tmp_name over name */
    COMMIT_DELETE, /* unlink name */
};

struct commit_job {
    /* set by the worker before commit_submit; read-only for the committer */
    enum commit_op op;
    struct s1_worker *w;                  /* where the answer goes */
    char name[FILES_NAME_MAX + 1];        /* validated, relative to the root */
    size_t name_len;
    char user[ACCOUNT_USER_MAX + 1];      /* who asks */
    int tmp_fd;                           /* PUT: the temp file, data written; else -1 */
    char tmp_name[COMMIT_TMP_NAME_MAX];   /* PUT: its name in FILES_TMP_DIR */
    /* worker thread only */
    struct s1_conn *c;                    /* waiting connection; NULL if it went away */
    /* set by the committer before the job is returned */
    int status;                           /* 201, 204, 403, 404, 409 or 500 */
    STAILQ_ENTRY(commit_job) link;        /* in the committer queue, then the worker's list */
};

STAILQ_HEAD(commit_job_list, commit_job);

struct commit_stats {
    _Atomic uint64_t batches;            /* flush groups */
    _Atomic uint64_t jobs;               /* sum of batch sizes */
    _Atomic uint64_t seconds_bucket[COMMIT_SECONDS_NBOUNDS + 1]; /* not cumulative */
    _Atomic uint64_t seconds_sum_ns;
};

struct committer {
    struct files *files;
    int tmp_fd;                 /* <root>/.s1tmp; immutable after init */
    bool group;                 /* --group-commit */
    uint64_t window_ns;         /* --commit-window */
    bool writable_root;         /* --writable-root */
    bool use_syncfs;            /* --commit-sync syncfs: one syncfs instead of fsync per file */
    _Atomic unsigned long next_tmp;  /* temp file name counter */
    _Atomic int open_uploads;        /* temp files being filled or waiting for auth */
    struct commit_stats stats;       /* committer writes, /metrics reads (relaxed) */
    pthread_t thread;
    bool started;
    /* lock protects queue, queued and stop; cond signals a new job or stop */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct commit_job_list queue;
    size_t queued;
    bool stop;
};

/*
 * Batching rule of the committer (pure): with jobs queued, keep waiting for company only while
 * group commit is on, uploads are still being received, and the window has not ended.
 */
bool commit_should_wait(bool group, size_t queued, int open_uploads, uint64_t now_ns,
                        uint64_t deadline_ns);

/*
 * Creates <root>/.s1tmp if needed, removes what a crash left there (logged as "recovery: ..."),
 * and checks that the filesystem stores user xattrs. Returns -1 with a reason in err
 * (FILES_ERR_LEN).
 */
int committer_init(struct committer *cm, struct files *f, bool group, uint64_t window_ns,
                   bool writable_root, char *err);
int committer_start(struct committer *cm);
/* Commits everything queued, then ends the thread. */
void committer_stop(struct committer *cm);
void committer_release(struct committer *cm);

/* A new temp file for an upload (name into tmp_name); fd or -errno. Thread-safe. */
int commit_tmp_open(struct committer *cm, char *tmp_name);
/* Removes an upload that will not be committed (closes fd). Thread-safe. */
void commit_tmp_abandon(struct committer *cm, int fd, const char *tmp_name);
/* Queues job (ownership passes to the committer until it comes back). Thread-safe. */
void commit_submit(struct committer *cm, struct commit_job *job);
/* Appends the commit metrics in Prometheus text to a malloc'd string (len in *len). */
char *commit_metrics_render(struct committer *cm, size_t *len);

#endif /* S1_COMMIT_H */
