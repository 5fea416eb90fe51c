/*
 * config.c - see config.h. Every value is checked in full (opts.h parsers, never atoi); any
 * error becomes one line in err. getopt's own messages are off (opterr = 0) so that a bad flag
 * also gives exactly one line.
 */
#include "config.h"

#include <event2/event.h>
#include <getopt.h>
#include <hiredis.h>
#include <inttypes.h>
#include <mysql.h>
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authcache.h"
#include "opts.h"

#ifndef PROJECT_VERSION
#define PROJECT_VERSION "unknown"
#endif
#ifndef PROJECT_CFLAGS
#define PROJECT_CFLAGS "unknown"
#endif

enum {
    OPT_HASH_COST = 256,
    OPT_AUTH_CACHE,
    OPT_AUTH_CACHE_TTL,
    OPT_BATCH,
    OPT_MAX_INFLIGHT,
    OPT_MAX_QUEUE,
    OPT_MAX_CONNS,
    OPT_IDLE_TIMEOUT,
    OPT_LOG_LEVEL,
    OPT_BACKEND_PASSWORD_FILE,
    OPT_SENTINEL_PASSWORD_FILE,
    OPT_SECRET_FILE,
    OPT_INSECURE_NO_SECRET,
    OPT_REDIS_WAIT,
    OPT_BACKEND_TIMEOUT,
    OPT_HANDSHAKE_TIMEOUT,
    OPT_MAX_UNAUTH_CONNS,
    OPT_MAX_UNAUTH_CONNS_PER_IP,
    OPT_LOGIN_FAIL_LIMIT,
};

static const struct option long_opts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"port", required_argument, NULL, 'p'},
    {"backend", required_argument, NULL, 'b'},
    {"backend-password-file", required_argument, NULL, OPT_BACKEND_PASSWORD_FILE},
    {"sentinel-password-file", required_argument, NULL, OPT_SENTINEL_PASSWORD_FILE},
    {"mode", required_argument, NULL, 'm'},
    {"workers", required_argument, NULL, 'w'},
    {"hash-cost", required_argument, NULL, OPT_HASH_COST},
    {"auth-cache", required_argument, NULL, OPT_AUTH_CACHE},
    {"auth-cache-ttl", required_argument, NULL, OPT_AUTH_CACHE_TTL},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},
    {"max-queue", required_argument, NULL, OPT_MAX_QUEUE},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
    {"max-unauth-conns", required_argument, NULL, OPT_MAX_UNAUTH_CONNS},
    {"max-unauth-conns-per-ip", required_argument, NULL, OPT_MAX_UNAUTH_CONNS_PER_IP},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"redis-wait", required_argument, NULL, OPT_REDIS_WAIT},
    {"login-fail-limit", required_argument, NULL, OPT_LOGIN_FAIL_LIMIT},
    {"backend-timeout", required_argument, NULL, OPT_BACKEND_TIMEOUT},
    {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
    {"insecure-no-secret", no_argument, NULL, OPT_INSECURE_NO_SECRET},
    {"verbose", no_argument, NULL, 'v'},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *s2_mode_name(enum s2_mode m)
{
    return m == S2_MODE_PROCESSES ? "processes" : "threads";
}

static unsigned default_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > S2_WORKERS_MAX ? S2_WORKERS_MAX : (unsigned)n;
}

void s2_config_defaults(struct s2_config *c)
{
    memset(c, 0, sizeof(*c));
    c->listen_addr = "127.0.0.1";
    c->port = 7001;
    c->backend_arg = NULL;
    c->mode = S2_MODE_THREADS;
    c->workers = default_workers();
    c->hash_cost = PWHASH_INTERACTIVE;
    c->auth_cache_entries = 0;
    c->auth_cache_ttl_us = 60ull * 1000000;
    c->batch = 64;
    c->max_inflight = 1024;
    c->max_queue = 1024;
    c->max_conns = 1024;
    c->idle_timeout_us = 300ull * 1000000;
    c->handshake_timeout_us = 2ull * 1000000;
    c->max_unauth_conns = 64;
    c->max_unauth_conns_per_ip = 32;
    c->backend_timeout_us = BACKEND_URL_IO_TIMEOUT_MS * 1000ull;
    c->login_fail = (struct opts_rate){20, 60000000};
    c->log_level = LOG_INFO;
}

/* "60s", "250ms", "10us", or "0" (off). */
static void fmt_duration(uint64_t us, char *out, size_t cap)
{
    if (us == 0)
        snprintf(out, cap, "0");
    else if (us % 1000000 == 0)
        snprintf(out, cap, "%" PRIu64 "s", us / 1000000);
    else if (us % 1000 == 0)
        snprintf(out, cap, "%" PRIu64 "ms", us / 1000);
    else
        snprintf(out, cap, "%" PRIu64 "us", us);
}

void s2_config_usage(FILE *out)
{
    struct s2_config d;
    char ttl[32];
    char idle[32];
    char btimeout[32];
    char hs[32];
    char lf[48];

    s2_config_defaults(&d);
    opts_format_rate(&d.login_fail, lf, sizeof(lf));
    fmt_duration(d.handshake_timeout_us, hs, sizeof(hs));
    fmt_duration(d.auth_cache_ttl_us, ttl, sizeof(ttl));
    fmt_duration(d.idle_timeout_us, idle, sizeof(idle));
    fmt_duration(d.backend_timeout_us, btimeout, sizeof(btimeout));
    fprintf(out,
            "usage: server2 --backend URL [flags]\n"
            "The auth backend: serves server1's CREATE/VERIFY requests (common/PROTOCOL.md)\n"
            "against Redis or MariaDB/MySQL; passwords are stored only as argon2id hashes.\n"
            "\n"
            "  -b, --backend URL        required; one of\n"
            "                             redis://HOST[:PORT][/DB]   (port 6379, db 0)\n"
            "                             redis:///path/to/redis.sock[?db=N]\n"
            "                             redis://USER@HOST[:PORT][/DB]   (an ACL user)\n"
            "                             redis-sentinel://HOST[:PORT],HOST[:PORT]/MASTER\n"
            "                               (Sentinels, port 26379: they name the primary;\n"
            "                               a failover is followed)\n"
            "                             mysql://USER@HOST[:PORT]/DB   (port 3306)\n"
            "                             mysql://USER@H1[:PORT],H2[:PORT],.../DB   (a\n"
            "                               Galera cluster: the next node on a lost one)\n"
            "                             mysql://USER@localhost/DB?socket=/path/mysqld.sock\n"
            "                           a URL with a password is refused (argv is public)\n"
            "      --backend-password-file PATH\n"
            "                           the database password: the file's first line; if\n"
            "                           not given, the environment variable\n"
            "                           %s; default: no password\n"
            "      --sentinel-password-file PATH\n"
            "                           redis-sentinel://: the Sentinels' own password\n"
            "                           (their requirepass), the file's first line; if not\n"
            "                           given, the environment variable %s;\n"
            "                           default: none (a warning: anyone who reaches the\n"
            "                           Sentinels may name another primary)\n"
            "  -l, --listen ADDR        address to listen on (default %s)\n"
            "  -p, --port N             port to listen on, 0 = any (default %u)\n"
            "  -m, --mode MODE          threads | processes (default %s)\n"
            "  -w, --workers N          worker threads or processes, 1..%d (default %u = cores)\n"
            "      --hash-cost COST     argon2id cost for new accounts: min | interactive |\n"
            "                           moderate (default %s)\n"
            "      --auth-cache N       cache N successful verifications (per process in\n"
            "                           processes mode), 0 = off (default %" PRIu64 ")\n"
            "      --auth-cache-ttl D   lifetime of a cache entry, 0 = unlimited (default %s)\n"
            "      --batch N            requests a worker may take at once to share one database\n"
            "                           round trip (hashing stays one at a time, each answer\n"
            "                           goes out when ready), 1..%d (default %u)\n"
            "      --max-inflight N     requests in flight per connection before server2 stops\n"
            "                           reading it (default %u)\n"
            "      --max-queue N        requests that may need argon2 waiting in one worker;\n"
            "                           beyond, answered UNAVAILABLE at once; verifications the\n"
            "                           --auth-cache holds skip the queue (default %u)\n"
            "      --max-conns N        connections per worker; beyond, one still in its\n"
            "                           handshake gives way, else the new one is closed at\n"
            "                           once (default %u)\n"
            "      --handshake-timeout D\n"
            "                           a connection must prove it holds the link secret\n"
            "                           (HELLO..AUTH) this long after it is accepted, else it\n"
            "                           is closed; 100ms..60s (default %s)\n"
            "      --max-unauth-conns N connections per worker still in their handshake; a\n"
            "                           new one beyond, or one that finds --max-conns taken,\n"
            "                           closes the oldest of them, 1..%d (default %u)\n"
            "      --max-unauth-conns-per-ip N\n"
            "                           of them from one address (IPv6: per /64); a new one\n"
            "                           beyond closes that address's oldest, 0 = no cap of its\n"
            "                           own (default %u)\n"
            "      --redis-wait N       Redis: a write is acknowledged only once N replicas\n"
            "                           have it (WAIT, 1 s or half --backend-timeout);\n"
            "                           default 1 with redis-sentinel://; with redis://, 1\n"
            "                           while the primary lists replicas (ROLE, asked at\n"
            "                           connect and before a write at most once a second),\n"
            "                           else 0\n"
            "      --login-fail-limit N/DUR\n"
            "                           failed logins per username, counted in the database\n"
            "                           so every server2 (and every server1) shares them: N\n"
            "                           at once, then one per DUR/N; over it a VERIFY, SETPASS\n"
            "                           or DELETE is answered LIMITED (server1: 429) without\n"
            "                           hashing, the right password too; 0 = off (default %s)\n"
            "      --backend-timeout D  one database read or write at most, and a MySQL\n"
            "                           connect (MySQL: whole seconds, rounded up); past it the\n"
            "                           request is UNAVAILABLE and the connection made anew.\n"
            "                           Longer than a Galera cluster's eviction of a dead node\n"
            "                           (writes wait for it), shorter than server1's\n"
            "                           --auth-timeout; 100ms..60s (default %s)\n"
            "      --idle-timeout D     close a connection silent this long, 0 = never\n"
            "                           (default %s)\n"
            "      --secret-file PATH   required: the link secret shared with server1, >= 32\n"
            "                           random bytes, mode 0600 (common/PROTOCOL.md)\n"
            "      --insecure-no-secret run without --secret-file: anyone who can connect\n"
            "                           may create and verify accounts (off)\n"
            "      --log-level LEVEL    error | warn | info | debug (default %s)\n"
            "  -v, --verbose            raise the log level by one (repeatable)\n"
            "  -V, --version            print version and build flags, exit\n"
            "  -h, --help               print this help, exit\n"
            "Durations take a unit: us, ms, s (default), m. SIGTERM/SIGINT: stop accepting,\n"
            "answer every request already read, exit 0.\n",
            S2_BACKEND_PASSWORD_ENV, S2_SENTINEL_PASSWORD_ENV, d.listen_addr, d.port,
            s2_mode_name(d.mode), S2_WORKERS_MAX, d.workers, pwhash_cost_name(d.hash_cost), d.auth_cache_entries, ttl, S2_BATCH_MAX, d.batch,
            d.max_inflight, d.max_queue, d.max_conns, hs, S2_MAX_UNAUTH_MAX, d.max_unauth_conns,
            d.max_unauth_conns_per_ip, lf, btimeout, idle, level_names[d.log_level]);
}

static void print_version(void)
{
    printf("server2 %s\n", PROJECT_VERSION);
    printf("cc: %s\n", __VERSION__);
    printf("cflags: %s\n", PROJECT_CFLAGS);
    printf("libevent %s, hiredis %d.%d.%d, mariadb connector %s, libsodium %s\n",
           event_get_version(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
           mysql_get_client_info(), sodium_version_string());
}

PRINTF_FMT(2, 3) static enum s2_config_result bad(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, S2_CONFIG_ERR_LEN, fmt, ap);
    va_end(ap);
    return S2_CONFIG_ERROR;
}

static int parse_uint(const char *flag, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                      char *err)
{
    char why[OPTS_ERR_LEN];
    if (opts_parse_u64(s, min, max, out, why) < 0) {
        snprintf(err, S2_CONFIG_ERR_LEN, "--%s: %s", flag, why);
        return -1;
    }
    return 0;
}

static int parse_dur(const char *flag, const char *s, uint64_t *out, char *err)
{
    char why[OPTS_ERR_LEN];
    /* up to one day */
    if (opts_parse_duration_us(s, 0, 86400ull * 1000000, out, why) < 0) {
        snprintf(err, S2_CONFIG_ERR_LEN, "--%s: %s", flag, why);
        return -1;
    }
    return 0;
}

/*
 * The password from PATH (its first line, without the newline) into out (BACKEND_URL_PASS_MAX
 * + 1 bytes) for --flag, *has set. The file should be readable by server2's user only; that is
 * the operator's to set up (the scripts make it 0600).
 */
static int read_password_file(const char *flag, const char *path, char *out, bool *has,
                              char *err)
{
    char buf[BACKEND_URL_PASS_MAX + 2];
    size_t n;
    FILE *f = fopen(path, "re");

    if (f == NULL) {
        char ebuf[128];
        snprintf(err, S2_CONFIG_ERR_LEN, "--%s: cannot open %s: %s", flag, path,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    if (n > BACKEND_URL_PASS_MAX) {
        sodium_memzero(buf, sizeof(buf));
        snprintf(err, S2_CONFIG_ERR_LEN, "--%s: %s: password longer than %d bytes", flag, path,
                 BACKEND_URL_PASS_MAX);
        return -1;
    }
    memcpy(out, buf, n + 1);
    *has = true;
    sodium_memzero(buf, sizeof(buf));
    return 0;
}

/* The password from --FLAG PATH if given, else from the environment variable env if set. */
static int read_password(const char *flag, const char *path, const char *env, char *out,
                         bool *has, char *err)
{
    const char *v;

    if (path != NULL)
        return read_password_file(flag, path, out, has, err);
    v = getenv(env);
    if (v == NULL || v[0] == '\0')
        return 0;
    if (strlen(v) > BACKEND_URL_PASS_MAX) {
        snprintf(err, S2_CONFIG_ERR_LEN, "%s: password longer than %d bytes", env,
                 BACKEND_URL_PASS_MAX);
        return -1;
    }
    memcpy(out, v, strlen(v) + 1);
    *has = true;
    return 0;
}

enum s2_config_result s2_config_parse(struct s2_config *c, int argc, char **argv, char *err)
{
    enum log_level level = c->log_level;
    const char *password_file = NULL;
    const char *sentinel_password_file = NULL;
    int redis_wait = -1; /* --redis-wait; -1: the default for the URL */
    unsigned verbose = 0;
    uint64_t v;
    int opt;
    int cur;

    opterr = 0;
    optind = 0; /* glibc: 0 re-initialises getopt completely (tests parse more than once) */
    /* '+': stop at the first non-flag, so argv[cur] is always the element being parsed. */
    for (;;) {
        cur = optind ? optind : 1;
        opt = getopt_long(argc, argv, "+:l:p:b:m:w:vVh", long_opts, NULL);
        if (opt == -1)
            break;
        switch (opt) {
        case 'l':
            if (optarg[0] == '\0')
                return bad(err, "--listen: empty address");
            c->listen_addr = optarg;
            break;
        case 'p':
            if (parse_uint("port", optarg, 0, 65535, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->port = (uint16_t)v;
            break;
        case 'b': {
            char why[BACKEND_URL_ERR_LEN];
            int rc = backend_url_parse(optarg, &c->backend, why);
            /* hide the password from `ps` whether or not the URL parsed */
            backend_url_mask_inplace(optarg);
            if (rc < 0)
                return bad(err, "bad --backend URL: %s", why);
            if (c->backend.has_password) {
                backend_url_wipe(&c->backend);
                return bad(err,
                           "--backend: a password in the URL is visible to every user (ps); "
                           "give it with --backend-password-file PATH or %s",
                           S2_BACKEND_PASSWORD_ENV);
            }
            c->backend_arg = optarg;
            break;
        }
        case OPT_BACKEND_PASSWORD_FILE:
            if (optarg[0] == '\0')
                return bad(err, "--backend-password-file: empty path");
            password_file = optarg;
            break;
        case OPT_SENTINEL_PASSWORD_FILE:
            if (optarg[0] == '\0')
                return bad(err, "--sentinel-password-file: empty path");
            sentinel_password_file = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "threads") == 0)
                c->mode = S2_MODE_THREADS;
            else if (strcmp(optarg, "processes") == 0)
                c->mode = S2_MODE_PROCESSES;
            else
                return bad(err, "--mode: '%s' is not threads or processes", optarg);
            break;
        case 'w':
            if (parse_uint("workers", optarg, 1, S2_WORKERS_MAX, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->workers = (unsigned)v;
            break;
        case OPT_HASH_COST:
            if (pwhash_cost_parse(optarg, &c->hash_cost) < 0)
                return bad(err, "--hash-cost: '%s' is not min, interactive or moderate", optarg);
            break;
        case OPT_AUTH_CACHE:
            if (parse_uint("auth-cache", optarg, 0, AUTHCACHE_MAX_ENTRIES, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->auth_cache_entries = v;
            break;
        case OPT_AUTH_CACHE_TTL:
            if (parse_dur("auth-cache-ttl", optarg, &c->auth_cache_ttl_us, err) < 0)
                return S2_CONFIG_ERROR;
            break;
        case OPT_BATCH:
            if (parse_uint("batch", optarg, 1, S2_BATCH_MAX, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->batch = (unsigned)v;
            break;
        case OPT_MAX_QUEUE:
            if (parse_uint("max-queue", optarg, 1, 1u << 20, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->max_queue = (unsigned)v;
            break;
        case OPT_MAX_INFLIGHT:
            if (parse_uint("max-inflight", optarg, 1, 1u << 20, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->max_inflight = (unsigned)v;
            break;
        case OPT_MAX_CONNS:
            if (parse_uint("max-conns", optarg, 1, 1u << 20, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->max_conns = (unsigned)v;
            break;
        case OPT_IDLE_TIMEOUT:
            if (parse_dur("idle-timeout", optarg, &c->idle_timeout_us, err) < 0)
                return S2_CONFIG_ERROR;
            break;
        case OPT_HANDSHAKE_TIMEOUT: {
            char why[OPTS_ERR_LEN];
            if (opts_parse_duration_us(optarg, 100000, 60000000, &c->handshake_timeout_us,
                                       why) < 0)
                return bad(err, "--handshake-timeout: %s", why);
            break;
        }
        case OPT_MAX_UNAUTH_CONNS:
            if (parse_uint("max-unauth-conns", optarg, 1, S2_MAX_UNAUTH_MAX, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->max_unauth_conns = (unsigned)v;
            break;
        case OPT_MAX_UNAUTH_CONNS_PER_IP:
            if (parse_uint("max-unauth-conns-per-ip", optarg, 0, S2_MAX_UNAUTH_MAX, &v, err) < 0)
                return S2_CONFIG_ERROR;
            c->max_unauth_conns_per_ip = (unsigned)v;
            break;
        case OPT_SECRET_FILE:
            if (optarg[0] == '\0')
                return bad(err, "--secret-file: empty path");
            c->secret_file = optarg;
            break;
        case OPT_INSECURE_NO_SECRET:
            c->insecure_no_secret = true;
            break;
        case OPT_BACKEND_TIMEOUT: {
            char why[OPTS_ERR_LEN];
            if (opts_parse_duration_us(optarg, 100000, 60000000, &c->backend_timeout_us,
                                       why) < 0)
                return bad(err, "--backend-timeout: %s", why);
            break;
        }
        case OPT_LOGIN_FAIL_LIMIT: {
            char why[OPTS_ERR_LEN];
            if (opts_parse_rate(optarg, &c->login_fail, why) < 0)
                return bad(err, "--login-fail-limit: %s", why);
            break;
        }
        case OPT_REDIS_WAIT:
            if (parse_uint("redis-wait", optarg, 0, 16, &v, err) < 0)
                return S2_CONFIG_ERROR;
            redis_wait = (int)v;
            break;
        case OPT_LOG_LEVEL:
            if (log_level_parse(optarg, &level) < 0)
                return bad(err, "--log-level: '%s' is not error, warn, info or debug", optarg);
            break;
        case 'v':
            verbose++;
            break;
        case 'V':
            print_version();
            return S2_CONFIG_EXIT;
        case 'h':
            s2_config_usage(stdout);
            return S2_CONFIG_EXIT;
        case ':':
            if (strncmp(argv[cur], "--", 2) == 0)
                return bad(err, "flag '%s' needs a value", argv[cur]);
            return bad(err, "flag '-%c' needs a value", optopt);
        case '?':
        default:
            if (strncmp(argv[cur], "--", 2) == 0) {
                const char *a = argv[cur];
                const char *eq = strchr(a, '=');
                if (eq != NULL)
                    return bad(err,
                               "unknown flag, or flag that takes no value: '%.*s' "
                               "(see --help)",
                               (int)(eq - a), a);
                return bad(err, "unknown flag '%s' (see --help)", a);
            }
            return bad(err, "unknown flag '-%c' (see --help)", optopt ? optopt : '?');
        }
    }
    if (optind < argc)
        return bad(err, "unexpected argument '%s' (see --help)", argv[optind]);
    if (c->backend_arg == NULL)
        return bad(err, "--backend URL is required (see --help)");
    if (redis_wait >= 0 && c->backend.kind != BACKEND_REDIS)
        return bad(err, "--redis-wait applies to a Redis backend only");
    c->backend.redis_wait = redis_wait >= 0 ? (unsigned)redis_wait : c->backend.sentinel ? 1 : 0;
    c->backend.redis_wait_auto = redis_wait < 0 && c->backend.kind == BACKEND_REDIS &&
                                 !c->backend.sentinel;
    c->backend.io_timeout_ms = (unsigned)(c->backend_timeout_us / 1000);
    if (c->login_fail.count > 0 && c->login_fail.period_us / c->login_fail.count < 1000)
        return bad(err, "--login-fail-limit: one failure more per %" PRIu64 " us is below the "
                        "millisecond the database counts in", c->login_fail.period_us / c->login_fail.count);
    c->backend.login_fail_burst = (unsigned)c->login_fail.count;
    c->backend.login_fail_interval_ms =
        c->login_fail.count ? (unsigned)(c->login_fail.period_us / c->login_fail.count / 1000) : 0;
    if (read_password("backend-password-file", password_file, S2_BACKEND_PASSWORD_ENV,
                      c->backend.password, &c->backend.has_password, err) < 0)
        return S2_CONFIG_ERROR;
    if (sentinel_password_file != NULL && !c->backend.sentinel)
        return bad(err, "--sentinel-password-file applies to a redis-sentinel:// backend only");
    if (c->backend.sentinel &&
        read_password("sentinel-password-file", sentinel_password_file,
                      S2_SENTINEL_PASSWORD_ENV, c->backend.sentinel_password,
                      &c->backend.has_sentinel_password, err) < 0)
        return S2_CONFIG_ERROR;
    if (c->backend.kind == BACKEND_REDIS && c->backend.user[0] != '\0' && !c->backend.has_password)
        return bad(err, "--backend: a redis user needs a password (--backend-password-file PATH "
                        "or %s)", S2_BACKEND_PASSWORD_ENV);
    if (c->secret_file == NULL && !c->insecure_no_secret)
        return bad(err, "--secret-file PATH is required (or --insecure-no-secret; see --help)");
    if (c->secret_file != NULL && c->insecure_no_secret)
        return bad(err, "--secret-file and --insecure-no-secret exclude each other");
    c->log_level = level + verbose > LOG_DEBUG ? LOG_DEBUG : (enum log_level)(level + verbose);
    return S2_CONFIG_OK;
}

void s2_config_describe(const struct s2_config *c, char *out, size_t cap)
{
    char url[600];
    char ttl[32];
    char idle[32];
    char btimeout[32];
    char wait[16];
    char hs[32];
    char lf[48];

    backend_url_describe(&c->backend, url, sizeof(url));
    if (c->backend.redis_wait_auto)
        snprintf(wait, sizeof(wait), "auto");
    else
        snprintf(wait, sizeof(wait), "%u", c->backend.redis_wait);
    fmt_duration(c->auth_cache_ttl_us, ttl, sizeof(ttl));
    fmt_duration(c->idle_timeout_us, idle, sizeof(idle));
    fmt_duration(c->backend_timeout_us, btimeout, sizeof(btimeout));
    fmt_duration(c->handshake_timeout_us, hs, sizeof(hs));
    snprintf(out, cap,
             "config: listen=%s port=%u backend=%s mode=%s workers=%u hash-cost=%s "
             "auth-cache=%" PRIu64 " auth-cache-ttl=%s batch=%u max-inflight=%u max-queue=%u "
             "max-conns=%u idle-timeout=%s handshake-timeout=%s max-unauth-conns=%u "
             "max-unauth-conns-per-ip=%u log-level=%s link-secret=%s redis-wait=%s "
             "backend-timeout=%s login-fail-limit=%s",
             c->listen_addr, c->port, url, s2_mode_name(c->mode), c->workers,
             pwhash_cost_name(c->hash_cost), c->auth_cache_entries, ttl, c->batch, c->max_inflight,
             c->max_queue, c->max_conns, idle, hs, c->max_unauth_conns,
             c->max_unauth_conns_per_ip, level_names[c->log_level],
             c->insecure_no_secret ? "none" : "file", wait, btimeout,
             opts_format_rate(&c->login_fail, lf, sizeof(lf)));
}
