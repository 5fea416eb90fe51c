/*
 * backend_url.c - see backend_url.h. The userinfo is split off at the LAST '@' before the
 * query, so an unescaped '@', ':' or '/' in a password still parses. Error messages quote parts
 * of the URL only when backend_url_password_span finds no password and the only ':' before the
 * authority is the scheme's (so nothing in the URL can be a password).
 */
#include "backend_url.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compat.h"

#define DEFAULT_REDIS_PORT 6379
#define DEFAULT_SENTINEL_PORT 26379
#define DEFAULT_MYSQL_PORT 3306

/* A view into the URL string. */
struct span {
    const char *p;
    size_t n;
};

PRINTF_FMT(2, 3) static int fail(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, BACKEND_URL_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* Decodes %XX escapes of in into out (cap bytes with the NUL). -1: bad escape, NUL or too long. */
static int pct_decode(struct span in, char *out, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < in.n; i++) {
        int c = (unsigned char)in.p[i];
        if (c == '%') {
            int hi;
            int lo;
            if (i + 2 >= in.n)
                return -1;
            hi = hex_digit_value((unsigned char)in.p[i + 1]);
            lo = hex_digit_value((unsigned char)in.p[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi << 4 | lo;
            i += 2;
        }
        if (c == 0 || o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

static bool span_eq(struct span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static bool all_digits(struct span s)
{
    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++)
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
    return true;
}

/* Decimal in [min, max]; -1 if not all digits or out of range. */
static int span_number(struct span s, unsigned long min, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;

    if (!all_digits(s) || s.n > 9)
        return -1;
    for (size_t i = 0; i < s.n; i++)
        v = v * 10 + (unsigned long)(s.p[i] - '0');
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static bool host_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

static bool ipv6_char_ok(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
           c == '.';
}

static bool db_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* Parses HOST[:PORT] or [IPV6][:PORT]; an empty authority gives host "" and no port. */
static int parse_hostport(struct span a, bool quote, struct backend_url *u, bool *has_port,
                          char *err)
{
    struct span host = a;
    struct span port = {NULL, 0};

    *has_port = false;
    if (a.n > 0 && a.p[0] == '[') {
        const char *close = memchr(a.p, ']', a.n);
        if (close == NULL)
            return fail(err, "unclosed '[' in the host");
        host.p = a.p + 1;
        host.n = (size_t)(close - host.p);
        size_t rest = a.n - (size_t)(close + 1 - a.p);
        if (rest > 0) {
            if (close[1] != ':')
                return fail(err, "unexpected characters after ']' in the host");
            port.p = close + 2;
            port.n = rest - 1;
            *has_port = true;
        }
        if (host.n == 0 || memchr(host.p, ':', host.n) == NULL)
            return fail(err, "empty or bad IPv6 address in brackets");
        for (size_t i = 0; i < host.n; i++)
            if (!ipv6_char_ok(host.p[i]))
                return fail(err, "bad character in the IPv6 address");
    } else {
        const char *colon = memchr(a.p, ':', a.n);
        if (colon != NULL) {
            host.n = (size_t)(colon - a.p);
            port.p = colon + 1;
            port.n = a.n - host.n - 1;
            *has_port = true;
            if (memchr(port.p, ':', port.n) != NULL)
                return fail(err, "an IPv6 address must be in brackets, e.g. [::1]:6379");
        }
        for (size_t i = 0; i < host.n; i++) {
            if (!host_char_ok(host.p[i])) {
                if (quote)
                    return fail(err, "bad character in host '%.*s'", (int)host.n, host.p);
                return fail(err, "bad character in the host name");
            }
        }
    }
    if (host.n > BACKEND_URL_HOST_MAX)
        return fail(err, "host name is too long (max %d bytes)", BACKEND_URL_HOST_MAX);
    memcpy(u->host, host.p, host.n);
    u->host[host.n] = '\0';
    if (*has_port) {
        unsigned long v;
        if (span_number(port, 1, 65535, &v) < 0) {
            if (quote)
                return fail(err, "port '%.*s' is not a number in 1..65535", (int)port.n, port.p);
            return fail(err, "port is not a number in 1..65535");
        }
        u->port = (uint16_t)v;
    }
    return 0;
}

/*
 * Parses the authority's host list HOST[:PORT][,HOST[:PORT]...] into u->hosts (u->host and
 * u->port: the first), each without a port taking default_port.
 */
static int parse_hosts(struct span a, bool quote, struct backend_url *u, uint16_t default_port,
                       bool *any_port, char *err)
{
    const char *p = a.p;
    const char *end = a.p + a.n;

    *any_port = false;
    u->nhosts = 0;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        struct span one = {p, (size_t)((comma != NULL ? comma : end) - p)};
        bool has_port;

        if (u->nhosts == BACKEND_URL_HOSTS_MAX)
            return fail(err, "more than %d hosts", BACKEND_URL_HOSTS_MAX);
        if (one.n == 0)
            return fail(err, "empty host in the list");
        if (parse_hostport(one, quote, u, &has_port, err) < 0)
            return -1;
        if (u->host[0] == '\0')
            return fail(err, "empty host in the list");
        if (!has_port)
            u->port = default_port;
        *any_port = *any_port || has_port;
        memcpy(u->hosts[u->nhosts].host, u->host, sizeof(u->host));
        u->hosts[u->nhosts].port = u->port;
        u->nhosts++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(u->host, u->hosts[0].host, sizeof(u->host));
    u->port = u->hosts[0].port;
    return 0;
}

static int set_socket(struct backend_url *u, struct span path, char *err)
{
    if (path.n == 0)
        return fail(err, "empty socket path");
    if (path.p[0] != '/')
        return fail(err, "socket path must be absolute");
    if (path.n > BACKEND_URL_SOCK_MAX)
        return fail(err, "socket path is too long (%zu bytes, max %d)", path.n,
                    BACKEND_URL_SOCK_MAX);
    if (pct_decode(path, u->socket, sizeof(u->socket)) < 0)
        return fail(err, "bad %%-escape in the socket path");
    return 0;
}

static int set_redis_db(struct backend_url *u, struct span v, bool quote, char *err)
{
    unsigned long db;
    if (span_number(v, 0, BACKEND_URL_REDIS_DB_MAX, &db) < 0) {
        if (quote)
            return fail(err, "database '%.*s' is not a number in 0..%d", (int)v.n, v.p,
                        BACKEND_URL_REDIS_DB_MAX);
        return fail(err, "database is not a number in 0..%d", BACKEND_URL_REDIS_DB_MAX);
    }
    u->redis_db = (unsigned)db;
    return 0;
}

/* Parses "k=v&k=v": redis knows db, mysql knows socket. */
static int parse_query(struct span q, bool quote, struct backend_url *u, bool *db_seen, char *err)
{
    bool sock_seen = false, tls_seen = false;
    const char *p = q.p;
    const char *end = q.p + q.n;

    if (q.n == 0)
        return fail(err, "empty query after '?'");
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        struct span key;
        struct span val;

        if (eq == NULL)
            return fail(err, "query parameter without '=' (want key=value)");
        key.p = p;
        key.n = (size_t)(eq - p);
        val.p = eq + 1;
        val.n = (size_t)(stop - val.p);
        if (u->kind == BACKEND_MYSQL && span_eq(key, "socket")) {
            if (sock_seen)
                return fail(err, "parameter 'socket' given twice");
            sock_seen = true;
            if (set_socket(u, val, err) < 0)
                return -1;
        } else if (u->kind == BACKEND_MYSQL && span_eq(key, "tls")) {
            if (tls_seen)
                return fail(err, "parameter 'tls' given twice");
            tls_seen = true;
            if (span_eq(val, "on"))
                u->tls = true;
            else if (!span_eq(val, "off"))
                return fail(err, "tls= takes on or off");
        } else if (u->kind == BACKEND_REDIS && span_eq(key, "db")) {
            if (*db_seen)
                return fail(err, "database given twice");
            *db_seen = true;
            if (set_redis_db(u, val, quote, err) < 0)
                return -1;
        } else {
            const char *known = u->kind == BACKEND_MYSQL ? "socket, tls" : "db";
            if (quote && key.n <= 32)
                return fail(err, "unknown parameter '%.*s' (known: %s)", (int)key.n, key.p, known);
            return fail(err, "unknown query parameter (known: %s)", known);
        }
        p = amp ? amp + 1 : end;
        if (amp && p == end)
            return fail(err, "empty query parameter after '&'");
    }
    return 0;
}

static int parse_userinfo(struct span ui, struct backend_url *u, char *err)
{
    const char *colon = memchr(ui.p, ':', ui.n);
    struct span user = ui;

    if (colon != NULL) {
        struct span pass = {colon + 1, ui.n - (size_t)(colon + 1 - ui.p)};
        user.n = (size_t)(colon - ui.p);
        if (pct_decode(pass, u->password, sizeof(u->password)) < 0)
            return fail(err, "password is too long (max %d bytes) or has a bad %%-escape",
                        BACKEND_URL_PASS_MAX);
        u->has_password = true;
    }
    if (pct_decode(user, u->user, sizeof(u->user)) < 0)
        return fail(err, "user name is too long (max %d bytes) or has a bad %%-escape",
                    BACKEND_URL_USER_MAX);
    for (const char *c = u->user; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return fail(err, "control character in the user name");
    return 0;
}

static int parse_redis(struct backend_url *u, struct span auth, struct span path, bool has_at,
                       bool has_query, struct span query, bool quote, char *err)
{
    bool has_port;
    bool db_seen = false;

    /* A user without a password here is fine: server2 takes passwords from a file or the
     * environment, and refuses a user that ends up without one (config.c). */
    if (has_at && u->user[0] == '\0' && !u->has_password)
        return fail(err, "empty user info before '@'");
    if (parse_hostport(auth, quote, u, &has_port, err) < 0)
        return -1;
    if (u->host[0] == '\0') {
        if (has_port)
            return fail(err, "port given without a host");
        if (path.n <= 1)
            return fail(err, "missing host (or socket path: redis:///path/to/redis.sock)");
        if (u->tls)
            return fail(err, "rediss:// is TLS over TCP: give a host, not a socket path");
        if (set_socket(u, path, err) < 0)
            return -1;
    } else {
        if (!has_port)
            u->port = DEFAULT_REDIS_PORT;
        memcpy(u->hosts[0].host, u->host, sizeof(u->host));
        u->hosts[0].port = u->port;
        u->nhosts = 1;
        if (path.n > 1) {
            struct span db = {path.p + 1, path.n - 1};
            if (set_redis_db(u, db, quote, err) < 0)
                return -1;
            db_seen = true;
        }
    }
    if (has_query && parse_query(query, quote, u, &db_seen, err) < 0)
        return -1;
    return 0;
}

/* redis-sentinel://[USER[:PASSWORD]@]HOST[:PORT][,...]/MASTER[?db=N] */
static int parse_sentinel(struct backend_url *u, struct span auth, struct span path,
                          bool has_at, bool has_query, struct span query, bool quote, char *err)
{
    bool any_port;
    bool db_seen = false;

    if (has_at && u->user[0] == '\0' && !u->has_password)
        return fail(err, "empty user info before '@'");
    if (auth.n == 0)
        return fail(err, "missing Sentinel host (redis-sentinel://HOST:PORT,.../MASTER)");
    if (parse_hosts(auth, quote, u, DEFAULT_SENTINEL_PORT, &any_port, err) < 0)
        return -1;
    if (path.n <= 1)
        return fail(err, "missing master name (redis-sentinel://HOST:PORT,.../MASTER)");
    if (path.n - 1 > BACKEND_URL_MASTER_MAX)
        return fail(err, "master name is too long (max %d bytes)", BACKEND_URL_MASTER_MAX);
    for (size_t i = 1; i < path.n; i++) {
        if (!db_char_ok(path.p[i]) && path.p[i] != '-' && path.p[i] != '.')
            return fail(err, "bad master name (letters, digits, '_', '-', '.')");
    }
    memcpy(u->master, path.p + 1, path.n - 1);
    u->master[path.n - 1] = '\0';
    u->sentinel = true;
    if (has_query && parse_query(query, quote, u, &db_seen, err) < 0)
        return -1;
    return 0;
}

static int parse_mysql(struct backend_url *u, struct span auth, struct span path, bool has_at,
                       bool has_query, struct span query, bool quote, char *err)
{
    bool has_port;
    bool db_seen = false;

    if (!has_at || u->user[0] == '\0')
        return fail(err, "missing user (mysql://USER[:PASSWORD]@HOST[:PORT]/DB)");
    if (memchr(auth.p, ',', auth.n) != NULL) {
        if (parse_hosts(auth, quote, u, DEFAULT_MYSQL_PORT, &has_port, err) < 0)
            return -1;
    } else {
        if (parse_hostport(auth, quote, u, &has_port, err) < 0)
            return -1;
        if (!has_port)
            u->port = DEFAULT_MYSQL_PORT;
        if (u->host[0] != '\0') {
            memcpy(u->hosts[0].host, u->host, sizeof(u->host));
            u->hosts[0].port = u->port;
            u->nhosts = 1;
        }
    }
    if (path.n <= 1)
        return fail(err, "missing database name (mysql://USER@HOST/DB)");
    if (path.n - 1 > BACKEND_URL_DB_MAX)
        return fail(err, "database name is too long (max %d bytes)", BACKEND_URL_DB_MAX);
    for (size_t i = 1; i < path.n; i++) {
        if (!db_char_ok(path.p[i])) {
            if (quote)
                return fail(err, "bad database name '%.*s' (letters, digits, '_', '$')",
                            (int)path.n - 1, path.p + 1);
            return fail(err, "bad database name (letters, digits, '_', '$')");
        }
    }
    memcpy(u->db, path.p + 1, path.n - 1);
    u->db[path.n - 1] = '\0';
    if (has_query && parse_query(query, quote, u, &db_seen, err) < 0)
        return -1;
    if (u->socket[0] != '\0') {
        if (u->tls)
            return fail(err, "tls=on is TLS over TCP: not with ?socket=");
        if (u->nhosts > 1)
            return fail(err, "?socket= takes one host, 'localhost'");
        u->nhosts = 0;
        if (u->host[0] == '\0')
            snprintf(u->host, sizeof(u->host), "localhost");
        else if (strcmp(u->host, "localhost") != 0)
            return fail(err, "?socket= needs the host 'localhost'");
        if (has_port)
            return fail(err, "a port makes no sense with ?socket=");
    } else if (u->host[0] == '\0') {
        return fail(err, "missing host (mysql://USER@HOST[:PORT]/DB)");
    }
    return 0;
}

int backend_url_parse(const char *s, struct backend_url *out, char *err)
{
    const char *sep;
    const char *rest;
    const char *qmark;
    const char *main_end;
    const char *at;
    const char *hs;
    const char *slash;
    struct span scheme;
    struct span auth;
    struct span path = {NULL, 0};
    struct span query = {NULL, 0};
    bool quote;
    int rc;

    memset(out, 0, sizeof(*out));
    out->io_timeout_ms = BACKEND_URL_IO_TIMEOUT_MS;
    if (s == NULL || *s == '\0')
        return fail(err, "empty URL");
    {
        size_t off;
        size_t len;
        quote = !backend_url_password_span(s, &off, &len) && strchr(s, ':') == strstr(s, "://");
    }
    sep = strstr(s, "://");
    if (sep == NULL)
        return fail(err, "missing scheme (want redis[s]://..., redis[s]-sentinel://... or "
                         "mysql://...)");
    scheme.p = s;
    scheme.n = (size_t)(sep - s);
    if (span_eq(scheme, "redis") || span_eq(scheme, "redis-sentinel") ||
        span_eq(scheme, "rediss") || span_eq(scheme, "rediss-sentinel")) {
        out->kind = BACKEND_REDIS;
        out->tls = span_eq(scheme, "rediss") || span_eq(scheme, "rediss-sentinel");
    } else if (span_eq(scheme, "mysql") || span_eq(scheme, "mariadb")) {
        out->kind = BACKEND_MYSQL;
    } else {
        if (quote && scheme.n <= 32 && memchr(scheme.p, ':', scheme.n) == NULL)
            return fail(err, "unknown scheme '%.*s' (want redis or mysql)", (int)scheme.n,
                        scheme.p);
        return fail(err, "unknown scheme (want redis or mysql)");
    }
    rest = sep + 3;
    qmark = strchr(rest, '?');
    main_end = qmark ? qmark : rest + strlen(rest);
    at = NULL;
    for (const char *p = rest; p < main_end; p++)
        if (*p == '@')
            at = p;
    hs = at ? at + 1 : rest;
    if (memchr(hs, '#', (size_t)(main_end - hs)) != NULL || (qmark && strchr(qmark, '#')))
        return fail(err, "fragments ('#') are not supported");
    for (const char *p = hs; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return fail(err, "space or control character in the URL");
    slash = memchr(hs, '/', (size_t)(main_end - hs));
    auth.p = hs;
    auth.n = (size_t)((slash ? slash : main_end) - hs);
    if (slash) {
        path.p = slash;
        path.n = (size_t)(main_end - slash);
    }
    if (qmark) {
        query.p = qmark + 1;
        query.n = strlen(query.p);
    }
    if (at) {
        struct span ui = {rest, (size_t)(at - rest)};
        if (parse_userinfo(ui, out, err) < 0)
            goto fail_wipe;
    }
    if (span_eq(scheme, "redis-sentinel") || span_eq(scheme, "rediss-sentinel"))
        rc = parse_sentinel(out, auth, path, at != NULL, qmark != NULL, query, quote, err);
    else if (out->kind == BACKEND_REDIS)
        rc = parse_redis(out, auth, path, at != NULL, qmark != NULL, query, quote, err);
    else
        rc = parse_mysql(out, auth, path, at != NULL, qmark != NULL, query, quote, err);
    if (rc < 0)
        goto fail_wipe;
    return 0;

fail_wipe:
    backend_url_wipe(out);
    return -1;
}

bool backend_url_password_span(const char *s, size_t *off, size_t *len)
{
    const char *start = strstr(s, "://");
    const char *at;
    const char *colon;

    start = start ? start + 3 : s;
    at = strrchr(start, '@');
    if (at == NULL)
        return false;
    colon = memchr(start, ':', (size_t)(at - start));
    if (colon == NULL || at == colon + 1)
        return false;
    *off = (size_t)(colon + 1 - s);
    *len = (size_t)(at - colon - 1);
    return true;
}

void backend_url_mask(const char *s, char *out, size_t cap)
{
    size_t off;
    size_t len;

    if (cap == 0)
        return;
    if (!backend_url_password_span(s, &off, &len)) {
        snprintf(out, cap, "%s", s);
        return;
    }
    snprintf(out, cap, "%.*s***%s", (int)off, s, s + off + len);
}

void backend_url_mask_inplace(char *s)
{
    size_t off;
    size_t len;

    if (backend_url_password_span(s, &off, &len))
        memset(s + off, '*', len);
}

/* "host:port,host:port" of every host of u (IPv6 in brackets). */
static void describe_hosts(const struct backend_url *u, char *out, size_t cap)
{
    size_t n = 0;

    out[0] = '\0';
    for (unsigned i = 0; i < u->nhosts && n < cap; i++) {
        const struct backend_host *h = &u->hosts[i];
        bool v6 = strchr(h->host, ':') != NULL;
        int w = snprintf(out + n, cap - n, "%s%s%s%s:%u", i > 0 ? "," : "", v6 ? "[" : "",
                         h->host, v6 ? "]" : "", h->port);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

void backend_url_describe(const struct backend_url *u, char *out, size_t cap)
{
    char auth[BACKEND_URL_USER_MAX + 8];
    char host[BACKEND_URL_HOST_MAX + 3];
    char hosts[BACKEND_URL_HOSTS_MAX * (BACKEND_URL_HOST_MAX + 10)];

    if (u->has_password)
        snprintf(auth, sizeof(auth), "%s:***@", u->user);
    else if (u->user[0] != '\0')
        snprintf(auth, sizeof(auth), "%s@", u->user);
    else
        auth[0] = '\0';
    if (strchr(u->host, ':') != NULL)
        snprintf(host, sizeof(host), "[%s]", u->host);
    else
        snprintf(host, sizeof(host), "%s", u->host);

    describe_hosts(u, hosts, sizeof(hosts));
    if (u->sentinel) {
        if (u->redis_db != 0)
            snprintf(out, cap, "%s://%s%s/%s?db=%u", u->tls ? "rediss-sentinel" : "redis-sentinel",
                     auth, hosts, u->master, u->redis_db);
        else
            snprintf(out, cap, "%s://%s%s/%s", u->tls ? "rediss-sentinel" : "redis-sentinel",
                     auth, hosts, u->master);
    } else if (u->kind == BACKEND_REDIS && u->socket[0] != '\0') {
        if (u->redis_db != 0)
            snprintf(out, cap, "redis://%s%s?db=%u", auth, u->socket, u->redis_db);
        else
            snprintf(out, cap, "redis://%s%s", auth, u->socket);
    } else if (u->kind == BACKEND_REDIS) {
        snprintf(out, cap, "%s://%s%s:%u/%u", u->tls ? "rediss" : "redis", auth, host, u->port,
                 u->redis_db);
    } else if (u->socket[0] != '\0') {
        snprintf(out, cap, "mysql://%s%s/%s?socket=%s", auth, host, u->db, u->socket);
    } else if (u->nhosts > 1) {
        snprintf(out, cap, "mysql://%s%s/%s%s", auth, hosts, u->db, u->tls ? "?tls=on" : "");
    } else {
        snprintf(out, cap, "mysql://%s%s:%u/%s%s", auth, host, u->port, u->db,
                 u->tls ? "?tls=on" : "");
    }
}

void backend_url_wipe(struct backend_url *u)
{
    explicit_bzero(u->password, sizeof(u->password));
    u->has_password = false;
    explicit_bzero(u->sentinel_password, sizeof(u->sentinel_password));
    u->has_sentinel_password = false;
}
