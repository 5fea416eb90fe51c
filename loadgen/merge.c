/*
 * merge.c - see merge.h. Reading: every number goes through one checked getter (present, of
 * the right type, integral where it must be, within its bound), so a damaged or hostile
 * run.json gives one line naming the field, never a half-read input. Histograms are rebuilt
 * bucket by bucket and checked to be self-consistent (counts add up, min and max lie in the
 * first and last non-empty buckets). Merging: see lg_merge_combine and merge_monitor.
 */
#include "merge.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
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

#define LG_PATH_LEN 128

/* Where the reader is: the file's name and the path of the object being read. */
struct lg_jctx {
    const char *name;
    char *err;
};

/* One error line into err (LG_ERR_LEN bytes; a longer one is cut). */
__attribute__((format(printf, 2, 3))) static void merr(char *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, LG_ERR_LEN, fmt, ap);
    va_end(ap);
}

/* A field path like points[2].raw.get into out (LG_PATH_LEN bytes; longer ones are cut). */
__attribute__((format(printf, 2, 3))) static void sub_path(char *out, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, LG_PATH_LEN, fmt, ap);
    va_end(ap);
}

static int fail(const struct lg_jctx *c, const char *path, const char *key, const char *why)
{
    merr(c->err, "%s: %s%s%s: %s", c->name, path, path[0] && key[0] ? "." : "", key, why);
    return -1;
}

/* o[key] of the given type (JSON_NULL accepts any); NULL with err when absent or mistyped. */
static json_t *member(const json_t *o, const char *key, json_type type, const char *path,
                      const struct lg_jctx *c)
{
    json_t *v = json_object_get(o, key);

    if (v == NULL) {
        fail(c, path, key, "missing");
        return NULL;
    }
    if (type == JSON_TRUE ? !json_is_boolean(v) : type != JSON_NULL && json_typeof(v) != type) {
        fail(c, path, key,
             type == JSON_OBJECT  ? "an object expected"
             : type == JSON_ARRAY ? "an array expected"
             : type == JSON_TRUE  ? "true or false expected"
                                  : "a string expected");
        return NULL;
    }
    return v;
}

/* A number (null gives null_value when allow_null), finite, within [lo, hi]. */
static int get_num(const json_t *o, const char *key, double lo, double hi, bool allow_null,
                   double null_value, double *out, const char *path, const struct lg_jctx *c)
{
    json_t *v = member(o, key, JSON_NULL, path, c);
    char why[96];

    if (v == NULL)
        return -1;
    if (json_is_null(v) && allow_null) {
        *out = null_value;
        return 0;
    }
    if (!json_is_number(v))
        return fail(c, path, key, allow_null ? "a number or null expected" : "a number expected");
    *out = json_number_value(v);
    if (!isfinite(*out) || *out < lo || *out > hi) {
        snprintf(why, sizeof(why), "%g is out of range [%g, %g]", *out, lo, hi);
        return fail(c, path, key, why);
    }
    return 0;
}

/* A non-negative integer <= max (numbers are read as doubles: exact up to 2^53). */
static int get_u64(const json_t *o, const char *key, uint64_t max, uint64_t *out, const char *path,
                   const struct lg_jctx *c)
{
    double d;

    if (get_num(o, key, 0, (double)max, false, 0, &d, path, c) < 0)
        return -1;
    if (d != floor(d))
        return fail(c, path, key, "an integer expected");
    *out = (uint64_t)d;
    return 0;
}

static int get_uint(const json_t *o, const char *key, unsigned max, unsigned *out, const char *path,
                    const struct lg_jctx *c)
{
    uint64_t v;

    if (get_u64(o, key, max, &v, path, c) < 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int get_str(const json_t *o, const char *key, char *out, size_t cap, const char *path,
                   const struct lg_jctx *c)
{
    json_t *v = member(o, key, JSON_STRING, path, c);

    if (v == NULL)
        return -1;
    if (json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v))
        return fail(c, path, key, "too long, or holds a NUL");
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int get_bool(const json_t *o, const char *key, bool *out, const char *path,
                    const struct lg_jctx *c)
{
    json_t *v = member(o, key, JSON_TRUE, path, c);

    if (v == NULL)
        return -1;
    *out = json_is_true(v);
    return 0;
}

/* ---- reading --------------------------------------------------------------------------- */

static int read_config(const json_t *root, struct lg_config *cfg, const struct lg_jctx *c)
{
    const char *p = "config";
    const json_t *o = member(root, "config", JSON_OBJECT, "", c);
    char word[16];
    char arrivals[16];
    double think_ms;
    double duration_s;
    double warmup_s;
    double timeout_s;
    double start_at;
    json_t *sweep;

    lg_config_defaults(cfg);
    if (o == NULL || get_str(o, "url", cfg->url, sizeof(cfg->url), p, c) < 0 ||
        get_str(o, "model", word, sizeof(word), p, c) < 0 ||
        get_uint(o, "threads", 1024, &cfg->threads, p, c) < 0 ||
        get_uint(o, "users", LG_USERS_MAX, &cfg->users, p, c) < 0 ||
        get_num(o, "think_ms", 0, 3.6e6, false, 0, &think_ms, p, c) < 0 ||
        get_num(o, "duration_s", 0, 30.0 * 86400, true, 0, &duration_s, p, c) < 0 ||
        get_num(o, "warmup_s", 0, 86400, false, 0, &warmup_s, p, c) < 0 ||
        get_u64(o, "requests_per_user", LG_MERGE_COUNT_MAX, &cfg->requests_per_user, p, c) < 0 ||
        get_num(o, "timeout_s", 0, 3600, false, 0, &timeout_s, p, c) < 0 ||
        get_str(o, "mix", cfg->mix_desc, sizeof(cfg->mix_desc), p, c) < 0 ||
        get_uint(o, "weight_new", 1000000, &cfg->weight[LG_REQ_NEW], p, c) < 0 ||
        get_uint(o, "weight_get", 1000000, &cfg->weight[LG_REQ_GET], p, c) < 0 ||
        get_uint(o, "weight_put", 1000000, &cfg->weight[LG_REQ_PUT], p, c) < 0 ||
        get_u64(o, "put_size", LG_PUT_SIZE_MAX, &cfg->put_size, p, c) < 0 ||
        get_str(o, "file", cfg->file, sizeof(cfg->file), p, c) < 0 ||
        get_u64(o, "prepare_users", LG_MERGE_COUNT_MAX, &cfg->prepare_users, p, c) < 0 ||
        get_num(o, "rate", 0, 1e8, false, 0, &cfg->rate, p, c) < 0 ||
        get_str(o, "arrivals", arrivals, sizeof(arrivals), p, c) < 0 ||
        get_num(o, "start_at_ms", 0, (double)LG_MERGE_COUNT_MAX, true, 0, &start_at, p, c) < 0)
        return -1;
    if (strcmp(word, "events") != 0 && strcmp(word, "threads") != 0)
        return fail(c, p, "model", "not events or threads");
    cfg->model = strcmp(word, "events") == 0 ? LG_MODEL_EVENTS : LG_MODEL_THREADS;
    if (strcmp(arrivals, "constant") != 0 && strcmp(arrivals, "poisson") != 0)
        return fail(c, p, "arrivals", "not constant or poisson");
    cfg->arrivals = strcmp(arrivals, "poisson") == 0 ? LG_ARRIVALS_POISSON : LG_ARRIVALS_CONSTANT;
    if (lg_config_weight_total(cfg) == 0)
        return fail(c, p, "weight_new", "every request weight is 0");
    cfg->think_us = (uint64_t)llround(think_ms * 1e3);
    cfg->duration_us = (uint64_t)llround(duration_s * 1e6);
    cfg->warmup_us = (uint64_t)llround(warmup_s * 1e6);
    cfg->timeout_us = (uint64_t)llround(timeout_s * 1e6);
    cfg->start_at_ms = (uint64_t)start_at;
    sweep = member(o, "sweep", JSON_NULL, p, c);
    if (sweep == NULL)
        return -1;
    cfg->sweep_auto = json_is_string(sweep) && strcmp(json_string_value(sweep), "auto") == 0;
    if (!cfg->sweep_auto && !json_is_array(sweep))
        return fail(c, p, "sweep", "\"auto\" or a list expected");
    cfg->nsweep = json_is_array(sweep) ? (unsigned)json_array_size(sweep) : 0;
    return 0;
}

/*
 * A histogram as written by report.c: checks that it is one a struct hist can hold (indices
 * in range and increasing, counts adding up to count, min and max in the first and last
 * non-empty buckets, a mean between them).
 */
static int read_hist(const json_t *o, struct hist *h, const char *path, const struct lg_jctx *c)
{
    json_t *buckets = member(o, "buckets", JSON_ARRAY, path, c);
    uint64_t count;
    uint64_t total = 0;
    size_t i;
    json_t *pair;
    int last = -1;
    int first = -1;

    hist_init(h);
    if (buckets == NULL || get_u64(o, "count", LG_MERGE_COUNT_MAX, &count, path, c) < 0)
        return -1;
    if (count == 0) {
        if (json_array_size(buckets) != 0)
            return fail(c, path, "buckets", "not empty while count is 0");
        return 0;
    }
    if (get_u64(o, "min", LG_MERGE_COUNT_MAX, &h->min, path, c) < 0 ||
        get_u64(o, "max", LG_MERGE_COUNT_MAX, &h->max, path, c) < 0 ||
        get_num(o, "sum", 0, INFINITY, false, 0, &h->sum, path, c) < 0)
        return -1;
    if (h->min > h->max)
        return fail(c, path, "min", "greater than max");
    json_array_foreach(buckets, i, pair)
    {
        double b;
        double n;

        if (!json_is_array(pair) || json_array_size(pair) != 2 ||
            !json_is_number(json_array_get(pair, 0)) || !json_is_number(json_array_get(pair, 1)))
            return fail(c, path, "buckets", "[index, count] pairs expected");
        b = json_number_value(json_array_get(pair, 0));
        n = json_number_value(json_array_get(pair, 1));
        if (!(b >= 0 && b < HIST_BUCKETS && b == floor(b)) || (int)b <= last)
            return fail(c, path, "buckets", "indices must be increasing and below 3776");
        if (!(n >= 1 && n <= (double)LG_MERGE_COUNT_MAX && n == floor(n)))
            return fail(c, path, "buckets", "a count is not a positive integer");
        last = (int)b;
        if (first < 0)
            first = last;
        h->counts[last] = (uint64_t)n;
        total += (uint64_t)n;
    }
    if (total != count)
        return fail(c, path, "buckets", "the counts do not add up to count");
    if (hist_bucket_of(h->min) != (unsigned)first || hist_bucket_of(h->max) != (unsigned)last)
        return fail(c, path, "min", "min or max is not in the first or last bucket");
    h->count = count;
    if (h->sum < (double)h->min * (double)count * (1 - 1e-6) ||
        h->sum > (double)h->max * (double)count * (1 + 1e-6))
        return fail(c, path, "sum", "the mean is not between min and max");
    return 0;
}

static int read_stats(const json_t *o, struct lg_stats *s, const char *path,
                      const struct lg_jctx *c)
{
    char sub[LG_PATH_LEN];
    json_t *errs = member(o, "err", JSON_OBJECT, path, c);
    json_t *lat = member(o, "lat_ns", JSON_OBJECT, path, c);

    if (errs == NULL || lat == NULL)
        return -1;
#define LG_X(fld, doc)                                                                             \
    if (get_u64(o, #fld, LG_MERGE_COUNT_MAX, &s->fld, path, c) < 0)                                \
        return -1;
    LG_COUNTERS(LG_X)
#undef LG_X
    sub_path(sub, "%s.err", path);
    for (int e = 0; e < LG_ERR_COUNT; e++)
        if (get_u64(errs, lg_err_name((enum lg_err)e), LG_MERGE_COUNT_MAX, &s->err[e], sub, c) < 0)
            return -1;
    sub_path(sub, "%s.lat_ns", path);
    if (read_hist(lat, &s->lat, sub, c) < 0)
        return -1;
    if (s->lat.count != s->ok)
        return fail(c, path, "ok", "differs from the histogram's count");
    return 0;
}

static int read_process(const json_t *o, struct lg_proc_usage *u, const char *path,
                        const struct lg_jctx *c)
{
    json_t *rd = json_object_get(o, "read_Bps");

    if (get_str(o, "name", u->name, sizeof(u->name), path, c) < 0 ||
        get_bool(o, "is_loadgen", &u->is_loadgen, path, c) < 0 ||
        get_uint(o, "nproc", 1000000, &u->nproc, path, c) < 0 ||
        get_uint(o, "threads", 10000000, &u->nthreads, path, c) < 0 ||
        get_num(o, "cpu_cores", 0, 1e6, true, 0, &u->cpu_cores, path, c) < 0 ||
        get_num(o, "capacity_cores", 0, 1e6, true, 0, &u->capacity, path, c) < 0 ||
        get_num(o, "rss_max_bytes", 0, 1e18, true, 0, &u->rss_max_bytes, path, c) < 0 ||
        get_num(o, "read_Bps", 0, 1e15, true, 0, &u->read_Bps, path, c) < 0 ||
        get_num(o, "write_Bps", 0, 1e15, true, 0, &u->write_Bps, path, c) < 0 ||
        get_num(o, "ctxsw_ps", 0, 1e12, true, 0, &u->ctxsw_ps, path, c) < 0)
        return -1;
    if (u->nproc > 0 && !(u->capacity > 0))
        return fail(c, path, "capacity_cores", "must be above 0 for a running group");
    u->io_ok = rd != NULL && !json_is_null(rd);
    return 0;
}

static int read_monitor(const json_t *o, struct lg_monitor_result *m, const char *path,
                        const struct lg_jctx *c)
{
    char sub[LG_PATH_LEN];
    json_t *procs = member(o, "processes", JSON_ARRAY, path, c);
    json_t *disks = member(o, "disks", JSON_ARRAY, path, c);
    json_t *v;
    size_t i;

    memset(m, 0, sizeof(*m));
    if (procs == NULL || disks == NULL ||
        get_uint(o, "samples", 100000000, &m->nsamples, path, c) < 0 ||
        get_uint(o, "ncpu", 65536, &m->ncpu, path, c) < 0 ||
        get_num(o, "window_s", 0, 1e9, true, 0, &m->window_s, path, c) < 0 ||
        get_num(o, "machine_cpu", 0, 2, true, 0, &m->machine_cpu, path, c) < 0 ||
        get_num(o, "lo_Bps", 0, 1e15, true, 0, &m->lo_Bps, path, c) < 0)
        return -1;
    if (json_object_get(o, "redis_util") != NULL) {
        m->redis_ok = true;
        if (get_num(o, "redis_util", 0, 1e3, true, 0, &m->redis_util, path, c) < 0 ||
            get_num(o, "redis_ops_ps", 0, 1e12, true, 0, &m->redis_ops_ps, path, c) < 0)
            return -1;
    }
    if (json_array_size(procs) > LG_MON_GROUPS || json_array_size(disks) > LG_MON_DISKS)
        return fail(c, path, "processes", "more process groups or disks than loadgen keeps");
    json_array_foreach(procs, i, v)
    {
        sub_path(sub, "%s.processes[%zu]", path, i);
        if (!json_is_object(v))
            return fail(c, sub, "", "an object expected");
        if (read_process(v, &m->procs[i], sub, c) < 0)
            return -1;
        m->nprocs++;
    }
    json_array_foreach(disks, i, v)
    {
        struct lg_disk_usage *d = &m->disks[i];
        sub_path(sub, "%s.disks[%zu]", path, i);
        if (!json_is_object(v))
            return fail(c, sub, "", "an object expected");
        if (get_str(v, "name", d->name, sizeof(d->name), sub, c) < 0 ||
            get_num(v, "util", 0, 2, true, 0, &d->util, sub, c) < 0 ||
            get_num(v, "read_Bps", 0, 1e15, true, 0, &d->read_Bps, sub, c) < 0 ||
            get_num(v, "write_Bps", 0, 1e15, true, 0, &d->write_Bps, sub, c) < 0)
            return -1;
        m->ndisks++;
    }
    return 0;
}

static int read_point(const json_t *o, const struct lg_config *cfg, struct lg_point *p,
                      const char *path, const struct lg_jctx *c)
{
    char sub[LG_PATH_LEN];
    json_t *raw = member(o, "raw", JSON_OBJECT, path, c);
    json_t *mon = member(o, "monitor", JSON_OBJECT, path, c);

    memset(p, 0, sizeof(*p));
    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&p->st[t]);
    if (raw == NULL || mon == NULL || get_uint(o, "users", LG_USERS_MAX, &p->users, path, c) < 0 ||
        get_uint(o, "threads", LG_USERS_MAX, &p->threads, path, c) < 0 ||
        get_num(o, "window_s", 0, 1e9, false, 0, &p->window_s, path, c) < 0 ||
        get_num(o, "window_start_ms", 0, 1e15, true, 0, &p->window_start_ms, path, c) < 0 ||
        get_num(o, "window_end_ms", 0, 1e15, true, 0, &p->window_end_ms, path, c) < 0 ||
        get_bool(o, "interrupted", &p->interrupted, path, c) < 0 ||
        get_u64(o, "unsent", LG_MERGE_COUNT_MAX, &p->unsent, path, c) < 0 ||
        get_u64(o, "abandoned", LG_MERGE_COUNT_MAX, &p->abandoned, path, c) < 0)
        return -1;
    if (p->users == 0)
        return fail(c, path, "users", "0");
    if (p->window_end_ms < p->window_start_ms)
        return fail(c, path, "window_end_ms", "before window_start_ms");
    for (int t = 0; t < LG_REQ_TYPES; t++) {
        json_t *s;
        if (!lg_config_has(cfg, (enum lg_req)t))
            continue;
        sub_path(sub, "%s.raw", path);
        s = member(raw, lg_req_name(t), JSON_OBJECT, sub, c);
        sub_path(sub, "%s.raw.%s", path, lg_req_name(t));
        if (s == NULL || read_stats(s, &p->st[t], sub, c) < 0)
            return -1;
        lg_stats_merge(&p->st[LG_REQ_ALL], &p->st[t]);
    }
    sub_path(sub, "%s.monitor", path);
    return read_monitor(mon, &p->mon, sub, c);
}

static int read_started(const json_t *root, time_t *out, const struct lg_jctx *c)
{
    char s[32];
    struct tm tm;
    const char *end;

    if (get_str(root, "started", s, sizeof(s), "", c) < 0)
        return -1;
    memset(&tm, 0, sizeof(tm));
    end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (end == NULL || *end != '\0')
        return fail(c, "", "started", "not a time like 2024-01-31T12:00:00Z");
    *out = timegm(&tm);
    return 0;
}

static int parse_root(struct lg_merge_input *in, const json_t *root, const struct lg_jctx *c)
{
    json_t *machine;
    json_t *prep;
    json_t *points;
    json_t *v;
    size_t i;
    char tool[16];

    if (!json_is_object(root))
        return fail(c, "", "", "not a JSON object");
    if (get_str(root, "tool", tool, sizeof(tool), "", c) < 0)
        return -1;
    if (strcmp(tool, "loadgen") != 0)
        return fail(c, "", "tool", "not loadgen");
    if (json_object_get(root, "inputs") != NULL)
        return fail(c, "", "inputs",
                    "this directory is itself a merge: merge the directories it was made of");
    if (get_str(root, "run_id", in->id.run_id, sizeof(in->id.run_id), "", c) < 0 ||
        get_bool(root, "interrupted", &in->interrupted, "", c) < 0 ||
        read_started(root, &in->started, c) < 0 || read_config(root, &in->cfg, c) < 0)
        return -1;
    snprintf(in->id.url, sizeof(in->id.url), "%s", in->cfg.url);
    machine = member(root, "machine", JSON_OBJECT, "", c);
    prep = member(root, "prepare", JSON_OBJECT, "", c);
    points = member(root, "points", JSON_ARRAY, "", c);
    if (machine == NULL || prep == NULL || points == NULL ||
        get_str(machine, "hostname", in->id.hostname, sizeof(in->id.hostname), "machine", c) < 0 ||
        get_uint(machine, "ncpu", 65536, &in->id.ncpu, "machine", c) < 0 ||
        get_u64(prep, "accounts", LG_MERGE_COUNT_MAX, &in->prepared, "prepare", c) < 0 ||
        get_num(prep, "seconds", 0, 1e9, true, 0, &in->prepare_s, "prepare", c) < 0)
        return -1;
    if (in->id.hostname[0] == '\0')
        return fail(c, "machine", "hostname", "empty");
    if (json_array_size(points) == 0 || json_array_size(points) > LG_SWEEP_MAX)
        return fail(c, "", "points", "must hold 1 to 64 points");
    in->points = xcalloc(json_array_size(points), sizeof(*in->points));
    json_array_foreach(points, i, v)
    {
        char path[32];
        snprintf(path, sizeof(path), "points[%zu]", i);
        if (!json_is_object(v))
            return fail(c, path, "", "an object expected");
        if (read_point(v, &in->cfg, &in->points[i], path, c) < 0)
            return -1;
        in->npoints++;
    }
    return 0;
}

int lg_merge_parse(struct lg_merge_input *in, const char *text, size_t len, const char *name,
                   char *err)
{
    struct lg_jctx c = {.name = name, .err = err};
    json_error_t jerr;
    json_t *root;
    int rc;

    memset(in, 0, sizeof(*in));
    /* integers as doubles: counts are bounded by 2^53 anyway, and a seed above 2^63 parses */
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
    if (root == NULL) {
        merr(err, "%s: not valid JSON: line %d column %d: %s", name, jerr.line, jerr.column,
             jerr.text);
        return -1;
    }
    rc = parse_root(in, root, &c);
    json_decref(root);
    if (rc < 0)
        lg_merge_input_release(in);
    return rc;
}

int lg_merge_load(struct lg_merge_input *in, const char *dir, char *err)
{
    char path[600];
    char ebuf[128];
    struct stat st;
    char *buf;
    size_t got = 0;
    int fd;
    int rc;

    memset(in, 0, sizeof(*in));
    if (strlen(dir) >= sizeof(in->id.dir)) {
        merr(err, "'%.64s...': directory name too long", dir);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/run.json", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        merr(err, "cannot read '%.300s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)LG_MERGE_FILE_MAX) {
        merr(err, "'%.300s': not a regular file of at most %u MiB", path, LG_MERGE_FILE_MAX >> 20);
        close(fd);
        return -1;
    }
    buf = xmalloc((size_t)st.st_size + 1);
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        merr(err, "cannot read '%.300s': short read", path);
        free(buf);
        return -1;
    }
    rc = lg_merge_parse(in, buf, got, path, err);
    free(buf);
    if (rc == 0)
        snprintf(in->id.dir, sizeof(in->id.dir), "%s", dir);
    return rc;
}

void lg_merge_input_release(struct lg_merge_input *in)
{
    free(in->points);
    in->points = NULL;
    in->npoints = 0;
}

/* ---- compatibility --------------------------------------------------------------------- */

/* A field every input must have alike: its name in run.json and how it reads. */
struct lg_merge_field {
    const char *name;
    void (*show)(const struct lg_config *c, char *out, size_t cap);
};

static void show_mix(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "new:%u,get:%u,put:%u", c->weight[LG_REQ_NEW], c->weight[LG_REQ_GET],
             c->weight[LG_REQ_PUT]);
}

static void show_file(const struct lg_config *c, char *out, size_t cap)
{
    snprintf(out, cap, "'%s'", lg_config_has(c, LG_REQ_GET) ? c->file : "");
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
    {"put_size", show_put_size},
    {"think_ms", show_think},
    {"duration_s", show_duration},
    {"warmup_s", show_warmup},
    {"requests_per_user", show_rpu},
    {"loop", show_loop},
    {"arrivals", show_arrivals},
    {"model", show_model},
};

static int check_compatible(const struct lg_merge_input *ins, unsigned n, char *err)
{
    for (unsigned i = 1; i < n; i++) {
        if (strcmp(ins[i].id.run_id, ins[0].id.run_id) == 0) {
            merr(err, "'%s' and '%s' hold the same run (%s): each run counts once", ins[0].id.dir,
                 ins[i].id.dir, ins[0].id.run_id);
            return -1;
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
static int check_windows(const struct lg_merge_input *ins, unsigned n, unsigned k, double *from,
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
static unsigned label_hosts(const struct lg_merge_input *ins, unsigned n, struct lg_run_input *ids,
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
static int merge_monitor(const struct lg_merge_input *ins, unsigned n, unsigned k,
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
static void merge_config(const struct lg_merge_input *ins, unsigned n, struct lg_merged *out)
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

int lg_merge_combine(const struct lg_merge_input *ins, unsigned n, struct lg_merged *out, char *err)
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
            /* X = all successes / the window, which is the same one in every input */
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
            "Inputs must have the same request mix, think time, duration, warm-up, loop,\n"
            "model and number of points, and each point's windows must overlap by at least\n"
            "%.0f%% (a warning below %.0f%%). At most %d directories.\n"
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
    struct lg_merge_input *ins;
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
        rc = lg_merge_load(&ins[i], argv[optind + (int)i], err);
    if (rc == 0)
        rc = lg_merge_combine(ins, n, &merged, err);
    for (unsigned i = 0; i < n; i++)
        lg_merge_input_release(&ins[i]);
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
