/*
 * config.c - see config.h. lg_config_flags lists every flag once; common/flagtab parses them
 * (numbers through the strict parsers of common/opts.h, lists through the *_item callbacks
 * below); every error is one line that names the flag.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "flagtab.h"
#include "model.h"
#include "opts.h"
#include "sweep.h"
#include "window.h"

#define LG_DEFAULT_URL "http://127.0.0.1:8080"
#define LG_DEFAULT_PASSWORD "lg-secret-1"

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
    cfg->tls_resume = 1;
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

static int on_type(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;

    if (lg_config_weight_total(c) > 0) {
        snprintf(err, LG_ERR_LEN, "--type: give one --type or one --mix");
        return -1;
    }
    if (strcmp(arg, "new") != 0 && strcmp(arg, "get") != 0 && strcmp(arg, "put") != 0) {
        snprintf(err, LG_ERR_LEN, "--type: '%.64s' is not new, get or put", arg);
        return -1;
    }
    c->weight[arg[0] == 'n' ? LG_REQ_NEW : arg[0] == 'g' ? LG_REQ_GET : LG_REQ_PUT] = 1;
    return 0;
}

static int on_mix(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;

    if (lg_config_weight_total(c) > 0) {
        snprintf(err, LG_ERR_LEN, "--mix: give one --type or one --mix");
        return -1;
    }
    if (for_each_item(c, "--mix", arg, mix_item, err) < 0)
        return -1;
    if (lg_config_weight_total(c) == 0) {
        snprintf(err, LG_ERR_LEN, "--mix: every weight is 0");
        return -1;
    }
    return copy_str(c->mix_desc, sizeof(c->mix_desc), arg, "--mix", err);
}

static int on_password(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;
    size_t len = strlen(arg);

    /* the value is never echoed, not even in an error */
    if (len == 0 || !account_password_valid(arg, len) || len >= sizeof(c->password)) {
        snprintf(err, LG_ERR_LEN, "--password: must be 1..%d bytes", ACCOUNT_PASS_MAX);
        return -1;
    }
    memcpy(c->password, arg, len + 1);
    return 0;
}

static int on_sweep(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;

    c->nsweep = 0;
    c->sweep_auto = strcmp(arg, "auto") == 0;
    return c->sweep_auto ? 0 : for_each_item(c, "--sweep", arg, sweep_item, err);
}

static int on_watch(void *cfg, const char *arg, char *err)
{
    return for_each_item(cfg, "--watch", arg, watch_item, err);
}

static int on_watch_comm(void *cfg, const char *arg, char *err)
{
    return for_each_item(cfg, "--watch-comm", arg, comm_item, err);
}

static int on_pin_cpus(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;

    c->ncpus = 0;
    return for_each_item(c, "--pin-cpus", arg, cpu_item, err);
}

static int on_header(void *cfg, const char *arg, char *err)
{
    struct lg_config *c = cfg;

    if (c->nheaders >= LG_HEADERS_MAX) {
        snprintf(err, LG_ERR_LEN, "--header: at most %d headers", LG_HEADERS_MAX);
        return -1;
    }
    if (lg_reqspec_header_ok(arg, err) < 0)
        return -1;
    if (lg_reqspec_header_is(arg, "Host"))
        c->host_header = true;
    c->headers[c->nheaders++] = arg;
    return 0;
}

static void defaults_cb(void *cfg)
{
    lg_config_defaults(cfg);
}

static void version_cb(void)
{
    lg_config_version(stdout);
}

static const struct flagtab_choice models[] = {
    {"events", LG_MODEL_EVENTS}, {"threads", LG_MODEL_THREADS}, {NULL, 0}};
static const struct flagtab_choice on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
static const struct flagtab_choice orders[] = {
    {"seq", LG_ORDER_SEQ}, {"random", LG_ORDER_RANDOM}, {NULL, 0}};
static const struct flagtab_choice arrivals[] = {
    {"constant", LG_ARRIVALS_CONSTANT}, {"poisson", LG_ARRIVALS_POISSON}, {NULL, 0}};

#define LG(field) FLAGTAB_DST(struct lg_config, field)
#define LG_SEEN(field) FLAGTAB_SEEN(struct lg_config, field)
#define SEC 1000000ull
#define STR_(x) #x
#define STR(x) STR_(x)

static const struct flagtab_flag lg_flags[] = {
    {FLAGTAB_SECTION, "Target and load", .help = NULL},
    {FLAGTAB_STRBUF, "url", .arg = "URL", LG(url), LG_SEEN(url_set),
     .help = "server, loopback only: http://HOST[:PORT][/PREFIX] or https://... (TLS 1.2 or "
             "1.3, port 443 by default, --model events only)"},
    {FLAGTAB_SET, "allow-remote", LG(allow_remote), .help = "accept a non-loopback host in --url"},
    {FLAGTAB_STRBUF, "cacert", .arg = "FILE", LG(cacert), LG_SEEN(tls_set),
     .def = "the system's CA store",
     .help = "https: trust the CAs of this PEM file to verify the server's certificate"},
    {FLAGTAB_SET, "insecure", LG(insecure), LG_SEEN(tls_set),
     .help = "https: do not verify the server's certificate (said in the log and in run.json)"},
    {FLAGTAB_ENUM, "tls-resume", LG(tls_resume), LG_SEEN(tls_set), .choices = on_off,
     .help = "https: on: each connection keeps the last session (ticket) the server gave and "
             "offers it when it reconnects; off: a full handshake every time"},
    {FLAGTAB_SET, "new-conn-per-request", LG(new_conn),
     .help = "close the connection after every response and open a new one for the next "
             "request (measures connection setup, and TLS handshakes, per second)"},
    {FLAGTAB_U64, "users", 'u', 'c', .alias = "connections", .arg = "N", .min = 1,
     .max = LG_USERS_MAX, LG(users),
     .help = "users = connections of a single point; with --rate, the size of the connection "
             "pool"},
    {FLAGTAB_U64, "threads", 't', .arg = "T", .min = 1, .max = 1024, LG(threads),
     LG_SEEN(threads_set), .def = "cores, never more than users", .flags = FLAGTAB_F_RUNTIME,
     .help = "event-loop threads for --model events"},
    {FLAGTAB_ENUM, "model", LG(model), .choices = models,
     .help = "events: users spread over T epoll loops; threads: one thread per user, blocking, "
             "as in the report"},
    {FLAGTAB_DURATION, "think", .arg = "MS", .min = 0, .max = 3600 * SEC, LG(think_us),
     .flags = FLAGTAB_F_MS,
     .help = "think time Z between a response and the next request, in ms (a unit like 1s is "
             "accepted)"},
    {FLAGTAB_DURATION, "duration", 'd', .arg = "S", .min = 100000, .max = 30 * 86400 * SEC,
     LG(duration_us), LG_SEEN(duration_set), .help = "measured time of each point, at least"},
    {FLAGTAB_DURATION, "window-max", .arg = "S", .min = 0, .max = 30 * 86400 * SEC,
     LG(window_max_us), LG_SEEN(window_max_set),
     .def = STR(LG_WINDOW_MAX_FACTOR) " x --duration; none with --start-at or "
            "--requests-per-user",
     .help = "the longest a point's measured window may grow to hold " STR(LG_WINDOW_CYCLES)
             " x (R + Z) and " STR(LG_WINDOW_OK) " completions, so that Little's law holds to "
             "about 5% (R: measured in the window; the window grows before its end until the "
             "rule holds or it reaches S); 0: exactly --duration"},
    {FLAGTAB_DURATION, "warmup", .arg = "S", .min = 0, .max = 86400 * SEC, LG(warmup_us),
     .help = "time before each point's measurement, not counted"},
    {FLAGTAB_U64, "requests-per-user", .arg = "K", .min = 1, .max = 1000000000000ull,
     LG(requests_per_user), .def = "off",
     .help = "instead of --duration: each user sends K requests"},
    {FLAGTAB_DURATION, "timeout", .arg = "S", .min = 1000, .max = 3600 * SEC, LG(timeout_us),
     .help = "per request, an error of class timeout"},

    {FLAGTAB_SECTION, "Requests",
     .help = "each response is checked: 201 for new, 200 for get, 201 or 204 for put."},
    {FLAGTAB_CUSTOM, "type", .arg = "new|get|put", .fn = on_type,
     .flags = FLAGTAB_F_TAKES_ARG, .def = "get with --file or --names, else new",
     .help = "new: POST /users with a unique username each time; get: GET /files/NAME; put: PUT "
             "/files/lg-RUN-USER-K of --size bytes, K cycling so that each user overwrites its "
             "own " STR(LG_PUT_NAMES) " names"},
    {FLAGTAB_STRBUF, "file", .arg = "NAME[,NAME...]", LG(file),
     .help = "the file for get; with several (at most " STR(LG_FILES_MAX) "), user u gets the "
             "(u mod count)th, so the load spreads over the names"},
    {FLAGTAB_SIZE, "size", .arg = "BYTES", .min = 0, .max = LG_PUT_SIZE_MAX, LG(put_size),
     LG_SEEN(put_size_set), .help = "body of put: random bytes made once"},
    {FLAGTAB_CUSTOM, "mix", .arg = "new:W,get:W,put:W", .fn = on_mix,
     .flags = FLAGTAB_F_TAKES_ARG,
     .help = "weighted mix, e.g. new:1,get:9 (get needs --file)"},
    {FLAGTAB_U64, "prepare-users", .arg = "K", .min = 0, .max = 10000000, LG(prepare_users),
     .help = "create K accounts before the first point; get and put requests use them (user i "
             "logs in as account i mod K)"},
    {FLAGTAB_STRBUF, "username", .arg = "U", LG(username),
     .help = "an existing account for get/put instead of --prepare-users (with neither, get "
             "sends no Authorization header; put needs one of them)"},
    {FLAGTAB_CUSTOM, "password", .arg = "P", .fn = on_password, .flags = FLAGTAB_F_TAKES_ARG,
     .def = "built in",
     .help = "password of prepared and new accounts; never printed, logged, or written to "
             "results"},
    {FLAGTAB_SIZE, "expect-length", .arg = "BYTES", .min = 0, .max = 1ull << 62,
     LG(expect_length), LG_SEEN(has_expect_length), .flags = FLAGTAB_F_NODEF | FLAGTAB_F_NORANGE,
     .help = "get responses must have this body length (else invalid)"},
    {FLAGTAB_SET, "copy-body", LG(copy_body),
     .def = "off: discarded by the kernel with MSG_TRUNC; headers are always parsed",
     .help = "copy bodies to user space"},

    {FLAGTAB_SECTION, "Any server",
     .help = "custom requests instead of the file server's: given by --path, --requests or a "
             "URL argument (loadgen [flags] http://HOST[:PORT]/PATH?QUERY, the target and the "
             "path at once). A response of 2xx or 3xx is a success, any other status an error "
             "counted by status. With --username (and --password) every request carries Basic "
             "credentials, else none. Not with --type, --mix, --file, --size, --expect-length or "
             "--prepare-users."},
    {FLAGTAB_STR, "path", .arg = "PATH", LG(path), .def = "none",
     .help = "the path (and query) of the request, after --url's prefix, e.g. /index.html?x=1"},
    {FLAGTAB_STR, "method", .arg = "M", LG(method), .def = "GET, or POST with a body",
     .help = "the method of the request, and of the --requests lines that give none"},
    {FLAGTAB_CUSTOM, "header", 'H', .arg = "'NAME: VALUE'", .fn = on_header,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_REPEAT,
     .help = "an extra header line of every request (at most " STR(LG_HEADERS_MAX) ", each "
             "at most " STR(LG_REQ_LINE_MAX) " bytes); a Host replaces the default one; not "
             "Content-Length or Transfer-Encoding (set from the body). Values are not written "
             "to the reports"},
    {FLAGTAB_STR, "body", .arg = "STRING", LG(body), .def = "none",
     .help = "the body of the request; Content-Length is set from it (not written to the "
             "reports)"},
    {FLAGTAB_PATH, "body-file", .arg = "FILE", LG(body_file), .def = "none",
     .help = "the body of the request: FILE's bytes, read once (at most 64 MiB)"},
    {FLAGTAB_PATH, "requests", .arg = "FILE", LG(requests_file), .def = "none",
     .help = "one request per line: PATH, METHOD PATH, or METHOD PATH @BODYFILE (relative to "
             "FILE's directory); '#' comments and blank lines skipped; at most "
             STR(LG_REQUESTS_MAX) " requests, lines of at most " STR(LG_REQ_LINE_MAX) " bytes, "
             "64 MiB of bodies in all"},
    {FLAGTAB_ENUM, "requests-order", LG(requests_order), LG_SEEN(order_set), .choices = orders,
     .help = "seq: user u starts at the (u mod count)th request and goes on in order, cycling; "
             "random: each request drawn uniformly (--seed)"},

    {FLAGTAB_SECTION, "Names",
     .help = "each request's path takes a name drawn from a set, for the file server's get "
             "(GET /files/NAME, instead of --file) and for custom requests (where a path has "
             LG_NAME_SLOT ", e.g. --path '/files/" LG_NAME_SLOT "' or "
             "http://127.0.0.1:8080/" LG_NAME_SLOT "). Names are percent-encoded but for '/' "
             "and RFC 3986's pchar set. run.json says the source, N and the law."},
    {FLAGTAB_STR, "names", .arg = "FILE|PATTERN", LG(names_arg), .def = "none",
     .help = "FILE: one name a line ('#' comments and blank lines skipped; visible ASCII, at "
             "most " STR(LG_NAME_LEN_MAX) " bytes each, " STR(LG_NAMES_FILE_MAX) " names, 2 GiB); "
             "an argument with a '{' is a PATTERN of {A..B} fields (bash's sequences, "
             "{00..99} zero-padded) whose values are the digits of the name's index, the last "
             "the fastest: d{00..99}/d{00..99}/f{00..99} is 1000000 names, d00/d00/f00 first "
             "(at most " STR(LG_NAMES_FIELDS_MAX) " fields, 10^15 names)"},
    {FLAGTAB_STR, "pick", .arg = "uniform|zipf:S", LG(pick_arg), .def = "uniform",
     .help = "how each request draws its name: uniformly, or Zipf with exponent S (0.01-10, "
             "e.g. 0.99) over the names' order, the first name the most frequent; each thread "
             "draws from its own generator (--seed)"},
    {FLAGTAB_SET, "spread", LG(names_spread),
     .def = "off: rank k is the kth name",
     .help = "with --pick zipf:S, scatter the ranks over the names by a fixed permutation (name "
             "index = (a x (rank - 1) + b) mod N, a coprime to N near 0.618 N, b from --seed), so "
             "that the hottest names of a numbered tree are in different directories"},

    {FLAGTAB_SECTION, "Open loop", .help = "instead of the closed loop."},
    {FLAGTAB_DOUBLE, "rate", .arg = "R", .dmin = 0.001, .dmax = 1e8, LG(rate),
     .def = "off: the closed loop",
     .help = "requests/s in total, sent at intended times; latency counts from the intended "
             "send time (no coordinated omission). --users connections form the pool; when all "
             "are busy, requests queue and their latency grows"},
    {FLAGTAB_ENUM, "arrivals", LG(arrivals), .choices = arrivals,
     .help = "inter-arrival times"},
    {FLAGTAB_U64, "seed", .arg = "N", .min = 0, .max = UINT64_MAX, LG(seed),
     .flags = FLAGTAB_F_NORANGE, .help = "seed of the mix, --names and Poisson draws"},

    {FLAGTAB_SECTION, "Sweep", .help = "closed loop."},
    {FLAGTAB_CUSTOM, "sweep", .arg = "1,2,4,...|auto", .fn = on_sweep,
     .flags = FLAGTAB_F_TAKES_ARG,
     .help = "one point per N (at most " STR(LG_SWEEP_MAX) "); auto doubles N from 1 until two "
             "doublings in a row raise the best X by 5% or less (or --max-users), then bisects "
             "below the knee twice. N* = the smallest measured N whose throughput is within 5% "
             "of the sweep's maximum; reported with R at N*"},
    {FLAGTAB_U64, "max-users", .arg = "N", .min = 1, .max = LG_USERS_MAX, LG(max_users),
     .help = "bound of --sweep auto (and of --predict-only)"},
    {FLAGTAB_U64, "sweep-step", .arg = "F", .min = 2, .max = LG_SWEEP_STEP_MAX, LG(sweep_step),
     LG_SEEN(sweep_plan_set), .help = "auto: multiply N by F instead of doubling"},
    {FLAGTAB_U64, "sweep-stalls", .arg = "K", .min = 1, .max = LG_SWEEP_STALLS_MAX,
     LG(sweep_stalls), LG_SEEN(sweep_plan_set),
     .help = "auto: K steps in a row without growth end it; 1 stops one step after X stops "
             "growing"},
    {FLAGTAB_U64, "sweep-refine", .arg = "K", .min = 0, .max = LG_SWEEP_REFINE_MAX,
     LG(sweep_refine), LG_SEEN(sweep_plan_set),
     .help = "auto: bisect below N* K times afterwards"},

    {FLAGTAB_SECTION, "Several hosts",
     .help = "then merge their --out directories with 'loadgen merge [-o DIR] DIR...' (see "
             "'loadgen merge -h')."},
    {FLAGTAB_U64, "start-at", .arg = "EPOCH_MS", .min = 1, .max = UINT64_MAX / 2,
     LG(start_at_ms), .def = "now", .flags = FLAGTAB_F_NORANGE,
     .help = "wall-clock start, in milliseconds since the epoch (at most a day ahead), e.g. $(( "
             "$(date +%s%3N) + 3000 )): waits (after --prepare-users) and starts point k "
             "(0-based) at EPOCH_MS + k * (warmup + duration + " STR(LG_START_GAP_MS)
             " ms), so "
             "processes given the same value measure the same wall-clock windows (clocks "
             "synchronized by NTP). Needs --duration (not --requests-per-user) and a single N "
             "or a --sweep list"},

    {FLAGTAB_SECTION, "Resource monitor",
     .help = "/proc, during every point's measured window; loadgen itself, the machine's CPU, "
             "disks and loopback are always sampled."},
    {FLAGTAB_U64, "sample-ms", .arg = "MS", .min = 10, .max = 60000, LG(sample_ms),
     .help = "sampling interval"},
    {FLAGTAB_U64, "thread-hz", .arg = "HZ", .min = 0, .max = LG_THREAD_HZ_MAX, LG(thread_hz),
     .help = "samples per second of the wait channel of the stack's worker threads: the "
             "software stations of the model; 0: off"},
    {FLAGTAB_CUSTOM, "watch", .arg = "NAME=PID,...", .fn = on_watch,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_REPEAT,
     .help = "processes of the stack to sample (at most " STR(LG_WATCH_MAX) ")"},
    {FLAGTAB_CUSTOM, "watch-comm", .arg = "C1,C2,...", .fn = on_watch_comm,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_REPEAT,
     .help = "every process whose comm is C (summed per name), e.g. "
             "server1,server2,redis-server,mariadbd"},
    {FLAGTAB_U64, "redis-port", .arg = "P", .min = 1, .max = 65535, LG(redis_port),
     .def = "off",
     .help = "also sample Redis INFO commandstats on 127.0.0.1:P (password, if any, from the "
             "environment: REDISCLI_AUTH)"},

    {FLAGTAB_SECTION, "Output", .help = NULL},
    {FLAGTAB_STRBUF, "out", 'o', .arg = "DIR", LG(out_dir), .def = "none: stdout only",
     .help = "write points.csv, run.json, summary.md into DIR"},
    {FLAGTAB_CUSTOM, "pin-cpus", .arg = "LIST", .fn = on_pin_cpus, .flags = FLAGTAB_F_TAKES_ARG,
     .help = "pin worker threads to CPUs, e.g. 1 or 0-1 or 0,1"},
    {FLAGTAB_COUNT, "verbose", 'v', LG(verbose), .flags = FLAGTAB_F_NODEF | FLAGTAB_F_REPEAT,
     .help = "more log detail on stderr"},
    {FLAGTAB_VERSION, "version", 'V', .help = "print version, compiler and flags"},
    {FLAGTAB_HELP, "help", 'h', .help = "print this help"},

    {FLAGTAB_SECTION, "Model only", .help = "measures nothing."},
    {FLAGTAB_STRBUF, "predict-only", .arg = "RUN.json", LG(predict_path),
     .help = "the queueing model (exact MVA) of a run loadgen wrote, e.g. a short --sweep 1,4: "
             "X(N), R(N) and the knee for N up to --max-users (at most "
             STR(LG_MODEL_PREDICT_MAX) "), from demands D(N) = a + b / N fitted through N = 1 "
             "and N = 4 (a fixed part and a part a batch shares; when they fall faster than 1 / "
             "N, beyond N = 4 all of D(4) is taken as shared) and from the N = 1 demands alone; "
             "then the file's own points against the model. A run with thread samples gets the "
             "layered model (software stations over the CPU), solved for N up to "
             STR(LG_MODEL_LAYERED_MAX_N)},
    {FLAGTAB_SET, "hardware-model", LG(hardware_model),
     .help = "with --predict-only: the model of the hardware alone (CPU, disks, Redis), without "
             "the software stations, as a run without thread samples is modelled"},
    {.kind = FLAGTAB_END},
};

const struct flagtab_prog lg_config_flags = {
    .name = "loadgen",
    .summary = "closed-loop HTTP/1.1 load generator and queueing model for the file server",
    .usage = "loadgen [options] [http://HOST[:PORT]/PATH]",
    .about = "Closed-loop (or open-loop) HTTP/1.1 load generator for the file server, or any "
             "HTTP/1.1 server (see Any server): drives N "
             "users on keep-alive connections, sweeps N, and reports throughput X, response "
             "time R (mean, p50..p99.9, max), errors, Little's law, the resource use of every "
             "process of the stack from /proc, operational-law bounds, N* and the bottleneck.",
    .notes = "Closed-loop latency is service time under coordinated omission: always read it "
             "with N and X. Exit status: 0 ok, 1 run failed, 2 bad flags, 130 interrupted.",
    .flags = lg_flags,
    .cfg_size = sizeof(struct lg_config),
    .defaults = defaults_cb,
    .version = version_cb,
    .help_col = 26,
};

void lg_config_usage(FILE *out)
{
    flagtab_usage(&lg_config_flags, out);
}

static bool is_url(const char *a)
{
    return strncmp(a, "http://", 7) == 0 || strncmp(a, "https://", 8) == 0;
}

/* The URL argument: its scheme and authority into --url, its path (default /) into --path. */
static int url_arg(struct lg_config *cfg, const char *a, char *err)
{
    const char *auth = strstr(a, "://") + 3;
    size_t alen = strcspn(auth, "/?#");

    if (cfg->url_arg) {
        snprintf(err, LG_ERR_LEN, "unexpected argument '%.64s': one URL at most", a);
        return -1;
    }
    if (auth[alen] != '\0' && auth[alen] != '/') {
        snprintf(err, LG_ERR_LEN, "URL '%.300s': write the path, e.g. http://host/?query", a);
        return -1;
    }
    if ((size_t)(auth - a) + alen >= sizeof(cfg->url)) {
        snprintf(err, LG_ERR_LEN, "URL '%.64s...': the host is too long", a);
        return -1;
    }
    snprintf(cfg->url, sizeof(cfg->url), "%.*s", (int)((size_t)(auth - a) + alen), a);
    cfg->url_path = auth[alen] == '/' ? auth + alen : NULL;
    cfg->url_arg = true;
    return 0;
}

int lg_config_parse(struct lg_config *cfg, int argc, char **argv, char *err)
{
    char **seg = argv;
    int segc = argc;
    int first;
    enum flagtab_result r;

    cfg->argc = argc;
    cfg->argv = argv;
    /* the flags stop at the first argument that is not one: a URL is taken there, and the
     * flags after it are parsed with it in argv[0]'s place (--config only before it) */
    r = flagtab_parse_first(&lg_config_flags, cfg, segc, seg, &first, err);
    while (r == FLAGTAB_OK && first < segc) {
        if (!is_url(seg[first])) {
            snprintf(err, LG_ERR_LEN, "unexpected argument '%.64s' (see --help)", seg[first]);
            return FLAGTAB_ERROR;
        }
        if (url_arg(cfg, seg[first], err) < 0)
            return FLAGTAB_ERROR;
        seg += first;
        segc -= first;
        for (int i = 1; i < segc; i++) {
            if (strcmp(seg[i], "--config") == 0 || strncmp(seg[i], "--config=", 9) == 0) {
                snprintf(err, LG_ERR_LEN, "--config: give it before the URL (its flags come "
                         "first, the command line's after them)");
                return FLAGTAB_ERROR;
            }
        }
        r = flagtab_parse_args(&lg_config_flags, cfg, segc, seg, &first, err);
    }
    return (int)r;
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

/* The TLS flags need https://, which needs the events model; --cacert a readable file. */
static int check_tls(const struct lg_config *cfg, char *err)
{
    if (!cfg->target.tls) {
        if (cfg->tls_set) {
            snprintf(err, LG_ERR_LEN, "--cacert, --insecure and --tls-resume need an https:// "
                                      "--url");
            return -1;
        }
        return 0;
    }
    if (cfg->model == LG_MODEL_THREADS) {
        snprintf(err, LG_ERR_LEN, "https:// needs --model events");
        return -1;
    }
    if (cfg->insecure && cfg->cacert[0] != '\0') {
        snprintf(err, LG_ERR_LEN, "give --cacert or --insecure, not both");
        return -1;
    }
    if (cfg->cacert[0] != '\0' && access(cfg->cacert, R_OK) < 0) {
        snprintf(err, LG_ERR_LEN, "--cacert '%.400s': cannot read it", cfg->cacert);
        return -1;
    }
    return 0;
}

/*
 * Custom requests: given by --path, --requests or a URL argument, alone (not with the file
 * server's request types), built into cfg->reqs.
 */
static int check_custom(struct lg_config *cfg, char *err)
{
    char e[LG_REQSPEC_ERR_LEN];
    const char *method = cfg->method;
    bool has_body = cfg->body != NULL || cfg->body_file != NULL;

    if (cfg->url_arg) {
        if (cfg->url_path != NULL && (cfg->path != NULL || cfg->requests_file != NULL)) {
            snprintf(err, LG_ERR_LEN, "the URL has a path: not with --path or --requests");
            return -1;
        }
        if (cfg->path == NULL && cfg->requests_file == NULL)
            cfg->path = cfg->url_path != NULL ? cfg->url_path : "/";
    }
    if (cfg->path == NULL && cfg->requests_file == NULL) {
        if (cfg->method != NULL || cfg->nheaders > 0 || has_body || cfg->order_set) {
            snprintf(err, LG_ERR_LEN, "--method, --header, --body, --body-file and "
                                      "--requests-order need --path, --requests or a URL");
            return -1;
        }
        return 0;
    }
    if (cfg->url_arg && cfg->url_set) {
        snprintf(err, LG_ERR_LEN, "give the target once: --url or a URL argument");
        return -1;
    }
    if (lg_config_weight_total(cfg) > 0 || cfg->file[0] != '\0' || cfg->put_size_set ||
        cfg->has_expect_length || cfg->prepare_users > 0) {
        snprintf(err, LG_ERR_LEN,
                 "--path, --requests and a URL send their own requests: not with --type, --mix, "
                 "--file, --size, --expect-length or --prepare-users");
        return -1;
    }
    if (cfg->requests_file != NULL && cfg->path != NULL) {
        snprintf(err, LG_ERR_LEN, "give --path or --requests, not both");
        return -1;
    }
    if (cfg->body != NULL && cfg->body_file != NULL) {
        snprintf(err, LG_ERR_LEN, "give --body or --body-file, not both");
        return -1;
    }
    if (cfg->requests_file != NULL && has_body) {
        snprintf(err, LG_ERR_LEN, "--body and --body-file are for --path; a --requests line "
                                  "gives its body as METHOD PATH @FILE");
        return -1;
    }
    if (cfg->order_set && cfg->requests_file == NULL) {
        snprintf(err, LG_ERR_LEN, "--requests-order needs --requests");
        return -1;
    }
    if (method != NULL && !lg_reqspec_method_ok(method, strlen(method))) {
        snprintf(err, LG_ERR_LEN, "--method '%.64s': not an HTTP token of 1-%d characters",
                 method, LG_METHOD_MAX);
        return -1;
    }
    if (cfg->username[0] != '\0') {
        for (unsigned i = 0; i < cfg->nheaders; i++) {
            if (lg_reqspec_header_is(cfg->headers[i], "Authorization")) {
                snprintf(err, LG_ERR_LEN, "give --username or an Authorization --header, not "
                                          "both");
                return -1;
            }
        }
    }
    if (method == NULL)
        method = has_body ? "POST" : "GET";
    if (cfg->requests_file != NULL) {
        if (lg_reqlist_load(&cfg->reqs, cfg->requests_file, method, e) < 0)
            goto fail;
    } else if (!lg_reqspec_path_ok(cfg->path, strlen(cfg->path))) {
        snprintf(err, LG_ERR_LEN, "--path '%.64s': '/' then visible ASCII (no blanks), at most "
                 "%d bytes", cfg->path, LG_REQ_LINE_MAX);
        return -1;
    } else if (cfg->body_file != NULL) {
        if (lg_reqlist_add_file(&cfg->reqs, method, cfg->path, cfg->body_file, e) < 0)
            goto fail;
    } else if (lg_reqlist_add(&cfg->reqs, method, cfg->path, cfg->body,
                              cfg->body ? strlen(cfg->body) : 0, e) < 0) {
        goto fail;
    }
    cfg->weight[LG_REQ_CUSTOM] = 1;
    snprintf(cfg->mix_desc, sizeof(cfg->mix_desc), "custom");
    return 0;
fail:
    snprintf(err, LG_ERR_LEN, "%s", e);
    return -1;
}

/*
 * --names and --pick: for get (instead of --file) or for custom requests whose path has one
 * {name}; the names read (a file) or parsed (a pattern) into cfg->names.
 */
static int check_names(struct lg_config *cfg, char *err)
{
    char e[LG_NAMES_ERR_LEN];
    unsigned slots = 0;

    for (unsigned i = 0; i < cfg->reqs.n; i++) {
        const char *p = strstr(cfg->reqs.reqs[i].path, LG_NAME_SLOT);
        if (p == NULL)
            continue;
        if (strstr(p + 1, LG_NAME_SLOT) != NULL) {
            snprintf(err, LG_ERR_LEN, "path '%.64s': more than one " LG_NAME_SLOT,
                     cfg->reqs.reqs[i].path);
            return -1;
        }
        slots++;
    }
    if (cfg->names_arg == NULL) {
        if (cfg->pick_arg != NULL || cfg->names_spread) {
            snprintf(err, LG_ERR_LEN, "--pick and --spread need --names");
            return -1;
        }
        if (slots > 0) {
            snprintf(err, LG_ERR_LEN, "a path has " LG_NAME_SLOT " but no --names gives them");
            return -1;
        }
        return 0;
    }
    if (strlen(cfg->names_arg) > LG_NAMES_SOURCE_MAX) {
        snprintf(err, LG_ERR_LEN, "--names: a file name or pattern of at most %d bytes",
                 LG_NAMES_SOURCE_MAX);
        return -1;
    }
    snprintf(cfg->names_source, sizeof(cfg->names_source), "%s", cfg->names_arg);
    if (cfg->pick_arg != NULL &&
        lg_pick_parse(cfg->pick_arg, &cfg->pick_kind, &cfg->zipf_s, e) < 0) {
        snprintf(err, LG_ERR_LEN, "%s", e);
        return -1;
    }
    if (cfg->names_spread && cfg->pick_kind != LG_PICK_ZIPF) {
        snprintf(err, LG_ERR_LEN, "--spread applies to --pick zipf:S (uniform draws stay "
                                  "uniform under any permutation)");
        return -1;
    }
    if (cfg->file[0] != '\0') {
        snprintf(err, LG_ERR_LEN, "give --file or --names, not both");
        return -1;
    }
    if (lg_config_has(cfg, LG_REQ_CUSTOM) && slots == 0) {
        snprintf(err, LG_ERR_LEN, "--names: no " LG_NAME_SLOT " in --path, the URL's path or a "
                                  "--requests line");
        return -1;
    }
    if (!lg_config_has(cfg, LG_REQ_CUSTOM) && !lg_config_has(cfg, LG_REQ_GET)) {
        snprintf(err, LG_ERR_LEN, "--names applies to get and to custom requests");
        return -1;
    }
    if (lg_names_load(&cfg->names, cfg->names_arg, e) < 0) {
        snprintf(err, LG_ERR_LEN, "%s", e);
        return -1;
    }
    return 0;
}

void lg_config_release(struct lg_config *cfg)
{
    lg_reqlist_release(&cfg->reqs);
    lg_names_release(&cfg->names);
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

    if (check_custom(cfg, err) < 0)
        return -1;
    if (lg_config_weight_total(cfg) == 0)
        cfg->weight[cfg->file[0] != '\0' || cfg->names_arg != NULL ? LG_REQ_GET : LG_REQ_NEW] = 1;
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
    if (lg_config_has(cfg, LG_REQ_GET) && cfg->file[0] == '\0' && cfg->names_arg == NULL) {
        snprintf(err, LG_ERR_LEN, "get requests need --file NAME or --names");
        return -1;
    }
    if (check_names(cfg, err) < 0)
        return -1;
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
    if (check_tls(cfg, err) < 0)
        return -1;
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
