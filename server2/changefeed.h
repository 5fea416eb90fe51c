/*
 * changefeed.h - how one server2 follows the account changes every server2 on the same database
 * makes, and how it tells the others that its server1s have forgotten them
 * (docs/protocol.md, "Invalidation" and "Leases").
 *
 * DESIGN
 * - Every account change is appended to the database's feed in the same atomic operation that
 *   makes it (backend.h), with a number: 1, 2, 3, ... in the order the changes were made.
 * - One change feed per server2 (loopworker 0 starts it: a thread in threads mode, in worker
 *   process 0 in processes mode), on a database connection of its own. It reads the changes
 *   after the last one it saw and publishes each on the server2's bus (invalbus.h), so every
 *   loop sends INVALIDATE to its server1s; once the bus says every loop has them acknowledged,
 *   the change counts as applied here.
 * - Registration: every CHANGEFEED_RENEW_MS (and whenever it applied more) the feed writes, in
 *   the database's registry, this server2's name, the last change applied here and an expiry
 *   CHANGEFEED_LEASE_MS later on the database's clock. Each renewal that succeeds lets the loops
 *   send LEASE until CHANGEFEED_GRANT_MS after the renewal started, and a server1 uses its
 *   cache only under a lease (INVALBUS_LEASE_MS). So when a registration runs out in the
 *   database, every lease granted under it has run out before: a server2 that stops, hangs or
 *   loses its database holds no server1's cache open, and the others need not wait for it.
 * - A loop that made a change holds its answer until no live server2 (this one included) is
 *   behind that change's number (feed_behind); the feed asks the database while a loop waits
 *   (invalbus_want) and publishes the answer as the bus's feed_done.
 * - When it cannot know which changes it missed (a gap in the numbers, a feed that went
 *   backwards after a failover, entries trimmed away), it publishes "every user" on the bus:
 *   every loop closes its connections and their server1s forget everything.
 * - Stopping: no lease is granted from then on; once every loop of this server2 has closed its
 *   connections (left the bus; waited for up to CHANGEFEED_LEAVE_WAIT_MS), the registration is
 *   removed, so that changes made elsewhere stop waiting for it at once. A server2 that dies
 *   leaves it to run out.
 * - Owned by its thread; the bus is the only thing it shares. changefeed_step is the whole
 *   logic, callable without the thread (unit tests drive it with a fake backend).
 */
#ifndef S2_CHANGEFEED_H
#define S2_CHANGEFEED_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "invalbus.h"

#define CHANGEFEED_LEASE_MS 3500 /* a registration's life in the database after a renewal */
#define CHANGEFEED_RENEW_MS 500  /* how often the registration is renewed */
/* how long after the start of a renewal the loops may send LEASE: every lease they grant runs
 * out (INVALBUS_LEASE_MS after it was sent) 500 ms before the registration does */
#define CHANGEFEED_GRANT_MS (CHANGEFEED_LEASE_MS - INVALBUS_LEASE_MS - 500)
#define CHANGEFEED_IDLE_MS 50  /* between two reads of the feed with nothing to do */
#define CHANGEFEED_BUSY_MS 2   /* between two rounds while a change waits */
#define CHANGEFEED_RETRY_MS 250 /* between two connection attempts */
#define CHANGEFEED_BATCH 64     /* changes read at once */
#define CHANGEFEED_QUEUE 1024   /* changes published and not yet applied here, at most */
#define CHANGEFEED_LEAVE_WAIT_MS 35000 /* at a stop, for every loop to finish (their drain) */

struct changefeed_params {
    const struct backend_ops *ops; /* with the feed_* ops */
    const struct backend_url *url;
    struct backend_health *health; /* its epoch moving (a failover) means: connect anew; may
                                    * be NULL */
    struct invalbus *bus;
};

struct changefeed_stats {
    uint64_t changes;  /* changes read and published */
    uint64_t resets;   /* times every server1 was made to forget everything */
    uint64_t renewals; /* registrations renewed */
    uint64_t failures; /* connections given up (connect, read, renew or check failed) */
};

struct changefeed;

/* A feed that connects on its first step. NULL (logged) if the backend has no feed. */
struct changefeed *changefeed_new(const struct changefeed_params *p);
/* Closes the connection and frees f; NULL is ignored. Its registration runs out by itself. */
void changefeed_free(struct changefeed *f);
/*
 * One round at now_ns: (re)connect, read and publish changes, mark the applied ones, renew the
 * registration, answer a waiting loop. Returns how long to wait for the next round (ms); a
 * wake-up of the bus's feed descriptor ends the wait early.
 */
unsigned changefeed_step(struct changefeed *f, uint64_t now_ns);
void changefeed_get_stats(const struct changefeed *f, struct changefeed_stats *out);

/* Starts a thread that runs the feed until changefeed_stop; NULL if it could not (logged). */
struct changefeed *changefeed_start(const struct changefeed_params *p);
/*
 * Stops the thread (leaving the registry once no loop is left, see above), logs the feed's
 * counters and frees f; NULL is ignored. Call it after this process's loops have ended.
 */
void changefeed_stop(struct changefeed *f);

#endif /* S2_CHANGEFEED_H */
