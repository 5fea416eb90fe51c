/*
 * runjson.c - see runjson.h.
 */
#include "runjson.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swstation.h"
#include "xalloc.h"

/* A finite number (null, as run.json writes what was not measured, gives NAN). */
static int num(json_t *o, const char *key, double *v, bool null_ok)
{
    json_t *j = json_object_get(o, key);

    if (j != NULL && json_is_null(j) && null_ok) {
        *v = NAN;
        return 0;
    }
    if (j == NULL || !json_is_number(j))
        return -1;
    *v = json_number_value(j);
    return isfinite(*v) ? 0 : -1;
}

/*
 * The monitor's part: the CPU of the watched processes and loadgen (summed), and the software
 * stations that are not nested. Runs made before the thread sampler have none: that is no
 * error, the model is then the hardware one.
 */
static int monitor(json_t *mon, unsigned i, struct lg_model_obs *o, char *err, size_t errcap)
{
    json_t *procs = json_object_get(mon, "processes");
    json_t *thr = json_object_get(mon, "threads");
    json_t *sts = thr != NULL ? json_object_get(thr, "stations") : NULL;
    size_t k;
    json_t *e;

    if (json_is_array(procs) && json_array_size(procs) > 0) {
        o->cpu_watched = 0;
        json_array_foreach (procs, k, e) {
            double c;
            if (num(e, "cpu_cores", &c, true) < 0 || c < 0) {
                snprintf(err, errcap, "point %u: process %zu lacks cpu_cores", i + 1, k + 1);
                return -1;
            }
            if (isfinite(c))
                o->cpu_watched += c;
        }
    }
    if (thr != NULL && !json_is_array(sts)) {
        snprintf(err, errcap, "point %u: \"threads\" lacks a list of stations", i + 1);
        return -1;
    }
    json_array_foreach (sts, k, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *nested = json_object_get(e, "nested");
        json_t *pinned = json_object_get(e, "pinned");
        json_t *threads = json_object_get(e, "threads");
        struct lg_model_sw *w;
        if (name == NULL || !json_is_boolean(nested) || !json_is_boolean(pinned) ||
            !json_is_integer(threads) || json_integer_value(threads) < 1 ||
            json_integer_value(threads) > 100000) {
            snprintf(err, errcap, "point %u: station %zu lacks a name, nested, pinned or threads",
                     i + 1, k + 1);
            return -1;
        }
        if (json_is_true(nested) || o->nsw == LG_MODEL_MAX_SW)
            continue;
        w = &o->sw[o->nsw];
        snprintf(w->name, sizeof(w->name), "%s", name);
        w->k = (unsigned)json_integer_value(threads);
        w->pinned = json_is_true(pinned);
        w->batch = lg_sw_is_batch(name);
        if (num(e, "cpu_cores", &w->cpu, true) < 0 || w->cpu < 0)
            w->cpu = NAN; /* (older runs may lack it: the station is then served unbatched) */
        if (num(e, "run", &w->run, false) < 0 || w->run < 0 || w->run > w->k * 1.01 ||
            num(e, "blocked", &w->blocked, false) < 0 || w->blocked < 0 ||
            w->blocked > w->k * 1.01) {
            snprintf(err, errcap, "point %u: station '%s' lacks run or blocked in 0..threads",
                     i + 1, w->name);
            return -1;
        }
        o->nsw++;
    }
    return 0;
}

static int point(json_t *p, unsigned i, struct lg_model_obs *o, char *err, size_t errcap)
{
    json_t *all = json_object_get(p, "all");
    json_t *res = json_object_get(p, "resources");
    json_t *users = json_object_get(p, "users");
    json_t *mon;
    double r_ms;
    size_t k;
    json_t *e;

    memset(o, 0, sizeof(*o));
    o->cpu_util = NAN;
    o->cpu_watched = NAN;
    if (!json_is_integer(users) || json_integer_value(users) < 1 ||
        json_integer_value(users) > 1000000) {
        snprintf(err, errcap, "point %u: \"users\" is not a number of users", i + 1);
        return -1;
    }
    o->n = (unsigned)json_integer_value(users);
    if (!json_is_object(all) || num(all, "x_rps", &o->x, false) < 0 || o->x < 0 ||
        num(all, "r_mean_ms", &r_ms, false) < 0 || r_ms < 0) {
        snprintf(err, errcap, "point %u: \"all\" lacks x_rps or r_mean_ms", i + 1);
        return -1;
    }
    o->r_s = r_ms / 1e3;
    if (!json_is_array(res)) {
        snprintf(err, errcap, "point %u: \"resources\" is not a list", i + 1);
        return -1;
    }
    json_array_foreach (res, k, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        double u;
        if (name == NULL || num(e, "util", &u, true) < 0 || u < 0 || u > 1e6) {
            snprintf(err, errcap, "point %u: resource %zu lacks a name or a utilization", i + 1,
                     k + 1);
            return -1;
        }
        if (strcmp(name, "cpu") == 0) {
            o->cpu_util = u;
        } else if ((strncmp(name, "disk:", 5) == 0 || strcmp(name, "redis") == 0) &&
                   o->nq < LG_MODEL_MAX_QUEUES) {
            snprintf(o->qname[o->nq], LG_RES_NAME, "%s", name);
            o->qutil[o->nq++] = u;
        }
    }
    mon = json_object_get(p, "monitor");
    return json_is_object(mon) ? monitor(mon, i, o, err, errcap) : 0;
}

static int parse(json_t *root, struct lg_runjson *out, char *err, size_t errcap)
{
    json_t *machine = json_object_get(root, "machine");
    json_t *config = json_object_get(root, "config");
    json_t *pts = json_object_get(root, "points");
    const char *id = json_string_value(json_object_get(root, "run_id"));
    json_t *ncpu = machine != NULL ? json_object_get(machine, "ncpu") : NULL;
    double think_ms, rate;
    size_t i;
    json_t *p;

    if (!json_is_object(root) || json_string_value(json_object_get(root, "tool")) == NULL ||
        strcmp(json_string_value(json_object_get(root, "tool")), "loadgen") != 0) {
        snprintf(err, errcap, "not a loadgen run.json (no \"tool\": \"loadgen\")");
        return -1;
    }
    snprintf(out->run_id, sizeof(out->run_id), "%s", id != NULL ? id : "?");
    if (!json_is_integer(ncpu) || json_integer_value(ncpu) < 1 ||
        json_integer_value(ncpu) > LG_MVA_MAX_SERVERS) {
        snprintf(err, errcap, "\"machine\".\"ncpu\" is missing or not 1..%d", LG_MVA_MAX_SERVERS);
        return -1;
    }
    out->ncpu = (unsigned)json_integer_value(ncpu);
    if (!json_is_object(config) || num(config, "think_ms", &think_ms, false) < 0 ||
        think_ms < 0 || num(config, "rate", &rate, false) < 0) {
        snprintf(err, errcap, "\"config\" lacks think_ms or rate");
        return -1;
    }
    out->z_s = think_ms / 1e3;
    out->closed_loop = !(rate > 0);
    if (!json_is_array(pts) || json_array_size(pts) == 0 ||
        json_array_size(pts) > LG_RUNJSON_MAX_POINTS) {
        snprintf(err, errcap, "\"points\" is not a list of 1..%d points", LG_RUNJSON_MAX_POINTS);
        return -1;
    }
    out->pts = xcalloc(json_array_size(pts), sizeof(*out->pts));
    json_array_foreach (pts, i, p) {
        if (point(p, (unsigned)i, &out->pts[i], err, errcap) < 0)
            return -1;
        out->npts++;
    }
    return 0;
}

int lg_runjson_parse(const char *text, size_t len, struct lg_runjson *out, char *err,
                     size_t errcap)
{
    json_error_t je;
    json_t *root;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len > LG_RUNJSON_MAX_BYTES) {
        snprintf(err, errcap, "larger than %u MB", LG_RUNJSON_MAX_BYTES >> 20);
        return -1;
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        snprintf(err, errcap, "not JSON: %s at line %d", je.text, je.line);
        return -1;
    }
    rc = parse(root, out, err, errcap);
    json_decref(root);
    if (rc < 0)
        lg_runjson_release(out);
    return rc;
}

void lg_runjson_release(struct lg_runjson *r)
{
    free(r->pts);
    r->pts = NULL;
    r->npts = 0;
}

void lg_runjson_input(const struct lg_runjson *r, struct lg_model_in *in)
{
    memset(in, 0, sizeof(*in));
    in->ncpu = r->ncpu;
    in->z_s = r->z_s;
    in->pts = r->pts;
    in->npts = r->npts;
}
