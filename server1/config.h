/*
 * config.h - server1's configuration: defaults, the flag table (common/flagtab.h: parsing,
 * --help, man page and docs all come from it), validation, and the summary logged at start.
 * Built once by main; immutable (and shared read-only by every thread) afterwards.
 */
#ifndef S1_CONFIG_H
#define S1_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accesslog.h"
#include "authclient.h"
#include "files.h"
#include "flagtab.h"
#include "log.h"
#include "ratelimit.h"

#define S1_CONFIG_ERR_LEN FLAGTAB_ERR_LEN

/* --plain-http: what the plain port does once there is an HTTPS one */
enum s1_plain_http {
    S1_PLAIN_OPEN,           /* everything, as without HTTPS */
    S1_PLAIN_REDIRECT,       /* 308 to the same target on HTTPS (but /healthz) */
    S1_PLAIN_NO_CREDENTIALS, /* 403 to credentials and account requests but from loopback */
};

enum s1_read_mode {
    S1_READ_DIRECT,   /* O_DIRECT per request */
    S1_READ_BUFFERED, /* page cache + sendfile */
};

struct s1_config {
    const char *listen;          /* --listen */
    uint16_t port;               /* --port; 0 = ephemeral */
    const char *root;            /* --root */
    bool prefetch;               /* --prefetch */
    enum s1_read_mode read_mode; /* --read */
    unsigned read_depth;         /* --read-depth: direct reads in flight per worker (aioread) */
    const char *pack;            /* --pack PACK: the operator's files from it; NULL: none */
    const char *mime_types;      /* --mime-types FILE; NULL: /etc/mime.types if there */
    unsigned threads;            /* --threads */
    const char *auth;            /* --auth HOST:PORT */
    struct authclient_config authc; /* resolved --auth, --auth-conns, --auth-timeout, ... */
    const char *auth_secret_file; /* --auth-secret-file; main loads it into authc.link_key */
    bool insecure_no_secret;      /* --insecure-no-secret: all-zero link key */
    size_t max_header_bytes;     /* --max-header-bytes */
    size_t max_body;             /* --max-body */
    unsigned max_conns;          /* --max-conns, per process */
    uint64_t header_timeout_us;  /* --header-timeout */
    uint64_t idle_timeout_us;    /* --idle-timeout */
    uint64_t drain_timeout_us;   /* --drain-timeout */
    enum log_level log_level;    /* --log-level, -v */
    bool read_only;              /* --read-only: no PUT/DELETE, no upload store */
    uint64_t max_upload;         /* --max-upload: PUT body limit */
    uint64_t upload_memory;      /* --upload-memory: bodies held in memory, in total */
    uint64_t upload_temp_max;    /* --upload-temp-max: bodies in temp files, in total */
    uint64_t upload_timeout_us;  /* --upload-timeout: a body's time, plus size / min_rate */
    uint64_t send_timeout_us;    /* --send-timeout: a response's time, plus size / min_rate */
    uint64_t min_rate;           /* --min-rate: bytes per second a transfer may take */
    uint64_t min_rate_grace_us;  /* --min-rate-grace: a transfer's time before the rate rule */
    uint64_t min_rate_window_us; /* --min-rate-window: the rate is judged over it (0: off) */
    unsigned upload_user_share;  /* --upload-user-share: % of each upload budget per account */
    uint64_t user_quota;         /* --user-quota: live upload bytes per account (0: none) */
    uint64_t store_max;          /* --store-max: live upload bytes in all (0: none) */
    uint64_t response_memory;    /* --response-memory: direct-read buffers per worker */
    bool writable_root;          /* --writable-root: files without owner may be replaced */
    bool sandbox_root;           /* --sandbox-root: the operator's active files as uploads' */
    bool group_commit;           /* --group-commit on|off */
    uint64_t commit_window_us;   /* --commit-window: wait for company at most this long */
    /* per-client limits (ratelimit.h); a count of 0 turns one off */
    struct opts_rate login_fail_user; /* --login-fail-limit: failed logins per username */
    struct opts_rate login_fail_addr; /* --login-fail-addr-limit: ... per client address */
    struct opts_rate signup;          /* --signup-limit: account creations per address */
    struct opts_rate list_limit;      /* --list-limit: listings per account */
    unsigned ratelimit_entries;            /* --ratelimit-entries: keys each limit tracks */
    unsigned max_conns_per_ip;             /* --max-conns-per-ip: open connections per address */
    enum s1_plain_http plain_http;         /* --plain-http */
    uint64_t hsts_us;                      /* --hsts: Strict-Transport-Security max-age, 0 off */
    const char *trusted_proxy;             /* --trusted-proxy, as given (NULL: none) */
    struct net_cidrs trusted;              /* ... parsed: who may send a PROXY header */
    bool private_uploads;                  /* --private-uploads: only the owner reads an upload */
    bool signup_closed;                    /* --signup closed: POST /users answered 403 */
    size_t max_list;                       /* --max-list: entries of a listing, at most */
    uint64_t auth_cache_entries;           /* --auth-cache: in all threads; 0 = off */
    uint64_t auth_cache_ttl_us;            /* --auth-cache-ttl: 0 = off */
    /* HTTPS (tls.h): all three, or none */
    const char *tls_cert;        /* --tls-cert FILE: PEM, leaf first, then its chain */
    const char *tls_key;         /* --tls-key FILE: PEM private key of the leaf */
    uint16_t tls_port;           /* --tls-port; 0 = ephemeral */
    bool tls_port_set;           /* --tls-port was given */
    uint64_t tls_ticket_rotate_us; /* --tls-ticket-rotate: a new session-ticket key; 0 = never */
    /* --metrics-listen ADDR:PORT: /metrics and /healthz only, plain HTTP; NULL: no such
     * listener, and /metrics is served nowhere */
    const char *metrics_listen;
    char metrics_host[256];      /* ... parsed: the address (no brackets) */
    uint16_t metrics_port;       /* ... and the port; 0 = ephemeral */
    const char *access_log;      /* --access-log PATH, "-" = stdout; NULL: none */
    enum accesslog_format access_log_format; /* --access-log-format */
};

enum s1_config_result {
    S1_CONFIG_OK = 0,
    S1_CONFIG_EXIT = 1,   /* --help or --version was printed: exit 0 */
    S1_CONFIG_ERROR = -1, /* bad flag or value: one line in err, exit 2 */
};

/* Every flag of server1: names, kinds, bounds, destinations, help (common/flagtab.h). */
extern const struct flagtab_prog s1_config_flags;

void s1_config_defaults(struct s1_config *c);
/* Parses argv over the defaults in c, then checks the flags together; err: one line. */
enum s1_config_result s1_config_parse(struct s1_config *c, int argc, char **argv, char *err);
/* --help, from s1_config_flags. */
void s1_config_usage(FILE *out);
/* The files mode implied by --prefetch and --read. */
enum files_mode s1_config_files_mode(const struct s1_config *c);
/* Logs the effective configuration (info): one line, and one for the per-client limits. */
void s1_config_log(const struct s1_config *c);

#endif /* S1_CONFIG_H */
