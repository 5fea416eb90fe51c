/*
 * config.c - see config.h. Every value is parsed strictly (whole string, range, unit); the first
 * problem is reported as one line and parsing stops.
 */
#include "config.h"
#include "credcache.h"
#include "listing.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "opts.h"

enum {
    OPT_PREFETCH = 256,
    OPT_NO_PREFETCH,
    OPT_READ,
    OPT_MIME_TYPES,
    OPT_MAX_LIST,
    OPT_AUTH,
    OPT_AUTH_CONNS,
    OPT_AUTH_TIMEOUT,
    OPT_AUTH_MAX_INFLIGHT,
    OPT_AUTH_SECRET_FILE,
    OPT_INSECURE_NO_SECRET,
    OPT_MAX_HEADER_BYTES,
    OPT_MAX_BODY,
    OPT_MAX_CONNS,
    OPT_HEADER_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_DRAIN_TIMEOUT,
    OPT_LOG_LEVEL,
    OPT_READ_ONLY,
    OPT_MAX_UPLOAD,
    OPT_UPLOAD_MEMORY,
    OPT_WRITABLE_ROOT,
    OPT_SANDBOX_ROOT,
    OPT_GROUP_COMMIT,
    OPT_COMMIT_WINDOW,
    OPT_LOGIN_FAIL_LIMIT,
    OPT_LOGIN_FAIL_ADDR_LIMIT,
    OPT_SIGNUP_LIMIT,
    OPT_LIST_LIMIT,
    OPT_RATELIMIT_ENTRIES,
    OPT_MAX_CONNS_PER_IP,
    OPT_PRIVATE_UPLOADS,
    OPT_AUTH_CACHE,
    OPT_AUTH_CACHE_TTL,
    OPT_UPLOAD_TEMP_MAX,
    OPT_UPLOAD_TIMEOUT,
    OPT_SEND_TIMEOUT,
    OPT_MIN_RATE,
    OPT_MIN_RATE_GRACE,
    OPT_MIN_RATE_WINDOW,
    OPT_UPLOAD_USER_SHARE,
    OPT_USER_QUOTA,
    OPT_STORE_MAX,
    OPT_RESPONSE_MEMORY,
};

static const struct option long_opts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"port", required_argument, NULL, 'p'},
    {"root", required_argument, NULL, 'r'},
    {"prefetch", no_argument, NULL, OPT_PREFETCH},
    {"no-prefetch", no_argument, NULL, OPT_NO_PREFETCH},
    {"read", required_argument, NULL, OPT_READ},
    {"mime-types", required_argument, NULL, OPT_MIME_TYPES},
    {"max-list", required_argument, NULL, OPT_MAX_LIST},
    {"threads", required_argument, NULL, 't'},
    {"auth", required_argument, NULL, OPT_AUTH},
    {"auth-conns", required_argument, NULL, OPT_AUTH_CONNS},
    {"auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
    {"auth-max-inflight", required_argument, NULL, OPT_AUTH_MAX_INFLIGHT},
    {"auth-secret-file", required_argument, NULL, OPT_AUTH_SECRET_FILE},
    {"insecure-no-secret", no_argument, NULL, OPT_INSECURE_NO_SECRET},
    {"max-header-bytes", required_argument, NULL, OPT_MAX_HEADER_BYTES},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"read-only", no_argument, NULL, OPT_READ_ONLY},
    {"max-upload", required_argument, NULL, OPT_MAX_UPLOAD},
    {"upload-memory", required_argument, NULL, OPT_UPLOAD_MEMORY},
    {"writable-root", no_argument, NULL, OPT_WRITABLE_ROOT},
    {"sandbox-root", no_argument, NULL, OPT_SANDBOX_ROOT},
    {"group-commit", required_argument, NULL, OPT_GROUP_COMMIT},
    {"commit-window", required_argument, NULL, OPT_COMMIT_WINDOW},
    {"login-fail-limit", required_argument, NULL, OPT_LOGIN_FAIL_LIMIT},
    {"login-fail-addr-limit", required_argument, NULL, OPT_LOGIN_FAIL_ADDR_LIMIT},
    {"signup-limit", required_argument, NULL, OPT_SIGNUP_LIMIT},
    {"list-limit", required_argument, NULL, OPT_LIST_LIMIT},
    {"ratelimit-entries", required_argument, NULL, OPT_RATELIMIT_ENTRIES},
    {"max-conns-per-ip", required_argument, NULL, OPT_MAX_CONNS_PER_IP},
    {"private-uploads", no_argument, NULL, OPT_PRIVATE_UPLOADS},
    {"auth-cache", required_argument, NULL, OPT_AUTH_CACHE},
    {"auth-cache-ttl", required_argument, NULL, OPT_AUTH_CACHE_TTL},
    {"upload-temp-max", required_argument, NULL, OPT_UPLOAD_TEMP_MAX},
    {"upload-timeout", required_argument, NULL, OPT_UPLOAD_TIMEOUT},
    {"send-timeout", required_argument, NULL, OPT_SEND_TIMEOUT},
    {"min-rate", required_argument, NULL, OPT_MIN_RATE},
    {"min-rate-grace", required_argument, NULL, OPT_MIN_RATE_GRACE},
    {"min-rate-window", required_argument, NULL, OPT_MIN_RATE_WINDOW},
    {"upload-user-share", required_argument, NULL, OPT_UPLOAD_USER_SHARE},
    {"user-quota", required_argument, NULL, OPT_USER_QUOTA},
    {"store-max", required_argument, NULL, OPT_STORE_MAX},
    {"response-memory", required_argument, NULL, OPT_RESPONSE_MEMORY},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

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

static const char *dur(uint64_t us, char *buf, size_t len)
{
    if (us % 1000000 == 0)
        snprintf(buf, len, "%" PRIu64 "s", us / 1000000);
    else if (us % 1000 == 0)
        snprintf(buf, len, "%" PRIu64 "ms", us / 1000);
    else
        snprintf(buf, len, "%" PRIu64 "us", us);
    return buf;
}

void s1_config_usage(FILE *out)
{
    struct s1_config d;
    char t1[32];
    char t2[32];
    char t3[32];
    char t4[32];
    char t5[32];
    char t6[32];
    char t7[32];
    char r1[48];
    char r2[48];
    char r3[48];
    char r4[48];
    char t_ttl[32];

    s1_config_defaults(&d);
    fprintf(out,
            "usage: server1 --root DIR [options]\n"
            "HTTP/1.1 file server: GET/HEAD /files/{name} (HTTP Basic, checked by server2),\n"
            "GET /files/ and /files/DIR/ (a listing), PUT/DELETE /files/{name} (uploads),\n"
            "POST /users (form: username, password), GET /healthz, GET /metrics.\n"
            "\n"
            "  -l, --listen ADDR          address to listen on (default %s)\n"
            "  -p, --port N               port; 0 picks a free one (default %u)\n"
            "  -r, --root DIR             directory of the files to serve (required)\n"
            "      --prefetch             read every file under --root into memory at start,\n"
            "                             with O_DIRECT (default: off)\n"
            "      --no-prefetch          read files per request (the default)\n"
            "      --read direct|buffered without --prefetch: per request, O_DIRECT into memory,\n"
            "                             or the page cache with sendfile (default direct)\n"
            "      --mime-types FILE      Content-Type by file name extension, in the mime.types\n"
            "                             format (default /etc/mime.types if present, else a\n"
            "                             built-in table of common types)\n"
            "      --max-list N           entries a listing of /files/DIR/ shows at most\n"
            "                             (default %zu, at most %u)\n"
            "  -t, --threads N            worker threads, one event loop each (default %u = "
            "cores)\n"
            "      --auth HOST:PORT[,HOST:PORT...]  server2 addresses (up to 8): requests\n"
            "                             spread over those up; a VERIFY whose server2 fails\n"
            "                             is sent once more to another (default %s)\n"
            "      --auth-conns N         connections to each server2 per thread; times the\n"
            "                             server2s at most 64 (default %u)\n"
            "      --auth-timeout DUR     answer 503 if server2 has not replied in time "
            "(default %s)\n"
            "      --auth-max-inflight N  requests in flight per server2 connection; beyond, "
            "503\n"
            "                             (default %u)\n"
            "      --auth-secret-file PATH  required: the link secret shared with server2,\n"
            "                             >= 32 random bytes, mode 0600 (common/PROTOCOL.md)\n"
            "      --insecure-no-secret   run without --auth-secret-file (all-zero link key;\n"
            "                             only with a server2 started the same way; off)\n"
            "      --max-header-bytes SZ  request line + headers limit, else 431 (default %zu)\n"
            "      --max-body SZ          request body limit, else 413 (default %zu)\n"
            "      --max-conns N          open client connections per process; beyond, 503 and\n"
            "                             close (default %u)\n"
            "      --header-timeout DUR   time to receive a whole request (default %s)\n"
            "      --idle-timeout DUR     keep-alive idle and stalled-write limit (default %s)\n"
            "      --drain-timeout DUR    on SIGTERM/SIGINT, time to finish in-flight requests\n"
            "                             (default %s)\n"
            "      --read-only            refuse PUT/DELETE (no upload store under --root)\n"
            "      --max-upload SZ        PUT body limit, else 413 (default %s)\n"
            "      --upload-memory SZ     PUT bodies being received or committed are held in\n"
            "                             memory up to this total (each up to 16M), the rest\n"
            "                             in unnamed temp files (default %s)\n"
            "      --upload-temp-max SZ   PUT bodies in temp files at once, in total; beyond,\n"
            "                             503 + Retry-After (default 1G, or --max-upload)\n"
            "      --upload-user-share PCT  one account's PUT bodies may hold at most PCT%% of\n"
            "                             --upload-memory (beyond: temp files) and of\n"
            "                             --upload-temp-max (beyond: 503 + Retry-After), but\n"
            "                             one body at a time always (default %u)\n"
            "      --upload-timeout DUR   a PUT body must arrive within DUR + size / --min-rate\n"
            "                             of its acceptance, else 408 (default 60s)\n"
            "      --send-timeout DUR     a response must be taken within DUR + size /\n"
            "                             --min-rate, else the connection closes (default 60s)\n"
            "      --min-rate SZ          the slowest transfer, bytes per second: a PUT body\n"
            "                             (else 408) or a response (else reset) must move this\n"
            "                             much per second over every --min-rate-window once\n"
            "                             --min-rate-grace has passed (default 64k)\n"
            "      --min-rate-grace DUR   time a transfer has before --min-rate applies\n"
            "                             (default %s)\n"
            "      --min-rate-window DUR  the window --min-rate is judged over, sliding in\n"
            "                             quarters; 0: only the two deadlines above (default %s)\n"
            "      --user-quota SZ        bytes of live uploads per account; beyond, 507\n"
            "                             (default 0 = none)\n"
            "      --store-max SZ         bytes of live uploads in all; beyond, 507\n"
            "                             (default 0 = none)\n"
            "      --response-memory SZ   --read direct: buffers of responses being sent, per\n"
            "                             worker thread; beyond, 503 (default 64M)\n"
            "      --writable-root        let uploads replace/delete files without an owner\n"
            "                             (the operator's files under --root; default: 403)\n"
            "      --sandbox-root         serve the operator's own HTML, SVG, XML and JavaScript\n"
            "                             as uploads always are: a download, in a CSP sandbox\n"
            "                             (default: shown as their type says)\n"
            "      --group-commit on|off  make concurrent uploads durable with one flush\n"
            "                             (default %s)\n"
            "      --commit-window DUR    with group commit, wait at most this long for uploads\n"
            "                             still being received (default %s)\n"
            "      --log-level LEVEL      error, warn, info or debug (default info)\n"
            "  -v, --verbose              one level more verbose (-v = debug)\n"
            "  -h, --help                 this text\n"
            "  -V, --version              version and build flags\n"
            "\n"
            "Sizes take k/M/G suffixes (x1024); durations take us/ms/s/m (default s).\n"
            "A PUT's credentials, name and quota are checked before its body is read; Expect:\n"
            "100-continue is answered with 100 Continue only then, and a refusal closes.\n"
            "PUT/DELETE are answered once the change is durable on disk.\n",
            d.listen, d.port, (size_t)LISTING_MAX_DEFAULT, LISTING_MAX_LIMIT, d.threads, d.auth,
            d.authc.nconns,
            dur(d.authc.timeout_us, t1, sizeof(t1)), d.authc.max_inflight, d.max_header_bytes,
            d.max_body, d.max_conns, dur(d.header_timeout_us, t2, sizeof(t2)),
            dur(d.idle_timeout_us, t3, sizeof(t3)), dur(d.drain_timeout_us, t4, sizeof(t4)),
            "64M", "256M", d.upload_user_share, dur(d.min_rate_grace_us, t6, sizeof(t6)),
            dur(d.min_rate_window_us, t7, sizeof(t7)), d.group_commit ? "on" : "off",
            dur(d.commit_window_us, t5, sizeof(t5)));
    fprintf(out,
            "\nPer-client limits (N/DUR: a burst of N, then N per DUR; 0 turns one off; beyond,\n"
            "429 + Retry-After without asking server2; IPv6 clients count by their /64; a\n"
            "login waiting for server2 holds a token of both login limits, kept if the\n"
            "password was wrong):\n"
            "      --login-fail-limit N/DUR       failed logins per username; once over, every\n"
            "                                     login as that user waits (default %s)\n"
            "      --login-fail-addr-limit N/DUR  failed logins per client address (default %s)\n"
            "      --signup-limit N/DUR           POST /users per client address (default %s)\n"
            "      --list-limit N/DUR             listings (GET /files/DIR/) per account, once\n"
            "                                     its credentials are accepted (default %s)\n"
            "      --ratelimit-entries N          keys each of those limits tracks; the least\n"
            "                                     useful is forgotten beyond (default %u)\n"
            "      --max-conns-per-ip N           open connections per client address; beyond,\n"
            "                                     503 and close; 0 = off (default %u)\n"
            "      --private-uploads              only the uploader may GET/HEAD an upload\n"
            "                                     (others: 404); default: uploads are shared by\n"
            "                                     all accounts\n"
            "      --auth-cache N         answer a GET whose user and password server2 accepted\n"
            "                             within --auth-cache-ttl without asking it again; N\n"
            "                             entries in all threads, 0 = off (default %llu)\n"
            "      --auth-cache-ttl DUR   how long an accepted password is trusted; 0 = off;\n"
            "                             server2 revokes sooner when an account changes\n"
            "                             (default %s)\n",
            opts_format_rate(&d.login_fail_user, r1, sizeof(r1)),
            opts_format_rate(&d.login_fail_addr, r2, sizeof(r2)),
            opts_format_rate(&d.signup, r3, sizeof(r3)),
            opts_format_rate(&d.list_limit, r4, sizeof(r4)), d.ratelimit_entries,
            d.max_conns_per_ip, (unsigned long long)d.auth_cache_entries,
            dur(d.auth_cache_ttl_us, t_ttl, sizeof(t_ttl)));
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

static int value_error(char *err, const char *flag, const char *why)
{
    snprintf(err, S1_CONFIG_ERR_LEN, "%s: %s", flag, why);
    return -1;
}

static int parse_rate(const char *flag, const char *s, struct opts_rate *r, char *err)
{
    char rerr[OPTS_ERR_LEN];

    if (opts_parse_rate(s, r, rerr) < 0)
        return value_error(err, flag, rerr);
    return 0;
}

enum s1_config_result s1_config_parse(struct s1_config *c, int argc, char **argv, char *err)
{
    char perr[OPTS_ERR_LEN];
    uint64_t v;
    bool auth_set = false;
    int opt;

    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":l:p:r:t:vhV", long_opts, NULL)) != -1) {
        const char *flag = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        switch (opt) {
        case 'l':
            if (*optarg == '\0')
                return value_error(err, "--listen", "empty address");
            c->listen = optarg;
            break;
        case 'p':
            if (opts_parse_u64(optarg, 0, 65535, &v, perr) < 0)
                return value_error(err, "--port", perr);
            c->port = (uint16_t)v;
            break;
        case 'r':
            if (*optarg == '\0')
                return value_error(err, "--root", "empty path");
            c->root = optarg;
            break;
        case OPT_PREFETCH:
            c->prefetch = true;
            break;
        case OPT_NO_PREFETCH:
            c->prefetch = false;
            break;
        case OPT_MIME_TYPES:
            if (*optarg == '\0')
                return value_error(err, "--mime-types", "empty path");
            c->mime_types = optarg;
            break;
        case OPT_MAX_LIST:
            if (opts_parse_u64(optarg, 1, LISTING_MAX_LIMIT, &v, perr) < 0)
                return value_error(err, "--max-list", perr);
            c->max_list = (size_t)v;
            break;
        case OPT_READ:
            if (strcmp(optarg, "direct") == 0)
                c->read_mode = S1_READ_DIRECT;
            else if (strcmp(optarg, "buffered") == 0)
                c->read_mode = S1_READ_BUFFERED;
            else
                return value_error(err, "--read", "must be 'direct' or 'buffered'");
            break;
        case 't':
            if (opts_parse_u64(optarg, 1, 256, &v, perr) < 0)
                return value_error(err, "--threads", perr);
            c->threads = (unsigned)v;
            break;
        case OPT_AUTH:
            if (parse_auth(c, optarg, err) < 0)
                return S1_CONFIG_ERROR;
            auth_set = true;
            break;
        case OPT_AUTH_CONNS:
            if (opts_parse_u64(optarg, 1, 64, &v, perr) < 0)
                return value_error(err, "--auth-conns", perr);
            c->authc.nconns = (unsigned)v;
            break;
        case OPT_AUTH_TIMEOUT:
            if (opts_parse_duration_us(optarg, 1000, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--auth-timeout", perr);
            c->authc.timeout_us = v;
            break;
        case OPT_AUTH_MAX_INFLIGHT:
            if (opts_parse_u64(optarg, 1, 65535, &v, perr) < 0)
                return value_error(err, "--auth-max-inflight", perr);
            c->authc.max_inflight = (unsigned)v;
            break;
        case OPT_AUTH_SECRET_FILE:
            if (optarg[0] == '\0')
                return value_error(err, "--auth-secret-file", "empty path");
            c->auth_secret_file = optarg;
            break;
        case OPT_INSECURE_NO_SECRET:
            c->insecure_no_secret = true;
            break;
        case OPT_MAX_HEADER_BYTES:
            if (opts_parse_size(optarg, 64, 1u << 20, &v, perr) < 0)
                return value_error(err, "--max-header-bytes", perr);
            c->max_header_bytes = (size_t)v;
            break;
        case OPT_MAX_BODY:
            if (opts_parse_size(optarg, 0, 1u << 20, &v, perr) < 0)
                return value_error(err, "--max-body", perr);
            c->max_body = (size_t)v;
            break;
        case OPT_MAX_CONNS:
            if (opts_parse_u64(optarg, 1, 1000000, &v, perr) < 0)
                return value_error(err, "--max-conns", perr);
            c->max_conns = (unsigned)v;
            break;
        case OPT_HEADER_TIMEOUT:
            if (opts_parse_duration_us(optarg, 1000, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--header-timeout", perr);
            c->header_timeout_us = v;
            break;
        case OPT_IDLE_TIMEOUT:
            if (opts_parse_duration_us(optarg, 1000, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--idle-timeout", perr);
            c->idle_timeout_us = v;
            break;
        case OPT_DRAIN_TIMEOUT:
            if (opts_parse_duration_us(optarg, 0, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--drain-timeout", perr);
            c->drain_timeout_us = v;
            break;
        case OPT_LOG_LEVEL: {
            enum log_level lvl;
            if (log_level_parse(optarg, &lvl) < 0)
                return value_error(err, "--log-level", "must be error, warn, info or debug");
            c->log_level = lvl;
            break;
        }
        case OPT_READ_ONLY:
            c->read_only = true;
            break;
        case OPT_MAX_UPLOAD:
            if (opts_parse_size(optarg, 0, 1ull << 40, &v, perr) < 0)
                return value_error(err, "--max-upload", perr);
            c->max_upload = v;
            break;
        case OPT_UPLOAD_MEMORY:
            if (opts_parse_size(optarg, 0, 1ull << 40, &v, perr) < 0)
                return value_error(err, "--upload-memory", perr);
            c->upload_memory = v;
            break;
        case OPT_WRITABLE_ROOT:
            c->writable_root = true;
            break;
        case OPT_SANDBOX_ROOT:
            c->sandbox_root = true;
            break;
        case OPT_GROUP_COMMIT:
            if (strcmp(optarg, "on") == 0)
                c->group_commit = true;
            else if (strcmp(optarg, "off") == 0)
                c->group_commit = false;
            else
                return value_error(err, "--group-commit", "must be 'on' or 'off'");
            break;
        case OPT_COMMIT_WINDOW:
            if (opts_parse_duration_us(optarg, 0, 1000000, &v, perr) < 0)
                return value_error(err, "--commit-window", perr);
            c->commit_window_us = v;
            break;
        case OPT_LOGIN_FAIL_LIMIT:
            if (parse_rate("--login-fail-limit", optarg, &c->login_fail_user, err) < 0)
                return S1_CONFIG_ERROR;
            break;
        case OPT_LOGIN_FAIL_ADDR_LIMIT:
            if (parse_rate("--login-fail-addr-limit", optarg, &c->login_fail_addr, err) < 0)
                return S1_CONFIG_ERROR;
            break;
        case OPT_SIGNUP_LIMIT:
            if (parse_rate("--signup-limit", optarg, &c->signup, err) < 0)
                return S1_CONFIG_ERROR;
            break;
        case OPT_LIST_LIMIT:
            if (parse_rate("--list-limit", optarg, &c->list_limit, err) < 0)
                return S1_CONFIG_ERROR;
            break;
        case OPT_RATELIMIT_ENTRIES:
            if (opts_parse_u64(optarg, 64, 1u << 24, &v, perr) < 0)
                return value_error(err, "--ratelimit-entries", perr);
            c->ratelimit_entries = (unsigned)v;
            break;
        case OPT_MAX_CONNS_PER_IP:
            if (opts_parse_u64(optarg, 0, 1000000, &v, perr) < 0)
                return value_error(err, "--max-conns-per-ip", perr);
            c->max_conns_per_ip = (unsigned)v;
            break;
        case OPT_AUTH_CACHE:
            if (opts_parse_u64(optarg, 0, CREDCACHE_MAX_ENTRIES, &v, perr) < 0)
                return value_error(err, "--auth-cache", perr);
            c->auth_cache_entries = v;
            break;
        case OPT_AUTH_CACHE_TTL:
            if (opts_parse_duration_us(optarg, 0, 86400000000ull, &v, perr) < 0)
                return value_error(err, "--auth-cache-ttl", perr);
            c->auth_cache_ttl_us = v;
            break;
        case OPT_PRIVATE_UPLOADS:
            c->private_uploads = true;
            break;
        case OPT_UPLOAD_TEMP_MAX:
            if (opts_parse_size(optarg, 1, 1ull << 50, &v, perr) < 0)
                return value_error(err, "--upload-temp-max", perr);
            c->upload_temp_max = v;
            break;
        case OPT_UPLOAD_TIMEOUT:
            if (opts_parse_duration_us(optarg, 1000, 86400000000ull, &v, perr) < 0)
                return value_error(err, "--upload-timeout", perr);
            c->upload_timeout_us = v;
            break;
        case OPT_SEND_TIMEOUT:
            if (opts_parse_duration_us(optarg, 1000, 86400000000ull, &v, perr) < 0)
                return value_error(err, "--send-timeout", perr);
            c->send_timeout_us = v;
            break;
        case OPT_MIN_RATE:
            if (opts_parse_size(optarg, 1, 1ull << 40, &v, perr) < 0)
                return value_error(err, "--min-rate", perr);
            c->min_rate = v;
            break;
        case OPT_MIN_RATE_GRACE:
            if (opts_parse_duration_us(optarg, 0, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--min-rate-grace", perr);
            c->min_rate_grace_us = v;
            break;
        case OPT_MIN_RATE_WINDOW:
            if (strcmp(optarg, "0") == 0)
                v = 0;
            else if (opts_parse_duration_us(optarg, 4000, 3600000000ull, &v, perr) < 0)
                return value_error(err, "--min-rate-window", perr);
            c->min_rate_window_us = v;
            break;
        case OPT_UPLOAD_USER_SHARE:
            if (opts_parse_u64(optarg, 1, 100, &v, perr) < 0)
                return value_error(err, "--upload-user-share", perr);
            c->upload_user_share = (unsigned)v;
            break;
        case OPT_USER_QUOTA:
            if (opts_parse_size(optarg, 0, 1ull << 60, &v, perr) < 0)
                return value_error(err, "--user-quota", perr);
            c->user_quota = v;
            break;
        case OPT_STORE_MAX:
            if (opts_parse_size(optarg, 0, 1ull << 60, &v, perr) < 0)
                return value_error(err, "--store-max", perr);
            c->store_max = v;
            break;
        case OPT_RESPONSE_MEMORY:
            if (opts_parse_size(optarg, 1u << 20, 1ull << 40, &v, perr) < 0)
                return value_error(err, "--response-memory", perr);
            c->response_memory = v;
            break;
        case 'v':
            if (c->log_level < LOG_DEBUG)
                c->log_level = (enum log_level)(c->log_level + 1);
            break;
        case 'h':
            s1_config_usage(stdout);
            return S1_CONFIG_EXIT;
        case 'V':
            print_version();
            return S1_CONFIG_EXIT;
        case ':':
            snprintf(err, S1_CONFIG_ERR_LEN, "%s needs a value (see --help)", flag);
            return S1_CONFIG_ERROR;
        default:
            if (optopt != 0 && optopt < 256)
                snprintf(err, S1_CONFIG_ERR_LEN, "unknown option '-%c' (see --help)", optopt);
            else
                snprintf(err, S1_CONFIG_ERR_LEN, "unknown option '%s' (see --help)", flag);
            return S1_CONFIG_ERROR;
        }
    }
    if (optind < argc) {
        snprintf(err, S1_CONFIG_ERR_LEN, "unexpected argument '%s' (see --help)", argv[optind]);
        return S1_CONFIG_ERROR;
    }
    if (c->root == NULL) {
        snprintf(err, S1_CONFIG_ERR_LEN, "--root DIR is required (see --help)");
        return S1_CONFIG_ERROR;
    }
    if (!auth_set && parse_auth(c, c->auth, err) < 0)
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
             c->threads, c->auth, c->authc.nconns, dur(c->authc.timeout_us, t1, sizeof(t1)),
             c->authc.max_inflight, c->max_header_bytes, c->max_body, c->max_conns,
             dur(c->header_timeout_us, t2, sizeof(t2)), dur(c->idle_timeout_us, t3, sizeof(t3)),
             dur(c->drain_timeout_us, t4, sizeof(t4)), c->read_only ? "off" : "on",
             (unsigned long long)c->max_upload, (unsigned long long)c->upload_memory,
             c->writable_root ? "yes" : "no", c->sandbox_root ? "yes" : "no",
             c->group_commit ? "on" : "off", dur(c->commit_window_us, t5, sizeof(t5)));
    log_info("config: upload-temp-max=%llu upload-user-share=%u upload-timeout=%s "
             "send-timeout=%s min-rate=%llu min-rate-grace=%s min-rate-window=%s "
             "user-quota=%llu store-max=%llu response-memory=%llu",
             (unsigned long long)c->upload_temp_max, c->upload_user_share,
             dur(c->upload_timeout_us, t1, sizeof(t1)), dur(c->send_timeout_us, t2, sizeof(t2)),
             (unsigned long long)c->min_rate, dur(c->min_rate_grace_us, t3, sizeof(t3)),
             dur(c->min_rate_window_us, t4, sizeof(t4)),
             (unsigned long long)c->user_quota, (unsigned long long)c->store_max,
             (unsigned long long)c->response_memory);
    log_info("config: login-fail-limit=%s login-fail-addr-limit=%s signup-limit=%s "
             "list-limit=%s ratelimit-entries=%u max-conns-per-ip=%u private-uploads=%s "
             "auth-cache=%llu auth-cache-ttl=%s max-list=%zu",
             opts_format_rate(&c->login_fail_user, r1, sizeof(r1)),
             opts_format_rate(&c->login_fail_addr, r2, sizeof(r2)),
             opts_format_rate(&c->signup, r3, sizeof(r3)),
             opts_format_rate(&c->list_limit, r4, sizeof(r4)), c->ratelimit_entries,
             c->max_conns_per_ip, c->private_uploads ? "yes" : "no",
             (unsigned long long)c->auth_cache_entries, dur(c->auth_cache_ttl_us, t1, sizeof(t1)),
             c->max_list);
}
