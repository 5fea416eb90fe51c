/*
 * files.h - the files server1 serves from --root: validating a requested name (pure), opening it
 * beneath the root (openat2 RESOLVE_BENEATH: the kernel refuses anything that resolves outside,
 * symlinks included), reading it with O_DIRECT into aligned memory, and the --prefetch table.
 *
 * DESIGN: struct files is built by main before any worker starts (files_init). root_fd, mode and
 * align never change afterwards. With --prefetch it holds every regular file under the root in
 * posix_memalign'd blobs, in an open-addressing hash table keyed by the name relative to the
 * root ("a/b.txt"), built once at start and never changed afterwards. Uploads never enter it:
 * they are served from the upload store's segments (commit.h), which a lookup consults first.
 * So a lookup takes no lock and no reference (the two workers would otherwise bounce the same
 * cache lines on every GET), and a blob lives as long as the table: main releases it after
 * every worker has stopped, so a response may point into a blob until it is sent.
 * Names whose segments start with FILES_RESERVED_PREFIX (the upload store) are never served.
 */
#ifndef FILES_H
#define FILES_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILES_NAME_MAX 1024   /* bytes in a decoded name */

struct mimetypes;
struct pack;
#define FILES_SEGMENT_MAX 255 /* bytes in one '/'-separated segment */
#define FILES_ERR_LEN 1600
#define FILES_RESERVED_PREFIX ".s1" /* segments starting so are internal: never read/written */

enum files_mode {
    FILES_PREFETCH, /* everything read into memory at start */
    FILES_DIRECT,   /* per request: O_DIRECT read into an aligned buffer */
    FILES_BUFFERED, /* per request: page cache, sendfile */
};

#define FILES_VALIDATORS_MAX 160 /* bytes of the ETag and Last-Modified lines, at most */
#define FILES_ETAG_MAX 52        /* bytes of an ETag: "\"<16 hex>-<16 hex>-<16 hex>\"" */
#define FILES_HEAD_MAX 384       /* bytes of a prefetched file's header block (files_blob) */

/*
 * The strong ETag of a file version, quotes included, from the inode number, size and
 * modification time in nanoseconds: an operator's file's, or for an upload inode 0 and its
 * version (store.h: unique to it, as no inode is 0). Writes FILES_ETAG_MAX + 1 bytes at most
 * to out and returns the length, or 0 (out "") when mtime_ns < 0: a version not known. Pure.
 */
size_t files_etag(uint64_t ino, uint64_t size, int64_t mtime_ns, char *out);

/*
 * The validator header lines of a file version ("ETag: ...\r\nLast-Modified: ...\r\n"): the
 * ETag of files_etag, and last_modified (seconds: httpcond_last_modified) as an HTTP date, or
 * no Last-Modified line when it is < 0. Returns the length written to out
 * (FILES_VALIDATORS_MAX + 1 bytes, NUL-terminated); 0 when mtime_ns < 0. Pure.
 */
size_t files_validators(uint64_t ino, uint64_t size, int64_t mtime_ns, int64_t last_modified,
                        char *out);

/* A prefetched file, made at start; freed (data and all) with the table (files_release). */
struct files_blob {
    const void *data;           /* aligned buffer (NULL for an empty file) */
    size_t size;
    int64_t mtime_ns;           /* the file's when it was read (st_mtim), -1 if unknown */
    uint64_t ino;               /* its inode number */
    /* the Last-Modified it is sent with (seconds, -1: none, as it was loaded within the second
     * of its mtime) and the date an If-Range must equal (-1: none), httpcond.h */
    int64_t last_modified;
    int64_t strong_date;
    bool active; /* its Content-Type can run script (mimetypes_is_active): --sandbox-root */
    char validators[FILES_VALIDATORS_MAX + 1]; /* its ETag and Last-Modified header lines */
    size_t validators_len;
    /* the header lines of its whole 200 after Content-Length, made at load: nosniff, its
     * Content-Type, the validators and Accept-Ranges, as a 200 built per request has them */
    char head[FILES_HEAD_MAX + 1];
    size_t head_len;
};

struct files_entry {
    const char *name; /* NULL marks an empty slot */
    size_t name_len;
    uint64_t hash;
    struct files_blob *blob; /* the file (never NULL in a slot with a name) */
};

struct files {
    int root_fd;
    enum files_mode mode;
    size_t align;  /* O_DIRECT alignment for buffer, offset and length */
    /* prefetch table (FILES_PREFETCH only): written by files_init, read-only afterwards */
    struct files_entry *table;
    size_t table_cap; /* a power of two */
    size_t used;      /* slots with a name */
    /* the directories the prefetched files lie in ("a" and "a/b" for a/b/c; no blobs) */
    struct files_entry *dirs;
    size_t dirs_cap; /* a power of two */
    size_t count;     /* files */
    uint64_t bytes;
    double load_seconds;
    /* --pack: the operator's files come from it (pack.h), not from the tree under the root
     * (which keeps the upload store); set by main before any worker starts, else NULL */
    const struct pack *pack;
};

/*
 * Turns the raw {name} of /files/{name} (still percent-encoded) into a safe relative name:
 * percent-decoded once; rejects bad escapes, an encoded slash (%2f), NUL, control characters,
 * backslash, an absolute or empty name, empty / "." / ".." segments, and over-long names.
 * Returns 0 with the NUL-terminated name in out (cap >= FILES_NAME_MAX + 1), else -1 and a
 * static reason in *why.
 */
int files_name_decode(const char *raw, size_t len, char *out, size_t cap, size_t *out_len,
                      const char **why);

/*
 * True if name[0..len) (already decoded: a name found on disk or in a table) passes the rules
 * of files_name_decode and is not reserved: a name a client can ask for. Pure.
 */
bool files_name_valid(const char *name, size_t len);

/* True if some '/'-separated segment of name[0..len) starts with FILES_RESERVED_PREFIX. Pure. */
bool files_name_is_reserved(const char *name, size_t len);

/*
 * Opens --root, checks it is a readable directory, probes O_DIRECT (modes PREFETCH and DIRECT)
 * and, for PREFETCH, loads every file, with its Content-Type from types (NULL: octets). On
 * failure returns -1 with a one-line reason in err.
 */
int files_init(struct files *f, const char *root, enum files_mode mode,
               const struct mimetypes *types, char *err);
void files_release(struct files *f);

/*
 * The prefetched file called name, or NULL. The blob is the table's: valid until
 * files_release, nothing to give back. Thread-safe (the table does not change).
 */
const struct files_blob *files_lookup(const struct files *f, const char *name, size_t len);
/* Prefetched files and their bytes. Thread-safe. */
void files_stats(const struct files *f, uint64_t *count, uint64_t *bytes);
/*
 * Calls fn for every prefetched file whose name starts with prefix[0..plen). Thread-safe.
 */
void files_foreach(const struct files *f, const char *prefix, size_t plen,
                   void (*fn)(void *arg, const char *name, size_t len,
                              const struct files_blob *b),
                   void *arg);

/*
 * Opens a validated name beneath the root (O_DIRECT if direct). Returns an fd, or -errno:
 * -ENOENT, -EXDEV (resolves outside the root), -ELOOP, -EACCES, ...
 */
int files_open(const struct files *f, const char *name, bool direct);

/*
 * Opens the directory dir (validated, relative; "" = the root) beneath the root for reading
 * (usable with fsync and *at calls). Returns an fd, or -errno as files_open (-EXDEV also for
 * a symlink that leads into the upload store).
 */
int files_open_dir(const struct files *f, const char *dir);

/*
 * Whether dir (validated, relative, len bytes, not "") is a directory of the tree as a listing
 * reads it: with FILES_PREFETCH one a prefetched file lies beneath (a lookup), else one on disk
 * beneath the root (an open). Returns 1 or 0, or -errno of opening it other than those that
 * mean "no such directory" (-ENOENT, -ENOTDIR, -EXDEV, -ELOOP).
 */
int files_dir_exists(const struct files *f, const char *dir, size_t len);

/* True for the -errno of files_open or files_open_dir that means "not there beneath the root":
 * -ENOENT, -ENOTDIR, -EXDEV (resolves outside it), -ELOOP. */
static inline bool files_absent(int err)
{
    return err == -ENOENT || err == -ENOTDIR || err == -EXDEV || err == -ELOOP;
}

/*
 * The alignment O_DIRECT needs on fd's file system (offsets, lengths and memory): statx's
 * STATX_DIOALIGN where the kernel tells it, at least 4096, a power of two.
 */
size_t files_direct_alignment(int fd);

/*
 * Reads size bytes of fd (opened with O_DIRECT) into a new aligned buffer (*buf; NULL when size
 * is 0; free with free()). Returns the number of bytes read (less than size if the file shrank),
 * or -errno.
 */
long files_read_direct(const struct files *f, int fd, size_t size, void **buf);

/*
 * Reads up to cap bytes of fd (opened with O_DIRECT) at off into buf; buf, cap and off
 * aligned to f->align. Returns the bytes read (fewer only at the end of the file), or -errno.
 */
long files_pread_direct(const struct files *f, int fd, void *buf, size_t cap, uint64_t off);

#endif /* FILES_H */
