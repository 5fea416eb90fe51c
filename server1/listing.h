/*
 * listing.h - the listing of a directory under /files/ (GET /files/ and /files/DIR/): the names
 * a user may read there, with sizes and modification times, as JSON or as a plain HTML page.
 *
 * What is listed: the operator's files (from the prefetch table with --prefetch, else from the
 * directory on disk, a symlink as what it leads to when that stays beneath the root) and the
 * uploads (the store's index); an upload stands for an operator's file of its name, a deletion
 * hides it, and with --private-uploads other accounts' uploads (and the operator's files they
 * stand for) are left out, as a GET of them gets 404. A directory is listed when something is
 * listed beneath it (or, read from disk, when it is one). Names a client could not ask for
 * (files_name_valid: control characters, reserved names, ...) are left out. Directories first,
 * then files, each in bytewise order of their names; at most max entries, and then the
 * listing says it was cut short.
 *
 * DESIGN: built on the calling worker's thread, in memory bounded by about 2 * max entries (the
 * candidates are sorted and cut back to max each time 2 * max have gathered). The walks lock
 * the store's index (read lock) and, with --prefetch, the prefetch table (every GET waits for
 * it meanwhile: one pass over the table). The renderers are pure. Thread-safe.
 */
#ifndef S1_LISTING_H
#define S1_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commit.h"
#include "files.h"

#define LISTING_MAX_DEFAULT 10000 /* --max-list */
#define LISTING_MAX_LIMIT 1000000u

struct listing_entry {
    char *name;      /* the entry's own name (one segment), malloc'd */
    size_t name_len;
    bool dir;
    uint64_t size;   /* a file's bytes */
    int64_t mtime_s; /* seconds since the epoch; -1 if not known */
};

struct listing {
    struct listing_entry *e; /* in the order shown */
    size_t n, cap;
    size_t max;
    bool truncated;          /* there was more than max to list */
};

/* What to list, for whom. */
struct listing_scope {
    const char *dir;      /* validated, relative, no trailing '/'; "" for the root */
    size_t dir_len;
    const char *user;     /* who asks */
    bool private_uploads; /* --private-uploads */
    size_t max;           /* --max-list, >= 1 */
};

/*
 * Lists sc->dir into *out (free it with listing_free, also after a failure). Returns 0, or
 * -ENOENT when there is no such directory (nothing listed beneath it either), -EACCES, or
 * another -errno of opening or reading the directory. cm may be NULL (--read-only).
 */
int listing_build(struct files *f, struct committer *cm, const struct listing_scope *sc,
                  struct listing *out);
void listing_free(struct listing *l);

/*
 * True if a request with this Accept value (NULL: none) prefers text/html to
 * application/json by their q-values; wildcards count for neither (JSON is the default).
 */
bool listing_wants_html(const char *accept, size_t len);

/*
 * The listing as a malloc'd JSON object (*len bytes, NUL-terminated):
 * {"path":"/files/DIR/","entries":[{"name":…,"href":…,"type":"file"|"directory",
 * "size":N,"mtime":"2026-01-02T03:04:05Z"},…],"truncated":false}. "href" is the entry's URL
 * relative to the listing (percent-encoded, a directory's with a trailing '/'); bytes of a name
 * that are not UTF-8 show as U+FFFD in "name" (href has them exact); "size" and "mtime" are
 * left out where not known (directories have no size).
 */
char *listing_json(const struct listing *l, const char *dir, size_t dir_len, size_t *len);
/* The listing as a malloc'd HTML page (*len bytes, NUL-terminated), names escaped. */
char *listing_html(const struct listing *l, const char *dir, size_t dir_len, size_t *len);

#endif /* S1_LISTING_H */
