/*
 * runfile.h - reads a run back from the run.json that report.c wrote (jansson): the load it
 * ran (the "config" fields that matter), the host, and every point with its window in epoch
 * ms (and the window's cap, window_max_s, absent from files written before it: then 0), exact
 * counters and latency histograms per request type, and resource samples. Used by
 * `loadgen merge`. Every field is checked; an error is one line naming the file and the field.
 * Pure (no global state); thread-safe.
 */
#ifndef LG_RUNFILE_H
#define LG_RUNFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "run.h"

#define LG_RUNFILE_BYTES_MAX (64u << 20)  /* bytes of one run.json */
#define LG_RUNFILE_COUNT_MAX (1ull << 53) /* any integer read (exact in a double) */

/* One run as read from its run.json. */
struct lg_runfile {
    struct lg_run_input id; /* dir, run_id, hostname, url, ncpu (label: set by a merge) */
    struct lg_config cfg;   /* the load it ran: the fields of "config" */
    time_t started;
    bool interrupted;
    uint64_t prepared;
    double prepare_s;
    struct lg_point *points; /* with window_start_ms/window_end_ms, stats and monitor */
    unsigned npoints;        /* 1..LG_SWEEP_MAX */
};

/*
 * Parses the text of a run.json; name is used in messages (e.g. "DIR/run.json"). A merged
 * run is refused (its resources are already per host). Returns 0, or -1 with one line in err
 * (rf is then empty). Release with lg_runfile_release().
 */
int lg_runfile_parse(struct lg_runfile *rf, const char *text, size_t len, const char *name,
                     char *err);
/* Reads DIR/run.json (at most LG_RUNFILE_BYTES_MAX bytes). Returns 0 or -1 with err. */
int lg_runfile_load(struct lg_runfile *rf, const char *dir, char *err);
void lg_runfile_release(struct lg_runfile *rf);

#endif /* LG_RUNFILE_H */
