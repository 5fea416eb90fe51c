/*
 * hist.h - mergeable log-linear histogram of non-negative integers (latencies in ns), in the
 * style of HdrHistogram with 7 sub-bucket bits: values below 128 are counted exactly, and every
 * power-of-two range above is split into 64 equal buckets, so a reported percentile (the middle
 * of its bucket) is within 1/128 (0.8%) of a value that was recorded. Any uint64_t fits.
 * DESIGN: a struct hist is plain data owned by one thread; threads record into their own and
 * the owner of the result merges them after pthread_join. No locks, no atomics, no allocation.
 */
#ifndef HIST_H
#define HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7                      /* 2^7 = 128 exact values, then 64 per octave */
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS) /* 128 */
#define HIST_HALF_COUNT (HIST_SUB_COUNT / 2) /* 64 buckets per power of two */
#define HIST_BUCKETS (HIST_SUB_COUNT + (64 - HIST_SUB_BITS) * HIST_HALF_COUNT) /* 3776 */

struct hist {
    uint64_t count; /* values recorded */
    uint64_t min;   /* exact; UINT64_MAX when empty */
    uint64_t max;   /* exact; 0 when empty */
    double sum;     /* of every value, for the mean */
    uint64_t counts[HIST_BUCKETS];
};

/* Empties h. A zero-filled struct hist is not a valid empty histogram (min must be MAX). */
void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t value);
/* Adds every value of src to dst, as if they had been recorded into dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/*
 * The value below or at which pct percent of the recorded values lie (the value of rank
 * ceil(pct/100 * count), 1-based), as the middle of its bucket clamped to [min, max].
 * pct is clamped to [0, 100]; 0 gives min, 100 gives max; an empty histogram gives 0.
 */
uint64_t hist_percentile(const struct hist *h, double pct);
/* Mean of the recorded values, 0 when empty. */
double hist_mean(const struct hist *h);
uint64_t hist_count(const struct hist *h);

/* Bucket arithmetic, exposed for tests: the bucket of a value and the range it covers. */
unsigned hist_bucket_of(uint64_t value);
uint64_t hist_bucket_low(unsigned bucket);
uint64_t hist_bucket_high(unsigned bucket);

#endif /* HIST_H */
