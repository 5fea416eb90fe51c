/*
 * gen-flags.c - writes the man pages (docs/man/PROG.1) and flag tables (docs/flags/PROG.md) of
 * server1, server2 and loadgen from their flag tables (common/flagtab.h), or checks that the
 * committed ones are what the tables give now.
 *
 *   gen-flags DIR          write DIR/man/PROG.1 and DIR/flags/PROG.md (`make docs`)
 *   gen-flags --check DIR  exit 1, naming each file, when one differs or is missing (`make unit`)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flagtab.h"

#include "../loadgen/config.h"
#include "../server1/config.h"
#include "../server2/config.h"

static const struct flagtab_prog *const progs[] = {&s1_config_flags, &s2_config_flags,
                                                   &lg_config_flags};

/* One generated text in a malloc'd buffer. */
struct gen_text {
    char *buf;
    size_t len;
};

static int render(const struct flagtab_prog *p, bool man, struct gen_text *t)
{
    FILE *f = open_memstream(&t->buf, &t->len);

    if (f == NULL) {
        perror("gen-flags: open_memstream");
        return -1;
    }
    if (man)
        flagtab_write_man(p, f);
    else
        flagtab_write_md(p, f);
    if (fclose(f) != 0) {
        perror("gen-flags: fclose");
        return -1;
    }
    return 0;
}

/* True when path holds exactly t. */
static bool same_as_file(const char *path, const struct gen_text *t)
{
    FILE *f = fopen(path, "re");
    char *buf;
    size_t n;
    bool same;

    if (f == NULL)
        return false;
    buf = malloc(t->len + 2);
    if (buf == NULL) {
        fclose(f);
        return false;
    }
    n = fread(buf, 1, t->len + 1, f); /* one byte more: a longer file differs */
    same = n == t->len && memcmp(buf, t->buf, t->len) == 0;
    free(buf);
    fclose(f);
    return same;
}

static int write_file(const char *path, const struct gen_text *t)
{
    FILE *f = fopen(path, "we");

    if (f == NULL || fwrite(t->buf, 1, t->len, f) != t->len) {
        fprintf(stderr, "gen-flags: cannot write %s: %s\n", path, strerror(errno));
        if (f != NULL)
            fclose(f);
        return -1;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "gen-flags: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "gen-flags: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool check = argc == 3 && strcmp(argv[1], "--check") == 0;
    const char *dir = check ? argv[2] : argv[1];
    char path[4096];
    int stale = 0;

    if (!(argc == 2 && argv[1][0] != '-') && !check) {
        fprintf(stderr, "usage: gen-flags [--check] DIR   (DIR/man/PROG.1, DIR/flags/PROG.md)\n");
        return 2;
    }
    if (!check) {
        snprintf(path, sizeof(path), "%s/man", dir);
        if (make_dir(dir) < 0 || make_dir(path) < 0)
            return 1;
        snprintf(path, sizeof(path), "%s/flags", dir);
        if (make_dir(path) < 0)
            return 1;
    }
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
        for (int man = 0; man < 2; man++) {
            struct gen_text t = {NULL, 0};
            int rc;

            snprintf(path, sizeof(path), man ? "%s/man/%s.1" : "%s/flags/%s.md", dir,
                     progs[i]->name);
            if (render(progs[i], man, &t) < 0)
                return 1;
            if (check) {
                rc = 0;
                if (!same_as_file(path, &t)) {
                    fprintf(stderr, "gen-flags: %s is not what %s's flag table gives now "
                                    "(run 'make docs' and commit it)\n",
                            path, progs[i]->name);
                    stale++;
                }
            } else {
                rc = write_file(path, &t);
            }
            free(t.buf);
            if (rc < 0)
                return 1;
        }
    }
    return stale > 0 ? 1 : 0;
}
