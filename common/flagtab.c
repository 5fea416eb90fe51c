/*
 * flagtab.c - see flagtab.h. Parsing builds getopt_long's options from the table on the stack;
 * the three printers (--help, man, markdown) share the value, range and default formatting, so
 * what --help says and what the docs say cannot differ.
 */
#include "flagtab.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opts.h"
#include "xalloc.h"

#define FLAGTAB_WIDTH 90 /* --help lines are shorter than this */
#define FLAGTAB_VAL_BASE 256 /* getopt_long's val of entry i: FLAGTAB_VAL_BASE + i */

static bool takes_arg(const struct flagtab_flag *f)
{
    switch (f->kind) {
    case FLAGTAB_U64:
    case FLAGTAB_SIZE:
    case FLAGTAB_DURATION:
    case FLAGTAB_DOUBLE:
    case FLAGTAB_RATE:
    case FLAGTAB_STR:
    case FLAGTAB_PATH:
    case FLAGTAB_STRBUF:
    case FLAGTAB_ENUM:
        return true;
    case FLAGTAB_CUSTOM:
        return (f->flags & FLAGTAB_F_TAKES_ARG) != 0;
    default:
        return false;
    }
}

static bool is_flag(const struct flagtab_flag *f)
{
    return f->kind != FLAGTAB_END && f->kind != FLAGTAB_SECTION;
}

static uint64_t read_uint(const void *p, size_t size)
{
    switch (size) {
    case 1:
        return *(const uint8_t *)p;
    case 2:
        return *(const uint16_t *)p;
    case 4:
        return *(const uint32_t *)p;
    default:
        return *(const uint64_t *)p;
    }
}

static void write_uint(void *p, size_t size, uint64_t v)
{
    switch (size) {
    case 1:
        *(uint8_t *)p = (uint8_t)v;
        break;
    case 2:
        *(uint16_t *)p = (uint16_t)v;
        break;
    case 4:
        *(uint32_t *)p = (uint32_t)v;
        break;
    default:
        *(uint64_t *)p = v;
        break;
    }
}

/* The largest unsigned value a destination of `size` bytes holds. */
static uint64_t size_max(size_t size)
{
    return size >= 8 ? UINT64_MAX : (1ull << (size * 8)) - 1;
}

const char *flagtab_format_duration(uint64_t us, char *buf, size_t len)
{
    if (us == 0)
        snprintf(buf, len, "0");
    else if (us % 1000000 == 0)
        snprintf(buf, len, "%" PRIu64 "s", us / 1000000);
    else if (us % 1000 == 0)
        snprintf(buf, len, "%" PRIu64 "ms", us / 1000);
    else
        snprintf(buf, len, "%" PRIu64 "us", us);
    return buf;
}

/* Bytes with the largest k/M/G unit that divides them: "64k", "1G", "100". */
static const char *format_size(uint64_t v, char *buf, size_t len)
{
    if (v != 0 && v % (1ull << 30) == 0)
        snprintf(buf, len, "%" PRIu64 "G", v >> 30);
    else if (v != 0 && v % (1ull << 20) == 0)
        snprintf(buf, len, "%" PRIu64 "M", v >> 20);
    else if (v != 0 && v % (1ull << 10) == 0)
        snprintf(buf, len, "%" PRIu64 "k", v >> 10);
    else
        snprintf(buf, len, "%" PRIu64, v);
    return buf;
}

/* "a|b|c": an ENUM's names. */
static const char *choice_list(const struct flagtab_flag *f, const char *sep, char *buf,
                               size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (const struct flagtab_choice *c = f->choices; c != NULL && c->name != NULL; c++) {
        bool last = c[1].name == NULL;
        const char *s = c == f->choices ? "" : (last && sep[0] == ',' ? " or " : sep);
        int w = snprintf(buf + n, len - n, "%s%s", s, c->name);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
    return buf;
}

/* The value's name in --help and the docs: .arg, or an ENUM's names. */
static const char *arg_name(const struct flagtab_flag *f, char *buf, size_t len)
{
    if (f->arg != NULL)
        return f->arg;
    if (f->kind == FLAGTAB_ENUM)
        return choice_list(f, "|", buf, len);
    return takes_arg(f) ? "VALUE" : NULL;
}

/* The accepted range ("1..256", "1ms..1h"), or "" when the kind has none. */
static const char *range_text(const struct flagtab_flag *f, char *buf, size_t len)
{
    char a[32];
    char b[32];

    buf[0] = '\0';
    switch (f->kind) {
    case FLAGTAB_U64:
        snprintf(buf, len, "%" PRIu64 "..%" PRIu64, f->min, f->max);
        break;
    case FLAGTAB_SIZE:
        snprintf(buf, len, "%s..%s", format_size(f->min, a, sizeof(a)),
                 format_size(f->max, b, sizeof(b)));
        break;
    case FLAGTAB_DURATION:
        snprintf(buf, len, "%s%s..%s", (f->flags & FLAGTAB_F_ZERO) ? "0 or " : "",
                 flagtab_format_duration(f->min, a, sizeof(a)),
                 flagtab_format_duration(f->max, b, sizeof(b)));
        break;
    case FLAGTAB_DOUBLE:
        snprintf(buf, len, "%g..%g", f->dmin, f->dmax);
        break;
    default:
        break;
    }
    return buf;
}

/* The default read from cfg, or "" when there is none to show. */
static const char *value_text(const struct flagtab_flag *f, const void *cfg, char *buf,
                              size_t len)
{
    const char *p = (const char *)cfg + f->off;

    buf[0] = '\0';
    switch (f->kind) {
    case FLAGTAB_U64:
        snprintf(buf, len, "%" PRIu64, read_uint(p, f->size));
        break;
    case FLAGTAB_SIZE:
        format_size(read_uint(p, f->size), buf, len);
        break;
    case FLAGTAB_DURATION:
        flagtab_format_duration(read_uint(p, f->size), buf, len);
        break;
    case FLAGTAB_DOUBLE:
        snprintf(buf, len, "%g", *(const double *)(const void *)p);
        break;
    case FLAGTAB_RATE:
        if (len >= 48)
            opts_format_rate((const struct opts_rate *)(const void *)p, buf, len);
        break;
    case FLAGTAB_CUSTOM:
        if (!(f->flags & FLAGTAB_F_DEFSTR))
            break;
        /* fallthrough */
    case FLAGTAB_STR:
    case FLAGTAB_PATH: {
        const char *s = *(const char *const *)(const void *)p;
        snprintf(buf, len, "%s", s != NULL ? s : "");
        break;
    }
    case FLAGTAB_STRBUF:
        snprintf(buf, len, "%.*s", (int)f->size, p);
        break;
    case FLAGTAB_ENUM: {
        uint64_t v = read_uint(p, f->size);
        for (const struct flagtab_choice *c = f->choices; c->name != NULL; c++) {
            if ((uint64_t)(unsigned)c->value == v) {
                snprintf(buf, len, "%s", c->name);
                break;
            }
        }
        break;
    }
    default:
        break;
    }
    return buf;
}

/*
 * The default as shown: .def, or the value read from cfg (defaults). With FLAGTAB_F_RUNTIME,
 * --help (runtime) shows "V = .def" and the docs only .def. "" when there is none.
 */
static const char *default_text(const struct flagtab_flag *f, const void *cfg, bool runtime,
                                char *buf, size_t len)
{
    char v[128];

    buf[0] = '\0';
    if (f->flags & FLAGTAB_F_NODEF)
        return buf;
    if (f->def != NULL && (f->flags & FLAGTAB_F_RUNTIME) && runtime)
        snprintf(buf, len, "%s = %s", value_text(f, cfg, v, sizeof(v)), f->def);
    else if (f->def != NULL)
        snprintf(buf, len, "%s", f->def);
    else
        value_text(f, cfg, buf, len);
    return buf;
}

/* ---- parsing ---- */

static int value_error(char *err, const struct flagtab_flag *f, const char *why)
{
    snprintf(err, FLAGTAB_ERR_LEN, "--%s: %s", f->name, why);
    return -1;
}

/* With FLAGTAB_F_MS, "250" becomes "250ms" (in buf); any other value is returned as it is. */
static const char *ms_default(const struct flagtab_flag *f, const char *arg, char *buf,
                              size_t len)
{
    size_t n = strlen(arg);

    if (!(f->flags & FLAGTAB_F_MS) || n == 0 || n + 3 > len || arg[n - 1] < '0' ||
        arg[n - 1] > '9')
        return arg;
    snprintf(buf, len, "%sms", arg);
    return buf;
}

/*
 * A number the flag's parser refused: either it is one but out of bounds, or it is none. Both
 * say the accepted range in the flag's own units ("4ms..3600s", not microseconds).
 */
static int bound_error(char *err, const struct flagtab_flag *f, const char *arg,
                       const char *why)
{
    char range[96];
    char probe[OPTS_ERR_LEN];
    char num[64];
    uint64_t v;
    double d;
    int rc = -1;

    range_text(f, range, sizeof(range));
    if (range[0] == '\0')
        return value_error(err, f, why);
    if (f->kind == FLAGTAB_U64)
        rc = opts_parse_u64(arg, 0, UINT64_MAX, &v, probe);
    else if (f->kind == FLAGTAB_SIZE)
        rc = opts_parse_size(arg, 0, 1ull << 62, &v, probe);
    else if (f->kind == FLAGTAB_DURATION)
        rc = opts_parse_duration_us(ms_default(f, arg, num, sizeof(num)), 0, 1ull << 62, &v,
                                    probe);
    else if (f->kind == FLAGTAB_DOUBLE)
        rc = opts_parse_double(arg, -1e300, 1e300, &d, probe);
    if (rc == 0)
        snprintf(err, FLAGTAB_ERR_LEN, "--%s: '%.64s' is out of range %s", f->name, arg, range);
    else
        snprintf(err, FLAGTAB_ERR_LEN, "--%s: %s; accepted: %s", f->name, why, range);
    return -1;
}

static int parse_enum(const struct flagtab_flag *f, void *dst, const char *arg, char *err)
{
    char names[256];

    for (const struct flagtab_choice *c = f->choices; c->name != NULL; c++) {
        bool same = (f->flags & FLAGTAB_F_NOCASE) ? strcasecmp(arg, c->name) == 0
                                                  : strcmp(arg, c->name) == 0;
        if (same) {
            write_uint(dst, f->size, (uint64_t)(unsigned)c->value);
            return 0;
        }
    }
    snprintf(err, FLAGTAB_ERR_LEN, "--%s: '%.64s' is not %s", f->name, arg,
             choice_list(f, ", ", names, sizeof(names)));
    return -1;
}

/* Stores one flag's value into cfg. Returns 0, 1 (help or version printed) or -1 with err. */
static int apply(const struct flagtab_prog *p, const struct flagtab_flag *f, void *cfg,
                 const char *arg, char *err)
{
    char why[OPTS_ERR_LEN];
    char num[64];
    void *dst = (char *)cfg + f->off;
    uint64_t v = 0;
    int rc = 0;

    switch (f->kind) {
    case FLAGTAB_SET:
        if (f->flags & FLAGTAB_F_CLEAR)
            v = 0;
        else
            v = f->value != 0 ? (uint64_t)(unsigned)f->value : 1;
        write_uint(dst, f->size, v);
        break;
    case FLAGTAB_COUNT:
        v = read_uint(dst, f->size);
        if (v < size_max(f->size))
            write_uint(dst, f->size, v + 1);
        break;
    case FLAGTAB_U64:
        rc = opts_parse_u64(arg, f->min, f->max, &v, why);
        break;
    case FLAGTAB_SIZE:
        rc = opts_parse_size(arg, f->min, f->max, &v, why);
        break;
    case FLAGTAB_DURATION:
        if ((f->flags & FLAGTAB_F_ZERO) && strcmp(arg, "0") == 0)
            v = 0;
        else
            rc = opts_parse_duration_us(ms_default(f, arg, num, sizeof(num)), f->min, f->max,
                                        &v, why);
        break;
    case FLAGTAB_DOUBLE: {
        double d;
        rc = opts_parse_double(arg, f->dmin, f->dmax, &d, why);
        if (rc == 0)
            *(double *)dst = d;
        break;
    }
    case FLAGTAB_RATE:
        rc = opts_parse_rate(arg, (struct opts_rate *)dst, why);
        break;
    case FLAGTAB_STR:
    case FLAGTAB_PATH:
        if (arg[0] == '\0')
            return value_error(err, f, f->kind == FLAGTAB_PATH ? "empty path" : "empty value");
        *(const char **)dst = arg;
        break;
    case FLAGTAB_STRBUF: {
        size_t len = strlen(arg);
        if (len == 0 || len >= f->size) {
            snprintf(err, FLAGTAB_ERR_LEN, "--%s: value must be 1..%zu bytes", f->name,
                     f->size - 1);
            return -1;
        }
        memcpy(dst, arg, len + 1);
        break;
    }
    case FLAGTAB_ENUM:
        if (parse_enum(f, dst, arg, err) < 0)
            return -1;
        break;
    case FLAGTAB_CUSTOM:
        if (f->fn(cfg, arg, err) < 0)
            return -1;
        break;
    case FLAGTAB_HELP:
        flagtab_usage(p, stdout);
        return 1;
    case FLAGTAB_VERSION:
        p->version();
        return 1;
    default:
        return value_error(err, f, "not a flag (table error)");
    }
    if (rc < 0)
        return bound_error(err, f, arg, why);
    if (f->kind == FLAGTAB_U64 || f->kind == FLAGTAB_SIZE || f->kind == FLAGTAB_DURATION)
        write_uint(dst, f->size, v);
    if (f->seen != 0)
        *(bool *)((char *)cfg + f->seen - 1) = true;
    return 0;
}

/* The entry of getopt_long's return value opt, or NULL. */
static const struct flagtab_flag *find(const struct flagtab_prog *p, int opt)
{
    const struct flagtab_flag *t = p->flags;

    if (opt >= FLAGTAB_VAL_BASE)
        return &t[opt - FLAGTAB_VAL_BASE];
    for (size_t i = 0; t[i].kind != FLAGTAB_END; i++)
        if (is_flag(&t[i]) && (t[i].short_name == opt || t[i].short2 == opt))
            return &t[i];
    return NULL;
}

/* getopt's '?' (unknown flag) or ':' (no value) for argv[cur], as one line in err. */
static void getopt_error(int opt, const char *a, char *err)
{
    bool is_long = strncmp(a, "--", 2) == 0;
    const char *eq = strchr(a, '=');

    if (opt == ':' && is_long)
        snprintf(err, FLAGTAB_ERR_LEN, "flag '%.64s' needs a value (see --help)", a);
    else if (opt == ':')
        snprintf(err, FLAGTAB_ERR_LEN, "flag '-%c' needs a value (see --help)",
                 optopt > 0 && optopt < FLAGTAB_VAL_BASE ? optopt : '?');
    else if (is_long && eq != NULL)
        snprintf(err, FLAGTAB_ERR_LEN,
                 "unknown flag, or flag that takes no value: '%.*s' (see --help)",
                 (int)(eq - a < 64 ? eq - a : 64), a);
    else if (is_long)
        snprintf(err, FLAGTAB_ERR_LEN, "unknown flag '%.64s' (see --help)", a);
    else
        snprintf(err, FLAGTAB_ERR_LEN, "unknown flag '-%c' (see --help)",
                 optopt > 0 && optopt < FLAGTAB_VAL_BASE ? optopt : '?');
}

/* ---- --config FILE ---- */

/* The flags made of the config file, argv-like: kept for the program's life (string settings
 * point into them), freed when another file is read (tests parse more than once). */
static char **config_args;
static int config_nargs;

static enum flagtab_result parse_argv(const struct flagtab_prog *p, void *cfg, int argc,
                                      char **argv, int *first, char *err);

int flagtab_config(void *cfg, const char *arg, char *err)
{
    (void)cfg;
    (void)arg;
    (void)err;
    return 0; /* read before the parse (flagtab_parse); here only the flag itself */
}

static void free_args(char **args, int n)
{
    for (int i = 0; args != NULL && i < n; i++)
        free(args[i]);
    free(args);
}

/* The flag of table p whose long name (or alias) is name[0..len), or NULL. */
static const struct flagtab_flag *find_long(const struct flagtab_prog *p, const char *name,
                                            size_t len)
{
    for (const struct flagtab_flag *f = p->flags; f->kind != FLAGTAB_END; f++) {
        if (!is_flag(f))
            continue;
        if ((strlen(f->name) == len && memcmp(f->name, name, len) == 0) ||
            (f->alias != NULL && strlen(f->alias) == len && memcmp(f->alias, name, len) == 0))
            return f;
    }
    return NULL;
}

static bool config_takes_arg(const struct flagtab_flag *f)
{
    return takes_arg(f) || (f->kind == FLAGTAB_CUSTOM && (f->flags & FLAGTAB_F_TAKES_ARG));
}

/* Reads path into a NUL-terminated malloc'd buffer (at most FLAGTAB_CONFIG_MAX bytes). */
static char *config_read(const char *path, char *err)
{
    FILE *fp = fopen(path, "r");
    char *buf;
    size_t n;

    if (fp == NULL) {
        snprintf(err, FLAGTAB_ERR_LEN, "--config '%.200s': %s", path, strerror(errno));
        return NULL;
    }
    buf = xmalloc(FLAGTAB_CONFIG_MAX + 1);
    n = fread(buf, 1, FLAGTAB_CONFIG_MAX + 1, fp);
    if (ferror(fp) || n > FLAGTAB_CONFIG_MAX) {
        snprintf(err, FLAGTAB_ERR_LEN, "--config '%.200s': %s", path,
                 ferror(fp) ? "cannot be read" : "larger than 1 MiB");
        fclose(fp);
        free(buf);
        return NULL;
    }
    fclose(fp);
    if (memchr(buf, '\0', n) != NULL) {
        snprintf(err, FLAGTAB_ERR_LEN, "--config '%.200s': a NUL byte (not a text file)", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* A value of a flag without one: 1 (give the flag), 0 (leave it out), -1 (neither). */
static int config_bool(const char *v)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};

    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

/*
 * The settings of the file at path as flags: *args (argv-like from index 1, "--KEY" then its
 * value, each malloc'd; args[0] NULL), *n entries in all. 0, or -1 with err naming FILE:LINE.
 */
static int config_load(const struct flagtab_prog *p, const char *path, char ***args, int *n,
                       char *err)
{
    char *text = config_read(path, err), *line, *next;
    size_t cap = 16;
    unsigned lineno = 0;

    if (text == NULL)
        return -1;
    *args = xcalloc(cap, sizeof(**args));
    *n = 1;
    for (line = text; line != NULL; line = next) {
        const struct flagtab_flag *f;
        char *key, *v, *end;
        size_t klen;
        int yes = 1;

        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        lineno++;
        key = line + strspn(line, " \t\r");
        end = key + strlen(key);
        while (end > key && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = '\0';
        if (*key == '\0' || *key == '#')
            continue;
        klen = strcspn(key, " \t=");
        v = key + klen;
        v += strspn(v, " \t");
        if (*v == '=') {
            v++;
            v += strspn(v, " \t");
        }
        f = find_long(p, key, klen);
        if (f == NULL || f->kind == FLAGTAB_HELP || f->kind == FLAGTAB_VERSION ||
            (f->kind == FLAGTAB_CUSTOM && f->fn == flagtab_config)) {
            snprintf(err, FLAGTAB_ERR_LEN, "--config %.200s:%u: %s '%.*s'", path, lineno,
                     f == NULL ? "unknown key" : "not a setting", (int)(klen > 64 ? 64 : klen),
                     key);
            goto fail;
        }
        if (config_takes_arg(f) && *v == '\0') {
            snprintf(err, FLAGTAB_ERR_LEN, "--config %.200s:%u: %s needs a value", path, lineno,
                     f->name);
            goto fail;
        }
        if (!config_takes_arg(f) && *v != '\0' && (yes = config_bool(v)) < 0) {
            snprintf(err, FLAGTAB_ERR_LEN,
                     "--config %.200s:%u: %s takes no value (or yes/no, true/false, on/off)",
                     path, lineno, f->name);
            goto fail;
        }
        if (!yes)
            continue;
        if ((size_t)*n + 3 > cap) {
            cap *= 2;
            *args = xrealloc(*args, cap * sizeof(**args));
        }
        (*args)[*n] = xmalloc(strlen(f->name) + 3);
        sprintf((*args)[(*n)++], "--%s", f->name);
        if (config_takes_arg(f))
            (*args)[(*n)++] = xstrdup(v);
    }
    (*args)[*n] = NULL;
    free(text);
    return 0;
fail:
    free(text);
    free_args(*args, *n);
    *args = NULL;
    return -1;
}

/* flagtab_parse, or with first flagtab_parse_first */
static enum flagtab_result parse_with_config(const struct flagtab_prog *p, void *cfg, int argc,
                                             char **argv, int *first, char *err)
{
    const char *config = NULL;

    for (const struct flagtab_flag *f = p->flags; f->kind != FLAGTAB_END; f++) {
        size_t len;

        if (f->kind != FLAGTAB_CUSTOM || f->fn != flagtab_config)
            continue;
        len = strlen(f->name);
        /* among the flags before the first non-flag, as getopt ("+") stops there */
        for (int i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++) {
            if (strncmp(argv[i], "--", 2) != 0 || strncmp(argv[i] + 2, f->name, len) != 0)
                continue;
            if (argv[i][2 + len] == '=')
                config = argv[i] + 3 + len;
            else if (argv[i][2 + len] == '\0' && i + 1 < argc)
                config = argv[++i];
        }
    }
    if (config != NULL) {
        char **args;
        int n;
        enum flagtab_result rc;

        if (config_load(p, config, &args, &n, err) < 0)
            return FLAGTAB_ERROR;
        free_args(config_args, config_nargs);
        config_args = args;
        config_nargs = n;
        args[0] = xstrdup(argv[0]);
        rc = parse_argv(p, cfg, n, args, NULL, err);
        if (rc == FLAGTAB_ERROR) {
            char why[FLAGTAB_ERR_LEN];
            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, FLAGTAB_ERR_LEN, "--config %.100s: %.400s", config, why);
        }
        if (rc != FLAGTAB_OK)
            return rc;
    }
    return parse_argv(p, cfg, argc, argv, first, err);
}

enum flagtab_result flagtab_parse(const struct flagtab_prog *p, void *cfg, int argc, char **argv,
                                  char *err)
{
    return parse_with_config(p, cfg, argc, argv, NULL, err);
}

enum flagtab_result flagtab_parse_first(const struct flagtab_prog *p, void *cfg, int argc,
                                        char **argv, int *first, char *err)
{
    return parse_with_config(p, cfg, argc, argv, first, err);
}

enum flagtab_result flagtab_parse_args(const struct flagtab_prog *p, void *cfg, int argc,
                                       char **argv, int *first, char *err)
{
    return parse_argv(p, cfg, argc, argv, first, err);
}

/* first: NULL, an argument after the flags is an error; else its index (argc: none). */
static enum flagtab_result parse_argv(const struct flagtab_prog *p, void *cfg, int argc,
                                      char **argv, int *first, char *err)
{
    struct option opts[FLAGTAB_MAX * 2 + 1];
    char optstring[FLAGTAB_MAX * 4 + 3] = "+:";
    size_t nopts = 0;
    size_t ns = 2;
    const struct flagtab_flag *t = p->flags;

    for (size_t i = 0; t[i].kind != FLAGTAB_END && i < FLAGTAB_MAX; i++) {
        int has = takes_arg(&t[i]) ? required_argument : no_argument;
        int shorts[2] = {t[i].short_name, t[i].short2};

        if (!is_flag(&t[i]))
            continue;
        opts[nopts++] = (struct option){t[i].name, has, NULL, FLAGTAB_VAL_BASE + (int)i};
        if (t[i].alias != NULL)
            opts[nopts++] = (struct option){t[i].alias, has, NULL, FLAGTAB_VAL_BASE + (int)i};
        for (int k = 0; k < 2; k++) {
            if (shorts[k] == 0)
                continue;
            optstring[ns++] = (char)shorts[k];
            if (has == required_argument)
                optstring[ns++] = ':';
        }
    }
    opts[nopts] = (struct option){NULL, 0, NULL, 0};
    optstring[ns] = '\0';

    opterr = 0;
    optind = 0; /* glibc: 0 re-initialises getopt completely (tests parse more than once) */
    /* '+': stop at the first non-flag, so argv[cur] is always the element being parsed */
    for (;;) {
        int cur = optind ? optind : 1;
        int opt = getopt_long(argc, argv, optstring, opts, NULL);
        const struct flagtab_flag *f;
        int rc;

        if (opt == -1)
            break;
        f = opt == '?' || opt == ':' ? NULL : find(p, opt);
        if (f == NULL) {
            getopt_error(opt, cur < argc ? argv[cur] : "?", err);
            return FLAGTAB_ERROR;
        }
        rc = apply(p, f, cfg, optarg, err);
        if (rc != 0)
            return rc < 0 ? FLAGTAB_ERROR : FLAGTAB_EXIT;
    }
    if (first != NULL) {
        *first = optind; /* after the flags, and after a "--" that ends them */
        return FLAGTAB_OK;
    }
    if (optind < argc) {
        snprintf(err, FLAGTAB_ERR_LEN, "unexpected argument '%.64s' (see --help)", argv[optind]);
        return FLAGTAB_ERROR;
    }
    return FLAGTAB_OK;
}

/* ---- --help ---- */

/*
 * Prints text from column `col` (the first line continues whatever is already printed at
 * column `at`), wrapped before FLAGTAB_WIDTH; "\n" in text starts a new line at col.
 */
static void wrap(FILE *out, const char *text, unsigned col, unsigned at)
{
    const char *s = text;

    while (*s != '\0') {
        bool line_start = true;

        for (; at < col; at++)
            fputc(' ', out);
        /* keep a line's own leading blanks (preformatted lines) */
        while (*s == ' ') {
            fputc(' ', out);
            at++;
            s++;
        }
        for (;;) {
            size_t w = strcspn(s, " \n");
            if (!line_start && at + 1 + w >= FLAGTAB_WIDTH)
                break;
            if (!line_start) {
                fputc(' ', out);
                at++;
            }
            fwrite(s, 1, w, out);
            at += (unsigned)w;
            line_start = false;
            s += w;
            if (*s == ' ')
                while (*s == ' ')
                    s++;
            if (*s == '\0' || *s == '\n')
                break;
        }
        fputc('\n', out);
        at = 0;
        if (*s == '\n')
            s++;
    }
}

/* "-l, --listen ADDR" (without the indent). */
static void flag_synopsis(const struct flagtab_flag *f, char *buf, size_t len)
{
    char an[256];
    const char *a = arg_name(f, an, sizeof(an));
    size_t n = 0;

    buf[0] = '\0';
    if (f->short_name != 0)
        n += (size_t)snprintf(buf + n, len - n, "-%c, ", f->short_name);
    if (f->short2 != 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, "-%c, ", f->short2);
    if (n == 0)
        n += (size_t)snprintf(buf, len, "    ");
    if (n < len)
        snprintf(buf + n, len - n, "--%s%s%s", f->name, a != NULL ? " " : "", a != NULL ? a : "");
}

static void print_flag(const struct flagtab_prog *p, const struct flagtab_flag *f,
                       const void *defs, FILE *out)
{
    char syn[320];
    char text[2048];
    char range[96];
    char def[160];
    unsigned at;
    size_t n;

    flag_synopsis(f, syn, sizeof(syn));
    at = (unsigned)fprintf(out, "  %s", syn);
    if (at + 1 >= p->help_col) {
        fputc('\n', out);
        at = 0;
    }
    range_text(f, range, sizeof(range));
    if (f->flags & FLAGTAB_F_NORANGE)
        range[0] = '\0';
    default_text(f, defs, true, def, sizeof(def));
    n = (size_t)snprintf(text, sizeof(text), "%s", f->help);
    if ((range[0] != '\0' || def[0] != '\0') && n < sizeof(text))
        snprintf(text + n, sizeof(text) - n, " (%s%s%s%s)", range,
                 range[0] != '\0' && def[0] != '\0' ? "; " : "", def[0] != '\0' ? "default " : "",
                 def);
    wrap(out, text, p->help_col, at);
}

static void print_paragraphs(FILE *out, const char *text)
{
    char para[4096];
    const char *s = text;

    while (*s != '\0') {
        const char *end = strstr(s, "\n\n");
        size_t len = end != NULL ? (size_t)(end - s) : strlen(s);

        if (len >= sizeof(para))
            len = sizeof(para) - 1;
        memcpy(para, s, len);
        para[len] = '\0';
        wrap(out, para, 0, 0);
        if (end == NULL)
            break;
        fputc('\n', out);
        s = end + 2;
    }
}

void flagtab_usage(const struct flagtab_prog *p, FILE *out)
{
    void *defs = xcalloc(1, p->cfg_size);

    p->defaults(defs);
    fprintf(out, "usage: %s\n", p->usage);
    print_paragraphs(out, p->about);
    if (p->flags[0].kind != FLAGTAB_SECTION)
        fputc('\n', out); /* a section starts with a blank line of its own */
    for (const struct flagtab_flag *f = p->flags; f->kind != FLAGTAB_END; f++) {
        if (f->kind == FLAGTAB_SECTION) {
            char head[2048];
            fputc('\n', out);
            snprintf(head, sizeof(head), "%s:%s%s", f->name, f->help != NULL ? " " : "",
                     f->help != NULL ? f->help : "");
            wrap(out, head, 0, 0);
            continue;
        }
        print_flag(p, f, defs, out);
    }
    if (p->notes != NULL) {
        fputc('\n', out);
        print_paragraphs(out, p->notes);
    }
    free(defs);
}

/* ---- man page ---- */

/* text with roff's special characters escaped; "\n" becomes a line break (.br). */
static void roff(FILE *out, const char *s)
{
    bool bol = true;

    for (; *s != '\0'; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", out);
        bol = false;
        if (*s == '\\') {
            fputs("\\e", out);
        } else if (*s == '-') {
            fputs("\\-", out);
        } else if (*s == '\n') {
            fputs("\n.br\n", out);
            bol = true;
        } else {
            fputc(*s, out);
        }
    }
}

static void roff_paragraphs(FILE *out, const char *text)
{
    const char *s = text;

    while (*s != '\0') {
        const char *end = strstr(s, "\n\n");
        size_t len = end != NULL ? (size_t)(end - s) : strlen(s);
        char para[4096];

        if (len >= sizeof(para))
            len = sizeof(para) - 1;
        memcpy(para, s, len);
        para[len] = '\0';
        fputs(".PP\n", out);
        roff(out, para);
        fputc('\n', out);
        if (end == NULL)
            break;
        s = end + 2;
    }
}

/* What the docs say after a flag's help: its values and its default. */
static void doc_facts(const struct flagtab_flag *f, const void *defs, char *buf, size_t len)
{
    char range[96];
    char def[160];
    size_t n = 0;

    buf[0] = '\0';
    range_text(f, range, sizeof(range));
    default_text(f, defs, false, def, sizeof(def));
    if (range[0] != '\0')
        n += (size_t)snprintf(buf, len, "Range: %s.", range);
    if (def[0] != '\0' && n < len)
        n += (size_t)snprintf(buf + n, len - n, "%sDefault: %s.", n > 0 ? " " : "", def);
    if ((f->flags & FLAGTAB_F_REPEAT) && n < len)
        snprintf(buf + n, len - n, "%sMay be given more than once.", n > 0 ? " " : "");
}

void flagtab_write_man(const struct flagtab_prog *p, FILE *out)
{
    void *defs = xcalloc(1, p->cfg_size);
    char upper[64];
    size_t i;

    p->defaults(defs);
    for (i = 0; p->name[i] != '\0' && i < sizeof(upper) - 1; i++)
        upper[i] = (char)(p->name[i] >= 'a' && p->name[i] <= 'z' ? p->name[i] - 32 : p->name[i]);
    upper[i] = '\0';
    fprintf(out, ".\\\" Generated from %s's flag table (%s/config.c) by 'make docs'; do not "
                 "edit.\n",
            p->name, p->name);
    fprintf(out, ".TH %s 1 \"\" \"%s\" \"User Commands\"\n", upper, p->name);
    fputs(".SH NAME\n", out);
    roff(out, p->name);
    fputs(" \\- ", out);
    roff(out, p->summary);
    fputs("\n.SH SYNOPSIS\n.B ", out);
    roff(out, p->name);
    fputc('\n', out);
    roff(out, p->usage + strlen(p->name) + (p->usage[strlen(p->name)] == ' ' ? 1 : 0));
    fputs("\n.SH DESCRIPTION\n", out);
    roff_paragraphs(out, p->about);
    fputs(".SH OPTIONS\n", out);
    for (const struct flagtab_flag *f = p->flags; f->kind != FLAGTAB_END; f++) {
        char an[256];
        char facts[512];
        const char *a;

        if (f->kind == FLAGTAB_SECTION) {
            fputs(".SS ", out);
            roff(out, f->name);
            fputc('\n', out);
            if (f->help != NULL) {
                fputc(toupper((unsigned char)f->help[0]), out);
                roff(out, f->help + 1);
                fputc('\n', out);
            }
            continue;
        }
        a = arg_name(f, an, sizeof(an));
        fputs(".TP\n", out);
        if (f->short_name != 0)
            fprintf(out, "\\fB\\-%c\\fR, ", f->short_name);
        if (f->short2 != 0)
            fprintf(out, "\\fB\\-%c\\fR, ", f->short2);
        fputs("\\fB\\-\\-", out);
        roff(out, f->name);
        fputs("\\fR", out);
        if (f->alias != NULL) {
            fputs(", \\fB\\-\\-", out);
            roff(out, f->alias);
            fputs("\\fR", out);
        }
        if (a != NULL) {
            fputs(" \\fI", out);
            roff(out, a);
            fputs("\\fR", out);
        }
        fputc('\n', out);
        roff(out, f->help);
        doc_facts(f, defs, facts, sizeof(facts));
        if (facts[0] != '\0') {
            size_t n = strlen(f->help);
            fputs(n > 0 && f->help[n - 1] == '.' ? " " : ". ", out);
            roff(out, facts);
        }
        fputc('\n', out);
    }
    if (p->notes != NULL) {
        fputs(".SH NOTES\n", out);
        roff_paragraphs(out, p->notes);
    }
    free(defs);
}

/* ---- markdown ---- */

/* A table cell: '|' escaped, "\n" as <br>. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '\n')
            fputs("<br>", out);
        else
            fputc(*s, out);
    }
}

static void md_table_head(FILE *out)
{
    fputs("| Flag | Value | Default | Description |\n", out);
    fputs("|---|---|---|---|\n", out);
}

void flagtab_write_md(const struct flagtab_prog *p, FILE *out)
{
    void *defs = xcalloc(1, p->cfg_size);
    bool in_table = false;

    p->defaults(defs);
    fprintf(out, "# %s flags\n\n", p->name);
    fprintf(out, "<!-- Generated from %s's flag table (%s/config.c) by 'make docs'; do not "
                 "edit. -->\n\n",
            p->name, p->name);
    fprintf(out, "Usage: `%s`\n\n", p->usage);
    for (const char *s = p->about; *s != '\0'; s++)
        fputc(*s == '\n' && s[1] != '\n' && (s == p->about || s[-1] != '\n') ? ' ' : *s, out);
    fputs("\n\n", out);
    for (const struct flagtab_flag *f = p->flags; f->kind != FLAGTAB_END; f++) {
        char an[256];
        char range[96];
        char def[160];
        const char *a;

        if (f->kind == FLAGTAB_SECTION) {
            fprintf(out, "%s## %s\n\n", in_table ? "\n" : "", f->name);
            if (f->help != NULL) {
                /* a sentence of its own here, not the rest of "Heading: ..." as in --help */
                fputc(toupper((unsigned char)f->help[0]), out);
                md_cell(out, f->help + 1);
                fputs("\n\n", out);
            }
            md_table_head(out);
            in_table = true;
            continue;
        }
        if (!in_table) {
            md_table_head(out);
            in_table = true;
        }
        a = arg_name(f, an, sizeof(an));
        fputs("| ", out);
        if (f->short_name != 0)
            fprintf(out, "`-%c`, ", f->short_name);
        if (f->short2 != 0)
            fprintf(out, "`-%c`, ", f->short2);
        fprintf(out, "`--%s`", f->name);
        if (f->alias != NULL)
            fprintf(out, ", `--%s`", f->alias);
        fputs(" | ", out);
        if (a != NULL) {
            fputc('`', out);
            md_cell(out, a);
            fputc('`', out);
        }
        range_text(f, range, sizeof(range));
        if (range[0] != '\0')
            fprintf(out, " (%s)", range);
        fputs(" | ", out);
        default_text(f, defs, false, def, sizeof(def));
        md_cell(out, def);
        fputs(" | ", out);
        md_cell(out, f->help);
        if (f->flags & FLAGTAB_F_REPEAT)
            fputs(" May be given more than once.", out);
        fputs(" |\n", out);
    }
    if (p->notes != NULL) {
        fputs("\n## Notes\n\n", out);
        for (const char *s = p->notes; *s != '\0'; s++)
            fputc(*s == '\n' && s[1] != '\n' && (s == p->notes || s[-1] != '\n') ? ' ' : *s,
                  out);
        fputc('\n', out);
    }
    free(defs);
}
