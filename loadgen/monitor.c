/*
 * monitor.c - see monitor.h. Per-process counters are cumulative, so each sample adds the
 * difference since the previous sample of the same PID; a process that appears mid-window is
 * counted from its first sample, one that exits keeps what it had used. Machine-wide counters
 * (/proc/stat, diskstats, net/dev, Redis) are differenced between the first and last sample.
 */
#include "monitor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "procstat.h"
#include "xalloc.h"

#define LG_MON_BUF (256u * 1024)
#define LG_REDIS_BUF (64u * 1024)

struct lg_mon_pid {
    pid_t pid;
    bool seen; /* in the current sample */
    bool io_ok;
    uint64_t ticks;
    uint64_t rd;
    uint64_t wr;
    uint64_t ctx;
};

struct lg_mon_group {
    char name[LG_NAME_MAX];
    bool is_loadgen;
    pid_t fixed[LG_WATCH_MAX]; /* --watch PIDs (and getpid() for loadgen) */
    unsigned nfixed;
    struct lg_mon_pid *pids; /* tracked processes */
    unsigned npids;
    unsigned cap;
    /* accumulated over the window */
    uint64_t d_ticks;
    uint64_t d_rd;
    uint64_t d_wr;
    uint64_t d_ctx;
    bool io_ok;
    unsigned nproc_max;
    unsigned threads_max;
    uint64_t rss_max;
    /* this sample */
    unsigned s_nproc;
    unsigned s_threads;
    uint64_t s_rss;
};

/* What one sample of the machine-wide counters holds. */
struct lg_mon_machine {
    struct procstat_cpu cpu;
    bool cpu_ok;
    struct procstat_disk disks[LG_MON_DISKS * 4];
    int ndisks;
    uint64_t lo_rx;
    bool lo_ok;
    uint64_t redis_calls;
    uint64_t redis_usec;
    bool redis_ok;
};

struct lg_monitor {
    const struct lg_config *cfg;
    struct lg_mon_group groups[LG_MON_GROUPS];
    unsigned ngroups;
    const char *comms[LG_WATCH_MAX];
    unsigned comm_group[LG_WATCH_MAX];
    unsigned ncomm;
    long clk_tck;
    long page_size;
    unsigned ncpu;
    char *buf;                   /* monitor thread only */
    struct lg_mon_machine first; /* monitor thread only until joined */
    struct lg_mon_machine last;
    uint64_t t_first;
    uint64_t t_last;
    unsigned nsamples;
    uint64_t first_ns;
    struct lg_window *win;
    struct lg_thrsample *thr;
    pthread_t tid;
    bool running;         /* main thread only */
    pthread_mutex_t lock; /* protects stop */
    pthread_cond_t cond;
    bool stop; /* shared: protected by lock */
};

static struct lg_mon_group *group_for(struct lg_monitor *m, const char *name)
{
    for (unsigned i = 0; i < m->ngroups; i++)
        if (strcmp(m->groups[i].name, name) == 0)
            return &m->groups[i];
    if (m->ngroups >= LG_MON_GROUPS)
        return NULL;
    snprintf(m->groups[m->ngroups].name, LG_NAME_MAX, "%s", name);
    return &m->groups[m->ngroups++];
}

static void count_comm(size_t index, pid_t pid, void *arg)
{
    unsigned *found = arg;
    UNUSED(pid);
    found[index]++;
}

/* Says once, at start, which --watch-comm names match no process (yet). */
static void warn_unmatched(const struct lg_monitor *m)
{
    unsigned found[LG_WATCH_MAX] = {0};

    if (m->ncomm == 0 || procstat_scan_comm(m->comms, m->ncomm, count_comm, found) < 0)
        return;
    for (unsigned i = 0; i < m->ncomm; i++)
        if (found[i] == 0)
            log_warn("--watch-comm: no process is named '%s' (yet)", m->comms[i]);
}

struct lg_monitor *lg_monitor_new(const struct lg_config *cfg)
{
    struct lg_monitor *m = xcalloc(1, sizeof(*m));
    struct lg_mon_group *g;
    pthread_condattr_t ca;

    m->cfg = cfg;
    m->clk_tck = sysconf(_SC_CLK_TCK);
    m->page_size = sysconf(_SC_PAGESIZE);
    m->ncpu = cfg->ncores;
    m->buf = xmalloc(LG_MON_BUF);
    g = group_for(m, "loadgen");
    g->is_loadgen = true;
    g->fixed[g->nfixed++] = getpid();
    for (unsigned i = 0; i < cfg->nwatch; i++) {
        g = group_for(m, cfg->watch[i].name);
        if (g != NULL && g->nfixed < LG_WATCH_MAX)
            g->fixed[g->nfixed++] = cfg->watch[i].pid;
    }
    for (unsigned i = 0; i < cfg->nwatch_comm; i++) {
        g = group_for(m, cfg->watch_comm[i]);
        if (g == NULL)
            continue;
        m->comms[m->ncomm] = cfg->watch_comm[i];
        m->comm_group[m->ncomm] = (unsigned)(g - m->groups);
        m->ncomm++;
    }
    warn_unmatched(m);
    m->thr = lg_thrsample_new(cfg);
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cond, &ca);
    pthread_condattr_destroy(&ca);
    return m;
}

void lg_monitor_free(struct lg_monitor *m)
{
    if (m == NULL)
        return;
    for (unsigned i = 0; i < m->ngroups; i++)
        free(m->groups[i].pids);
    lg_thrsample_free(m->thr);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m->buf);
    free(m);
}

/* The decimal number right after "key" in s[0..len), or -1. */
static int field_u64(const char *s, size_t len, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    uint64_t v = 0;
    size_t i;

    for (i = 0; i + klen <= len; i++)
        if (memcmp(s + i, key, klen) == 0 && (i == 0 || s[i - 1] == ':' || s[i - 1] == ','))
            break;
    if (i + klen > len)
        return -1;
    i += klen;
    if (i >= len || s[i] < '0' || s[i] > '9')
        return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int lg_monitor_parse_cmdstats(const char *text, uint64_t *calls, uint64_t *usec)
{
    const char *p = text;
    uint64_t c = 0;
    uint64_t u = 0;
    int lines = 0;

    while (p != NULL && *p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);

        if (strncmp(p, "cmdstat_", 8) == 0 && strncmp(p, "cmdstat_info:", 13) != 0) {
            uint64_t vc;
            uint64_t vu;
            if (field_u64(p, len, "calls=", &vc) < 0 || field_u64(p, len, "usec=", &vu) < 0)
                return -1;
            c += vc;
            u += vu;
            lines++;
        }
        p = eol ? eol + 1 : NULL;
    }
    *calls = c;
    *usec = u;
    return lines;
}

/*
 * AUTH with the password in REDISCLI_AUTH (the variable redis-cli reads; the scripts' Redis
 * requires a password), as a RESP array so any byte may be in it. 0 if accepted.
 */
static int redis_auth(int fd, char *buf, const char *pw)
{
    size_t n = strlen(pw);
    size_t len = 0;
    int k = snprintf(buf, LG_REDIS_BUF, "*2\r\n$4\r\nAUTH\r\n$%zu\r\n", n);

    if (k < 0 || (size_t)k + n + 2 >= LG_REDIS_BUF)
        return -1;
    memcpy(buf + k, pw, n);
    memcpy(buf + k + n, "\r\n", 2);
    if (send(fd, buf, (size_t)k + n + 2, MSG_NOSIGNAL) != (ssize_t)((size_t)k + n + 2))
        return -1;
    while (len < 5) {
        ssize_t r = recv(fd, buf + len, 5 - len, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
    }
    return memcmp(buf, "+OK\r\n", 5) == 0 ? 0 : -1;
}

/* INFO commandstats over a fresh connection to 127.0.0.1:port (1 s timeouts). */
static int redis_info(char *buf, uint16_t port, uint64_t *calls, uint64_t *usec)
{
    const char *pw = getenv("REDISCLI_AUTH");
    static const char req[] = "INFO commandstats\r\n";
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    size_t len = 0;
    size_t want = 0;
    int rc = -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (pw != NULL && pw[0] != '\0' && redis_auth(fd, buf, pw) < 0) ||
        send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
        goto out;
    while (len < LG_REDIS_BUF - 1) {
        ssize_t n = recv(fd, buf + len, LG_REDIS_BUF - 1 - len, 0);
        char *crlf;
        if (n <= 0)
            goto out;
        len += (size_t)n;
        buf[len] = '\0';
        if (buf[0] != '$')
            goto out; /* an error reply, e.g. -NOAUTH */
        crlf = strstr(buf, "\r\n");
        if (crlf == NULL)
            continue;
        if (want == 0) {
            uint64_t bulk;
            if (field_u64(buf, (size_t)(crlf - buf), "$", &bulk) < 0 || bulk > LG_REDIS_BUF)
                goto out;
            want = (size_t)(crlf - buf) + 2 + (size_t)bulk;
        }
        if (len >= want) {
            rc = lg_monitor_parse_cmdstats(crlf + 2, calls, usec) < 0 ? -1 : 0;
            break;
        }
    }
out:
    close(fd);
    return rc;
}

static void sample_pid(struct lg_monitor *m, struct lg_mon_group *g, pid_t pid)
{
    char path[64];
    struct procstat_pid st;
    struct procstat_status ss = {0};
    struct procstat_io io = {0};
    struct lg_mon_pid *e = NULL;
    bool io_ok;
    uint64_t ticks;
    uint64_t ctx;

    for (unsigned i = 0; i < g->npids; i++) {
        if (g->pids[i].pid == pid) {
            e = &g->pids[i];
            break;
        }
    }
    if (e != NULL && e->seen)
        return; /* both --watch and --watch-comm name it */
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (procstat_read_file(path, m->buf, LG_MON_BUF) < 0 ||
        procstat_parse_pid_stat(m->buf, &st) < 0)
        return; /* gone */
    if (procstat_task_ctxt(pid, m->buf, LG_MON_BUF, &ss.voluntary_ctxt, &ss.nonvoluntary_ctxt) < 0)
        return; /* gone */
    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    io_ok =
        procstat_read_file(path, m->buf, LG_MON_BUF) >= 0 && procstat_parse_io(m->buf, &io) == 0;
    ticks = st.utime_ticks + st.stime_ticks;
    ctx = ss.voluntary_ctxt + ss.nonvoluntary_ctxt;

    if (e == NULL) {
        if (g->npids == g->cap) {
            g->cap = g->cap ? g->cap * 2 : 8;
            g->pids = xrealloc(g->pids, g->cap * sizeof(*g->pids));
        }
        e = &g->pids[g->npids++];
        e->pid = pid;
    } else {
        if (ticks >= e->ticks)
            g->d_ticks += ticks - e->ticks;
        if (ctx >= e->ctx)
            g->d_ctx += ctx - e->ctx;
        if (io_ok && e->io_ok) {
            g->io_ok = true;
            if (io.read_bytes >= e->rd)
                g->d_rd += io.read_bytes - e->rd;
            if (io.write_bytes >= e->wr)
                g->d_wr += io.write_bytes - e->wr;
        }
    }
    e->seen = true;
    e->io_ok = io_ok;
    e->ticks = ticks;
    e->ctx = ctx;
    e->rd = io.read_bytes;
    e->wr = io.write_bytes;
    g->s_nproc++;
    g->s_threads += (unsigned)st.num_threads;
    g->s_rss += st.rss_pages * (uint64_t)m->page_size;
}

static void on_comm(size_t index, pid_t pid, void *arg)
{
    struct lg_monitor *m = arg;
    sample_pid(m, &m->groups[m->comm_group[index]], pid);
}

static void sample_machine(struct lg_monitor *m, struct lg_mon_machine *s)
{
    struct procstat_netdev nd[64];
    int n;

    memset(s, 0, sizeof(*s));
    s->cpu_ok = procstat_read_file("/proc/stat", m->buf, LG_MON_BUF) >= 0 &&
                procstat_parse_stat(m->buf, &s->cpu) == 0;
    s->ndisks = -1;
    if (procstat_read_file("/proc/diskstats", m->buf, LG_MON_BUF) >= 0)
        s->ndisks = procstat_parse_diskstats(m->buf, s->disks, LG_MON_DISKS * 4);
    n = -1;
    if (procstat_read_file("/proc/net/dev", m->buf, LG_MON_BUF) >= 0)
        n = procstat_parse_netdev(m->buf, nd, 64);
    for (int i = 0; i < n && i < 64; i++) {
        if (strcmp(nd[i].name, "lo") == 0) {
            s->lo_rx = nd[i].rx_bytes;
            s->lo_ok = true;
        }
    }
    if (m->cfg->redis_port != 0)
        s->redis_ok = redis_info(m->buf, m->cfg->redis_port, &s->redis_calls, &s->redis_usec) == 0;
}

static void sample(struct lg_monitor *m, uint64_t now)
{
    for (unsigned i = 0; i < m->ngroups; i++) {
        struct lg_mon_group *g = &m->groups[i];
        g->s_nproc = 0;
        g->s_threads = 0;
        g->s_rss = 0;
        for (unsigned j = 0; j < g->npids; j++)
            g->pids[j].seen = false;
        for (unsigned j = 0; j < g->nfixed; j++)
            sample_pid(m, g, g->fixed[j]);
    }
    if (m->ncomm > 0 && procstat_scan_comm(m->comms, m->ncomm, on_comm, m) < 0)
        log_warn("monitor: cannot list /proc");
    for (unsigned i = 0; i < m->ngroups; i++) {
        struct lg_mon_group *g = &m->groups[i];
        unsigned kept = 0;
        for (unsigned j = 0; j < g->npids; j++)
            if (g->pids[j].seen)
                g->pids[kept++] = g->pids[j];
        g->npids = kept;
        if (g->s_nproc > g->nproc_max)
            g->nproc_max = g->s_nproc;
        if (g->s_threads > g->threads_max)
            g->threads_max = g->s_threads;
        if (g->s_rss > g->rss_max)
            g->rss_max = g->s_rss;
    }
    sample_machine(m, m->nsamples == 0 ? &m->first : &m->last);
    if (m->nsamples == 0)
        m->t_first = now;
    m->t_last = now;
    m->nsamples++;
}

/* Waits until t or a stop request; returns true if stopped. */
static bool wait_until(struct lg_monitor *m, uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                          .tv_nsec = (long)(t % 1000000000ull)};
    bool stopped;

    pthread_mutex_lock(&m->lock);
    while (!m->stop && clock_now_ns() < t) {
        if (pthread_cond_timedwait(&m->cond, &m->lock, &ts) == ETIMEDOUT)
            break;
    }
    stopped = m->stop;
    pthread_mutex_unlock(&m->lock);
    return stopped;
}

static void *monitor_thread_main(void *arg)
{
    struct lg_monitor *m = arg;
    uint64_t interval = (uint64_t)m->cfg->sample_ms * 1000000ull;
    bool stopped = wait_until(m, m->first_ns);

    sample(m, clock_now_ns());
    while (!stopped) {
        uint64_t next = m->t_last + interval;
        uint64_t now;

        if (next > lg_window_end(m->win))
            next = lg_window_end(m->win);
        stopped = wait_until(m, next);
        now = clock_now_ns();
        sample(m, now);
        if (now >= lg_window_end_at(m->win, now))
            break;
    }
    return NULL;
}

int lg_monitor_start(struct lg_monitor *m, uint64_t first_ns, struct lg_window *win)
{
    sigset_t all;
    sigset_t old;
    int rc;

    for (unsigned i = 0; i < m->ngroups; i++) {
        struct lg_mon_group *g = &m->groups[i];
        g->npids = 0;
        g->d_ticks = g->d_rd = g->d_wr = g->d_ctx = 0;
        g->io_ok = false;
        g->nproc_max = g->threads_max = 0;
        g->rss_max = 0;
    }
    m->nsamples = 0;
    m->first_ns = first_ns;
    m->win = win;
    m->stop = false;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&m->tid, NULL, monitor_thread_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("cannot start the monitor thread: error %d", rc);
        return -1;
    }
    pthread_setname_np(m->tid, "lg-monitor");
    m->running = true;
    if (lg_thrsample_start(m->thr, first_ns, win) < 0) {
        struct lg_monitor_result unused;
        lg_monitor_stop(m, &unused);
        return -1;
    }
    return 0;
}

static bool whole_disk(const char *name)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/block/%s", name);
    return access(path, F_OK) == 0;
}

static void results(struct lg_monitor *m, struct lg_monitor_result *out)
{
    double w = (double)(m->t_last - m->t_first) / 1e9;
    const struct lg_mon_machine *a = &m->first;
    const struct lg_mon_machine *b = &m->last;

    memset(out, 0, sizeof(*out));
    out->nsamples = m->nsamples;
    out->ncpu = m->ncpu;
    out->window_s = w;
    for (unsigned i = 0; i < m->ngroups; i++) {
        const struct lg_mon_group *g = &m->groups[i];
        struct lg_proc_usage *p = &out->procs[out->nprocs++];
        unsigned cap = g->threads_max < m->ncpu ? g->threads_max : m->ncpu;

        snprintf(p->name, sizeof(p->name), "%s", g->name);
        p->is_loadgen = g->is_loadgen;
        p->nproc = g->nproc_max;
        p->nthreads = g->threads_max;
        p->capacity = cap > 0 ? cap : 1;
        p->rss_max_bytes = (double)g->rss_max;
        p->io_ok = g->io_ok;
        if (w > 0) {
            p->cpu_cores = (double)g->d_ticks / (double)m->clk_tck / w;
            p->read_Bps = (double)g->d_rd / w;
            p->write_Bps = (double)g->d_wr / w;
            p->ctxsw_ps = (double)g->d_ctx / w;
        }
    }
    if (m->nsamples < 2 || w <= 0)
        return;
    if (a->cpu_ok && b->cpu_ok && b->cpu.total_ticks > a->cpu.total_ticks) {
        uint64_t total = b->cpu.total_ticks - a->cpu.total_ticks;
        uint64_t idle = b->cpu.idle_ticks - a->cpu.idle_ticks;
        out->machine_cpu = idle <= total ? (double)(total - idle) / (double)total : 0;
    }
    for (int i = 0; i < b->ndisks && out->ndisks < LG_MON_DISKS; i++) {
        for (int j = 0; j < a->ndisks; j++) {
            const struct procstat_disk *d1 = &b->disks[i];
            const struct procstat_disk *d0 = &a->disks[j];
            struct lg_disk_usage *u;
            if (strcmp(d0->name, d1->name) != 0 || !whole_disk(d1->name))
                continue;
            u = &out->disks[out->ndisks++];
            snprintf(u->name, sizeof(u->name), "%s", d1->name);
            u->util = (double)(d1->io_ticks_ms - d0->io_ticks_ms) / (w * 1000.0);
            if (u->util > 1)
                u->util = 1;
            u->read_Bps = (double)(d1->sectors_read - d0->sectors_read) * 512.0 / w;
            u->write_Bps = (double)(d1->sectors_written - d0->sectors_written) * 512.0 / w;
            break;
        }
    }
    if (a->lo_ok && b->lo_ok)
        out->lo_Bps = (double)(b->lo_rx - a->lo_rx) / w;
    if (a->redis_ok && b->redis_ok) {
        out->redis_ok = true;
        out->redis_ops_ps = (double)(b->redis_calls - a->redis_calls) / w;
        out->redis_util = (double)(b->redis_usec - a->redis_usec) / 1e6 / w;
    }
}

void lg_monitor_stop(struct lg_monitor *m, struct lg_monitor_result *out)
{
    if (!m->running) {
        memset(out, 0, sizeof(*out));
        return;
    }
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->tid, NULL);
    m->running = false;
    results(m, out);
    lg_thrsample_stop(m->thr, &out->sw);
}
