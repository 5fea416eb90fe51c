/*
 * flagtab.h - a program's command-line flags written once, as a table: long and short name,
 * kind, bounds, default (read from the program's defaults), destination in its config struct,
 * and help. From the table come getopt_long's options, strict parsing (common/opts.h, one
 * error line naming the flag and the allowed values), --help, the man page (roff) and the
 * markdown table of docs/flags/ (scripts/gen-flags.c writes both; `make unit` checks them).
 *
 * DESIGN: the table is static const data; flagtab_parse writes only into the config it is
 * given and uses getopt_long, so it is not thread-safe (call it from main, before any thread).
 * Flags whose values need more than a number or a name (lists, URLs, repeated flags, values
 * that must never be echoed) have kind FLAGTAB_CUSTOM and a callback.
 */
#ifndef FLAGTAB_H
#define FLAGTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAGTAB_ERR_LEN 512 /* err of flagtab_parse and of the callbacks */
#define FLAGTAB_MAX 96      /* entries of one table, sections included */

enum flagtab_kind {
    FLAGTAB_END = 0,  /* ends the table */
    FLAGTAB_SECTION,  /* not a flag: a heading (name) and an optional paragraph (help) */
    FLAGTAB_SET,      /* no value: stores .value (0: 1; FLAGTAB_F_CLEAR: 0) into an integer */
    FLAGTAB_COUNT,    /* no value, repeatable: adds 1 to an integer */
    FLAGTAB_U64,      /* decimal integer in [min, max] */
    FLAGTAB_SIZE,     /* bytes with k/M/G suffixes, in [min, max] */
    FLAGTAB_DURATION, /* us/ms/s/m (default s), stored in microseconds, in [min, max] */
    FLAGTAB_DOUBLE,   /* decimal number in [dmin, dmax], stored as a double */
    FLAGTAB_RATE,     /* N/DUR or 0, stored as struct opts_rate */
    FLAGTAB_STR,      /* non-empty string: the const char * points into argv */
    FLAGTAB_PATH,     /* as FLAGTAB_STR, for a file name ("empty path") */
    FLAGTAB_STRBUF,   /* 1..size-1 bytes copied into a char array */
    FLAGTAB_ENUM,     /* one of .choices' names; stores its value */
    FLAGTAB_CUSTOM,   /* .fn parses and stores the value (or acts, for a flag without one) */
    FLAGTAB_HELP,     /* prints --help to stdout; flagtab_parse returns FLAGTAB_EXIT */
    FLAGTAB_VERSION,  /* calls the program's version(); flagtab_parse returns FLAGTAB_EXIT */
};

/* Bits of flagtab_flag.flags. */
#define FLAGTAB_F_NOCASE 1u     /* ENUM: names match regardless of case */
#define FLAGTAB_F_ZERO 2u       /* DURATION: exactly "0" is accepted besides [min, max] */
#define FLAGTAB_F_NODEF 4u      /* no default is shown (it is not a fact worth saying) */
#define FLAGTAB_F_RUNTIME 8u    /* the default depends on the machine: .def says what it is */
#define FLAGTAB_F_NORANGE 16u   /* --help does not show the bounds (the docs still do) */
#define FLAGTAB_F_REPEAT 32u    /* CUSTOM: each use adds to the list (said in the docs) */
#define FLAGTAB_F_TAKES_ARG 64u /* CUSTOM: the flag takes a value (.arg names it) */
#define FLAGTAB_F_CLEAR 128u    /* SET: stores 0 (a --no-X flag) */
#define FLAGTAB_F_DEFSTR 256u   /* CUSTOM: the destination is a const char *, the default shown */
#define FLAGTAB_F_MS 512u       /* DURATION: a number without a unit is milliseconds, not s */

struct flagtab_choice {
    const char *name; /* as typed; NULL ends the list */
    int value;        /* stored into the destination */
};

/*
 * A CUSTOM flag's parser: arg is the value (NULL for a flag without one), cfg the config.
 * Returns 0, or -1 with one line in err (FLAGTAB_ERR_LEN bytes) that names the flag.
 */
typedef int (*flagtab_fn)(void *cfg, const char *arg, char *err);

struct flagtab_flag {
    enum flagtab_kind kind;
    const char *name;     /* long name without "--"; a SECTION's heading */
    int short_name;       /* 'x', or 0 */
    int short2;           /* a second short name of the same flag, or 0 */
    const char *alias;    /* a second long name (not shown by --help), or NULL */
    const char *arg;      /* the value's name in --help ("N", "DUR"); NULL: none */
    uint64_t min;         /* U64, SIZE, DURATION: bounds */
    uint64_t max;
    double dmin;          /* DOUBLE: bounds */
    double dmax;
    size_t off;           /* destination: offset in the config struct ... */
    size_t size;          /* ... and size (integers: 1, 2, 4 or 8 bytes) */
    size_t seen;          /* 1 + offset of a bool set true when the flag is given; 0: none */
    int value;            /* SET: the value stored (0 means 1) */
    const struct flagtab_choice *choices; /* ENUM */
    flagtab_fn fn;        /* CUSTOM */
    const char *help;     /* one paragraph, wrapped by the printers */
    const char *def;      /* the default as text, instead of the one read from the config */
    unsigned flags;       /* FLAGTAB_F_* */
};

/* Designated initializers of a flag's destination: .off, .size (and .seen). */
#define FLAGTAB_DST(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)
#define FLAGTAB_SEEN(type, field) .seen = offsetof(type, field) + 1

/* One program: its table and what --help prints around it. */
struct flagtab_prog {
    const char *name;    /* "server1" */
    const char *summary; /* one line for the man page's NAME */
    const char *usage;   /* "server1 --root DIR [options]" */
    const char *about;   /* paragraphs before the flags ("\n\n" between paragraphs) */
    const char *notes;   /* paragraphs after the flags, or NULL */
    const struct flagtab_flag *flags; /* ends with kind FLAGTAB_END */
    size_t cfg_size;     /* sizeof the config struct */
    void (*defaults)(void *cfg); /* fills a config with the defaults */
    void (*version)(void);       /* --version: prints to stdout */
    unsigned help_col;   /* column where --help's text starts */
};

enum flagtab_result {
    FLAGTAB_ERROR = -1, /* one line in err: print it, exit 2 */
    FLAGTAB_OK = 0,
    FLAGTAB_EXIT = 1,   /* --help or --version was printed: exit 0 */
};

/*
 * Parses argv (flags only; the first non-flag argument is an error) over the values already in
 * cfg. Stops at the first problem: err (FLAGTAB_ERR_LEN bytes) names the flag and what it
 * accepts. Not thread-safe (getopt_long).
 */
enum flagtab_result flagtab_parse(const struct flagtab_prog *p, void *cfg, int argc, char **argv,
                                  char *err);
/*
 * As flagtab_parse (--config read), but an argument that is not a flag ends the flags instead
 * of being an error: *first is set to its index (argc: none), for a program that takes flags
 * on both sides of an argument (`loadgen [flags] URL [flags]`).
 */
enum flagtab_result flagtab_parse_first(const struct flagtab_prog *p, void *cfg, int argc,
                                        char **argv, int *first, char *err);
/*
 * As flagtab_parse, for a command whose flags come before its arguments (`server2 admin
 * [flags] SUBCOMMAND [NAME]`): *first is set to the index of the first argument that is not a
 * flag (argc: none). No --config file is read.
 */
enum flagtab_result flagtab_parse_args(const struct flagtab_prog *p, void *cfg, int argc,
                                       char **argv, int *first, char *err);
/*
 * --config FILE: a program whose table has a FLAGTAB_CUSTOM flag with .fn = flagtab_config
 * (and FLAGTAB_F_TAKES_ARG) reads its settings from FILE as well. flagtab_parse finds
 * --config FILE (or --config=FILE) among the flags before it parses them, and parses the file's
 * settings first, so that the command line's flags override them (a repeatable flag gets the
 * file's values, then the command line's). The file: one setting per line, `KEY VALUE` or
 * `KEY = VALUE`, KEY a long flag name without "--", VALUE the rest of the line without the
 * blanks around it (no quoting: it is taken as it is); a flag without a value is `KEY` alone,
 * or `KEY = yes|no|true|false|on|off`; blank lines and lines whose first non-blank is '#' are
 * skipped. An unknown key, a value missing or given where none is taken, --help, --version or
 * --config inside the file, a file over FLAGTAB_CONFIG_MAX bytes: one error line naming
 * FILE:LINE. The file's bytes stay allocated (string settings point into them).
 */
#define FLAGTAB_CONFIG_MAX (1 << 20)
int flagtab_config(void *cfg, const char *arg, char *err);

/* --help: usage, about, the flags grouped by section with their defaults, notes. */
void flagtab_usage(const struct flagtab_prog *p, FILE *out);
/* The man page (roff, man(7) macros); machine-independent, so it can be committed. */
void flagtab_write_man(const struct flagtab_prog *p, FILE *out);
/* The flags as markdown tables, one per section; machine-independent. */
void flagtab_write_md(const struct flagtab_prog *p, FILE *out);
/* A duration for people: "0", "250ms", "10s", "3us". Returns buf. */
const char *flagtab_format_duration(uint64_t us, char *buf, size_t len);

#endif /* FLAGTAB_H */
