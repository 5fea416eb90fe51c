/*
 * runjson.h - reads back what the model needs from a run.json that loadgen wrote (report.h):
 * the run's id, the machine's core count, the think time, whether it was a closed loop, and
 * per point N, X, R, the utilisation of the machine's CPU, each disk and Redis, the CPU of the
 * watched processes, and the software stations that are not nested (when threads were
 * sampled). Parsing with jansson; a missing or mistyped field is an error that names it. Pure:
 * text in, struct out (fuzzed by tests/fuzz/fuzz_runjson.c).
 */
#ifndef LG_RUNJSON_H
#define LG_RUNJSON_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

#define LG_RUNJSON_MAX_POINTS 4096
#define LG_RUNJSON_MAX_BYTES (64u << 20) /* a run.json of 4096 points is about 20 MB */

struct lg_runjson {
    char run_id[64];
    unsigned ncpu;
    double z_s;
    bool closed_loop;
    struct lg_model_obs *pts; /* npts, malloc'd */
    unsigned npts;
};

/* Parses len bytes of text. Returns 0, or -1 with a one-line reason in err. */
int lg_runjson_parse(const char *text, size_t len, struct lg_runjson *out, char *err,
                     size_t errcap);
void lg_runjson_release(struct lg_runjson *r);
/* The model input the parsed run describes (points borrowed from r; hardware_only false). */
void lg_runjson_input(const struct lg_runjson *r, struct lg_model_in *in);

#endif /* LG_RUNJSON_H */
