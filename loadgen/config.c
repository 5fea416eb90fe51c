/*
 * config.c - see config.h. Every numeric flag goes through the strict parsers of common/opts.h;
 * every error is one line that names the flag.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "opts.h"
#include "sweep.h"
#include "window.h"

#define LG_DEFAULT_URL "http://127.0.0.1:8080"
#define LG_DEFAULT_PASSWORD "lg-secret-1"

enum {
    OPT_URL = 1000,
    OPT_ALLOW_REMOTE,
    OPT_MODEL,
    OPT_THINK,
    OPT_WARMUP,
    OPT_RPU,
    OPT_TIMEOUT,
    OPT_TYPE,
    OPT_FILE,
    OPT_SIZE,
    OPT_MIX,
    OPT_PREPARE,
    OPT_USERNAME,
    OPT_PASSWORD,
    OPT_EXPECT_LENGTH,
    OPT_COPY_BODY,
    OPT_RATE,
    OPT_ARRIVALS,
    OPT_SEED,
    OPT_SWEEP,
    OPT_MAX_USERS,
    OPT_SWEEP_STEP,
    OPT_SWEEP_STALLS,
    OPT_SWEEP_REFINE,
    OPT_SAMPLE_MS,
    OPT_WATCH,
    OPT_WATCH_COMM,
    OPT_REDIS_PORT,
    OPT_PIN_CPUS,
    OPT_PREDICT_ONLY,
    OPT_START_AT,
    OPT_THREAD_HZ,
    OPT_HARDWARE_MODEL,
    OPT_WINDOW_MAX,
};

static const struct option lg_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"predict-only", required_argument, NULL, OPT_PREDICT_ONLY},
    {"hardware-model", no_argument, NULL, OPT_HARDWARE_MODEL},
    {"verbose", no_argument, NULL, 'v'},
    {"url", required_argument, NULL, OPT_URL},
    {"allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE},
    {"users", required_argument, NULL, 'u'},
    {"connections", required_argument, NULL, 'c'},
    {"threads", required_argument, NULL, 't'},
    {"model", required_argument, NULL, OPT_MODEL},
    {"think", required_argument, NULL, OPT_THINK},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"window-max", required_argument, NULL, OPT_WINDOW_MAX},
    {"requests-per-user", required_argument, NULL, OPT_RPU},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"type", required_argument, NULL, OPT_TYPE},
    {"file", required_argument, NULL, OPT_FILE},
    {"size", required_argument, NULL, OPT_SIZE},
    {"mix", required_argument, NULL, OPT_MIX},
    {"prepare-users", required_argument, NULL, OPT_PREPARE},
    {"username", required_argument, NULL, OPT_USERNAME},
    {"password", required_argument, NULL, OPT_PASSWORD},
    {"expect-length", required_argument, NULL, OPT_EXPECT_LENGTH},
    {"copy-body", no_argument, NULL, OPT_COPY_BODY},
    {"rate", required_argument, NULL, OPT_RATE},
    {"arrivals", required_argument, NULL, OPT_ARRIVALS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"sweep", required_argument, NULL, OPT_SWEEP},
    {"max-users", required_argument, NULL, OPT_MAX_USERS},
    {"sweep-step", required_argument, NULL, OPT_SWEEP_STEP},
    {"sweep-stalls", required_argument, NULL, OPT_SWEEP_STALLS},
    {"sweep-refine", required_argument, NULL, OPT_SWEEP_REFINE},
    {"sample-ms", required_argument, NULL, OPT_SAMPLE_MS},
    {"thread-hz", required_argument, NULL, OPT_THREAD_HZ},
    {"watch", required_argument, NULL, OPT_WATCH},
    {"watch-comm", required_argument, NULL, OPT_WATCH_COMM},
    {"redis-port", required_argument, NULL, OPT_REDIS_PORT},
    {"out", required_argument, NULL, 'o'},
    {"pin-cpus", required_argument, NULL, OPT_PIN_CPUS},
    {"start-at", required_argument, NULL, OPT_START_AT},
    {NULL, 0, NULL, 0},
};

void lg_config_defaults(struct lg_config *cfg)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->url, sizeof(cfg->url), "%s", LG_DEFAULT_URL);
    cfg->ncores = n > 0 ? (unsigned)n : 1;
    cfg->users = 1;
    cfg->threads = cfg->ncores;
    cfg->model = LG_MODEL_EVENTS;
    cfg->duration_us = 10 * 1000000ull;
    cfg->warmup_us = 2 * 1000000ull;
    cfg->timeout_us = 10 * 1000000ull;
    cfg->arrivals = LG_ARRIVALS_CONSTANT;
    cfg->seed = 1;
    snprintf(cfg->password, sizeof(cfg->password), "%s", LG_DEFAULT_PASSWORD);
    cfg->max_users = 1024;
    cfg->sweep_step = LG_SWEEP_STEP;
    cfg->sweep_stalls = LG_SWEEP_STALLS;
    cfg->sweep_refine = LG_SWEEP_REFINE;
    cfg->sample_ms = 200;
    cfg->thread_hz = LG_THREAD_HZ_DEFAULT;
    cfg->put_size = 4096;
}

void lg_config_usage(FILE *out)
{
    struct lg_config d;

    lg_config_defaults(&d);
    fprintf(
        out,
        "Usage: loadgen [options]\n"
        "Closed-loop (or open-loop) HTTP/1.1 load generator for the file server: drives N\n"
        "users on keep-alive connections, sweeps N, and reports throughput X, response time\n"
        "R (mean, p50..p99.9, max), errors, Little's law, the resource use of every process\n"
        "of the stack from /proc, operational-law bounds, N* and the bottleneck.\n"
        "\n"
        "Target and load:\n"
        "  --url URL               server, loopback only (default %s)\n"
        "  --allow-remote          accept a non-loopback host in --url\n"
        "  -u, -c, --users N       users = connections of a single point (default %u);\n"
        "                          with --rate, the size of the connection pool\n"
        "  -t, --threads T         event-loop threads for --model events (default: cores = %u,\n"
        "                          never more than users)\n"
        "  --model events|threads  events: users spread over T epoll loops (default);\n"
        "                          threads: one thread per user, blocking, as in the report\n"
        "  --think MS              think time Z between a response and the next request\n"
        "                          (default %" PRIu64 " ms; a unit like 1s is accepted)\n"
        "  -d, --duration S        measured time of each point, at least (default %" PRIu64
        " s)\n"
        "  --window-max S          the longest a point's measured window may grow to hold\n"
        "                          %u x (R + Z) and %u completions, so that Little's law\n"
        "                          holds to about 5%% (R: measured in the window; the window\n"
        "                          grows before its end until the rule holds or it reaches S);\n"
        "                          0: exactly --duration (default %u x --duration; none with\n"
        "                          --start-at or --requests-per-user)\n"
        "  --warmup S              time before each point's measurement, not counted\n"
        "                          (default %" PRIu64 " s)\n"
        "  --requests-per-user K   instead of --duration: each user sends K requests\n"
        "  --timeout S             per request, an error of class timeout (default %" PRIu64 " s)\n"
        "\n"
        "Requests (each response is checked: 201 for new, 200 for get, 201 or 204 for put):\n"
        "  --type new|get|put      new: POST /users with a unique username each time;\n"
        "                          get: GET /files/NAME (default: get with --file, else new);\n"
        "                          put: PUT /files/lg-RUN-USER-K of --size bytes, K cycling\n"
        "                          through 0..%u, so each user overwrites its own %u names\n"
        "  --file NAME[,NAME...]   the file for get; with several (at most %u), user u gets\n"
        "                          the (u mod count)th, so the load spreads over the names\n"
        "  --size BYTES            body of put: random bytes made once (default %" PRIu64 ";\n"
        "                          suffixes k, m)\n"
        "  --mix new:W,get:W,put:W weighted mix, e.g. new:1,get:9 (get needs --file)\n"
        "  --prepare-users K       create K accounts before the first point; get and put\n"
        "                          requests use them (user i logs in as account i mod K)\n"
        "                          (default 0)\n"
        "  --username U            an existing account for get/put instead of --prepare-users\n"
        "                          (with neither, get sends no Authorization header; put\n"
        "                          needs one of them)\n"
        "  --password P            password of prepared and new accounts (default built in;\n"
        "                          never printed, logged, or written to results)\n"
        "  --expect-length BYTES   get responses must have this body length (else invalid)\n"
        "  --copy-body             copy bodies to user space (default: discarded by the kernel\n"
        "                          with MSG_TRUNC; headers are always parsed)\n"
        "\n"
        "Open loop (instead of the closed loop):\n"
        "  --rate R                requests/s in total, sent at intended times; latency counts\n"
        "                          from the intended send time (no coordinated omission).\n"
        "                          --users connections form the pool; when all are busy,\n"
        "                          requests queue and their latency grows\n"
        "  --arrivals constant|poisson   inter-arrival times (default constant)\n"
        "  --seed N                seed of the mix and Poisson draws (default %" PRIu64 ")\n"
        "\n"
        "Sweep (closed loop):\n"
        "  --sweep 1,2,4,...|auto  one point per N; auto doubles N from 1 until two doublings\n"
        "                          in a row raise the best X by 5%% or less (or --max-users),\n"
        "                          then bisects below the knee twice. N* = the smallest\n"
        "                          measured N whose throughput is within 5%% of the sweep's\n"
        "                          maximum; reported with R at N*\n"
        "  --max-users N           bound of --sweep auto (default %u)\n"
        "  --sweep-step F          auto: multiply N by F (2-%d) instead of doubling\n"
        "  --sweep-stalls K        auto: K steps in a row without growth end it (1-%d, default\n"
        "                          %d); 1 stops one step after X stops growing\n"
        "  --sweep-refine K        auto: bisect below N* K times afterwards (0-%d, default %d)\n"
        "\n"
        "Several hosts (then merge their --out directories with 'loadgen merge'):\n"
        "  --start-at EPOCH_MS     wall-clock start, in milliseconds since the epoch (at most\n"
        "                          a day ahead), e.g. $(( $(date +%%s%%3N) + 3000 )): waits\n"
        "                          (after --prepare-users) and starts point k (0-based) at\n"
        "                          EPOCH_MS + k * (warmup + duration + %llu ms), so processes\n"
        "                          given the same value measure the same wall-clock windows\n"
        "                          (clocks synchronized by NTP). Needs --duration (not\n"
        "                          --requests-per-user) and a single N or a --sweep list\n"
        "  loadgen merge [-o DIR] DIR...   combine such runs into one (see 'loadgen merge -h')\n"
        "\n"
        "Resource monitor (/proc, during every point's measured window):\n"
        "  --sample-ms MS          sampling interval (default %u)\n"
        "  --thread-hz HZ          samples per second of the wait channel of the stack's\n"
        "                          worker threads: the software stations of the model\n"
        "                          (default %u, at most %u; 0: off)\n"
        "  --watch NAME=PID,...    processes of the stack to sample (repeatable)\n"
        "  --watch-comm C1,C2,...  every process whose comm is C (summed per name), e.g.\n"
        "                          server1,server2,redis-server,mariadbd\n"
        "  --redis-port P          also sample Redis INFO commandstats on 127.0.0.1:P\n"
        "                          (password, if any, from the environment: REDISCLI_AUTH)\n"
        "  (loadgen itself, the machine's CPU, disks and loopback are always sampled)\n"
        "\n"
        "Output:\n"
        "  -o, --out DIR           write points.csv, run.json, summary.md into DIR\n"
        "  --pin-cpus LIST         pin worker threads to CPUs, e.g. 1 or 0-1 or 0,1\n"
        "  -v, --verbose           more log detail on stderr (repeatable)\n"
        "  -V, --version           print version, compiler and flags\n"
        "  -h, --help              print this help\n"
        "\n"
        "Model only (measures nothing):\n"
        "  --predict-only RUN.json the queueing model (exact MVA) of a run loadgen wrote, e.g. a\n"
        "                          short --sweep 1,4: X(N), R(N) and the knee for N up to\n"
        "                          --max-users (at most %u), from demands D(N) = a + b / N\n"
        "                          fitted through N = 1 and N = 4 (a fixed part and a part a\n"
        "                          batch shares; when they fall faster than 1 / N, beyond N = 4\n"
        "                          all of D(4) is taken as shared) and from the N = 1 demands\n"
        "                          alone; then the file's own points against the model.\n"
        "                          A run with thread samples gets the layered model (software\n"
        "                          stations over the CPU), solved for N up to %u\n"
        "  --hardware-model        with --predict-only: the model of the hardware alone (CPU,\n"
        "                          disks, Redis), without the software stations, as a run\n"
        "                          without thread samples is modelled\n"
        "\n"
        "Closed-loop latency is service time under coordinated omission: always read it with\n"
        "N and X. Exit status: 0 ok, 1 run failed, 2 bad flags, 130 interrupted.\n",
        d.url, d.users, d.ncores, d.think_us / 1000, d.duration_us / 1000000, LG_WINDOW_CYCLES,
        LG_WINDOW_OK, LG_WINDOW_MAX_FACTOR, d.warmup_us / 1000000,
        d.timeout_us / 1000000, LG_PUT_NAMES - 1, LG_PUT_NAMES, LG_FILES_MAX, d.put_size, d.seed,
        d.max_users, LG_SWEEP_STEP_MAX, LG_SWEEP_STALLS_MAX, LG_SWEEP_STALLS, LG_SWEEP_REFINE_MAX,
        LG_SWEEP_REFINE, (unsigned long long)LG_START_GAP_MS, d.sample_ms, d.thread_hz,
        LG_THREAD_HZ_MAX, LG_MODEL_PREDICT_MAX, LG_MODEL_LAYERED_MAX_N);
}

void lg_config_version(FILE *out)
{
    fprintf(out, "loadgen %s\ncc %s\ncflags %s\n", PROJECT_VERSION, __VERSION__, PROJECT_CFLAGS);
}

bool lg_config_has(const struct lg_config *cfg, enum lg_req type)
{
    return cfg->weight[type] > 0;
}

uint64_t lg_config_point_start_ms(const struct lg_config *cfg, unsigned k)
{
    uint64_t slot_ms = (cfg->warmup_us + cfg->duration_us) / 1000 + LG_START_GAP_MS;

    return cfg->start_at_ms + (uint64_t)k * slot_ms;
}

static uint64_t wall_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

unsigned lg_config_weight_total(const struct lg_config *cfg)
{
    unsigned sum = 0;

    for (int t = 0; t < LG_REQ_TYPES; t++)
        sum += cfg->weight[t];
    return sum;
}

/* Milliseconds when the value has no unit, else any unit of opts_parse_duration_us. */
static int parse_ms(const char *s, uint64_t max_us, uint64_t *out_us, char *err)
{
    char buf[64];
    size_t len = strlen(s);

    if (len > 0 && len < sizeof(buf) - 3 && s[len - 1] >= '0' && s[len - 1] <= '9') {
        snprintf(buf, sizeof(buf), "%sms", s);
        return opts_parse_duration_us(buf, 0, max_us, out_us, err);
    }
    return opts_parse_duration_us(s, 0, max_us, out_us, err);
}

static bool name_ok(const char *s, size_t len)
{
    if (len == 0 || len >= LG_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Splits a comma list; calls fn on each item (NUL-terminated copy). */
typedef int (*lg_item_fn)(struct lg_config *cfg, const char *item, char *err);

static int for_each_item(struct lg_config *cfg, const char *flag, const char *list, lg_item_fn fn,
                         char *err)
{
    const char *p = list;

    if (*list == '\0') {
        snprintf(err, LG_ERR_LEN, "%s: empty list", flag);
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[128];

        if (len == 0 || len >= sizeof(item)) {
            snprintf(err, LG_ERR_LEN, "%s: bad list '%s'", flag, list);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (fn(cfg, item, err) < 0)
            return -1;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int sweep_item(struct lg_config *cfg, const char *item, char *err)
{
    char e[OPTS_ERR_LEN];
    uint64_t v;

    if (cfg->nsweep >= LG_SWEEP_MAX) {
        snprintf(err, LG_ERR_LEN, "--sweep: at most %d points", LG_SWEEP_MAX);
        return -1;
    }
    if (opts_parse_u64(item, 1, LG_USERS_MAX, &v, e) < 0) {
        snprintf(err, LG_ERR_LEN, "--sweep: %s", e);
        return -1;
    }
    cfg->sweep[cfg->nsweep++] = (unsigned)v;
    return 0;
}

static int mix_item(struct lg_config *cfg, const char *item, char *err)
{
    const char *colon = strchr(item, ':');
    char e[OPTS_ERR_LEN];
    uint64_t w;
    int type;

    if (colon == NULL) {
        snprintf(err, LG_ERR_LEN, "--mix: '%s' is not TYPE:WEIGHT", item);
        return -1;
    }
    if (colon - item == 3 && strncmp(item, "new", 3) == 0) {
        type = LG_REQ_NEW;
    } else if (colon - item == 3 && strncmp(item, "get", 3) == 0) {
        type = LG_REQ_GET;
    } else if (colon - item == 3 && strncmp(item, "put", 3) == 0) {
        type = LG_REQ_PUT;
    } else {
        snprintf(err, LG_ERR_LEN, "--mix: unknown type in '%s' (new, get or put)", item);
        return -1;
    }
    if (opts_parse_u64(colon + 1, 0, 1000000, &w, e) < 0) {
        snprintf(err, LG_ERR_LEN, "--mix: %s", e);
        return -1;
    }
    cfg->weight[type] += (unsigned)w;
    return 0;
}

static int watch_item(struct lg_config *cfg, const char *item, char *err)
{
    const char *eq = strchr(item, '=');
    char e[OPTS_ERR_LEN];
    uint64_t pid;
    struct lg_watch *w;

    if (eq == NULL || !name_ok(item, (size_t)(eq - item))) {
        snprintf(err, LG_ERR_LEN, "--watch: '%s' is not NAME=PID (NAME of [A-Za-z0-9._-])", item);
        return -1;
    }
    if (opts_parse_u64(eq + 1, 1, 4194304, &pid, e) < 0) {
        snprintf(err, LG_ERR_LEN, "--watch: PID %s", e);
        return -1;
    }
    if (cfg->nwatch >= LG_WATCH_MAX) {
        snprintf(err, LG_ERR_LEN, "--watch: at most %d processes", LG_WATCH_MAX);
        return -1;
    }
    w = &cfg->watch[cfg->nwatch++];
    memcpy(w->name, item, (size_t)(eq - item));
    w->name[eq - item] = '\0';
    w->pid = (pid_t)pid;
    if (strcmp(w->name, "loadgen") == 0) {
        snprintf(err, LG_ERR_LEN, "--watch: the name 'loadgen' is reserved for this process");
        return -1;
    }
    return 0;
}

static int comm_item(struct lg_config *cfg, const char *item, char *err)
{
    size_t len = strlen(item);

    if (!name_ok(item, len) || len > 15) {
        snprintf(err, LG_ERR_LEN, "--watch-comm: '%s' is not a process name (1-15 characters)",
                 item);
        return -1;
    }
    if (cfg->nwatch_comm >= LG_WATCH_MAX) {
        snprintf(err, LG_ERR_LEN, "--watch-comm: at most %d names", LG_WATCH_MAX);
        return -1;
    }
    memcpy(cfg->watch_comm[cfg->nwatch_comm++], item, len + 1);
    return 0;
}

static int cpu_item(struct lg_config *cfg, const char *item, char *err)
{
    char e[OPTS_ERR_LEN];
    char lo_s[16];
    const char *dash = strchr(item, '-');
    uint64_t lo;
    uint64_t hi;

    if (dash != NULL) {
        size_t len = (size_t)(dash - item);
        if (len == 0 || len >= sizeof(lo_s))
            goto bad;
        memcpy(lo_s, item, len);
        lo_s[len] = '\0';
        if (opts_parse_u64(lo_s, 0, 1023, &lo, e) < 0 ||
            opts_parse_u64(dash + 1, 0, 1023, &hi, e) < 0 || hi < lo)
            goto bad;
    } else {
        if (opts_parse_u64(item, 0, 1023, &lo, e) < 0)
            goto bad;
        hi = lo;
    }
    for (uint64_t c = lo; c <= hi; c++) {
        if (cfg->ncpus >= LG_CPUS_MAX) {
            snprintf(err, LG_ERR_LEN, "--pin-cpus: too many CPUs");
            return -1;
        }
        cfg->cpus[cfg->ncpus++] = (int)c;
    }
    return 0;
bad:
    snprintf(err, LG_ERR_LEN, "--pin-cpus: '%s' is not a CPU number or range like 0-3", item);
    return -1;
}

static int copy_str(char *dst, size_t cap, const char *src, const char *flag, char *err)
{
    size_t len = strlen(src);
    if (len == 0 || len >= cap) {
        snprintf(err, LG_ERR_LEN, "%s: value must be 1..%zu bytes", flag, cap - 1);
        return -1;
    }
    memcpy(dst, src, len + 1);
    return 0;
}

/* Turns a parser's result into the flag's error line: returns r, and on r < 0 fills err. */
static int flag_result(int r, const char *flag, const char *why, char *err)
{
    if (r < 0)
        snprintf(err, LG_ERR_LEN, "%s: %s", flag, why);
    return r;
}

int lg_config_parse(struct lg_config *cfg, int argc, char **argv, char *err)
{
    char e[OPTS_ERR_LEN];
    uint64_t v = 0;
    int rc = 0;
    bool type_given = false;
    bool mix_given = false;

    cfg->argc = argc;
    cfg->argv = argv;
    opterr = 0;
    optind = 0; /* glibc: a full reset, so parsing can run more than once (tests) */
    while (rc == 0) {
        int opt = getopt_long(argc, argv, ":hVvu:c:t:d:o:", lg_longopts, NULL);

        if (opt == -1)
            break;
        switch (opt) {
        case 'h':
            lg_config_usage(stdout);
            return 1;
        case 'V':
            lg_config_version(stdout);
            return 1;
        case 'v':
            cfg->verbose++;
            break;
        case OPT_PREDICT_ONLY:
            rc = optarg[0] == '\0' ? flag_result(-1, "--predict-only", "give a run.json", err)
                                    : copy_str(cfg->predict_path, sizeof(cfg->predict_path),
                                               optarg, "--predict-only", err);
            break;
        case OPT_URL:
            rc = copy_str(cfg->url, sizeof(cfg->url), optarg, "--url", err);
            break;
        case OPT_ALLOW_REMOTE:
            cfg->allow_remote = true;
            break;
        case 'u':
        case 'c':
            rc = flag_result(opts_parse_u64(optarg, 1, LG_USERS_MAX, &v, e), "--users", e, err);
            cfg->users = (unsigned)v;
            break;
        case 't':
            rc = flag_result(opts_parse_u64(optarg, 1, 1024, &v, e), "--threads", e, err);
            cfg->threads = (unsigned)v;
            cfg->threads_set = true;
            break;
        case OPT_MODEL:
            if (strcmp(optarg, "events") == 0) {
                cfg->model = LG_MODEL_EVENTS;
            } else if (strcmp(optarg, "threads") == 0) {
                cfg->model = LG_MODEL_THREADS;
            } else {
                snprintf(err, LG_ERR_LEN, "--model: '%s' is not events or threads", optarg);
                rc = -1;
            }
            break;
        case OPT_THINK:
            rc = flag_result(parse_ms(optarg, 3600ull * 1000000, &cfg->think_us, e), "--think", e,
                             err);
            break;
        case 'd':
            rc = flag_result(opts_parse_duration_us(optarg, 100000, 30ull * 86400 * 1000000,
                                                    &cfg->duration_us, e),
                             "--duration", e, err);
            cfg->duration_set = true;
            break;
        case OPT_WINDOW_MAX:
            rc = flag_result(opts_parse_duration_us(optarg, 0, 30ull * 86400 * 1000000,
                                                    &cfg->window_max_us, e),
                             "--window-max", e, err);
            cfg->window_max_set = true;
            break;
        case OPT_WARMUP:
            rc = flag_result(
                opts_parse_duration_us(optarg, 0, 86400ull * 1000000, &cfg->warmup_us, e),
                "--warmup", e, err);
            break;
        case OPT_RPU:
            rc =
                flag_result(opts_parse_u64(optarg, 1, 1000000000000ull, &cfg->requests_per_user, e),
                            "--requests-per-user", e, err);
            break;
        case OPT_TIMEOUT:
            rc = flag_result(
                opts_parse_duration_us(optarg, 1000, 3600ull * 1000000, &cfg->timeout_us, e),
                "--timeout", e, err);
            break;
        case OPT_TYPE:
            if (mix_given || type_given) {
                snprintf(err, LG_ERR_LEN, "--type: give one --type or one --mix");
                rc = -1;
            } else if (strcmp(optarg, "new") == 0 || strcmp(optarg, "get") == 0 ||
                       strcmp(optarg, "put") == 0) {
                cfg->weight[optarg[0] == 'n'   ? LG_REQ_NEW
                            : optarg[0] == 'g' ? LG_REQ_GET
                                               : LG_REQ_PUT] = 1;
                type_given = true;
            } else {
                snprintf(err, LG_ERR_LEN, "--type: '%s' is not new, get or put", optarg);
                rc = -1;
            }
            break;
        case OPT_MIX:
            if (mix_given || type_given) {
                snprintf(err, LG_ERR_LEN, "--mix: give one --type or one --mix");
                rc = -1;
                break;
            }
            mix_given = true;
            rc = for_each_item(cfg, "--mix", optarg, mix_item, err);
            if (rc == 0 && lg_config_weight_total(cfg) == 0) {
                snprintf(err, LG_ERR_LEN, "--mix: every weight is 0");
                rc = -1;
            }
            if (rc == 0)
                rc = copy_str(cfg->mix_desc, sizeof(cfg->mix_desc), optarg, "--mix", err);
            break;
        case OPT_FILE:
            rc = copy_str(cfg->file, sizeof(cfg->file), optarg, "--file", err);
            break;
        case OPT_SIZE:
            rc = flag_result(opts_parse_size(optarg, 0, LG_PUT_SIZE_MAX, &cfg->put_size, e),
                             "--size", e, err);
            cfg->put_size_set = true;
            break;
        case OPT_PREPARE:
            rc = flag_result(opts_parse_u64(optarg, 0, 10000000, &cfg->prepare_users, e),
                             "--prepare-users", e, err);
            break;
        case OPT_USERNAME:
            rc = copy_str(cfg->username, sizeof(cfg->username), optarg, "--username", err);
            break;
        case OPT_PASSWORD:
            /* the value is never echoed, not even in an error */
            if (strlen(optarg) == 0 || !account_password_valid(optarg, strlen(optarg)) ||
                strlen(optarg) >= sizeof(cfg->password)) {
                snprintf(err, LG_ERR_LEN, "--password: must be 1..%d bytes", ACCOUNT_PASS_MAX);
                rc = -1;
            } else {
                memcpy(cfg->password, optarg, strlen(optarg) + 1);
            }
            break;
        case OPT_EXPECT_LENGTH:
            rc = flag_result(opts_parse_size(optarg, 0, 1ull << 62, &cfg->expect_length, e),
                             "--expect-length", e, err);
            cfg->has_expect_length = true;
            break;
        case OPT_COPY_BODY:
            cfg->copy_body = true;
            break;
        case OPT_RATE:
            rc =
                flag_result(opts_parse_double(optarg, 0.001, 1e8, &cfg->rate, e), "--rate", e, err);
            break;
        case OPT_ARRIVALS:
            if (strcmp(optarg, "constant") == 0) {
                cfg->arrivals = LG_ARRIVALS_CONSTANT;
            } else if (strcmp(optarg, "poisson") == 0) {
                cfg->arrivals = LG_ARRIVALS_POISSON;
            } else {
                snprintf(err, LG_ERR_LEN, "--arrivals: '%s' is not constant or poisson", optarg);
                rc = -1;
            }
            break;
        case OPT_SEED:
            rc =
                flag_result(opts_parse_u64(optarg, 0, UINT64_MAX, &cfg->seed, e), "--seed", e, err);
            break;
        case OPT_SWEEP:
            cfg->nsweep = 0;
            cfg->sweep_auto = strcmp(optarg, "auto") == 0;
            if (!cfg->sweep_auto)
                rc = for_each_item(cfg, "--sweep", optarg, sweep_item, err);
            break;
        case OPT_MAX_USERS:
            rc = flag_result(opts_parse_u64(optarg, 1, LG_USERS_MAX, &v, e), "--max-users", e, err);
            cfg->max_users = (unsigned)v;
            break;
        case OPT_SWEEP_STEP:
            rc = flag_result(opts_parse_u64(optarg, 2, LG_SWEEP_STEP_MAX, &v, e), "--sweep-step", e,
                             err);
            cfg->sweep_step = (unsigned)v;
            cfg->sweep_plan_set = true;
            break;
        case OPT_SWEEP_STALLS:
            rc = flag_result(opts_parse_u64(optarg, 1, LG_SWEEP_STALLS_MAX, &v, e),
                             "--sweep-stalls", e, err);
            cfg->sweep_stalls = (unsigned)v;
            cfg->sweep_plan_set = true;
            break;
        case OPT_SWEEP_REFINE:
            rc = flag_result(opts_parse_u64(optarg, 0, LG_SWEEP_REFINE_MAX, &v, e),
                             "--sweep-refine", e, err);
            cfg->sweep_refine = (unsigned)v;
            cfg->sweep_plan_set = true;
            break;
        case OPT_SAMPLE_MS:
            rc = flag_result(opts_parse_u64(optarg, 10, 60000, &v, e), "--sample-ms", e, err);
            cfg->sample_ms = (unsigned)v;
            break;
        case OPT_THREAD_HZ:
            rc = flag_result(opts_parse_u64(optarg, 0, LG_THREAD_HZ_MAX, &v, e), "--thread-hz", e,
                             err);
            cfg->thread_hz = (unsigned)v;
            break;
        case OPT_HARDWARE_MODEL:
            cfg->hardware_model = true;
            break;
        case OPT_WATCH:
            rc = for_each_item(cfg, "--watch", optarg, watch_item, err);
            break;
        case OPT_WATCH_COMM:
            rc = for_each_item(cfg, "--watch-comm", optarg, comm_item, err);
            break;
        case OPT_REDIS_PORT:
            rc = flag_result(opts_parse_u64(optarg, 1, 65535, &v, e), "--redis-port", e, err);
            cfg->redis_port = (uint16_t)v;
            break;
        case 'o':
            rc = copy_str(cfg->out_dir, sizeof(cfg->out_dir), optarg, "--out", err);
            break;
        case OPT_START_AT:
            rc = flag_result(opts_parse_u64(optarg, 1, UINT64_MAX / 2, &cfg->start_at_ms, e),
                             "--start-at", e, err);
            break;
        case OPT_PIN_CPUS:
            cfg->ncpus = 0;
            rc = for_each_item(cfg, "--pin-cpus", optarg, cpu_item, err);
            break;
        case ':':
            snprintf(err, LG_ERR_LEN, "option '%s' needs a value", argv[optind - 1]);
            rc = -1;
            break;
        default:
            if (optopt != 0)
                snprintf(err, LG_ERR_LEN, "unknown option '-%c' (see --help)", optopt);
            else
                snprintf(err, LG_ERR_LEN, "unknown option '%s' (see --help)", argv[optind - 1]);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && optind < argc) {
        snprintf(err, LG_ERR_LEN, "unexpected argument '%s' (see --help)", argv[optind]);
        rc = -1;
    }
    return rc;
}

static bool file_name_ok(const char *s)
{
    if (*s == '/')
        return false;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c >= 0x7f || c == '?' || c == '#' || c == '%')
            return false;
    }
    return true;
}

/* --file's comma-separated names: each a valid one, at most LG_FILES_MAX. 0, or -1 with err. */
static int files_ok(const char *list, char *err)
{
    char name[sizeof(((struct lg_config *)0)->file)];
    unsigned n = 0;

    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

        memcpy(name, p, len);
        name[len] = '\0';
        if (len == 0 || !file_name_ok(name)) {
            snprintf(err, LG_ERR_LEN,
                     "--file: '%.200s' must be a relative name without blanks, '?', '#' or '%%'",
                     name);
            return -1;
        }
        if (++n > LG_FILES_MAX) {
            snprintf(err, LG_ERR_LEN, "--file: more than %u names", LG_FILES_MAX);
            return -1;
        }
        if (end == NULL)
            return 0;
        p = end;
    }
}

/* The most users any point of the run will have. */
static unsigned max_point_users(const struct lg_config *cfg)
{
    unsigned n = cfg->users;

    if (cfg->sweep_auto)
        return cfg->max_users;
    if (cfg->nsweep > 0) {
        n = 0;
        for (unsigned i = 0; i < cfg->nsweep; i++)
            if (cfg->sweep[i] > n)
                n = cfg->sweep[i];
    }
    return n;
}

/* Each user holds a socket: raise the soft RLIMIT_NOFILE if needed, or say why it cannot be. */
static int ensure_fds(const struct lg_config *cfg, char *err)
{
    rlim_t need = (rlim_t)max_point_users(cfg) + 64; /* + files of the monitor, stdio, epoll */
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        snprintf(err, LG_ERR_LEN,
                 "%u users need %llu file descriptors but the hard limit is %llu "
                 "(raise it with ulimit -Hn, or lower --users/--sweep/--max-users)",
                 max_point_users(cfg), (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        snprintf(err, LG_ERR_LEN, "cannot raise the file descriptor limit to %llu",
                 (unsigned long long)need);
        return -1;
    }
    return 0;
}

static int check_pids(const struct lg_config *cfg, char *err)
{
    for (unsigned i = 0; i < cfg->nwatch; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)cfg->watch[i].pid);
        if (access(path, R_OK) < 0) {
            snprintf(err, LG_ERR_LEN, "--watch %s=%d: no such process", cfg->watch[i].name,
                     (int)cfg->watch[i].pid);
            return -1;
        }
    }
    return 0;
}

/* --start-at: a deterministic schedule, and a start neither past nor more than a day ahead. */
static int check_start_at(const struct lg_config *cfg, char *err)
{
    uint64_t now = wall_now_ms();

    if (cfg->sweep_auto || cfg->requests_per_user > 0) {
        snprintf(err, LG_ERR_LEN,
                 "--start-at needs a fixed schedule: give --duration and a single N or a "
                 "--sweep list (not --sweep auto or --requests-per-user)");
        return -1;
    }
    if (cfg->start_at_ms <= now) {
        snprintf(err, LG_ERR_LEN,
                 "--start-at: %" PRIu64 " is in the past (now %" PRIu64
                 "); give epoch milliseconds ahead, e.g. $(( $(date +%%s%%3N) + 3000 ))",
                 cfg->start_at_ms, now);
        return -1;
    }
    if (cfg->start_at_ms - now > LG_START_AHEAD_MAX_MS) {
        snprintf(err, LG_ERR_LEN,
                 "--start-at: %" PRIu64 " is %.1f h ahead (now %" PRIu64
                 "); at most %.0f h: epoch milliseconds, not microseconds?",
                 cfg->start_at_ms, (double)(cfg->start_at_ms - now) / 3.6e6, now,
                 (double)LG_START_AHEAD_MAX_MS / 3.6e6);
        return -1;
    }
    return 0;
}

/*
 * --window-max: at least --duration, or 0; the default LG_WINDOW_MAX_FACTOR x --duration.
 * A window bounded by request counts, or by a --start-at schedule that other hosts share, is
 * not sized.
 */
static int check_window_max(struct lg_config *cfg, char *err)
{
    bool fixed = cfg->requests_per_user > 0 || cfg->start_at_ms > 0;

    if (cfg->window_max_set && cfg->window_max_us > 0 && fixed) {
        snprintf(err, LG_ERR_LEN,
                 "--window-max: the window is fixed by %s (give 0 or leave it out)",
                 cfg->start_at_ms > 0 ? "--start-at's schedule" : "--requests-per-user");
        return -1;
    }
    if (cfg->window_max_set && cfg->window_max_us > 0 && cfg->window_max_us < cfg->duration_us) {
        snprintf(err, LG_ERR_LEN,
                 "--window-max: %.3f s is shorter than --duration %.3f s (0 keeps the window at "
                 "--duration)",
                 (double)cfg->window_max_us / 1e6, (double)cfg->duration_us / 1e6);
        return -1;
    }
    if (!cfg->window_max_set)
        cfg->window_max_us = fixed ? 0 : LG_WINDOW_MAX_FACTOR * cfg->duration_us;
    return 0;
}

int lg_config_validate(struct lg_config *cfg, char *err)
{
    char terr[LG_TARGET_ERR_LEN];
    bool open_loop = cfg->rate > 0;

    if (cfg->predict_path[0] != '\0') {
        if (cfg->max_users > LG_MODEL_PREDICT_MAX) {
            snprintf(err, LG_ERR_LEN, "--max-users with --predict-only: at most %u",
                     LG_MODEL_PREDICT_MAX);
            return -1;
        }
        return 0; /* nothing is measured: the other flags do not matter */
    }
    if (cfg->hardware_model) {
        snprintf(err, LG_ERR_LEN, "--hardware-model applies to --predict-only only");
        return -1;
    }

    if (lg_config_weight_total(cfg) == 0)
        cfg->weight[cfg->file[0] != '\0' ? LG_REQ_GET : LG_REQ_NEW] = 1;
    if (cfg->mix_desc[0] == '\0')
        snprintf(cfg->mix_desc, sizeof(cfg->mix_desc), "%s",
                 lg_req_name(cfg->weight[LG_REQ_GET]   ? LG_REQ_GET
                             : cfg->weight[LG_REQ_PUT] ? LG_REQ_PUT
                                                       : LG_REQ_NEW));
    if (lg_config_has(cfg, LG_REQ_PUT) && cfg->prepare_users == 0 && cfg->username[0] == '\0') {
        snprintf(err, LG_ERR_LEN, "put requests need --prepare-users K or --username U");
        return -1;
    }
    if (cfg->put_size_set && !lg_config_has(cfg, LG_REQ_PUT)) {
        snprintf(err, LG_ERR_LEN, "--size applies to put requests only");
        return -1;
    }
    if (lg_config_has(cfg, LG_REQ_GET) && cfg->file[0] == '\0') {
        snprintf(err, LG_ERR_LEN, "get requests need --file NAME");
        return -1;
    }
    if (cfg->file[0] != '\0' && files_ok(cfg->file, err) < 0)
        return -1;
    if (cfg->has_expect_length && !lg_config_has(cfg, LG_REQ_GET)) {
        snprintf(err, LG_ERR_LEN, "--expect-length applies to get requests only");
        return -1;
    }
    if (cfg->username[0] != '\0') {
        if (!account_username_valid(cfg->username, strlen(cfg->username))) {
            snprintf(err, LG_ERR_LEN, "--username: '%s' is not a valid username", cfg->username);
            return -1;
        }
        if (cfg->prepare_users > 0) {
            snprintf(err, LG_ERR_LEN, "give --username or --prepare-users, not both");
            return -1;
        }
    }
    if (cfg->duration_set && cfg->requests_per_user > 0) {
        snprintf(err, LG_ERR_LEN, "give --duration or --requests-per-user, not both");
        return -1;
    }
    if (cfg->model == LG_MODEL_THREADS && cfg->threads_set) {
        snprintf(err, LG_ERR_LEN, "--threads is for --model events (threads runs one per user)");
        return -1;
    }
    if (open_loop) {
        if (cfg->model == LG_MODEL_THREADS) {
            snprintf(err, LG_ERR_LEN, "--rate needs --model events");
            return -1;
        }
        if (cfg->think_us > 0 || cfg->requests_per_user > 0 || cfg->sweep_auto || cfg->nsweep > 0) {
            snprintf(err, LG_ERR_LEN,
                     "--rate (open loop) cannot be combined with --think, --requests-per-user "
                     "or --sweep");
            return -1;
        }
    }
    if (cfg->start_at_ms > 0 && check_start_at(cfg, err) < 0)
        return -1;
    if (check_window_max(cfg, err) < 0)
        return -1;
    if (cfg->sweep_auto && cfg->max_users < 1) {
        snprintf(err, LG_ERR_LEN, "--max-users must be at least 1");
        return -1;
    }
    if (cfg->sweep_plan_set && !cfg->sweep_auto) {
        snprintf(err, LG_ERR_LEN,
                 "--sweep-step, --sweep-stalls and --sweep-refine need --sweep auto");
        return -1;
    }
    if (lg_target_parse(cfg->url, &cfg->target, terr) < 0 ||
        lg_target_resolve(&cfg->target, cfg->allow_remote, terr) < 0) {
        snprintf(err, LG_ERR_LEN, "%s", terr);
        return -1;
    }
    if (check_pids(cfg, err) < 0 || ensure_fds(cfg, err) < 0)
        return -1;
    for (unsigned i = 0; i < cfg->ncpus; i++) {
        if ((unsigned)cfg->cpus[i] >= cfg->ncores) {
            snprintf(err, LG_ERR_LEN, "--pin-cpus: CPU %d is not online (0..%u)", cfg->cpus[i],
                     cfg->ncores - 1);
            return -1;
        }
    }
    return 0;
}
