/*
 * fuzz_runjson.c - loadgen's run.json reader (loadgen/runjson) as --predict-only uses it, and
 * the model built from whatever it accepts. Properties: the reader never reads past size (an
 * exact-size copy); what it accepts has 1..LG_RUNJSON_MAX_POINTS points with N >= 1, X >= 0,
 * R >= 0 and 1..LG_MVA_MAX_SERVERS cores; the model of it either says why there is none or
 * gives finite, non-negative predictions; a curve of a few points solves without a crash.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../loadgen/model.h"
#include "../../loadgen/runjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    char err[256];
    struct lg_runjson r;
    struct lg_model_in in;
    struct lg_model_out m;
    struct lg_model_curve c;
    const char *why;

    if (copy == NULL)
        return 0;
    if (size > 0)
        memcpy(copy, data, size);
    if (lg_runjson_parse(copy, size, &r, err, sizeof(err)) == 0) {
        if (r.npts < 1 || r.npts > LG_RUNJSON_MAX_POINTS || r.ncpu < 1 ||
            r.ncpu > LG_MVA_MAX_SERVERS || !(r.z_s >= 0))
            abort();
        for (unsigned i = 0; i < r.npts; i++)
            if (r.pts[i].n < 1 || !(r.pts[i].x >= 0) || !(r.pts[i].r_s >= 0))
                abort();
        lg_runjson_input(&r, &in);
        lg_model_fit(&in, &m);
        for (unsigned i = 0; m.ok && i < r.npts; i++)
            if (isfinite(m.pern[i].x) && !(m.pern[i].x >= 0 && m.pern[i].r_s >= 0))
                abort();
        if (lg_model_predict(&in, &m, 8, &c, &why) == 0)
            lg_model_curve_release(&c);
        lg_model_release(&m);
        lg_runjson_release(&r);
    } else if (err[0] == '\0') {
        abort(); /* a rejection always says why */
    }
    free(copy);
    return 0;
}
