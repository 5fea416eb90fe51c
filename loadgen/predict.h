/*
 * predict.h - loadgen --predict-only RUN.json: the queueing model (model.h) of a run that
 * loadgen wrote, without measuring anything. It prints the model (stations, demands, the fixed
 * delay), the predicted X(N) and R(N) for N = 1..--max-users from demands fitted through two
 * short points (N = 1 and N = 4) and from the N = 1 demands alone, the knee of each; and, for
 * every point the file holds, measured X against the model (each point's own demands and the
 * N = 1 demands), ending with one "check:" line that scripts/model-check.sh sums up.
 */
#ifndef LG_PREDICT_H
#define LG_PREDICT_H

#include <stdbool.h>
#include <stdio.h>

/* hardware_only: the hardware model even for a run with software stations (--hardware-model).
 * Returns the exit status: 0, or 2 (bad or missing input; one line on stderr). */
int lg_predict_main(const char *path, unsigned nmax, bool hardware_only, FILE *out);

#endif /* LG_PREDICT_H */
