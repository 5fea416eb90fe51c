/*
 * report.h - the outputs of a run: a short human summary on stdout, and with --out DIR the files
 * points.csv (one row per point, plus one per request type in a mix), run.json (flags without
 * the password, versions, machine, every point) and summary.md (the report-style table, N*,
 * R at N*, X max, N*_law, the queueing model beside the measured points, the bottleneck).
 * Called by main after the run, single-threaded.
 */
#ifndef LG_REPORT_H
#define LG_REPORT_H

#include <stdio.h>

#include "analysis.h"
#include "run.h"

/* Prints the summary on out. */
void lg_report_stdout(FILE *out, const struct lg_run *run, const struct lg_run_analysis *a);
/* Writes the files into cfg->out_dir (created if missing). Returns 0, or -1 (logged). */
int lg_report_files(const struct lg_run *run, const struct lg_run_analysis *a);
/* argv[i] as reports show it: the --password value (however the flag is spelled) is hidden. */
const char *lg_report_arg(int argc, char **argv, int i);

#endif /* LG_REPORT_H */
