/*
 * invalbus.h - how the loops of one server2 (the I/O thread in threads mode, every process in
 * processes mode) learn that an account changed, tell each other when every server1 connected
 * to any of them has acknowledged it, and share what the change feed (changefeed.h) knows:
 * how long they may grant leases, and which changes every live server2 has applied
 * (docs/protocol.md, "Invalidation" and "Leases").
 *
 * DESIGN
 * - One bus per server2, in memory every member can reach (MAP_SHARED before the first fork
 *   in processes mode). A robust mutex guards the ring; the per-member fields and the feed's
 *   fields are atomics.
 * - invalbus_publish(user) takes the next sequence number, writes the user into a ring of
 *   INVALBUS_RING entries and wakes every other member through its eventfd. The change feed
 *   publishes every change read from the database (it is no member: INVALBUS_FEED); a loop
 *   publishes itself only a change whose outcome it does not know. An entry of length 0 means
 *   every user (the feed lost track of the changes). Each member reads the ring from its
 *   cursor (invalbus_next), sends INVALIDATE on each of its ready connections (closes them all
 *   for an entry of length 0, so their server1s forget everything), and publishes as
 *   `applied` the highest number that every one of them has acknowledged (or closed); each
 *   rise wakes the others and the feed.
 * - Leases: a member sends LEASE on its connections only while now < grant_until (the feed
 *   moves it on after each renewal of this server2's registration in the database), and
 *   records when it last did (lease_sent_ns). A member that has sent none for
 *   INVALBUS_SILENT_MS has no connection left whose server1 may use its cache through it, so
 *   invalbus_done does not wait for it: a stuck process holds nobody up for longer than that.
 * - A member that falls more than INVALBUS_RING behind cannot know which users changed:
 *   invalbus_next says so, and the member closes its connections and carries on from the
 *   newest entry.
 * - A member that stops (or, in processes mode, dies: the parent calls invalbus_leave) no
 *   longer holds the others up.
 * - feed_wanted / feed_done: a loop that holds the reply to a change it made (change number S
 *   in the database's feed) raises feed_wanted to S and waits until feed_done >= S, which the
 *   feed sets once no live server2 (this one included) is behind S.
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
#define INVALBUS_FEED UINT32_MAX /* the publisher `me` of the change feed: wakes every member */
#define INVALBUS_LEASE_MS 1500      /* the lease a member grants in each LEASE */
#define INVALBUS_LEASE_EVERY_MS 250 /* how often a member sends LEASE while it may */
#define INVALBUS_SILENT_MS (INVALBUS_LEASE_MS + 250) /* no LEASE for this long: nobody leased */
#define INVALBUS_PEER_ID_LEN 32 /* hex characters of this server2's name in the registry */

struct invalbus_entry {
    uint64_t seq; /* 0 = never written */
    uint8_t len;  /* 0: every user */
    char user[ACCOUNT_USER_MAX];
};

struct invalbus_member {
    _Atomic uint64_t applied; /* every invalidation <= this is acknowledged by its server1s */
    _Atomic uint64_t lease_sent_ns; /* when it last sent LEASE (clock_now_ns); 0 = never */
    _Atomic int present;
    int efd; /* eventfd that wakes the member; made by invalbus_init */
};

struct invalbus {
    pthread_mutex_t mu; /* robust; process-shared in processes mode; guards seq and ring */
    uint64_t seq;       /* the last number published; 0 = none yet */
    unsigned n;
    int feed_efd;       /* eventfd that wakes the feed: a member applied, or waits for a change */
    _Atomic uint64_t grant_until_ns; /* members may send LEASE until then; set by the feed */
    _Atomic uint64_t feed_wanted;    /* the highest change number a member waits for */
    _Atomic uint64_t feed_done;      /* every live server2 has applied every change <= this */
    _Atomic uint64_t feed_cursor;    /* the last change the feed published (kept across a
                                      * restart of the feed's process); 0 = not started */
    char peer_id[INVALBUS_PEER_ID_LEN + 1]; /* this server2 in the registry; set at init */
    struct invalbus_entry ring[INVALBUS_RING];
    struct invalbus_member m[];
};

/* Bytes a bus of n members needs. */
size_t invalbus_size(unsigned n);
/*
 * Sets up b (invalbus_size(n) zeroed bytes) with n + 1 eventfds and a random peer id; 0, or -1
 * with errno.
 */
int invalbus_init(struct invalbus *b, unsigned n, bool process_shared);
void invalbus_release(struct invalbus *b);

/* Member `me` starts: present, nothing owed; *cursor = the newest number. */
void invalbus_join(struct invalbus *b, unsigned me, uint64_t *cursor);
void invalbus_leave(struct invalbus *b, unsigned me);
int invalbus_fd(const struct invalbus *b, unsigned me);
/* Empties member me's eventfd (after it woke). */
void invalbus_clear_wake(struct invalbus *b, unsigned me);

/*
 * Announces that user changed (len 0: every user); returns its number. Wakes every member but
 * me (INVALBUS_FEED: all of them).
 */
uint64_t invalbus_publish(struct invalbus *b, unsigned me, const char *user, size_t len);
/* The last number published. */
uint64_t invalbus_seq(struct invalbus *b);
/*
 * The entry after *cursor: 1 = copied into user/len and *cursor advanced; 0 = none newer;
 * -1 = overrun (entries were lost to the ring): *cursor jumps to the newest number.
 */
int invalbus_next(struct invalbus *b, uint64_t *cursor, char *user, uint8_t *len);
/* Member me has applied everything up to `applied`; wakes the others and the feed if news. */
void invalbus_set_applied(struct invalbus *b, unsigned me, uint64_t applied);
/*
 * Whether every present member has applied seq at now_ns, not counting a member that has sent
 * no LEASE for INVALBUS_SILENT_MS (none of its connections is leased any more).
 */
bool invalbus_done(struct invalbus *b, uint64_t seq, uint64_t now_ns);

/* Whether any member is present. */
bool invalbus_any_present(const struct invalbus *b);
/* Member me sent LEASE at now_ns. */
void invalbus_lease_sent(struct invalbus *b, unsigned me, uint64_t now_ns);
/* Whether members may send LEASE at now_ns. */
bool invalbus_may_lease(struct invalbus *b, uint64_t now_ns);
/* The feed: members may send LEASE until until_ns (0: stop now). */
void invalbus_set_grant(struct invalbus *b, uint64_t until_ns);

/* A member waits for change number seq of the database's feed: raises feed_wanted, wakes it. */
void invalbus_want(struct invalbus *b, uint64_t seq);
uint64_t invalbus_wanted(struct invalbus *b);
/* The feed: every live server2 has applied every change <= done; wakes every member. */
void invalbus_set_feed_done(struct invalbus *b, uint64_t done);
uint64_t invalbus_feed_done(struct invalbus *b);
/* The feed's eventfd, and emptying it after it woke. */
int invalbus_feed_fd(const struct invalbus *b);
void invalbus_clear_feed_wake(struct invalbus *b);

#endif /* S2_INVALBUS_H */
