/*
 * test_report.c - loadgen/report: Little's law per point in points.csv (little_rel_diff,
 * with the window's goal and rule beside it), in run.json, and points off by more than 5%
 * flagged in summary.md and on stdout; every CSV row has the header's number of fields, per
 * request type rows of a mix too. The run is made up (two points, one like the full run's
 * mp-noprefetch-mysql get-100MB at N = 8: 56 completions of 1,018 ms in 8 s), written with
 * lg_report_files into a temporary directory and read back. Errors by kind: on stdout, as the
 * last column of points.csv (errors_by_kind) and in run.json, read back by loadgen merge. A
 * run of one point prints no N*, knee or model; a run without -o says nothing was written.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/analysis.h"
#include "../../../loadgen/report.h"
#include "../../../loadgen/runfile.h"

#define T_MAX_COLS 512

/* Reads a whole file into a malloc'd string. */
static char *t_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Splits line (modified) at commas into fields; returns how many. */
static unsigned t_split(char *line, char **fields)
{
    unsigned n = 0;

    fields[n++] = line;
    for (char *p = line; *p != '\0' && n < T_MAX_COLS; p++) {
        if (*p == ',') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    }
    return n;
}

static int t_col(char **header, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0)
            return (int)i;
    print_error("no column %s\n", name);
    fail();
    return -1;
}

/* One point: users, window, its cap, and ok successes of r_ms each (half new, half get). */
static void t_point(struct lg_point *p, unsigned users, double window_s, double max_s,
                    unsigned ok, double r_ms)
{
    memset(p, 0, sizeof(*p));
    p->users = users;
    p->threads = 2;
    p->window_s = window_s;
    p->window_max_s = max_s;
    p->window_start_ms = 1700000000000.0;
    p->window_end_ms = p->window_start_ms + window_s * 1e3;
    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&p->st[t]);
    for (unsigned i = 0; i < ok; i++) {
        struct lg_stats *s = &p->st[i % 2 ? LG_REQ_GET : LG_REQ_NEW];
        hist_record(&s->lat, (uint64_t)(r_ms * 1e6));
        s->ok++;
    }
    lg_stats_merge(&p->st[LG_REQ_ALL], &p->st[LG_REQ_NEW]);
    lg_stats_merge(&p->st[LG_REQ_ALL], &p->st[LG_REQ_GET]);
}

static void test_report_little_column(void **state)
{
    static struct lg_config cfg;
    static struct lg_point pts[2];
    struct lg_run run;
    struct lg_run_analysis an;
    char dir[] = "/tmp/test_lg_report.XXXXXX";
    char path[128];
    char *csv;
    char *md;
    char *json;
    char *line;
    char *save = NULL;
    char *header[T_MAX_COLS];
    char *row[T_MAX_COLS];
    unsigned ncols = 0;
    unsigned rows = 0;
    int c_little = -1, c_goal = -1, c_rule = -1, c_type = -1, c_users = -1;
    FILE *out;
    char stdout_buf[8192];
    size_t got;

    (void)state;
    assert_non_null(mkdtemp(dir));
    lg_config_defaults(&cfg);
    cfg.weight[LG_REQ_NEW] = 1;
    cfg.weight[LG_REQ_GET] = 1;
    snprintf(cfg.file, sizeof(cfg.file), "100m");
    snprintf(cfg.mix_desc, sizeof(cfg.mix_desc), "new:1,get:1");
    snprintf(cfg.out_dir, sizeof(cfg.out_dir), "%s", dir);
    cfg.nsweep = 2;
    memset(&run, 0, sizeof(run));
    run.cfg = &cfg;
    run.started = 1700000000;
    snprintf(run.run_id, sizeof(run.run_id), "0000000c");
    run.points = pts;
    run.npoints = 2;
    /* N = 1: 500 of 10 ms in 5 s: X (R + Z) = 1 exactly, the rule met */
    t_point(&pts[0], 1, 5, 10, 500, 10);
    /* N = 8: 56 of 1,018 ms in 8 s (X = 7): X R = 7.126, -10.9%; capped at 8 s */
    t_point(&pts[1], 8, 8, 8, 56, 1018);

    lg_analyze(&run, &an);
    out = tmpfile();
    assert_non_null(out);
    lg_report_stdout(out, &run, &an);
    rewind(out);
    got = fread(stdout_buf, 1, sizeof(stdout_buf) - 1, out);
    stdout_buf[got] = '\0';
    fclose(out);
    assert_int_equal(lg_report_files(&run, &an), 0);
    lg_analysis_release(&an);

    /* stdout: the N = 8 point warned about, with its window against the rule */
    assert_non_null(strstr(stdout_buf, "WARNING: at N = 8 Little's law is off by -10.9%"));
    assert_non_null(strstr(stdout_buf, "window 8.00 s = 7.9 (R + Z), 56 completions; the rule "
                                       "asks 20 (R + Z) and 200: capped at --window-max 8.00 s"));
    assert_null(strstr(stdout_buf, "at N = 1 Little's law"));
    /* a sweep: N*, the knee, written files named */
    assert_non_null(strstr(stdout_buf, "N* = "));
    assert_non_null(strstr(stdout_buf, "results: "));
    assert_null(strstr(stdout_buf, "nothing was written"));

    snprintf(path, sizeof(path), "%s/points.csv", dir);
    csv = t_slurp(path);
    for (line = strtok_r(csv, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        unsigned n;
        if (ncols == 0) {
            ncols = t_split(line, header);
            c_little = t_col(header, ncols, "little_rel_diff");
            c_goal = t_col(header, ncols, "window_goal_s");
            c_rule = t_col(header, ncols, "window_rule");
            c_type = t_col(header, ncols, "type");
            c_users = t_col(header, ncols, "users");
            assert_int_equal(c_goal, c_little + 1);
            assert_int_equal(c_rule, c_little + 2);
            continue;
        }
        n = t_split(line, row);
        assert_int_equal(n, ncols); /* per-type rows too: no column shifted */
        rows++;
        if (strcmp(row[c_type], "all") != 0) {
            assert_string_equal(row[c_little], "");
            assert_string_equal(row[c_rule], "");
            continue;
        }
        if (strcmp(row[c_users], "1") == 0) {
            assert_string_equal(row[c_little], "0.0000");
            assert_string_equal(row[c_rule], "met");
            assert_string_equal(row[c_goal], "2.000"); /* 200 completions at 100/s */
        } else {
            assert_string_equal(row[c_users], "8");
            assert_true(fabs(strtod(row[c_little], NULL) - (7 * 1.018 / 8 - 1)) < 1e-4);
            assert_string_equal(row[c_rule], "capped");
            assert_string_equal(row[c_goal], "28.571"); /* 200 at 7/s; 20 R = 20.36 s */
        }
    }
    assert_int_equal(rows, 6); /* two points, each all + new + get */
    free(csv);

    snprintf(path, sizeof(path), "%s/summary.md", dir);
    md = t_slurp(path);
    assert_non_null(strstr(md, "| **7.13 (-10.9%)** | 8.00 capped |"));
    assert_non_null(strstr(md, "| 1.00 (+0.0%) | 5.00 met |"));
    assert_non_null(strstr(md, "- **Little's law off by -10.9% at N = 8** (X (R + Z) = 7.13): "
                               "window 8.00 s = 7.9 (R + Z), 56 completions; the rule asks 20 "
                               "(R + Z) and 200: capped at --window-max 8.00 s"));
    assert_null(strstr(md, "at N = 1**"));
    free(md);

    snprintf(path, sizeof(path), "%s/run.json", dir);
    json = t_slurp(path);
    assert_non_null(strstr(json, "\"window_max_s\": 8,"));
    assert_non_null(strstr(json, "\"rel_diff\": -0.109"));
    assert_non_null(strstr(json, "\"window_rule\": \"capped\""));
    free(json);

    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

/* Runs lg_report_stdout into buf. */
static void t_stdout(const struct lg_run *run, const struct lg_run_analysis *an, char *buf,
                     size_t cap)
{
    FILE *out = tmpfile();
    size_t got;

    assert_non_null(out);
    lg_report_stdout(out, run, an);
    rewind(out);
    got = fread(buf, 1, cap - 1, out);
    buf[got] = '\0';
    fclose(out);
}

static void test_report_errors_one_point(void **state)
{
    static struct lg_config cfg;
    static struct lg_point pt;
    static struct lg_runfile rf;
    struct lg_run run;
    struct lg_run_analysis an;
    struct lg_stats *s;
    char dir[] = "/tmp/test_lg_report.XXXXXX";
    char path[128];
    char err[LG_ERR_LEN];
    char buf[8192];
    char *csv;
    char *json;
    char *line;
    char *save = NULL;
    char *header[T_MAX_COLS];
    char *row[T_MAX_COLS];
    unsigned ncols = 0;
    unsigned rows = 0;
    int c_kinds = -1;
    int c_type = -1;

    (void)state;
    assert_non_null(mkdtemp(dir));
    lg_config_defaults(&cfg);
    cfg.weight[LG_REQ_GET] = 1;
    snprintf(cfg.file, sizeof(cfg.file), "1k");
    snprintf(cfg.mix_desc, sizeof(cfg.mix_desc), "get");
    cfg.users = 4;
    memset(&run, 0, sizeof(run));
    run.cfg = &cfg;
    run.started = 1700000000;
    snprintf(run.run_id, sizeof(run.run_id), "0000000e");
    run.points = &pt;
    run.npoints = 1;
    t_point(&pt, 4, 5, 10, 1000, 4);
    /* the get requests' errors: 404 x 5, 503 x 2, timeout x 1 */
    s = &pt.st[LG_REQ_GET];
    s->err[LG_ERR_STATUS_4XX] = 5;
    s->err[LG_ERR_STATUS_5XX] = 2;
    s->err[LG_ERR_TIMEOUT] = 1;
    for (int i = 0; i < 5; i++)
        lg_errtab_add(&s->by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    for (int i = 0; i < 2; i++)
        lg_errtab_add(&s->by_kind, LG_ERR_STATUS_5XX, 503, LG_KIND_BAD_STATUS);
    lg_errtab_add(&s->by_kind, LG_ERR_TIMEOUT, 0, LG_KIND_TIMEOUT);
    lg_stats_init(&pt.st[LG_REQ_ALL]);
    lg_stats_merge(&pt.st[LG_REQ_ALL], &pt.st[LG_REQ_NEW]);
    lg_stats_merge(&pt.st[LG_REQ_ALL], &pt.st[LG_REQ_GET]);

    /* without -o: one point, no N*, no knee, no model; nothing written, and said so */
    lg_analyze(&run, &an);
    t_stdout(&run, &an, buf, sizeof(buf));
    assert_non_null(strstr(buf, "WARNING: at N = 4, 8 requests failed: errors: 404 x 5, "
                                "503 x 2, timeout x 1\n"));
    assert_null(strstr(buf, "N*"));
    assert_null(strstr(buf, "knee"));
    assert_null(strstr(buf, "model ("));
    assert_null(strstr(buf, "model: none"));
    assert_null(strstr(buf, "results: "));
    assert_non_null(strstr(buf, "WARNING: no -o DIR: nothing was written"));

    /* with -o: the column and run.json */
    snprintf(cfg.out_dir, sizeof(cfg.out_dir), "%s", dir);
    t_stdout(&run, &an, buf, sizeof(buf));
    assert_null(strstr(buf, "nothing was written"));
    assert_int_equal(lg_report_files(&run, &an), 0);
    lg_analysis_release(&an);

    snprintf(path, sizeof(path), "%s/points.csv", dir);
    csv = t_slurp(path);
    for (line = strtok_r(csv, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        unsigned n;
        if (ncols == 0) {
            ncols = t_split(line, header);
            c_kinds = t_col(header, ncols, "errors_by_kind");
            c_type = t_col(header, ncols, "type");
            assert_int_equal(c_kinds, (int)ncols - 1); /* the last column */
            continue;
        }
        n = t_split(line, row);
        assert_int_equal(n, ncols);
        assert_string_equal(row[c_type], "all");
        assert_string_equal(row[c_kinds], "404:5;503:2;timeout:1");
        rows++;
    }
    assert_int_equal(rows, 1);
    free(csv);

    snprintf(path, sizeof(path), "%s/run.json", dir);
    json = t_slurp(path);
    assert_non_null(strstr(json, "\"errors_by_kind\": {\"404\": 5, \"503\": 2, \"timeout\": 1}"));
    assert_non_null(strstr(json, "\"by_kind\": {\"404\": 5, \"503\": 2, \"timeout\": 1}"));
    free(json);

    /* read back as loadgen merge reads it: the table comes back whole */
    assert_int_equal(lg_runfile_load(&rf, dir, err), 0);
    assert_int_equal(rf.npoints, 1);
    assert_int_equal(rf.points[0].st[LG_REQ_GET].by_kind.status[404 - LG_STATUS_MIN], 5);
    assert_int_equal(rf.points[0].st[LG_REQ_ALL].by_kind.status[503 - LG_STATUS_MIN], 2);
    assert_int_equal(rf.points[0].st[LG_REQ_ALL].by_kind.kind[LG_KIND_TIMEOUT], 1);
    lg_runfile_release(&rf);

    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_little_column),
        cmocka_unit_test(test_report_errors_one_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
