/*
 * config.h - struct lg_config: every flag of loadgen, its default, parsing and --help (both from
 * the flag table lg_config_flags, which prints the defaults from lg_config_defaults() so the two
 * cannot drift), and validation. Built by main before any thread starts; immutable afterwards.
 */
#ifndef LG_CONFIG_H
#define LG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "account.h"
#include "flagtab.h"
#include "names.h"
#include "pick.h"
#include "reqspec.h"
#include "stats.h"
#include "target.h"

#define LG_ERR_LEN FLAGTAB_ERR_LEN
#define LG_SWEEP_MAX 64    /* points in an explicit --sweep list */
#define LG_WATCH_MAX 32    /* --watch name=PID entries and --watch-comm names, each */
#define LG_NAME_MAX 32     /* a watched process group's name */
#define LG_USERS_MAX 50000 /* connections; each costs a socket and 16 KB */
#define LG_CPUS_MAX 256
#define LG_PUT_NAMES 8                  /* names each user overwrites in turn with put */
#define LG_FILES_MAX 64                 /* names in --file NAME,NAME,... */
#define LG_PUT_SIZE_MAX (1024ull << 20) /* --size bound */
#define LG_START_GAP_MS 1000 /* --start-at: idle ms between two points (--help prints it) */
#define LG_START_AHEAD_MAX_MS (24ull * 3600 * 1000) /* --start-at: at most a day ahead */
#define LG_THREAD_HZ_DEFAULT 200        /* --thread-hz: thread-state samples per second */
#define LG_THREAD_HZ_MAX 5000
#define LG_WINDOW_MAX_FACTOR 2 /* --window-max defaults to this many --duration */

enum lg_model {
    LG_MODEL_EVENTS = 0,  /* --threads event loops, users spread across them */
    LG_MODEL_THREADS = 1, /* one thread per user, as in the 2017 report */
};

enum lg_arrivals {
    LG_ARRIVALS_CONSTANT = 0,
    LG_ARRIVALS_POISSON = 1,
};

struct lg_watch {
    char name[LG_NAME_MAX];
    pid_t pid;
};

struct lg_config {
    /* target */
    char url[512];
    bool url_set;            /* --url was given */
    struct lg_target target; /* resolved by lg_config_validate */
    bool allow_remote;
    char cacert[512];  /* https: PEM file of trusted CAs; "": the system store */
    bool insecure;     /* https: no certificate verification */
    int tls_resume;    /* https: 1 keep and offer sessions, 0 always a full handshake */
    bool tls_set;      /* --cacert, --insecure or --tls-resume was given (need https) */
    bool new_conn;     /* --new-conn-per-request */

    /* load shape */
    unsigned users;   /* N of a single point; the pool size with --rate */
    unsigned threads; /* event-loop threads (events model) */
    bool threads_set;
    enum lg_model model;
    uint64_t think_us; /* Z */
    uint64_t duration_us;
    bool duration_set;
    uint64_t window_max_us; /* --window-max: longest window (window.h); 0: not sized */
    bool window_max_set;
    uint64_t warmup_us;
    uint64_t requests_per_user; /* 0: run for --duration */
    uint64_t timeout_us;
    double rate; /* > 0: open loop, requests/s in total */
    enum lg_arrivals arrivals;
    uint64_t seed;

    /* requests */
    unsigned weight[LG_REQ_TYPES];       /* from --type or --mix */
    char mix_desc[64];                   /* "new", "get", "put" or the --mix text, for reports */
    char file[1024];                     /* --file NAME[,NAME...] for get (as given) */
    uint64_t put_size;                   /* --size: body bytes of put */
    bool put_size_set;                   /* --size was given (only valid with put) */
    uint64_t prepare_users;              /* K accounts created before the first point */
    char username[ACCOUNT_USER_MAX + 1]; /* --username: an existing account for get */
    char password[ACCOUNT_PASS_MAX + 1]; /* never printed, logged or written to a report */
    bool has_expect_length;
    uint64_t expect_length;
    bool copy_body; /* read bodies into memory instead of discarding in-kernel */

    /* custom requests to any server (reqspec.h); pointers into argv */
    const char *method;        /* --method; NULL: GET, or POST with a body */
    const char *path;          /* --path, or (once validated) the URL argument's path, or / */
    bool url_arg;              /* the target was given as a URL argument */
    const char *url_path;      /* its path (and query), NULL when it has none */
    const char *headers[LG_HEADERS_MAX]; /* -H "Name: value", in order */
    unsigned nheaders;
    bool host_header;          /* one of them is Host: it replaces the default one */
    const char *body;          /* --body */
    const char *body_file;     /* --body-file */
    const char *requests_file; /* --requests */
    int requests_order;        /* enum lg_req_order */
    bool order_set;
    struct lg_reqlist reqs; /* built by lg_config_validate (heap: lg_config_release) */

    /* names (names.h, pick.h) */
    const char *names_arg;       /* --names FILE|PATTERN; NULL: none */
    char names_source[LG_NAMES_SOURCE_MAX + 1]; /* its copy, for reports (and run.json read) */
    const char *pick_arg;        /* --pick; NULL: uniform */
    struct lg_names names;       /* built by lg_config_validate (heap: lg_config_release) */
    enum lg_pick_kind pick_kind; /* from --pick */
    double zipf_s;               /* its exponent (zipf) */
    bool names_spread;           /* --spread: ranks scattered over the names (pick.h) */

    /* sweep */
    bool sweep_auto;
    unsigned sweep[LG_SWEEP_MAX];
    unsigned nsweep; /* 0: one point at --users */
    unsigned max_users;
    unsigned sweep_step;   /* --sweep-step: factor between successive N of --sweep auto */
    unsigned sweep_stalls; /* --sweep-stalls: steps without growth that end it */
    unsigned sweep_refine; /* --sweep-refine: bisections below N* afterwards */
    bool sweep_plan_set;   /* one of the three was given (they need --sweep auto) */
    uint64_t start_at_ms; /* --start-at: epoch ms of the first point's start; 0 = now */

    /* resource monitor */
    unsigned sample_ms;
    struct lg_watch watch[LG_WATCH_MAX];
    unsigned nwatch;
    char watch_comm[LG_WATCH_MAX][LG_NAME_MAX];
    unsigned nwatch_comm;
    uint16_t redis_port; /* 0: no Redis INFO sampling */
    unsigned thread_hz;  /* 0: no thread-state sampling (thrsample.h) */

    /* output and process */
    char out_dir[512]; /* "" = no files, stdout only */
    char predict_path[512]; /* --predict-only RUN.json: model only, nothing is measured */
    bool hardware_model;    /* --hardware-model: the model without software stations */
    int verbose;
    int cpus[LG_CPUS_MAX]; /* --pin-cpus: worker i runs on cpus[i % ncpus] */
    unsigned ncpus;
    unsigned ncores; /* online CPUs, for defaults */

    /* the command line, for run.json (the password is redacted when written) */
    int argc;
    char **argv;
};

/* Every flag of loadgen: names, kinds, bounds, destinations, help (common/flagtab.h). */
extern const struct flagtab_prog lg_config_flags;

void lg_config_defaults(struct lg_config *cfg);
/*
 * Parses argv into cfg. Returns 0 to go on, 1 when --help or --version was printed (exit 0),
 * -1 with a one-line reason in err for a usage error (exit 2). One argument that is not a flag
 * may be a URL, http[s]://HOST[:PORT][/PATH[?QUERY]], anywhere among the flags: the target, and
 * PATH (default /) the path of a custom request, as wrk and hey take it.
 */
int lg_config_parse(struct lg_config *cfg, int argc, char **argv, char *err);
/*
 * Checks combinations, resolves the target, reads the custom requests (--requests, --body-file).
 * Returns 0, or -1 with a reason in err.
 */
int lg_config_validate(struct lg_config *cfg, char *err);
/* Frees what lg_config_validate allocated (the custom requests). */
void lg_config_release(struct lg_config *cfg);
void lg_config_usage(FILE *out);
void lg_config_version(FILE *out);
/* True when the load includes requests of that type. */
bool lg_config_has(const struct lg_config *cfg, enum lg_req type);
/* The sum of the request-type weights (0 before validation when none was given). */
unsigned lg_config_weight_total(const struct lg_config *cfg);
/*
 * With --start-at: the wall-clock time (epoch ms) at which point k (0-based) starts, that is
 * start_at + k * (warmup + duration + LG_START_GAP_MS), so processes on several hosts that
 * were given the same flags begin every point together without talking to each other.
 */
uint64_t lg_config_point_start_ms(const struct lg_config *cfg, unsigned k);

#endif /* LG_CONFIG_H */
