/*
 * runfile.c - see runfile.h. Every number goes through one checked getter (present, of the
 * right type, integral where it must be, within its bound), so a damaged or hostile run.json
 * gives one line naming the field, never a half-read run. Histograms are rebuilt bucket by
 * bucket and checked to be self-consistent (counts add up, min and max lie in the first and
 * last non-empty buckets, the mean between them).
 */
#include "runfile.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wholefile.h"
#include "xalloc.h"

#define LG_PATH_LEN 128

/* Where the reader is: the file's name and the path of the object being read. */
struct lg_jctx {
    const char *name;
    char *err;
};

/* One error line into err (LG_ERR_LEN bytes; a longer one is cut). */
__attribute__((format(printf, 2, 3))) static void rf_errf(char *err, const char *fmt, ...)
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
    rf_errf(c->err, "%s: %s%s%s: %s", c->name, path, path[0] && key[0] ? "." : "", key, why);
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

/* A number that run.json files written before it lack: absent or null gives 0. */
static int get_opt_num(const json_t *o, const char *key, double lo, double hi, double *out,
                       const char *path, const struct lg_jctx *c)
{
    *out = 0;
    if (json_object_get(o, key) == NULL)
        return 0;
    return get_num(o, key, lo, hi, true, 0, out, path, c);
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

/*
 * config.names: null, absent (a run.json written before --names), or what --names drew from:
 * source, kind (file or pattern), n, pick (uniform or zipf), zipf_s, spread. The names
 * themselves are not read: cfg->names keeps its kind and n only.
 */
static int get_names(const json_t *o, struct lg_config *cfg, const struct lg_jctx *c)
{
    const char *p = "config.names";
    const json_t *v = json_object_get(o, "names");
    char kind[16];
    char pick[16];
    double zipf_s;
    uint64_t n;

    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return fail(c, "config", "names", "an object or null expected");
    if (get_str(v, "source", cfg->names_source, sizeof(cfg->names_source), p, c) < 0 ||
        get_str(v, "kind", kind, sizeof(kind), p, c) < 0 ||
        get_u64(v, "n", LG_NAMES_PATTERN_MAX, &n, p, c) < 0 ||
        get_str(v, "pick", pick, sizeof(pick), p, c) < 0 ||
        get_num(v, "zipf_s", LG_ZIPF_S_MIN, LG_ZIPF_S_MAX, true, 0, &zipf_s, p, c) < 0 ||
        get_bool(v, "spread", &cfg->names_spread, p, c) < 0)
        return -1;
    if (strcmp(kind, "file") != 0 && strcmp(kind, "pattern") != 0)
        return fail(c, p, "kind", "not file or pattern");
    if (strcmp(pick, "uniform") != 0 && strcmp(pick, "zipf") != 0)
        return fail(c, p, "pick", "not uniform or zipf");
    if (n == 0)
        return fail(c, p, "n", "0 names");
    cfg->names.kind = strcmp(kind, "file") == 0 ? LG_NAMES_FILE : LG_NAMES_PATTERN;
    cfg->names.n = n;
    cfg->pick_kind = strcmp(pick, "zipf") == 0 ? LG_PICK_ZIPF : LG_PICK_UNIFORM;
    cfg->zipf_s = cfg->pick_kind == LG_PICK_ZIPF ? zipf_s : 0;
    return 0;
}

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
    double window_max_s;
    json_t *sweep;

    lg_config_defaults(cfg);
    if (o == NULL || get_str(o, "url", cfg->url, sizeof(cfg->url), p, c) < 0 ||
        get_str(o, "model", word, sizeof(word), p, c) < 0 ||
        get_uint(o, "threads", 1024, &cfg->threads, p, c) < 0 ||
        get_uint(o, "users", LG_USERS_MAX, &cfg->users, p, c) < 0 ||
        get_num(o, "think_ms", 0, 3.6e6, false, 0, &think_ms, p, c) < 0 ||
        get_num(o, "duration_s", 0, 30.0 * 86400, true, 0, &duration_s, p, c) < 0 ||
        get_num(o, "warmup_s", 0, 86400, false, 0, &warmup_s, p, c) < 0 ||
        get_u64(o, "requests_per_user", LG_RUNFILE_COUNT_MAX, &cfg->requests_per_user, p, c) < 0 ||
        get_num(o, "timeout_s", 0, 3600, false, 0, &timeout_s, p, c) < 0 ||
        get_str(o, "mix", cfg->mix_desc, sizeof(cfg->mix_desc), p, c) < 0 ||
        get_uint(o, "weight_new", 1000000, &cfg->weight[LG_REQ_NEW], p, c) < 0 ||
        get_uint(o, "weight_get", 1000000, &cfg->weight[LG_REQ_GET], p, c) < 0 ||
        get_uint(o, "weight_put", 1000000, &cfg->weight[LG_REQ_PUT], p, c) < 0 ||
        (json_object_get(o, "weight_custom") != NULL && /* absent before custom requests */
         get_uint(o, "weight_custom", 1000000, &cfg->weight[LG_REQ_CUSTOM], p, c) < 0) ||
        get_u64(o, "put_size", LG_PUT_SIZE_MAX, &cfg->put_size, p, c) < 0 ||
        get_str(o, "file", cfg->file, sizeof(cfg->file), p, c) < 0 ||
        get_u64(o, "prepare_users", LG_RUNFILE_COUNT_MAX, &cfg->prepare_users, p, c) < 0 ||
        get_num(o, "rate", 0, 1e8, false, 0, &cfg->rate, p, c) < 0 ||
        get_str(o, "arrivals", arrivals, sizeof(arrivals), p, c) < 0 ||
        get_num(o, "start_at_ms", 0, (double)LG_RUNFILE_COUNT_MAX, true, 0, &start_at, p, c) < 0 ||
        get_opt_num(o, "window_max_s", 0, 30.0 * 86400, &window_max_s, p, c) < 0)
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
    cfg->window_max_us = (uint64_t)llround(window_max_s * 1e6);
    if (get_names(o, cfg, c) < 0)
        return -1;
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
    if (buckets == NULL || get_u64(o, "count", LG_RUNFILE_COUNT_MAX, &count, path, c) < 0)
        return -1;
    if (count == 0) {
        if (json_array_size(buckets) != 0)
            return fail(c, path, "buckets", "not empty while count is 0");
        return 0;
    }
    if (get_u64(o, "min", LG_RUNFILE_COUNT_MAX, &h->min, path, c) < 0 ||
        get_u64(o, "max", LG_RUNFILE_COUNT_MAX, &h->max, path, c) < 0 ||
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
        if (!(n >= 1 && n <= (double)LG_RUNFILE_COUNT_MAX && n == floor(n)))
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

/*
 * A table of counts by name, o's member key: the errors by kind ({"404": 5, "timeout": 1}) or
 * the successes by status ({"200": 16}). Absent in files written before it (the table stays
 * empty). Each name must be a status 100-599 or, unless statuses_only, an error kind; the
 * entries must add up to total (with may_be_empty, an empty table is also taken: not known).
 */
static int read_table(const json_t *o, const char *key_name, struct lg_errtab *tab,
                      bool statuses_only, uint64_t total, bool may_be_empty, const char *path,
                      const struct lg_jctx *c)
{
    json_t *t = json_object_get(o, key_name);
    char sub[LG_PATH_LEN];
    const char *key;
    json_t *v;

    if (t == NULL)
        return 0;
    if (!json_is_object(t))
        return fail(c, path, key_name, "an object expected");
    sub_path(sub, "%s.%s", path, key_name);
    json_object_foreach(t, key, v) {
        uint64_t n;
        if (get_u64(t, key, LG_RUNFILE_COUNT_MAX, &n, sub, c) < 0)
            return -1;
        if ((statuses_only && (key[0] < '1' || key[0] > '5')) ||
            lg_errtab_add_named(tab, key, n) < 0)
            return fail(c, sub, key,
                        statuses_only ? "not a status 100-599"
                                      : "not a status 100-599 nor an error kind");
    }
    if (!(may_be_empty && lg_errtab_total(tab) == 0) && lg_errtab_total(tab) != total)
        return fail(c, path, key_name,
                    statuses_only ? "does not add up to ok"
                                  : "does not add up to the errors in err");
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
    if (get_u64(o, #fld, LG_RUNFILE_COUNT_MAX, &s->fld, path, c) < 0)                              \
        return -1;
    LG_COUNTERS(LG_X)
#undef LG_X
    sub_path(sub, "%s.err", path);
    for (int e = 0; e < LG_ERR_COUNT; e++)
        if (get_u64(errs, lg_err_name((enum lg_err)e), LG_RUNFILE_COUNT_MAX, &s->err[e], sub, c) <
            0)
            return -1;
    if (read_table(o, "by_kind", &s->by_kind, false, lg_stats_errors(s), false, path, c) < 0 ||
        read_table(o, "ok_by_status", &s->ok_by_status, true, s->ok, true, path, c) < 0)
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
        get_opt_num(o, "window_max_s", 0, 1e9, &p->window_max_s, path, c) < 0 ||
        get_num(o, "window_start_ms", 0, 1e15, true, 0, &p->window_start_ms, path, c) < 0 ||
        get_num(o, "window_end_ms", 0, 1e15, true, 0, &p->window_end_ms, path, c) < 0 ||
        get_bool(o, "interrupted", &p->interrupted, path, c) < 0 ||
        get_u64(o, "unsent", LG_RUNFILE_COUNT_MAX, &p->unsent, path, c) < 0 ||
        get_u64(o, "abandoned", LG_RUNFILE_COUNT_MAX, &p->abandoned, path, c) < 0)
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

static int parse_root(struct lg_runfile *in, const json_t *root, const struct lg_jctx *c)
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
        get_u64(prep, "accounts", LG_RUNFILE_COUNT_MAX, &in->prepared, "prepare", c) < 0 ||
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

int lg_runfile_parse(struct lg_runfile *in, const char *text, size_t len, const char *name,
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
        rf_errf(err, "%s: not valid JSON: line %d column %d: %s", name, jerr.line, jerr.column,
                jerr.text);
        return -1;
    }
    rc = parse_root(in, root, &c);
    json_decref(root);
    if (rc < 0)
        lg_runfile_release(in);
    return rc;
}

int lg_runfile_load(struct lg_runfile *in, const char *dir, char *err)
{
    char path[600];
    char ebuf[128];
    struct wholefile f;
    int rc;

    memset(in, 0, sizeof(*in));
    if (strlen(dir) >= sizeof(in->id.dir)) {
        rf_errf(err, "'%.64s...': directory name too long", dir);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/run.json", dir);
    switch (wholefile_read(path, LG_RUNFILE_BYTES_MAX, &f)) {
    case WHOLEFILE_OK:
        break;
    case WHOLEFILE_CANNOT_OPEN:
        rf_errf(err, "cannot read '%.300s': %s", path, strerror_r(f.err, ebuf, sizeof(ebuf)));
        return -1;
    case WHOLEFILE_NOT_REGULAR:
    case WHOLEFILE_TOO_BIG:
        rf_errf(err, "'%.300s': not a regular file of at most %u MiB", path,
                LG_RUNFILE_BYTES_MAX >> 20);
        return -1;
    case WHOLEFILE_CANNOT_READ:
        rf_errf(err, "cannot read '%.300s': %s", path,
                f.err != 0 ? strerror_r(f.err, ebuf, sizeof(ebuf)) : "short read");
        return -1;
    }
    rc = lg_runfile_parse(in, f.data, f.len, path, err);
    free(f.data);
    if (rc == 0)
        snprintf(in->id.dir, sizeof(in->id.dir), "%s", dir);
    return rc;
}

void lg_runfile_release(struct lg_runfile *in)
{
    free(in->points);
    in->points = NULL;
    in->npoints = 0;
}
