/*
 * merge.h - `loadgen merge [-o DIR] DIR...`: combines the results of loadgen processes that
 * measured the same wall-clock windows (--start-at, typically one per host) into one run. Per
 * point: N and the counts summed, the latency histograms merged exactly (hist_merge, never an
 * average of percentiles), X = all successes over the common window, each host's resources
 * kept under the host's name; then the same analysis (lg_analyze) and the same reports
 * (report.c) as a measured run. Inputs are DIR/run.json, read by runfile.c. Single-threaded.
 */
#ifndef LG_MERGE_H
#define LG_MERGE_H

#include "analysis.h"
#include "config.h"
#include "run.h"
#include "runfile.h"

#define LG_MERGE_MAX 16            /* input directories */
#define LG_MERGE_OVERLAP_MIN 0.90  /* windows that overlap less are refused */
#define LG_MERGE_OVERLAP_WARN 0.99 /* ... and less than this, warned about */

/* The merged run: run.cfg points to cfg, run.inputs to inputs. */
struct lg_merged {
    struct lg_config cfg;
    struct lg_run run;
    struct lg_run_input inputs[LG_MERGE_MAX];
    unsigned nhosts; /* distinct host names among the inputs */
};

/*
 * Checks that the n inputs measured the same load in the same windows (same request mix,
 * --names, think time, duration, warm-up, loop, model and number of points; windows
 * overlapping at least LG_MERGE_OVERLAP_MIN) and merges them into out. Returns 0, or -1 with one line in err
 * naming the field and the directories. out->run.cfg->out_dir is empty: set it to write.
 */
int lg_merge_combine(const struct lg_runfile *ins, unsigned n, struct lg_merged *out, char *err);
void lg_merged_release(struct lg_merged *m);
/*
 * What lg_analyze cannot know of a run over several hosts: whether a host's whole CPU being
 * the bottleneck is mostly that host's loadgen, and which watched group uses the most CPU
 * (a host's "all" group is no process). Call after lg_analyze() on out->run.
 */
void lg_merge_fix_analysis(const struct lg_merged *m, struct lg_run_analysis *a);

/* The sub-command: argv[1] is "merge". Returns the exit status (0, 1 failed, 2 bad usage). */
int lg_merge_main(int argc, char **argv);

#endif /* LG_MERGE_H */
