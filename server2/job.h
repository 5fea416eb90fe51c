/*
 * job.h - one CREATE, VERIFY, SETPASS or DELETE request on its way from the connection that read it (the I/O
 * loop) to the code that answers it (auth.c, in a worker thread or in the same process), and
 * the reply on its way back. A job names its connection by slot and generation, never by
 * pointer, so a reply for a connection that closed meanwhile is recognised and dropped.
 */
#ifndef JOB_H
#define JOB_H

#include <stdint.h>

#include "account.h"
#include "frame.h"

struct s2_job {
    uint32_t conn_slot; /* index in the I/O loop's connection table */
    uint32_t conn_gen;  /* generation of that slot when the job was read */
    uint64_t id;        /* request id, echoed in the reply */
    uint64_t deadline_ns; /* clock_now_ns() after which the answer is of no use; 0 = none */
    uint8_t type;       /* FRAME_CREATE, FRAME_VERIFY, FRAME_SETPASS or FRAME_DELETE */
    uint8_t status;     /* out: enum frame_status */
    uint8_t flags;      /* S2_JOB_* */
    uint8_t user_len;
    uint16_t pass_len;
    uint16_t new_len; /* SETPASS */
    char user[ACCOUNT_USER_MAX + 1]; /* NUL-terminated */
    char pass[ACCOUNT_PASS_MAX + 1]; /* NUL-terminated; never log it; wiped after use */
    char new_pass[ACCOUNT_PASS_MAX + 1]; /* SETPASS: the new password; same care */
    uint8_t token[FRAME_TOKEN_SIZE];     /* CREATE: its creation token */
    uint64_t change_seq; /* out, SETPASS/DELETE ok: the change's number in the database's feed */
    uint32_t retry_ms;   /* out, LIMITED: how long until the user may try again */
};

/* An account change: SETPASS or DELETE. */
static inline int s2_job_is_change(const struct s2_job *j)
{
    return j->type == FRAME_SETPASS || j->type == FRAME_DELETE;
}

#define S2_JOB_CHEAP 1u    /* a VERIFY the auth cache should answer: no argon2 expected */
#define S2_JOB_REJECTED 2u /* over --max-queue: answered UNAVAILABLE without any work */

struct s2_reply {
    uint32_t conn_slot;
    uint32_t conn_gen;
    uint64_t id;
    uint8_t status;      /* enum frame_status */
    uint64_t change_seq; /* see s2_job */
    uint32_t retry_ms;   /* see s2_job */
};

/* The reply to j, once j->status is set. */
static inline struct s2_reply s2_reply_of(const struct s2_job *j)
{
    return (struct s2_reply){.conn_slot = j->conn_slot,
                             .conn_gen = j->conn_gen,
                             .id = j->id,
                             .status = j->status,
                             .change_seq = j->change_seq,
                             .retry_ms = j->retry_ms};
}

#endif /* JOB_H */
