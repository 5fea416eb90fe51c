/*
 * test_merge.c - loadgen/merge (and loadgen/runfile, which it reads with): samples
 * recorded by two "processes" (two histograms), each written out as a run's reports (report.c)
 * and read back through the merge (run.json -> lg_runfile_load -> lg_merge_combine), give
 * bucket for bucket, and in count, min, max, sum and percentiles, the histogram of one process
 * that recorded them all. Also: the resources of inputs on one host and on two, errors by kind
 * read back and summed, --names read back (and inputs of other names refused), and damaged
 * inputs refused with the field named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/merge.h"
#include "../../../loadgen/report.h"

#define T_SAMPLES 200000
#define T_WINDOW_START_MS 1700000000000.0

static uint64_t t_rng = 0x9e3779b97f4a7c15ull;

/* xorshift64*: deterministic samples */
static uint64_t t_next(void)
{
    t_rng ^= t_rng >> 12;
    t_rng ^= t_rng << 25;
    t_rng ^= t_rng >> 27;
    return t_rng * 0x2545f4914f6cdd1dull;
}

/* A latency in ns spread over many octaves: 20 us .. about 1 s, heavier at the low end. */
static uint64_t t_latency(void)
{
    uint64_t r = t_next();
    unsigned octaves = (unsigned)(r % 16);

    return 20000 + ((r >> 8) % (1000ull << octaves));
}

static void t_run_init(struct lg_run *run, struct lg_config *cfg, struct lg_point *p,
                       const char *run_id, const char *dir)
{
    lg_config_defaults(cfg);
    cfg->weight[LG_REQ_GET] = 1;
    snprintf(cfg->file, sizeof(cfg->file), "1k");
    snprintf(cfg->mix_desc, sizeof(cfg->mix_desc), "get");
    snprintf(cfg->out_dir, sizeof(cfg->out_dir), "%s", dir);
    memset(run, 0, sizeof(*run));
    run->cfg = cfg;
    run->started = 1700000000;
    snprintf(run->run_id, sizeof(run->run_id), "%s", run_id);
    run->points = p;
    run->npoints = 1;
    memset(p, 0, sizeof(*p));
    p->users = 4;
    p->threads = 2;
    p->window_s = 10;
    p->window_start_ms = T_WINDOW_START_MS;
    p->window_end_ms = T_WINDOW_START_MS + 10000;
    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&p->st[t]);
}

static void t_remove(const char *dir)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* DIR/run.json as a malloc'd NUL-terminated text of *len bytes. */
static char *t_read_run(const char *dir, long *len)
{
    char path[128];
    char *text;
    FILE *f;

    snprintf(path, sizeof(path), "%s/run.json", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    text = malloc((size_t)*len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    text[*len] = '\0';
    return text;
}

static void t_write(struct lg_run *run)
{
    struct lg_run_analysis an;
    struct lg_point *p = &run->points[0];
    FILE *devnull = fopen("/dev/null", "w");

    lg_stats_merge(&p->st[LG_REQ_ALL], &p->st[LG_REQ_GET]);
    lg_analyze(run, &an);
    lg_report_stdout(devnull, run, &an);
    fclose(devnull);
    assert_int_equal(lg_report_files(run, &an), 0);
    lg_analysis_release(&an);
}

static void test_merge_hist_exact(void **state)
{
    static struct lg_config cfg_a;
    static struct lg_config cfg_b;
    static struct lg_point pa;
    static struct lg_point pb;
    static struct hist one;
    static struct lg_merged m;
    struct lg_runfile in[2];
    struct lg_run ra;
    struct lg_run rb;
    char root[] = "/tmp/test_lg_merge.XXXXXX";
    char da[64];
    char db[64];
    char err[LG_ERR_LEN];
    const struct hist *got;
    const double pcts[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(da, sizeof(da), "%s/a", root);
    snprintf(db, sizeof(db), "%s/b", root);
    t_run_init(&ra, &cfg_a, &pa, "0000000a", da);
    t_run_init(&rb, &cfg_b, &pb, "0000000b", db);
    hist_init(&one);
    for (unsigned i = 0; i < T_SAMPLES; i++) {
        uint64_t v = t_latency();
        struct lg_stats *s = (t_next() & 3) == 0 ? &pa.st[LG_REQ_GET] : &pb.st[LG_REQ_GET];
        hist_record(&one, v);
        hist_record(&s->lat, v);
        s->ok++;
        s->body_bytes += 1024;
    }
    pa.st[LG_REQ_GET].err[LG_ERR_TIMEOUT] = 3;
    pb.st[LG_REQ_GET].err[LG_ERR_TIMEOUT] = 4;
    pa.st[LG_REQ_GET].by_kind.kind[LG_KIND_TIMEOUT] = 3;
    pb.st[LG_REQ_GET].by_kind.kind[LG_KIND_TIMEOUT] = 4;
    pa.window_max_s = 20; /* sized (a run without --start-at): the merge's window is not */
    t_write(&ra);
    t_write(&rb);

    assert_int_equal(lg_runfile_load(&in[0], da, err), 0);
    assert_int_equal(lg_runfile_load(&in[1], db, err), 0);
    /* each input reads back as it was recorded */
    assert_memory_equal(&in[0].points[0].st[LG_REQ_GET].lat, &pa.st[LG_REQ_GET].lat,
                        sizeof(struct hist));
    assert_int_equal(lg_merge_combine(in, 2, &m, err), 0);
    got = &m.run.points[0].st[LG_REQ_GET].lat;

    assert_int_equal(got->count, one.count);
    assert_int_equal(got->min, one.min);
    assert_int_equal(got->max, one.max);
    assert_true(got->sum == one.sum); /* integers below 2^53: exact in any order */
    for (unsigned b = 0; b < HIST_BUCKETS; b++)
        assert_int_equal(got->counts[b], one.counts[b]);
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
        assert_int_equal(hist_percentile(got, pcts[i]), hist_percentile(&one, pcts[i]));
    assert_true(hist_mean(got) == hist_mean(&one));
    /* the totals too */
    assert_int_equal(m.run.points[0].st[LG_REQ_ALL].lat.count, one.count);
    assert_int_equal(m.run.points[0].st[LG_REQ_GET].ok, T_SAMPLES);
    assert_int_equal(m.run.points[0].st[LG_REQ_GET].body_bytes, 1024ull * T_SAMPLES);
    assert_int_equal(m.run.points[0].st[LG_REQ_ALL].err[LG_ERR_TIMEOUT], 7);
    assert_int_equal(m.run.points[0].st[LG_REQ_ALL].by_kind.kind[LG_KIND_TIMEOUT], 7);
    assert_int_equal(m.run.points[0].users, 8);
    assert_true(m.run.points[0].window_s == 10);
    assert_true(in[0].points[0].window_max_s == 20 && in[1].points[0].window_max_s == 0);
    assert_true(m.run.points[0].window_max_s == 0 && m.cfg.window_max_us == 0);

    lg_merged_release(&m);
    lg_runfile_release(&in[0]);
    lg_runfile_release(&in[1]);
    t_remove(root);
}

/* An input in memory: one point, get only, with the given host and monitor. */
static void t_input(struct lg_runfile *in, const char *dir, const char *run_id,
                    const char *host, double machine_cpu)
{
    struct lg_point *p;

    memset(in, 0, sizeof(*in));
    snprintf(in->id.dir, sizeof(in->id.dir), "%s", dir);
    snprintf(in->id.run_id, sizeof(in->id.run_id), "%s", run_id);
    snprintf(in->id.hostname, sizeof(in->id.hostname), "%s", host);
    in->id.ncpu = 2;
    lg_config_defaults(&in->cfg);
    in->cfg.weight[LG_REQ_GET] = 1;
    in->points = p = calloc(1, sizeof(*p));
    assert_non_null(p);
    in->npoints = 1;
    p->users = 2;
    p->threads = 1;
    p->window_s = 2;
    p->window_start_ms = T_WINDOW_START_MS;
    p->window_end_ms = T_WINDOW_START_MS + 2000;
    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&p->st[t]);
    p->st[LG_REQ_GET].ok = 1000;
    for (unsigned i = 0; i < 1000; i++)
        hist_record(&p->st[LG_REQ_GET].lat, 100000);
    lg_stats_merge(&p->st[LG_REQ_ALL], &p->st[LG_REQ_GET]);
    p->mon.nsamples = 10;
    p->mon.window_s = 2;
    p->mon.ncpu = 2;
    p->mon.machine_cpu = machine_cpu;
    p->mon.nprocs = 1;
    snprintf(p->mon.procs[0].name, sizeof(p->mon.procs[0].name), "loadgen");
    p->mon.procs[0].is_loadgen = true;
    p->mon.procs[0].nproc = 1;
    p->mon.procs[0].nthreads = 1;
    p->mon.procs[0].capacity = 1;
    p->mon.procs[0].cpu_cores = 0.6;
}

static void add_proc(struct lg_runfile *in, const char *name, double cores)
{
    struct lg_monitor_result *m = &in->points[0].mon;
    struct lg_proc_usage *u = &m->procs[m->nprocs++];

    snprintf(u->name, sizeof(u->name), "%s", name);
    u->nproc = 1;
    u->nthreads = 2;
    u->capacity = 2;
    u->cpu_cores = cores;
}

static const struct lg_proc_usage *group(const struct lg_monitor_result *m, const char *name)
{
    for (unsigned i = 0; i < m->nprocs; i++)
        if (strcmp(m->procs[i].name, name) == 0)
            return &m->procs[i];
    return NULL;
}

static void test_merge_one_host(void **state)
{
    static struct lg_merged m;
    struct lg_runfile in[2];
    char err[LG_ERR_LEN];
    const struct lg_monitor_result *mon;

    (void)state;
    t_input(&in[0], "a", "0000000a", "vm", 0.8);
    t_input(&in[1], "b", "0000000b", "vm", 0.8);
    add_proc(&in[0], "server1", 0.5);
    add_proc(&in[1], "server1", 0.5);
    assert_int_equal(lg_merge_combine(in, 2, &m, err), 0);
    mon = &m.run.points[0].mon;
    assert_int_equal(m.nhosts, 1);
    /* one machine: its CPU and server1 once, both loadgens as one group */
    assert_int_equal(mon->nprocs, 2);
    assert_int_equal(mon->ncpu, 2);
    assert_true(mon->machine_cpu == 0.8);
    assert_non_null(group(mon, "server1"));
    assert_true(group(mon, "server1")->cpu_cores == 0.5);
    assert_int_equal(group(mon, "loadgen")->nproc, 2);
    assert_true(group(mon, "loadgen")->cpu_cores == 1.2);
    assert_true(group(mon, "loadgen")->capacity == 2);
    assert_string_equal(m.inputs[0].label, "");
    lg_merged_release(&m);
    lg_runfile_release(&in[0]);
    lg_runfile_release(&in[1]);
}

static void test_merge_two_hosts(void **state)
{
    static struct lg_merged m;
    struct lg_runfile in[2];
    struct lg_run_analysis an;
    char err[LG_ERR_LEN];
    const struct lg_monitor_result *mon;
    const struct lg_point_analysis *pa;

    (void)state;
    t_input(&in[0], "a", "0000000a", "front.example.org", 0.5);
    t_input(&in[1], "b", "0000000b", "client2", 0.9);
    add_proc(&in[0], "server1", 0.7);
    /* client2's loadgen: 1.2 of its 1.8 busy cores, on 2 threads (U = 60%) */
    in[1].points[0].mon.procs[0].cpu_cores = 1.2;
    in[1].points[0].mon.procs[0].nthreads = 2;
    in[1].points[0].mon.procs[0].capacity = 2;
    assert_int_equal(lg_merge_combine(in, 2, &m, err), 0);
    mon = &m.run.points[0].mon;
    assert_int_equal(m.nhosts, 2);
    assert_string_equal(m.inputs[0].label, "front");
    assert_string_equal(m.inputs[1].label, "client2");
    assert_int_equal(mon->ncpu, 4);
    assert_true(mon->machine_cpu > 0.6999 && mon->machine_cpu < 0.7001);
    assert_non_null(group(mon, "loadgen@front"));
    assert_non_null(group(mon, "server1@front"));
    assert_non_null(group(mon, "loadgen@client2"));
    assert_true(group(mon, "all@client2")->cpu_cores > 1.7999);
    assert_int_equal(m.run.points[0].users, 4);
    assert_true(m.run.points[0].window_s == 2);

    lg_analyze(&m.run, &an);
    lg_merge_fix_analysis(&m, &an);
    pa = &an.pts[0];
    /* X = 2000 / 2 s; the busiest resource is client2's whole CPU, mostly its loadgen */
    assert_true(pa->f[LG_REQ_ALL].x == 1000);
    assert_true(pa->bottleneck >= 0);
    assert_string_equal(pa->res[pa->bottleneck].name, "cpu:all@client2");
    assert_true(pa->lg_bottleneck);
    assert_string_equal(mon->procs[pa->top_proc].name, "loadgen@client2");
    lg_analysis_release(&an);
    lg_merged_release(&m);
    lg_runfile_release(&in[0]);
    lg_runfile_release(&in[1]);
}

static void test_merge_refuses(void **state)
{
    static struct lg_merged m;
    struct lg_runfile in[2];
    char err[LG_ERR_LEN];

    (void)state;
    t_input(&in[0], "a", "0000000a", "vm", 0.5);
    t_input(&in[1], "b", "0000000b", "vm", 0.5);
    in[1].cfg.think_us = 1000;
    assert_int_equal(lg_merge_combine(in, 2, &m, err), -1);
    assert_non_null(strstr(err, "think_ms: 'a' has 0.000, 'b' has 1.000"));
    in[1].cfg.think_us = 0;
    /* --names: another source, or the same with another law */
    in[0].cfg.names.kind = in[1].cfg.names.kind = LG_NAMES_PATTERN;
    in[0].cfg.names.n = in[1].cfg.names.n = 100;
    snprintf(in[0].cfg.names_source, sizeof(in[0].cfg.names_source), "f{00..99}");
    snprintf(in[1].cfg.names_source, sizeof(in[1].cfg.names_source), "g{00..99}");
    assert_int_equal(lg_merge_combine(in, 2, &m, err), -1);
    assert_non_null(strstr(err, "names: 'a' has 'f{00..99}' (100, uniform), 'b' has "
                                "'g{00..99}' (100, uniform)"));
    snprintf(in[1].cfg.names_source, sizeof(in[1].cfg.names_source), "f{00..99}");
    in[1].cfg.pick_kind = LG_PICK_ZIPF;
    in[1].cfg.zipf_s = 0.99;
    assert_int_equal(lg_merge_combine(in, 2, &m, err), -1);
    assert_non_null(strstr(err, "'b' has 'f{00..99}' (100, zipf 0.99)"));
    memset(&in[0].cfg.names, 0, sizeof(in[0].cfg.names));
    memset(&in[1].cfg.names, 0, sizeof(in[1].cfg.names));
    /* 5% of the window apart: refused below 90% overlap? no: 95% is merged with a warning */
    in[1].points[0].window_start_ms += 100;
    in[1].points[0].window_end_ms += 100;
    assert_int_equal(lg_merge_combine(in, 2, &m, err), 0);
    lg_merged_release(&m);
    in[1].points[0].window_start_ms += 200;
    in[1].points[0].window_end_ms += 200;
    assert_int_equal(lg_merge_combine(in, 2, &m, err), -1);
    assert_non_null(strstr(err, "overlap 85.0% only"));
    assert_int_equal(lg_merge_combine(in, 1, &m, err), -1);
    lg_runfile_release(&in[0]);
    lg_runfile_release(&in[1]);
}

static void test_merge_parse_errors(void **state)
{
    struct lg_runfile in;
    char err[LG_ERR_LEN];
    const char *bad_json = "{\"tool\": \"loadgen\",";
    const char *no_config = "{\"tool\": \"loadgen\", \"run_id\": \"1\", \"interrupted\": false, "
                            "\"started\": \"2024-01-31T12:00:00Z\"}";

    (void)state;
    assert_int_equal(lg_runfile_parse(&in, bad_json, strlen(bad_json), "x/run.json", err), -1);
    assert_non_null(strstr(err, "x/run.json: not valid JSON"));
    assert_int_equal(lg_runfile_parse(&in, no_config, strlen(no_config), "x/run.json", err), -1);
    assert_string_equal(err, "x/run.json: config: missing");
}

/* A damaged histogram in a real report: its counts no longer add up. */
static void test_merge_parse_bad_hist(void **state)
{
    static struct lg_config cfg;
    static struct lg_point p;
    struct lg_runfile in;
    struct lg_run run;
    char root[] = "/tmp/test_lg_merge_h.XXXXXX";
    char dir[64];
    char err[LG_ERR_LEN];
    char *text;
    char *at;
    long len;

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof(dir), "%s/a", root);
    t_run_init(&run, &cfg, &p, "0000000c", dir);
    for (unsigned i = 0; i < 100; i++) {
        hist_record(&p.st[LG_REQ_GET].lat, 1000 + i);
        p.st[LG_REQ_GET].ok++;
    }
    t_write(&run);
    text = t_read_run(dir, &len);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    lg_runfile_release(&in);
    at = strstr(text, "\"count\": 100,");
    assert_non_null(at);
    memcpy(at, "\"count\": 101,", 13);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].raw.get.lat_ns.buckets: the counts do not add up to "
                             "count");
    free(text);
    t_remove(root);
}

/* A window's cap reads back; a run.json written before it existed has none (0); bad: named. */
static void test_merge_parse_window_max(void **state)
{
    static struct lg_config cfg;
    static struct lg_point p;
    struct lg_runfile in;
    struct lg_run run;
    char root[] = "/tmp/test_lg_merge_w.XXXXXX";
    char dir[64];
    char err[LG_ERR_LEN];
    char *text;
    char *at;
    long len;

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof(dir), "%s/a", root);
    t_run_init(&run, &cfg, &p, "0000000d", dir);
    cfg.window_max_us = 12500000;
    p.window_max_s = 12.5;
    for (unsigned i = 0; i < 100; i++) {
        hist_record(&p.st[LG_REQ_GET].lat, 1000 + i);
        p.st[LG_REQ_GET].ok++;
    }
    t_write(&run);
    text = t_read_run(dir, &len);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_true(in.points[0].window_max_s == 12.5);
    assert_int_equal(in.cfg.window_max_us, 12500000);
    lg_runfile_release(&in);
    /* both keys renamed away, as in a file from before them: 0 */
    while ((at = strstr(text, "\"window_max_s\"")) != NULL)
        memcpy(at, "\"window_old_s\"", 14);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_true(in.points[0].window_max_s == 0 && in.cfg.window_max_us == 0);
    lg_runfile_release(&in);
    /* a negative cap in the point */
    at = strstr(text, "\"window_old_s\": 12.5");
    assert_non_null(at);
    at = strstr(at + 1, "\"window_old_s\": 12.5");
    assert_non_null(at);
    memcpy(at, "\"window_max_s\": -2.5", 20);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].window_max_s: -2.5 is out of range [0, 1e+09]");
    free(text);
    t_remove(root);
}

/* --names reads back (source, kind, N, law, spread); a run.json without it has none; bad: named. */
static void test_merge_parse_names(void **state)
{
    static struct lg_config cfg;
    static struct lg_point p;
    struct lg_runfile in;
    struct lg_run run;
    char root[] = "/tmp/test_lg_merge_n.XXXXXX";
    char dir[64];
    char err[LG_ERR_LEN];
    char *text;
    char *at;
    long len;

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof(dir), "%s/a", root);
    t_run_init(&run, &cfg, &p, "0000000e", dir);
    cfg.names.kind = LG_NAMES_PATTERN;
    cfg.names.n = 100000000;
    snprintf(cfg.names_source, sizeof(cfg.names_source), "d{00..99}/d{00..99}/d{00..99}/f{00..99}");
    cfg.pick_kind = LG_PICK_ZIPF;
    cfg.zipf_s = 0.99;
    cfg.names_spread = true;
    for (unsigned i = 0; i < 100; i++) {
        hist_record(&p.st[LG_REQ_GET].lat, 1000 + i);
        p.st[LG_REQ_GET].ok++;
    }
    t_write(&run);
    text = t_read_run(dir, &len);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_int_equal(in.cfg.names.kind, LG_NAMES_PATTERN);
    assert_int_equal(in.cfg.names.n, 100000000);
    assert_string_equal(in.cfg.names_source, "d{00..99}/d{00..99}/d{00..99}/f{00..99}");
    assert_int_equal(in.cfg.pick_kind, LG_PICK_ZIPF);
    assert_true(in.cfg.zipf_s == 0.99 && in.cfg.names_spread);
    lg_runfile_release(&in);
    at = strstr(text, "\"kind\": \"pattern\"");
    assert_non_null(at);
    memcpy(at, "\"kind\": \"pottern\"", 17);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: config.names.kind: not file or pattern");
    /* renamed away, as in a file from before --names: none */
    at = strstr(text, "\"names\": {");
    assert_non_null(at);
    memcpy(at, "\"nomes\"", 7);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_int_equal(in.cfg.names.kind, LG_NAMES_NONE);
    lg_runfile_release(&in);
    free(text);
    t_remove(root);
}

/* The last occurrence of needle in text (raw.get.by_kind comes after the figures' copy). */
static char *t_last(char *text, const char *needle)
{
    char *last = NULL;

    for (char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        last = at;
    return last;
}

/* Errors by kind read back; a file from before them has none; a bad name or sum: named. */
static void test_merge_parse_by_kind(void **state)
{
    static struct lg_config cfg;
    static struct lg_point p;
    struct lg_runfile in;
    struct lg_run run;
    char root[] = "/tmp/test_lg_merge_k.XXXXXX";
    char dir[64];
    char err[LG_ERR_LEN];
    char *text;
    char *at;
    long len;

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof(dir), "%s/a", root);
    t_run_init(&run, &cfg, &p, "0000000f", dir);
    for (unsigned i = 0; i < 100; i++) {
        hist_record(&p.st[LG_REQ_GET].lat, 1000 + i);
        p.st[LG_REQ_GET].ok++;
    }
    p.st[LG_REQ_GET].err[LG_ERR_STATUS_4XX] = 2;
    p.st[LG_REQ_GET].err[LG_ERR_SHORT] = 1;
    lg_errtab_add(&p.st[LG_REQ_GET].by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    lg_errtab_add(&p.st[LG_REQ_GET].by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    lg_errtab_add(&p.st[LG_REQ_GET].by_kind, LG_ERR_SHORT, 0, LG_KIND_RESET);
    t_write(&run);
    text = t_read_run(dir, &len);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_int_equal(in.points[0].st[LG_REQ_GET].by_kind.status[404 - LG_STATUS_MIN], 2);
    assert_int_equal(in.points[0].st[LG_REQ_GET].by_kind.kind[LG_KIND_RESET], 1);
    assert_int_equal(lg_errtab_total(&in.points[0].st[LG_REQ_ALL].by_kind), 3);
    lg_runfile_release(&in);
    /* a count that no longer adds up to the classes */
    at = t_last(text, "\"404\": 2");
    assert_non_null(at);
    memcpy(at, "\"404\": 3", 8);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].raw.get.by_kind: does not add up to the errors in err");
    /* a name that is neither a status 100-599 nor a kind */
    memcpy(at, "\"604\": 2", 8);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].raw.get.by_kind.604: not a status 100-599 nor an "
                             "error kind");
    /* renamed away, as in a file from before it: read, the table empty */
    memcpy(at, "\"404\": 2", 8);
    at = strstr(text, "\"by_kind\"");
    assert_non_null(at);
    memcpy(at, "\"by_kinx\"", 9);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_int_equal(lg_errtab_total(&in.points[0].st[LG_REQ_ALL].by_kind), 0);
    lg_runfile_release(&in);
    free(text);

    /* the successes by status: read back; a count off ok, or a kind's name, refused */
    assert_int_equal(lg_errtab_add_named(&p.st[LG_REQ_GET].ok_by_status, "200", 100), 0);
    t_write(&run);
    text = t_read_run(dir, &len);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), 0);
    assert_int_equal(in.points[0].st[LG_REQ_GET].ok_by_status.status[200 - LG_STATUS_MIN], 100);
    lg_runfile_release(&in);
    at = t_last(text, "\"200\": 100");
    assert_non_null(at);
    memcpy(at, "\"200\": 101", 10);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].raw.get.ok_by_status: does not add up to ok");
    memcpy(at, "\"reset\": 1", 10);
    assert_int_equal(lg_runfile_parse(&in, text, (size_t)len, "r", err), -1);
    assert_string_equal(err, "r: points[0].raw.get.ok_by_status.reset: not a status 100-599");
    free(text);
    t_remove(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_hist_exact),   cmocka_unit_test(test_merge_one_host),
        cmocka_unit_test(test_merge_two_hosts),    cmocka_unit_test(test_merge_refuses),
        cmocka_unit_test(test_merge_parse_errors), cmocka_unit_test(test_merge_parse_bad_hist),
        cmocka_unit_test(test_merge_parse_window_max), cmocka_unit_test(test_merge_parse_by_kind),
        cmocka_unit_test(test_merge_parse_names),
    };
    return cmocka_run_group_tests_name("lg_merge", tests, NULL, NULL);
}
