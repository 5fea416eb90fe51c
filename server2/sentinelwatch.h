/*
 * sentinelwatch.h - follows Redis Sentinel's failovers as they are announced: with a
 * redis-sentinel:// backend, a thread subscribed to +switch-master on one Sentinel at a time
 * (the next one when that connection fails) marks the backend health record as moved
 * (backend_health_moved) when the primary of the URL's master changes, so every worker drops
 * its connection to the old primary before its next batch and asks the Sentinels anew, rather
 * than writing to a node until it answers READONLY or goes away.
 *
 * DESIGN: one watcher per server2 (loopworker 0 starts it: a thread in threads mode, in worker
 * process 0 in processes mode, where the health record is shared). It touches nothing but its
 * own hiredis context and the health record (under the record's lock). Missing an announcement
 * while no Sentinel could be reached is covered by marking the record moved on every
 * re-subscription after the first.
 */
#ifndef SENTINELWATCH_H
#define SENTINELWATCH_H

#include "backend.h"

struct sentinelwatch;

/*
 * Starts watching the Sentinels of url (url->sentinel must be set; url and health must outlive
 * the watcher). Returns NULL if the thread could not be started (logged); serving goes on,
 * following failovers by READONLY and closed connections only.
 */
struct sentinelwatch *sentinelwatch_start(const struct backend_url *url,
                                          struct backend_health *health);

/* Stops the thread and frees w; NULL is ignored. */
void sentinelwatch_stop(struct sentinelwatch *w);

/*
 * Whether a +switch-master message's payload ("MASTER OLDIP OLDPORT NEWIP NEWPORT", len bytes)
 * names master. Pure; for tests.
 */
bool sentinelwatch_names(const char *payload, size_t len, const char *master);

#endif /* SENTINELWATCH_H */
