/*
 * predict.c - see predict.h. Rows of the curve: every N up to 16, then 24, 32, 48, 64, ...
 * (1 and 1.5 times the powers of 2), the knees and --max-users, so that a large --max-users
 * still prints a short table.
 */
#include "predict.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "runjson.h"
#include "xalloc.h"

static char *read_all(const char *path, size_t *len, char *err, size_t errcap)
{
    char ebuf[128];
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    if (f == NULL) {
        snprintf(err, errcap, "cannot open '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        return NULL;
    }
    buf = xmalloc(LG_RUNJSON_MAX_BYTES + 1);
    n = fread(buf, 1, LG_RUNJSON_MAX_BYTES + 1, f);
    if (ferror(f)) {
        snprintf(err, errcap, "cannot read '%s'", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

static bool row(unsigned n, const struct lg_model_curve *c)
{
    unsigned p = 1;

    if (!isfinite(c->fit[n - 1].x) || !isfinite(c->n1[n - 1].x))
        return false; /* not computed (model.h) */
    if (n <= 16 || n == c->nmax || n == c->knee_fit || n == c->knee_n1)
        return true;
    while (p * 2 <= n)
        p *= 2;
    return n == p || n == p + p / 2;
}

static void print_model(FILE *out, const char *path, const struct lg_runjson *r,
                        const struct lg_model_out *m)
{
    const struct lg_model_obs *b = &r->pts[m->base];

    if (m->layered) {
        fprintf(out,
                "layered model of run %s (%s, %u points): software stations over a CPU of %u "
                "cores, Z = %.3f ms, fixed delay %.4f ms, share of the stations' busy time on a "
                "request's path %.2f (at N = %u)\n",
                r->run_id, path, r->npts, m->ncpu, r->z_s * 1e3, m->fixed_s * 1e3, m->phi, b->n);
        fprintf(out, "stations at N = %u (threads: running or waiting for a core + blocked, per "
                     "request):", b->n);
        for (unsigned i = 0; i < m->nsw; i++)
            fprintf(out, "%s %s k = %u: %.4f + %.4f ms", i ? "," : "", m->sw[i].name, m->sw[i].k,
                    m->sw[i].run / b->x * 1e3, m->sw[i].blocked / b->x * 1e3);
        fprintf(out, "; CPU of the stack %.4f ms (core-seconds); the machine's other CPU %.0f%%\n",
                isfinite(b->cpu_watched) ? b->cpu_watched / b->x * 1e3 : NAN,
                isfinite(b->cpu_watched) ? fmax(0, b->cpu_util - b->cpu_watched / m->ncpu) * 100
                                         : NAN);
        return;
    }
    fprintf(out,
            "model of run %s (%s, %u points): CPU = %u cores (one request keeps c = %.2f busy "
            "at once), Z = %.3f ms, fixed delay %.4f ms (R at N = %u minus the model's)\n",
            r->run_id, path, r->npts, m->ncpu, m->per_job, r->z_s * 1e3, m->fixed_s * 1e3, b->n);
    fprintf(out, "demands at N = %u: cpu %.4f ms (core-seconds)", b->n,
            m->ncpu * b->cpu_util / b->x * 1e3);
    for (unsigned i = 0; i < b->nq; i++)
        fprintf(out, ", %s %.4f ms", b->qname[i], b->qutil[i] / b->x * 1e3);
    fprintf(out, "\n");
}

static void print_curve(FILE *out, const struct lg_model_curve *c)
{
    fprintf(out, "demands D(N) = a + b / N through N = %u and N = %u (\"fit\"), and the N = %u "
                 "demands for every N (\"n1\"):\n",
            c->fit_n[0], c->fit_n[1], c->fit_n[0]);
    fprintf(out, "%7s %13s %11s %13s %11s\n", "N", "X fit (req/s)", "R fit (ms)", "X n1 (req/s)",
            "R n1 (ms)");
    for (unsigned n = 1; n <= c->nmax; n++) {
        if (!row(n, c))
            continue;
        fprintf(out, "%7u %13.1f %11.4f %13.1f %11.4f%s\n", n, c->fit[n - 1].x,
                c->fit[n - 1].r_s * 1e3, c->n1[n - 1].x, c->n1[n - 1].r_s * 1e3,
                n == c->knee_fit ? "  <- knee (fit)" : n == c->knee_n1 ? "  <- knee (n1)" : "");
    }
    fprintf(out,
            "predicted knee (smallest N with X within 5%% of the curve's maximum, N <= %u): "
            "fit N = %u, n1 N = %u\n",
            c->nmax, c->knee_fit, c->knee_n1);
}

static void print_check(FILE *out, const struct lg_runjson *r, const struct lg_model_out *m)
{
    unsigned nstar = m->nstar >= 0 ? r->pts[m->nstar].n : 0;
    unsigned kp = m->knee_pern >= 0 ? r->pts[m->knee_pern].n : 0;
    unsigned k1 = m->knee_n1 >= 0 ? r->pts[m->knee_n1].n : 0;

    fprintf(out, "measured points against the model (error = X model / X measured - 1):\n");
    fprintf(out, "%7s %13s %16s %8s %16s %8s\n", "N", "X (req/s)", "X per-N (req/s)", "error",
            "X n1 (req/s)", "error");
    for (unsigned i = 0; i < r->npts; i++)
        fprintf(out, "%7u %13.1f %16.1f %+7.1f%% %16.1f %+7.1f%%\n", r->pts[i].n, r->pts[i].x,
                m->pern[i].x, m->pern[i].err * 100, m->n1[i].x, m->n1[i].err * 100);
    fprintf(out, "measured N* = %u; model knee: per-N demands %u, N = %u demands %u\n", nstar, kp,
            m->base >= 0 ? r->pts[m->base].n : 0, k1);
    fprintf(out,
            "check: points %u within10_pern %u within10_n1 %u nstar %u knee_pern %u knee_n1 %u "
            "knee_pern_ok %d knee_n1_ok %d\n",
            m->npred, m->within_pern, m->within_n1, nstar, kp, k1,
            lg_model_knee_ok(kp, nstar) ? 1 : 0, lg_model_knee_ok(k1, nstar) ? 1 : 0);
}

int lg_predict_main(const char *path, unsigned nmax, bool hardware_only, FILE *out)
{
    char err[256];
    struct lg_runjson r;
    struct lg_model_in in;
    struct lg_model_out m;
    struct lg_model_curve c;
    const char *why = NULL;
    size_t len = 0;
    char *text = read_all(path, &len, err, sizeof(err));
    int rc;

    if (text == NULL) {
        fprintf(stderr, "loadgen: %s\n", err);
        return 2;
    }
    rc = lg_runjson_parse(text, len, &r, err, sizeof(err));
    free(text);
    if (rc < 0) {
        fprintf(stderr, "loadgen: '%s': %s\n", path, err);
        return 2;
    }
    if (!r.closed_loop) {
        fprintf(stderr, "loadgen: '%s': an open-loop run (--rate): the model needs a closed "
                        "loop\n", path);
        lg_runjson_release(&r);
        return 2;
    }
    lg_runjson_input(&r, &in);
    in.hardware_only = hardware_only;
    lg_model_fit(&in, &m);
    rc = lg_model_predict(&in, &m, nmax, &c, &why);
    if (rc < 0) {
        fprintf(stderr, "loadgen: '%s': no model: %s\n", path, why);
    } else {
        print_model(out, path, &r, &m);
        print_curve(out, &c);
        print_check(out, &r, &m);
        lg_model_curve_release(&c);
    }
    lg_model_release(&m);
    lg_runjson_release(&r);
    return rc < 0 ? 2 : 0;
}
