/*
 * backend_url.h - parses server2's --backend URL into a struct backend_url. Pure functions,
 * thread-safe. Forms:
 *   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]       TCP, PORT default 6379, DB default 0
 *   redis://[[USER]:PASSWORD@]/path/to/redis.sock[?db=N]   unix socket (note the third '/')
 *   rediss://...                                     the same over TLS (not a unix socket)
 *   redis-sentinel://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/MASTER[?db=N]
 *                  Redis Sentinels (PORT default 26379) that name the primary of MASTER;
 *                  USER and PASSWORD are the data nodes' (the Sentinels' own password is
 *                  sentinel_password, never in the URL: server2 reads it from a file)
 *   mysql://USER[:PASSWORD]@HOST[:PORT]/DB          TCP, PORT default 3306 (mariadb:// too)
 *   mysql://USER[:PASSWORD]@HOST[:PORT],HOST[:PORT]...]/DB   several nodes of one cluster
 *                  (Galera): tried in order, the next one on a lost connection
 *   rediss-sentinel://...  Sentinels and data nodes over TLS
 *   mysql://USER[:PASSWORD]@localhost/DB?socket=/path/mysqld.sock   unix socket
 *   mysql://...?tls=on                             TLS required, the server's certificate checked
 * HOST may be a name, an IPv4 literal or a bracketed IPv6 literal. USER and PASSWORD may use
 * %XX escapes (needed for '?' in a password). The password is never written into an error
 * message; backend_url_mask and backend_url_describe hide it for logs.
 */
#ifndef BACKEND_URL_H
#define BACKEND_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BACKEND_URL_ERR_LEN 256
#define BACKEND_URL_HOST_MAX 255
#define BACKEND_URL_SOCK_MAX 107 /* sun_path is 108 bytes with the NUL */
#define BACKEND_URL_USER_MAX 64
#define BACKEND_URL_PASS_MAX 256
#define BACKEND_URL_DB_MAX 64
#define BACKEND_URL_REDIS_DB_MAX 1000000
#define BACKEND_URL_HOSTS_MAX 8       /* Sentinels, or MySQL nodes */
#define BACKEND_URL_MASTER_MAX 64     /* a Sentinel master name */
#define BACKEND_URL_IO_TIMEOUT_MS 2000 /* io_timeout_ms's default */

enum backend_kind {
    BACKEND_REDIS = 1,
    BACKEND_MYSQL = 2,
};

struct backend_host {
    char host[BACKEND_URL_HOST_MAX + 1]; /* IPv6 without brackets */
    uint16_t port;
};

struct backend_url {
    enum backend_kind kind;
    char host[BACKEND_URL_HOST_MAX + 1];   /* TCP host (IPv6 without brackets); "" for redis unix;
                                              with several hosts, the first */
    uint16_t port;                         /* TCP port */
    struct backend_host hosts[BACKEND_URL_HOSTS_MAX]; /* every TCP host, in the URL's order */
    unsigned nhosts;                       /* 0 for a unix socket */
    bool sentinel;                         /* redis-sentinel://: hosts are Sentinels */
    bool tls;                              /* rediss://, rediss-sentinel://, mysql ?tls=on */
    const char *tls_ca;                    /* server2's --backend-tls-ca (NULL: the system's
                                              CAs); not in the URL */
    const char *tls_cert;                  /* --backend-tls-cert/--backend-tls-key: a client
                                              certificate offered, or NULL */
    const char *tls_key;
    char master[BACKEND_URL_MASTER_MAX + 1]; /* the Sentinels' name of the primary */
    unsigned redis_wait;                   /* WAIT for this many replicas after a write
                                              (server2's --redis-wait; not in the URL) */
    bool redis_wait_auto;                  /* redis:// without --redis-wait: WAIT 1 if the
                                              node lists replicas (ROLE, asked at connect and
                                              then at most once a second), else 0 */
    unsigned io_timeout_ms;                /* bound of one read or write, and of a MySQL
                                              connect (server2's --backend-timeout; not in
                                              the URL; BACKEND_URL_IO_TIMEOUT_MS by default) */
    char socket[BACKEND_URL_SOCK_MAX + 1]; /* unix socket path, or "" for TCP */
    char user[BACKEND_URL_USER_MAX + 1];   /* mysql: required; redis: optional ACL user */
    char password[BACKEND_URL_PASS_MAX + 1]; /* never log it */
    bool has_password;
    char sentinel_password[BACKEND_URL_PASS_MAX + 1]; /* the Sentinels' (AUTH to each one
                                                         before asking); never log it */
    bool has_sentinel_password;
    char db[BACKEND_URL_DB_MAX + 1]; /* mysql database name */
    unsigned redis_db;               /* redis SELECT index */
    unsigned login_fail_burst;       /* server2's --login-fail-limit N/DUR (not in the URL): N,
                                        0 = off */
    unsigned login_fail_interval_ms; /* ... DUR / N: one failed login more allowed per this */
};

/*
 * Parses s into *out. Returns 0, or -1 with a one-line reason in err (BACKEND_URL_ERR_LEN
 * bytes) that never contains the password.
 */
int backend_url_parse(const char *s, struct backend_url *out, char *err);

/*
 * Finds the password in a URL string, even a malformed one, erring on the side of hiding too
 * much: sets *off and *len and returns true if there is something to hide.
 */
bool backend_url_password_span(const char *s, size_t *off, size_t *len);

/* Copies s into out (cap bytes) with the password, if any, replaced by "***". */
void backend_url_mask(const char *s, char *out, size_t cap);

/* Overwrites the password in s with '*' in place (used on argv so `ps` does not show it). */
void backend_url_mask_inplace(char *s);

/* Formats u for logs, password shown as "***", e.g. "mysql://auth:***@127.0.0.1:3306/auth". */
void backend_url_describe(const struct backend_url *u, char *out, size_t cap);

/* Zeroes the passwords held in u. */
void backend_url_wipe(struct backend_url *u);

#endif /* BACKEND_URL_H */
