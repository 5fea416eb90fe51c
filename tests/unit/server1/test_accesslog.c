/*
 * test_accesslog.c - cmocka tests for server1/accesslog: nginx's escaping in CLF and JSON, the
 * three line formats from a parsed head, bounds on what is kept, audit event lines, addresses
 * as text, and the buffer, flush and reopen of a thread's part of the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "../../../server1/accesslog.h"

static char line[ACCESSLOG_LINE_MAX];

/* e from a raw head (parsed for real). */
static void entry_of(struct accesslog_entry *e, const char *head)
{
    struct http_parser p;

    http_parser_init(&p, 65536);
    assert_int_equal(http_parser_execute(&p, head, strlen(head)), HTTP_PARSE_DONE);
    accesslog_entry_head(e, head, &p.req, true, 1000);
}

static const char *format(enum accesslog_format f, const struct accesslog_entry *e,
                          uint64_t bytes, uint64_t dur_ns)
{
    struct accesslog_line l = {
        .format = f,
        .time = f == ACCESSLOG_JSON ? "2026-11-27T04:30:00.123+00:00"
                                    : "27/Nov/2026:04:30:00 +0000",
        .addr = "2001:db8::1",
        .id = "0000abcd-1-7",
        .bytes = bytes,
        .duration_ns = dur_ns,
    };
    size_t n = accesslog_format_request(&l, e, line);

    assert_true(n < sizeof(line));
    line[n] = '\0';
    return line;
}

static void test_accesslog_escape_clf_as_nginx(void **state)
{
    char out[64];
    size_t n;

    (void)state;
    n = accesslog_escape_clf("a\"b\\c\x01\x7f\xc3\xa9 ok", 12, out);
    out[n] = '\0';
    assert_string_equal(out, "a\\x22b\\x5cc\\x01\\x7f\\xc3\\xa9 ok");
}

static void test_accesslog_escape_json(void **state)
{
    char out[64];
    size_t n;

    (void)state;
    n = accesslog_escape_json("a\"b\\c\n\x7f\xc3 z", 10, out);
    out[n] = '\0';
    assert_string_equal(out, "a\\\"b\\\\c\\u000a\\u007f\\u00c3 z");
}

static void test_accesslog_format_combined(void **state)
{
    struct accesslog_entry e;

    (void)state;
    entry_of(&e, "GET /files/a%20b?x=\"1\" HTTP/1.1\r\nHost: h\r\nUser-Agent: t \"q\"\r\n"
                 "Referer: http://r/\r\nAuthorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n");
    e.status = 200;
    accesslog_entry_user(&e, "alice", 5);
    assert_string_equal(format(ACCESSLOG_COMBINED, &e, 1024, 1234567),
                        "2001:db8::1 - alice [27/Nov/2026:04:30:00 +0000] "
                        "\"GET /files/a%20b?x=\\x221\\x22 HTTP/1.1\" 200 1024 \"http://r/\" "
                        "\"t \\x22q\\x22\" 1.234 0000abcd-1-7\n");
    /* the password (and the whole Authorization header) is never kept */
    assert_null(strstr(line, "YWxp"));
}

static void test_accesslog_format_common_and_absent(void **state)
{
    struct accesslog_entry e;

    (void)state;
    entry_of(&e, "HEAD /x HTTP/1.0\r\n\r\n");
    e.status = 404;
    assert_string_equal(format(ACCESSLOG_COMMON, &e, 0, 999),
                        "2001:db8::1 - - [27/Nov/2026:04:30:00 +0000] \"HEAD /x HTTP/1.0\" "
                        "404 0 0.000 0000abcd-1-7\n");
    assert_string_equal(format(ACCESSLOG_COMBINED, &e, 0, 999),
                        "2001:db8::1 - - [27/Nov/2026:04:30:00 +0000] \"HEAD /x HTTP/1.0\" "
                        "404 0 \"-\" \"-\" 0.000 0000abcd-1-7\n");
    /* an answer without a head (a 400 for a bad one, a 408) */
    accesslog_entry_blank(&e, 0);
    e.status = 400;
    assert_string_equal(format(ACCESSLOG_COMMON, &e, 12, 2000),
                        "2001:db8::1 - - [27/Nov/2026:04:30:00 +0000] \"-\" 400 12 0.002 "
                        "0000abcd-1-7\n");
}

static void test_accesslog_format_json(void **state)
{
    struct accesslog_entry e;

    (void)state;
    entry_of(&e, "PUT /files/x HTTP/1.1\r\nHost: h\r\nUser-Agent: \xc3\xa9\r\n\r\n");
    e.target[7] = 0x01; /* (the parser refuses one; the log escapes it all the same) */
    e.status = 201;
    assert_string_equal(format(ACCESSLOG_JSON, &e, 8, 12345678),
                        "{\"time\":\"2026-11-27T04:30:00.123+00:00\",\"addr\":\"2001:db8::1\","
                        "\"user\":null,\"method\":\"PUT\",\"path\":\"/files/\\u0001\","
                        "\"protocol\":\"HTTP/1.1\",\"status\":201,\"bytes\":8,\"referer\":null,"
                        "\"user_agent\":\"\\u00c3\\u00a9\",\"duration_ms\":12.345,"
                        "\"request_id\":\"0000abcd-1-7\"}\n");
}

static void test_accesslog_entry_bounds(void **state)
{
    struct accesslog_entry e;
    size_t tlen = ACCESSLOG_TARGET_MAX + 100;
    size_t ulen = ACCESSLOG_FIELD_MAX + 100;
    char *head = malloc(tlen + ulen + 64);
    char *p = head;
    struct accesslog_line l = {.format = ACCESSLOG_JSON, .time = "t", .addr = "a", .id = "i"};

    (void)state;
    p += sprintf(p, "GET /");
    memset(p, 'a', tlen - 1);
    p += tlen - 1;
    p += sprintf(p, " HTTP/1.1\r\nHost: h\r\nUser-Agent: ");
    memset(p, 'b', ulen);
    p += ulen;
    sprintf(p, "\r\n\r\n");
    entry_of(&e, head);
    assert_int_equal(e.target_len, ACCESSLOG_TARGET_MAX);
    assert_int_equal(e.ua_len, ACCESSLOG_FIELD_MAX);
    /* the worst bytes for the line's length: each becomes \u0001 (6) in JSON */
    memset(e.target, 0x01, sizeof(e.target));
    memset(e.ua, 0x01, sizeof(e.ua));
    memset(head, 0x7f, 1000);
    accesslog_entry_user(&e, head, 1000);
    assert_int_equal(e.user_len, ACCESSLOG_USER_MAX);
    e.status = 200;
    assert_true(accesslog_format_request(&l, &e, line) < ACCESSLOG_LINE_MAX);
    l.format = ACCESSLOG_COMBINED;
    assert_true(accesslog_format_request(&l, &e, line) < ACCESSLOG_LINE_MAX);
    free(head);
}

static void test_accesslog_format_event(void **state)
{
    struct accesslog_line l = {.format = ACCESSLOG_COMBINED,
                               .time = "27/Nov/2026:04:30:00 +0000",
                               .addr = "192.0.2.1",
                               .id = "x-0-3"};
    size_t n;

    (void)state;
    n = accesslog_format_event(&l, "login_failed", "bo\"b", 4, NULL, line);
    line[n] = '\0';
    assert_string_equal(line, "192.0.2.1 - bo\\x22b [27/Nov/2026:04:30:00 +0000] "
                              "\"AUDIT login_failed\" - x-0-3\n");
    l.format = ACCESSLOG_JSON;
    l.time = "2026-11-27T04:30:00.000+00:00";
    n = accesslog_format_event(&l, "rate_limited", NULL, 0, "signup", line);
    line[n] = '\0';
    assert_string_equal(line, "{\"time\":\"2026-11-27T04:30:00.000+00:00\",\"event\":"
                              "\"rate_limited\",\"addr\":\"192.0.2.1\",\"user\":null,"
                              "\"detail\":\"signup\",\"request_id\":\"x-0-3\"}\n");
}

static void test_accesslog_addr_text(void **state)
{
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    struct sockaddr_in in = {.sin_family = AF_INET};
    char out[ACCESSLOG_ADDR_MAX];

    (void)state;
    inet_pton(AF_INET6, "::1", &in6.sin6_addr);
    accesslog_addr_text((struct sockaddr *)&in6, sizeof(in6), out);
    assert_string_equal(out, "::1");
    inet_pton(AF_INET6, "::ffff:192.0.2.7", &in6.sin6_addr);
    accesslog_addr_text((struct sockaddr *)&in6, sizeof(in6), out);
    assert_string_equal(out, "192.0.2.7");
    inet_pton(AF_INET6, "2001:db8:1:2:3:4:5:6", &in6.sin6_addr);
    accesslog_addr_text((struct sockaddr *)&in6, sizeof(in6), out);
    assert_string_equal(out, "2001:db8:1:2:3:4:5:6"); /* all of it, not the /64 key */
    inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
    accesslog_addr_text((struct sockaddr *)&in, sizeof(in), out);
    assert_string_equal(out, "10.1.2.3");
    in.sin_family = AF_UNIX;
    accesslog_addr_text((struct sockaddr *)&in, sizeof(in), out);
    assert_string_equal(out, "-");
}

/* Whole file as a string (malloc'd). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 8 << 20);
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, (8 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

/*
 * Lines wait in the thread's buffer until a flush hands it to the writer; a reopen after a rename:
 * what was handed before goes to the old file, what comes after to the new one.
 */
static void test_accesslog_flush_and_reopen(void **state)
{
    char dir[] = "/tmp/test_accesslog_XXXXXX";
    char path[128];
    char moved[128];
    char err[ACCESSLOG_ERR_LEN];
    struct accesslog l;
    struct accesslog_entry e;
    _Atomic uint64_t errors = 0;
    char *text;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/access.log", dir);
    snprintf(moved, sizeof(moved), "%s/access.log.1", dir);
    assert_int_equal(accesslog_open(&l, path, ACCESSLOG_COMMON, 2, err), 0);
    l.write_errors = &errors;
    entry_of(&e, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
    e.status = 200;
    e.id = accesslog_next_id(&l.threads[0]);
    accesslog_request(&l.threads[0], "127.0.0.1", &e, 5, 2000);
    accesslog_drain(&l);
    text = slurp(path);
    assert_string_equal(text, ""); /* buffered */
    free(text);
    accesslog_flush(&l.threads[0]);
    accesslog_drain(&l);
    text = slurp(path);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, "\"GET /a HTTP/1.1\" 200 5 "));
    free(text);

    /* logrotate: mv, then SIGUSR1 */
    accesslog_request(&l.threads[0], "127.0.0.1", &e, 6, 2000);
    accesslog_flush(&l.threads[0]); /* handed before the reopen: the old file */
    accesslog_request(&l.threads[0], "127.0.0.1", &e, 7, 2000);
    assert_int_equal(rename(path, moved), 0);
    assert_int_equal(accesslog_reopen(&l, err), 0);
    assert_int_equal(accesslog_reopen(&l, err), 0); /* twice: fine */
    accesslog_drain(&l);
    accesslog_event(&l.threads[1], "::1", "signup", "bob", 3, NULL, 9);
    accesslog_flush(&l.threads[0]);
    accesslog_flush(&l.threads[1]);
    accesslog_drain(&l);
    text = slurp(moved);
    assert_int_equal(count_lines(text), 2);
    assert_non_null(strstr(text, " 200 6 "));
    free(text);
    text = slurp(path);
    assert_int_equal(count_lines(text), 2);
    assert_non_null(strstr(text, " 200 7 "));
    assert_non_null(strstr(text, "::1 - bob ["));
    assert_non_null(strstr(text, "\"AUDIT signup\" - "));
    free(text);
    assert_int_equal(errors, 0);
    /* many buffers' worth from two threads: every line whole, none lost */
    for (int i = 0; i < 20000; i++)
        accesslog_request(&l.threads[i & 1], "127.0.0.1", &e, 8, 2000);
    accesslog_close(&l); /* (the threads' buffers are not handed: only what was flushed) */
    text = slurp(path);
    assert_true(count_lines(text) >= 4 + 20000 - 2 * (ACCESSLOG_BUF_SIZE / 80));
    for (const char *ln = text; *ln != '\0'; ln = strchr(ln, '\n') + 1) /* each line whole */
        assert_true(strncmp(ln, "127.0.0.1 - - [", 15) == 0 || strncmp(ln, "::1 - bob [", 11) == 0);
    free(text);

    /* a write that fails (/dev/full) is counted, and the lines dropped */
    if (access("/dev/full", W_OK) == 0) {
        errors = 0;
        assert_int_equal(accesslog_open(&l, "/dev/full", ACCESSLOG_JSON, 1, err), 0);
        l.write_errors = &errors;
        accesslog_request(&l.threads[0], "127.0.0.1", &e, 5, 2000);
        accesslog_flush(&l.threads[0]);
        accesslog_drain(&l);
        assert_int_equal(errors, 1);
        accesslog_close(&l);
    }

    /* a reader that does not read (a FIFO, full): the buffers handed and not yet written, the
     * one the writer is stuck on included, are at most ACCESSLOG_QUEUE_MAX; the rest are
     * dropped and counted, and the thread that flushes never waits */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    {
        const unsigned nbufs = ACCESSLOG_QUEUE_MAX + 100;
        int rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        int fill = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        char junk[4096];
        unsigned got = 0;
        uint64_t lost;

        assert_true(rd >= 0 && fill >= 0);
        memset(junk, 'x', sizeof(junk)); /* (no newline: not counted as a line below) */
        while (write(fill, junk, sizeof(junk)) > 0)
            ; /* until the pipe is full */
        errors = 0;
        assert_int_equal(accesslog_open(&l, path, ACCESSLOG_COMMON, 1, err), 0);
        l.write_errors = &errors;
        for (unsigned i = 0; i < nbufs; i++) { /* one line a buffer */
            accesslog_request(&l.threads[0], "127.0.0.1", &e, 5, 2000);
            accesslog_flush(&l.threads[0]);
        }
        lost = errors;
        assert_int_equal(lost, nbufs - ACCESSLOG_QUEUE_MAX);
        /* the reader reads: every line held arrives, whole */
        assert_int_equal(fcntl(rd, F_SETFL, 0), 0);
        while (got < nbufs - lost) {
            char buf[65536];
            ssize_t n = read(rd, buf, sizeof(buf));
            assert_true(n > 0);
            for (ssize_t i = 0; i < n; i++)
                got += buf[i] == '\n';
        }
        accesslog_close(&l);
        assert_int_equal(got, nbufs - lost);
        assert_int_equal(errors, lost); /* nothing lost once the reader read */
        close(fill);
        close(rd);
        unlink(path);
    }

    /* a file that cannot be opened: an error naming it */
    snprintf(path, sizeof(path), "%s/no/such/dir/log", dir);
    assert_int_equal(accesslog_open(&l, path, ACCESSLOG_JSON, 1, err), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, "no/such/dir"));
    unlink(moved);
    snprintf(path, sizeof(path), "%s/access.log", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accesslog_escape_clf_as_nginx),
        cmocka_unit_test(test_accesslog_escape_json),
        cmocka_unit_test(test_accesslog_format_combined),
        cmocka_unit_test(test_accesslog_format_common_and_absent),
        cmocka_unit_test(test_accesslog_format_json),
        cmocka_unit_test(test_accesslog_entry_bounds),
        cmocka_unit_test(test_accesslog_format_event),
        cmocka_unit_test(test_accesslog_addr_text),
        cmocka_unit_test(test_accesslog_flush_and_reopen),
    };
    return cmocka_run_group_tests_name("accesslog", tests, NULL, NULL);
}
