/*
 * test_flagtab.c - the flag table module: every kind parsed into its destination, one error
 * line naming the flag and what it accepts, getopt's own errors, --help/man/markdown from one
 * table, and the three programs' tables checked for consistency (names, bounds, defaults).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "flagtab.h"
#include "opts.h"

#include "../../../loadgen/config.h"
#include "../../../server1/config.h"
#include "../../../server2/config.h"

struct toy {
    uint16_t num;
    uint64_t size;
    uint64_t dur_us;
    uint64_t win_us;
    double rate;
    struct opts_rate limit;
    const char *addr;
    const char *path;
    char name[8];
    int mode;
    bool on;
    unsigned verbose;
    bool num_seen;
    char custom[16];
};

static int on_custom(void *cfg, const char *arg, char *err)
{
    struct toy *t = cfg;

    if (strcmp(arg, "bad") == 0) {
        snprintf(err, FLAGTAB_ERR_LEN, "--custom: 'bad' is bad");
        return -1;
    }
    snprintf(t->custom, sizeof(t->custom), "%s", arg);
    return 0;
}

static void toy_defaults(void *cfg)
{
    struct toy *t = cfg;

    memset(t, 0, sizeof(*t));
    t->num = 5;
    t->size = 64 << 10;
    t->dur_us = 2000000;
    t->win_us = 10000;
    t->rate = 1.5;
    t->limit = (struct opts_rate){20, 60000000};
    t->addr = "127.0.0.1";
    t->mode = 1;
    t->on = true;
}

static void toy_version(void)
{
}

static const struct flagtab_choice modes[] = {{"fast", 0}, {"slow", 1}, {"odd", 7}, {NULL, 0}};

#define T(field) FLAGTAB_DST(struct toy, field)

static const struct flagtab_flag toy_flags[] = {
    {FLAGTAB_U64, "num", 'n', 'N', .alias = "number", .arg = "N", .min = 1, .max = 10, T(num),
     FLAGTAB_SEEN(struct toy, num_seen), .def = "cores", .flags = FLAGTAB_F_RUNTIME,
     .help = "a number"},
    {FLAGTAB_SIZE, "size", .arg = "SZ", .min = 1, .max = 1 << 20, T(size), .help = "a size"},
    {FLAGTAB_DURATION, "dur", .arg = "DUR", .min = 1000, .max = 60000000, T(dur_us),
     .help = "a duration"},
    {FLAGTAB_DURATION, "win", .arg = "DUR", .min = 4000, .max = 60000000, T(win_us),
     .flags = FLAGTAB_F_ZERO, .help = "0 or a window"},
    {FLAGTAB_DOUBLE, "rate", .arg = "R", .dmin = 0.5, .dmax = 100, T(rate), .help = "a rate"},
    {FLAGTAB_RATE, "limit", .arg = "N/DUR", T(limit), .help = "a limit"},
    {FLAGTAB_SECTION, "Strings", .help = "values that are \\text, not numbers."},
    {FLAGTAB_STR, "addr", 'a', .arg = "ADDR", T(addr), .help = "an address"},
    {FLAGTAB_PATH, "path", .arg = "PATH", T(path), .help = "a path | with a pipe"},
    {FLAGTAB_STRBUF, "name", .arg = "NAME", T(name), .help = "a short name"},
    {FLAGTAB_ENUM, "mode", T(mode), .choices = modes, .help = "how"},
    {FLAGTAB_ENUM, "Mode", T(mode), .choices = modes, .flags = FLAGTAB_F_NOCASE,
     .help = "how, any case"},
    {FLAGTAB_SET, "on", T(on), .help = "turn it on"},
    {FLAGTAB_SET, "no-on", T(on), .flags = FLAGTAB_F_CLEAR, .help = "turn it off"},
    {FLAGTAB_COUNT, "verbose", 'v', T(verbose), .help = "more"},
    {FLAGTAB_CUSTOM, "custom", .arg = "X", .fn = on_custom,
     .flags = FLAGTAB_F_TAKES_ARG | FLAGTAB_F_REPEAT,
     .help = "a long help text that goes on and on so that it has to be wrapped over more than "
             "one line of the terminal, and then some more words to be sure of it"},
    {FLAGTAB_HELP, "help", 'h', .help = "this text"},
    {FLAGTAB_VERSION, "version", 'V', .help = "the version"},
    {.kind = FLAGTAB_END},
};

static const struct flagtab_prog toy_prog = {
    .name = "toy",
    .summary = "a toy program",
    .usage = "toy [options]",
    .about = "A toy for the tests.\n\n.A paragraph that starts with a dot.",
    .notes = "Some notes.",
    .flags = toy_flags,
    .cfg_size = sizeof(struct toy),
    .defaults = toy_defaults,
    .version = toy_version,
    .help_col = 24,
};

/* Parses the NULL-terminated flags after "toy" over the defaults. */
static enum flagtab_result parse(struct toy *t, char *err, ...)
{
    static char store[32][128];
    char *argv[33];
    int argc = 0;
    const char *a;
    va_list ap;

    argv[argc++] = "toy";
    va_start(ap, err);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 32) {
        snprintf(store[argc], sizeof(store[argc]), "%s", a);
        argv[argc] = store[argc];
        argc++;
    }
    va_end(ap);
    argv[argc] = NULL;
    toy_defaults(t);
    err[0] = '\0';
    return flagtab_parse(&toy_prog, t, argc, argv, err);
}

static void expect_error(const char *want, enum flagtab_result rc, const char *err)
{
    assert_int_equal(rc, FLAGTAB_ERROR);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' does not mention '%s'", err, want);
    assert_null(strchr(err, '\n'));
}

static void test_flagtab_parse_defaults_kept(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&t, err, NULL), FLAGTAB_OK);
    assert_int_equal(t.num, 5);
    assert_false(t.num_seen);
    assert_string_equal(t.addr, "127.0.0.1");
    assert_true(t.on);
}

static void test_flagtab_parse_kinds(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];

    (void)state;
    assert_int_equal(parse(&t, err, "-n", "7", "--size", "2k", "--dur", "250ms", "--win", "0",
                           "--rate", "2.5", "--limit", "3/1s", "-a", "::1", "--path", "/p",
                           "--name", "abc", "--mode", "odd", "--no-on", "-vv", "--verbose",
                           "--custom", "x1", NULL),
                     FLAGTAB_OK);
    assert_int_equal(t.num, 7);
    assert_true(t.num_seen);
    assert_int_equal(t.size, 2048);
    assert_int_equal(t.dur_us, 250000);
    assert_int_equal(t.win_us, 0);
    assert_true(t.rate == 2.5);
    assert_int_equal(t.limit.count, 3);
    assert_int_equal(t.limit.period_us, 1000000);
    assert_string_equal(t.addr, "::1");
    assert_string_equal(t.path, "/p");
    assert_string_equal(t.name, "abc");
    assert_int_equal(t.mode, 7);
    assert_false(t.on);
    assert_int_equal(t.verbose, 3);
    assert_string_equal(t.custom, "x1");
    /* the second short name, the alias, --flag=value, a case-blind enumeration, SET */
    assert_int_equal(parse(&t, err, "-N", "2", "--Mode", "SLOW", "--no-on", "--on", NULL),
                     FLAGTAB_OK);
    assert_int_equal(t.num, 2);
    assert_int_equal(t.mode, 1);
    assert_true(t.on);
    assert_int_equal(parse(&t, err, "--number=9", "--win=4ms", NULL), FLAGTAB_OK);
    assert_int_equal(t.num, 9);
    assert_int_equal(t.win_us, 4000);
}

static void test_flagtab_parse_bad_values(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];

    (void)state;
    expect_error("--num: '11' is out of range 1..10", parse(&t, err, "-n", "11", NULL), err);
    expect_error("--num: 'x' is not a non-negative integer; accepted: 1..10",
                 parse(&t, err, "--number", "x", NULL), err);
    assert_int_equal(t.num, 5); /* unchanged */
    assert_false(t.num_seen);
    expect_error("--size: '2M' is out of range 1..1M", parse(&t, err, "--size", "2M", NULL), err);
    expect_error("--size: '2x' has an unknown unit 'x'; accepted: 1..1M",
                 parse(&t, err, "--size", "2x", NULL), err);
    expect_error("--dur: '1us' is out of range 1ms..60s", parse(&t, err, "--dur", "1us", NULL),
                 err);
    expect_error("--win: '3ms' is out of range 0 or 4ms..60s",
                 parse(&t, err, "--win", "3ms", NULL), err);
    expect_error("--win: '0s' is out of range", parse(&t, err, "--win", "0s", NULL), err);
    expect_error("--rate: '0.1' is out of range 0.5..100", parse(&t, err, "--rate", "0.1", NULL),
                 err);
    expect_error("--limit: ", parse(&t, err, "--limit", "5", NULL), err);
    expect_error("--addr: empty value", parse(&t, err, "--addr", "", NULL), err);
    expect_error("--path: empty path", parse(&t, err, "--path", "", NULL), err);
    expect_error("--name: value must be 1..7 bytes", parse(&t, err, "--name", "abcdefgh", NULL),
                 err);
    expect_error("--mode: 'SLOW' is not fast, slow or odd",
                 parse(&t, err, "--mode", "SLOW", NULL), err);
    expect_error("--custom: 'bad' is bad", parse(&t, err, "--custom", "bad", NULL), err);
}

static void test_flagtab_parse_getopt_errors(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];

    (void)state;
    expect_error("unknown flag '--bogus' (see --help)", parse(&t, err, "--bogus", NULL), err);
    expect_error("unknown flag '-x'", parse(&t, err, "-x", NULL), err);
    expect_error("unknown flag '-x'", parse(&t, err, "-vx", NULL), err);
    expect_error("takes no value: '--on'", parse(&t, err, "--on=1", NULL), err);
    expect_error("flag '--num' needs a value", parse(&t, err, "--num", NULL), err);
    expect_error("flag '-n' needs a value", parse(&t, err, "-v", "-n", NULL), err);
    expect_error("unexpected argument 'extra'", parse(&t, err, "-v", "extra", "-n", "1", NULL),
                 err);
}

/* flagtab_parse_args: the first argument after the flags; parsing goes on from there. */
static void test_flagtab_parse_args(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];
    char a0[] = "toy", a1[] = "-v", a2[] = "cmd", a3[] = "--num", a4[] = "3", a5[] = "name";
    char *argv[] = {a0, a1, a2, a3, a4, a5, NULL};
    char *none[] = {a0, a1, NULL};
    char *dash[] = {a0, a1, (char[]){"--"}, (char[]){"-n"}, NULL};
    int first = -1;

    (void)state;
    toy_defaults(&t);
    assert_int_equal(flagtab_parse_args(&toy_prog, &t, 6, argv, &first, err), FLAGTAB_OK);
    assert_int_equal(first, 2);
    assert_int_equal(t.verbose, 1);
    /* from the argument on: it stands as argv[0] of the flags after it */
    assert_int_equal(flagtab_parse_args(&toy_prog, &t, 4, argv + 2, &first, err), FLAGTAB_OK);
    assert_int_equal(first, 3);
    assert_string_equal(argv[2 + first], "name");
    assert_int_equal(t.num, 3);
    assert_int_equal(flagtab_parse_args(&toy_prog, &t, 2, none, &first, err), FLAGTAB_OK);
    assert_int_equal(first, 2); /* argc: none */
    /* after "--", "-n" is an argument */
    assert_int_equal(flagtab_parse_args(&toy_prog, &t, 4, dash, &first, err), FLAGTAB_OK);
    assert_int_equal(first, 3);
    /* errors as flagtab_parse's */
    argv[3] = (char[]){"--bogus"};
    expect_error("unknown flag '--bogus'", flagtab_parse_args(&toy_prog, &t, 4, argv + 2, &first,
                                                              err), err);
}

/* What a printer wrote, in a malloc'd string. */
static char *capture(void (*fn)(const struct flagtab_prog *, FILE *), const struct flagtab_prog *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    fn(p, f);
    fclose(f);
    return buf;
}

static void test_flagtab_usage(void **state)
{
    char *out = capture(flagtab_usage, &toy_prog);
    char *line;
    char *save = NULL;

    (void)state;
    assert_non_null(strstr(out, "usage: toy [options]\n"));
    assert_non_null(strstr(out, "  -n, -N, --num N       a number (1..10; default 5 = cores)\n"));
    assert_non_null(strstr(out, "      --size SZ         a size (1..1M; default 64k)\n"));
    assert_non_null(strstr(out, "(0 or 4ms..60s; default 10ms)"));
    assert_non_null(strstr(out, "--mode fast|slow|odd"));
    assert_non_null(strstr(out, "\nStrings: values that are \\text, not numbers.\n"));
    assert_null(strstr(out, "--number")); /* an alias is not shown */
    for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        if (strlen(line) >= 90)
            fail_msg("line over 89 columns: '%s'", line);
    free(out);
}

static void test_flagtab_write_man(void **state)
{
    char *out = capture(flagtab_write_man, &toy_prog);

    (void)state;
    assert_non_null(strstr(out, "\n.TH TOY 1 "));
    assert_non_null(strstr(out, "\n.SH NAME\ntoy \\- a toy program\n"));
    assert_non_null(strstr(out, "\\fB\\-n\\fR, \\fB\\-N\\fR, \\fB\\-\\-num\\fR, "
                                "\\fB\\-\\-number\\fR \\fIN\\fR\n"));
    /* the docs say what the default is, not what it is on this machine */
    assert_non_null(strstr(out, "a number. Range: 1..10. Default: cores.\n"));
    assert_non_null(strstr(out, "\n.SS Strings\nValues that are \\etext, not numbers.\n"));
    assert_non_null(strstr(out, "\n\\&.A paragraph")); /* a leading dot is not a request */
    assert_non_null(strstr(out, "May be given more than once."));
    free(out);
}

static void test_flagtab_write_md(void **state)
{
    char *out = capture(flagtab_write_md, &toy_prog);

    (void)state;
    assert_non_null(strstr(out, "# toy flags\n"));
    assert_non_null(strstr(out, "| `-n`, `-N`, `--num`, `--number` | `N` (1..10) | cores | "
                                "a number |\n"));
    assert_non_null(strstr(out, "| `--path` | `PATH` |  | a path \\| with a pipe |\n"));
    assert_non_null(strstr(out, "\n## Strings\n\nValues that are \\text, not numbers.\n"));
    assert_non_null(strstr(out, "| `--mode` | `fast\\|slow\\|odd` | slow | how |\n"));
    free(out);
}

/* Every program's table: unique names, help for each, bounds that fit, defaults within them. */
static void check_prog(const struct flagtab_prog *p)
{
    void *defs = calloc(1, p->cfg_size);
    const struct flagtab_flag *t = p->flags;
    size_t n = 0;

    p->defaults(defs);
    for (size_t i = 0; t[i].kind != FLAGTAB_END; i++, n++) {
        const struct flagtab_flag *f = &t[i];
        if (f->kind == FLAGTAB_SECTION)
            continue;
        if (f->help == NULL || f->help[0] == '\0' || f->name == NULL)
            fail_msg("%s: a flag without a name or help (entry %zu)", p->name, i);
        for (size_t j = 0; j < i; j++) {
            if (t[j].kind == FLAGTAB_SECTION)
                continue;
            if (strcmp(t[j].name, f->name) == 0)
                fail_msg("%s: --%s twice", p->name, f->name);
            if (f->short_name != 0 &&
                (t[j].short_name == f->short_name || t[j].short2 == f->short_name))
                fail_msg("%s: -%c twice", p->name, f->short_name);
        }
        if (f->kind == FLAGTAB_U64 || f->kind == FLAGTAB_SIZE || f->kind == FLAGTAB_DURATION) {
            uint64_t v = 0;
            uint64_t cap = f->size >= 8 ? UINT64_MAX : (1ull << (f->size * 8)) - 1;
            memcpy(&v, (char *)defs + f->off, f->size); /* little-endian */
            if (f->min > f->max || f->max > cap)
                fail_msg("%s: --%s bounds [%llu, %llu] do not fit %zu bytes", p->name, f->name,
                         (unsigned long long)f->min, (unsigned long long)f->max, f->size);
            if (f->def == NULL && (v < f->min || v > f->max) &&
                !(v == 0 && (f->flags & FLAGTAB_F_ZERO)))
                fail_msg("%s: --%s default %llu outside [%llu, %llu]", p->name, f->name,
                         (unsigned long long)v, (unsigned long long)f->min,
                         (unsigned long long)f->max);
        }
        if (f->kind == FLAGTAB_CUSTOM)
            assert_non_null(f->fn);
        if (f->kind == FLAGTAB_ENUM)
            assert_non_null(f->choices);
    }
    assert_true(n < FLAGTAB_MAX);
    free(defs);
}

/* a program that reads --config FILE */
static const struct flagtab_flag conf_flags[] = {
    {FLAGTAB_U64, "num", 'n', .alias = "number", .arg = "N", .min = 1, .max = 10, T(num),
     .help = "a number"},
    {FLAGTAB_STR, "addr", 'a', .arg = "ADDR", T(addr), .help = "an address"},
    {FLAGTAB_SET, "on", T(on), .help = "turn it on"},
    {FLAGTAB_COUNT, "verbose", 'v', T(verbose), .help = "more"},
    {FLAGTAB_CUSTOM, "custom", .arg = "X", .fn = on_custom, .flags = FLAGTAB_F_TAKES_ARG,
     .help = "custom"},
    {FLAGTAB_CUSTOM, "config", .arg = "FILE", .fn = flagtab_config,
     .flags = FLAGTAB_F_TAKES_ARG, .help = "settings from FILE"},
    {FLAGTAB_HELP, "help", 'h', .help = "this text"},
    {.kind = FLAGTAB_END},
};

static const struct flagtab_prog conf_prog = {
    .name = "conf", .usage = "conf [options]", .flags = conf_flags,
    .cfg_size = sizeof(struct toy), .defaults = toy_defaults, .version = toy_version,
};

/* Writes len bytes of text to a temp file and parses argv (after "conf") over the defaults. */
static enum flagtab_result conf_parse_n(struct toy *t, char *err, const char *text, size_t len,
                                        int argc, char **args)
{
    static char path[] = "/tmp/test_flagtab.XXXXXX";
    char *argv[16];
    int fd;
    enum flagtab_result rc;

    snprintf(path, sizeof(path), "/tmp/test_flagtab.XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    argv[0] = "conf";
    for (int i = 0; i < argc; i++)
        argv[i + 1] = strcmp(args[i], "@") == 0 ? path : args[i];
    argv[argc + 1] = NULL;
    toy_defaults(t);
    err[0] = '\0';
    rc = flagtab_parse(&conf_prog, t, argc + 1, argv, err);
    unlink(path);
    return rc;
}

static enum flagtab_result conf_parse(struct toy *t, char *err, const char *text, int argc,
                                      char **args)
{
    return conf_parse_n(t, err, text, strlen(text), argc, args);
}

static void test_flagtab_config(void **state)
{
    struct toy t;
    char err[FLAGTAB_ERR_LEN];

    (void)state;
    /* the file's settings; the command line overrides them, before or after --config */
    assert_int_equal(conf_parse(&t, err,
                                "# a comment\n\n  num = 7\naddr\t10.0.0.1  \r\non\n"
                                "verbose = yes\nverbose no\ncustom=a b # c\n",
                                2, (char *[]){"--config", "@"}),
                     FLAGTAB_OK);
    assert_int_equal(t.num, 7);
    assert_string_equal(t.addr, "10.0.0.1");
    assert_true(t.on);
    assert_int_equal(t.verbose, 1);
    assert_string_equal(t.custom, "a b # c"); /* the rest of the line, as it is */
    assert_int_equal(conf_parse(&t, err, "num 7\naddr 10.0.0.1\n", 4,
                                (char *[]){"-n", "3", "--config=@", "--addr=::1"}),
                     FLAGTAB_OK);
    assert_int_equal(t.num, 3);
    assert_string_equal(t.addr, "::1");
    assert_int_equal(conf_parse(&t, err, "number 9\n", 2, (char *[]){"--config", "@"}),
                     FLAGTAB_OK); /* an alias */
    assert_int_equal(t.num, 9);
    /* refused, with the file and line */
    expect_error(":2: unknown key 'bogus'",
                 conf_parse(&t, err, "num 1\nbogus 2\n", 2, (char *[]){"--config", "@"}), err);
    expect_error(":1: num needs a value",
                 conf_parse(&t, err, "num\n", 2, (char *[]){"--config", "@"}), err);
    expect_error(":1: on takes no value",
                 conf_parse(&t, err, "on maybe\n", 2, (char *[]){"--config", "@"}), err);
    expect_error(":1: not a setting 'help'",
                 conf_parse(&t, err, "help\n", 2, (char *[]){"--config", "@"}), err);
    expect_error(":1: not a setting 'config'",
                 conf_parse(&t, err, "config /x\n", 2, (char *[]){"--config", "@"}), err);
    expect_error("--num: '11'", conf_parse(&t, err, "num 11\n", 2, (char *[]){"--config", "@"}),
                 err);
    /* the size limit: FLAGTAB_CONFIG_MAX bytes read, one more refused; and a NUL byte */
    {
        char *big = malloc(FLAGTAB_CONFIG_MAX + 2);

        assert_non_null(big);
        memset(big, '#', FLAGTAB_CONFIG_MAX + 1);
        memcpy(big + FLAGTAB_CONFIG_MAX - 7, "\nnum 4\n", 7);
        assert_int_equal(conf_parse_n(&t, err, big, FLAGTAB_CONFIG_MAX, 2,
                                      (char *[]){"--config", "@"}),
                         FLAGTAB_OK);
        assert_int_equal(t.num, 4);
        expect_error("larger than 1 MiB", conf_parse_n(&t, err, big, FLAGTAB_CONFIG_MAX + 1, 2,
                                                      (char *[]){"--config", "@"}),
                     err);
        free(big);
    }
    expect_error("a NUL byte", conf_parse_n(&t, err, "num 1\n\0x\n", 9, 2,
                                            (char *[]){"--config", "@"}),
                 err);
    expect_error("--config '/nonexistent/x': No such file",
                 conf_parse(&t, err, "", 2, (char *[]){"--config", "/nonexistent/x"}), err);
}

static void test_flagtab_program_tables(void **state)
{
    (void)state;
    check_prog(&s1_config_flags);
    check_prog(&s2_config_flags);
    check_prog(&lg_config_flags);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flagtab_parse_defaults_kept),
        cmocka_unit_test(test_flagtab_parse_kinds),
        cmocka_unit_test(test_flagtab_parse_bad_values),
        cmocka_unit_test(test_flagtab_parse_getopt_errors),
        cmocka_unit_test(test_flagtab_parse_args),
        cmocka_unit_test(test_flagtab_usage),
        cmocka_unit_test(test_flagtab_write_man),
        cmocka_unit_test(test_flagtab_write_md),
        cmocka_unit_test(test_flagtab_config),
        cmocka_unit_test(test_flagtab_program_tables),
    };
    return cmocka_run_group_tests_name("flagtab", tests, NULL, NULL);
}
