/*
 * report.c - see report.h. CSV columns: fixed figures first, then one u_/d_ pair per resource
 * seen in any point (cpu, cpu:<process group>, disk:<name>, redis), then per-group process
 * details; ':' in resource names becomes '_' in column names. Empty cells mean "not measured".
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "procstat.h"
#include "sweep.h"
#include "xalloc.h"

#define LG_COLS LG_ANA_RES
#define LG_LITTLE_WARN 0.05 /* |relative difference| above which Little's law flags a point:
                              * a window of LG_WINDOW_CYCLES (R + Z) holds it to about this */

struct lg_colset {
    char names[LG_COLS][LG_RES_NAME];
    unsigned n;
};

struct lg_machine {
    char host[256];
    struct utsname uts;
    char cpu_model[256];
    unsigned ncpu;
    uint64_t mem_kb;
};

static bool is_password_flag(const char *a, size_t len)
{
    return len >= 4 && len <= 10 && strncmp(a, "--password", len) == 0;
}

/* --header and --body may hold credentials too (a token, a form with a password). */
static bool is_header_flag(const char *a, size_t len)
{
    return (len == 2 && strncmp(a, "-H", 2) == 0) ||
           (len >= 5 && len <= 8 && strncmp(a, "--header", len) == 0);
}

static bool is_body_flag(const char *a, size_t len)
{
    return len == 6 && strncmp(a, "--body", len) == 0;
}

const char *lg_report_arg(int argc, char **argv, int i)
{
    const char *a = argv[i];
    const char *eq = strchr(a, '=');
    const char *prev = i > 0 && i < argc ? argv[i - 1] : "";
    size_t plen = strlen(prev);

    if (is_password_flag(prev, plen) || is_header_flag(prev, plen) || is_body_flag(prev, plen))
        return "(redacted)";
    if (eq != NULL && is_password_flag(a, (size_t)(eq - a)))
        return "--password=(redacted)";
    if (eq != NULL && is_header_flag(a, (size_t)(eq - a)))
        return "--header=(redacted)";
    if (eq != NULL && is_body_flag(a, (size_t)(eq - a)))
        return "--body=(redacted)";
    if (strncmp(a, "-H", 2) == 0 && a[2] != '\0')
        return "-H(redacted)";
    return a;
}

static const char *model_name(const struct lg_config *cfg)
{
    return cfg->model == LG_MODEL_EVENTS ? "events" : "threads";
}

static bool is_mix(const struct lg_config *cfg)
{
    int n = 0;

    for (int t = 0; t < LG_REQ_TYPES; t++)
        n += lg_config_has(cfg, (enum lg_req)t);
    return n > 1;
}

static void colset_add(struct lg_colset *c, const char *name)
{
    for (unsigned i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return;
    if (c->n < LG_COLS)
        snprintf(c->names[c->n++], LG_RES_NAME, "%s", name);
}

static const struct lg_resource *find_res(const struct lg_point_analysis *pa, const char *name)
{
    for (unsigned i = 0; i < pa->nres; i++)
        if (strcmp(pa->res[i].name, name) == 0)
            return &pa->res[i];
    return NULL;
}

/* A column-safe copy of a resource name. */
static void colname(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < cap; i++)
        out[i] = (in[i] == ':' || in[i] == ',' || in[i] == ' ') ? '_' : in[i];
    out[i] = '\0';
}

/* v with prec decimals, or nothing when it is not finite (an empty cell). */
static void fnum(FILE *f, int prec, double v)
{
    if (isfinite(v))
        fprintf(f, "%.*f", prec, v);
}

static const char *bottleneck_name(const struct lg_point_analysis *pa)
{
    return pa->bottleneck >= 0 ? pa->res[pa->bottleneck].name : "";
}

/* Little's law off by more than LG_LITTLE_WARN at a point that completed anything. */
static bool little_off(const struct lg_run_analysis *a, const struct lg_point_analysis *pa)
{
    return a->closed_loop && pa->f[LG_REQ_ALL].ok > 0 && fabs(pa->little_rel) > LG_LITTLE_WARN;
}

/*
 * "window 8.00 s = 7.9 (R + Z), 56 completions; the rule asks 20 (R + Z) and 200: capped at
 * --window-max 8.00 s": the window of a point against the rule (window.h).
 */
static void window_desc(char *out, size_t cap, const struct lg_run_analysis *a,
                        const struct lg_point *p, const struct lg_point_analysis *pa)
{
    const struct lg_figures *x = &pa->f[LG_REQ_ALL];
    double cycle = x->r_mean_s + a->z_s;
    size_t len;

    len = (size_t)snprintf(out, cap, "window %.2f s", p->window_s);
    if (len < cap && x->ok > 0 && cycle > 0)
        len += (size_t)snprintf(out + len, cap - len, " = %.1f (R + Z)", p->window_s / cycle);
    if (len < cap)
        len += (size_t)snprintf(out + len, cap - len, ", %" PRIu64 " completions",
                                x->ok + x->errors);
    if (len >= cap || pa->window_rule == LG_WINDOW_MET)
        return;
    len += (size_t)snprintf(out + len, cap - len, "; the rule asks %u (R + Z) and %u",
                            LG_WINDOW_CYCLES, LG_WINDOW_OK);
    if (len >= cap)
        return;
    if (pa->window_rule == LG_WINDOW_CAPPED)
        snprintf(out + len, cap - len, ": capped at --window-max %.2f s", p->window_max_s);
    else if (pa->window_rule == LG_WINDOW_SHORT)
        snprintf(out + len, cap - len, ": short of it below --window-max %.2f s",
                 p->window_max_s);
    else
        snprintf(out + len, cap - len, ": the window was not sized");
}

/* ---- stdout ---------------------------------------------------------------------------- */

/* Measured throughput more than 5% above its asymptotic bound: the D used is too large. */
static bool above_bound(const struct lg_run_analysis *a, const struct lg_point_analysis *pa)
{
    return a->closed_loop && isfinite(pa->bounds.x_upper) &&
           pa->f[LG_REQ_ALL].x > pa->bounds.x_upper * 1.05;
}

/* "; names: SOURCE (KIND, N, LAW)" with --names, else "". */
static void names_desc(char *out, size_t cap, const struct lg_config *cfg)
{
    if (cfg->names.kind == LG_NAMES_NONE) {
        out[0] = '\0';
        return;
    }
    snprintf(out, cap, "; names: %.200s (%s, %" PRIu64 ", %s", cfg->names_source,
             lg_names_kind_name(&cfg->names), cfg->names.n,
             cfg->pick_kind == LG_PICK_ZIPF ? "zipf " : "uniform)");
    if (cfg->pick_kind == LG_PICK_ZIPF)
        snprintf(out + strlen(out), cap - strlen(out), "%g%s)", cfg->zipf_s,
                 cfg->names_spread ? ", spread" : "");
}

static void load_desc(char *out, size_t cap, const struct lg_config *cfg)
{
    char names[320];

    names_desc(names, sizeof(names), cfg);
    if (lg_config_has(cfg, LG_REQ_GET) && cfg->names.kind != LG_NAMES_NONE)
        snprintf(out, cap, "%s%s", cfg->mix_desc, names);
    else if (lg_config_has(cfg, LG_REQ_GET) && lg_config_has(cfg, LG_REQ_PUT))
        snprintf(out, cap, "%s (file %.300s, put %" PRIu64 " B)", cfg->mix_desc, cfg->file,
                 cfg->put_size);
    else if (lg_config_has(cfg, LG_REQ_GET))
        snprintf(out, cap, "%s (file %.300s)", cfg->mix_desc, cfg->file);
    else if (lg_config_has(cfg, LG_REQ_PUT))
        snprintf(out, cap, "%s (%" PRIu64 " B bodies)", cfg->mix_desc, cfg->put_size);
    else if (lg_config_has(cfg, LG_REQ_CUSTOM) && cfg->requests_file != NULL)
        snprintf(out, cap, "%s (%u requests of %.300s, %s)%s", cfg->mix_desc, cfg->reqs.n,
                 cfg->requests_file, cfg->requests_order == LG_ORDER_RANDOM ? "random" : "seq",
                 names);
    else if (lg_config_has(cfg, LG_REQ_CUSTOM) && cfg->reqs.n > 0)
        snprintf(out, cap, "%s (%s %.300s)%s", cfg->mix_desc, cfg->reqs.reqs[0].method,
                 cfg->reqs.reqs[0].path, names);
    else
        snprintf(out, cap, "%s", cfg->mix_desc);
}

static void top_user(char *out, size_t cap, const struct lg_point *p,
                     const struct lg_point_analysis *pa)
{
    if (pa->top_proc < 0) {
        out[0] = '\0';
        return;
    }
    snprintf(out, cap, "; largest watched CPU user: %s %.2f cores", p->mon.procs[pa->top_proc].name,
             p->mon.procs[pa->top_proc].cpu_cores);
}

/* ---- the queueing model ------------------------------------------------------------------ */

static unsigned users_at(const struct lg_run *run, int i)
{
    return i >= 0 ? run->points[i].users : 0;
}

static void model_stdout(FILE *out, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_model_out *m = &a->model;

    if (!a->closed_loop)
        return;
    if (!m->ok) {
        fprintf(out, "model: none (%s)\n", m->why);
        return;
    }
    if (m->layered) {
        fprintf(out, "model (layered, exact MVA: software stations");
        for (unsigned i = 0; i < m->nsw; i++)
            fprintf(out, "%s %s x%u", i ? "," : "", m->sw[i].name, m->sw[i].k);
        fprintf(out, " over %u cores; path share %.2f", m->ncpu, m->phi);
    } else {
        fprintf(out, "model (exact MVA: CPU %u servers, c = %.2f; disks, Redis", m->ncpu,
                m->per_job);
    }
    fprintf(out,
            "; fixed delay %.4f ms): knee %u with per-N demands, %u with the N = %u demands "
            "(N* = %u); X within 10%% at %u/%u points (per-N), %u/%u (N = %u)\n",
            m->fixed_s * 1e3, users_at(run, m->knee_pern),
            users_at(run, m->knee_n1), users_at(run, m->base), users_at(run, m->nstar),
            m->within_pern, m->npred, m->within_n1, m->npred, users_at(run, m->base));
}

/* One model prediction of point i as CSV cells: X, R, error (empty when there is none). */
static void csv_pred(FILE *f, const struct lg_model_pred *p)
{
    fprintf(f, ",");
    fnum(f, 1, p->x);
    fprintf(f, ",");
    fnum(f, 4, p->r_s * 1e3);
    fprintf(f, ",");
    fnum(f, 4, p->err);
}

static const struct lg_model_pred *pred_at(const struct lg_model_pred *p, unsigned i)
{
    static const struct lg_model_pred none = {NAN, NAN, NAN};

    return p != NULL ? &p[i] : &none;
}

/* ---- software stations (thread samples) -------------------------------------------------- */

struct lg_swset {
    char names[2 * LG_SW_MAX_STATIONS][LG_SW_NAME];
    unsigned n;
};

/* Every station any point of the run has, in order of first appearance. */
static void sw_columns(const struct lg_run *run, struct lg_swset *s)
{
    memset(s, 0, sizeof(*s));
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_thr_result *t = &run->points[i].mon.sw;
        for (unsigned j = 0; j < t->nst; j++) {
            unsigned k = 0;
            while (k < s->n && strcmp(s->names[k], t->st[j].name) != 0)
                k++;
            if (k == s->n && s->n < 2 * LG_SW_MAX_STATIONS)
                snprintf(s->names[s->n++], LG_SW_NAME, "%s", t->st[j].name);
        }
    }
}

static const struct lg_sw_station *sw_find(const struct lg_thr_result *t, const char *name)
{
    for (unsigned i = 0; i < t->nst; i++)
        if (strcmp(t->st[i].name, name) == 0)
            return &t->st[i];
    return NULL;
}

static void csv_sw_header(FILE *f, const struct lg_run *run)
{
    struct lg_swset s;

    sw_columns(run, &s);
    fprintf(f, ",thread_hz,thread_sampler_pct");
    for (unsigned i = 0; i < s.n; i++)
        fprintf(f, ",sw_threads_%s,sw_busy_%s,sw_run_%s,sw_blocked_%s,sw_cpu_max_pct_%s",
                s.names[i], s.names[i], s.names[i], s.names[i], s.names[i]);
}

/* The station cells of point p (NULL: a per-type row, empty cells). */
static void csv_sw_row(FILE *f, const struct lg_run *run, const struct lg_point *p)
{
    const struct lg_thr_result *t = p != NULL ? &p->mon.sw : NULL;
    struct lg_swset s;

    sw_columns(run, &s);
    if (t != NULL && t->ticks > 0)
        fprintf(f, ",%.0f,%.2f", t->hz, t->cost_cores * 100);
    else
        fprintf(f, ",,");
    for (unsigned i = 0; i < s.n; i++) {
        const struct lg_sw_station *st = t != NULL ? sw_find(t, s.names[i]) : NULL;
        if (st == NULL)
            fprintf(f, ",,,,,");
        else
            fprintf(f, ",%u,%.3f,%.3f,%.3f,%.1f", st->threads, st->busy, st->run, st->blocked,
                    st->cpu_max * 100);
    }
}

static void json_num(FILE *f, double v);
static void json_str(FILE *f, const char *s);

static void json_sw(FILE *f, const struct lg_thr_result *t)
{
    fprintf(f, ",\n       \"threads\": {\"samples\": %" PRIu64 ", \"hz\": ", t->ticks);
    json_num(f, t->ticks > 0 ? t->hz : NAN);
    fprintf(f, ", \"window_s\": ");
    json_num(f, t->window_s);
    fprintf(f, ", \"sampler_cores\": ");
    json_num(f, t->ticks > 0 ? t->cost_cores : NAN);
    fprintf(f, ", \"sampled\": %u, \"left_out\": %u, \"stations_left_out\": %u, \"stations\": [",
            t->threads, t->left_out, t->st_left_out);
    for (unsigned i = 0; i < t->nst; i++) {
        const struct lg_sw_station *s = &t->st[i];
        fprintf(f, "%s{\"name\": ", i ? ",\n         " : "");
        json_str(f, s->name);
        fprintf(f, ", \"nested\": %s, \"pinned\": %s, \"threads\": %u, \"busy\": ",
                s->nested ? "true" : "false", s->pinned ? "true" : "false", s->threads);
        json_num(f, s->busy);
        fprintf(f, ", \"run\": ");
        json_num(f, s->run);
        fprintf(f, ", \"blocked\": ");
        json_num(f, s->blocked);
        fprintf(f, ", \"cpu_cores\": ");
        json_num(f, s->cpu_cores);
        fprintf(f, ", \"cpu_max_thread\": ");
        json_num(f, s->cpu_max);
        fprintf(f, ", \"top_wait\": ");
        json_str(f, s->top_wait);
        fprintf(f, ", \"top_wait_share\": ");
        json_num(f, s->top_wait_frac);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}

/* "s2-wrk 1.93/2 busy (run 0.62, blocked 1.31: poll_schedule_timeout 97%), ..." */
static void sw_line(FILE *f, const struct lg_thr_result *t)
{
    for (unsigned i = 0; i < t->nst; i++) {
        const struct lg_sw_station *s = &t->st[i];
        fprintf(f, "%s%s%s %.2f/%u busy (run %.2f, blocked %.2f", i ? ", " : "", s->name,
                s->nested ? " (nested)" : "", s->busy, s->threads, s->run, s->blocked);
        if (s->top_wait[0] != '\0')
            fprintf(f, ": %s %.0f%%", s->top_wait, s->top_wait_frac * 100);
        fprintf(f, ")");
    }
}

static void sw_stdout(FILE *out, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_thr_result *t;

    if (a->xmax < 0 || run->points[a->xmax].mon.sw.ticks == 0)
        return;
    t = &run->points[a->xmax].mon.sw;
    fprintf(out, "software stations at X max (threads busy of k): ");
    sw_line(out, t);
    fprintf(out, "; sampled at %.0f Hz for %.1f%% of a core\n", t->hz, t->cost_cores * 100);
}

/* Whether N* is the largest N of a sweep of several points: the knee was not seen. */
static bool nstar_is_last(const struct lg_run *run, const struct lg_run_analysis *a)
{
    if (run->npoints < 2 || a->nstar < 0)
        return false;
    for (size_t i = 0; i < run->npoints; i++)
        if (run->points[i].users > run->points[a->nstar].users)
            return false;
    return true;
}

static void sw_md(FILE *f, const struct lg_run *run)
{
    bool any = false;

    for (unsigned i = 0; i < run->npoints; i++)
        any = any || run->points[i].mon.sw.ticks > 0;
    if (!any)
        return;
    fprintf(f, "\n## Software stations (thread samples)\n\n| N | samples (Hz, sampler's CPU) "
               "| threads busy of k (running or waiting for a core, blocked: top wait) |\n"
               "|---:|---|---|\n");
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_thr_result *t = &run->points[i].mon.sw;
        fprintf(f, "| %u | %" PRIu64 " (%.0f Hz, %.1f%% of a core) | ", run->points[i].users,
                t->ticks, t->hz, t->cost_cores * 100);
        sw_line(f, t);
        fprintf(f, " |\n");
    }
    fprintf(f, "\nA thread is busy while it runs, waits for a core, or is blocked other than "
               "waiting for work (an event loop in epoll, the committer on its condition "
               "variable); a nested station answers another's blocking calls and is not a "
               "station of the model.\n");
}

/* One line on the TLS handshakes of point p (https:// runs only). */
static void tls_line(char *out, size_t cap, const struct lg_point *p)
{
    const struct lg_tls_stats *t = &p->tls;

    snprintf(out, cap,
             "TLS at N = %u: %s %s; in the window %" PRIu64 " full and %" PRIu64
             " resumed handshakes, %" PRIu64 " failed; handshake p50 %.3f ms, p99 %.3f ms",
             p->users, t->version ? t->version : "-", t->cipher ? t->cipher : "-", t->full,
             t->resumed, t->failed, (double)hist_percentile(&t->hs_ns, 50) / 1e6,
             (double)hist_percentile(&t->hs_ns, 99) / 1e6);
}

/*
 * "custom": the custom requests (reqspec.h), or null: how many, their order and source, the
 * first one's method and path, how many -H headers (their values may be secret: not written).
 */
static void json_custom_config(FILE *f, const struct lg_config *c)
{
    fprintf(f, ",\n    \"custom\": ");
    if (!lg_config_has(c, LG_REQ_CUSTOM) || c->reqs.n == 0) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"requests\": %u, \"order\": \"%s\", \"requests_file\": ", c->reqs.n,
            c->requests_order == LG_ORDER_RANDOM ? "random" : "seq");
    if (c->requests_file != NULL)
        json_str(f, c->requests_file);
    else
        fprintf(f, "null");
    fprintf(f, ", \"method\": ");
    json_str(f, c->reqs.reqs[0].method);
    fprintf(f, ", \"path\": ");
    json_str(f, c->reqs.reqs[0].path);
    fprintf(f, ", \"headers\": %u, \"body_bytes\": %" PRIu64 "}", c->nheaders,
            c->reqs.body_total);
}

/*
 * "names": the --names source (its argument), its kind (file or pattern), N, the law and
 * whether --spread scattered the ranks, or null.
 */
static void json_names_config(FILE *f, const struct lg_config *c)
{
    fprintf(f, ",\n    \"names\": ");
    if (c->names.kind == LG_NAMES_NONE) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"source\": ");
    json_str(f, c->names_source);
    fprintf(f, ", \"kind\": \"%s\", \"n\": %" PRIu64 ", \"pick\": \"%s\", \"zipf_s\": ",
            lg_names_kind_name(&c->names), c->names.n,
            c->pick_kind == LG_PICK_ZIPF ? "zipf" : "uniform");
    json_num(f, c->pick_kind == LG_PICK_ZIPF ? c->zipf_s : NAN);
    fprintf(f, ", \"spread\": %s}", c->names_spread ? "true" : "false");
}

/* What run.json says of https:// in the config: verification, resumption. */
static void json_tls_config(FILE *f, const struct lg_config *c)
{
    fprintf(f, ", \"new_conn_per_request\": %s, \"tls\": ", c->new_conn ? "true" : "false");
    if (!c->target.tls) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"verify\": %s, \"insecure\": %s, \"cacert\": ",
            c->insecure ? "false" : "true", c->insecure ? "true" : "false");
    if (c->cacert[0] != '\0')
        json_str(f, c->cacert);
    else
        fprintf(f, "null");
    fprintf(f, ", \"resume\": %s}", c->tls_resume ? "true" : "false");
}

/* A point's handshakes in run.json: null for plain http. */
static void json_tls_point(FILE *f, const struct lg_run *run, const struct lg_point *p)
{
    const struct lg_tls_stats *t = &p->tls;

    fprintf(f, ",\n     \"tls\": ");
    if (!run->cfg->target.tls) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"version\": ");
    json_str(f, t->version ? t->version : "");
    fprintf(f, ", \"cipher\": ");
    json_str(f, t->cipher ? t->cipher : "");
    fprintf(f,
            ", \"full\": %" PRIu64 ", \"resumed\": %" PRIu64 ", \"failed\": %" PRIu64
            ", \"handshake_ms\": {\"mean\": ",
            t->full, t->resumed, t->failed);
    json_num(f, hist_count(&t->hs_ns) > 0 ? hist_mean(&t->hs_ns) / 1e6 : NAN);
    fprintf(f, ", \"p50\": ");
    json_num(f, hist_count(&t->hs_ns) > 0 ? (double)hist_percentile(&t->hs_ns, 50) / 1e6 : NAN);
    fprintf(f, ", \"p90\": ");
    json_num(f, hist_count(&t->hs_ns) > 0 ? (double)hist_percentile(&t->hs_ns, 90) / 1e6 : NAN);
    fprintf(f, ", \"p99\": ");
    json_num(f, hist_count(&t->hs_ns) > 0 ? (double)hist_percentile(&t->hs_ns, 99) / 1e6 : NAN);
    fprintf(f, ", \"max\": ");
    json_num(f, hist_count(&t->hs_ns) > 0 ? (double)t->hs_ns.max / 1e6 : NAN);
    fprintf(f, "}}");
}

void lg_report_stdout(FILE *out, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_config *cfg = run->cfg;
    bool sweep = run->npoints > 1;
    char *kinds = xmalloc(LG_ERRTAB_TEXT_LEN);
    char load[400];

    load_desc(load, sizeof(load), cfg);
    fprintf(out, "loadgen run %s: %s, %s loop, model %s, Z = %.3f ms\n", run->run_id, load,
            a->closed_loop ? "closed" : "open", model_name(cfg), a->z_s * 1e3);
    if (run->prepared > 0)
        fprintf(out, "prepared %" PRIu64 " accounts in %.2f s\n", run->prepared, run->prepare_s);
    fprintf(out, "%7s %11s %9s %9s %9s %8s  %-18s %9s %8s\n", "N", "X (req/s)", "R (ms)",
            "p50 (ms)", "p99 (ms)", "errors", "bottleneck (U)", "Dmax(ms)", "Little");
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_point *p = &run->points[i];
        const struct lg_point_analysis *pa = &a->pts[i];
        const struct lg_figures *f = &pa->f[LG_REQ_ALL];
        char bn[64] = "-";
        char little[16] = "-";

        if (pa->bottleneck >= 0)
            snprintf(bn, sizeof(bn), "%s (%.0f%%)", bottleneck_name(pa),
                     pa->res[pa->bottleneck].util * 100);
        if (a->closed_loop)
            snprintf(little, sizeof(little), "%+.1f%%", pa->little_rel * 100);
        fprintf(out, "%7u %11.1f %9.3f %9.3f %9.3f %8" PRIu64 "  %-18s %9.4f %8s%s\n", p->users,
                f->x, f->r_mean_s * 1e3, f->p50_s * 1e3, f->p99_s * 1e3, f->errors, bn,
                pa->dmax_s * 1e3, little, p->interrupted ? "  (interrupted)" : "");
        if (!a->closed_loop)
            fprintf(out,
                    "        open loop at %.1f req/s (%s arrivals): mean in system X*R = "
                    "%.2f, backlog never sent %" PRIu64 "\n",
                    cfg->rate, cfg->arrivals == LG_ARRIVALS_POISSON ? "poisson" : "constant",
                    pa->little_n, p->unsent);
    }
    for (unsigned i = 0; cfg->target.tls && i < run->npoints; i++) {
        char line[256];
        tls_line(line, sizeof(line), &run->points[i]);
        fprintf(out, "%s\n", line);
    }
    if (cfg->target.tls && cfg->insecure)
        fprintf(out, "WARNING: --insecure: the server's certificate was not verified\n");
    /* N*, the knee and the model compare points: with one point they say nothing */
    if (a->closed_loop && a->nstar >= 0 && sweep) {
        const struct lg_point_analysis *s = &a->pts[a->nstar];
        fprintf(out,
                "N* = %u (smallest N with X within 5%% of the maximum), R at N* = %.3f ms; "
                "X max = %.1f req/s at N = %u\n",
                run->points[a->nstar].users, s->f[LG_REQ_ALL].r_mean_s * 1e3,
                a->pts[a->xmax].f[LG_REQ_ALL].x, run->points[a->xmax].users);
        if (nstar_is_last(run, a))
            fprintf(out, "N* is the largest N measured: X was still growing there, so the knee "
                         "may lie beyond it (measure larger N)\n");
    }
    if (a->xmax >= 0) {
        const struct lg_point_analysis *m = &a->pts[a->xmax];
        char tu[128];
        top_user(tu, sizeof(tu), &run->points[a->xmax], m);
        if (m->bottleneck >= 0) {
            if (a->closed_loop && sweep)
                fprintf(out,
                        "N*_law = (D + Z) / D_max = %.1f with D = %s = %.4f ms, D_max = "
                        "%.4f ms (one server, constant demands: see the model)\n",
                        a->knee_law, a->d_source, a->d_s * 1e3, m->dmax_s * 1e3);
            fprintf(out, "bottleneck at X max: %s (U = %.0f%%)%s\n", bottleneck_name(m),
                    m->res[m->bottleneck].util * 100, tu);
            fprintf(out,
                    "CPU outside the watched processes at X max: %.2f of %.2f busy cores "
                    "(%.0f%%)\n",
                    m->outside_cores, run->points[a->xmax].mon.machine_cpu *
                                          run->points[a->xmax].mon.ncpu,
                    m->outside_share * 100);
        } else {
            fprintf(out, "no resource samples (window too short for --sample-ms?)\n");
        }
    }
    if (sweep)
        model_stdout(out, run, a);
    sw_stdout(out, run, a);
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_point_analysis *pa = &a->pts[i];
        if (pa->lg_bottleneck)
            fprintf(out,
                    "WARNING: at N = %u the bottleneck is the load generator itself (%s): "
                    "these figures measure loadgen, not the server\n",
                    run->points[i].users, bottleneck_name(pa));
        if (pa->not_stack)
            fprintf(out,
                    "WARNING: at N = %u the stack is not the bottleneck: the machine's CPU, its "
                    "busiest resource, is %.0f%% used outside the watched processes (%.2f "
                    "cores): these figures measure the machine's other load\n",
                    run->points[i].users, pa->outside_share * 100, pa->outside_cores);
        if (little_off(a, pa)) {
            char wd[192];
            window_desc(wd, sizeof(wd), a, &run->points[i], pa);
            fprintf(out,
                    "WARNING: at N = %u Little's law is off by %+.1f%% (X*(R+Z) = %.2f; %s): "
                    "the measurement is suspect (errors? window too short?)\n",
                    run->points[i].users, pa->little_rel * 100, pa->little_n, wd);
        }
        if (pa->f[LG_REQ_ALL].errors > 0) {
            lg_errtab_format(&run->points[i].st[LG_REQ_ALL].by_kind, LG_ERRTAB_CONSOLE, kinds,
                             LG_ERRTAB_TEXT_LEN);
            fprintf(out, "WARNING: at N = %u, %" PRIu64 " requests failed: errors: %s\n",
                    run->points[i].users, pa->f[LG_REQ_ALL].errors, kinds);
        }
        if (above_bound(a, pa))
            fprintf(out,
                    "note: at N = %u, X = %.1f is above its bound %.1f: D = %s overestimates "
                    "the demand (e.g. idle CPUs waking up slowly between requests at N = 1)\n",
                    run->points[i].users, pa->f[LG_REQ_ALL].x, pa->bounds.x_upper, a->d_source);
    }
    if (a->closed_loop)
        fprintf(out, "(closed-loop R is service time under coordinated omission: read it with N "
                     "and X)\n");
    if (run->interrupted)
        fprintf(out, "interrupted: the last point is partial\n");
    if (run->cfg->out_dir[0] != '\0')
        fprintf(out, "results: %s/{points.csv,run.json,summary.md}\n", run->cfg->out_dir);
    else
        fprintf(out, "WARNING: no -o DIR: nothing was written (points.csv, run.json and "
                     "summary.md need -o DIR)\n");
    free(kinds);
}

/* ---- points.csv ------------------------------------------------------------------------- */

/* The process groups of the run (the same for every sampled point), or NULL. */
static const struct lg_monitor_result *groups_of(const struct lg_run *run)
{
    for (unsigned i = 0; i < run->npoints; i++)
        if (run->points[i].mon.nprocs > 0)
            return &run->points[i].mon;
    return NULL;
}

static void csv_header(FILE *f, const struct lg_colset *res, const struct lg_run *run)
{
    const struct lg_monitor_result *m = groups_of(run);
    char c[LG_RES_NAME];

    fprintf(f, "run_id,point,type,users,threads,model,loop,rate,think_ms,window_s,ok,x_rps,"
               "r_mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,errors");
    for (int e = 0; e < LG_ERR_COUNT; e++)
        fprintf(f, ",err_%s", lg_err_name((enum lg_err)e));
    fprintf(f, ",body_MBps,unsent,abandoned,little_n,little_rel_diff,window_goal_s,window_rule,"
               "d_ms,d_source,bottleneck,"
               "d_max_ms,lg_bottleneck,x_upper_rps,r_lower_ms,is_nstar,x_model_rps,r_model_ms,"
               "err_model,x_model_n1_rps,r_model_n1_ms,err_model_n1,is_knee_model,"
               "is_knee_model_n1");
    for (unsigned i = 0; i < res->n; i++) {
        colname(res->names[i], c, sizeof(c));
        fprintf(f, ",u_%s,d_%s_ms", c, c);
    }
    for (unsigned i = 0; m != NULL && i < m->nprocs; i++)
        fprintf(f,
                ",cpu_core_pct_%s,cpu_machine_pct_%s,nproc_%s,rss_MB_%s,read_Bps_%s,write_Bps_%s,"
                "ctxsw_ps_%s",
                m->procs[i].name, m->procs[i].name, m->procs[i].name, m->procs[i].name,
                m->procs[i].name, m->procs[i].name, m->procs[i].name);
    fprintf(f, ",lo_Bps,redis_ops_ps");
    csv_sw_header(f, run);
    fprintf(f, ",errors_by_kind\n"); /* last, so that readers by position keep working */
}

/* The last cell of a row, errors_by_kind ("404:5;timeout:1", empty without errors), and its end. */
static void csv_errtab(FILE *f, const struct lg_errtab *t)
{
    char *text = xmalloc(LG_ERRTAB_TEXT_LEN);

    lg_errtab_format(t, LG_ERRTAB_CSV, text, LG_ERRTAB_TEXT_LEN);
    fprintf(f, ",%s\n", text);
    free(text);
}

static void csv_row(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a, unsigned i,
                    int type, const struct lg_colset *res)
{
    const struct lg_config *cfg = run->cfg;
    const struct lg_point *p = &run->points[i];
    const struct lg_point_analysis *pa = &a->pts[i];
    const struct lg_figures *x = &pa->f[type];
    const struct lg_stats *s = &p->st[type];
    const struct lg_monitor_result *groups = groups_of(run);
    unsigned ngroups = groups != NULL ? groups->nprocs : 0;
    bool all = type == LG_REQ_ALL;

    fprintf(f,
            "%s,%u,%s,%u,%u,%s,%s,%g,%.3f,%.3f,%" PRIu64
            ",%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%" PRIu64,
            run->run_id, i + 1, lg_req_name(type), p->users, p->threads, model_name(cfg),
            a->closed_loop ? "closed" : "open", cfg->rate, a->z_s * 1e3, p->window_s, x->ok, x->x,
            x->r_mean_s * 1e3, x->p50_s * 1e3, x->p90_s * 1e3, x->p99_s * 1e3, x->p999_s * 1e3,
            x->max_s * 1e3, x->errors);
    for (int e = 0; e < LG_ERR_COUNT; e++)
        fprintf(f, ",%" PRIu64, s->err[e]);
    fprintf(f, ",%.3f", x->body_Bps / 1e6);
    if (!all) {
        /* per-type rows carry only the request figures */
        fprintf(f, ",,,,,,,,,,,,,,,,,,,,,,"); /* unsent .. is_knee_model_n1 */
        for (unsigned r = 0; r < res->n; r++)
            fprintf(f, ",,");
        for (unsigned r = 0; r < ngroups; r++)
            fprintf(f, ",,,,,,,");
        fprintf(f, ",,");
        csv_sw_row(f, run, NULL);
        csv_errtab(f, &s->by_kind);
        return;
    }
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.3f,", p->unsent, p->abandoned, pa->little_n);
    if (a->closed_loop)
        fprintf(f, "%.4f", pa->little_rel);
    fprintf(f, ",");
    fnum(f, 3, pa->window_goal_s);
    fprintf(f, ",%s", lg_window_rule_name(pa->window_rule));
    fprintf(f, ",%.4f,%s,%s,", a->d_s * 1e3, a->d_source, bottleneck_name(pa));
    if (pa->bottleneck >= 0)
        fprintf(f, "%.5f", pa->dmax_s * 1e3);
    fprintf(f, ",%d,", pa->lg_bottleneck ? 1 : 0);
    fnum(f, 1, pa->bounds.x_upper);
    fprintf(f, ",");
    fnum(f, 4, pa->bounds.r_lower_s * 1e3);
    fprintf(f, ",%d", (int)i == a->nstar ? 1 : 0);
    csv_pred(f, pred_at(a->model.pern, i));
    csv_pred(f, pred_at(a->model.n1, i));
    fprintf(f, ",%d,%d", (int)i == a->model.knee_pern ? 1 : 0, (int)i == a->model.knee_n1 ? 1 : 0);
    for (unsigned r = 0; r < res->n; r++) {
        const struct lg_resource *rr = find_res(pa, res->names[r]);
        if (rr != NULL)
            fprintf(f, ",%.4f,%.5f", rr->util, rr->demand_s * 1e3);
        else
            fprintf(f, ",,");
    }
    for (unsigned r = 0; r < ngroups; r++) {
        const struct lg_proc_usage *u = &p->mon.procs[r];
        if (p->mon.nsamples < 2 || r >= p->mon.nprocs) {
            fprintf(f, ",,,,,,,");
            continue;
        }
        fprintf(f, ",%.1f,%.1f,%u,%.1f,", u->cpu_cores * 100,
                u->cpu_cores * 100 / (p->mon.ncpu ? p->mon.ncpu : 1), u->nproc,
                u->rss_max_bytes / 1e6);
        if (u->io_ok)
            fprintf(f, "%.0f,%.0f", u->read_Bps, u->write_Bps);
        else
            fprintf(f, ",");
        fprintf(f, ",%.0f", u->ctxsw_ps);
    }
    fprintf(f, ",");
    if (p->mon.nsamples >= 2)
        fprintf(f, "%.0f", p->mon.lo_Bps);
    fprintf(f, ",");
    if (p->mon.redis_ok)
        fprintf(f, "%.1f", p->mon.redis_ops_ps);
    csv_sw_row(f, run, p);
    csv_errtab(f, &s->by_kind);
}

static void resource_columns(const struct lg_run_analysis *a, struct lg_colset *res)
{
    memset(res, 0, sizeof(*res));
    for (unsigned i = 0; i < a->npts; i++)
        for (unsigned r = 0; r < a->pts[i].nres; r++)
            colset_add(res, a->pts[i].res[r].name);
}

static void write_csv(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    struct lg_colset *res = xmalloc(sizeof(*res));

    resource_columns(a, res);
    csv_header(f, res, run);
    for (unsigned i = 0; i < run->npoints; i++) {
        csv_row(f, run, a, i, LG_REQ_ALL, res);
        if (is_mix(run->cfg)) {
            for (int t = 0; t < LG_REQ_TYPES; t++)
                if (lg_config_has(run->cfg, (enum lg_req)t))
                    csv_row(f, run, a, i, t, res);
        }
    }
    free(res);
}

/* ---- run.json --------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "null");
}

static void machine_info(struct lg_machine *m)
{
    size_t cap = 4u << 20;
    char *buf = xmalloc(cap);

    memset(m, 0, sizeof(*m));
    if (gethostname(m->host, sizeof(m->host) - 1) < 0)
        snprintf(m->host, sizeof(m->host), "?");
    if (uname(&m->uts) < 0)
        memset(&m->uts, 0, sizeof(m->uts));
    if (procstat_read_file("/proc/cpuinfo", buf, cap) >= 0) {
        if (procstat_key_str(buf, "model name", m->cpu_model, sizeof(m->cpu_model)) < 0)
            snprintf(m->cpu_model, sizeof(m->cpu_model), "?");
    }
    if (procstat_read_file("/proc/meminfo", buf, cap) >= 0)
        procstat_key_u64(buf, "MemTotal:", &m->mem_kb);
    {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        m->ncpu = n > 0 ? (unsigned)n : 0;
    }
    free(buf);
}

static void json_pred(FILE *f, const struct lg_model_pred *p)
{
    fprintf(f, "{\"x_rps\": ");
    json_num(f, p->x);
    fprintf(f, ", \"r_ms\": ");
    json_num(f, p->r_s * 1e3);
    fprintf(f, ", \"err\": ");
    json_num(f, p->err);
    fprintf(f, "}");
}

static void json_users(FILE *f, const struct lg_run *run, int i)
{
    if (i >= 0)
        fprintf(f, "%u", run->points[i].users);
    else
        fprintf(f, "null");
}

static void json_model(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_model_out *m = &a->model;

    fprintf(f, ",\n    \"model\": {\"ok\": %s", m->ok ? "true" : "false");
    if (!m->ok) {
        fprintf(f, ", \"why\": ");
        json_str(f, m->why);
        fprintf(f, "}");
        return;
    }
    fprintf(f, ", \"solver\": \"exact MVA\", \"base_users\": ");
    json_users(f, run, m->base);
    fprintf(f, ", \"cpu_servers\": %u, \"cpu_per_job\": ", m->ncpu);
    json_num(f, m->per_job);
    fprintf(f, ", \"network\": \"%s\", \"path_share\": ", m->layered ? "layered" : "hardware");
    json_num(f, m->layered ? m->phi : NAN);
    fprintf(f, ", \"stations\": [");
    for (unsigned i = 0; m->layered && i < m->nsw; i++) {
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        json_str(f, m->sw[i].name);
        fprintf(f, ", \"threads\": %u}", m->sw[i].k);
    }
    fprintf(f, "], \"fixed_delay_ms\": ");
    json_num(f, m->fixed_s * 1e3);
    fprintf(f, ", \"points\": %u,\n      \"per_n\": {\"knee\": ", m->npred);
    json_users(f, run, m->knee_pern);
    fprintf(f, ", \"within_10pct\": %u}, \"n1\": {\"knee\": ", m->within_pern);
    json_users(f, run, m->knee_n1);
    fprintf(f, ", \"within_10pct\": %u}}", m->within_n1);
}

/* An error table as {"404": 5, "timeout": 1}: the non-zero entries, statuses first. */
static void json_errtab(FILE *f, const struct lg_errtab *t)
{
    unsigned n = 0;

    fprintf(f, "{");
    for (int i = 0; i < LG_STATUS_SLOTS; i++)
        if (t->status[i] > 0)
            fprintf(f, "%s\"%d\": %" PRIu64, n++ ? ", " : "", i + LG_STATUS_MIN, t->status[i]);
    for (int k = 0; k < LG_KIND_COUNT; k++)
        if (t->kind[k] > 0)
            fprintf(f, "%s\"%s\": %" PRIu64, n++ ? ", " : "", lg_kind_name((enum lg_kind)k),
                    t->kind[k]);
    fprintf(f, "}");
}

static void json_figures(FILE *f, const struct lg_figures *x, const struct lg_stats *s)
{
    fprintf(f, "{\"ok\": %" PRIu64 ", \"x_rps\": ", x->ok);
    json_num(f, x->x);
    fprintf(f, ", \"r_mean_ms\": ");
    json_num(f, x->r_mean_s * 1e3);
    fprintf(f, ", \"p50_ms\": ");
    json_num(f, x->p50_s * 1e3);
    fprintf(f, ", \"p90_ms\": ");
    json_num(f, x->p90_s * 1e3);
    fprintf(f, ", \"p99_ms\": ");
    json_num(f, x->p99_s * 1e3);
    fprintf(f, ", \"p999_ms\": ");
    json_num(f, x->p999_s * 1e3);
    fprintf(f, ", \"max_ms\": ");
    json_num(f, x->max_s * 1e3);
    fprintf(f, ", \"body_Bps\": ");
    json_num(f, x->body_Bps);
    fprintf(f, ", \"connects\": %" PRIu64 ", \"errors\": {\"total\": %" PRIu64, s->connects,
            x->errors);
    for (int e = 0; e < LG_ERR_COUNT; e++)
        fprintf(f, ", \"%s\": %" PRIu64, lg_err_name((enum lg_err)e), s->err[e]);
    fprintf(f, "}, \"errors_by_kind\": ");
    json_errtab(f, &s->by_kind);
    fprintf(f, ", \"ok_by_status\": ");
    json_errtab(f, &s->ok_by_status);
    fprintf(f, "}");
}

/* An epoch time in ms, or null when unknown (0): %.3f, since %g would drop the digits. */
static void json_epoch_ms(FILE *f, double ms)
{
    if (ms > 0 && isfinite(ms))
        fprintf(f, "%.3f", ms);
    else
        fprintf(f, "null");
}

/*
 * A histogram exactly: count, min, max, the sum (%.17g round-trips a double) and the non-empty
 * buckets as [index, count] pairs (a few hundred at most for latencies: the file stays small).
 */
static void json_hist(FILE *f, const struct hist *h)
{
    unsigned n = 0;

    fprintf(f, "{\"count\": %" PRIu64 ", \"min\": ", h->count);
    if (h->count > 0)
        fprintf(f, "%" PRIu64 ", \"max\": %" PRIu64 ", \"sum\": %.17g", h->min, h->max, h->sum);
    else
        fprintf(f, "null, \"max\": null, \"sum\": 0");
    fprintf(f, ", \"buckets\": [");
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        if (h->counts[b] == 0)
            continue;
        fprintf(f, "%s[%u, %" PRIu64 "]", n++ ? ", " : "", b, h->counts[b]);
    }
    fprintf(f, "]}");
}

/* The exact counters and latency histogram of each request type, for loadgen merge. */
static void json_raw(FILE *f, const struct lg_run *run, const struct lg_point *p)
{
    unsigned n = 0;

    fprintf(f, "{");
    for (int t = 0; t < LG_REQ_TYPES; t++) {
        const struct lg_stats *s = &p->st[t];
        if (!lg_config_has(run->cfg, (enum lg_req)t))
            continue;
        fprintf(f, "%s\n       \"%s\": {", n++ ? "," : "", lg_req_name(t));
#define LG_X(fld, doc) fprintf(f, "\"%s\": %" PRIu64 ", ", #fld, s->fld);
        LG_COUNTERS(LG_X)
#undef LG_X
        fprintf(f, "\"err\": {");
        for (int e = 0; e < LG_ERR_COUNT; e++)
            fprintf(f, "%s\"%s\": %" PRIu64, e ? ", " : "", lg_err_name((enum lg_err)e),
                    s->err[e]);
        fprintf(f, "}, \"by_kind\": ");
        json_errtab(f, &s->by_kind);
        fprintf(f, ", \"ok_by_status\": ");
        json_errtab(f, &s->ok_by_status);
        fprintf(f, ",\n        \"lat_ns\": ");
        json_hist(f, &s->lat);
        fprintf(f, "}");
    }
    fprintf(f, "}");
}

static void json_point(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a,
                       unsigned i)
{
    const struct lg_point *p = &run->points[i];
    const struct lg_point_analysis *pa = &a->pts[i];
    const struct lg_monitor_result *m = &p->mon;

    fprintf(f, "    {\"users\": %u, \"threads\": %u, \"window_s\": ", p->users, p->threads);
    json_num(f, p->window_s);
    fprintf(f, ", \"window_max_s\": ");
    json_num(f, p->window_max_s > 0 ? p->window_max_s : NAN);
    fprintf(f, ", \"window_start_ms\": ");
    json_epoch_ms(f, p->window_start_ms);
    fprintf(f, ", \"window_end_ms\": ");
    json_epoch_ms(f, p->window_end_ms);
    fprintf(f, ", \"interrupted\": %s, \"unsent\": %" PRIu64 ", \"abandoned\": %" PRIu64 ",\n",
            p->interrupted ? "true" : "false", p->unsent, p->abandoned);
    fprintf(f, "     \"all\": ");
    json_figures(f, &pa->f[LG_REQ_ALL], &p->st[LG_REQ_ALL]);
    json_tls_point(f, run, p);
    for (int t = 0; t < LG_REQ_TYPES; t++) {
        if (!lg_config_has(run->cfg, (enum lg_req)t))
            continue;
        fprintf(f, ",\n     \"%s\": ", lg_req_name(t));
        json_figures(f, &pa->f[t], &p->st[t]);
    }
    fprintf(f, ",\n     \"little\": {\"x_r_plus_z\": ");
    json_num(f, pa->little_n);
    fprintf(f, ", \"rel_diff\": ");
    if (a->closed_loop)
        json_num(f, pa->little_rel);
    else
        fprintf(f, "null");
    fprintf(f, ", \"window_goal_s\": ");
    json_num(f, pa->window_goal_s);
    fprintf(f, ", \"window_rule\": \"%s\"", lg_window_rule_name(pa->window_rule));
    fprintf(f, "},\n     \"resources\": [");
    for (unsigned r = 0; r < pa->nres; r++) {
        fprintf(f, "%s{\"name\": ", r ? ", " : "");
        json_str(f, pa->res[r].name);
        fprintf(f, ", \"util\": ");
        json_num(f, pa->res[r].util);
        fprintf(f, ", \"demand_ms\": ");
        json_num(f, pa->res[r].demand_s * 1e3);
        fprintf(f, "}");
    }
    fprintf(f, "],\n     \"bottleneck\": ");
    if (pa->bottleneck >= 0)
        json_str(f, bottleneck_name(pa));
    else
        fprintf(f, "null");
    fprintf(f, ", \"d_max_ms\": ");
    json_num(f, pa->dmax_s * 1e3);
    fprintf(f, ", \"lg_bottleneck\": %s, \"outside_cpu_cores\": ",
            pa->lg_bottleneck ? "true" : "false");
    json_num(f, pa->outside_cores);
    fprintf(f, ", \"outside_cpu_share\": ");
    json_num(f, pa->outside_share);
    fprintf(f, ", \"not_stack\": %s, \"x_upper_rps\": ", pa->not_stack ? "true" : "false");
    json_num(f, pa->bounds.x_upper);
    fprintf(f, ", \"r_lower_ms\": ");
    json_num(f, pa->bounds.r_lower_s * 1e3);
    fprintf(f, ",\n     \"model\": {\"per_n\": ");
    json_pred(f, pred_at(a->model.pern, i));
    fprintf(f, ", \"n1\": ");
    json_pred(f, pred_at(a->model.n1, i));
    fprintf(f, "}");
    fprintf(f, ",\n     \"monitor\": {\"samples\": %u, \"ncpu\": %u, \"window_s\": ", m->nsamples,
            m->ncpu);
    json_num(f, m->window_s);
    fprintf(f, ", \"machine_cpu\": ");
    json_num(f, m->machine_cpu);
    fprintf(f, ", \"lo_Bps\": ");
    json_num(f, m->lo_Bps);
    if (m->redis_ok) {
        fprintf(f, ", \"redis_ops_ps\": ");
        json_num(f, m->redis_ops_ps);
        fprintf(f, ", \"redis_util\": ");
        json_num(f, m->redis_util);
    }
    fprintf(f, ",\n       \"processes\": [");
    for (unsigned r = 0; r < m->nprocs; r++) {
        const struct lg_proc_usage *u = &m->procs[r];
        fprintf(f, "%s{\"name\": ", r ? ",\n         " : "");
        json_str(f, u->name);
        fprintf(f, ", \"is_loadgen\": %s, \"nproc\": %u, \"threads\": %u, \"cpu_cores\": ",
                u->is_loadgen ? "true" : "false", u->nproc, u->nthreads);
        json_num(f, u->cpu_cores);
        fprintf(f, ", \"cpu_core_pct\": ");
        json_num(f, u->cpu_cores * 100);
        fprintf(f, ", \"cpu_machine_pct\": ");
        json_num(f, u->cpu_cores * 100 / (m->ncpu ? m->ncpu : 1));
        fprintf(f, ", \"capacity_cores\": ");
        json_num(f, u->capacity);
        fprintf(f, ", \"rss_max_bytes\": ");
        json_num(f, u->rss_max_bytes);
        fprintf(f, ", \"read_Bps\": ");
        if (u->io_ok)
            json_num(f, u->read_Bps);
        else
            fprintf(f, "null");
        fprintf(f, ", \"write_Bps\": ");
        if (u->io_ok)
            json_num(f, u->write_Bps);
        else
            fprintf(f, "null");
        fprintf(f, ", \"ctxsw_ps\": ");
        json_num(f, u->ctxsw_ps);
        fprintf(f, "}");
    }
    fprintf(f, "],\n       \"disks\": [");
    for (unsigned r = 0; r < m->ndisks; r++) {
        fprintf(f, "%s{\"name\": ", r ? ", " : "");
        json_str(f, m->disks[r].name);
        fprintf(f, ", \"util\": ");
        json_num(f, m->disks[r].util);
        fprintf(f, ", \"read_Bps\": ");
        json_num(f, m->disks[r].read_Bps);
        fprintf(f, ", \"write_Bps\": ");
        json_num(f, m->disks[r].write_Bps);
        fprintf(f, "}");
    }
    fprintf(f, "]");
    json_sw(f, &m->sw);
    fprintf(f, "},\n     \"raw\": ");
    json_raw(f, run, p);
    fprintf(f, "}");
}

/* Where a merged run's figures came from (a measured run has its machine instead). */
static void json_inputs(FILE *f, const struct lg_run *run)
{
    fprintf(f, "  \"machine\": null,\n  \"inputs\": [");
    for (unsigned i = 0; i < run->ninputs; i++) {
        const struct lg_run_input *in = &run->inputs[i];
        fprintf(f, "%s\n    {\"dir\": ", i ? "," : "");
        json_str(f, in->dir);
        fprintf(f, ", \"run_id\": ");
        json_str(f, in->run_id);
        fprintf(f, ", \"hostname\": ");
        json_str(f, in->hostname);
        fprintf(f, ", \"label\": ");
        json_str(f, in->label);
        fprintf(f, ", \"url\": ");
        json_str(f, in->url);
        fprintf(f, ", \"ncpu\": %u}", in->ncpu);
    }
    fprintf(f, "],\n");
}

static void json_machine(FILE *f, const struct lg_machine *m)
{
    fprintf(f, "  \"machine\": {\"hostname\": ");
    json_str(f, m->host);
    fprintf(f, ", \"kernel\": ");
    json_str(f, m->uts.release);
    fprintf(f, ", \"arch\": ");
    json_str(f, m->uts.machine);
    fprintf(f, ", \"cpu_model\": ");
    json_str(f, m->cpu_model);
    fprintf(f, ", \"ncpu\": %u, \"mem_total_kb\": %" PRIu64 "},\n", m->ncpu, m->mem_kb);
}

static void write_json(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_config *c = run->cfg;
    struct lg_machine m;
    char when[32];
    struct tm tm;

    if (run->ninputs == 0)
        machine_info(&m);
    gmtime_r(&run->started, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "{\n  \"tool\": \"loadgen\", \"version\": ");
    json_str(f, PROJECT_VERSION);
    fprintf(f, ", \"cc\": ");
    json_str(f, __VERSION__);
    fprintf(f, ", \"cflags\": ");
    json_str(f, PROJECT_CFLAGS);
    fprintf(f, ",\n  \"run_id\": ");
    json_str(f, run->run_id);
    fprintf(f, ", \"started\": ");
    json_str(f, when);
    fprintf(f, ", \"interrupted\": %s,\n  \"command\": [", run->interrupted ? "true" : "false");
    for (int i = 0; i < c->argc; i++) {
        if (i > 0)
            fprintf(f, ", ");
        json_str(f, lg_report_arg(c->argc, c->argv, i));
    }
    fprintf(f, "],\n  \"config\": {\"url\": ");
    json_str(f, c->url);
    fprintf(f, ", \"model\": \"%s\", \"threads\": %u, \"users\": %u, \"think_ms\": ", model_name(c),
            c->threads, c->users);
    json_num(f, (double)c->think_us / 1e3);
    fprintf(f, ", \"duration_s\": ");
    json_num(f, c->requests_per_user ? NAN : (double)c->duration_us / 1e6);
    fprintf(f, ", \"window_max_s\": ");
    json_num(f, c->window_max_us > 0 ? (double)c->window_max_us / 1e6 : NAN);
    fprintf(f, ", \"warmup_s\": ");
    json_num(f, (double)c->warmup_us / 1e6);
    fprintf(f, ", \"requests_per_user\": %" PRIu64 ", \"timeout_s\": ", c->requests_per_user);
    json_num(f, (double)c->timeout_us / 1e6);
    fprintf(f, ",\n    \"mix\": ");
    json_str(f, c->mix_desc);
    fprintf(f,
            ", \"weight_new\": %u, \"weight_get\": %u, \"weight_put\": %u, \"weight_custom\": %u"
            ", \"put_size\": %" PRIu64 ", \"file\": ",
            c->weight[LG_REQ_NEW], c->weight[LG_REQ_GET], c->weight[LG_REQ_PUT],
            c->weight[LG_REQ_CUSTOM], c->put_size);
    json_str(f, c->file);
    fprintf(f, ", \"prepare_users\": %" PRIu64 ", \"username\": ", c->prepare_users);
    json_str(f, c->username);
    fprintf(f, ", \"expect_length\": ");
    if (c->has_expect_length)
        fprintf(f, "%" PRIu64, c->expect_length);
    else
        fprintf(f, "null");
    fprintf(f, ", \"copy_body\": %s", c->copy_body ? "true" : "false");
    json_custom_config(f, c);
    json_names_config(f, c);
    json_tls_config(f, c);
    fprintf(f, ",\n    \"rate\": ");
    json_num(f, c->rate);
    fprintf(f, ", \"arrivals\": \"%s\", \"seed\": %" PRIu64 ", \"sweep\": ",
            c->arrivals == LG_ARRIVALS_POISSON ? "poisson" : "constant", c->seed);
    if (c->sweep_auto) {
        fprintf(f, "\"auto\"");
    } else {
        fprintf(f, "[");
        for (unsigned i = 0; i < c->nsweep; i++)
            fprintf(f, "%s%u", i ? ", " : "", c->sweep[i]);
        fprintf(f, "]");
    }
    fprintf(f,
            ", \"max_users\": %u, \"sweep_step\": %u, \"sweep_stalls\": %u, "
            "\"sweep_refine\": %u, \"sample_ms\": %u, \"redis_port\": %u,\n    \"watch\": [",
            c->max_users, c->sweep_step, c->sweep_stalls, c->sweep_refine, c->sample_ms,
            c->redis_port);
    for (unsigned i = 0; i < c->nwatch; i++) {
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        json_str(f, c->watch[i].name);
        fprintf(f, ", \"pid\": %d}", (int)c->watch[i].pid);
    }
    fprintf(f, "], \"watch_comm\": [");
    for (unsigned i = 0; i < c->nwatch_comm; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_str(f, c->watch_comm[i]);
    }
    fprintf(f, "], \"start_at_ms\": ");
    if (c->start_at_ms > 0)
        fprintf(f, "%" PRIu64, c->start_at_ms);
    else
        fprintf(f, "null");
    fprintf(f, "},\n");
    if (run->ninputs > 0)
        json_inputs(f, run);
    else
        json_machine(f, &m);
    fprintf(f, "  \"prepare\": {\"accounts\": %" PRIu64 ", \"seconds\": ", run->prepared);
    json_num(f, run->prepare_s);
    fprintf(f, "},\n  \"points\": [\n");
    for (unsigned i = 0; i < run->npoints; i++) {
        json_point(f, run, a, i);
        fprintf(f, "%s\n", i + 1 < run->npoints ? "," : "");
    }
    fprintf(f, "  ],\n  \"summary\": {\"closed_loop\": %s, \"nstar\": ",
            a->closed_loop ? "true" : "false");
    if (a->nstar >= 0)
        fprintf(f, "%u", run->points[a->nstar].users);
    else
        fprintf(f, "null");
    fprintf(f, ", \"r_at_nstar_ms\": ");
    json_num(f, a->nstar >= 0 ? a->pts[a->nstar].f[LG_REQ_ALL].r_mean_s * 1e3 : NAN);
    fprintf(f, ", \"x_max_rps\": ");
    json_num(f, a->xmax >= 0 ? a->pts[a->xmax].f[LG_REQ_ALL].x : NAN);
    fprintf(f, ", \"n_at_x_max\": ");
    if (a->xmax >= 0)
        fprintf(f, "%u", run->points[a->xmax].users);
    else
        fprintf(f, "null");
    fprintf(f, ", \"d_ms\": ");
    json_num(f, a->d_s * 1e3);
    fprintf(f, ", \"d_source\": ");
    json_str(f, a->d_source ? a->d_source : "");
    fprintf(f, ", \"nstar_law\": ");
    json_num(f, a->knee_law);
    fprintf(f, ", \"bottleneck\": ");
    if (a->xmax >= 0 && a->pts[a->xmax].bottleneck >= 0)
        json_str(f, bottleneck_name(&a->pts[a->xmax]));
    else
        fprintf(f, "null");
    json_model(f, run, a);
    fprintf(f, "}\n}\n");
}

/* ---- summary.md ------------------------------------------------------------------------- */

static void md_pred(FILE *f, const struct lg_model_pred *p, bool knee)
{
    fprintf(f, " | ");
    if (isfinite(p->x))
        fprintf(f, "%.1f (%+.0f%%)%s", p->x, p->err * 100, knee ? " knee" : "");
    else
        fprintf(f, "-");
}

static void model_md(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_model_out *m = &a->model;

    if (!a->closed_loop)
        return;
    if (!m->ok) {
        fprintf(f, "- model: none (%s)\n", m->why);
        return;
    }
    fprintf(f,
            "- **N\\* model / measured: %u / %u** with each point's demands (per-N), "
            "%u / %u with the N = %u demands for every N; the model's X is within 10%% of the "
            "measured X at %u of %u points (per-N) and %u of %u (N = %u)\n",
            users_at(run, m->knee_pern), users_at(run, m->nstar), users_at(run, m->knee_n1),
            users_at(run, m->nstar), users_at(run, m->base), m->within_pern, m->npred,
            m->within_n1, m->npred, users_at(run, m->base));
    if (m->layered) {
        fprintf(f, "- model: exact MVA of a closed network of the software stations (");
        for (unsigned i = 0; i < m->nsw; i++)
            fprintf(f, "%s`%s` x%u", i ? ", " : "", m->sw[i].name, m->sw[i].k);
        fprintf(f,
                ": threads, demand = busy threads / X) over the %u cores (the wait for a core "
                "follows the predicted X); %.2f of the stations' busy time on a request's "
                "path; a delay of Z + %.4f ms. See docs/design/model.md, \"Software stations\"\n",
                m->ncpu, m->phi, m->fixed_s * 1e3);
        return;
    }
    fprintf(f,
            "- model: exact MVA of a closed network: the machine's CPU as %u servers of which "
            "one request keeps %.2f busy at once, each disk and Redis's command time as one "
            "server, demands D = U / X; a delay of Z + %.4f ms (R at N = %u minus the model's "
            "residence there). See docs/design/model.md, \"The queueing model\"\n",
            m->ncpu, m->per_job, m->fixed_s * 1e3, users_at(run, m->base));
}

/* Little's law at every point of a closed loop: each one off by more than LG_LITTLE_WARN. */
static void little_md(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    unsigned off = 0;

    if (!a->closed_loop)
        return;
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_point_analysis *pa = &a->pts[i];
        char wd[192];

        if (!little_off(a, pa))
            continue;
        window_desc(wd, sizeof(wd), a, &run->points[i], pa);
        fprintf(f, "- **Little's law off by %+.1f%% at N = %u** (X (R + Z) = %.2f): %s\n",
                pa->little_rel * 100, run->points[i].users, pa->little_n, wd);
        off++;
    }
    if (off == 0)
        fprintf(f, "- Little's law, |X (R + Z) / N - 1|, within %.0f%% at every point\n",
                LG_LITTLE_WARN * 100);
    fprintf(f,
            "- window rule: each window holds %u (R + Z) and %u completions at least, up to "
            "--window-max (`window_goal_s` and `window_rule` in points.csv: met, capped, short, "
            "off); a request cut by each edge of a shorter window bends Little's law by up to "
            "(R + Z) / window\n",
            LG_WINDOW_CYCLES, LG_WINDOW_OK);
}

/* A merged run: which processes it combines and how. */
static void md_inputs(FILE *f, const struct lg_run *run)
{
    fprintf(f,
            "Merged by `loadgen merge` from %u runs that measured the same wall-clock windows: "
            "N and X are their sums (X = all successes over the common window), response "
            "times come from their histograms merged bucket by bucket (never averaged "
            "percentiles). Each host's resources keep its name (`NAME@HOST`, and `cpu:all@HOST` "
            "for a host's whole CPU) when the inputs ran on several hosts; machine-wide figures "
            "of one host are counted once, however many inputs ran there.\n\n"
            "| input | host | run | url |\n|---|---|---|---|\n",
            run->ninputs);
    for (unsigned i = 0; i < run->ninputs; i++) {
        const struct lg_run_input *in = &run->inputs[i];
        fprintf(f, "| `%s` | %s%s%s%s | %s | %s |\n", in->dir, in->hostname,
                in->label[0] ? " (`" : "", in->label, in->label[0] ? "`)" : "", in->run_id,
                in->url);
    }
    fprintf(f, "\n");
}

static void write_md(FILE *f, const struct lg_run *run, const struct lg_run_analysis *a)
{
    const struct lg_config *c = run->cfg;
    char load[400];
    char when[32];
    struct tm tm;
    struct lg_colset *res = xmalloc(sizeof(*res));

    load_desc(load, sizeof(load), c);
    gmtime_r(&run->started, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%SZ", &tm);
    fprintf(f, "# loadgen run %s\n\n", run->run_id);
    fprintf(f, "%s, %s, load `%s`, %s loop, model %s, Z = %.3f ms, ", when, c->url, load,
            a->closed_loop ? "closed" : "open", model_name(c), a->z_s * 1e3);
    if (c->requests_per_user)
        fprintf(f, "%" PRIu64 " requests per user", c->requests_per_user);
    else
        fprintf(f, "%.1f s per point", (double)c->duration_us / 1e6);
    fprintf(f, " after %.1f s warm-up. loadgen %s.\n\n", (double)c->warmup_us / 1e6,
            PROJECT_VERSION);
    if (!a->closed_loop)
        fprintf(f,
                "Open loop at %.1f requests/s (%s arrivals); response time counts from each "
                "request's intended send time.\n\n",
                c->rate, c->arrivals == LG_ARRIVALS_POISSON ? "Poisson" : "constant");
    if (run->ninputs > 0)
        md_inputs(f, run);
    if (c->target.tls) {
        fprintf(f, "HTTPS: the server's certificate %s; session resumption %s%s.\n\n",
                c->insecure ? "**was not verified (--insecure)**" : "was verified",
                c->tls_resume ? "on" : "off",
                c->new_conn ? "; a new connection for every request" : "");
        for (unsigned i = 0; i < run->npoints; i++) {
            char line[256];
            tls_line(line, sizeof(line), &run->points[i]);
            fprintf(f, "- %s\n", line);
        }
        fprintf(f, "\n");
    } else if (c->new_conn) {
        fprintf(f, "A new connection for every request.\n\n");
    }

    fprintf(f, "| N | X (req/s) | R (ms) | p99 (ms) | errors | bottleneck | D_max (ms) | "
               "X bound (req/s) | R bound (ms) | Little X(R+Z) | window (s, rule) | "
               "X model per-N (error) | X model N=1 (error) |\n");
    fprintf(f, "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_point_analysis *pa = &a->pts[i];
        const struct lg_figures *x = &pa->f[LG_REQ_ALL];

        fprintf(f, "| %u%s | %.1f | %.3f | %.3f | %" PRIu64 " | %s%s | ", run->points[i].users,
                (int)i == a->nstar && run->npoints > 1 ? " (N*)" : "", x->x,
                x->r_mean_s * 1e3, x->p99_s * 1e3, x->errors, pa->bottleneck >= 0 ? bottleneck_name(pa) : "-",
                pa->lg_bottleneck ? " **(loadgen!)**" : "");
        if (pa->bottleneck >= 0)
            fprintf(f, "%.4f", pa->dmax_s * 1e3);
        fprintf(f, " | ");
        fnum(f, 1, pa->bounds.x_upper);
        fprintf(f, " | ");
        fnum(f, 3, pa->bounds.r_lower_s * 1e3);
        fprintf(f, " | %s%.2f", little_off(a, pa) ? "**" : "", pa->little_n);
        if (a->closed_loop)
            fprintf(f, " (%+.1f%%)", pa->little_rel * 100);
        fprintf(f, "%s | %.2f %s", little_off(a, pa) ? "**" : "", run->points[i].window_s,
                lg_window_rule_name(pa->window_rule));
        md_pred(f, pred_at(a->model.pern, i), (int)i == a->model.knee_pern);
        md_pred(f, pred_at(a->model.n1, i), (int)i == a->model.knee_n1);
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
    if (a->closed_loop && a->nstar >= 0 && run->npoints > 1)
        fprintf(f,
                "- **N\\* = %u** (the smallest measured N whose throughput is within 5%% of "
                "the maximum), **R at N\\* = %.3f ms**\n",
                run->points[a->nstar].users, a->pts[a->nstar].f[LG_REQ_ALL].r_mean_s * 1e3);
    if (a->closed_loop && a->nstar >= 0 && nstar_is_last(run, a))
        fprintf(f, "- **N\\* is the largest N measured**: X was still growing there, so the knee "
                   "may lie beyond it (measure larger N)\n");
    if (a->xmax >= 0) {
        const struct lg_point_analysis *m = &a->pts[a->xmax];
        char tu[128];

        fprintf(f, "- **X max = %.1f req/s** at N = %u\n", m->f[LG_REQ_ALL].x,
                run->points[a->xmax].users);
        if (m->bottleneck >= 0) {
            if (a->closed_loop && run->npoints > 1)
                fprintf(f,
                        "- N\\*_law = (D + Z) / D_max = %.1f with D = %s = %.4f ms, "
                        "Z = %.3f ms, D_max = %.4f ms (at X max): the textbook knee, for one "
                        "server and demands that do not change with N\n",
                        a->knee_law, a->d_source, a->d_s * 1e3, a->z_s * 1e3, m->dmax_s * 1e3);
            top_user(tu, sizeof(tu), &run->points[a->xmax], m);
            fprintf(f, "- **bottleneck: %s** (U = %.0f%%)%s\n", bottleneck_name(m),
                    m->res[m->bottleneck].util * 100, tu);
        }
    }
    if (run->npoints > 1) /* N*, the knee and the model compare points */
        model_md(f, run, a);
    little_md(f, run, a);
    sw_md(f, run);
    for (unsigned i = 0; i < run->npoints; i++) {
        if (a->pts[i].lg_bottleneck)
            fprintf(f, "- **WARNING**: at N = %u the load generator itself is the bottleneck\n",
                    run->points[i].users);
        if (a->pts[i].not_stack)
            fprintf(f,
                    "- **WARNING**: at N = %u the stack is not the bottleneck: the CPU is %.0f%% "
                    "used outside the watched processes\n",
                    run->points[i].users, a->pts[i].outside_share * 100);
        if (above_bound(a, &a->pts[i]))
            fprintf(f, "- note: at N = %u X is above its bound: D = %s overestimates the demand\n",
                    run->points[i].users, a->d_source);
    }

    resource_columns(a, res);
    if (res->n > 0) {
        fprintf(f, "\n## Utilization U and demand D = U / X per resource\n\n| N |");
        for (unsigned r = 0; r < res->n; r++)
            fprintf(f, " %s |", res->names[r]);
        fprintf(f, "\n|---:|");
        for (unsigned r = 0; r < res->n; r++)
            fprintf(f, "---:|");
        fprintf(f, "\n");
        for (unsigned i = 0; i < run->npoints; i++) {
            fprintf(f, "| %u |", run->points[i].users);
            for (unsigned r = 0; r < res->n; r++) {
                const struct lg_resource *rr = find_res(&a->pts[i], res->names[r]);
                if (rr != NULL)
                    fprintf(f, " %.0f%% / %.4f ms |", rr->util * 100, rr->demand_s * 1e3);
                else
                    fprintf(f, " - |");
            }
            fprintf(f, "\n");
        }
    }
    fprintf(f, "\nU of `cpu` is the machine's (all cores); U of `cpu:NAME` is that process "
               "group's CPU over the cores it can use (min(threads, cores)); U of a disk is the "
               "fraction of time it had I/O in flight; U of `redis` is the time Redis spent in "
               "commands. Bounds: X <= min(N / (D + Z), 1 / D_max), R >= max(D, N D_max - Z). "
               "Closed-loop response times are service times under coordinated omission: read "
               "them with N and X.\n");
    free(res);
}

static int write_file(const char *dir, const char *name,
                      void (*fn)(FILE *, const struct lg_run *, const struct lg_run_analysis *),
                      const struct lg_run *run, const struct lg_run_analysis *a)
{
    char path[1024];
    char ebuf[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        log_error("cannot create '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    fn(f, run, a);
    if (ferror(f) || fclose(f) != 0) {
        log_error("cannot write '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[sizeof(((struct lg_config *)0)->out_dir)];
    char ebuf[128];
    size_t len = strlen(dir);

    if (len >= sizeof(path))
        return -1;
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0777) < 0 && errno != EEXIST) {
            log_error("cannot create '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
            return -1;
        }
        path[i] = dir[i];
    }
    return 0;
}

int lg_report_files(const struct lg_run *run, const struct lg_run_analysis *a)
{
    const char *dir = run->cfg->out_dir;

    if (dir[0] == '\0')
        return 0;
    if (make_dirs(dir) < 0)
        return -1;
    if (write_file(dir, "points.csv", write_csv, run, a) < 0 ||
        write_file(dir, "run.json", write_json, run, a) < 0 ||
        write_file(dir, "summary.md", write_md, run, a) < 0)
        return -1;
    return 0;
}
