/*
 * merge.c - see merge.h. The inputs are read by runfile.c; here they are checked against each
 * other (check_compatible, check_windows) and merged point by point (lg_merge_combine, with
 * merge_monitor for the resources of one host or several).
 */
#include "merge.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "report.h"
#include "xalloc.h"

/* One error line into err (LG_ERR_LEN bytes; a longer one is cut). */
__attribute__((format(printf, 2, 3))) static void merr(char *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, LG_ERR_LEN, fmt, ap);
    va_end(ap);
}

/* ---- compatibility --------------------------------------------------------------------- */

/* A field every input must have alike: its name in run.json and how it reads. */
struct lg_merge_field {
    const char *name;
    void (*show)(const struct lg_config *c, char *out, size_t cap);
};

static void show_mix(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "new:%u,get:%u,put:%u,custom:%u", c->weight[LG_REQ_NEW],
             c->weight[LG_REQ_GET], c->weight[LG_REQ_PUT], c->weight[LG_REQ_CUSTOM]);
}

static void show_file(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "'%s'", lg_config_has(c, LG_REQ_GET) ? c->file : "");
}

/* --names: the source, N and the law; "none" without it. */
static void show_names(const struct lg_config *c, char *out, size_t cap)
{
    if (c->names.kind == LG_NAMES_NONE)
        snprintf(out, cap, "none");
    else if (c->pick_kind == LG_PICK_ZIPF)
        snprintf(out, cap, "'%.60s' (%" PRIu64 ", zipf %g%s)", c->names_source, c->names.n,
                 c->zipf_s, c->names_spread ? ", spread" : "");
    else
        snprintf(out, cap, "'%.60s' (%" PRIu64 ", uniform)", c->names_source, c->names.n);
}

static void show_put_size(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%" PRIu64, lg_config_has(c, LG_REQ_PUT) ? c->put_size : 0);
}

static void show_think(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%.3f", (double)c->think_us / 1e3);
}

static void show_duration(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%.3f", (double)c->duration_us / 1e6);
}

static void show_warmup(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%.3f", (double)c->warmup_us / 1e6);
}

static void show_rpu(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%" PRIu64, c->requests_per_user);
}

static void show_loop(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%s", c->rate > 0 ? "open (--rate)" : "closed");
}

static void show_arrivals(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%s",
             c->rate <= 0                         ? "-"
             : c->arrivals == LG_ARRIVALS_POISSON ? "poisson"
                                                  : "constant");
}

static void show_model(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "%s", c->model == LG_MODEL_EVENTS ? "events" : "threads");
}

static const struct lg_merge_field lg_merge_fields[] = {
    {"mix", show_mix},
    {"file", show_file},
    {"names", show_names},
    {"put_size", show_put_size},
    {"think_ms", show_think},
    {"duration_s", show_duration},
    {"warmup_s", show_warmup},
    {"requests_per_user", show_rpu},
    {"loop", show_loop},
    {"arrivals", show_arrivals},
    {"model", show_model},
};

static int check_compatible(const struct lg_runfile *ins, unsigned n, char *err)
{
    for (unsigned i = 1; i < n; i++) {
        for (unsigned j = 0; j < i; j++) {
            if (strcmp(ins[i].id.run_id, ins[j].id.run_id) == 0) {
                merr(err, "'%s' and '%s' hold the same run (%s): each run counts once",
                     ins[j].id.dir, ins[i].id.dir, ins[i].id.run_id);
                return -1;
            }
        }
        for (unsigned j = 0; j < sizeof(lg_merge_fields) / sizeof(lg_merge_fields[0]); j++) {
            char a[128];
            char b[128];
            lg_merge_fields[j].show(&ins[0].cfg, a, sizeof(a));
            lg_merge_fields[j].show(&ins[i].cfg, b, sizeof(b));
            if (strcmp(a, b) != 0) {
                merr(err,
                     "inputs differ in %s: '%s' has %s, '%s' has %s (merge needs the same "
                     "load in every input)",
                     lg_merge_fields[j].name, ins[0].id.dir, a, ins[i].id.dir, b);
                return -1;
            }
        }
        if (ins[i].npoints != ins[0].npoints) {
            merr(err,
                 "inputs differ in points: '%s' has %u, '%s' has %u (give every process "
                 "the same --sweep list)",
                 ins[0].id.dir, ins[0].npoints, ins[i].id.dir, ins[i].npoints);
            return -1;
        }
    }
    return 0;
}

/*
 * Point k's windows must be the same wall-clock window: their intersection at least
 * LG_MERGE_OVERLAP_MIN of the longest (else -1), below LG_MERGE_OVERLAP_WARN a warning.
 * Sets the common window [*from, *to].
 */
static int check_windows(const struct lg_runfile *ins, unsigned n, unsigned k, double *from,
                         double *to, char *err)
{
    double lo = 0;
    double hi = INFINITY;
    double longest = 0;
    double overlap;
    unsigned a = 0;
    unsigned b = 0;

    for (unsigned i = 0; i < n; i++) {
        const struct lg_point *p = &ins[i].points[k];
        if (p->window_start_ms <= 0 || p->window_end_ms <= p->window_start_ms) {
            merr(err,
                 "'%s' point %u (N=%u): no measured window (empty, or written by an "
                 "older loadgen)",
                 ins[i].id.dir, k + 1, p->users);
            return -1;
        }
        if (p->window_start_ms > lo) {
            lo = p->window_start_ms;
            a = i;
        }
        if (p->window_end_ms < hi) {
            hi = p->window_end_ms;
            b = i;
        }
        if (p->window_end_ms - p->window_start_ms > longest)
            longest = p->window_end_ms - p->window_start_ms;
    }
    overlap = hi > lo ? (hi - lo) / longest : 0;
    *from = lo;
    *to = hi;
    if (overlap < LG_MERGE_OVERLAP_WARN) {
        char sa[32];
        char ea[32];
        char sb[32];
        char eb[32];
        const struct lg_point *pa = &ins[a].points[k];
        const struct lg_point *pb = &ins[b].points[k];

        clock_format_epoch_ms((uint64_t)pa->window_start_ms, sa, sizeof(sa));
        clock_format_epoch_ms((uint64_t)pa->window_end_ms, ea, sizeof(ea));
        clock_format_epoch_ms((uint64_t)pb->window_start_ms, sb, sizeof(sb));
        clock_format_epoch_ms((uint64_t)pb->window_end_ms, eb, sizeof(eb));
        merr(err,
             "point %u: the measured windows overlap %.1f%% only: '%s' %s to %s, '%s' %s "
             "to %s (start every process with the same --start-at)",
             k + 1, overlap * 100, ins[a].id.dir, sa, ea, ins[b].id.dir, sb, eb);
        if (overlap < LG_MERGE_OVERLAP_MIN)
            return -1;
        log_warn("%s", err);
    }
    return 0;
}

/* ---- merging --------------------------------------------------------------------------- */

/*
 * Numbers the distinct host names (host_of[i] for input i) and labels them in ids: "" when
 * every input ran on one host, else the short host name (up to the first '.', at most
 * LG_HOST_LABEL_MAX characters), or "hostK" when two hosts' labels would be the same.
 */
static unsigned label_hosts(const struct lg_runfile *ins, unsigned n, struct lg_run_input *ids,
                            unsigned *host_of)
{
    char labels[LG_MERGE_MAX][LG_HOST_LABEL_MAX + 1];
    unsigned first[LG_MERGE_MAX];
    unsigned nhosts = 0;

    for (unsigned i = 0; i < n; i++) {
        unsigned h = 0;
        while (h < nhosts && strcmp(ins[first[h]].id.hostname, ins[i].id.hostname) != 0)
            h++;
        if (h == nhosts) {
            size_t len = strcspn(ins[i].id.hostname, ".");
            if (len > LG_HOST_LABEL_MAX)
                len = LG_HOST_LABEL_MAX;
            memcpy(labels[h], ins[i].id.hostname, len);
            labels[h][len] = '\0';
            first[nhosts++] = i;
        }
        host_of[i] = h;
    }
    for (unsigned h = 0; h < nhosts; h++) {
        for (unsigned g = 0; g < nhosts; g++) {
            if (g != h && strcmp(labels[g], labels[h]) == 0) {
                snprintf(labels[h], sizeof(labels[h]), "host%u", (h + 1u) % 100u);
                break;
            }
        }
    }
    for (unsigned i = 0; i < n; i++)
        snprintf(ids[i].label, sizeof(ids[i].label), "%s", nhosts > 1 ? labels[host_of[i]] : "");
    return nhosts;
}

/* name@label (or name alone without a label); -1 when it does not fit cap. */
static int labelled(char *out, size_t cap, const char *name, const char *label, char *err)
{
    int len = label[0] ? snprintf(out, cap, "%s@%s", name, label) : snprintf(out, cap, "%s", name);

    if (len < 0 || (size_t)len >= cap) {
        merr(err, "the name '%s@%s' is too long for a report column (%zu)", name, label, cap - 1);
        return -1;
    }
    return 0;
}

static struct lg_proc_usage *find_group(struct lg_monitor_result *m, const char *name)
{
    for (unsigned i = 0; i < m->nprocs; i++)
        if (strcmp(m->procs[i].name, name) == 0)
            return &m->procs[i];
    return NULL;
}

static struct lg_proc_usage *add_group(struct lg_monitor_result *m, unsigned k, char *err)
{
    if (m->nprocs >= LG_MON_GROUPS) {
        merr(err, "point %u: more than %d process groups over the inputs", k + 1, LG_MON_GROUPS);
        return NULL;
    }
    return memset(&m->procs[m->nprocs++], 0, sizeof(m->procs[0]));
}

/* Adds the loadgen group u of another process on the same host into g. */
static void sum_loadgen(struct lg_proc_usage *g, const struct lg_proc_usage *u, unsigned ncpu)
{
    g->nproc += u->nproc;
    g->nthreads += u->nthreads;
    g->cpu_cores += u->cpu_cores;
    g->rss_max_bytes += u->rss_max_bytes;
    g->io_ok = g->io_ok && u->io_ok;
    g->read_Bps += u->read_Bps;
    g->write_Bps += u->write_Bps;
    g->ctxsw_ps += u->ctxsw_ps;
    g->capacity = g->nthreads < ncpu || ncpu == 0 ? g->nthreads : ncpu;
}

/*
 * Point k's resources. A host's machine-wide figures (CPU, disks, loopback) and its watched
 * process groups come from the first input that ran there: the others on that host measured
 * the same things. Its loadgen processes are one group, their sum. With several hosts every
 * name gets "@host", each host's whole CPU becomes the group "all@host" (so the bottleneck
 * names the host), and the machine figure "cpu" is the busy share of all their cores. Redis
 * comes from the first input that sampled it.
 */
static int merge_monitor(const struct lg_runfile *ins, unsigned n, unsigned k,
                         const struct lg_run_input *ids, const unsigned *host_of, unsigned nhosts,
                         struct lg_monitor_result *out, char *err)
{
    double busy = 0;
    char name[LG_NAME_MAX];

    memset(out, 0, sizeof(*out));
    out->nsamples = UINT32_MAX;
    for (unsigned i = 0; i < n; i++) {
        const struct lg_monitor_result *m = &ins[i].points[k].mon;
        bool first_of_host = true;
        struct lg_proc_usage *g;

        for (unsigned j = 0; j < i; j++)
            first_of_host = first_of_host && host_of[j] != host_of[i];
        if (m->nsamples < out->nsamples)
            out->nsamples = m->nsamples;
        out->window_s += m->window_s / n;
        if (m->redis_ok && !out->redis_ok) {
            out->redis_ok = true;
            out->redis_ops_ps = m->redis_ops_ps;
            out->redis_util = m->redis_util;
        }
        if (first_of_host) {
            out->ncpu += m->ncpu;
            busy += m->machine_cpu * m->ncpu;
            out->lo_Bps += m->lo_Bps;
            for (unsigned d = 0; d < m->ndisks; d++) {
                if (out->ndisks >= LG_MON_DISKS) {
                    merr(err, "point %u: more than %d disks over the hosts", k + 1, LG_MON_DISKS);
                    return -1;
                }
                out->disks[out->ndisks] = m->disks[d];
                if (labelled(out->disks[out->ndisks].name, sizeof(out->disks[0].name),
                             m->disks[d].name, ids[i].label, err) < 0)
                    return -1;
                out->ndisks++;
            }
            if (nhosts > 1) {
                if (labelled(name, sizeof(name), "all", ids[i].label, err) < 0)
                    return -1;
                g = add_group(out, k, err);
                if (g == NULL)
                    return -1;
                snprintf(g->name, sizeof(g->name), "%s", name);
                g->nproc = 1;
                g->nthreads = m->ncpu;
                g->cpu_cores = m->machine_cpu * m->ncpu;
                g->capacity = m->ncpu > 0 ? m->ncpu : 1;
            }
        }
        for (unsigned r = 0; r < m->nprocs; r++) {
            const struct lg_proc_usage *u = &m->procs[r];
            if (labelled(name, sizeof(name), u->name, ids[i].label, err) < 0)
                return -1;
            g = find_group(out, name);
            if (g != NULL && u->is_loadgen && !first_of_host) {
                sum_loadgen(g, u, m->ncpu);
                continue;
            }
            if (g != NULL)
                continue; /* the same processes, seen by another input on this host */
            g = add_group(out, k, err);
            if (g == NULL)
                return -1;
            *g = *u;
            snprintf(g->name, sizeof(g->name), "%s", name);
        }
    }
    if (out->nsamples == UINT32_MAX)
        out->nsamples = 0;
    out->machine_cpu = out->ncpu > 0 ? busy / out->ncpu : 0;
    return 0;
}

static void make_run_id(char *out)
{
    uint32_t v = 0;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = (uint32_t)time(NULL) ^ (uint32_t)getpid();
    snprintf(out, LG_RUN_ID_LEN + 1, "%08x", v);
}

/* The merged flags: the first input's load, with N, threads and the rate summed. */
static void merge_config(const struct lg_runfile *ins, unsigned n, struct lg_merged *out)
{
    struct lg_config *c = &out->cfg;

    *c = ins[0].cfg;
    c->threads = 0;
    c->rate = 0;
    c->prepare_users = 0;
    for (unsigned i = 0; i < n; i++) {
        c->threads += ins[i].cfg.threads;
        c->rate += ins[i].cfg.rate;
        c->prepare_users += ins[i].cfg.prepare_users;
        if (ins[i].cfg.start_at_ms != c->start_at_ms)
            c->start_at_ms = 0; /* not one schedule */
    }
    c->users = out->run.points[0].users;
    c->window_max_us = 0; /* the common window was not sized */
    c->sweep_auto = false;
    c->nsweep = ins[0].cfg.nsweep > 0 || ins[0].cfg.sweep_auto ? out->run.npoints : 0;
    for (unsigned k = 0; k < c->nsweep; k++)
        c->sweep[k] = out->run.points[k].users;
    c->out_dir[0] = '\0';
    c->nwatch = 0;
    c->nwatch_comm = 0;
    c->argc = 0;
    c->argv = NULL;
}

int lg_merge_combine(const struct lg_runfile *ins, unsigned n, struct lg_merged *out, char *err)
{
    unsigned host_of[LG_MERGE_MAX];
    unsigned npoints;

    memset(out, 0, sizeof(*out));
    if (n < 2 || n > LG_MERGE_MAX) {
        merr(err, "give 2 to %d directories to merge (%u given)", LG_MERGE_MAX, n);
        return -1;
    }
    if (check_compatible(ins, n, err) < 0)
        return -1;
    npoints = ins[0].npoints;
    for (unsigned i = 0; i < n; i++)
        out->inputs[i] = ins[i].id;
    out->nhosts = label_hosts(ins, n, out->inputs, host_of);
    out->run.points = xcalloc(npoints, sizeof(*out->run.points));
    out->run.npoints = npoints;
    out->run.inputs = out->inputs;
    out->run.ninputs = n;
    out->run.started = ins[0].started;
    make_run_id(out->run.run_id);
    for (unsigned i = 0; i < n; i++) {
        if (ins[i].started < out->run.started)
            out->run.started = ins[i].started;
        out->run.interrupted = out->run.interrupted || ins[i].interrupted;
        out->run.prepared += ins[i].prepared;
        if (ins[i].prepare_s > out->run.prepare_s)
            out->run.prepare_s = ins[i].prepare_s;
    }
    for (unsigned k = 0; k < npoints; k++) {
        struct lg_point *p = &out->run.points[k];

        for (int t = 0; t <= LG_REQ_ALL; t++)
            lg_stats_init(&p->st[t]);
        if (check_windows(ins, n, k, &p->window_start_ms, &p->window_end_ms, err) < 0)
            goto fail;
        for (unsigned i = 0; i < n; i++) {
            const struct lg_point *q = &ins[i].points[k];
            p->users += q->users;
            p->threads += q->threads;
            /* X = all successes / the window, which is the same one in every input; the
             * common window was not sized (window.h): window_max_s stays 0 */
            p->window_s += q->window_s / n;
            p->unsent += q->unsent;
            p->abandoned += q->abandoned;
            p->interrupted = p->interrupted || q->interrupted;
            for (int t = 0; t <= LG_REQ_ALL; t++)
                lg_stats_merge(&p->st[t], &q->st[t]);
        }
        if (merge_monitor(ins, n, k, out->inputs, host_of, out->nhosts, &p->mon, err) < 0)
            goto fail;
    }
    merge_config(ins, n, out);
    out->run.cfg = &out->cfg;
    return 0;
fail:
    lg_merged_release(out);
    return -1;
}

void lg_merged_release(struct lg_merged *m)
{
    free(m->run.points);
    m->run.points = NULL;
    m->run.npoints = 0;
}

static bool is_host_group(const char *name)
{
    return strncmp(name, "all@", 4) == 0;
}

void lg_merge_fix_analysis(const struct lg_merged *m, struct lg_run_analysis *a)
{
    if (m->nhosts < 2)
        return;
    for (unsigned i = 0; i < a->npts && i < m->run.npoints; i++) {
        const struct lg_monitor_result *mon = &m->run.points[i].mon;
        struct lg_point_analysis *pa = &a->pts[i];
        double top = 0;

        pa->top_proc = -1;
        for (unsigned r = 0; r < mon->nprocs; r++) {
            if (!is_host_group(mon->procs[r].name) && mon->procs[r].nproc > 0 &&
                mon->procs[r].cpu_cores > top) {
                top = mon->procs[r].cpu_cores;
                pa->top_proc = (int)r;
            }
        }
        /* a host's whole CPU as the bottleneck, more than half of it that host's loadgen */
        if (pa->bottleneck >= 0 && strncmp(pa->res[pa->bottleneck].name, "cpu:all@", 8) == 0) {
            const char *label = pa->res[pa->bottleneck].name + 8;
            const struct lg_proc_usage *host = NULL;
            double lg = 0;
            for (unsigned r = 0; r < mon->nprocs; r++) {
                const char *at = strrchr(mon->procs[r].name, '@');
                if (at == NULL || strcmp(at + 1, label) != 0)
                    continue;
                if (is_host_group(mon->procs[r].name))
                    host = &mon->procs[r];
                else if (mon->procs[r].is_loadgen)
                    lg += mon->procs[r].cpu_cores;
            }
            if (host != NULL && lg * 2 > host->cpu_cores)
                pa->lg_bottleneck = true;
        }
    }
}

/* ---- the sub-command ------------------------------------------------------------------- */

static void merge_usage(FILE *out)
{
    fprintf(out,
            "Usage: loadgen merge [-o DIR] RUNDIR...\n"
            "Combines the --out directories of loadgen processes that measured the same\n"
            "wall-clock windows (started with the same --start-at, e.g. one per host) into one\n"
            "run, and reports it as loadgen reports a run (points.csv, run.json, summary.md):\n"
            "  - N, successes, errors and bytes are summed; X = all successes over the common\n"
            "    window; response times come from the latency histograms merged bucket by\n"
            "    bucket (exact), never from averaged percentiles;\n"
            "  - the laws, bounds, N* and the bottleneck are computed on the merged figures;\n"
            "  - resources: a host's CPU, disks and watched processes are taken once per host\n"
            "    (by host name), its loadgen processes summed; with several hosts each name\n"
            "    gets '@HOST' and each host's whole CPU is the resource cpu:all@HOST.\n"
            "Inputs must have the same request mix, --names (source, N, law), think time,\n"
            "duration, warm-up, loop, model and number of points, and each point's windows\n"
            "must overlap by at least %.0f%% (a warning below %.0f%%). At most %d directories.\n"
            "\n"
            "  -o, --out DIR   write the merged reports into DIR (not one of the inputs)\n"
            "  -v, --verbose   more log detail\n"
            "  -h, --help      print this help\n"
            "\n"
            "Exit status: 0 ok, 1 unreadable or incompatible inputs or unwritable output,\n"
            "2 bad flags.\n",
            LG_MERGE_OVERLAP_MIN * 100, LG_MERGE_OVERLAP_WARN * 100, LG_MERGE_MAX);
}

static bool same_dir(const char *a, const char *b)
{
    struct stat sa;
    struct stat sb;

    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static const struct option lg_merge_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"verbose", no_argument, NULL, 'v'},
    {"out", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

int lg_merge_main(int argc, char **argv)
{
    static struct lg_merged merged; /* large */
    struct lg_runfile *ins;
    struct lg_run_analysis an;
    char err[LG_ERR_LEN];
    const char *out_dir = "";
    unsigned n;
    int rc = 0;

    opterr = 0;
    optind = 0;
    for (;;) {
        int opt = getopt_long(argc - 1, argv + 1, ":hvo:", lg_merge_longopts, NULL);
        if (opt == -1)
            break;
        if (opt == 'h') {
            merge_usage(stdout);
            return 0;
        } else if (opt == 'v') {
            log_init("loadgen", LOG_DEBUG);
        } else if (opt == 'o') {
            out_dir = optarg;
        } else {
            fprintf(stderr, "loadgen merge: %s '%s' (see loadgen merge --help)\n",
                    opt == ':' ? "option needs a value:" : "unknown option", argv[optind]);
            return 2;
        }
    }
    optind++; /* past "merge": indices into argv from here on */
    n = (unsigned)(argc - optind);
    if (n < 2 || n > LG_MERGE_MAX) {
        fprintf(stderr, "loadgen merge: give 2 to %d run directories (%u given)\n", LG_MERGE_MAX,
                n);
        return 2;
    }
    if (strlen(out_dir) >= sizeof(merged.cfg.out_dir)) {
        fprintf(stderr, "loadgen merge: --out: name too long\n");
        return 2;
    }
    for (unsigned i = 0; i < n && out_dir[0]; i++) {
        if (same_dir(out_dir, argv[optind + (int)i])) {
            fprintf(stderr, "loadgen merge: --out '%s' is an input: give a new directory\n",
                    out_dir);
            return 2;
        }
    }

    ins = xcalloc(n, sizeof(*ins));
    for (unsigned i = 0; i < n && rc == 0; i++)
        rc = lg_runfile_load(&ins[i], argv[optind + (int)i], err);
    if (rc == 0)
        rc = lg_merge_combine(ins, n, &merged, err);
    for (unsigned i = 0; i < n; i++)
        lg_runfile_release(&ins[i]);
    free(ins);
    if (rc < 0) {
        fprintf(stderr, "loadgen merge: %s\n", err);
        return 1;
    }
    snprintf(merged.cfg.out_dir, sizeof(merged.cfg.out_dir), "%s", out_dir);
    merged.cfg.argc = argc;
    merged.cfg.argv = argv;

    lg_analyze(&merged.run, &an);
    lg_merge_fix_analysis(&merged, &an);
    printf("merged %u runs on %u host%s:", n, merged.nhosts, merged.nhosts == 1 ? "" : "s");
    for (unsigned i = 0; i < n; i++)
        printf(" %s (%s)", merged.inputs[i].dir, merged.inputs[i].hostname);
    printf("\n");
    lg_report_stdout(stdout, &merged.run, &an);
    fflush(stdout);
    if (lg_report_files(&merged.run, &an) < 0)
        rc = -1;
    lg_analysis_release(&an);
    lg_merged_release(&merged);
    return rc < 0 ? 1 : 0;
}
