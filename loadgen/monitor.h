/*
 * monitor.h - the resource monitor: a thread that samples /proc every --sample-ms during a
 * point's measured window and turns the samples into averages: CPU (in cores) of each watched
 * process group and of loadgen itself, their RSS, storage bytes and context switches; the
 * machine's CPU utilization; each real disk's utilization and bytes; loopback bytes; and,
 * with --redis-port, Redis's command count and busy time from INFO commandstats; and, with
 * --thread-hz, the software stations of the stack's worker threads (thrsample.h).
 * DESIGN: lg_monitor_start() spawns the thread; it owns all sampling state. The main thread
 * talks to it only through the mutex-protected stop flag and the window's end (window.h: the
 * monitor ends at it and seals it); lg_monitor_stop() joins it and only then reads the results.
 * The thread sampler is a second thread with the same window.
 */
#ifndef LG_MONITOR_H
#define LG_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "thrsample.h"
#include "window.h"

#define LG_MON_GROUPS (1 + 2 * LG_WATCH_MAX)
#define LG_MON_DISKS 16

struct lg_proc_usage {
    char name[LG_NAME_MAX];
    bool is_loadgen;
    unsigned nproc;    /* processes seen at once, at most */
    unsigned nthreads; /* their threads, at most */
    double cpu_cores;  /* mean CPU use over the window, 1.0 = one core busy */
    double capacity;   /* cores it can use: min(threads, cores of the machine) */
    double rss_max_bytes;
    double read_Bps; /* bytes fetched from storage per second (/proc/PID/io) */
    double write_Bps;
    double ctxsw_ps; /* voluntary + involuntary context switches per second */
    bool io_ok;      /* /proc/PID/io was readable */
};

struct lg_disk_usage {
    char name[32];
    double util; /* fraction of the window with I/O in flight */
    double read_Bps;
    double write_Bps;
};

struct lg_monitor_result {
    unsigned nsamples;
    double window_s; /* between the first and the last sample */
    unsigned ncpu;
    double machine_cpu; /* fraction of all cores busy */
    struct lg_proc_usage procs[LG_MON_GROUPS];
    unsigned nprocs;
    struct lg_disk_usage disks[LG_MON_DISKS];
    unsigned ndisks;
    double lo_Bps; /* loopback bytes received per second */
    bool redis_ok;
    double redis_ops_ps; /* commands per second */
    double redis_util;   /* time in commands / window: Redis's main thread */
    struct lg_thr_result sw; /* software stations (thread samples); sw.ticks 0: none */
};

struct lg_monitor;

struct lg_monitor *lg_monitor_new(const struct lg_config *cfg);
/*
 * Starts sampling: first sample at first_ns, then every --sample-ms, the last at the window's
 * end (which may move later while the point runs) or when stopped, whichever comes first
 * (CLOCK_MONOTONIC). win must outlive lg_monitor_stop(). Returns 0, or -1 if the thread could
 * not start.
 */
int lg_monitor_start(struct lg_monitor *m, uint64_t first_ns, struct lg_window *win);
/* Takes a last sample if the window is still open, joins the thread, computes *out. */
void lg_monitor_stop(struct lg_monitor *m, struct lg_monitor_result *out);
void lg_monitor_free(struct lg_monitor *m);

/* Sums calls and usec over every cmdstat_* line of INFO commandstats text except INFO's own. */
int lg_monitor_parse_cmdstats(const char *text, uint64_t *calls, uint64_t *usec);

#endif /* LG_MONITOR_H */
