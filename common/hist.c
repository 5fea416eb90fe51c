/*
 * hist.c - see hist.h. Bucket b < 128 holds exactly the value b. Above, a value v with its
 * highest set bit at position m (m >= 7) falls in octave m - 7, and within it in sub-bucket
 * (v >> (m - 6)) - 64, so each bucket is 2^(m-6) wide: 1/64 of its lower bound at most.
 */
#include "hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

unsigned hist_bucket_of(uint64_t v)
{
    unsigned msb;
    unsigned shift;

    if (v < HIST_SUB_COUNT)
        return (unsigned)v;
    msb = 63u - (unsigned)__builtin_clzll(v);
    shift = msb - (HIST_SUB_BITS - 1);
    return HIST_SUB_COUNT + (msb - HIST_SUB_BITS) * HIST_HALF_COUNT +
           (unsigned)((v >> shift) - HIST_HALF_COUNT);
}

uint64_t hist_bucket_low(unsigned b)
{
    unsigned octave;
    unsigned sub;

    if (b < HIST_SUB_COUNT)
        return b;
    octave = (b - HIST_SUB_COUNT) / HIST_HALF_COUNT;
    sub = (b - HIST_SUB_COUNT) % HIST_HALF_COUNT;
    return (uint64_t)(HIST_HALF_COUNT + sub) << (octave + 1);
}

uint64_t hist_bucket_high(unsigned b)
{
    unsigned octave;

    if (b < HIST_SUB_COUNT)
        return b;
    octave = (b - HIST_SUB_COUNT) / HIST_HALF_COUNT;
    return hist_bucket_low(b) + ((1ull << (octave + 1)) - 1);
}

void hist_record(struct hist *h, uint64_t v)
{
    h->counts[hist_bucket_of(v)]++;
    h->count++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double pct)
{
    uint64_t rank;
    uint64_t seen = 0;

    if (h->count == 0)
        return 0;
    if (!(pct > 0.0)) /* also catches NaN */
        return h->min;
    if (pct >= 100.0)
        return h->max;
    rank = (uint64_t)((pct / 100.0) * (double)h->count);
    if ((double)rank < (pct / 100.0) * (double)h->count)
        rank++; /* ceil without calling libm */
    if (rank == 0)
        rank = 1;
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t lo = hist_bucket_low(b);
            uint64_t mid = lo + (hist_bucket_high(b) - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}

uint64_t hist_count(const struct hist *h)
{
    return h->count;
}
