/*
 * thrsample.c - see thrsample.h. Samples are taken at fixed times first_ns + i / hz; a sample
 * that would fall behind (the machine was busy) is skipped, not made up for, so the achieved
 * rate is reported rather than assumed.
 */
#include "thrsample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "procstat.h"
#include "xalloc.h"

#define LG_THR_PROCS 128                       /* processes whose threads are looked at */
#define LG_THR_RESCAN_NS (250ull * 1000000ull) /* thread lists and CPU */
#define LG_THR_COMM_EVERY 4                    /* --watch-comm processes: every 4th rescan */

struct thr {
    struct lg_sw_thread t;
    const struct lg_sw_rule *rule;
    pid_t pid;
    pid_t tid;
    int fd;         /* wchan, -1 once the thread is gone */
    int sfd;        /* syscall, for the rules that need it (else -1) */
    bool seen;      /* in the last rescan */
    uint64_t cpu;   /* when last read: ns on a core (schedstat) or utime + stime ticks */
    uint64_t wait;  /* ns waiting for a core (schedstat) */
};

struct lg_thrsample {
    const struct lg_config *cfg;
    long clk_tck;
    unsigned hz;
    pid_t procs[LG_THR_PROCS];
    unsigned nprocs;
    unsigned nfixed; /* procs[0..nfixed): loadgen and --watch */
    struct thr thr[LG_THR_MAX];
    unsigned nthr;
    unsigned left_out;
    char buf[4096];
    uint64_t ticks;
    uint64_t t_first, t_last;
    uint64_t first_ns;
    struct lg_window *win;
    double cost_s;
    pthread_t tid;
    bool running;
    atomic_bool stop;
};

struct lg_thrsample *lg_thrsample_new(const struct lg_config *cfg)
{
    struct lg_thrsample *s = xcalloc(1, sizeof(*s));

    s->cfg = cfg;
    s->hz = cfg->thread_hz;
    s->clk_tck = sysconf(_SC_CLK_TCK);
    s->procs[s->nfixed++] = getpid();
    for (unsigned i = 0; i < cfg->nwatch && s->nfixed < LG_THR_PROCS; i++)
        s->procs[s->nfixed++] = cfg->watch[i].pid;
    s->nprocs = s->nfixed;
    atomic_init(&s->stop, false);
    return s;
}

void lg_thrsample_free(struct lg_thrsample *s)
{
    free(s);
}

static void add_proc(size_t index, pid_t pid, void *arg)
{
    struct lg_thrsample *s = arg;

    (void)index;
    for (unsigned i = 0; i < s->nprocs; i++)
        if (s->procs[i] == pid)
            return;
    if (s->nprocs < LG_THR_PROCS)
        s->procs[s->nprocs++] = pid;
}

static void scan_comms(struct lg_thrsample *s)
{
    const char *comms[LG_WATCH_MAX];

    if (s->cfg->nwatch_comm == 0)
        return;
    for (unsigned i = 0; i < s->cfg->nwatch_comm; i++)
        comms[i] = s->cfg->watch_comm[i];
    s->nprocs = s->nfixed;
    procstat_scan_comm(comms, s->cfg->nwatch_comm, add_proc, s);
}

/*
 * A thread's time on a core and waiting for one: from schedstat (ns, *exact), else utime +
 * stime of its stat (clock ticks, no wait). -1 if it is gone.
 */
static int thread_times(struct lg_thrsample *s, pid_t pid, pid_t tid, uint64_t *cpu,
                        uint64_t *wait, bool *exact)
{
    char path[96];
    struct procstat_pid st;
    unsigned long long run_ns, wait_ns;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    if (procstat_read_file(path, s->buf, sizeof(s->buf)) >= 0 &&
        sscanf(s->buf, "%llu %llu", &run_ns, &wait_ns) == 2) {
        *cpu = run_ns;
        *wait = wait_ns;
        *exact = true;
        return 0;
    }
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    if (procstat_read_file(path, s->buf, sizeof(s->buf)) < 0 ||
        procstat_parse_pid_stat(s->buf, &st) < 0)
        return -1;
    *cpu = st.utime_ticks + st.stime_ticks;
    *wait = 0;
    *exact = false;
    return 0;
}

static void update_cpu(struct lg_thrsample *s, struct thr *t)
{
    uint64_t cpu, wait;
    bool exact;

    if (thread_times(s, t->pid, t->tid, &cpu, &wait, &exact) < 0 || exact != t->t.exact)
        return;
    if (exact) {
        if (cpu >= t->cpu)
            t->t.cpu_s += (double)(cpu - t->cpu) / 1e9;
        if (wait >= t->wait)
            t->t.wait_s += (double)(wait - t->wait) / 1e9;
    } else if (cpu >= t->cpu) {
        t->t.cpu_s += (double)(cpu - t->cpu) / (double)s->clk_tck;
    }
    t->cpu = cpu;
    t->wait = wait;
}

static struct thr *find(struct lg_thrsample *s, pid_t tid)
{
    for (unsigned i = 0; i < s->nthr; i++)
        if (s->thr[i].tid == tid && s->thr[i].fd >= 0)
            return &s->thr[i];
    return NULL;
}

/*
 * A thread of pid not sampled yet: its rule, its wchan file, its CPU so far. Returns 1 when it
 * has a rule but LG_THR_MAX threads are sampled already, else 0.
 */
static int add_thread(struct lg_thrsample *s, pid_t pid, pid_t tid)
{
    char path[96];
    char comm[PROCSTAT_COMM_LEN];
    const struct lg_sw_rule *rule;
    struct thr *t;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    len = procstat_read_file(path, comm, sizeof(comm));
    if (len <= 0)
        return 0;
    if (comm[len - 1] == '\n')
        comm[len - 1] = '\0';
    rule = lg_sw_rule_of(comm);
    if (rule == NULL)
        return 0;
    if (s->nthr == LG_THR_MAX)
        return 1;
    t = &s->thr[s->nthr];
    memset(t, 0, sizeof(*t));
    snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tid);
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    t->sfd = -1;
    if (t->fd < 0 || thread_times(s, pid, tid, &t->cpu, &t->wait, &t->t.exact) < 0) {
        if (t->fd >= 0)
            close(t->fd);
        return 0;
    }
    if (rule->idle == LG_SW_IDLE_FUTEX) {
        snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
        t->sfd = open(path, O_RDONLY | O_CLOEXEC); /* -1: every futex wait reads as idle */
    }
    t->rule = rule;
    t->pid = pid;
    t->tid = tid;
    t->seen = true;
    t->t.nested = rule->nested;
    t->t.pinned = rule->pinned;
    lg_sw_station_name(comm, t->t.station, sizeof(t->t.station));
    s->nthr++;
    return 0;
}

static void gone(struct thr *t)
{
    close(t->fd);
    t->fd = -1;
    if (t->sfd >= 0)
        close(t->sfd);
    t->sfd = -1;
}

/*
 * Re-reads the thread lists: new threads are added, CPU is brought up to date. left_out is
 * the most threads with a rule any rescan found beyond the limit.
 */
static void rescan(struct lg_thrsample *s, bool comms)
{
    char path[64];
    unsigned missed = 0;

    if (comms)
        scan_comms(s);
    for (unsigned i = 0; i < s->nthr; i++)
        s->thr[i].seen = false;
    for (unsigned p = 0; p < s->nprocs; p++) {
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)s->procs[p]);
        dir = opendir(path);
        if (dir == NULL)
            continue;
        while ((de = readdir(dir)) != NULL) {
            char *end;
            long tid = strtol(de->d_name, &end, 10);
            struct thr *t;
            if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end != '\0' || tid <= 0)
                continue;
            t = find(s, (pid_t)tid);
            if (t != NULL)
                t->seen = true;
            else
                missed += (unsigned)add_thread(s, s->procs[p], (pid_t)tid);
        }
        closedir(dir);
    }
    if (missed > s->left_out)
        s->left_out = missed;
    for (unsigned i = 0; i < s->nthr; i++) {
        struct thr *t = &s->thr[i];
        if (t->fd < 0)
            continue;
        update_cpu(s, t);
        if (!t->seen)
            gone(t);
    }
}

/*
 * The state of a thread whose wait channel is buf, from its syscall file when the rule needs
 * it; *timed: a futex wait found busy (a timed one: the group commit's window).
 */
static enum lg_sw_state classify(const struct thr *t, const char *buf, bool *timed)
{
    enum lg_sw_state st;
    char sc[256];
    ssize_t n;

    *timed = false;
    if (t->sfd < 0 || !lg_sw_wants_syscall(t->rule, buf))
        return lg_sw_classify(t->rule, buf);
    n = pread(t->sfd, sc, sizeof(sc) - 1, 0);
    if (n <= 0)
        return lg_sw_classify(t->rule, buf);
    sc[n] = '\0';
    st = lg_sw_classify_syscall(sc);
    *timed = st == LG_SW_BLOCKED;
    return st;
}

static void sample(struct lg_thrsample *s)
{
    for (unsigned i = 0; i < s->nthr; i++) {
        struct thr *t = &s->thr[i];
        char wait[LG_SW_WCHAN];
        bool timed;
        ssize_t n;

        if (t->fd < 0)
            continue;
        n = pread(t->fd, s->buf, 127, 0);
        if (n <= 0) {
            gone(t);
            continue;
        }
        s->buf[n] = '\0';
        t->t.present++;
        switch (classify(t, s->buf, &timed)) {
        case LG_SW_RUN:
            t->t.run++;
            break;
        case LG_SW_BLOCKED:
            t->t.blocked++;
            /* a futex wait the syscall file showed busy: the group commit's window */
            snprintf(wait, sizeof(wait), "%.*s%s", (int)strcspn(s->buf, "\n"), s->buf,
                     timed ? " (timed)" : "");
            lg_sw_count_wait(&t->t, wait);
            break;
        case LG_SW_IDLE:
            break;
        }
    }
    s->ticks++;
}

static double thread_cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                          .tv_nsec = (long)(t % 1000000000ull)};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void *thrsample_main(void *arg)
{
    struct lg_thrsample *s = arg;
    uint64_t period = 1000000000ull / s->hz;
    uint64_t next_scan, next;
    unsigned scans = 0;
    double cpu0;

    for (;;) { /* until the window opens; a stop before then takes no sample */
        uint64_t now = clock_now_ns();
        if (atomic_load(&s->stop))
            return NULL;
        if (now >= s->first_ns)
            break;
        sleep_until(now + period < s->first_ns ? now + period : s->first_ns);
    }
    cpu0 = thread_cpu_s();
    rescan(s, true);
    s->t_first = s->t_last = clock_now_ns();
    next = s->t_first;
    next_scan = s->t_first + LG_THR_RESCAN_NS;
    for (;;) {
        uint64_t now = clock_now_ns();
        if (now >= next_scan) {
            rescan(s, ++scans % LG_THR_COMM_EVERY == 0);
            next_scan += LG_THR_RESCAN_NS;
        }
        sample(s);
        s->t_last = now;
        if (atomic_load(&s->stop) || now >= lg_window_end_at(s->win, now))
            break;
        next += period;
        now = clock_now_ns();
        if (next <= now) /* behind: skip the samples that are due, keep the grid */
            next += ((now - next) / period + 1) * period;
        sleep_until(next < lg_window_end(s->win) ? next : lg_window_end(s->win));
    }
    rescan(s, false); /* the CPU up to the end of the window */
    for (unsigned i = 0; i < s->nthr; i++)
        if (s->thr[i].fd >= 0)
            gone(&s->thr[i]);
    s->cost_s = thread_cpu_s() - cpu0;
    return NULL;
}

int lg_thrsample_start(struct lg_thrsample *s, uint64_t first_ns, struct lg_window *win)
{
    sigset_t all, old;
    int rc;

    s->nthr = 0;
    s->left_out = 0;
    s->ticks = 0;
    s->t_first = s->t_last = 0;
    s->cost_s = 0;
    s->first_ns = first_ns;
    s->win = win;
    atomic_store(&s->stop, false);
    if (s->hz == 0)
        return 0;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&s->tid, NULL, thrsample_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("cannot start the thread sampler: error %d", rc);
        return -1;
    }
    pthread_setname_np(s->tid, "lg-thrsample");
    s->running = true;
    return 0;
}

void lg_thrsample_stop(struct lg_thrsample *s, struct lg_thr_result *out)
{
    struct lg_sw_thread *t;

    memset(out, 0, sizeof(*out));
    if (!s->running)
        return;
    atomic_store(&s->stop, true);
    pthread_join(s->tid, NULL);
    s->running = false;
    out->ticks = s->ticks;
    out->window_s = (double)(s->t_last - s->t_first) / 1e9;
    out->threads = s->nthr;
    out->left_out = s->left_out;
    if (out->window_s <= 0)
        return;
    out->hz = (double)(s->ticks > 1 ? s->ticks - 1 : 0) / out->window_s;
    out->cost_cores = s->cost_s / out->window_s;
    t = xcalloc(s->nthr + 1, sizeof(*t));
    for (unsigned i = 0; i < s->nthr; i++)
        t[i] = s->thr[i].t;
    out->nst = (unsigned)lg_sw_group(t, s->nthr, s->ticks, out->window_s, out->st,
                                     LG_SW_MAX_STATIONS, &out->st_left_out);
    free(t);
}
