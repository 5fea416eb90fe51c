/*
 * upbudget.h - where PUT bodies being received may go: memory up to --upload-memory in all,
 * temp files up to --upload-temp-max in all, and of each at most --upload-user-share percent
 * for one account, so that one account cannot hold a whole budget while others get 503.
 *
 * The share is a cap per key, as nginx's limit_conn caps connections per key: a body that
 * would take its account over its share of memory goes to a temp file instead; one that would
 * take it over its share of temp space is refused (-EAGAIN: 503 + Retry-After), unless the
 * account holds no temp space at all: one body at a time always fits a share, so an account
 * can send one upload of --max-upload whatever the share. What one account can hold is thus
 * max(share, one body); the time it can hold it is bounded by the rate rule (minrate.h).
 * A body whose size is not known up front (chunked) goes to a temp file and takes its bytes
 * as they arrive (upbudget_grow), by the same rules.
 *
 * DESIGN: shared by every worker and the committer (which releases a body once it is in the
 * store); one mutex guards the totals and the table of accounts holding something (an entry
 * exists only while its account has a body in flight, so the table stays as small as the
 * uploads in flight). It is taken twice per upload (take, release), never per byte.
 */
#ifndef S1_UPBUDGET_H
#define S1_UPBUDGET_H

#include <pthread.h>
#include <stdint.h>

struct upbudget_account;

struct upbudget {
    uint64_t mem_max;    /* --upload-memory */
    uint64_t temp_max;   /* --upload-temp-max; 0: no limit */
    unsigned share_pct;  /* --upload-user-share, 1..100 */
    uint64_t body_mem_max; /* larger bodies never go to memory */
    /* lock guards everything below; taken by itself, never with another lock */
    pthread_mutex_t lock;
    uint64_t mem_used;   /* bytes of bodies held in memory now */
    uint64_t temp_used;  /* bytes of bodies in temp files now */
    struct upbudget_account **buckets;
    size_t nbuckets;     /* a power of two */
    size_t naccounts;    /* accounts holding something now */
};

enum upbudget_place {
    UPBUDGET_MEM = 1,  /* the body goes to memory */
    UPBUDGET_TEMP = 2, /* the body goes to a temp file */
};

/* What one body holds, for upbudget_release. */
struct upbudget_ticket {
    struct upbudget_account *account; /* NULL: holds nothing */
    enum upbudget_place place;
    uint64_t len;
};

void upbudget_init(struct upbudget *b, uint64_t mem_max, uint64_t temp_max, unsigned share_pct,
                   uint64_t body_mem_max);
void upbudget_release_all(struct upbudget *b);

/*
 * Takes len bytes for a body of user: in memory if it fits there (the total and the account's
 * share), else in a temp file if it fits there. Returns the place (the ticket is filled), or
 * -EAGAIN with nothing taken. Thread-safe.
 */
int upbudget_take(struct upbudget *b, const char *user, uint64_t len, struct upbudget_ticket *t);
/*
 * Takes len bytes in a temp file (never memory) for a body of user that will grow
 * (upbudget_grow): UPBUDGET_TEMP, or -EAGAIN with nothing taken. Thread-safe.
 */
int upbudget_take_temp(struct upbudget *b, const char *user, uint64_t len,
                       struct upbudget_ticket *t);
/*
 * Adds add bytes to what the temp file ticket t holds, if they fit the total and the account's
 * share (or it is the account's only body in temp files): 0, or -EAGAIN with t unchanged.
 * Thread-safe.
 */
int upbudget_grow(struct upbudget *b, struct upbudget_ticket *t, uint64_t add);
/* Gives back what t holds (nothing if it holds nothing) and empties it. Thread-safe. */
void upbudget_release(struct upbudget *b, struct upbudget_ticket *t);
/* What user holds now in memory and in temp files (tests, metrics). Thread-safe. */
void upbudget_held(struct upbudget *b, const char *user, uint64_t *mem, uint64_t *temp);

#endif /* S1_UPBUDGET_H */
