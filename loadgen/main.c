/*
 * main.c - loadgen's entry point: parse and validate flags, block SIGINT/SIGTERM (the run reads
 * them from a signalfd), run the points, analyze, print the summary and write the reports; or,
 * with --predict-only, only the model of an earlier run (predict.h); or, as `loadgen merge`,
 * combine the reports of several runs (merge.c).
 * Exit status: 0 ok, 1 the run failed, 2 bad flags, 130 interrupted.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "config.h"
#include "log.h"
#include "merge.h"
#include "predict.h"
#include "report.h"
#include "run.h"

int main(int argc, char **argv)
{
    static struct lg_config cfg; /* large; immutable once the run starts */
    char err[LG_ERR_LEN];
    struct lg_run run;
    struct lg_run_analysis an;
    sigset_t set;
    int rc;

    log_init("loadgen", LOG_INFO);
    if (argc >= 2 && strcmp(argv[1], "merge") == 0)
        return lg_merge_main(argc, argv);
    lg_config_defaults(&cfg);
    rc = lg_config_parse(&cfg, argc, argv, err);
    if (rc == 1)
        return 0;
    if (rc == 0)
        rc = lg_config_validate(&cfg, err);
    if (rc < 0) {
        fprintf(stderr, "loadgen: %s\n", err);
        lg_config_release(&cfg);
        return 2;
    }
    log_init("loadgen", cfg.verbose >= 1 ? LOG_DEBUG : LOG_INFO);
    if (cfg.predict_path[0] != '\0')
        return lg_predict_main(cfg.predict_path, cfg.max_users, cfg.hardware_model, stdout);

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    rc = lg_run_execute(&run, &cfg);
    if (run.npoints > 0) {
        lg_analyze(&run, &an);
        lg_report_stdout(stdout, &run, &an);
        fflush(stdout);
        if (lg_report_files(&run, &an) < 0)
            rc = -1;
        lg_analysis_release(&an);
    }
    lg_run_release(&run);
    lg_config_release(&cfg);
    if (rc < 0)
        return 1;
    return run.interrupted ? 130 : 0;
}
