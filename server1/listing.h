/*
 * listing.h - the listing of a directory under /files/ (GET /files/ and /files/DIR/): the names
 * a user may read there, with sizes and modification times, as JSON or as a plain HTML page.
 *
 * What is listed: the operator's files (from the prefetch table with --prefetch, from the pack
 * with --pack, else from the directory on disk, a symlink as what it leads to when that stays
 * beneath the root) and the uploads (the store's index); an upload stands for an operator's file of its name, a deletion
 * hides it, and with --private-uploads other accounts' uploads (and the operator's files they
 * stand for) are left out, as a GET of them gets 404. A directory is listed when something is
 * listed beneath it (or, read from disk, when it is one). Names a client could not ask for
 * (files_name_valid: control characters, reserved names, ...) are left out. Directories first,
 * then files, each in bytewise order of their names; at most max entries, and then the
 * listing says it was cut short and names its last entry as the cursor (?after=) of the next
 * page, which lists what comes after it.
 *
 * DESIGN: built on the calling worker's thread, in memory bounded by about 2 * max entries (the
 * candidates are sorted and cut back to max each time 2 * max have gathered). The uploads come
 * from the store's walk of the directory (store_list, under the index's read lock): it reads
 * the directory's own entries from the cursor on, at most max of them, and one entry per
 * subdirectory, never the rest of the index; each operator's file costs one lookup of its name
 * in the index. With --prefetch, the prefetch table (immutable, no lock) is read whole; with
 * --pack, the pack's index (immutable) from the directory's first name on, one seek per child.
 * The renderers are pure. Thread-safe.
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
    size_t visited;          /* entries of the upload index read (its cost; for tests) */
};

/* What to list, for whom. */
struct listing_scope {
    const char *dir;      /* validated, relative, no trailing '/'; "" for the root */
    size_t dir_len;
    const char *user;     /* who asks */
    bool private_uploads; /* --private-uploads */
    size_t max;           /* --max-list, >= 1 */
    const char *after;    /* the cursor (?after=): list what comes after this entry; or NULL */
    size_t after_len;
    bool after_dir;       /* ... which is a directory */
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
 * Whether sc->dir is a directory sc->user could list (sc->max and the cursor are not used): 1
 * when an upload it may see lies beneath it or the tree has it on disk, 0 when not, or -errno
 * of reading the upload index or opening the directory. Reads at most one upload entry and
 * opens one directory, whatever their size: cheap enough for every 404 of a GET.
 */
int listing_dir_exists(struct files *f, struct committer *cm, const struct listing_scope *sc);

/*
 * The Location of a redirect from /files/DIR to /files/DIR/, relative to the first: DIR's last
 * segment percent-encoded and a '/' (a malloc'd string of *len bytes, NUL-terminated).
 */
char *listing_dir_location(const char *dir, size_t dir_len, size_t *len);

/*
 * The cursor of a listing's query string (the part after '?', len bytes; NULL: none): the
 * value of its after= parameter, percent-decoded into out (cap >= FILES_SEGMENT_MAX + 1,
 * NUL-terminated, *out_len bytes), a directory if it ends in '/' (*dir; the '/' is not kept).
 * Returns 1 with it, 0 when there is no after=, -1 when it cannot be an entry's name (empty,
 * longer than FILES_SEGMENT_MAX, a '/' before its end, NUL, a bad %-escape).
 */
int listing_after_parse(const char *query, size_t len, char *out, size_t cap, size_t *out_len,
                        bool *dir);

/*
 * True if a request with this Accept value (NULL: none) prefers text/html to
 * application/json by their q-values; wildcards count for neither (JSON is the default).
 */
bool listing_wants_html(const char *accept, size_t len);

/*
 * The listing as a malloc'd JSON object (*len bytes, NUL-terminated):
 * {"path":"/files/DIR/","entries":[{"name":…,"href":…,"type":"file"|"directory",
 * "size":N,"mtime":"2026-01-02T03:04:05Z"},…],"truncated":false}; when truncated, also
 * "next":"?after=HREF" with the href of the last entry (the next page). "href" is the entry's URL
 * relative to the listing (percent-encoded, a directory's with a trailing '/'); bytes of a name
 * that are not UTF-8 show as U+FFFD in "name" (href has them exact); "size" and "mtime" are
 * left out where not known (directories have no size).
 */
char *listing_json(const struct listing *l, const char *dir, size_t dir_len, size_t *len);
/* The listing as a malloc'd HTML page (*len bytes, NUL-terminated), names escaped. */
char *listing_html(const struct listing *l, const char *dir, size_t dir_len, size_t *len);

#endif /* S1_LISTING_H */
