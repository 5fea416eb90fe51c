/*
 * pick.h - which of N names (names.h) a request gets (--pick): drawn uniformly, or by a Zipf
 * law of exponent s > 0 over the names' ranks, rank 1 being the first name (of the file, or
 * of the pattern: index 0), P(rank k) = k^-s / H(N, s). Zipf draws use rejection-inversion
 * (W. Hormann, G. Derflinger, "Rejection-inversion to generate variates from monotone discrete
 * distributions", ACM TOMACS 6(3), 1996), as Apache Commons RNG's
 * RejectionInversionZipfSampler does: O(1) time and memory per draw for any N (no table), on
 * average fewer than 1.1 uniform draws each. Each draw takes its uniforms from the caller's RNG
 * (rng.h: a thread's, seeded from --seed), so a run is reproducible.
 *
 * --spread maps the ranks onto the names by a fixed permutation instead: index =
 * (a * (rank - 1) + b) mod N, a coprime to N near N (sqrt(5) - 1) / 2 and b from --seed. An
 * affine map, not a random one: it puts consecutive ranks about 0.618 N apart (golden-ratio
 * steps fill [0, N) evenly), so the hottest names of a numbered tree do not share their
 * directories.
 *
 * DESIGN: a struct lg_pick is built before the workers start and is immutable afterwards;
 * lg_pick_draw is thread-safe (the RNG state is the caller's).
 */
#ifndef LG_PICK_H
#define LG_PICK_H

#include <stdbool.h>
#include <stdint.h>

#define LG_PICK_ERR_LEN 256
#define LG_ZIPF_S_MIN 0.01 /* --pick zipf:S bounds */
#define LG_ZIPF_S_MAX 10.0

enum lg_pick_kind {
    LG_PICK_UNIFORM = 0, /* every name equally likely */
    LG_PICK_ZIPF = 1,    /* rank k with probability proportional to k^-s */
};

struct lg_pick {
    enum lg_pick_kind kind;
    double s;    /* the Zipf exponent */
    uint64_t n;  /* names: draws are in [0, n) */
    double h_x1; /* rejection-inversion's constants: H(1.5) - 1 */
    double h_n;  /* H(n + 0.5) */
    double squeeze; /* 2 - H^-1(H(2.5) - h(2)): accept k - x <= squeeze without a test */
    bool spread;    /* rank r is index (mul * (r - 1) + add) mod n, else r - 1 */
    uint64_t mul;   /* coprime to n */
    uint64_t add;   /* < n */
};

/*
 * Parses "uniform" or "zipf:S" (S a number in [LG_ZIPF_S_MIN, LG_ZIPF_S_MAX]) into kind and s.
 * 0, or -1 with err.
 */
int lg_pick_parse(const char *arg, enum lg_pick_kind *kind, double *s, char *err);
/* Builds p for n >= 1 names. */
void lg_pick_init(struct lg_pick *p, enum lg_pick_kind kind, double s, uint64_t n);
/* Makes p map ranks to names by the permutation of --spread, its offset from seed. */
void lg_pick_spread(struct lg_pick *p, uint64_t seed);
/* A name's index in [0, n): rank - 1, or its image under --spread. Advances *rng. */
uint64_t lg_pick_draw(const struct lg_pick *p, uint64_t *rng);

#endif /* LG_PICK_H */
