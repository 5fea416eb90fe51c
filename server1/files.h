/*
 * files.h - the files server1 serves from --root: validating a requested name (pure), opening it
 * beneath the root (openat2 RESOLVE_BENEATH: the kernel refuses anything that resolves outside,
 * symlinks included), reading it with O_DIRECT into aligned memory, and the --prefetch table.
 *
 * DESIGN: struct files is built by main before any worker starts (files_init) and is immutable
 * afterwards; workers use it through const pointers from any thread. With --prefetch it holds
 * every regular file under the root in posix_memalign'd buffers, in an open-addressing hash table
 * keyed by the name relative to the root ("a/b.txt").
 */
#ifndef FILES_H
#define FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILES_NAME_MAX 1024   /* bytes in a decoded name */
#define FILES_SEGMENT_MAX 255 /* bytes in one '/'-separated segment */
#define FILES_ERR_LEN 1600

enum files_mode {
    FILES_PREFETCH, /* everything read into memory at start */
    FILES_DIRECT,   /* per request: O_DIRECT read into an aligned buffer */
    FILES_BUFFERED, /* per request: page cache, sendfile */
};

struct files_entry {
    const char *name; /* NULL marks an empty slot */
    size_t name_len;
    uint64_t hash;
    const void *data; /* aligned buffer (NULL for an empty file) */
    size_t size;
};

struct files {
    int root_fd;
    enum files_mode mode;
    size_t align;  /* O_DIRECT alignment for buffer, offset and length */
    /* prefetch table (FILES_PREFETCH only) */
    struct files_entry *table;
    size_t table_cap; /* a power of two */
    size_t count;
    uint64_t bytes;
    double load_seconds;
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
 * Opens --root, checks it is a readable directory, probes O_DIRECT (modes PREFETCH and DIRECT)
 * and, for PREFETCH, loads every file. On failure returns -1 with a one-line reason in err.
 */
int files_init(struct files *f, const char *root, enum files_mode mode, char *err);
void files_release(struct files *f);

/* The prefetched file called name, or NULL. */
const struct files_entry *files_lookup(const struct files *f, const char *name, size_t len);

/*
 * Opens a validated name beneath the root (O_DIRECT if direct). Returns an fd, or -errno:
 * -ENOENT, -EXDEV (resolves outside the root), -ELOOP, -EACCES, ...
 */
int files_open(const struct files *f, const char *name, bool direct);

/*
 * Reads size bytes of fd (opened with O_DIRECT) into a new aligned buffer (*buf; NULL when size
 * is 0; free with free()). Returns the number of bytes read (less than size if the file shrank),
 * or -errno.
 */
long files_read_direct(const struct files *f, int fd, size_t size, void **buf);

#endif /* FILES_H */
