/*
 * config.c - see config.h. s1_config_flags lists every flag once; common/flagtab parses them
 * strictly (whole string, range, unit), reports the first problem as one line and stops; then
 * s1_config_parse checks the flags that depend on each other.
 */
#include "config.h"
#include "aioread.h"
#include "credcache.h"
#include "listing.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "flagtab.h"
#include "opts.h"

/* A duration as the flags take it ("60s", "250ms", "0") into buf, a char array. */
#define DUR(us, buf) flagtab_format_duration((us), (buf), sizeof(buf))

static unsigned default_threads(void)
{
    cpu_set_t set;
    long n;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

void s1_config_defaults(struct s1_config *c)
{
    memset(c, 0, sizeof(*c));
    c->listen = "127.0.0.1";
    c->port = 8080;
    c->root = NULL;
    c->prefetch = false;
    c->read_mode = S1_READ_DIRECT;
    c->pack = NULL;
    c->threads = default_threads();
    c->auth = "127.0.0.1:7001";
    c->authc.nconns = 2;
    c->authc.timeout_us = 5000000;
    c->authc.max_inflight = 1024;
    c->max_header_bytes = 8192;
    c->max_body = 16384;
    c->max_conns = 4096;
    c->header_timeout_us = 10000000;
    c->idle_timeout_us = 60000000;
    c->drain_timeout_us = 10000000;
    c->tls_ticket_rotate_us = 3600000000ull;
    c->access_log_format = ACCESSLOG_COMBINED;
    c->log_level = LOG_INFO;
    c->read_only = false;
    c->max_upload = 64u << 20;
    c->upload_memory = 256u << 20;
    c->upload_temp_max = 0; /* (after parsing: 1G, or --max-upload if larger) */
    c->upload_timeout_us = 60000000;
    c->send_timeout_us = 60000000;
    c->min_rate = 64u << 10;
    c->min_rate_grace_us = 5000000;
    c->min_rate_window_us = 10000000;
    c->upload_user_share = 25;
    c->user_quota = 0;
    c->store_max = 0;
    c->response_memory = 64u << 20;
    c->read_depth = 64;
    c->writable_root = false;
    c->sandbox_root = false;
    c->group_commit = true;
    c->commit_window_us = 1000;
    c->login_fail_user = (struct opts_rate){20, 60000000};
    c->login_fail_addr = (struct opts_rate){100, 60000000};
    c->signup = (struct opts_rate){10, 60000000};
    c->list_limit = (struct opts_rate){60, 60000000};
    c->ratelimit_entries = 65536;
    c->max_conns_per_ip = 256;
    c->private_uploads = false;
    c->max_list = LISTING_MAX_DEFAULT;
    c->auth_cache_entries = 0;
    c->auth_cache_ttl_us = 60ull * 1000000;
}

static void print_version(void)
{
    printf("server1 %s\ncompiler: %s\ncflags: %s\nlibevent: %s\n", PROJECT_VERSION, __VERSION__,
           PROJECT_CFLAGS, event_get_version());
}

/* One server2 of --auth: HOST:PORT or [V6]:PORT (arg[0..len)), resolved now into sv. */
static int parse_server2(const char *arg, size_t len, struct authclient_server *sv, char *err)
{
    char s[sizeof(sv->addr_str)];
    char host[256];
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res;
    const char *colon;
    const char *h = s;
    size_t hlen;
    uint64_t port;
    char perr[OPTS_ERR_LEN];
    int rc;

    if (len >= sizeof(s)) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--auth: '%.*s' is too long", 64, arg);
        return -1;
    }
    memcpy(s, arg, len);
    s[len] = '\0';
    colon = strrchr(s, ':');
    if (colon == NULL || colon == s) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--auth: '%s' is not HOST:PORT", s);
        return -1;
    }
    hlen = (size_t)(colon - s);
    if (s[0] == '[' && hlen >= 2 && s[hlen - 1] == ']') {
        h = s + 1;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host)) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--auth: '%s' is not HOST:PORT", s);
        return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (opts_parse_u64(colon + 1, 1, 65535, &port, perr) < 0) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--auth: port %s", perr);
        return -1;
    }
    rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--auth: cannot resolve '%s': %s", host,
                 gai_strerror(rc));
        return -1;
    }
    memcpy(&sv->addr, res->ai_addr, res->ai_addrlen);
    sv->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    memcpy(sv->addr_str, s, len + 1);
    return 0;
}

/* --auth: one or more server2s, comma-separated. */
static int parse_auth(struct s1_config *c, const char *s, char *err)
{
    const char *p = s;

    c->authc.nservers = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (c->authc.nservers == AUTHCLIENT_MAX_SERVERS) {
            snprintf(err, S1_CONFIG_ERR_LEN, "--auth: more than %d server2s",
                     AUTHCLIENT_MAX_SERVERS);
            return -1;
        }
        if (parse_server2(p, len, &c->authc.servers[c->authc.nservers], err) < 0)
            return -1;
        c->authc.nservers++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    c->auth = s;
    return 0;
}

static int on_auth(void *cfg, const char *arg, char *err)
{
    return parse_auth(cfg, arg, err);
}

/*
 * --metrics-listen ADDR:PORT ([V6]:PORT): where /metrics is served, apart from the public
 * port. Resolved when it is bound (main.c), as --listen is.
 */
static int on_metrics_listen(void *cfg, const char *arg, char *err)
{
    struct s1_config *c = cfg;
    const char *colon = strrchr(arg, ':');
    const char *h = arg;
    size_t hlen;
    uint64_t port;
    char perr[128];

    if (colon == NULL) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--metrics-listen: '%s' is not ADDR:PORT", arg);
        return -1;
    }
    hlen = (size_t)(colon - arg);
    if (hlen >= 2 && arg[0] == '[' && arg[hlen - 1] == ']') {
        h = arg + 1;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(c->metrics_host)) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--metrics-listen: '%s' is not ADDR:PORT", arg);
        return -1;
    }
    if (opts_parse_u64(colon + 1, 0, 65535, &port, perr) < 0) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--metrics-listen: port %s", perr);
        return -1;
    }
    memcpy(c->metrics_host, h, hlen);
    c->metrics_host[hlen] = '\0';
    c->metrics_port = (uint16_t)port;
    c->metrics_listen = arg;
    return 0;
}

/* -v: one level more verbose, in the order the flags come (a later --log-level wins). */
static int on_verbose(void *cfg, const char *arg, char *err)
{
    struct s1_config *c = cfg;

    (void)arg;
    (void)err;
    if (c->log_level < LOG_DEBUG)
        c->log_level = (enum log_level)(c->log_level + 1);
    return 0;
}

static void defaults_cb(void *cfg)
{
    s1_config_defaults(cfg);
}

static const struct flagtab_choice read_modes[] = {
    {"direct", S1_READ_DIRECT}, {"buffered", S1_READ_BUFFERED}, {NULL, 0}};
static const struct flagtab_choice on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
static const struct flagtab_choice signup_policies[] = {{"open", 0}, {"closed", 1}, {NULL, 0}};
static const struct flagtab_choice plain_http_modes[] = {{"open", S1_PLAIN_OPEN},
                                                         {"redirect", S1_PLAIN_REDIRECT},
                                                         {"no-credentials",
                                                          S1_PLAIN_NO_CREDENTIALS},
                                                         {NULL, 0}};
static const struct flagtab_choice access_log_formats[] = {{"common", ACCESSLOG_COMMON},
                                                           {"combined", ACCESSLOG_COMBINED},
                                                           {"json", ACCESSLOG_JSON},
                                                           {NULL, 0}};
static const struct flagtab_choice log_levels[] = {
    {"error", LOG_ERROR}, {"warn", LOG_WARN}, {"info", LOG_INFO}, {"debug", LOG_DEBUG}, {NULL, 0}};

#define S1(field) FLAGTAB_DST(struct s1_config, field)
#define SEC 1000000ull

static const struct flagtab_flag s1_flags[] = {
    {FLAGTAB_STR, "listen", 'l', .arg = "ADDR", S1(listen), .help = "address to listen on"},
    {FLAGTAB_U64, "port", 'p', .arg = "N", .min = 0, .max = 65535, S1(port),
     .help = "port; 0 picks a free one"},
    {FLAGTAB_PATH, "root", 'r', .arg = "DIR", S1(root),
     .help = "directory of the files to serve (required)"},
    {FLAGTAB_SET, "prefetch", S1(prefetch), .def = "off",
     .help = "read every file under --root into memory at start, with O_DIRECT"},
    {FLAGTAB_SET, "no-prefetch", S1(prefetch), .flags = FLAGTAB_F_CLEAR,
     .help = "read files per request (the default)"},
    {FLAGTAB_ENUM, "read", S1(read_mode), .choices = read_modes,
     .help = "without --prefetch: per request, O_DIRECT into memory, or the page cache with "
             "sendfile"},
    {FLAGTAB_U64, "read-depth", .arg = "N", .max = AIOREAD_DEPTH_MAX, S1(read_depth),
     .help = "--read direct: reads of the disk in flight per worker thread (Linux AIO), the "
             "thread serving others meanwhile; 0: each read stops its thread until it is done"},
    {FLAGTAB_PATH, "pack", .arg = "PACK", S1(pack), .def = "none",
     .help = "serve the operator's files from this pack (s1pack build; docs/pack.md), read "
             "as --read says, instead of from the tree under --root, which keeps the upload "
             "store; not with --prefetch"},
    {FLAGTAB_PATH, "mime-types", .arg = "FILE", S1(mime_types),
     .def = "/etc/mime.types if present, else a built-in table of common types",
     .help = "Content-Type by file name extension, in the mime.types format"},
    {FLAGTAB_U64, "max-list", .arg = "N", .min = 1, .max = LISTING_MAX_LIMIT, S1(max_list),
     .help = "entries a listing of /files/DIR/ shows at most"},
    {FLAGTAB_U64, "threads", 't', .arg = "N", .min = 1, .max = 256, S1(threads), .def = "cores",
     .flags = FLAGTAB_F_RUNTIME, .help = "worker threads, one event loop each"},
    {FLAGTAB_CUSTOM, "auth", .arg = "HOST:PORT[,HOST:PORT...]", S1(auth), .fn = on_auth,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_DEFSTR,
     .help = "server2 addresses (up to 8): requests spread over those up; a VERIFY whose "
             "server2 fails is sent once more to another"},
    {FLAGTAB_U64, "auth-conns", .arg = "N", .min = 1, .max = 64, S1(authc.nconns),
     .help = "connections to each server2 per thread; times the number of server2s at most 64"},
    {FLAGTAB_DURATION, "auth-timeout", .arg = "DUR", .min = 1000, .max = 3600 * SEC,
     S1(authc.timeout_us), .help = "answer 503 if server2 has not replied in time"},
    {FLAGTAB_U64, "auth-max-inflight", .arg = "N", .min = 1, .max = 65535,
     S1(authc.max_inflight), .help = "requests in flight per server2 connection; beyond, 503"},
    {FLAGTAB_PATH, "auth-secret-file", .arg = "PATH", S1(auth_secret_file),
     .help = "required: the link secret shared with server2, >= 32 random bytes, mode 0600 "
             "(docs/protocol.md)"},
    {FLAGTAB_SET, "insecure-no-secret", S1(insecure_no_secret), .def = "off",
     .help = "run without --auth-secret-file (all-zero link key; only with a server2 started "
             "the same way)"},
    {FLAGTAB_SIZE, "max-header-bytes", .arg = "SZ", .min = 64, .max = 1u << 20,
     S1(max_header_bytes), .help = "request line + headers limit, else 431"},
    {FLAGTAB_SIZE, "max-body", .arg = "SZ", .min = 0, .max = 1u << 20, S1(max_body),
     .help = "request body limit, else 413"},
    {FLAGTAB_U64, "max-conns", .arg = "N", .min = 1, .max = 1000000, S1(max_conns),
     .help = "open client connections per process; beyond, 503 and close"},
    {FLAGTAB_DURATION, "header-timeout", .arg = "DUR", .min = 1000, .max = 3600 * SEC,
     S1(header_timeout_us), .help = "time to receive a whole request"},
    {FLAGTAB_DURATION, "idle-timeout", .arg = "DUR", .min = 1000, .max = 3600 * SEC,
     S1(idle_timeout_us), .help = "keep-alive idle and stalled-write limit"},
    {FLAGTAB_DURATION, "drain-timeout", .arg = "DUR", .min = 0, .max = 3600 * SEC,
     S1(drain_timeout_us), .help = "on SIGTERM/SIGINT, time to finish in-flight requests"},
    {FLAGTAB_SET, "read-only", S1(read_only),
     .help = "refuse PUT/DELETE (no upload store under --root)"},
    {FLAGTAB_SIZE, "max-upload", .arg = "SZ", .min = 0, .max = 1ull << 40, S1(max_upload),
     .help = "PUT body limit, else 413"},
    {FLAGTAB_SIZE, "upload-memory", .arg = "SZ", .min = 0, .max = 1ull << 40, S1(upload_memory),
     .help = "PUT bodies being received or committed are held in memory up to this total (each "
             "up to 16M), the rest in unnamed temp files"},
    {FLAGTAB_SIZE, "upload-temp-max", .arg = "SZ", .min = 1, .max = 1ull << 50,
     S1(upload_temp_max), .def = "1G, or --max-upload if larger", .flags = FLAGTAB_F_NORANGE,
     .help = "PUT bodies in temp files at once, in total, at least --max-upload; beyond, 503 + "
             "Retry-After"},
    {FLAGTAB_U64, "upload-user-share", .arg = "PCT", .min = 1, .max = 100,
     S1(upload_user_share),
     .help = "one account's PUT bodies may hold at most PCT% of --upload-memory (beyond: temp "
             "files) and of --upload-temp-max (beyond: 503 + Retry-After), but one body at a "
             "time always"},
    {FLAGTAB_DURATION, "upload-timeout", .arg = "DUR", .min = 1000, .max = 86400 * SEC,
     S1(upload_timeout_us),
     .help = "a PUT body must arrive within DUR + size / --min-rate of its acceptance, else 408"},
    {FLAGTAB_DURATION, "send-timeout", .arg = "DUR", .min = 1000, .max = 86400 * SEC,
     S1(send_timeout_us),
     .help = "a response must be taken within DUR + size / --min-rate, else the connection "
             "closes"},
    {FLAGTAB_SIZE, "min-rate", .arg = "SZ", .min = 1, .max = 1ull << 40, S1(min_rate),
     .help = "the slowest transfer, bytes per second: a PUT body (else 408) or a response (else "
             "reset) must move this much per second over every --min-rate-window once "
             "--min-rate-grace has passed"},
    {FLAGTAB_DURATION, "min-rate-grace", .arg = "DUR", .min = 0, .max = 3600 * SEC,
     S1(min_rate_grace_us), .help = "time a transfer has before --min-rate applies"},
    {FLAGTAB_DURATION, "min-rate-window", .arg = "DUR", .min = 4000, .max = 3600 * SEC,
     S1(min_rate_window_us), .flags = FLAGTAB_F_ZERO,
     .help = "the window --min-rate is judged over, sliding in quarters; 0: only the two "
             "deadlines above"},
    {FLAGTAB_SIZE, "user-quota", .arg = "SZ", .min = 0, .max = 1ull << 60, S1(user_quota),
     .flags = FLAGTAB_F_NORANGE,
     .help = "bytes of live uploads per account; beyond, 507; 0 = none"},
    {FLAGTAB_SIZE, "store-max", .arg = "SZ", .min = 0, .max = 1ull << 60, S1(store_max),
     .flags = FLAGTAB_F_NORANGE, .help = "bytes of live uploads in all; beyond, 507; 0 = none"},
    {FLAGTAB_SIZE, "response-memory", .arg = "SZ", .min = 1u << 20, .max = 1ull << 40,
     S1(response_memory),
     .help = "--read direct: buffers of responses being sent, per worker thread; beyond, 503"},
    {FLAGTAB_SET, "writable-root", S1(writable_root), .def = "off: 403",
     .help = "let uploads replace/delete files without an owner (the operator's files under "
             "--root)"},
    {FLAGTAB_SET, "sandbox-root", S1(sandbox_root), .def = "off: shown as their type says",
     .help = "serve the operator's own HTML, SVG, XML and JavaScript as uploads always are: a "
             "download, in a CSP sandbox"},
    {FLAGTAB_ENUM, "group-commit", S1(group_commit), .choices = on_off,
     .help = "make concurrent uploads durable with one flush"},
    {FLAGTAB_DURATION, "commit-window", .arg = "DUR", .min = 0, .max = SEC,
     S1(commit_window_us),
     .help = "with group commit, wait at most this long for uploads still being received"},
    {FLAGTAB_ENUM, "log-level", S1(log_level), .choices = log_levels,
     .flags = FLAGTAB_F_NOCASE, .help = "the least severe messages logged"},
    {FLAGTAB_CUSTOM, "verbose", 'v', .fn = on_verbose, .flags = FLAGTAB_F_REPEAT,
     .help = "one level more verbose (-v = debug)"},
    {FLAGTAB_PATH, "access-log", .arg = "PATH|-", S1(access_log), .def = "none",
     .help = "append a line per response (once it is sent, with the body bytes sent) and audit "
             "events (failed logins, account changes, 429s) to PATH, - for stdout; SIGUSR1 "
             "reopens it (logrotate); docs/operate.md, \"Access log\""},
    {FLAGTAB_ENUM, "access-log-format", S1(access_log_format), .choices = access_log_formats,
     .help = "common (CLF), combined (nginx's, + Referer and User-Agent) or json; each line ends "
             "with the duration in ms and the request id (also sent as X-Request-Id)"},
    {FLAGTAB_PATH, "tls-cert", .arg = "FILE", S1(tls_cert), .flags = FLAGTAB_F_NODEF,
     .help = "HTTPS: the certificate, PEM, the server's first and then its chain "
             "(docs/https.md); with --tls-key and --tls-port"},
    {FLAGTAB_PATH, "tls-key", .arg = "FILE", S1(tls_key), .flags = FLAGTAB_F_NODEF,
     .help = "HTTPS: the certificate's private key, PEM"},
    {FLAGTAB_U64, "tls-port", .arg = "N", .min = 0, .max = 65535, S1(tls_port),
     FLAGTAB_SEEN(struct s1_config, tls_port_set), .def = "none: no HTTPS",
     .help = "HTTPS port on the --listen address, beside --port; 0 picks a free one"},
    {FLAGTAB_CUSTOM, "metrics-listen", .arg = "ADDR:PORT", S1(metrics_listen),
     .fn = on_metrics_listen, .flags = FLAGTAB_F_TAKES_ARG,
     .def = "none: /metrics is served nowhere",
     .help = "serve /metrics (and /healthz) on a listener of their own, plain HTTP, nothing "
             "else there; the public ports answer /metrics 404. Give it a loopback or internal "
             "address (as 127.0.0.1:9101); port 0 picks a free one"},
    {FLAGTAB_DURATION, "hsts", .arg = "DUR", .min = 0, .max = 2 * 365 * 86400 * SEC,
     S1(hsts_us), .def = "0: none",
     .help = "with --tls-port, every HTTPS answer carries Strict-Transport-Security: max-age "
             "of DUR (whole seconds): browsers then use HTTPS only for that long; give it once "
             "HTTPS works for good (a browser remembers it)"},
    {FLAGTAB_ENUM, "plain-http", S1(plain_http), .choices = plain_http_modes,
     .help = "with --tls-port, what the plain --port does: open (everything, as without "
             "HTTPS); redirect (308 to the same target over HTTPS, /healthz excepted); "
             "no-credentials (a request with credentials, or one that creates, changes or "
             "deletes an account, is refused with 403 unless it comes from a loopback "
             "address: passwords only over HTTPS)"},
    {FLAGTAB_DURATION, "tls-ticket-rotate", .arg = "DUR", .min = SEC, .max = 86400 * SEC,
     S1(tls_ticket_rotate_us), .flags = FLAGTAB_F_ZERO,
     .help = "HTTPS: a new session-ticket key this often; tickets of the last 3 keys resume "
             "(docs/https.md); 0 = one key until exit"},
    {FLAGTAB_CUSTOM, "config", .arg = "FILE", .fn = flagtab_config,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_NODEF,
     .help = "read settings from FILE too, one per line: `KEY VALUE` or `KEY = VALUE`, KEY a "
             "flag's long name without --, a flag without a value alone (or = yes/no); '#' "
             "starts a comment line; flags on the command line override it"},
    {FLAGTAB_HELP, "help", 'h', .help = "this text"},
    {FLAGTAB_VERSION, "version", 'V', .help = "version and build flags"},

    {FLAGTAB_SECTION, "Per-client limits",
     .help = "each N/DUR is a burst of N, then N per DUR; 0 turns one off; beyond, 429 + "
             "Retry-After without asking server2; IPv6 clients count by their /64; a login "
             "waiting for server2 holds a token of both login limits, kept if the password was "
             "wrong."},
    {FLAGTAB_RATE, "login-fail-limit", .arg = "N/DUR", S1(login_fail_user),
     .help = "failed logins per username; once over, every login as that user waits"},
    {FLAGTAB_RATE, "login-fail-addr-limit", .arg = "N/DUR", S1(login_fail_addr),
     .help = "failed logins per client address"},
    {FLAGTAB_RATE, "signup-limit", .arg = "N/DUR", S1(signup),
     .help = "POST /users per client address"},
    {FLAGTAB_RATE, "list-limit", .arg = "N/DUR", S1(list_limit),
     .help = "listings (GET /files/DIR/) per account, once its credentials are accepted"},
    {FLAGTAB_U64, "ratelimit-entries", .arg = "N", .min = 64, .max = 1u << 24,
     S1(ratelimit_entries),
     .help = "keys each of those limits tracks; the least useful is forgotten beyond"},
    {FLAGTAB_U64, "max-conns-per-ip", .arg = "N", .min = 0, .max = 1000000,
     S1(max_conns_per_ip),
     .help = "open connections per client address; beyond, 503 and close; 0 = off"},
    {FLAGTAB_STR, "trusted-proxy", .arg = "LIST", S1(trusted_proxy), .def = "none",
     .help = "addresses or networks (10.0.0.2,10.1.0.0/16,::1) of load balancers that send the "
             "PROXY protocol (v1 or v2, as HAProxy's send-proxy-v2): a connection from one must "
             "begin with a header (else it is closed), and the client it names is the address "
             "every per-client limit counts; LOCAL (the balancer's own checks) keeps the "
             "balancer's, which --max-conns-per-ip does not count"},
    {FLAGTAB_ENUM, "signup", S1(signup_closed), .choices = signup_policies,
     .help = "open: anyone may create an account (POST /users); closed: POST /users is answered "
             "403 without asking server2, and accounts are made by the administrator "
             "(`server2 admin ... create`, docs/operate.md); password changes and deletions by "
             "the account itself work either way"},
    {FLAGTAB_SET, "private-uploads", S1(private_uploads),
     .def = "off: uploads are shared by all accounts",
     .help = "only the uploader may GET/HEAD an upload (others: 404)"},
    {FLAGTAB_U64, "auth-cache", .arg = "N", .min = 0, .max = CREDCACHE_MAX_ENTRIES,
     S1(auth_cache_entries),
     .help = "answer a GET whose user and password server2 accepted within --auth-cache-ttl "
             "without asking it again; N entries in all threads, 0 = off"},
    {FLAGTAB_DURATION, "auth-cache-ttl", .arg = "DUR", .min = 0, .max = 86400 * SEC,
     S1(auth_cache_ttl_us),
     .help = "how long an accepted password is trusted; 0 = off; server2 revokes sooner when "
             "an account changes"},
    {.kind = FLAGTAB_END},
};

const struct flagtab_prog s1_config_flags = {
    .name = "server1",
    .summary = "HTTP/1.1 file server whose logins server2 checks",
    .usage = "server1 --root DIR [options]",
    .about = "HTTP/1.1 file server: GET/HEAD /files/{name} (HTTP Basic, checked by server2), "
             "GET /files/ and /files/DIR/ (a listing), PUT/DELETE /files/{name} (uploads), "
             "POST /users (form: username, password), GET /healthz, GET /metrics.",
    .notes = "Sizes take k/M/G suffixes (x1024); durations take us/ms/s/m (default s).\n\n"
             "A PUT's credentials, name and quota are checked before its body is read; Expect: "
             "100-continue is answered with 100 Continue only then, and a refusal closes. "
             "PUT/DELETE are answered once the change is durable on disk.",
    .flags = s1_flags,
    .cfg_size = sizeof(struct s1_config),
    .defaults = defaults_cb,
    .version = print_version,
    .help_col = 29,
};

void s1_config_usage(FILE *out)
{
    flagtab_usage(&s1_config_flags, out);
}

enum s1_config_result s1_config_parse(struct s1_config *c, int argc, char **argv, char *err)
{
    enum flagtab_result rc = flagtab_parse(&s1_config_flags, c, argc, argv, err);

    if (rc != FLAGTAB_OK)
        return rc == FLAGTAB_EXIT ? S1_CONFIG_EXIT : S1_CONFIG_ERROR;

    if (c->root == NULL) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--root DIR is required (see --help)");
        return S1_CONFIG_ERROR;
    }
    if (c->pack != NULL && c->prefetch) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--pack and --prefetch exclude each other");
        return S1_CONFIG_ERROR;
    }
    if (c->authc.nservers == 0 && parse_auth(c, c->auth, err) < 0)
        return S1_CONFIG_ERROR;
    if (c->authc.nconns * c->authc.nservers > AUTHCLIENT_MAX_CONNS) {
        snprintf(err, S1_CONFIG_ERR_LEN,
                 "--auth-conns %u times %u server2s is over %d connections per thread",
                 c->authc.nconns, c->authc.nservers, AUTHCLIENT_MAX_CONNS);
        return S1_CONFIG_ERROR;
    }
    if (c->auth_secret_file == NULL && !c->insecure_no_secret) {
        snprintf(err, S1_CONFIG_ERR_LEN,
                 "--auth-secret-file PATH is required (or --insecure-no-secret; see --help)");
        return S1_CONFIG_ERROR;
    }
    if (c->auth_secret_file != NULL && c->insecure_no_secret) {
        snprintf(err, S1_CONFIG_ERR_LEN,
                 "--auth-secret-file and --insecure-no-secret exclude each other");
        return S1_CONFIG_ERROR;
    }
    if ((c->tls_cert != NULL) != (c->tls_key != NULL) ||
        (c->tls_cert != NULL) != c->tls_port_set) {
        snprintf(err, S1_CONFIG_ERR_LEN, "HTTPS needs --tls-cert, --tls-key and --tls-port "
                 "together: %s is missing",
                 c->tls_cert == NULL ? "--tls-cert" : c->tls_key == NULL ? "--tls-key"
                                                                         : "--tls-port");
        return S1_CONFIG_ERROR;
    }
    if (c->trusted_proxy != NULL) {
        char why[NET_ERR_LEN];
        if (net_cidrs_parse(c->trusted_proxy, &c->trusted, why) < 0) {
            snprintf(err, S1_CONFIG_ERR_LEN, "--trusted-proxy: %s", why);
            return S1_CONFIG_ERROR;
        }
    }
    if (c->hsts_us != 0 && !c->tls_port_set) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--hsts needs --tls-port");
        return S1_CONFIG_ERROR;
    }
    if (c->plain_http != S1_PLAIN_OPEN && !c->tls_port_set) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--plain-http other than open needs --tls-port");
        return S1_CONFIG_ERROR;
    }
    if (c->tls_port_set && c->tls_port != 0 && c->tls_port == c->port) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--tls-port and --port are both %u", c->port);
        return S1_CONFIG_ERROR;
    }
    if (c->upload_temp_max == 0) {
        c->upload_temp_max = 1ull << 30;
        if (c->max_upload > c->upload_temp_max)
            c->upload_temp_max = c->max_upload;
    } else if (c->upload_temp_max < c->max_upload) {
        snprintf(err, S1_CONFIG_ERR_LEN,
                 "--upload-temp-max must be at least --max-upload (%llu), or no upload of that "
                 "size could ever be received",
                 (unsigned long long)c->max_upload);
        return S1_CONFIG_ERROR;
    }
    return S1_CONFIG_OK;
}

enum files_mode s1_config_files_mode(const struct s1_config *c)
{
    if (c->prefetch)
        return FILES_PREFETCH;
    return c->read_mode == S1_READ_BUFFERED ? FILES_BUFFERED : FILES_DIRECT;
}

void s1_config_log(const struct s1_config *c)
{
    char t1[32];
    char t2[32];
    char t3[32];
    char t4[32];
    char t5[32];
    char r1[48];
    char r2[48];
    char r3[48];
    char r4[48];

    log_info("config: listen=%s port=%u root=%s files=%s threads=%u auth=%s auth-conns=%u "
             "auth-timeout=%s auth-max-inflight=%u max-header-bytes=%zu max-body=%zu "
             "max-conns=%u header-timeout=%s idle-timeout=%s drain-timeout=%s uploads=%s "
             "max-upload=%llu upload-memory=%llu writable-root=%s sandbox-root=%s "
             "group-commit=%s commit-window=%s",
             c->listen, c->port, c->root,
             c->prefetch ? "prefetch"
                         : (c->read_mode == S1_READ_BUFFERED ? "buffered" : "direct"),
             c->threads, c->auth, c->authc.nconns, DUR(c->authc.timeout_us, t1),
             c->authc.max_inflight, c->max_header_bytes, c->max_body, c->max_conns,
             DUR(c->header_timeout_us, t2), DUR(c->idle_timeout_us, t3),
             DUR(c->drain_timeout_us, t4), c->read_only ? "off" : "on",
             (unsigned long long)c->max_upload, (unsigned long long)c->upload_memory,
             c->writable_root ? "yes" : "no", c->sandbox_root ? "yes" : "no",
             c->group_commit ? "on" : "off", DUR(c->commit_window_us, t5));
    log_info("config: upload-temp-max=%llu upload-user-share=%u upload-timeout=%s "
             "send-timeout=%s min-rate=%llu min-rate-grace=%s min-rate-window=%s "
             "user-quota=%llu store-max=%llu response-memory=%llu read-depth=%u",
             (unsigned long long)c->upload_temp_max, c->upload_user_share,
             DUR(c->upload_timeout_us, t1), DUR(c->send_timeout_us, t2),
             (unsigned long long)c->min_rate, DUR(c->min_rate_grace_us, t3),
             DUR(c->min_rate_window_us, t4),
             (unsigned long long)c->user_quota, (unsigned long long)c->store_max,
             (unsigned long long)c->response_memory, c->read_depth);
    log_info("config: login-fail-limit=%s login-fail-addr-limit=%s signup-limit=%s "
             "list-limit=%s ratelimit-entries=%u max-conns-per-ip=%u private-uploads=%s "
             "auth-cache=%llu auth-cache-ttl=%s max-list=%zu signup=%s",
             opts_format_rate(&c->login_fail_user, r1, sizeof(r1)),
             opts_format_rate(&c->login_fail_addr, r2, sizeof(r2)),
             opts_format_rate(&c->signup, r3, sizeof(r3)),
             opts_format_rate(&c->list_limit, r4, sizeof(r4)), c->ratelimit_entries,
             c->max_conns_per_ip, c->private_uploads ? "yes" : "no",
             (unsigned long long)c->auth_cache_entries, DUR(c->auth_cache_ttl_us, t1),
             c->max_list, c->signup_closed ? "closed" : "open");
    if (c->tls_cert != NULL)
        log_info("config: tls-port=%u tls-cert=%s tls-key=%s hsts=%s plain-http=%s",
                 c->tls_port, c->tls_cert, c->tls_key, DUR(c->hsts_us, t2),
                 c->plain_http == S1_PLAIN_REDIRECT         ? "redirect"
                 : c->plain_http == S1_PLAIN_NO_CREDENTIALS ? "no-credentials"
                                                            : "open");
    if (c->trusted_proxy != NULL)
        log_info("config: trusted-proxy=%s", c->trusted_proxy);
    if (c->pack != NULL)
        log_info("config: pack=%s", c->pack);
    if (c->access_log != NULL)
        log_info("config: access-log=%s access-log-format=%s", c->access_log,
                 c->access_log_format == ACCESSLOG_JSON     ? "json"
                 : c->access_log_format == ACCESSLOG_COMMON ? "common"
                                                            : "combined");
}
