/*
 * invalbus.h - how the loops of one server2 (the I/O thread in threads mode, every process in
 * processes mode) tell each other that an account changed, and learn when every server1
 * connected to any of them has acknowledged it (common/PROTOCOL.md, "Invalidation").
 *
 * DESIGN
 * - One bus per server2, in memory every member can reach (MAP_SHARED before the first fork
 *   in processes mode). A robust mutex guards the ring; the per-member fields are atomics.
 * - invalbus_publish(user) takes the next sequence number, writes the user into a ring of
 *   INVALBUS_RING entries and wakes every other member through its eventfd. Each member reads
 *   the ring from its cursor (invalbus_next), sends INVALIDATE on each of its ready
 *   connections, and publishes as `applied` the highest number that every one of them has
 *   acknowledged (or closed); each rise wakes the others, so the member that published an
 *   account change answers it once every present member has applied it (invalbus_done).
 * - A member that falls more than INVALBUS_RING behind cannot know which users changed:
 *   invalbus_next says so, and the member closes its connections (their server1s forget
 *   everything when a connection drops) and carries on from the newest entry.
 * - A member that stops (or, in processes mode, dies: the parent calls invalbus_leave) no
 *   longer holds the others up.
 */
#ifndef S2_INVALBUS_H
#define S2_INVALBUS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "account.h"

#define INVALBUS_RING 256

struct invalbus_entry {
    uint64_t seq; /* 0 = never written */
    uint8_t len;
    char user[ACCOUNT_USER_MAX];
};

struct invalbus_member {
    _Atomic uint64_t applied; /* every invalidation <= this is acknowledged by its server1s */
    _Atomic int present;
    int efd; /* eventfd that wakes the member; made by invalbus_init */
};

struct invalbus {
    pthread_mutex_t mu; /* robust; process-shared in processes mode; guards seq and ring */
    uint64_t seq;       /* the last number published; 0 = none yet */
    unsigned n;
    struct invalbus_entry ring[INVALBUS_RING];
    struct invalbus_member m[];
};

/* Bytes a bus of n members needs. */
size_t invalbus_size(unsigned n);
/* Sets up b (invalbus_size(n) zeroed bytes) with n eventfds; 0, or -1 with errno. */
int invalbus_init(struct invalbus *b, unsigned n, bool process_shared);
void invalbus_release(struct invalbus *b);

/* Member `me` starts: present, nothing owed; *cursor = the newest number. */
void invalbus_join(struct invalbus *b, unsigned me, uint64_t *cursor);
void invalbus_leave(struct invalbus *b, unsigned me);
int invalbus_fd(const struct invalbus *b, unsigned me);
/* Empties member me's eventfd (after it woke). */
void invalbus_clear_wake(struct invalbus *b, unsigned me);

/* Announces that user changed; returns its number. Wakes every other member. */
uint64_t invalbus_publish(struct invalbus *b, unsigned me, const char *user, size_t len);
/*
 * The entry after *cursor: 1 = copied into user/len and *cursor advanced; 0 = none newer;
 * -1 = overrun (entries were lost to the ring): *cursor jumps to the newest number.
 */
int invalbus_next(struct invalbus *b, uint64_t *cursor, char *user, uint8_t *len);
/* Member me has applied everything up to `applied`; wakes the others if that is news. */
void invalbus_set_applied(struct invalbus *b, unsigned me, uint64_t applied);
/* Whether every present member has applied seq. */
bool invalbus_done(struct invalbus *b, uint64_t seq);

#endif /* S2_INVALBUS_H */
