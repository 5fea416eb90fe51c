/*
 * backend_mysql.c - backend_ops on MariaDB/MySQL (Connector/C) and the table
 * auth.users(username PRIMARY KEY, hash). A batch is ONE round trip: one COM_QUERY holding
 *   INSERT IGNORE INTO users (username, hash) VALUES (u1,h1),(u2,h2),...;   -- if any CREATE
 *   SELECT username, hash FROM users WHERE username IN (every username of the batch)
 * sent with CLIENT_MULTI_STATEMENTS. With autocommit on, the INSERT commits (and InnoDB flushes
 * its log) before the SELECT runs. A CREATE succeeded iff the row now holds the hash this batch
 * generated: argon2 salts are random, so an equal string can only be ours; any other row means
 * the name was taken. The caller never puts the same name in two CREATEs of one batch.
 * Client errors (CR_*, lost connection, timeouts) make the connection unusable (-1); server
 * errors fail the batch's ops on a connection that stays usable.
 */
#include "backend.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct mysql_conn {
    MYSQL *m;
    char *q; /* query buffer, grown as needed */
    size_t qcap;
    size_t qlen;
    size_t *order; /* op indices sorted by username */
    size_t order_cap;
};

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

static void *my_connect(const struct backend_url *u, char *err)
{
    struct mysql_conn *mc;
    unsigned int connect_s = (BACKEND_IO_TIMEOUT_MS + 999) / 1000;
    unsigned int io_s = (BACKEND_IO_TIMEOUT_MS + 999) / 1000;
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
    if (mysql_real_connect(m, u->host, u->user, u->has_password ? u->password : NULL, u->db,
                           u->port, u->socket[0] ? u->socket : NULL,
                           CLIENT_MULTI_STATEMENTS) == NULL) {
        snprintf(err, BACKEND_ERR_LEN, "%s (error %u)", mysql_error(m), mysql_errno(m));
        mysql_close(m);
        return NULL;
    }
    mc = xcalloc(1, sizeof(*mc));
    mc->m = m;
    return mc;
}

static void my_close(void *conn)
{
    struct mysql_conn *mc = conn;
    if (mc == NULL)
        return;
    mysql_close(mc->m);
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

/* Appends 'escaped s' (a quoted SQL string literal). */
static void q_str(struct mysql_conn *mc, const char *s, size_t n)
{
    q_reserve(mc, 2 * n + 3);
    mc->q[mc->qlen++] = '\'';
    mc->qlen += mysql_real_escape_string(mc->m, mc->q + mc->qlen, s, (unsigned long)n);
    mc->q[mc->qlen++] = '\'';
    mc->q[mc->qlen] = '\0';
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

static void apply_row(struct mysql_conn *mc, struct backend_op *ops, size_t n, MYSQL_ROW row,
                      const unsigned long *lens)
{
    if (row[0] == NULL || row[1] == NULL)
        return;
    for (size_t k = lower_bound(mc, ops, n, row[0], lens[0]); k < n; k++) {
        struct backend_op *op = &ops[mc->order[k]];
        if (op->user_len != lens[0] || memcmp(op->user, row[0], lens[0]) != 0)
            break;
        if (op->kind == BACKEND_OP_CREATE) {
            bool ours = strlen(op->hash) == lens[1] && memcmp(op->hash, row[1], lens[1]) == 0;
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

static bool connection_error(unsigned int e)
{
    return (e >= CR_MIN_ERROR && e <= CR_MAX_ERROR) || e == ER_SERVER_SHUTDOWN ||
           e == ER_CONNECTION_KILLED || e == ER_QUERY_INTERRUPTED || e == ER_CON_COUNT_ERROR;
}

static bool transient_error(unsigned int e)
{
    return e == ER_LOCK_WAIT_TIMEOUT || e == ER_LOCK_DEADLOCK || e == ER_READ_ONLY_MODE ||
           e == ER_OPTION_PREVENTS_STATEMENT;
}

/*
 * The last call failed: -1 if the connection is unusable, else marks every op failed, skips
 * what is left of the multi-statement results, and returns 0. Parse errors quote the query,
 * which holds hashes, so their message is never copied.
 */
static int fail_batch(struct mysql_conn *mc, struct backend_op *ops, size_t n, char *err)
{
    unsigned int e = mysql_errno(mc->m);

    if (e == 0 || connection_error(e)) {
        snprintf(err, BACKEND_ERR_LEN, "%s (error %u)", e ? mysql_error(mc->m) : "unknown", e);
        return -1;
    }
    if (e == ER_PARSE_ERROR)
        snprintf(err, BACKEND_ERR_LEN, "error %u (SQLSTATE %s)", e, mysql_sqlstate(mc->m));
    else
        snprintf(err, BACKEND_ERR_LEN, "%s (error %u, SQLSTATE %s)", mysql_error(mc->m), e,
                 mysql_sqlstate(mc->m));
    for (size_t i = 0; i < n; i++)
        ops[i].status = transient_error(e) ? BACKEND_ST_UNAVAILABLE : BACKEND_ST_ERROR;
    while (mysql_more_results(mc->m)) {
        MYSQL_RES *res;
        if (mysql_next_result(mc->m) != 0)
            break;
        res = mysql_store_result(mc->m);
        if (res != NULL)
            mysql_free_result(res);
    }
    if (mysql_more_results(mc->m)) {
        snprintf(err, BACKEND_ERR_LEN, "cannot skip the rest of a failed batch");
        return -1;
    }
    return 0;
}

static int my_batch(void *conn, struct backend_op *ops, size_t n, char *err)
{
    struct mysql_conn *mc = conn;
    size_t ncreate = 0;
    bool first;
    bool got_rows = false;
    int st;

    err[0] = '\0';
    if (n == 0)
        return 0;
    mc->qlen = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind != BACKEND_OP_CREATE)
            continue;
        q_lit(mc, ncreate == 0 ? "INSERT IGNORE INTO users (username, hash) VALUES (" : ",(");
        q_str(mc, ops[i].user, ops[i].user_len);
        q_lit(mc, ",");
        q_str(mc, ops[i].hash, strlen(ops[i].hash));
        q_lit(mc, ")");
        ncreate++;
    }
    if (ncreate > 0)
        q_lit(mc, ";");
    q_lit(mc, "SELECT username, hash FROM users WHERE username IN (");
    first = true;
    for (size_t i = 0; i < n; i++) {
        if (!first)
            q_lit(mc, ",");
        q_str(mc, ops[i].user, ops[i].user_len);
        first = false;
    }
    q_lit(mc, ")");

    for (size_t i = 0; i < n; i++)
        ops[i].status = ops[i].kind == BACKEND_OP_CREATE ? BACKEND_ST_ERROR : BACKEND_ST_NOTFOUND;
    sort_order(mc, ops, n);

    if (mysql_real_query(mc->m, mc->q, (unsigned long)mc->qlen) != 0)
        return fail_batch(mc, ops, n, err);
    do {
        MYSQL_RES *res = mysql_store_result(mc->m);
        if (res != NULL) {
            MYSQL_ROW row;
            while ((row = mysql_fetch_row(res)) != NULL) {
                const unsigned long *lens = mysql_fetch_lengths(res);
                if (lens != NULL && mysql_num_fields(res) == 2)
                    apply_row(mc, ops, n, row, lens);
            }
            mysql_free_result(res);
            got_rows = true;
        } else if (mysql_field_count(mc->m) != 0) {
            return fail_batch(mc, ops, n, err);
        }
        st = mysql_next_result(mc->m);
    } while (st == 0);
    if (st > 0)
        return fail_batch(mc, ops, n, err);
    if (!got_rows) {
        snprintf(err, BACKEND_ERR_LEN, "the SELECT of a batch returned no result set");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind == BACKEND_OP_CREATE && ops[i].status == BACKEND_ST_ERROR)
            snprintf(err, BACKEND_ERR_LEN, "a row inserted by INSERT IGNORE is missing");
    }
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
};
