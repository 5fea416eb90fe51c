/*
 * commit.h - durable uploads: receiving a PUT body, and the committer thread that makes PUTs
 * and DELETEs durable in groups (group commit) in the upload store (store.h) before they are
 * acknowledged.
 *
 * DESIGN: a worker receives a PUT body into memory (each up to COMMIT_MEM_BODY_MAX, all of
 * them together up to --upload-memory, one account's up to its --upload-user-share of it) or
 * else into an unnamed temp file (up to --upload-temp-max, and the share; commit_body_*), then,
 * once server2 accepted the credentials, hands a struct commit_job to commit_submit. The
 * committer thread takes every queued job (after waiting up to --commit-window while other
 * uploads are still being received) and, for the whole batch: decides each job in queue order
 * (ownership: the store's owner of the name, or an operator's file under --root, which only
 * --writable-root lets users replace or delete; then the request's preconditions, If-Match,
 * If-None-Match and If-Unmodified-Since, against the name's version as the jobs before it in
 * the queue leave it), appends one log record per accepted job, makes them all durable with
 * one fdatasync (store_sync), publishes them in the store's index, and only then posts every
 * job to the mailbox it names (mailbox.h: one post and one wake-up per mailbox per batch),
 * where the job's own deliver function answers it on the submitting worker's thread; the
 * committer knows nothing of workers, connections or handlers. All decisions and index changes
 * happen on this one thread, so they are serialized.
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
#include "httpcond.h"
#include "mailbox.h"
#include "store.h"
#include "upbudget.h"

#define COMMIT_MEM_BODY_MAX (16u << 20) /* larger PUT bodies always go to a temp file */
#define COMMIT_BATCH_MAX 256              /* changes made durable by one flush, at most */
#define COMMIT_SECONDS_BOUNDS                                                                      \
    {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
#define COMMIT_SECONDS_NBOUNDS 15
#define COMMIT_COND_MAX 1024 /* bytes of a job's If-Match and If-None-Match values together */

struct s1_conn;

enum commit_op {
    COMMIT_PUT,    /* store the body as name's newest version */
    COMMIT_DELETE, /* remove name */
};

/* A PUT body being received, then handed to the committer with the job. */
struct commit_body {
    char *mem;     /* the whole body (len <= COMMIT_MEM_BODY_MAX), malloc'd; else NULL */
    int fd;        /* else an unnamed temp file in the store directory; else -1 */
    uint64_t len;  /* Content-Length (sized: false: the bytes received so far) */
    uint64_t have; /* bytes received so far */
    bool sized;    /* len was known up front; else (chunked) held grows with the body */
    struct upbudget *grow_in; /* unsized: the budget held grows in */
    uint32_t crc;  /* CRC-32 of those bytes (for the store record, computed on the worker) */
    struct upbudget_ticket held; /* what it holds of the budgets (of its account's share) */
};

struct commit_job {
    /* set by the worker before commit_submit; read-only for the committer */
    enum commit_op op;
    struct mailbox *reply_to;             /* where the finished job is posted ... */
    struct mailbox_msg done;              /* ... with the function that answers it there */
    char name[FILES_NAME_MAX + 1];        /* validated, relative to the root */
    size_t name_len;
    char user[ACCOUNT_USER_MAX + 1];      /* who asks */
    struct commit_body body;              /* PUT: the body, all received */
    /* the request's preconditions (method HTTPCOND_WRITE; If-Modified-Since is not used): the
     * list values point into cond_text */
    struct httpcond_request cond;
    char cond_text[COMMIT_COND_MAX];
    /* worker thread only */
    struct s1_conn *c;                    /* waiting connection; NULL if it went away */
    /* set by the committer before the job is returned */
    int status;                           /* 201, 204, 403, 404, 409, 412, 500 or 507 */
    bool over_quota;                      /* 507 because of --user-quota or --store-max */
    uint64_t version;                     /* a stored PUT's version (store_next_version) */
    STAILQ_ENTRY(commit_job) link;        /* in the committer queue */
};

STAILQ_HEAD(commit_job_list, commit_job);

struct commit_stats {
    _Atomic uint64_t batches;            /* flush groups */
    _Atomic uint64_t jobs;               /* sum of batch sizes */
    _Atomic uint64_t seconds_bucket[COMMIT_SECONDS_NBOUNDS + 1]; /* not cumulative */
    _Atomic uint64_t seconds_sum_ns;
    /* publishing a durable batch in the index (the write lock taken once per change): what
     * a reader holding the read lock delays */
    _Atomic uint64_t publish_bucket[COMMIT_SECONDS_NBOUNDS + 1]; /* not cumulative */
    _Atomic uint64_t publish_sum_ns;
    _Atomic uint64_t publish_max_ns;
};

struct committer {
    struct files *files;
    struct store store;         /* lookups from any thread, changes on the committer thread */
    bool group;                 /* --group-commit */
    uint64_t window_ns;         /* --commit-window */
    bool writable_root;         /* --writable-root */
    _Atomic int open_uploads;        /* PUTs from their head until submitted or refused:
                                        the company the committer may wait for */
    struct upbudget budget;          /* --upload-memory, --upload-temp-max, and each
                                        account's share of them (thread-safe) */
    uint64_t user_quota;             /* --user-quota: live upload bytes per owner (0: none) */
    uint64_t store_max;              /* --store-max: live upload bytes in all (0: none) */
    _Atomic uint64_t quota_refused[2]; /* PUTs refused by the user quota, by --store-max */
    struct commit_stats stats;       /* committer writes, /metrics reads (relaxed) */
    pthread_t thread;
    bool started;
    bool initialized;           /* committer_init succeeded */
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

/* The budgets of bodies being received (upbudget.h). */
struct commit_budgets {
    uint64_t mem;        /* --upload-memory */
    uint64_t temp;       /* --upload-temp-max (0: none) */
    unsigned user_share; /* --upload-user-share, percent */
};

/*
 * Opens the upload store (rebuilding its index from the log; logged as "recovery: ..."), with
 * store_flags for store_open (STORE_ORDER_BY_OWNER with --private-uploads). No upload is read
 * into memory, with --prefetch or without. Returns -1 with a reason in err (FILES_ERR_LEN).
 */
int committer_init(struct committer *cm, struct files *f, bool group, uint64_t window_ns,
                   bool writable_root, const struct commit_budgets *budgets,
                   unsigned store_flags, char *err);
int committer_start(struct committer *cm);
/* Commits everything queued, then ends the thread. */
void committer_stop(struct committer *cm);
void committer_release(struct committer *cm);

/*
 * Gets b ready to receive len bytes of user's upload (memory or a temp file, by the budgets
 * and user's share of them: upbudget.h). 0 or -errno: -EAGAIN when there is no temp space for
 * it now, in all or in user's share. Thread-safe.
 */
int commit_body_begin(struct committer *cm, struct commit_body *b, uint64_t len,
                      const char *user);
/*
 * Gets b ready to receive a body of user whose size is not known up front (chunked): always a
 * temp file, whose room in the budgets grows as the bytes come (upbudget_grow). 0 or -errno
 * as commit_body_begin. Thread-safe.
 */
int commit_body_begin_unsized(struct committer *cm, struct commit_body *b, const char *user);
/*
 * Appends n received bytes (sized: n <= len - have). 0 or -errno: for an unsized body -EAGAIN
 * when its growth does not fit the temp space now (nothing written).
 */
int commit_body_write(struct commit_body *b, const void *p, size_t n);
/*
 * A PUT's head arrived (commit_upload_open), and it was refused or dropped before
 * commit_submit took it (commit_upload_close): the committer waits for open uploads, within
 * --commit-window, to make them durable with the same flush. Thread-safe.
 */
void commit_upload_open(struct committer *cm);
void commit_upload_close(struct committer *cm);
/* Drops a body that will not be committed. Thread-safe. */
void commit_body_abandon(struct committer *cm, struct commit_body *b);
/*
 * The uploaded state of name (enum store_state, or -errno) and what is known of it: for
 * STORE_FILE a new fd of the segment (close it) with the bytes at f->off, and a pin to drop
 * with store_unpin once they are sent (store_lookup with want_fd). Thread-safe.
 */
int commit_lookup(struct committer *cm, const char *name, size_t len, struct store_found *f);
/*
 * Whether user may store len bytes as name now, by the quotas and the live bytes the index
 * holds (the committer judges again, with the uploads committed meanwhile): 0, or 507 after
 * counting the refusal. Called once the credentials are accepted, before the body is read.
 * Thread-safe.
 */
int commit_quota_check(struct committer *cm, const char *user, const char *name, size_t len,
                       uint64_t size);
/* Queues job (ownership passes to the committer until it comes back). Thread-safe. */
void commit_submit(struct committer *cm, struct commit_job *job);
/* Appends the commit metrics in Prometheus text to a malloc'd string (len in *len). */
char *commit_metrics_render(struct committer *cm, size_t *len);

#endif /* S1_COMMIT_H */
