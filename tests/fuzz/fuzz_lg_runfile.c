/*
 * fuzz_lg_runfile.c - the reader of run.json that loadgen merge uses (loadgen/runfile:
 * jansson, then every field checked). The input is the file's text. Properties: a refused input always has a
 * one-line reason naming the file; an accepted one has 1..64 points whose histograms are
 * self-consistent (bucket counts add up to count, min <= every percentile <= max) and whose
 * per-type totals add up to the all-types figures.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../loadgen/runfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_hist(const struct hist *h)
{
    uint64_t n = 0;

    for (unsigned b = 0; b < HIST_BUCKETS; b++)
        n += h->counts[b];
    if (n != h->count)
        abort();
    if (h->count > 0) {
        uint64_t p50 = hist_percentile(h, 50);
        uint64_t p99 = hist_percentile(h, 99);
        if (h->min > h->max || p50 < h->min || p99 > h->max || p50 > p99)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lg_runfile in;
    char err[LG_ERR_LEN];

    err[0] = '\0';
    if (lg_runfile_parse(&in, (const char *)data, size, "f", err) < 0) {
        if (strncmp(err, "f: ", 3) != 0 || strchr(err, '\n') != NULL || in.points != NULL)
            abort();
        return 0;
    }
    if (in.npoints == 0 || in.npoints > LG_SWEEP_MAX)
        abort();
    for (unsigned k = 0; k < in.npoints; k++) {
        const struct lg_point *p = &in.points[k];
        uint64_t ok = 0;
        for (int t = 0; t <= LG_REQ_ALL; t++)
            check_hist(&p->st[t].lat);
        for (int t = 0; t < LG_REQ_TYPES; t++)
            ok += p->st[t].ok;
        if (ok != p->st[LG_REQ_ALL].ok || p->st[LG_REQ_ALL].lat.count != ok)
            abort();
    }
    lg_runfile_release(&in);
    return 0;
}
