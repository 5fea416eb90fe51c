/*
 * test_changefeed.c - a server2's change feed (changefeed.h) driven step by step over a fake
 * database: changes read in order and published on the bus, applied only once every loop has
 * them, the registration renewed (and the loops' grant with it) only while the database
 * answers, a held change released when nobody is behind it, and "every user" published when
 * the feed jumps or goes backwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/changefeed.h"

#define MS 1000000ull
#define T0 (1000 * MS)

/* The fake database: its feed, whether it answers, and what was asked of it. */
static struct {
    struct backend_change log[32];
    size_t n;
    uint64_t head;
    bool down;          /* every call fails */
    unsigned behind;    /* what feed_behind answers */
    unsigned renewals;
    uint64_t renewed;   /* applied, at the last renewal */
    unsigned last_lease;
    unsigned connects;
} db;

static void db_add(uint64_t seq, const char *user)
{
    struct backend_change *c = &db.log[db.n++];
    c->seq = seq;
    c->user_len = (uint8_t)strlen(user);
    memcpy(c->user, user, c->user_len);
    db.head = seq;
}

static void *fake_connect(const struct backend_url *u, char *err)
{
    (void)u;
    if (db.down) {
        snprintf(err, BACKEND_ERR_LEN, "down");
        return NULL;
    }
    db.connects++;
    return &db;
}

static void fake_close(void *conn)
{
    (void)conn;
}

static int fake_head(void *conn, uint64_t *seq, char *err)
{
    (void)conn;
    if (db.down) {
        snprintf(err, BACKEND_ERR_LEN, "down");
        return -1;
    }
    *seq = db.head;
    return 0;
}

static int fake_read(void *conn, uint64_t after, unsigned wait_ms, struct backend_change *out,
                     size_t cap, char *err)
{
    size_t k = 0;

    (void)conn;
    (void)wait_ms;
    if (db.down) {
        snprintf(err, BACKEND_ERR_LEN, "down");
        return -1;
    }
    for (size_t i = 0; i < db.n && k < cap; i++)
        if (db.log[i].seq > after)
            out[k++] = db.log[i];
    return (int)k;
}

static int fake_renew(void *conn, const char *peer, uint64_t applied, unsigned lease_ms,
                      char *err)
{
    (void)conn;
    assert_int_equal(strlen(peer), INVALBUS_PEER_ID_LEN);
    if (db.down) {
        snprintf(err, BACKEND_ERR_LEN, "down");
        return -1;
    }
    db.renewals++;
    db.renewed = applied;
    db.last_lease = lease_ms;
    return 0;
}

static int fake_behind(void *conn, uint64_t seq, unsigned *count, char *err)
{
    (void)conn;
    (void)seq;
    if (db.down) {
        snprintf(err, BACKEND_ERR_LEN, "down");
        return -1;
    }
    *count = db.behind;
    return 0;
}

static const struct backend_ops fake_ops = {
    .name = "fake",
    .connect = fake_connect,
    .close = fake_close,
    .feed_head = fake_head,
    .feed_read = fake_read,
    .feed_renew = fake_renew,
    .feed_behind = fake_behind,
};

struct fixture {
    struct invalbus *bus;
    struct changefeed *feed;
    uint64_t cursor[2]; /* the two loops' bus cursors */
};

static struct backend_url url; /* unused by the fake; outlives every feed */

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    struct changefeed_params p;

    memset(&db, 0, sizeof(db));
    fx->bus = calloc(1, invalbus_size(2));
    assert_int_equal(invalbus_init(fx->bus, 2, false), 0);
    invalbus_join(fx->bus, 0, &fx->cursor[0]);
    invalbus_join(fx->bus, 1, &fx->cursor[1]);
    invalbus_lease_sent(fx->bus, 0, T0); /* both loops lease their connections */
    invalbus_lease_sent(fx->bus, 1, T0);
    p = (struct changefeed_params){.ops = &fake_ops, .url = &url, .health = NULL, .bus = fx->bus};
    fx->feed = changefeed_new(&p);
    assert_non_null(fx->feed);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    changefeed_free(fx->feed);
    invalbus_release(fx->bus);
    free(fx->bus);
    free(fx);
    return 0;
}

/* Loop i reads what the bus has for it: the users, "*" for every user. */
static void loop_reads(struct fixture *fx, unsigned i, char *out, size_t cap)
{
    char user[ACCOUNT_USER_MAX + 1];
    uint8_t len = 0;

    out[0] = '\0';
    while (invalbus_next(fx->bus, &fx->cursor[i], user, &len) == 1) {
        user[len] = '\0';
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "",
                 len ? user : "*");
    }
}

static void loops_apply(struct fixture *fx)
{
    invalbus_set_applied(fx->bus, 0, fx->cursor[0]);
    invalbus_set_applied(fx->bus, 1, fx->cursor[1]);
}

/* A new server2 starts at the feed's head: what came before is nobody's business here. */
static void test_changefeed_starts_at_head_and_registers(void **state)
{
    struct fixture *fx = *state;
    char got[128];

    db_add(1, "old");
    db_add(2, "older");
    assert_int_equal(changefeed_step(fx->feed, T0), CHANGEFEED_IDLE_MS);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "");
    assert_int_equal(db.renewals, 1);
    assert_int_equal(db.renewed, 2);
    assert_int_equal(db.last_lease, CHANGEFEED_LEASE_MS);
    assert_true(invalbus_may_lease(fx->bus, T0 + (CHANGEFEED_GRANT_MS - 1) * MS));
    assert_false(invalbus_may_lease(fx->bus, T0 + CHANGEFEED_GRANT_MS * MS));
    /* renewed again only when due */
    changefeed_step(fx->feed, T0 + 10 * MS);
    assert_int_equal(db.renewals, 1);
    changefeed_step(fx->feed, T0 + CHANGEFEED_RENEW_MS * MS);
    assert_int_equal(db.renewals, 2);
}

/* A change is published to every loop and counts as applied once both have it acknowledged. */
static void test_changefeed_applies_once_loops_did(void **state)
{
    struct fixture *fx = *state;
    char got[128];

    changefeed_step(fx->feed, T0);
    db_add(1, "alice");
    db_add(2, "bob");
    assert_int_equal(changefeed_step(fx->feed, T0 + MS), CHANGEFEED_BUSY_MS);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "alice bob");
    loop_reads(fx, 1, got, sizeof(got));
    assert_string_equal(got, "alice bob");
    assert_int_equal(db.renewed, 0); /* nobody acknowledged yet */
    invalbus_set_applied(fx->bus, 0, fx->cursor[0]);
    changefeed_step(fx->feed, T0 + 2 * MS);
    assert_int_equal(db.renewed, 0); /* one loop still owes */
    loops_apply(fx);
    assert_int_equal(changefeed_step(fx->feed, T0 + 3 * MS), CHANGEFEED_IDLE_MS);
    assert_int_equal(db.renewed, 2); /* renewed at once, not when due */
    assert_int_equal(db.renewals, 2);
}

/* A loop that sent no LEASE for INVALBUS_SILENT_MS holds nothing up (a hung process). */
static void test_changefeed_silent_loop_holds_nobody(void **state)
{
    struct fixture *fx = *state;
    char got[64];

    changefeed_step(fx->feed, T0);
    db_add(1, "alice");
    changefeed_step(fx->feed, T0 + MS);
    loop_reads(fx, 0, got, sizeof(got));
    invalbus_set_applied(fx->bus, 0, fx->cursor[0]); /* loop 1 hangs */
    changefeed_step(fx->feed, T0 + (INVALBUS_SILENT_MS - 1) * MS);
    assert_int_equal(db.renewed, 0);
    changefeed_step(fx->feed, T0 + INVALBUS_SILENT_MS * MS);
    assert_int_equal(db.renewed, 1);
}

/* A held change is released once the registry says no live server2 is behind it. */
static void test_changefeed_releases_held_change(void **state)
{
    struct fixture *fx = *state;

    changefeed_step(fx->feed, T0);
    invalbus_want(fx->bus, 1);
    db.behind = 1;
    changefeed_step(fx->feed, T0 + MS);
    assert_int_equal(invalbus_feed_done(fx->bus), 0);
    db.behind = 0;
    changefeed_step(fx->feed, T0 + 2 * MS);
    assert_int_equal(invalbus_feed_done(fx->bus), 1);
}

/* Without the database: no renewal, so the grant runs out; back: it follows on. */
static void test_changefeed_database_down(void **state)
{
    struct fixture *fx = *state;
    char got[64];

    changefeed_step(fx->feed, T0);
    db.down = true;
    assert_int_equal(changefeed_step(fx->feed, T0 + CHANGEFEED_RENEW_MS * MS),
                     CHANGEFEED_RETRY_MS);
    assert_false(invalbus_may_lease(fx->bus, T0 + CHANGEFEED_GRANT_MS * MS));
    db.down = false;
    db_add(1, "alice");
    changefeed_step(fx->feed, T0 + (CHANGEFEED_RENEW_MS + CHANGEFEED_RETRY_MS) * MS);
    assert_int_equal(db.connects, 2);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "alice"); /* nothing missed across the outage */
    assert_true(invalbus_may_lease(
        fx->bus, T0 + (CHANGEFEED_RENEW_MS + CHANGEFEED_RETRY_MS + 1) * MS));
}

/* A jump in the numbers (entries trimmed) or a feed behind us (a failover): everyone forgets. */
static void test_changefeed_gaps_make_everyone_forget(void **state)
{
    struct fixture *fx = *state;
    char got[64];

    db_add(1, "a");
    changefeed_step(fx->feed, T0);
    db_add(4, "d"); /* 2 and 3 are gone */
    changefeed_step(fx->feed, T0 + MS);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "* d");
    loops_apply(fx);
    /* the database loses its newest changes (a replica that missed them) and reconnects */
    db.down = true;
    changefeed_step(fx->feed, T0 + 2 * MS);
    db.down = false;
    db.n = 1;
    db.head = 1;
    changefeed_step(fx->feed, T0 + 2 * MS + CHANGEFEED_RETRY_MS * MS);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "*");
    db_add(2, "b"); /* a new change 2 is not taken for one seen */
    changefeed_step(fx->feed, T0 + 3 * MS + CHANGEFEED_RETRY_MS * MS);
    loop_reads(fx, 0, got, sizeof(got));
    assert_string_equal(got, "b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_changefeed_starts_at_head_and_registers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_changefeed_applies_once_loops_did, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changefeed_silent_loop_holds_nobody, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_changefeed_releases_held_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changefeed_database_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changefeed_gaps_make_everyone_forget, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("changefeed", tests, NULL, NULL);
}
