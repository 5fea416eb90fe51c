/*
 * admin.c - see admin.h. One command per run: parse the flags, read the password if the
 * command needs one, connect, work, say what was done on stdout (errors on stderr).
 */
#include "admin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "account.h"
#include "backend.h"
#include "clock.h"
#include "compat.h"
#include "config.h"
#include "flagtab.h"
#include "frame.h"
#include "ioloop.h"
#include "log.h"
#include "pwhash.h"
#include "record.h"
#include "xalloc.h"

#define PASS_BUF (ACCOUNT_PASS_MAX + 2) /* a line of a valid password, its NUL, one byte more */

struct s2_admin {
    struct s2_config s2;       /* first: the database flags are server2's (config.h) */
    const char *password_file; /* --password-file; NULL: stdin */
};

enum admin_cmd {
    CMD_LIST,
    CMD_CREATE,
    CMD_RESET,
    CMD_DELETE,
    CMD_LOCK,
    CMD_UNLOCK,
};

static const struct {
    const char *name;
    enum admin_cmd cmd;
    bool needs_password;
} cmds[] = {
    {"list", CMD_LIST, false},     {"create", CMD_CREATE, true}, {"reset", CMD_RESET, true},
    {"delete", CMD_DELETE, false}, {"lock", CMD_LOCK, false},    {"unlock", CMD_UNLOCK, false},
};

static void defaults_cb(void *cfg)
{
    struct s2_admin *a = cfg;

    memset(a, 0, sizeof(*a));
    s2_config_defaults(&a->s2);
}

static const struct flagtab_choice hash_costs[] = {{"min", PWHASH_MIN},
                                                   {"interactive", PWHASH_INTERACTIVE},
                                                   {"moderate", PWHASH_MODERATE},
                                                   {NULL, 0}};

#define A(field) FLAGTAB_DST(struct s2_admin, field)
#define SEC 1000000ull

static const struct flagtab_flag admin_flags[] = {
    {FLAGTAB_CUSTOM, "backend", 'b', .arg = "URL", .fn = s2_config_on_backend,
     .flags = FLAGTAB_F_TAKES_ARG,
     .help = "required: the database, as server2's --backend URL (server2 --help)"},
    {FLAGTAB_PATH, "backend-password-file", .arg = "PATH", A(s2.backend_password_file),
     .def = "no password",
     .help = "the database password: the file's first line; if not given, the environment "
             "variable " S2_BACKEND_PASSWORD_ENV},
    {FLAGTAB_PATH, "sentinel-password-file", .arg = "PATH", A(s2.sentinel_password_file),
     .def = "no password",
     .help = "redis-sentinel://: the Sentinels' own password; if not given, the environment "
             "variable " S2_SENTINEL_PASSWORD_ENV},
    {FLAGTAB_PATH, "backend-tls-ca", .arg = "PATH", A(s2.backend_tls_ca), .def = "the system's",
     .help = "a TLS backend: the CA certificates the database's certificate is checked with"},
    {FLAGTAB_PATH, "backend-tls-cert", .arg = "PATH", A(s2.backend_tls_cert), .def = "none",
     .help = "a TLS backend: a client certificate to offer, with --backend-tls-key"},
    {FLAGTAB_PATH, "backend-tls-key", .arg = "PATH", A(s2.backend_tls_key), .def = "none",
     .help = "a TLS backend: the client certificate's private key"},
    {FLAGTAB_DURATION, "backend-timeout", .arg = "D", .min = 100000, .max = 60 * SEC,
     A(s2.backend_timeout_us), .help = "one database read or write at most"},
    {FLAGTAB_U64, "redis-wait", .arg = "N", .min = 0, .max = 16, A(s2.redis_wait),
     .def = "as server2's",
     .help = "Redis: a write is done only once N replicas have it (WAIT)"},
    {FLAGTAB_ENUM, "hash-cost", A(s2.hash_cost), .choices = hash_costs,
     .help = "argon2id cost of the passwords create and reset store: as the server2s' "
             "--hash-cost"},
    {FLAGTAB_PATH, "password-file", .arg = "PATH", A(password_file), .def = "stdin",
     .help = "create, reset: the new password is the file's first line (without its newline); "
             "without it, stdin's first line, asked twice without echo on a terminal. Never "
             "in argv, never printed"},
    {FLAGTAB_HELP, "help", 'h', .help = "print this help, exit"},
    {.kind = FLAGTAB_END},
};

static const struct flagtab_prog admin_prog = {
    .name = "server2 admin",
    .summary = "the accounts in server2's database",
    .usage = "server2 admin --backend URL [flags] COMMAND [NAME]",
    .about = "Lists and changes the accounts in server2's database, directly, with server2's own "
             "code: a running server2 is not needed, and every server2 on the database has its "
             "server1s forget a changed account before the command says it is done "
             "(docs/operate.md, \"Accounts: sign-up policy and the admin tool\").\n\n"
             "Commands:\n"
             "  list: every account: NAME<TAB>active, locked or deleted (no creation time "
             "is stored)\n"
             "  create NAME: a new account, the password from stdin or --password-file\n"
             "  reset NAME: a new password (a locked account stays locked)\n"
             "  delete NAME: delete the account (its name stays taken)\n"
             "  lock NAME: refuse its password (server1 answers 401, as for a wrong one)\n"
             "  unlock NAME: accept it again",
    .notes = "Exit status: 0 done, 1 no such account (or, for create, it exists), 2 bad usage "
             "or input (nothing done), 3 the database failed, or the change is made but not "
             "every server2 confirmed in time that its server1s forgot the old password.",
    .flags = admin_flags,
    .cfg_size = sizeof(struct s2_admin),
    .defaults = defaults_cb,
    .help_col = 28,
};

/* ---- the password ---- */

/*
 * One line of f without its "\n" (or "\r\n") into out (PASS_BUF bytes): its length, -1 at
 * end of file with nothing read, -2 if longer than a password may be (the rest is skipped).
 */
static int read_line(FILE *f, char *out)
{
    size_t n = 0;
    bool too_long = false;
    int ch;

    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (n + 1 >= PASS_BUF)
            too_long = true;
        else
            out[n++] = (char)ch;
    }
    if (too_long)
        return -2;
    if (ch == EOF && n == 0)
        return -1;
    if (n > 0 && out[n - 1] == '\r')
        n--;
    out[n] = '\0';
    return (int)n;
}

/*
 * A line of the terminal on stdin, read without echo after prompt (on stderr). As getpass(3):
 * echo goes off (and what was typed before is dropped) before the prompt is shown, so nothing
 * typed after it is ever echoed.
 */
static int read_tty_line(const char *prompt, char *out)
{
    struct termios old, quiet;
    int n;

    if (tcgetattr(STDIN_FILENO, &old) < 0)
        return -1;
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    quiet.c_lflag |= ECHONL;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) < 0)
        return -1;
    fputs(prompt, stderr);
    fflush(stderr);
    n = read_line(stdin, out);
    (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    return n;
}

/* The new password for name into pass (PASS_BUF bytes): its length, or -1 (said why). */
static int read_password(const struct s2_admin *a, const char *name, char *pass)
{
    char again[PASS_BUF];
    char prompt[128];
    int n;

    if (a->password_file != NULL) {
        FILE *f = fopen(a->password_file, "re");
        if (f == NULL) {
            char ebuf[128];
            fprintf(stderr, "server2 admin: --password-file: cannot open '%s': %s\n",
                    a->password_file, strerror_r(errno, ebuf, sizeof(ebuf)));
            return -1;
        }
        n = read_line(f, pass);
        fclose(f);
    } else if (isatty(STDIN_FILENO)) {
        snprintf(prompt, sizeof(prompt), "new password for '%s': ", name);
        n = read_tty_line(prompt, pass);
        if (n >= 0) {
            int m = read_tty_line("the same again: ", again);
            if (m != n || memcmp(pass, again, (size_t)n) != 0) {
                sodium_memzero(again, sizeof(again));
                fprintf(stderr, "server2 admin: the two passwords differ\n");
                return -1;
            }
            sodium_memzero(again, sizeof(again));
        }
    } else {
        n = read_line(stdin, pass);
    }
    if (n == -2 || (n >= 0 && !account_password_valid(pass, (size_t)n))) {
        fprintf(stderr, "server2 admin: the password must be 1-%d bytes without NUL\n",
                ACCOUNT_PASS_MAX);
        return -1;
    }
    if (n < 0) {
        fprintf(stderr, "server2 admin: no password given (stdin or --password-file)\n");
        return -1;
    }
    return n;
}

/* ---- the commands ---- */

struct admin_run {
    const struct backend_ops *ops;
    void *conn;
    const char *name;
    size_t name_len;
    char err[BACKEND_ERR_LEN];
};

static int db_failed(const struct admin_run *r, const char *what)
{
    fprintf(stderr, "server2 admin: %s: %s\n", what, r->err[0] ? r->err : "the database failed");
    return ADMIN_EXIT_FAILED;
}

struct list_row {
    char user[ACCOUNT_USER_MAX + 1];
    const char *state;
};

struct list_rows {
    struct list_row *v;
    size_t n;
    size_t cap;
};

static int on_row(void *arg, const char *user, size_t user_len, const char *rec)
{
    struct list_rows *rows = arg;
    struct list_row *row;

    if (rows->n == rows->cap) {
        rows->cap = rows->cap ? 2 * rows->cap : 256;
        rows->v = xrealloc(rows->v, rows->cap * sizeof(*rows->v));
    }
    row = &rows->v[rows->n++];
    memcpy(row->user, user, user_len);
    row->user[user_len] = '\0';
    row->state = record_deleted(rec)  ? "deleted"
                 : record_locked(rec) ? "locked"
                                      : "active";
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const struct list_row *)a)->user, ((const struct list_row *)b)->user);
}

/* Every account, sorted by name, each once (Redis's SCAN may give a key twice). */
static int run_list(struct admin_run *r)
{
    struct list_rows rows = {0};

    if (r->ops->list == NULL || r->ops->list(r->conn, on_row, &rows, r->err) < 0) {
        free(rows.v);
        return db_failed(r, "cannot list the accounts");
    }
    if (rows.n > 0)
        qsort(rows.v, rows.n, sizeof(*rows.v), cmp_row);
    for (size_t i = 0; i < rows.n; i++)
        if (i == 0 || strcmp(rows.v[i].user, rows.v[i - 1].user) != 0)
            printf("%s\t%s\n", rows.v[i].user, rows.v[i].state);
    free(rows.v);
    return fflush(stdout) == 0 ? ADMIN_EXIT_OK : ADMIN_EXIT_FAILED;
}

static int run_create(struct admin_run *r, const char *hash)
{
    uint8_t token[FRAME_TOKEN_SIZE];
    char rec[BACKEND_HASH_MAX];
    struct backend_op op = {.kind = BACKEND_OP_CREATE, .user = r->name, .user_len = r->name_len};

    randombytes_buf(token, sizeof(token)); /* a creation of its own, as server1 draws one */
    if (record_make(token, hash, rec, sizeof(rec)) < 0) {
        snprintf(r->err, sizeof(r->err), "the record does not fit");
        return db_failed(r, "cannot create");
    }
    op.hash = rec;
    r->err[0] = '\0';
    if (r->ops->batch(r->conn, &op, 1, r->err) < 0)
        return db_failed(r, "cannot create");
    switch (op.status) {
    case BACKEND_ST_OK:
        printf("created '%s'\n", r->name);
        return ADMIN_EXIT_OK;
    case BACKEND_ST_EXISTS:
        fprintf(stderr, "server2 admin: '%s' exists (a deleted account's name stays taken)\n",
                r->name);
        return ADMIN_EXIT_NOTFOUND;
    default:
        return db_failed(r, "cannot create");
    }
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/*
 * Waits until no live server2 is behind change seq (each has had its server1s forget the
 * account), INVAL_WAIT_MS at most: 0, 1 if some still were (*behind), -1 (r->err).
 */
static int wait_applied(struct admin_run *r, uint64_t seq, unsigned *behind)
{
    uint64_t deadline = clock_now_ns() + INVAL_WAIT_MS * 1000000ull;

    for (;;) {
        if (r->ops->feed_behind == NULL ||
            r->ops->feed_behind(r->conn, seq, behind, r->err) < 0)
            return -1;
        if (*behind == 0)
            return 0;
        if (clock_now_ns() >= deadline)
            return 1;
        sleep_ms(ADMIN_POLL_MS);
    }
}

/*
 * The record that replaces stored for cmd (into next, BACKEND_HASH_MAX bytes): 1, 0 if there is
 * nothing to change (said so), -1 (r->err).
 */
static int next_record(struct admin_run *r, enum admin_cmd cmd, const char *stored,
                       const char *hash, char *next)
{
    bool locked = record_locked(stored);

    switch (cmd) {
    case CMD_RESET:
        if (!locked) {
            snprintf(next, BACKEND_HASH_MAX, "%s", hash);
            return 1;
        }
        if (record_lock(hash, next, BACKEND_HASH_MAX) < 0)
            break;
        return 1;
    case CMD_DELETE:
        snprintf(next, BACKEND_HASH_MAX, "%s", RECORD_TOMBSTONE);
        return 1;
    case CMD_LOCK:
        if (locked) {
            printf("'%s' is locked already\n", r->name);
            return 0;
        }
        if (record_lock(stored, next, BACKEND_HASH_MAX) < 0)
            break;
        return 1;
    case CMD_UNLOCK:
        if (!locked) {
            printf("'%s' is not locked\n", r->name);
            return 0;
        }
        snprintf(next, BACKEND_HASH_MAX, "%s", record_unlocked(stored));
        return 1;
    default:
        break;
    }
    snprintf(r->err, sizeof(r->err), "the record does not fit");
    return -1;
}

static const char *done_text(enum admin_cmd cmd)
{
    switch (cmd) {
    case CMD_RESET:
        return "reset the password of";
    case CMD_DELETE:
        return "deleted";
    case CMD_LOCK:
        return "locked";
    default:
        return "unlocked";
    }
}

/*
 * reset, delete, lock, unlock: look the account up, then replace its record iff it still holds
 * the one read (tried again if it changed meanwhile), then wait for every server2.
 */
static int run_change(struct admin_run *r, enum admin_cmd cmd, const char *hash)
{
    struct backend_op op;
    char stored[BACKEND_HASH_MAX];
    char next[BACKEND_HASH_MAX];
    uint64_t seq = 0;
    unsigned behind = 0;
    int rc;

    for (int attempt = 0; seq == 0; attempt++) {
        if (attempt == ADMIN_CAS_TRIES) {
            fprintf(stderr, "server2 admin: '%s' changed %d times while this ran; nothing done\n",
                    r->name, ADMIN_CAS_TRIES);
            return ADMIN_EXIT_FAILED;
        }
        op = (struct backend_op){.kind = BACKEND_OP_LOOKUP, .user = r->name,
                                 .user_len = r->name_len};
        r->err[0] = '\0';
        if (r->ops->batch(r->conn, &op, 1, r->err) < 0)
            return db_failed(r, "cannot read the account");
        if (op.status == BACKEND_ST_NOTFOUND ||
            (op.status == BACKEND_ST_OK && record_deleted(op.stored))) {
            fprintf(stderr, "server2 admin: no account '%s'\n", r->name);
            return ADMIN_EXIT_NOTFOUND;
        }
        if (op.status != BACKEND_ST_OK || op.stored[0] == '\0')
            return db_failed(r, "cannot read the account");
        memcpy(stored, op.stored, sizeof(stored));
        rc = next_record(r, cmd, stored, hash, next);
        if (rc <= 0)
            return rc == 0 ? ADMIN_EXIT_OK : db_failed(r, "cannot change the account");
        op = (struct backend_op){.kind = BACKEND_OP_REPLACE, .user = r->name,
                                 .user_len = r->name_len, .hash = next, .expect = stored};
        r->err[0] = '\0';
        if (r->ops->batch(r->conn, &op, 1, r->err) < 0)
            return db_failed(r, "the change may or may not have been made");
        if (op.status == BACKEND_ST_OK)
            seq = op.change_seq ? op.change_seq : 1;
        else if (op.status != BACKEND_ST_NOTFOUND) /* NOTFOUND: changed meanwhile, again */
            return db_failed(r, "cannot change the account");
    }
    sodium_memzero(next, sizeof(next));
    rc = wait_applied(r, seq, &behind);
    if (rc < 0)
        return db_failed(r, "the change is made, but whether every server2 has applied it is "
                            "unknown");
    if (rc > 0) {
        fprintf(stderr,
                "server2 admin: %s '%s', but after %d ms %u server2(s) had not yet made their "
                "server1s forget the old state: one may still accept the old password until it "
                "does or its lease runs out\n",
                done_text(cmd), r->name, INVAL_WAIT_MS, behind);
        return ADMIN_EXIT_FAILED;
    }
    printf("%s '%s'\n", done_text(cmd), r->name);
    return ADMIN_EXIT_OK;
}

/* Connected: runs cmd (hash: the new password's, for create and reset). */
static int run(struct admin_run *r, enum admin_cmd cmd, const char *hash)
{
    switch (cmd) {
    case CMD_LIST:
        return run_list(r);
    case CMD_CREATE:
        return run_create(r, hash);
    default:
        return run_change(r, cmd, hash);
    }
}

PRINTF_FMT(1, 2) static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("server2 admin: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (see server2 admin --help)\n", stderr);
    return ADMIN_EXIT_USAGE;
}

int s2_admin_main(int argc, char **argv)
{
    struct s2_admin a;
    struct admin_run r = {0};
    char err[S2_CONFIG_ERR_LEN];
    char pass[PASS_BUF];
    char hash[PWHASH_STR_MAX] = "";
    const char *args[2]; /* the command and its name */
    int nargs = 0;
    int first = argc;
    size_t c;
    int rc;

    defaults_cb(&a);
    /* flags before, between and after the arguments: each argument in turn is taken as the
     * argv[0] of the flags that follow it */
    for (;;) {
        switch (flagtab_parse_args(&admin_prog, &a, argc, argv, &first, err)) {
        case FLAGTAB_EXIT:
            return ADMIN_EXIT_OK;
        case FLAGTAB_ERROR:
            fprintf(stderr, "server2 admin: %s\n", err);
            return ADMIN_EXIT_USAGE;
        case FLAGTAB_OK:
            break;
        }
        if (first >= argc)
            break;
        if (strcmp(argv[first - 1], "--") == 0) {
            /* after "--" every word is an argument (a user name may begin with '-') */
            for (; first < argc; first++) {
                if (nargs == 2)
                    return usage_error("unexpected argument '%.64s'", argv[first]);
                args[nargs++] = argv[first];
            }
            break;
        }
        if (nargs == 2)
            return usage_error("unexpected argument '%.64s'", argv[first]);
        args[nargs++] = argv[first];
        argv += first;
        argc -= first;
    }
    if (nargs == 0)
        return usage_error("%s", "a command is needed: list, create, reset, delete, lock or "
                                 "unlock");
    for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
        if (strcmp(args[0], cmds[c].name) == 0)
            break;
    if (c == sizeof(cmds) / sizeof(cmds[0]))
        return usage_error("unknown command '%.64s'", args[0]);
    if (nargs != (cmds[c].cmd == CMD_LIST ? 1 : 2))
        return usage_error(cmds[c].cmd == CMD_LIST ? "%s takes no argument"
                                                   : "%s takes one argument: the account's name",
                           cmds[c].name);
    if (cmds[c].cmd != CMD_LIST) {
        r.name = args[1];
        r.name_len = strlen(r.name);
        if (!account_username_valid(r.name, r.name_len))
            return usage_error("'%.64s' is not a username (1-64 of A-Z a-z 0-9 . _ -)",
                               r.name);
    }
    if (s2_config_backend_finish(&a.s2, err) < 0) {
        fprintf(stderr, "server2 admin: %s\n", err);
        return ADMIN_EXIT_USAGE;
    }
    log_init("server2-admin", LOG_WARN);
    if (sodium_init() < 0) {
        fprintf(stderr, "server2 admin: cannot initialise libsodium\n");
        return ADMIN_EXIT_FAILED;
    }
    if (cmds[c].needs_password) {
        int n = read_password(&a, r.name, pass);
        if (n < 0) {
            sodium_memzero(pass, sizeof(pass));
            return ADMIN_EXIT_USAGE;
        }
        rc = pwhash_hash(a.s2.hash_cost, pass, (size_t)n, hash);
        sodium_memzero(pass, sizeof(pass));
        if (rc < 0) {
            fprintf(stderr, "server2 admin: cannot hash the password (out of memory)\n");
            return ADMIN_EXIT_FAILED;
        }
    }
    if (backend_library_init() < 0) {
        fprintf(stderr, "server2 admin: cannot initialise the MySQL client library\n");
        return ADMIN_EXIT_FAILED;
    }
    r.ops = backend_ops_for(&a.s2.backend);
    if (r.ops->thread_init)
        r.ops->thread_init();
    r.conn = r.ops->connect(&a.s2.backend, r.err);
    if (r.conn == NULL)
        rc = db_failed(&r, "cannot reach the database");
    else
        rc = run(&r, cmds[c].cmd, hash);
    if (r.conn != NULL)
        r.ops->close(r.conn);
    if (r.ops->thread_end)
        r.ops->thread_end();
    backend_library_end();
    backend_url_wipe(&a.s2.backend);
    sodium_memzero(hash, sizeof(hash));
    return rc;
}
