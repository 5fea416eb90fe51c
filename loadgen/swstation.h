/*
 * swstation.h - software servers: which threads of the watched processes hold a request while
 * they are busy, how one sample of a thread's wait channel (/proc/PID/task/TID/wchan) reads as
 * busy or idle, and how the threads group into the stations of the queueing model (model.h).
 * The rules, per thread name (the kernel's comm):
 *   lg-wrk-N (loadgen's event loops), s1-wrk-N (server1's), s2-wrk-N and s2-proc-N (server2's
 *   workers, threads or processes), redis-server (Redis's main thread): an event loop is idle
 *   only while it waits in epoll for new work;
 *   s1-commit (server1's committer): idle only while it waits for work on its condition
 *   variable with no deadline (a futex wait with no timeout: /proc/PID/task/TID/syscall, read
 *   only then); its timed waits are the group commit's window, when it holds queued uploads;
 *   anything else is busy: running or waiting for a core (wchan "0"), or blocked elsewhere (a
 *   MySQL round trip in poll, a Redis reply in a socket read, O_DIRECT or fdatasync in the
 *   disk, a lock). Other threads (mariadbd's, Redis's helpers, loadgen's user threads with
 *   --model threads) are not sampled: what they wait in does not say whether they hold work.
 * Threads with the same name but for a trailing number form one station of k servers. Who picks
 * the thread matters to the model: loadgen's users and server1's client connections stay on
 * one thread each ("pinned": k queues, one per thread), while server1 deals its requests to
 * server2 round-robin over connections to every worker (one k-server queue). Redis's main
 * thread is "nested": it answers server2's workers, whose blocked time already holds it, so it
 * is reported but not a station of the model. server1's committer is a batch station: it makes
 * every upload waiting when it starts a cycle durable with one flush (group commit), and
 * answers them together. Pure: text in, figures out.
 */
#ifndef LG_SWSTATION_H
#define LG_SWSTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_SW_NAME 24         /* a station's name: a thread name without its number */
#define LG_SW_WCHAN 48        /* a wait channel's name kept for the report */
#define LG_SW_WAITS 4         /* distinct blocked wait channels counted per thread */
#define LG_SW_MAX_STATIONS 12 /* stations of one point; more are left out */

enum lg_sw_idle {
    LG_SW_IDLE_EPOLL, /* an event loop: waits for work in epoll */
    LG_SW_IDLE_FUTEX, /* a queue's consumer: waits for work on a condition variable, untimed */
};

enum lg_sw_state {
    LG_SW_RUN,     /* running or runnable */
    LG_SW_BLOCKED, /* asleep, but not waiting for work: holds a request */
    LG_SW_IDLE,    /* waiting for work */
};

struct lg_sw_rule {
    const char *name; /* thread name, or its prefix when it ends in '-' */
    enum lg_sw_idle idle;
    bool nested; /* serves another station's blocking calls: reported, not modelled */
    bool pinned; /* each connection stays on one thread: a queue per thread */
    bool batch;  /* serves what is waiting in cycles, one flush each (model.h) */
};

/* The rule of a thread name, or NULL when such threads are not sampled. */
const struct lg_sw_rule *lg_sw_rule_of(const char *comm);
/* Whether the station of that name (a thread name without its number) is a batch station. */
bool lg_sw_is_batch(const char *station);
/*
 * One sample of a thread's wait channel as read from /proc (trailing newline allowed; "0" or
 * empty: the thread is running or runnable).
 */
enum lg_sw_state lg_sw_classify(const struct lg_sw_rule *rule, const char *wchan);
/*
 * True when the wait channel alone cannot decide: a futex wait of a queue's consumer. Then
 * lg_sw_classify_syscall() decides from /proc/PID/task/TID/syscall read next.
 */
bool lg_sw_wants_syscall(const struct lg_sw_rule *rule, const char *wchan);
/*
 * A futex wait with no timeout is idle; "running", another system call or a timed wait is
 * busy (running; blocked); an unreadable text is blocked.
 */
enum lg_sw_state lg_sw_classify_syscall(const char *syscall);
/* The station a thread belongs to: its name without a trailing "-N" or "N" ("s2-wrk-1"). */
void lg_sw_station_name(const char *comm, char *out, size_t cap);

/*
 * One sampled thread's tallies over a window. With exact times (/proc/PID/task/TID/schedstat:
 * time on a core and time waiting for one, in ns), the running part is cpu_s + wait_s, not
 * the samples: a sampler that needs a core itself is late exactly when the cores are busy, so
 * its samples of running threads would be too few. Blocked time is always sampled.
 */
struct lg_sw_thread {
    char station[LG_SW_NAME];
    bool nested;
    bool pinned;
    uint64_t present; /* samples taken while it existed */
    uint64_t run;
    uint64_t blocked;
    double cpu_s;  /* on a core over the window (schedstat, else utime + stime) */
    double wait_s; /* waiting for a core (schedstat only) */
    bool exact;    /* cpu_s and wait_s are from schedstat */
    char wait[LG_SW_WAITS][LG_SW_WCHAN]; /* the first distinct wait channels it was blocked in */
    uint64_t wait_n[LG_SW_WAITS];        /* and how often (0: unused) */
};

/* Counts one blocked sample in wait channel wchan (the first LG_SW_WAITS distinct ones). */
void lg_sw_count_wait(struct lg_sw_thread *t, const char *wchan);

/* A station over a window of ticks samples. Fractions are means over the window. */
struct lg_sw_station {
    char name[LG_SW_NAME];
    bool nested;
    bool pinned;
    unsigned threads; /* k: its threads present in at least half the samples (at least 1) */
    double busy;      /* mean number of its threads busy, 0..threads = run + blocked */
    double run;       /* of which running or waiting for a core (exact when every thread's is) */
    double blocked;   /* of which blocked other than waiting for work */
    double cpu_cores; /* CPU its threads used (1.0 = one core) */
    double cpu_max;   /* the busiest thread's CPU: a thread can use one core at most */
    char top_wait[LG_SW_WCHAN]; /* the wait channel it was blocked in most ("" if never) */
    double top_wait_frac;       /* its share of the blocked samples */
};

/*
 * Groups n threads sampled over ticks samples (window_s seconds) into stations, in order of
 * first appearance. Returns the number written to out (at most cap); a station beyond cap is
 * left out and counted in *dropped when not NULL.
 */
size_t lg_sw_group(const struct lg_sw_thread *t, size_t n, uint64_t ticks, double window_s,
                   struct lg_sw_station *out, size_t cap, unsigned *dropped);

#endif /* LG_SWSTATION_H */
