/*
 * backend_mysql.c - backend_ops on MariaDB/MySQL (Connector/C) and the table
 * auth.users(username PRIMARY KEY, hash), hash holding the account's record (record.h). Only
 * prepared statements, and the connection is made without CLIENT_MULTI_STATEMENTS, so no byte
 * of a request is ever parsed as SQL and one statement can never carry a second. A batch is at most two round trips:
 *   INSERT IGNORE INTO users (username, hash) VALUES (?,?),(?,?),...      -- if any CREATE
 *   SELECT username, hash FROM users WHERE username IN (?,?,...)          -- every name
 * Each statement is prepared for a number of rows rounded up to a power of two (the unused
 * places repeat the last row: a repeated IN value changes nothing, a repeated insert row is
 * ignored as a duplicate key of the same row), on first use, and kept per connection, so at
 * most 2 * 11 statements per connection and a new connection (after any reconnect) prepares
 * its own. With autocommit on, the INSERT commits (and InnoDB flushes its log) before the
 * SELECT runs. A REPLACE (a password change or a deletion, alone in its batch) is
 *   UPDATE users SET hash = ? WHERE username = ? AND hash = ?
 * and succeeded iff it changed one row (the new hash always differs from the old one: new
 * salt, or the tombstone). A CREATE succeeded iff the row now holds a record of this creation
 * (record.h: the same creation token, random per creation, so only this batch or an earlier
 * sending of the same creation can have stored it); any other row means the name was taken
 * (INSERT IGNORE's affected-rows count could not say which rows were ours; this can).
 * The caller never puts the same name in two CREATEs of one batch.
 * An account change is one transaction (account changes are rare; each pays a few round
 * trips): the compare-and-set above, then, if it changed the row, the next number of the
 * one-row counter account_seq (its row lock orders the changes: the numbers are consecutive in
 * commit order, on one server as on Galera, where a second writer of the counter fails
 * certification and is run again) and a row of account_changes with that number and the user;
 * COMMIT. The change feed (backend.h) reads account_changes, and each server2 registers in
 * server2_peers (id, applied, expires), the expiry on the database's clock (NOW(3)).
 * On Galera (wsrep_on), every session reads with wsrep_sync_wait = 1: a read waits until its
 * node has applied every transaction the cluster committed before it, so a server2 on another
 * node never verifies against a hash a change already replaced.
 * Client errors (CR_*, lost connection, timeouts, a statement the server no longer knows)
 * make the connection unusable (-1); server errors fail the batch's ops on a connection that
 * stays usable.
 */
#include "backend.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "compat.h"
#include "log.h"
#include "record.h"
#include "xalloc.h"

#define STMT_SIZES 11 /* statements for 1, 2, 4, ... 1024 rows (S2_BATCH_MAX) */
#define DEADLOCK_RETRIES 2 /* a statement rolled back as a deadlock is run again this often */
#define CHANGE_RETRIES 4   /* an account change's transaction rolled back as a deadlock */
#define PRUNE_EVERY 120    /* renewals between two prunings of the registry and the feed */

/* The feed's statements, by index in mysql_conn.feed. */
enum feed_stmt {
    FS_BUMP,   /* the counter: its next number */
    FS_LOG,    /* the change's row */
    FS_HEAD,   /* the newest number */
    FS_READ,   /* changes after a number */
    FS_RENEW,  /* this server2's registration */
    FS_LEAVE,  /* its removal */
    FS_BEHIND, /* live server2s behind a number */
    FS_PRUNE_PEERS,
    FS_PRUNE_CHANGES,
    FS_PRUNE_FAILURES,
    FS_LIST, /* every account (server2 admin list; not the feed's, but kept with them) */
    FS_COUNT,
};

static const char *const feed_sql[FS_COUNT] = {
    [FS_BUMP] = "UPDATE account_seq SET seq = LAST_INSERT_ID(seq + 1) WHERE id = 1",
    [FS_LOG] = "INSERT INTO account_changes (seq, username) VALUES (?, ?)",
    [FS_HEAD] = "SELECT seq FROM account_seq WHERE id = 1",
    [FS_READ] = "SELECT seq, username FROM account_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    [FS_RENEW] = "INSERT INTO server2_peers (id, applied, expires) VALUES "
                 "(?, ?, NOW(3) + INTERVAL ? MICROSECOND) ON DUPLICATE KEY UPDATE "
                 "applied = VALUES(applied), expires = VALUES(expires)",
    [FS_LEAVE] = "DELETE FROM server2_peers WHERE id = ?",
    [FS_BEHIND] = "SELECT COUNT(*) FROM server2_peers WHERE applied < ? AND expires > NOW(3)",
    [FS_PRUNE_PEERS] = "DELETE FROM server2_peers WHERE expires < NOW(3) - INTERVAL 60 SECOND",
    [FS_PRUNE_CHANGES] = "DELETE FROM account_changes WHERE at < NOW(3) - INTERVAL 1 DAY "
                         "LIMIT 1000",
    [FS_PRUNE_FAILURES] = "DELETE FROM login_failures WHERE tat < NOW(3) - INTERVAL 1 HOUR "
                          "LIMIT 1000",
    [FS_LIST] = "SELECT username, hash FROM users ORDER BY username",
};

struct mysql_conn {
    MYSQL *m;
    MYSQL_STMT *select[STMT_SIZES]; /* by log2 of the number of names; NULL until used */
    MYSQL_STMT *insert[STMT_SIZES];
    MYSQL_STMT *select_fail[STMT_SIZES]; /* the SELECT with the login limit's rows */
    MYSQL_STMT *fail;                    /* a FAIL: the user's TAT moved on */
    unsigned fail_burst;                 /* the login limit (backend.h): N, 0 = off */
    unsigned fail_interval_ms;           /* DUR / N */
    MYSQL_STMT *update; /* REPLACE; NULL until used */
    MYSQL_STMT *feed[FS_COUNT]; /* the change feed's; NULL until used */
    unsigned renewals;          /* feed_renew calls, for the pruning */
    MYSQL_BIND *params; /* grown as needed */
    size_t params_cap;
    char *q; /* SQL text buffer for a prepare */
    size_t qcap;
    size_t qlen;
    size_t *order; /* op indices sorted by username */
    size_t order_cap;
};

unsigned long backend_mysql_client_flags(void)
{
    return 0; /* in particular never CLIENT_MULTI_STATEMENTS */
}

size_t backend_mysql_stmt_rows(size_t n)
{
    size_t r = 1;
    while (r < n)
        r *= 2;
    return r;
}

int backend_mysql_library_init(void)
{
    return mysql_library_init(0, NULL, NULL) == 0 ? 0 : -1;
}

void backend_mysql_library_end(void)
{
    mysql_library_end();
}

static void mysql_thread_init_cb(void)
{
    mysql_thread_init();
}

static void mysql_thread_end_cb(void)
{
    mysql_thread_end();
}

/* One connection to host (NULL: the socket's localhost) and port; NULL with err. */
static MYSQL *connect_one(const struct backend_url *u, const char *host, unsigned port,
                          char *err)
{
    /* Connector/C counts these in whole seconds */
    unsigned int connect_s = (u->io_timeout_ms + 999) / 1000;
    unsigned int io_s = (u->io_timeout_ms + 999) / 1000;
    my_bool no = 0;
    MYSQL *m = mysql_init(NULL);

    if (m == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "mysql_init: out of memory");
        return NULL;
    }
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_options(m, MYSQL_OPT_RECONNECT, &no); /* we reconnect ourselves, and say so */
    if (u->socket[0] != '\0') {
        unsigned int proto = MYSQL_PROTOCOL_SOCKET;
        mysql_options(m, MYSQL_OPT_PROTOCOL, &proto);
    }
    if (u->tls) {
        /* TLS or no connection, and the server's certificate checked for host */
        my_bool yes = 1;
        mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &yes);
        mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &yes);
        if (u->tls_ca != NULL)
            mysql_options(m, MYSQL_OPT_SSL_CA, u->tls_ca);
        if (u->tls_cert != NULL) {
            mysql_options(m, MYSQL_OPT_SSL_CERT, u->tls_cert);
            mysql_options(m, MYSQL_OPT_SSL_KEY, u->tls_key);
        }
    }
    if (mysql_real_connect(m, host, u->user, u->has_password ? u->password : NULL, u->db, port,
                           u->socket[0] ? u->socket : NULL, backend_mysql_client_flags()) == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "%.64s:%u: %s (error %u)", host, port, mysql_error(m),
                 mysql_errno(m));
        mysql_close(m);
        return NULL;
    }
    return m;
}

/*
 * Whether m's node may take writes: a Galera node says wsrep_ready ON only while it is in the
 * cluster's primary component; a server without Galera has no such status (yes).
 */
static bool node_ready(MYSQL *m, char *err)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    bool ready = true;

    if (mysql_query(m, "SHOW STATUS LIKE 'wsrep_ready'") != 0 ||
        (res = mysql_store_result(m)) == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "wsrep_ready: %s", mysql_error(m));
        return false;
    }
    if ((row = mysql_fetch_row(res)) != NULL && row[1] != NULL && strcmp(row[1], "ON") != 0) {
        snprintf(err, BACKEND_ERR_LEN, "the node is not in the cluster's primary component "
                                       "(wsrep_ready %s)", row[1]);
        ready = false;
    }
    mysql_free_result(res);
    return ready;
}

/*
 * On a Galera node (wsrep_on), makes every read of the session wait for the node to apply what
 * the cluster committed before it (wsrep_sync_wait = 1). 0, or -1 with err.
 */
static int read_after_commit(MYSQL *m, char *err)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    bool galera = false;

    if (mysql_query(m, "SHOW VARIABLES LIKE 'wsrep_on'") != 0 ||
        (res = mysql_store_result(m)) == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "wsrep_on: %s", mysql_error(m));
        return -1;
    }
    row = mysql_fetch_row(res);
    galera = row != NULL && row[1] != NULL && strcmp(row[1], "ON") == 0;
    mysql_free_result(res);
    if (galera && mysql_query(m, "SET SESSION wsrep_sync_wait = 1") != 0) {
        snprintf(err, BACKEND_ERR_LEN, "wsrep_sync_wait: %s", mysql_error(m));
        return -1;
    }
    return 0;
}

/*
 * The node that answered last is tried first; with several (a Galera cluster), the others in
 * the URL's order after it, so a lost node's connections move to the next one.
 */
static _Atomic unsigned first_host;

static void *my_connect(const struct backend_url *u, char *err)
{
    struct mysql_conn *mc;
    unsigned n = u->nhosts > 0 ? u->nhosts : 1;
    unsigned start = atomic_load_explicit(&first_host, memory_order_relaxed) % n;
    MYSQL *m = NULL;

    for (unsigned k = 0; k < n && m == NULL; k++) {
        unsigned i = (start + k) % n;
        m = u->nhosts > 0 ? connect_one(u, u->hosts[i].host, u->hosts[i].port, err)
                          : connect_one(u, u->host, u->port, err);
        if (m != NULL && n > 1 && !node_ready(m, err)) {
            mysql_close(m);
            m = NULL;
        }
        if (m != NULL)
            atomic_store_explicit(&first_host, i, memory_order_relaxed);
    }
    if (m == NULL)
        return NULL;
    if (read_after_commit(m, err) < 0) {
        mysql_close(m);
        return NULL;
    }
    mc = xcalloc(1, sizeof(*mc));
    mc->m = m;
    mc->fail_burst = u->login_fail_burst;
    mc->fail_interval_ms = u->login_fail_interval_ms;
    return mc;
}

static void my_close(void *conn)
{
    struct mysql_conn *mc = conn;
    if (mc == NULL)
        return;
    for (int i = 0; i < STMT_SIZES; i++) {
        if (mc->select[i])
            mysql_stmt_close(mc->select[i]);
        if (mc->insert[i])
            mysql_stmt_close(mc->insert[i]);
        if (mc->select_fail[i])
            mysql_stmt_close(mc->select_fail[i]);
    }
    if (mc->fail)
        mysql_stmt_close(mc->fail);
    if (mc->update)
        mysql_stmt_close(mc->update);
    for (int i = 0; i < FS_COUNT; i++)
        if (mc->feed[i])
            mysql_stmt_close(mc->feed[i]);
    mysql_close(mc->m);
    free(mc->params);
    free(mc->q);
    free(mc->order);
    free(mc);
}

static int my_ping(void *conn)
{
    struct mysql_conn *mc = conn;
    return mysql_ping(mc->m) == 0 ? 0 : -1;
}

static void q_reserve(struct mysql_conn *mc, size_t more)
{
    if (mc->qlen + more + 1 <= mc->qcap)
        return;
    while (mc->qlen + more + 1 > mc->qcap)
        mc->qcap = mc->qcap ? mc->qcap * 2 : 4096;
    mc->q = xrealloc(mc->q, mc->qcap);
}

static void q_lit(struct mysql_conn *mc, const char *s)
{
    size_t n = strlen(s);
    q_reserve(mc, n);
    memcpy(mc->q + mc->qlen, s, n + 1);
    mc->qlen += n;
}

/* Orders ops by username: bytewise, then shorter first. */
static int cmp_user(const struct backend_op *a, const struct backend_op *b)
{
    size_t n = a->user_len < b->user_len ? a->user_len : b->user_len;
    int c = memcmp(a->user, b->user, n);
    if (c != 0)
        return c;
    return a->user_len < b->user_len ? -1 : a->user_len > b->user_len;
}

/* Insertion sort of op indices by username (batches are small; no global state needed). */
static void sort_order(struct mysql_conn *mc, const struct backend_op *ops, size_t n)
{
    if (mc->order_cap < n) {
        mc->order_cap = n;
        mc->order = xrealloc(mc->order, sizeof(*mc->order) * n);
    }
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && cmp_user(&ops[mc->order[j - 1]], &ops[i]) > 0) {
            mc->order[j] = mc->order[j - 1];
            j--;
        }
        mc->order[j] = i;
    }
}

/* First position in order[] whose user is >= (user, len). */
static size_t lower_bound(const struct mysql_conn *mc, const struct backend_op *ops, size_t n,
                          const char *user, size_t len)
{
    struct backend_op key = {.user = user, .user_len = len};
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_user(&ops[mc->order[mid]], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* lens[1] > BACKEND_HASH_MAX - 1 means the stored hash did not fit (and was truncated). */
static void apply_row(struct mysql_conn *mc, struct backend_op *ops, size_t n, char *row[2],
                      const unsigned long *lens)
{
    for (size_t k = lower_bound(mc, ops, n, row[0], lens[0]); k < n; k++) {
        struct backend_op *op = &ops[mc->order[k]];
        if (op->user_len != lens[0] || memcmp(op->user, row[0], lens[0]) != 0)
            break;
        if (op->kind == BACKEND_OP_CREATE) {
            bool ours = lens[1] < BACKEND_HASH_MAX &&
                        record_same_creation(row[1], lens[1], op->hash, strlen(op->hash));
            op->status = ours ? BACKEND_ST_OK : BACKEND_ST_EXISTS;
        } else {
            op->status = BACKEND_ST_OK;
            if (lens[1] < BACKEND_HASH_MAX) {
                memcpy(op->stored, row[1], lens[1]);
                op->stored[lens[1]] = '\0';
            } else {
                op->stored[0] = '\0'; /* cannot be a hash we made: verification will fail */
            }
        }
    }
}

/* A row of login_failures: its TAT is ahead_us ahead of now. */
static void apply_fail_row(struct mysql_conn *mc, struct backend_op *ops, size_t n,
                           const char *user, unsigned long len, uint64_t ahead_us)
{
    uint64_t ms = (ahead_us + 999) / 1000;

    for (size_t k = lower_bound(mc, ops, n, user, len); k < n; k++) {
        struct backend_op *op = &ops[mc->order[k]];
        if (op->user_len != len || memcmp(op->user, user, len) != 0)
            break;
        op->fail_ahead_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
    }
}

/*
 * Errors after which the connection is dropped (and the next connect may pick another node):
 * the client's own, the server going away, and a Galera node that left the cluster's primary
 * component (1047 "WSREP has not yet prepared node for application use", 1180 on commit).
 */
static bool connection_error(unsigned int e)
{
    return (e >= CR_MIN_ERROR && e <= CR_MAX_ERROR) || e == ER_SERVER_SHUTDOWN ||
           e == ER_CONNECTION_KILLED || e == ER_QUERY_INTERRUPTED || e == ER_CON_COUNT_ERROR ||
           e == ER_UNKNOWN_STMT_HANDLER || e == ER_NEED_REPREPARE || e == ER_UNKNOWN_COM_ERROR ||
           e == ER_ERROR_DURING_COMMIT;
}

static bool transient_error(unsigned int e)
{
    return e == ER_LOCK_WAIT_TIMEOUT || e == ER_LOCK_DEADLOCK || e == ER_READ_ONLY_MODE ||
           e == ER_OPTION_PREVENTS_STATEMENT;
}

/*
 * mysql_stmt_execute, run again (DEADLOCK_RETRIES times at most) while it fails with a
 * deadlock. With autocommit such a statement was rolled back whole, so running it again is
 * safe: a CREATE whose row is there by then is found as its own creation, a compare-and-set
 * sees the hash as it is. On Galera it is how a certification conflict ends, e.g. a batch sent
 * again after its node died under it, whose first write-set the others apply at the view
 * change before certifying the second (it reached server2 despite the server's own
 * wsrep_retry_autocommit). 0, or non-zero as mysql_stmt_execute.
 */
static int execute(MYSQL_STMT *st)
{
    int rc = mysql_stmt_execute(st);

    for (int i = 0; i < DEADLOCK_RETRIES && rc != 0 && mysql_stmt_errno(st) == ER_LOCK_DEADLOCK;
         i++) {
        log_info("backend statement rolled back as a deadlock: running it again");
        rc = mysql_stmt_execute(st);
    }
    return rc;
}

/*
 * A statement call failed: -1 if the connection is unusable, else marks every op failed and
 * returns 0. Statement errors never quote the values (they are bound, not in the text).
 */
static int fail_batch(MYSQL_STMT *st, struct backend_op *ops, size_t n, char *err)
{
    unsigned int e = mysql_stmt_errno(st);

    snprintf(err, BACKEND_ERR_LEN, "%s (error %u, SQLSTATE %s)", e ? mysql_stmt_error(st) : "unknown",
             e, mysql_stmt_sqlstate(st));
    if (e == 0 || connection_error(e))
        return -1;
    for (size_t i = 0; i < n; i++)
        ops[i].status = transient_error(e) ? BACKEND_ST_UNAVAILABLE : BACKEND_ST_ERROR;
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    return 0;
}

/* The kinds of statement made for a number of rows. */
enum rows_stmt {
    RS_INSERT,      /* INSERT IGNORE of the CREATEs */
    RS_SELECT,      /* SELECT of every name */
    RS_SELECT_FAIL, /* the same, and the login limit's rows of those names (UNION ALL) */
};

/* Appends n copies of item, comma-separated. */
static void q_list(struct mysql_conn *mc, const char *item, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            q_lit(mc, ",");
        q_lit(mc, item);
    }
}

/* The statement for `rows` rows of this kind, prepared now if it is not yet; NULL + err. */
static MYSQL_STMT *stmt_for(struct mysql_conn *mc, enum rows_stmt kind, size_t rows, char *err)
{
    size_t k = 0;
    MYSQL_STMT **slot;

    while (((size_t)1 << k) < rows)
        k++;
    if (k >= STMT_SIZES) {
        snprintf(err, BACKEND_ERR_LEN, "a batch of %zu names is larger than supported", rows);
        return NULL;
    }
    slot = kind == RS_INSERT   ? &mc->insert[k]
           : kind == RS_SELECT ? &mc->select[k]
                               : &mc->select_fail[k];
    if (*slot != NULL)
        return *slot;
    mc->qlen = 0;
    if (kind == RS_INSERT) {
        q_lit(mc, "INSERT IGNORE INTO users (username, hash) VALUES ");
        q_list(mc, "(?,?)", rows);
    } else if (kind == RS_SELECT) {
        q_lit(mc, "SELECT username, hash FROM users WHERE username IN (");
        q_list(mc, "?", rows);
        q_lit(mc, ")");
    } else {
        /* rows of login_failures have no hash; how far their TAT is ahead of now, in us */
        q_lit(mc, "SELECT username, hash, NULL FROM users WHERE username IN (");
        q_list(mc, "?", rows);
        q_lit(mc, ") UNION ALL SELECT username, NULL, "
                  "GREATEST(0, TIMESTAMPDIFF(MICROSECOND, NOW(3), tat)) FROM login_failures "
                  "WHERE username IN (");
        q_list(mc, "?", rows);
        q_lit(mc, ")");
    }
    *slot = mysql_stmt_init(mc->m);
    if (*slot == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "mysql_stmt_init: out of memory");
        return NULL;
    }
    if (mysql_stmt_prepare(*slot, mc->q, (unsigned long)mc->qlen) != 0) {
        snprintf(err, BACKEND_ERR_LEN, "prepare: %s (error %u)", mysql_stmt_error(*slot),
                 mysql_stmt_errno(*slot));
        mysql_stmt_close(*slot);
        *slot = NULL;
        return NULL;
    }
    return *slot;
}

static MYSQL_BIND *params(struct mysql_conn *mc, size_t n)
{
    if (mc->params_cap < n) {
        mc->params = xrealloc(mc->params, n * sizeof(*mc->params));
        mc->params_cap = n;
    }
    memset(mc->params, 0, n * sizeof(*mc->params));
    return mc->params;
}

static void bind_u64(MYSQL_BIND *b, uint64_t *v)
{
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
    b->is_unsigned = 1;
}

static void bind_str(MYSQL_BIND *b, const char *s, size_t len)
{
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = (void *)s;
    b->buffer_length = (unsigned long)len;
}

/* A string result column into buf (cap bytes); its length lands in *len. */
static void bind_out_str(MYSQL_BIND *b, char *buf, size_t cap, unsigned long *len)
{
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = buf;
    b->buffer_length = (unsigned long)cap;
    b->length = len;
}

/* INSERT IGNORE of every CREATE: 0, -1 (connection unusable), or 1 (ops failed, err set). */
static int run_insert(struct mysql_conn *mc, struct backend_op *ops, size_t n, size_t ncreate,
                      char *err)
{
    size_t rows = backend_mysql_stmt_rows(ncreate);
    MYSQL_STMT *st = stmt_for(mc, RS_INSERT, rows, err);
    MYSQL_BIND *b;
    size_t r = 0;
    const struct backend_op *last = NULL;

    if (st == NULL)
        return -1;
    b = params(mc, 2 * rows);
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind != BACKEND_OP_CREATE)
            continue;
        last = &ops[i];
        bind_str(&b[2 * r], last->user, last->user_len);
        bind_str(&b[2 * r + 1], last->hash, strlen(last->hash));
        r++;
    }
    for (; r < rows; r++) {
        bind_str(&b[2 * r], last->user, last->user_len);
        bind_str(&b[2 * r + 1], last->hash, strlen(last->hash));
    }
    if (mysql_stmt_bind_param(st, b) != 0 || execute(st) != 0)
        return fail_batch(st, ops, n, err) < 0 ? -1 : 1;
    return 0;
}

/* SELECT of every name: 0, -1 (connection unusable), or 1 (ops failed, err set). */
static int run_select(struct mysql_conn *mc, struct backend_op *ops, size_t n, char *err)
{
    size_t rows = backend_mysql_stmt_rows(n);
    bool limit = mc->fail_burst > 0;
    MYSQL_STMT *st = stmt_for(mc, limit ? RS_SELECT_FAIL : RS_SELECT, rows, err);
    char user[ACCOUNT_USER_MAX + 1];
    char hash[BACKEND_HASH_MAX];
    unsigned long lens[2];
    char *row[2] = {user, hash};
    uint64_t ahead_us = 0;
    my_bool hash_null = 0;
    MYSQL_BIND out[3];
    MYSQL_BIND *b;
    int rc;

    if (st == NULL)
        return -1;
    b = params(mc, limit ? 2 * rows : rows);
    for (size_t r = 0; r < rows; r++) {
        const struct backend_op *op = &ops[r < n ? r : n - 1];
        bind_str(&b[r], op->user, op->user_len);
        if (limit)
            bind_str(&b[rows + r], op->user, op->user_len);
    }
    memset(out, 0, sizeof(out));
    bind_out_str(&out[0], user, sizeof(user), &lens[0]);
    bind_out_str(&out[1], hash, sizeof(hash), &lens[1]);
    out[1].is_null = &hash_null;
    bind_u64(&out[2], &ahead_us);
    if (mysql_stmt_bind_param(st, b) != 0 || execute(st) != 0 ||
        mysql_stmt_bind_result(st, out) != 0 || mysql_stmt_store_result(st) != 0)
        return fail_batch(st, ops, n, err) < 0 ? -1 : 1;
    for (size_t i = 0; i < n; i++)
        ops[i].fail_ahead_ms = 0;
    while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
        if (lens[0] >= sizeof(user))
            continue; /* longer than any valid name: cannot be one of ours */
        if (hash_null) {
            apply_fail_row(mc, ops, n, user, lens[0], ahead_us);
            continue;
        }
        if (lens[1] >= sizeof(hash))
            lens[1] = sizeof(hash); /* did not fit: marked as such for apply_row */
        apply_row(mc, ops, n, row, lens);
    }
    if (rc != MYSQL_NO_DATA)
        return fail_batch(st, ops, n, err) < 0 ? -1 : 1;
    mysql_stmt_free_result(st);
    return 0;
}

#define FAIL_SQL                                                                                   \
    "INSERT INTO login_failures (username, tat) VALUES (?, NOW(3) + INTERVAL ? MICROSECOND) "    \
    "ON DUPLICATE KEY UPDATE tat = GREATEST(tat, NOW(3)) + INTERVAL ? MICROSECOND"

/* A batch of FAILs: each user's TAT moved to max(TAT, now) + DUR/N. 0, or -1 (unusable). */
static int run_fail(struct mysql_conn *mc, struct backend_op *ops, size_t n, char *err)
{
    uint64_t step_us = (uint64_t)mc->fail_interval_ms * 1000;
    MYSQL_BIND b[3];

    if (mc->fail == NULL) {
        mc->fail = mysql_stmt_init(mc->m);
        if (mc->fail == NULL) {
            snprintf(err, BACKEND_ERR_LEN, "mysql_stmt_init: out of memory");
            return -1;
        }
        if (mysql_stmt_prepare(mc->fail, FAIL_SQL, sizeof(FAIL_SQL) - 1) != 0) {
            int r = fail_batch(mc->fail, ops, n, err);
            mysql_stmt_close(mc->fail);
            mc->fail = NULL;
            return r;
        }
    }
    for (size_t i = 0; i < n; i++) {
        memset(b, 0, sizeof(b));
        bind_str(&b[0], ops[i].user, ops[i].user_len);
        bind_u64(&b[1], &step_us);
        bind_u64(&b[2], &step_us);
        if (mysql_stmt_bind_param(mc->fail, b) != 0 || execute(mc->fail) != 0)
            return fail_batch(mc->fail, ops + i, n - i, err) < 0 ? -1 : 0;
        ops[i].status = BACKEND_ST_OK;
        mysql_stmt_reset(mc->fail);
    }
    return 0;
}

#define UPDATE_SQL "UPDATE users SET hash = ? WHERE username = ? AND hash = ?"

/* The feed's statement i, prepared now if it is not yet; NULL with err (the statement's error
 * number in *e, 0 if none). */
static MYSQL_STMT *feed_stmt(struct mysql_conn *mc, enum feed_stmt i, char *err, unsigned *e)
{
    MYSQL_STMT *st = mc->feed[i];

    *e = 0;
    if (st != NULL)
        return st;
    st = mysql_stmt_init(mc->m);
    if (st == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "mysql_stmt_init: out of memory");
        return NULL;
    }
    if (mysql_stmt_prepare(st, feed_sql[i], (unsigned long)strlen(feed_sql[i])) != 0) {
        *e = mysql_stmt_errno(st);
        snprintf(err, BACKEND_ERR_LEN, "prepare: %s (error %u)", mysql_stmt_error(st), *e);
        mysql_stmt_close(st);
        return NULL;
    }
    mc->feed[i] = st;
    return st;
}

/* What became of a change's transaction. */
enum change_outcome {
    CHANGE_DONE = 0,     /* op->status says what */
    CHANGE_UNUSABLE = 1, /* the connection is unusable */
    CHANGE_DEADLOCK = 2, /* rolled back as a deadlock (or a failed certification): run again */
};

/* A statement of the change failed (error e): rolled back, and what that means. */
static enum change_outcome change_failed(struct mysql_conn *mc, struct backend_op *op,
                                         unsigned e, const char *msg, char *err)
{
    char why[BACKEND_ERR_LEN];

    snprintf(why, sizeof(why), "%s", msg); /* msg may be err itself */
    snprintf(err, BACKEND_ERR_LEN, "account change: %.200s (error %u)", why, e);
    if (e == 0 || connection_error(e))
        return CHANGE_UNUSABLE;
    mysql_rollback(mc->m);
    if (e == ER_LOCK_DEADLOCK)
        return CHANGE_DEADLOCK;
    op->status = transient_error(e) ? BACKEND_ST_UNAVAILABLE : BACKEND_ST_ERROR;
    return CHANGE_DONE;
}

static enum change_outcome stmt_change_failed(struct mysql_conn *mc, MYSQL_STMT *st,
                                              struct backend_op *op, char *err)
{
    enum change_outcome o = change_failed(mc, op, mysql_stmt_errno(st), mysql_stmt_error(st), err);
    mysql_stmt_reset(st);
    return o;
}

/* One try of the change's transaction (see the top of this file). */
static enum change_outcome change_once(struct mysql_conn *mc, struct backend_op *op, char *err)
{
    MYSQL_BIND b[3];
    MYSQL_STMT *st;
    uint64_t seq;
    unsigned e;

    op->change_seq = 0;
    if (mysql_query(mc->m, "START TRANSACTION") != 0)
        return change_failed(mc, op, mysql_errno(mc->m), mysql_error(mc->m), err);
    if (mc->update == NULL) {
        mc->update = mysql_stmt_init(mc->m);
        if (mc->update == NULL) {
            snprintf(err, BACKEND_ERR_LEN, "mysql_stmt_init: out of memory");
            return CHANGE_UNUSABLE;
        }
        if (mysql_stmt_prepare(mc->update, UPDATE_SQL, sizeof(UPDATE_SQL) - 1) != 0) {
            enum change_outcome o = stmt_change_failed(mc, mc->update, op, err);
            mysql_stmt_close(mc->update);
            mc->update = NULL;
            return o;
        }
    }
    memset(b, 0, sizeof(b));
    bind_str(&b[0], op->hash, strlen(op->hash));
    bind_str(&b[1], op->user, op->user_len);
    bind_str(&b[2], op->expect, strlen(op->expect));
    if (mysql_stmt_bind_param(mc->update, b) != 0 || mysql_stmt_execute(mc->update) != 0)
        return stmt_change_failed(mc, mc->update, op, err);
    if (mysql_stmt_affected_rows(mc->update) != 1) {
        mysql_stmt_reset(mc->update);
        mysql_rollback(mc->m);
        op->status = BACKEND_ST_NOTFOUND; /* gone, or changed meanwhile */
        return CHANGE_DONE;
    }
    mysql_stmt_reset(mc->update);
    st = feed_stmt(mc, FS_BUMP, err, &e);
    if (st == NULL)
        return change_failed(mc, op, e, err, err);
    if (mysql_stmt_execute(st) != 0)
        return stmt_change_failed(mc, st, op, err);
    if (mysql_stmt_affected_rows(st) != 1) {
        mysql_stmt_reset(st);
        return change_failed(mc, op, ER_NO_SUCH_TABLE, "account_seq has no row with id 1", err);
    }
    seq = mysql_stmt_insert_id(st); /* LAST_INSERT_ID(seq + 1) */
    mysql_stmt_reset(st);
    st = feed_stmt(mc, FS_LOG, err, &e);
    if (st == NULL)
        return change_failed(mc, op, e, err, err);
    memset(b, 0, sizeof(b));
    bind_u64(&b[0], &seq);
    bind_str(&b[1], op->user, op->user_len);
    if (mysql_stmt_bind_param(st, b) != 0 || mysql_stmt_execute(st) != 0)
        return stmt_change_failed(mc, st, op, err);
    mysql_stmt_reset(st);
    if (mysql_commit(mc->m) != 0)
        return change_failed(mc, op, mysql_errno(mc->m), mysql_error(mc->m), err);
    op->status = BACKEND_ST_OK;
    op->change_seq = seq;
    return CHANGE_DONE;
}

/*
 * The one REPLACE of a batch, as a transaction run again (CHANGE_RETRIES times at most) while
 * it is rolled back as a deadlock: 0, or -1 (connection unusable).
 */
static int run_replace(struct mysql_conn *mc, struct backend_op *op, char *err)
{
    for (int i = 0;; i++) {
        enum change_outcome o = change_once(mc, op, err);
        if (o == CHANGE_UNUSABLE)
            return -1;
        if (o == CHANGE_DONE)
            return 0;
        if (i == CHANGE_RETRIES) {
            op->status = BACKEND_ST_UNAVAILABLE;
            return 0;
        }
        log_info("an account change was rolled back as a deadlock: running it again");
    }
}

/* ---- the change feed ---- */

/* A feed statement failed: -1 with the reason. */
static int feed_failed(MYSQL_STMT *st, const char *what, char *err)
{
    snprintf(err, BACKEND_ERR_LEN, "%s: %s (error %u)", what, mysql_stmt_error(st),
             mysql_stmt_errno(st));
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    return -1;
}

static int my_feed_head(void *conn, uint64_t *seq, char *err)
{
    struct mysql_conn *mc = conn;
    MYSQL_BIND out[1];
    unsigned e;
    MYSQL_STMT *st = feed_stmt(mc, FS_HEAD, err, &e);
    int rc;

    if (st == NULL)
        return -1;
    memset(out, 0, sizeof(out));
    bind_u64(&out[0], seq);
    if (mysql_stmt_execute(st) != 0 || mysql_stmt_bind_result(st, out) != 0 ||
        mysql_stmt_store_result(st) != 0)
        return feed_failed(st, "the feed's head", err);
    rc = mysql_stmt_fetch(st);
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    if (rc != 0) {
        snprintf(err, BACKEND_ERR_LEN, "account_seq has no row with id 1");
        return -1;
    }
    return 0;
}

static int my_feed_read(void *conn, uint64_t after, unsigned wait_ms, struct backend_change *out,
                        size_t cap, char *err)
{
    struct mysql_conn *mc = conn;
    MYSQL_BIND b[2];
    MYSQL_BIND r[2];
    uint64_t limit = cap;
    uint64_t seq;
    char user[ACCOUNT_USER_MAX + 1];
    unsigned long ulen;
    unsigned e;
    MYSQL_STMT *st = feed_stmt(mc, FS_READ, err, &e);
    int n = 0;
    int rc;

    UNUSED(wait_ms); /* a poll: the caller waits between two reads */
    if (st == NULL)
        return -1;
    memset(b, 0, sizeof(b));
    bind_u64(&b[0], &after);
    bind_u64(&b[1], &limit);
    memset(r, 0, sizeof(r));
    bind_u64(&r[0], &seq);
    bind_out_str(&r[1], user, sizeof(user), &ulen);
    if (mysql_stmt_bind_param(st, b) != 0 || mysql_stmt_execute(st) != 0 ||
        mysql_stmt_bind_result(st, r) != 0 || mysql_stmt_store_result(st) != 0)
        return feed_failed(st, "the feed", err);
    while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
        if ((size_t)n == cap)
            break;
        if (rc != 0 || ulen == 0 || ulen > ACCOUNT_USER_MAX) {
            snprintf(err, BACKEND_ERR_LEN, "account_changes holds a row that is not a username");
            mysql_stmt_free_result(st);
            mysql_stmt_reset(st);
            return -1;
        }
        out[n].seq = seq;
        out[n].user_len = (uint8_t)ulen;
        memcpy(out[n].user, user, ulen);
        n++;
    }
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    return n;
}

/* Runs a feed statement that returns no rows, with params b (may be NULL); 0 or -1. */
static int feed_exec(struct mysql_conn *mc, enum feed_stmt i, MYSQL_BIND *b, const char *what,
                     char *err)
{
    unsigned e;
    MYSQL_STMT *st = feed_stmt(mc, i, err, &e);

    if (st == NULL)
        return -1;
    if ((b != NULL && mysql_stmt_bind_param(st, b) != 0) || mysql_stmt_execute(st) != 0)
        return feed_failed(st, what, err);
    mysql_stmt_reset(st);
    return 0;
}

static int my_feed_renew(void *conn, const char *peer, uint64_t applied, unsigned lease_ms,
                         char *err)
{
    struct mysql_conn *mc = conn;
    MYSQL_BIND b[3];
    uint64_t lease_us = (uint64_t)lease_ms * 1000;

    memset(b, 0, sizeof(b));
    bind_str(&b[0], peer, strlen(peer));
    if (lease_ms == 0)
        return feed_exec(mc, FS_LEAVE, b, "leaving the registry", err);
    bind_u64(&b[1], &applied);
    bind_u64(&b[2], &lease_us);
    if (feed_exec(mc, FS_RENEW, b, "the registry's renewal", err) < 0)
        return -1;
    if (mc->renewals++ % PRUNE_EVERY == 0 &&
        (feed_exec(mc, FS_PRUNE_PEERS, NULL, "pruning the registry", err) < 0 ||
         feed_exec(mc, FS_PRUNE_CHANGES, NULL, "pruning the feed", err) < 0 ||
         (mc->fail_burst > 0 &&
          feed_exec(mc, FS_PRUNE_FAILURES, NULL, "pruning the failed logins", err) < 0)))
        return -1;
    return 0;
}

static int my_feed_behind(void *conn, uint64_t seq, unsigned *count, char *err)
{
    struct mysql_conn *mc = conn;
    MYSQL_BIND b[1];
    MYSQL_BIND r[1];
    uint64_t n = 0;
    unsigned e;
    MYSQL_STMT *st = feed_stmt(mc, FS_BEHIND, err, &e);
    int rc;

    if (st == NULL)
        return -1;
    memset(b, 0, sizeof(b));
    bind_u64(&b[0], &seq);
    memset(r, 0, sizeof(r));
    bind_u64(&r[0], &n);
    if (mysql_stmt_bind_param(st, b) != 0 || mysql_stmt_execute(st) != 0 ||
        mysql_stmt_bind_result(st, r) != 0 || mysql_stmt_store_result(st) != 0)
        return feed_failed(st, "the registry's check", err);
    rc = mysql_stmt_fetch(st);
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    if (rc != 0) {
        snprintf(err, BACKEND_ERR_LEN, "the registry's check returned no row");
        return -1;
    }
    *count = (unsigned)n;
    return 0;
}

static int my_batch(void *conn, struct backend_op *ops, size_t n, char *err)
{
    struct mysql_conn *mc = conn;
    size_t ncreate = 0;
    int rc;

    err[0] = '\0';
    if (n == 0)
        return 0;
    if (ops[0].kind == BACKEND_OP_REPLACE) {
        if (n != 1) {
            snprintf(err, BACKEND_ERR_LEN, "a REPLACE must be alone in its batch");
            return -1;
        }
        return run_replace(mc, &ops[0], err);
    }
    if (ops[0].kind == BACKEND_OP_FAIL)
        return run_fail(mc, ops, n, err);
    for (size_t i = 0; i < n; i++) {
        ops[i].status = ops[i].kind == BACKEND_OP_CREATE ? BACKEND_ST_ERROR : BACKEND_ST_NOTFOUND;
        if (ops[i].kind == BACKEND_OP_CREATE)
            ncreate++;
    }
    sort_order(mc, ops, n);
    if (ncreate > 0) {
        rc = run_insert(mc, ops, n, ncreate, err);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    rc = run_select(mc, ops, n, err);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind == BACKEND_OP_CREATE && ops[i].status == BACKEND_ST_ERROR)
            snprintf(err, BACKEND_ERR_LEN, "a row inserted by INSERT IGNORE is missing");
    }
    return 0;
}

/* Every row of users, in name order; not stored client-side: rows are fetched one by one. */
static int my_list(void *conn, backend_list_cb cb, void *arg, char *err)
{
    struct mysql_conn *mc = conn;
    char user[ACCOUNT_USER_MAX + 1];
    char hash[BACKEND_HASH_MAX];
    unsigned long lens[2];
    MYSQL_BIND out[2];
    unsigned e;
    MYSQL_STMT *st = feed_stmt(mc, FS_LIST, err, &e);
    int rc;

    if (st == NULL)
        return -1;
    memset(out, 0, sizeof(out));
    bind_out_str(&out[0], user, sizeof(user), &lens[0]);
    bind_out_str(&out[1], hash, sizeof(hash), &lens[1]);
    if (mysql_stmt_execute(st) != 0 || mysql_stmt_bind_result(st, out) != 0)
        return feed_failed(st, "the listing", err);
    while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
        if (lens[0] >= sizeof(user) || !account_username_valid(user, lens[0]))
            continue; /* not a name server2 would have stored */
        if (lens[1] >= sizeof(hash))
            hash[0] = '\0'; /* did not fit: not a record of ours */
        if (cb(arg, user, lens[0], hash) < 0) {
            snprintf(err, BACKEND_ERR_LEN, "the listing was stopped");
            mysql_stmt_free_result(st);
            mysql_stmt_reset(st);
            return -1;
        }
    }
    if (rc != MYSQL_NO_DATA)
        return feed_failed(st, "the listing", err);
    mysql_stmt_free_result(st);
    mysql_stmt_reset(st);
    return 0;
}

const struct backend_ops backend_mysql_ops = {
    .name = "mysql",
    .thread_init = mysql_thread_init_cb,
    .thread_end = mysql_thread_end_cb,
    .connect = my_connect,
    .batch = my_batch,
    .close = my_close,
    .ping = my_ping,
    .feed_head = my_feed_head,
    .feed_read = my_feed_read,
    .feed_renew = my_feed_renew,
    .feed_behind = my_feed_behind,
    .feed_blocks = false,
    .list = my_list,
};
