/*
 * config.c - see config.h. s2_config_flags lists every flag once; common/flagtab checks each
 * value in full (opts.h parsers, never atoi) and turns any error, getopt's included, into one
 * line in err; s2_config_parse then checks the flags that depend on each other.
 */
#include "config.h"

#include <event2/event.h>
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
#include "flagtab.h"
#include "opts.h"
#include "redislink.h"

#ifndef PROJECT_VERSION
#define PROJECT_VERSION "unknown"
#endif
#ifndef PROJECT_CFLAGS
#define PROJECT_CFLAGS "unknown"
#endif

/* A duration as the flags take it ("60s", "250ms", "0") into buf, a char array. */
#define DUR(us, buf) flagtab_format_duration((us), (buf), sizeof(buf))

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
    c->redis_wait = -1;
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

int s2_config_on_backend(void *cfg, const char *arg, char *err)
{
    struct s2_config *c = cfg;
    char why[BACKEND_URL_ERR_LEN];
    char *url = (char *)arg; /* argv's own storage: masking writes into it */
    int rc = backend_url_parse(url, &c->backend, why);

    backend_url_mask_inplace(url);
    if (rc < 0) {
        bad(err, "bad --backend URL: %s", why);
        return -1;
    }
    if (c->backend.has_password) {
        backend_url_wipe(&c->backend);
        bad(err,
            "--backend: a password in the URL is visible to every user (ps); give it with "
            "--backend-password-file PATH or %s",
            S2_BACKEND_PASSWORD_ENV);
        return -1;
    }
    c->backend_arg = url;
    return 0;
}

static void defaults_cb(void *cfg)
{
    s2_config_defaults(cfg);
}

static const struct flagtab_choice modes[] = {
    {"threads", S2_MODE_THREADS}, {"processes", S2_MODE_PROCESSES}, {NULL, 0}};
static const struct flagtab_choice hash_costs[] = {{"min", PWHASH_MIN},
                                                   {"interactive", PWHASH_INTERACTIVE},
                                                   {"moderate", PWHASH_MODERATE},
                                                   {NULL, 0}};
static const struct flagtab_choice log_levels[] = {
    {"error", LOG_ERROR}, {"warn", LOG_WARN}, {"info", LOG_INFO}, {"debug", LOG_DEBUG}, {NULL, 0}};

#define S2(field) FLAGTAB_DST(struct s2_config, field)
#define SEC 1000000ull

static const struct flagtab_flag s2_flags[] = {
    {FLAGTAB_CUSTOM, "backend", 'b', .arg = "URL", .fn = s2_config_on_backend,
     .flags = FLAGTAB_F_TAKES_ARG,
     .help = "required; one of\n"
             "  redis://HOST[:PORT][/DB]   (port 6379, db 0)\n"
             "  redis:///path/to/redis.sock[?db=N]\n"
             "  redis://USER@HOST[:PORT][/DB]   (an ACL user)\n"
             "  redis-sentinel://HOST[:PORT],HOST[:PORT]/MASTER   (Sentinels, port 26379: "
             "they name the primary; a failover is followed)\n"
             "  mysql://USER@HOST[:PORT]/DB   (port 3306)\n"
             "  mysql://USER@H1[:PORT],H2[:PORT],.../DB   (a Galera cluster: the next node on a "
             "lost one)\n"
             "  mysql://USER@localhost/DB?socket=/path/mysqld.sock\n"
             "  rediss://..., rediss-sentinel://..., mysql://...?tls=on   (over TLS: the "
             "server's certificate checked, see --backend-tls-ca)\n"
             "a URL with a password is refused (argv is public)"},
    {FLAGTAB_PATH, "backend-password-file", .arg = "PATH", S2(backend_password_file),
     .def = "no password",
     .help = "the database password: the file's first line; if not given, the environment "
             "variable " S2_BACKEND_PASSWORD_ENV},
    {FLAGTAB_PATH, "sentinel-password-file", .arg = "PATH", S2(sentinel_password_file),
     .def = "none, with a warning: anyone who reaches the Sentinels may name another primary",
     .help = "redis-sentinel://: the Sentinels' own password (their requirepass), the file's "
             "first line; if not given, the environment variable " S2_SENTINEL_PASSWORD_ENV},
    {FLAGTAB_PATH, "backend-tls-ca", .arg = "PATH", S2(backend_tls_ca),
     .def = "the system's CA certificates",
     .help = "a TLS backend (rediss://, rediss-sentinel://, mysql ?tls=on): the CA "
             "certificates (PEM) that sign the database's certificate; its name or IP address "
             "must match the host connected to"},
    {FLAGTAB_PATH, "backend-tls-cert", .arg = "PATH", S2(backend_tls_cert), .def = "none",
     .help = "a TLS backend: a client certificate (PEM, with its chain) to offer, for a "
             "database that asks for one (Redis tls-auth-clients, MariaDB REQUIRE X509); "
             "with --backend-tls-key"},
    {FLAGTAB_PATH, "backend-tls-key", .arg = "PATH", S2(backend_tls_key), .def = "none",
     .help = "a TLS backend: the client certificate's private key (PEM)"},
    {FLAGTAB_STR, "listen", 'l', .arg = "ADDR", S2(listen_addr), .help = "address to listen on"},
    {FLAGTAB_U64, "port", 'p', .arg = "N", .min = 0, .max = 65535, S2(port),
     .help = "port to listen on, 0 = any"},
    {FLAGTAB_ENUM, "mode", 'm', S2(mode), .choices = modes,
     .help = "threads: one I/O thread and a pool of workers; processes: pre-forked processes"},
    {FLAGTAB_U64, "workers", 'w', .arg = "N", .min = 1, .max = S2_WORKERS_MAX, S2(workers),
     .def = "cores", .flags = FLAGTAB_F_RUNTIME, .help = "worker threads or processes"},
    {FLAGTAB_ENUM, "hash-cost", S2(hash_cost), .choices = hash_costs,
     .help = "argon2id cost for new accounts (min: tests and benchmarks only)"},
    {FLAGTAB_U64, "auth-cache", .arg = "N", .min = 0, .max = AUTHCACHE_MAX_ENTRIES,
     S2(auth_cache_entries),
     .help = "cache N successful verifications (per process in processes mode), 0 = off"},
    {FLAGTAB_DURATION, "auth-cache-ttl", .arg = "D", .min = 0, .max = 86400 * SEC,
     S2(auth_cache_ttl_us), .help = "lifetime of a cache entry, 0 = unlimited"},
    {FLAGTAB_U64, "batch", .arg = "N", .min = 1, .max = S2_BATCH_MAX, S2(batch),
     .help = "requests a worker may take at once to share one database round trip (hashing "
             "stays one at a time, each answer goes out when ready)"},
    {FLAGTAB_U64, "max-inflight", .arg = "N", .min = 1, .max = 1u << 20, S2(max_inflight),
     .help = "requests in flight per connection before server2 stops reading it"},
    {FLAGTAB_U64, "max-queue", .arg = "N", .min = 1, .max = 1u << 20, S2(max_queue),
     .help = "requests that may need argon2 waiting in one worker; beyond, answered UNAVAILABLE "
             "at once; verifications the --auth-cache holds skip the queue"},
    {FLAGTAB_U64, "max-conns", .arg = "N", .min = 1, .max = 1u << 20, S2(max_conns),
     .help = "connections per worker; beyond, one still in its handshake gives way, else the "
             "new one is closed at once"},
    {FLAGTAB_DURATION, "handshake-timeout", .arg = "D", .min = 100000, .max = 60 * SEC,
     S2(handshake_timeout_us),
     .help = "a connection must prove it holds the link secret (HELLO..AUTH) this long after "
             "it is accepted, else it is closed"},
    {FLAGTAB_U64, "max-unauth-conns", .arg = "N", .min = 1, .max = S2_MAX_UNAUTH_MAX,
     S2(max_unauth_conns),
     .help = "connections per worker still in their handshake; a new one beyond, or one that "
             "finds --max-conns taken, closes the oldest of them"},
    {FLAGTAB_U64, "max-unauth-conns-per-ip", .arg = "N", .min = 0, .max = S2_MAX_UNAUTH_MAX,
     S2(max_unauth_conns_per_ip),
     .help = "of them from one address (IPv6: per /64); a new one beyond closes that address's "
             "oldest, 0 = no cap of its own"},
    {FLAGTAB_U64, "redis-wait", .arg = "N", .min = 0, .max = 16, S2(redis_wait),
     .def = "with redis-sentinel://, 1 and at least every replica the primary lists online; "
            "with redis://, 1 while the primary lists replicas (ROLE, asked at connect and "
            "before a write at most once a second), else 0",
     .help = "Redis: a write is acknowledged only once N replicas have it (WAIT, 1 s or half "
             "--backend-timeout)"},
    {FLAGTAB_RATE, "login-fail-limit", .arg = "N/DUR", S2(login_fail),
     .help = "failed logins per username, counted in the database so every server2 (and every "
             "server1) shares them: N at once, then one per DUR/N; over it a VERIFY, SETPASS or "
             "DELETE is answered LIMITED (server1: 429) without hashing, the right password "
             "too; 0 = off"},
    {FLAGTAB_DURATION, "backend-timeout", .arg = "D", .min = 100000, .max = 60 * SEC,
     S2(backend_timeout_us),
     .help = "one database read or write at most, and a MySQL connect (MySQL: whole seconds, "
             "rounded up); past it the request is UNAVAILABLE and the connection made anew. "
             "Longer than a Galera cluster's eviction of a dead node (writes wait for it), "
             "shorter than server1's --auth-timeout"},
    {FLAGTAB_DURATION, "idle-timeout", .arg = "D", .min = 0, .max = 86400 * SEC,
     S2(idle_timeout_us), .help = "close a connection silent this long, 0 = never"},
    {FLAGTAB_PATH, "secret-file", .arg = "PATH", S2(secret_file),
     .help = "required: the link secret shared with server1, >= 32 random bytes, mode 0600 "
             "(docs/protocol.md)"},
    {FLAGTAB_SET, "insecure-no-secret", S2(insecure_no_secret), .def = "off",
     .help = "run without --secret-file: anyone who can connect may create and verify "
             "accounts"},
    {FLAGTAB_ENUM, "log-level", S2(log_level), .choices = log_levels,
     .flags = FLAGTAB_F_NOCASE, .help = "the least severe messages logged"},
    {FLAGTAB_COUNT, "verbose", 'v', S2(verbose), .flags = FLAGTAB_F_NODEF | FLAGTAB_F_REPEAT,
     .help = "raise the log level by one (after --log-level, wherever it is)"},
    {FLAGTAB_CUSTOM, "config", .arg = "FILE", .fn = flagtab_config,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_NODEF,
     .help = "read settings from FILE too, one per line: `KEY VALUE` or `KEY = VALUE`, KEY a "
             "flag's long name without --, a flag without a value alone (or = yes/no); '#' "
             "starts a comment line; flags on the command line override it"},
    {FLAGTAB_VERSION, "version", 'V', .help = "print version and build flags, exit"},
    {FLAGTAB_HELP, "help", 'h', .help = "print this help, exit"},
    {.kind = FLAGTAB_END},
};

const struct flagtab_prog s2_config_flags = {
    .name = "server2",
    .summary = "the auth backend of server1, on Redis or MariaDB/MySQL",
    .usage = "server2 --backend URL [flags]",
    .about = "The auth backend: serves server1's CREATE/VERIFY requests (docs/protocol.md) "
             "against Redis or MariaDB/MySQL; passwords are stored only as argon2id hashes.",
    .notes = "Durations take a unit: us, ms, s (default), m. SIGTERM/SIGINT: stop accepting, "
             "answer every request already read, exit 0.",
    .flags = s2_flags,
    .cfg_size = sizeof(struct s2_config),
    .defaults = defaults_cb,
    .version = print_version,
    .help_col = 27,
};

void s2_config_usage(FILE *out)
{
    flagtab_usage(&s2_config_flags, out);
}

/*
 * The --backend-tls-* flags: only with a TLS backend, a certificate with its key; the files
 * loaded once (a client context made and dropped) so that a bad one stops the start.
 */
static int check_tls(struct s2_config *c, char *err)
{
    char why[REDISLINK_TLS_ERR_LEN];
    struct ssl_ctx_st *ctx;

    if (!c->backend.tls) {
        if (c->backend_tls_ca != NULL || c->backend_tls_cert != NULL ||
            c->backend_tls_key != NULL) {
            bad(err, "--backend-tls-* apply to a TLS backend only (rediss://, "
                     "rediss-sentinel://, mysql://...?tls=on)");
            return -1;
        }
        return 0;
    }
    if ((c->backend_tls_cert == NULL) != (c->backend_tls_key == NULL)) {
        bad(err, "--backend-tls-cert and --backend-tls-key go together");
        return -1;
    }
    c->backend.tls_ca = c->backend_tls_ca;
    c->backend.tls_cert = c->backend_tls_cert;
    c->backend.tls_key = c->backend_tls_key;
    ctx = redislink_tls_context(c->backend_tls_ca, c->backend_tls_cert, c->backend_tls_key, why);
    if (ctx == NULL) {
        bad(err, "--backend-tls-*: %s", why);
        return -1;
    }
    redislink_tls_context_free(ctx);
    return 0;
}

enum s2_config_result s2_config_parse(struct s2_config *c, int argc, char **argv, char *err)
{
    enum flagtab_result rc = flagtab_parse(&s2_config_flags, c, argc, argv, err);

    if (rc != FLAGTAB_OK)
        return rc == FLAGTAB_EXIT ? S2_CONFIG_EXIT : S2_CONFIG_ERROR;

    if (s2_config_backend_finish(c, err) < 0)
        return S2_CONFIG_ERROR;
    if (c->secret_file == NULL && !c->insecure_no_secret)
        return bad(err, "--secret-file PATH is required (or --insecure-no-secret; see --help)");
    if (c->secret_file != NULL && c->insecure_no_secret)
        return bad(err, "--secret-file and --insecure-no-secret exclude each other");
    c->log_level = c->log_level + c->verbose > LOG_DEBUG
                       ? LOG_DEBUG
                       : (enum log_level)(c->log_level + c->verbose);
    return S2_CONFIG_OK;
}

int s2_config_backend_finish(struct s2_config *c, char *err)
{
    if (c->backend_arg == NULL)
        return bad(err, "--backend URL is required (see --help)");
    if (c->redis_wait >= 0 && c->backend.kind != BACKEND_REDIS)
        return bad(err, "--redis-wait applies to a Redis backend only");
    c->backend.redis_wait =
        c->redis_wait >= 0 ? (unsigned)c->redis_wait : c->backend.sentinel ? 1 : 0;
    c->backend.redis_wait_auto = c->redis_wait < 0 && c->backend.kind == BACKEND_REDIS &&
                                 !c->backend.sentinel;
    c->backend.io_timeout_ms = (unsigned)(c->backend_timeout_us / 1000);
    if (c->login_fail.count > 0 && c->login_fail.period_us / c->login_fail.count < 1000)
        return bad(err, "--login-fail-limit: one failure more per %" PRIu64 " us is below the "
                        "millisecond the database counts in", c->login_fail.period_us / c->login_fail.count);
    c->backend.login_fail_burst = (unsigned)c->login_fail.count;
    c->backend.login_fail_interval_ms =
        c->login_fail.count ? (unsigned)(c->login_fail.period_us / c->login_fail.count / 1000) : 0;
    if (read_password("backend-password-file", c->backend_password_file, S2_BACKEND_PASSWORD_ENV,
                      c->backend.password, &c->backend.has_password, err) < 0)
        return S2_CONFIG_ERROR;
    if (c->sentinel_password_file != NULL && !c->backend.sentinel)
        return bad(err, "--sentinel-password-file applies to a redis-sentinel:// backend only");
    if (c->backend.sentinel &&
        read_password("sentinel-password-file", c->sentinel_password_file,
                      S2_SENTINEL_PASSWORD_ENV, c->backend.sentinel_password,
                      &c->backend.has_sentinel_password, err) < 0)
        return S2_CONFIG_ERROR;
    if (check_tls(c, err) < 0)
        return S2_CONFIG_ERROR;
    if (c->backend.kind == BACKEND_REDIS && c->backend.user[0] != '\0' && !c->backend.has_password)
        return bad(err, "--backend: a redis user needs a password (--backend-password-file PATH "
                        "or %s)", S2_BACKEND_PASSWORD_ENV);
    return 0;
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
    DUR(c->auth_cache_ttl_us, ttl);
    DUR(c->idle_timeout_us, idle);
    DUR(c->backend_timeout_us, btimeout);
    DUR(c->handshake_timeout_us, hs);
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
