/*
 * config.h - server2's configuration: defaults, the flag table (common/flagtab.h: parsing,
 * --help, man page and docs all come from it), --version, and the one-line summary logged at
 * start. After start-up the config is read-only and shared by every thread.
 */
#ifndef S2_CONFIG_H
#define S2_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend_url.h"
#include "flagtab.h"
#include "opts.h"
#include "log.h"
#include "pwhash.h"

#define S2_CONFIG_ERR_LEN FLAGTAB_ERR_LEN
#define S2_WORKERS_MAX 256
#define S2_BATCH_MAX 1024
#define S2_MAX_UNAUTH_MAX 4096 /* --max-unauth-conns: each accept scans them (per address) */
/* Where the database password comes from when --backend-password-file is not given. */
#define S2_BACKEND_PASSWORD_ENV "S2_BACKEND_PASSWORD"
/* Where the Sentinels' password comes from when --sentinel-password-file is not given. */
#define S2_SENTINEL_PASSWORD_ENV "S2_SENTINEL_PASSWORD"

enum s2_mode {
    S2_MODE_THREADS = 0,   /* one I/O thread + a pool of worker threads */
    S2_MODE_PROCESSES = 1, /* pre-forked processes, each with its own loop and connection */
};

struct s2_config {
    const char *listen_addr;
    uint16_t port;
    const char *backend_arg; /* as given, password masked in place; NULL = not given */
    struct backend_url backend;
    enum s2_mode mode;
    unsigned workers;
    enum pwhash_cost hash_cost;
    uint64_t auth_cache_entries; /* 0 = off */
    uint64_t auth_cache_ttl_us;  /* 0 = entries never expire */
    unsigned batch;
    unsigned max_inflight;
    unsigned max_queue;     /* --max-queue: jobs that may need argon2 waiting (per process) */
    unsigned max_conns;
    uint64_t idle_timeout_us; /* 0 = never */
    uint64_t handshake_timeout_us;    /* --handshake-timeout: HELLO..AUTH after the accept */
    unsigned max_unauth_conns;        /* per worker: connections in their handshake at once */
    unsigned max_unauth_conns_per_ip; /* ... of them from one address; 0 = no cap */
    uint64_t backend_timeout_us; /* --backend-timeout: one database read or write (and MySQL
                                  * connect) at most; also in backend.io_timeout_ms */
    struct opts_rate login_fail; /* --login-fail-limit: failed logins per username, shared by
                                  * every server2 on the database; also in backend.login_fail_* */
    enum log_level log_level;
    const char *secret_file; /* --secret-file: the link secret (linkauth.h) */
    bool insecure_no_secret; /* --insecure-no-secret: all-zero link key */
    /* as given, for s2_config_parse's checks after the flags */
    const char *backend_password_file;  /* --backend-password-file; NULL: the environment */
    const char *sentinel_password_file; /* --sentinel-password-file; NULL: the environment */
    const char *backend_tls_ca;         /* --backend-tls-ca; NULL: the system's CAs */
    const char *backend_tls_cert;       /* --backend-tls-cert, or NULL */
    const char *backend_tls_key;        /* --backend-tls-key, or NULL */
    int redis_wait;                     /* --redis-wait; -1: the default for the URL */
    unsigned verbose;                   /* -v given this many times: added to log_level */
};

enum s2_config_result {
    S2_CONFIG_ERROR = -1, /* err says what is wrong: print it, exit 2 */
    S2_CONFIG_OK = 0,
    S2_CONFIG_EXIT = 1, /* --help or --version was printed: exit 0 */
};

/* Every flag of server2: names, kinds, bounds, destinations, help (common/flagtab.h). */
extern const struct flagtab_prog s2_config_flags;

void s2_config_defaults(struct s2_config *c);
/* Parses argv over the defaults already in c; err has S2_CONFIG_ERR_LEN bytes. */
enum s2_config_result s2_config_parse(struct s2_config *c, int argc, char **argv, char *err);
void s2_config_usage(FILE *out);
/*
 * --backend URL's parser (a flagtab_fn on a struct s2_config, or a struct that begins with
 * one): the URL is masked in argv (ps) whether or not it parses; no password may be in it.
 */
int s2_config_on_backend(void *cfg, const char *arg, char *err);
/*
 * After the flags: the database settings into c->backend (--redis-wait, --backend-timeout,
 * --login-fail-limit, the passwords' files or environment, --backend-tls-*). 0, or -1 with
 * err (S2_CONFIG_ERR_LEN bytes). Shared by server2 and `server2 admin` (admin.h).
 */
int s2_config_backend_finish(struct s2_config *c, char *err);
/* One line with every effective setting, the backend password masked. */
void s2_config_describe(const struct s2_config *c, char *out, size_t cap);
const char *s2_mode_name(enum s2_mode m);

#endif /* S2_CONFIG_H */
