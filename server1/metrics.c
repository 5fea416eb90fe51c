/*
 * metrics.c - see metrics.h.
 */
#include "metrics.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static const char *const route_names[METRICS_NROUTES] = {"files", "users", "healthz", "metrics",
                                                         "other"};
#define METRICS_STATUS_CODE(code) code,
static const int status_codes[METRICS_NSTATUS] = {METRICS_STATUS_LIST(METRICS_STATUS_CODE) 0};
static const char *const limit_names[METRICS_NLIMITS] = {"login_user", "login_addr", "signup",
                                                         "login_user_shared", "list"};
static const double rtt_bounds[METRICS_RTT_NBOUNDS] = METRICS_RTT_BOUNDS;

void metrics_init(struct metrics *m)
{
    memset(m, 0, sizeof(*m));
}

const char *metrics_limit_name(enum metrics_limit kind)
{
    return (unsigned)kind < METRICS_NLIMITS ? limit_names[kind] : "other";
}

static int status_index(int status)
{
    switch (status) {
#define METRICS_STATUS_CASE(code)                                                                  \
    case code:                                                                                     \
        return METRICS_ST_##code;
        METRICS_STATUS_LIST(METRICS_STATUS_CASE)
    default:
        return METRICS_ST_OTHER;
    }
}

void metrics_request(struct metrics *m, enum metrics_route route, int status)
{
    metrics_add(&m->requests[route][status_index(status)], 1);
}

void metrics_auth_rtt(struct metrics *m, uint64_t rtt_ns)
{
    double s = (double)rtt_ns / 1e9;
    size_t b = 0;

    while (b < METRICS_RTT_NBOUNDS && s > rtt_bounds[b])
        b++;
    metrics_add(&m->auth_rtt_bucket[b], 1);
    metrics_add(&m->auth_rtt_sum_ns, rtt_ns);
    metrics_add(&m->auth_rtt_count, 1);
}

static uint64_t load_u(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static int64_t load_i(const _Atomic int64_t *g)
{
    return atomic_load_explicit(g, memory_order_relaxed);
}

/* The field at offset off of struct metrics, summed over all threads. */
static uint64_t sum_counter(struct metrics *const *all, size_t n, size_t off)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v += load_u((const _Atomic uint64_t *)((const char *)all[i] + off));
    return v;
}

static int64_t sum_gauge(struct metrics *const *all, size_t n, size_t off)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v += load_i((const _Atomic int64_t *)((const char *)all[i] + off));
    return v;
}

/* One counter with its HELP and TYPE lines. */
static void put_counter(FILE *out, const char *name, const char *help, uint64_t v)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
            (unsigned long long)v);
}

/* One gauge with its HELP and TYPE lines. */
static void put_gauge(FILE *out, const char *name, const char *help, int64_t v)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name,
            (long long)v);
}

char *metrics_render(struct metrics *const *all, size_t n, uint64_t prefetched_files,
                     uint64_t prefetched_bytes, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    uint64_t sum_u;
    uint64_t cum;

    if (out == NULL) {
        *len = 0;
        return xstrdup("");
    }
    fputs("# HELP server1_requests_total HTTP requests answered, by route and status.\n"
          "# TYPE server1_requests_total counter\n",
          out);
    for (int r = 0; r < METRICS_NROUTES; r++) {
        for (int s = 0; s < METRICS_NSTATUS; s++) {
            uint64_t v = 0;
            for (size_t i = 0; i < n; i++)
                v += load_u(&all[i]->requests[r][s]);
            if (v == 0)
                continue;
            if (status_codes[s] != 0)
                fprintf(out, "server1_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                        route_names[r], status_codes[s], (unsigned long long)v);
            else
                fprintf(out, "server1_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                        route_names[r], (unsigned long long)v);
        }
    }

    put_gauge(out, "server1_inflight_requests", "Requests parsed and not yet answered.",
              sum_gauge(all, n, offsetof(struct metrics, inflight)));
    put_gauge(out, "server1_connections", "Open client connections.",
              sum_gauge(all, n, offsetof(struct metrics, connections)));
    put_gauge(out, "server1_response_buffer_bytes",
              "Memory of --read direct responses being sent (capped by --response-memory per "
              "worker).",
              sum_gauge(all, n, offsetof(struct metrics, response_bytes)));
    fputs("# HELP server1_worker_connections Open client connections, by worker thread.\n"
          "# TYPE server1_worker_connections gauge\n",
          out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "server1_worker_connections{worker=\"%zu\"} %lld\n", i,
                (long long)load_i(&all[i]->connections));
    put_counter(out, "server1_connections_handed_total",
                "Connections accepted by one worker thread and given to a less loaded one.",
                sum_counter(all, n, offsetof(struct metrics, connections_handed)));
    put_counter(out, "server1_connections_rejected_total",
                "Connections closed at once over --max-conns.",
                sum_counter(all, n, offsetof(struct metrics, connections_rejected)));
    put_counter(out, "server1_connections_rejected_per_ip_total",
                "Connections closed at once over --max-conns-per-ip.",
                sum_counter(all, n, offsetof(struct metrics, connections_rejected_per_ip)));
    put_counter(out, "server1_proxy_headers_refused_total",
                "Connections from a --trusted-proxy address closed for want of a valid PROXY "
                "protocol header.",
                sum_counter(all, n, offsetof(struct metrics, proxy_headers_refused)));
    fputs("# HELP server1_ratelimited_total Requests answered 429 before any password was "
          "checked, by the limit they were over (login_user_shared: server2's, in the "
          "database).\n"
          "# TYPE server1_ratelimited_total counter\n",
          out);
    for (int k = 0; k < METRICS_NLIMITS; k++) {
        sum_u = sum_counter(all, n, offsetof(struct metrics, ratelimited[k]));
        fprintf(out, "server1_ratelimited_total{kind=\"%s\"} %llu\n", limit_names[k],
                (unsigned long long)sum_u);
    }
    put_counter(out, "server1_signups_refused_total",
                "POST /users answered 403 because sign-up is closed (--signup closed).",
                sum_counter(all, n, offsetof(struct metrics, signups_refused)));
    put_counter(out, "server1_uploads_busy_total",
                "PUTs answered 503 for want of temp space (--upload-temp-max) or memory now.",
                sum_counter(all, n, offsetof(struct metrics, uploads_busy)));
    put_counter(out, "server1_uploads_timed_out_total",
                "PUT bodies not received within --upload-timeout + size / --min-rate (408).",
                sum_counter(all, n, offsetof(struct metrics, uploads_timed_out)));
    put_counter(out, "server1_sends_timed_out_total",
                "Connections closed: a response not taken within --send-timeout + size / "
                "--min-rate.",
                sum_counter(all, n, offsetof(struct metrics, sends_timed_out)));
    put_counter(out, "server1_responses_busy_total",
                "GETs answered 503 with every --response-memory byte in use.",
                sum_counter(all, n, offsetof(struct metrics, responses_busy)));
    put_counter(out, "server1_reads_async_total",
                "GETs whose file was read with O_DIRECT without stopping the thread "
                "(--read-depth).",
                sum_counter(all, n, offsetof(struct metrics, reads_async)));
    put_counter(out, "server1_reads_depth_full_total",
                "GETs whose file was read in place, stopping the thread: --read-depth reads "
                "were in flight on it.",
                sum_counter(all, n, offsetof(struct metrics, reads_depth_full)));
    put_counter(out, "server1_bytes_sent_total",
                "Bytes written to client sockets.",
                sum_counter(all, n, offsetof(struct metrics, bytes_sent)));
    fprintf(out,
            "# HELP server1_prefetched_files Files held in memory by --prefetch.\n"
            "# TYPE server1_prefetched_files gauge\nserver1_prefetched_files %llu\n"
            "# HELP server1_prefetched_bytes Bytes held in memory by --prefetch.\n"
            "# TYPE server1_prefetched_bytes gauge\nserver1_prefetched_bytes %llu\n",
            (unsigned long long)prefetched_files, (unsigned long long)prefetched_bytes);

    fputs("# HELP server1_auth_rtt_seconds Round trip of a request to server2.\n"
          "# TYPE server1_auth_rtt_seconds histogram\n",
          out);
    cum = 0;
    for (int b = 0; b <= METRICS_RTT_NBOUNDS; b++) {
        sum_u = sum_counter(all, n, offsetof(struct metrics, auth_rtt_bucket[b]));
        cum += sum_u;
        if (b < METRICS_RTT_NBOUNDS)
            fprintf(out, "server1_auth_rtt_seconds_bucket{le=\"%g\"} %llu\n", rtt_bounds[b],
                    (unsigned long long)cum);
        else
            fprintf(out, "server1_auth_rtt_seconds_bucket{le=\"+Inf\"} %llu\n",
                    (unsigned long long)cum);
    }
    sum_u = sum_counter(all, n, offsetof(struct metrics, auth_rtt_sum_ns));
    fprintf(out, "server1_auth_rtt_seconds_sum %.9f\n", (double)sum_u / 1e9);
    sum_u = sum_counter(all, n, offsetof(struct metrics, auth_rtt_count));
    fprintf(out, "server1_auth_rtt_seconds_count %llu\n", (unsigned long long)sum_u);
    put_counter(out, "server1_auth_timeouts_total",
                "Requests to server2 that got no answer in --auth-timeout.",
                sum_counter(all, n, offsetof(struct metrics, auth_timeouts)));
    put_counter(out, "server1_auth_retries_total",
                "Requests sent again to another server2 after their connection failed or "
                "timed out.",
                sum_counter(all, n, offsetof(struct metrics, auth_retries)));
    put_counter(out, "server1_auth_late_replies_total",
                "Answers from server2 to requests that had already timed out, dropped.",
                sum_counter(all, n, offsetof(struct metrics, auth_late_replies)));
    put_counter(out, "server1_auth_protocol_errors_total",
                "Connections to server2 closed for an answer that matched no request.",
                sum_counter(all, n, offsetof(struct metrics, auth_protocol_errors)));
    put_counter(out, "server1_auth_link_failures_total",
                "Handshakes in which server2 did not prove it holds the link secret, and "
                "connections closed for a sealed record from it that did not open.",
                sum_counter(all, n, offsetof(struct metrics, auth_link_failures)));
    put_gauge(out, "server1_auth_connections_up", "Connections to server2 that completed HELLO.",
              sum_gauge(all, n, offsetof(struct metrics, auth_conns_up)));
    put_counter(out, "server1_auth_invalidations_total",
                "INVALIDATE frames from server2 (an account changed), each acknowledged.",
                sum_counter(all, n, offsetof(struct metrics, auth_invalidations)));
    put_counter(out, "server1_auth_leases_total",
                "LEASE frames from server2: it hears every account change, caches may be used.",
                sum_counter(all, n, offsetof(struct metrics, auth_leases)));
    put_counter(out, "server1_auth_lease_lapses_total",
                "Times a worker's every lease had run out (its cache emptied when one came back).",
                sum_counter(all, n, offsetof(struct metrics, auth_lease_lapses)));
    put_counter(out, "server1_auth_cache_hits_total",
                "GETs whose credentials --auth-cache held: no message to server2.",
                sum_counter(all, n, offsetof(struct metrics, auth_cache_hits)));
    put_counter(out, "server1_auth_cache_misses_total",
                "GETs with --auth-cache on whose credentials it did not hold.",
                sum_counter(all, n, offsetof(struct metrics, auth_cache_misses)));
    put_gauge(out, "server1_auth_cache_entries", "Entries in the --auth-cache of every thread.",
              sum_gauge(all, n, offsetof(struct metrics, auth_cache_entries)));
    put_counter(out, "server1_access_log_write_errors_total",
                "Writes to --access-log that failed (disk full, ...): their lines were dropped; "
                "the first is logged.",
                sum_counter(all, n, offsetof(struct metrics, access_log_write_errors)));
    put_counter(out, "server1_tls_handshakes_total",
                "TLS handshakes completed on --tls-port.",
                sum_counter(all, n, offsetof(struct metrics, tls_handshakes)));
    put_counter(out, "server1_tls_handshakes_failed_total",
                "TLS connections closed before their handshake completed: a bad or refused "
                "ClientHello, --header-timeout, the client gone.",
                sum_counter(all, n, offsetof(struct metrics, tls_handshakes_failed)));
    put_counter(out, "server1_tls_resumed_total",
                "TLS handshakes that resumed a session (a ticket or the session cache).",
                sum_counter(all, n, offsetof(struct metrics, tls_resumed)));
    put_counter(out, "server1_tls_ktls_send_total",
                "TLS connections whose sending side the kernel encrypts (kTLS): sendfile stays "
                "zero-copy.",
                sum_counter(all, n, offsetof(struct metrics, tls_ktls_send)));
    put_counter(out, "server1_tls_reloads_total",
                "SIGHUPs after which new TLS connections use the certificate and key read again.",
                sum_counter(all, n, offsetof(struct metrics, tls_reloads)));
    put_counter(out, "server1_tls_reloads_failed_total",
                "SIGHUPs whose certificate or key failed a check: the ones before kept (logged).",
                sum_counter(all, n, offsetof(struct metrics, tls_reloads_failed)));
    put_counter(out, "server1_tls_ticket_key_rotations_total",
                "New session-ticket keys made (--tls-ticket-rotate).",
                sum_counter(all, n, offsetof(struct metrics, tls_ticket_rotations)));
    if (fclose(out) != 0 || buf == NULL) {
        free(buf);
        *len = 0;
        return xstrdup("");
    }
    *len = size;
    return buf;
}
