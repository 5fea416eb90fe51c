/*
 * test_httpcond.c - cmocka tests for server1/httpcond: entity-tag lists, the precedence of
 * preconditions (RFC 9110 §13.2.2), If-Range, when Last-Modified is a strong validator
 * (§8.8.2.2), and the ETag format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/httpcond.h"

#define OURS "\"5f3a-1c\""  /* our current tag */
#define OLD "\"5f3a-1b\""   /* a tag we sent before the file changed */
#define MTIME 1700000000LL  /* our Last-Modified */

static bool match(const char *list, bool weak)
{
    return httpcond_etag_list_match(list, strlen(list), OURS, strlen(OURS), weak);
}

/* Both comparisons agree. */
static void assert_both(const char *list, bool want)
{
    if (match(list, true) != want || match(list, false) != want)
        fail_msg("'%s' should %s", list, want ? "match" : "not match");
}

static void test_httpcond_list_strong_weak(void **state)
{
    (void)state;
    assert_both(OURS, true);
    assert_both(OLD, false);
    assert_both("\"5f3a-1c \"", false);
    assert_both("\"5F3A-1C\"", false); /* opaque-tags compare byte for byte */
    /* a weak tag matches under the weak comparison only */
    assert_true(match("W/" OURS, true));
    assert_false(match("W/" OURS, false));
    assert_false(match("W/" OLD, true));
    /* our own tag weak: the strong comparison fails whatever the list says */
    assert_false(httpcond_etag_list_match(OURS, strlen(OURS), "W/" OURS, 11, false));
    assert_true(httpcond_etag_list_match(OURS, strlen(OURS), "W/" OURS, 11, true));
    /* the empty opaque-tag and obs-text are valid tags */
    assert_true(httpcond_etag_list_match("\"\"", 2, "\"\"", 2, false));
    assert_true(httpcond_etag_list_match("\"\xc3\xa9\"", 4, "\"\xc3\xa9\"", 4, false));
}

static void test_httpcond_list_lists(void **state)
{
    (void)state;
    assert_both(OLD ", " OURS, true);
    assert_both(OURS "," OLD, true);
    assert_both("\"a\"\t,\t" OURS "  ,  \"b\"", true);
    assert_both("\"a\", \"b\", \"c\"", false);
    /* empty elements are allowed and do not count */
    assert_both(",," OURS ",,", true);
    assert_both(", " OLD " ,, " OURS, true);
    /* ',' is an etagc: it may be inside a tag */
    assert_both("\"5f3a,1c\"", false);
    assert_true(httpcond_etag_list_match("\"a,b\", \"c\"", 10, "\"a,b\"", 5, false));
    /* weak and strong mixed */
    assert_true(match("W/\"x\", W/" OURS, true));
    assert_false(match("W/\"x\", W/" OURS, false));
    assert_true(match("W/" OURS ", " OURS, false));
}

static void test_httpcond_list_star(void **state)
{
    (void)state;
    assert_both("*", true);
    /* "*" matches even when our tag is unknown or malformed: existence is the caller's check */
    assert_true(httpcond_etag_list_match("*", 1, "", 0, false));
    assert_true(httpcond_etag_list_match("*", 1, NULL, 0, true));
    /* "*" is not a list element */
    assert_both("*, " OURS, false);
    assert_both(OURS ", *", false);
    assert_both("*,", false);
    assert_both("**", false);
    assert_both("\"*\"", false);
}

static void test_httpcond_list_malformed(void **state)
{
    static const char *const bad[] = {
        "",          /* 1#entity-tag: at least one */
        ",",
        "  , ,",
        "5f3a-1c",   /* unquoted */
        "\"5f3a-1c", /* unterminated */
        "5f3a-1c\"",
        "w/" OURS,   /* W/ is case-sensitive */
        "W/ " OURS,
        "W" OURS,
        OURS " " OLD, /* no comma */
        OURS ";" OLD,
        OURS "x",
        OURS ", garbage", /* a malformed element anywhere */
        "garbage, " OURS,
        "\"a b\", " OURS,   /* SP is not an etagc */
        "\"a\x7f\", " OURS, /* nor DEL */
        "\"a\x01\", " OURS, /* nor a control */
        "\"a\"\"b\", " OURS,
    };

    (void)state;
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        assert_both(bad[k], false);
    /* a malformed tag of ours matches nothing but "*" */
    assert_false(httpcond_etag_list_match(OURS, strlen(OURS), "5f3a-1c", 7, true));
    assert_false(httpcond_etag_list_match(OURS, strlen(OURS), OURS " ", 10, true));
    /* len is honoured */
    assert_true(httpcond_etag_list_match(OURS "garbage", strlen(OURS), OURS, 9, false));
    assert_false(httpcond_etag_list_match(OURS, strlen(OURS) - 1, OURS, 9, false));
    assert_true(httpcond_etag_list_match("*x", 1, OURS, 9, false));
}

/* A request with none of the fields; the tests add what they need. */
static struct httpcond_request req(enum httpcond_method m)
{
    return (struct httpcond_request){.method = m};
}

static struct httpcond_list field(const char *v)
{
    return (struct httpcond_list){.present = true, .value = v, .len = strlen(v)};
}

static struct httpcond_date date(int64_t secs)
{
    return (struct httpcond_date){.valid = true, .secs = secs};
}

static const struct httpcond_repr file = {
    .exists = true, .etag = OURS, .etag_len = sizeof(OURS) - 1, .last_modified = MTIME};
static const struct httpcond_repr none = {.exists = false};

static void test_httpcond_evaluate_no_fields(void **state)
{
    struct httpcond_request r = req(HTTPCOND_READ);

    (void)state;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.method = HTTPCOND_WRITE;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
    /* a field that is not present is not looked at, whatever its value */
    r.if_match = (struct httpcond_list){.present = false, .value = "garbage", .len = 7};
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
}

/* Step 1: If-Match. */
static void test_httpcond_evaluate_if_match(void **state)
{
    struct httpcond_request r = req(HTTPCOND_WRITE);

    (void)state;
    r.if_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_match = field(OLD ", " OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_match = field(OLD);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    /* strong comparison: a weak tag never passes If-Match */
    r.if_match = field("W/" OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    /* malformed: 412, even if our tag is in it */
    r.if_match = field(OURS ", junk");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.if_match = field("");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    /* "*": true when the representation exists, 412 when it does not */
    r.if_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PRECONDITION_FAILED);
    r.if_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PRECONDITION_FAILED);
    /* the same for GET: 412, not 304 */
    r.method = HTTPCOND_READ;
    r.if_match = field(OLD);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
}

/* Step 2: If-Unmodified-Since, only without If-Match. */
static void test_httpcond_evaluate_if_unmodified_since(void **state)
{
    struct httpcond_request r = req(HTTPCOND_WRITE);

    (void)state;
    r.if_unmodified_since = date(MTIME);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED); /* equal: not modified */
    r.if_unmodified_since = date(MTIME + 1);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_unmodified_since = date(MTIME - 1);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.method = HTTPCOND_READ;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.method = HTTPCOND_WRITE;
    /* an invalid date is ignored */
    r.if_unmodified_since.valid = false;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* no representation: no modification date, ignored */
    r.if_unmodified_since = date(0);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
    /* If-Match true skips step 2 ... */
    r.if_unmodified_since = date(MTIME - 1);
    r.if_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* ... and If-Match false fails first */
    r.if_match = field(OLD);
    r.if_unmodified_since = date(MTIME + 1);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
}

/* Step 3: If-None-Match. */
static void test_httpcond_evaluate_if_none_match(void **state)
{
    struct httpcond_request r = req(HTTPCOND_READ);

    (void)state;
    r.if_none_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    r.if_none_match = field("W/" OURS); /* weak comparison */
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    r.if_none_match = field(OLD ", W/" OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    r.if_none_match = field(OLD);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_none_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    /* a write gets 412 where a read gets 304 */
    r.method = HTTPCOND_WRITE;
    r.if_none_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.if_none_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.if_none_match = field(OLD);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* no representation: "*" and any list hold, a PUT creates */
    r.if_none_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
    r.if_none_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
    r.method = HTTPCOND_READ;
    r.if_none_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
}

/* A malformed If-None-Match: never a 304, and never a change of state. */
static void test_httpcond_evaluate_if_none_match_malformed(void **state)
{
    struct httpcond_request r = req(HTTPCOND_READ);

    (void)state;
    r.if_none_match = field(OURS ", junk");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_none_match = field("");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* still present: If-Modified-Since stays ignored */
    r.if_modified_since = date(MTIME);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.method = HTTPCOND_WRITE;
    r.if_modified_since.valid = false;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PRECONDITION_FAILED);
    r.if_none_match = field("*, " OLD);
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PRECONDITION_FAILED);
}

/* Step 4: If-Modified-Since, GET/HEAD only, only without If-None-Match. */
static void test_httpcond_evaluate_if_modified_since(void **state)
{
    struct httpcond_request r = req(HTTPCOND_READ);

    (void)state;
    r.if_modified_since = date(MTIME);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED); /* equal */
    r.if_modified_since = date(MTIME + 3600);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    r.if_modified_since = date(MTIME - 1);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_modified_since = date(INT64_MIN);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_modified_since = date(INT64_MAX);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    /* invalid date: ignored */
    r.if_modified_since.valid = false;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* not for a write */
    r.if_modified_since = date(MTIME);
    r.method = HTTPCOND_WRITE;
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* not without a representation */
    r.method = HTTPCOND_READ;
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PROCEED);
    /* If-None-Match present makes it ignored, in both directions */
    r.if_none_match = field(OLD);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    r.if_none_match = field(OURS);
    r.if_modified_since = date(MTIME - 1);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
}

/* The order: a failing earlier step wins, a later step is not reached. */
static void test_httpcond_evaluate_precedence(void **state)
{
    struct httpcond_request r = req(HTTPCOND_READ);

    (void)state;
    /* If-Match false beats an If-None-Match that would give 304 */
    r.if_match = field(OLD);
    r.if_none_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    /* If-Match true goes on to If-None-Match */
    r.if_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    r.if_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    /* If-Unmodified-Since false beats If-None-Match and If-Modified-Since */
    r = req(HTTPCOND_READ);
    r.if_unmodified_since = date(MTIME - 1);
    r.if_none_match = field(OURS);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    r.if_none_match.present = false;
    r.if_modified_since = date(MTIME);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
    /* If-Unmodified-Since true goes on to If-Modified-Since */
    r.if_unmodified_since = date(MTIME);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_NOT_MODIFIED);
    /* all four, all passing: the file changed since the client's copy */
    r = req(HTTPCOND_READ);
    r.if_match = field(OURS);
    r.if_unmodified_since = date(MTIME - 100); /* ignored: If-Match is present */
    r.if_none_match = field(OLD);
    r.if_modified_since = date(MTIME + 100);   /* ignored: If-None-Match is present */
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PROCEED);
    /* a conditional create: If-Match "*" fails before If-None-Match "*" is looked at */
    r = req(HTTPCOND_WRITE);
    r.if_match = field("*");
    r.if_none_match = field("*");
    assert_int_equal(httpcond_evaluate(&r, &none), HTTPCOND_PRECONDITION_FAILED);
    assert_int_equal(httpcond_evaluate(&r, &file), HTTPCOND_PRECONDITION_FAILED);
}

static void test_httpcond_if_range_is_etag(void **state)
{
    (void)state;
    assert_true(httpcond_if_range_is_etag(OURS, 9));
    assert_true(httpcond_if_range_is_etag("W/" OURS, 11));
    assert_true(httpcond_if_range_is_etag("\"", 1));
    assert_false(httpcond_if_range_is_etag("Tue, 14 Nov 2023 22:13:20 GMT", 29));
    assert_false(httpcond_if_range_is_etag("W/x\"", 4));
    assert_false(httpcond_if_range_is_etag("", 0));
    assert_false(httpcond_if_range_is_etag("\"", 0)); /* len is honoured */
}

static void test_httpcond_if_range(void **state)
{
    (void)state;
    /* entity-tag: one strong tag, equal */
    assert_true(httpcond_if_range(OURS, 9, OURS, 9, false, 0, MTIME));
    assert_false(httpcond_if_range(OLD, 9, OURS, 9, false, 0, MTIME));
    assert_false(httpcond_if_range("W/" OURS, 11, OURS, 9, false, 0, MTIME));
    assert_false(httpcond_if_range(OURS, 9, "W/" OURS, 11, false, 0, MTIME));
    /* not a list, not "*", nothing after the tag */
    assert_false(httpcond_if_range(OURS ", " OURS, 20, OURS, 9, false, 0, MTIME));
    assert_false(httpcond_if_range(OURS " ", 10, OURS, 9, false, 0, MTIME));
    assert_false(httpcond_if_range("\"5f3a-1c", 8, OURS, 9, false, 0, MTIME));
    /* "*" is no entity-tag: it goes to the caller's date parser, which rejects it */
    assert_false(httpcond_if_range_is_etag("*", 1));
    assert_false(httpcond_if_range("*", 1, OURS, 9, false, 0, MTIME));
    /* an entity-tag is never compared as a date, even with a matching date passed */
    assert_false(httpcond_if_range(OLD, 9, OURS, 9, true, MTIME, MTIME));
    /* HTTP-date: exactly equal */
    assert_true(httpcond_if_range("Tue, 14 Nov 2023 22:13:20 GMT", 29, OURS, 9, true, MTIME,
                                  MTIME));
    assert_false(httpcond_if_range("x", 1, OURS, 9, true, MTIME - 1, MTIME));
    assert_false(httpcond_if_range("x", 1, OURS, 9, true, MTIME + 1, MTIME)); /* not "<=" */
    assert_false(httpcond_if_range("x", 1, OURS, 9, false, MTIME, MTIME));   /* invalid */
    assert_false(httpcond_if_range("", 0, OURS, 9, false, 0, 0));
}

#define S 1000000000LL /* ns in a second */
#define D 1700000000LL /* a second */

static int64_t lm_of(int64_t mtime_ns, int64_t read_s, int64_t pending_ns)
{
    struct httpcond_stamp st = {.mtime_ns = mtime_ns, .read_s = read_s,
                                .pending_ns = pending_ns, .since_ns = mtime_ns};
    return httpcond_last_modified(&st);
}

static int64_t strong_of(int64_t mtime_ns, int64_t read_s, int64_t since_ns)
{
    struct httpcond_stamp st = {.mtime_ns = mtime_ns, .read_s = read_s,
                                .pending_ns = INT64_MAX, .since_ns = since_ns};
    return httpcond_strong_date(&st);
}

/* Last-Modified is sent once its second was over at the lookup, and no change pends in it. */
static void test_httpcond_last_modified(void **state)
{
    (void)state;
    assert_int_equal(lm_of(-1, D + 5, INT64_MAX), -1); /* no modification time */
    assert_int_equal(lm_of(D * S + S / 2, D, INT64_MAX), -1); /* its second is not over */
    assert_int_equal(lm_of(D * S, D, INT64_MAX), -1);         /* at its very start neither */
    assert_int_equal(lm_of(D * S + S - 1, D + 1, INT64_MAX), D);
    assert_int_equal(lm_of(D * S + S / 2, D + 100, INT64_MAX), D);
    assert_int_equal(lm_of(D * S + S / 2, D - 5, INT64_MAX), -1); /* a date in the future */
    /* a change being made, dated within that second: none; dated after it: sent */
    assert_int_equal(lm_of(D * S + 1, D + 1, D * S + S - 1), -1);
    assert_int_equal(lm_of(D * S + 1, D + 1, D * S + 2), -1);
    assert_int_equal(lm_of(D * S + 1, D + 1, D * S + S), D);
    /* the last second there is: no overflow, and INT64_MAX is "nothing pending" */
    assert_int_equal(lm_of(INT64_MAX, INT64_MAX / S + 1, INT64_MAX), INT64_MAX / S);
    assert_int_equal(lm_of(INT64_MAX, INT64_MAX / S, INT64_MAX), -1);
    assert_int_equal(lm_of(0, 1, INT64_MAX), 0);
}

/* The date an If-Range must equal: the one sent, if the version was in place within it. */
static void test_httpcond_strong_date(void **state)
{
    (void)state;
    assert_int_equal(strong_of(D * S + 5, D + 1, D * S + 5), D);   /* ctime = mtime */
    assert_int_equal(strong_of(D * S + 5, D + 1, D * S + S - 1), D); /* later, same second */
    assert_int_equal(strong_of(D * S + 5, D + 1, D * S + 1), D);  /* ctime before mtime */
    assert_int_equal(strong_of(D * S + 5, D + 1, -1), D);         /* (before 1970) */
    /* renamed into place, or dated back (touch -d, tar, cp -p, rsync -t) after its second */
    assert_int_equal(strong_of(D * S + 5, D + 9, D * S + S), -1);
    assert_int_equal(strong_of(D * S + 5, D + 9, (D + 3600) * S), -1);
    /* no Last-Modified sent: no strong date either */
    assert_int_equal(strong_of(D * S + 5, D, D * S + 5), -1);
    assert_int_equal(strong_of(-1, D + 1, D * S), -1);
}

/*
 * Two versions within one second: the older one's date was never sent; the newer one's date
 * is sent once the second is over and then names it alone; a date the response would not
 * carry (yet) validates nothing.
 */
static void test_httpcond_if_range_date_one_second(void **state)
{
    const char *date = "Tue, 14 Nov 2023 22:13:20 GMT"; /* D, as the client sends it back */
    int64_t a = D * S + S / 10, b = D * S + S / 2;

    (void)state;
    assert_int_equal(lm_of(a, D, INT64_MAX), -1);    /* A looked up within its second */
    assert_int_equal(lm_of(a, D + 1, b), -1);        /* ... or after it, while B is pending */
    assert_false(httpcond_if_range(date, 29, OURS, 9, true, D, strong_of(b, D, b)));
    assert_true(httpcond_if_range(date, 29, OURS, 9, true, D, strong_of(b, D + 1, b)));
    assert_false(httpcond_if_range(date, 29, OURS, 9, true, D, -1));
    assert_false(httpcond_if_range(date, 29, OURS, 9, true, -1, -1));
}

static void test_httpcond_etag_format(void **state)
{
    char out[HTTPCOND_ETAG_MAX];
    char small[8];

    (void)state;
    assert_int_equal(httpcond_etag_format(out, sizeof(out), 0x5f3a, 0x1c), 9);
    assert_string_equal(out, OURS);
    assert_int_equal(httpcond_etag_format(out, sizeof(out), 0, 0), 5);
    assert_string_equal(out, "\"0-0\"");
    assert_int_equal(httpcond_etag_format(out, sizeof(out), UINT64_MAX, UINT64_MAX),
                     sizeof(out) - 1);
    assert_string_equal(out, "\"ffffffffffffffff-ffffffffffffffff\"");
    /* what we format is a strong tag that matches itself */
    assert_true(httpcond_etag_list_match(out, strlen(out), out, strlen(out), false));
    assert_true(httpcond_if_range(out, strlen(out), out, strlen(out), false, 0, 0));
    /* too small */
    assert_int_equal(httpcond_etag_format(small, sizeof(small), 0x5f3a, 0x1c), 0);
    assert_string_equal(small, "");
    assert_int_equal(httpcond_etag_format(out, 10, 0x5f3a, 0x1c), 9);
    assert_int_equal(httpcond_etag_format(out, 9, 0x5f3a, 0x1c), 0);
    assert_int_equal(httpcond_etag_format(out, 0, 1, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httpcond_list_strong_weak),
        cmocka_unit_test(test_httpcond_list_lists),
        cmocka_unit_test(test_httpcond_list_star),
        cmocka_unit_test(test_httpcond_list_malformed),
        cmocka_unit_test(test_httpcond_evaluate_no_fields),
        cmocka_unit_test(test_httpcond_evaluate_if_match),
        cmocka_unit_test(test_httpcond_evaluate_if_unmodified_since),
        cmocka_unit_test(test_httpcond_evaluate_if_none_match),
        cmocka_unit_test(test_httpcond_evaluate_if_none_match_malformed),
        cmocka_unit_test(test_httpcond_evaluate_if_modified_since),
        cmocka_unit_test(test_httpcond_evaluate_precedence),
        cmocka_unit_test(test_httpcond_if_range_is_etag),
        cmocka_unit_test(test_httpcond_if_range),
        cmocka_unit_test(test_httpcond_last_modified),
        cmocka_unit_test(test_httpcond_strong_date),
        cmocka_unit_test(test_httpcond_if_range_date_one_second),
        cmocka_unit_test(test_httpcond_etag_format),
    };
    return cmocka_run_group_tests_name("httpcond", tests, NULL, NULL);
}
