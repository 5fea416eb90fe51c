/*
 * test_stats.c - loadgen/stats: the table of errors by kind. A failed request is counted under
 * its status (100-599) or its transport kind, never both; statuses outside 100-599 have a kind
 * of their own; the tables of several threads merge (also through lg_stats_merge); the text
 * for the console and for points.csv lists statuses in order, then kinds, and the longest
 * table fits LG_ERRTAB_TEXT_LEN while a short buffer is cut with "..."; names read back from
 * run.json land in their entry. Also loadgen/client's lg_conn_kind: where a request failed
 * names its kind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/client.h"
#include "../../../loadgen/stats.h"

static void test_errtab_add(void **state)
{
    struct lg_errtab t;

    (void)state;
    memset(&t, 0, sizeof(t));
    lg_errtab_add(&t, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_STATUS_5XX, 503, LG_KIND_TIMEOUT); /* the kind is ignored */
    lg_errtab_add(&t, LG_ERR_STATUS_OTHER, 200, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_STATUS_OTHER, 100, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_STATUS_OTHER, 599, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_STATUS_OTHER, 600, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_STATUS_OTHER, 99, LG_KIND_BAD_STATUS);
    lg_errtab_add(&t, LG_ERR_TIMEOUT, 404, LG_KIND_TIMEOUT); /* the status is ignored */
    lg_errtab_add(&t, LG_ERR_CONNECT, 0, LG_KIND_REFUSED);
    lg_errtab_add(&t, LG_ERR_CONNECT, 0, (enum lg_kind)LG_KIND_COUNT); /* out of range */
    assert_int_equal(t.status[404 - LG_STATUS_MIN], 1);
    assert_int_equal(t.status[503 - LG_STATUS_MIN], 1);
    assert_int_equal(t.status[200 - LG_STATUS_MIN], 1);
    assert_int_equal(t.status[0], 1);
    assert_int_equal(t.status[LG_STATUS_SLOTS - 1], 1);
    assert_int_equal(t.kind[LG_KIND_BAD_STATUS], 2);
    assert_int_equal(t.kind[LG_KIND_TIMEOUT], 1);
    assert_int_equal(t.kind[LG_KIND_REFUSED], 1);
    assert_int_equal(t.kind[LG_KIND_INVALID], 1);
    assert_int_equal(lg_errtab_total(&t), 10);
}

static void test_errtab_merge(void **state)
{
    struct lg_stats a;
    struct lg_stats b;
    struct lg_stats all;
    char text[128];

    (void)state;
    lg_stats_init(&a);
    lg_stats_init(&b);
    lg_stats_init(&all);
    for (int i = 0; i < 3; i++)
        lg_errtab_add(&a.by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    lg_errtab_add(&a.by_kind, LG_ERR_TIMEOUT, 0, LG_KIND_TIMEOUT);
    for (int i = 0; i < 2; i++)
        lg_errtab_add(&b.by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    for (int i = 0; i < 2; i++)
        lg_errtab_add(&b.by_kind, LG_ERR_STATUS_5XX, 503, LG_KIND_BAD_STATUS);
    /* two threads' stats merged as the run merges them */
    lg_stats_merge(&all, &a);
    lg_stats_merge(&all, &b);
    assert_int_equal(all.by_kind.status[404 - LG_STATUS_MIN], 5);
    assert_int_equal(all.by_kind.status[503 - LG_STATUS_MIN], 2);
    assert_int_equal(all.by_kind.kind[LG_KIND_TIMEOUT], 1);
    assert_int_equal(lg_errtab_total(&all.by_kind), 8);
    lg_errtab_format(&all.by_kind, LG_ERRTAB_CONSOLE, text, sizeof(text));
    assert_string_equal(text, "404 x 5, 503 x 2, timeout x 1");
    lg_errtab_format(&all.by_kind, LG_ERRTAB_CSV, text, sizeof(text));
    assert_string_equal(text, "404:5;503:2;timeout:1");
}

static void test_errtab_format_limits(void **state)
{
    struct lg_errtab *t = calloc(1, sizeof(*t));
    char *text = malloc(LG_ERRTAB_TEXT_LEN);
    char small[24];
    size_t n;

    (void)state;
    assert_non_null(t);
    assert_non_null(text);
    /* empty: "" */
    assert_int_equal(lg_errtab_format(t, LG_ERRTAB_CONSOLE, text, LG_ERRTAB_TEXT_LEN), 0);
    assert_string_equal(text, "");
    /* every entry at the largest count fits, uncut, in both styles */
    for (int i = 0; i < LG_STATUS_SLOTS; i++)
        t->status[i] = UINT64_MAX;
    for (int k = 0; k < LG_KIND_COUNT; k++)
        t->kind[k] = UINT64_MAX;
    n = lg_errtab_format(t, LG_ERRTAB_CONSOLE, text, LG_ERRTAB_TEXT_LEN);
    assert_int_equal(n, strlen(text));
    assert_true(n < LG_ERRTAB_TEXT_LEN);
    assert_null(strstr(text, "..."));
    assert_int_equal(strncmp(text, "100 x 18446744073709551615, 101 x ", 34), 0);
    assert_non_null(strstr(text, ", status_999 x 18446744073709551615"));
    assert_string_equal(text + n - strlen("status_999 x 18446744073709551615"),
                        "status_999 x 18446744073709551615");
    n = lg_errtab_format(t, LG_ERRTAB_CSV, text, LG_ERRTAB_TEXT_LEN);
    assert_null(strstr(text, "..."));
    assert_null(strchr(text, ',')); /* one CSV field */
    assert_string_equal(text + n - strlen(";status_999:18446744073709551615"),
                        ";status_999:18446744073709551615");
    /* a short buffer: whole entries, then "..." */
    memset(t, 0, sizeof(*t));
    t->status[404 - LG_STATUS_MIN] = 5;
    t->status[503 - LG_STATUS_MIN] = 2;
    t->kind[LG_KIND_TIMEOUT] = 1;
    n = lg_errtab_format(t, LG_ERRTAB_CONSOLE, small, sizeof(small));
    assert_string_equal(small, "404 x 5, 503 x 2...");
    assert_int_equal(n, strlen(small));
    n = lg_errtab_format(t, LG_ERRTAB_CONSOLE, small, 5);
    assert_string_equal(small, "...");
    assert_int_equal(lg_errtab_format(t, LG_ERRTAB_CONSOLE, small, 0), 0);
    free(text);
    free(t);
}

static void test_errtab_add_named(void **state)
{
    struct lg_errtab t;
    static const char *const bad[] = {"99", "600", "0404", "4041", "40x", "", "Timeout",
                                      "404 ", "total"};
    char text[64];

    (void)state;
    memset(&t, 0, sizeof(t));
    assert_int_equal(lg_errtab_add_named(&t, "404", 5), 0);
    assert_int_equal(lg_errtab_add_named(&t, "100", 1), 0);
    assert_int_equal(lg_errtab_add_named(&t, "599", 1), 0);
    assert_int_equal(lg_errtab_add_named(&t, "timeout", 1), 0);
    assert_int_equal(lg_errtab_add_named(&t, "status_999", 1), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(lg_errtab_add_named(&t, bad[i], 1), -1);
    lg_errtab_format(&t, LG_ERRTAB_CSV, text, sizeof(text));
    assert_string_equal(text, "100:1;404:5;599:1;timeout:1;status_999:1");
    /* every kind's name reads back into its own entry */
    memset(&t, 0, sizeof(t));
    for (int k = 0; k < LG_KIND_COUNT; k++) {
        assert_int_equal(lg_errtab_add_named(&t, lg_kind_name((enum lg_kind)k), 1), 0);
        assert_int_equal(t.kind[k], 1);
    }
}

/* Every response by status: the successes' table and the errors' statuses, not their kinds. */
static void test_stats_statuses(void **state)
{
    static struct lg_stats a;
    static struct lg_stats b;
    struct lg_errtab all;
    char text[256];

    (void)state;
    lg_stats_init(&a);
    lg_stats_init(&b);
    a.ok = 16;
    a.ok_by_status.status[200 - LG_STATUS_MIN] = 15;
    a.ok_by_status.status[301 - LG_STATUS_MIN] = 1;
    lg_errtab_add(&a.by_kind, LG_ERR_STATUS_4XX, 404, LG_KIND_BAD_STATUS);
    lg_errtab_add(&a.by_kind, LG_ERR_TIMEOUT, 0, LG_KIND_TIMEOUT);
    b.ok = 1;
    b.ok_by_status.status[200 - LG_STATUS_MIN] = 1;
    lg_stats_merge(&b, &a);
    assert_int_equal(b.ok_by_status.status[200 - LG_STATUS_MIN], 16);
    lg_stats_statuses(&b, &all);
    lg_errtab_format(&all, LG_ERRTAB_CONSOLE, text, sizeof(text));
    assert_string_equal(text, "200 x 16, 301 x 1, 404 x 1");
    lg_stats_init(&a);
    lg_stats_statuses(&a, &all);
    assert_int_equal(lg_errtab_total(&all), 0);
}

static void test_conn_kind(void **state)
{
    struct lg_conn c;

    (void)state;
    memset(&c, 0, sizeof(c));
    c.state = LG_CS_CONNECTING;
    c.err = LG_ERR_CONNECT;
    c.err_errno = ECONNREFUSED;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_CONNECT), LG_KIND_REFUSED);
    c.err_errno = ENETUNREACH;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_CONNECT), LG_KIND_CONNECT);
    c.state = LG_CS_HANDSHAKE;
    c.err_errno = 0;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_CONNECT), LG_KIND_TLS);
    c.state = LG_CS_WAITING;
    c.err = LG_ERR_TIMEOUT;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_TIMEOUT), LG_KIND_TIMEOUT);
    c.err = LG_ERR_SHORT;
    c.err_errno = ECONNRESET;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_SHORT), LG_KIND_RESET);
    c.err_errno = EPIPE;
    assert_int_equal(lg_conn_kind(&c, LG_ERR_SHORT), LG_KIND_RESET);
    c.err_errno = 0; /* end of stream */
    assert_int_equal(lg_conn_kind(&c, LG_ERR_SHORT), LG_KIND_SHORT);
    c.err = LG_ERR_INVALID; /* the parser said so */
    assert_int_equal(lg_conn_kind(&c, LG_ERR_INVALID), LG_KIND_INVALID);
    c.err = LG_ERR_NONE; /* a complete response of the wrong length */
    assert_int_equal(lg_conn_kind(&c, LG_ERR_INVALID), LG_KIND_LENGTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errtab_add),
        cmocka_unit_test(test_errtab_merge),
        cmocka_unit_test(test_errtab_format_limits),
        cmocka_unit_test(test_errtab_add_named),
        cmocka_unit_test(test_stats_statuses),
        cmocka_unit_test(test_conn_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
