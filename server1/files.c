/*
 * files.c - see files.h. openat2(2) is called through syscall(2): glibc 2.36 has no wrapper.
 * The test hook S1_TEST_NO_ODIRECT=1 makes every O_DIRECT open fail with EINVAL, as on a
 * filesystem that refuses direct I/O, so the start-up error can be tested on any machine.
 */
#include "files.h"

#include "compat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "httpcond.h"
#include "httpdate.h"
#include "log.h"
#include "mimetypes.h"
#include "xalloc.h"

#define FILES_MAX_DEPTH 64
#define FILES_READ_CHUNK (16u << 20) /* bytes per O_DIRECT read call, a multiple of any align */

static const char odirect_hint[] =
    "the filesystem refuses O_DIRECT (e.g. tmpfs on kernels before 6.6); put --root on a disk "
    "filesystem, or run without --prefetch and with --read buffered";

/* ---- name validation (pure) ---- */

static int bad(const char **why, const char *reason)
{
    *why = reason;
    return -1;
}

/* Checks a decoded name name[0..len): the rules of files_name_decode after decoding. */
static int check_decoded(const char *name, size_t len, const char **why)
{
    size_t seg_start = 0;

    if (len == 0)
        return bad(why, "empty name");
    if (len > FILES_NAME_MAX)
        return bad(why, "name too long");
    if (name[0] == '/')
        return bad(why, "absolute name");
    for (size_t i = 0; i <= len; i++) {
        unsigned char c = i < len ? (unsigned char)name[i] : '/';
        size_t sl;

        if (c == '\0')
            return bad(why, "NUL in name");
        if (c < 0x20 || c == 0x7f)
            return bad(why, "control character in name");
        if (c == '\\')
            return bad(why, "backslash in name");
        if (c != '/')
            continue;
        sl = i - seg_start;
        if (sl == 0)
            return bad(why, "empty path segment");
        if ((sl == 1 && name[seg_start] == '.') ||
            (sl == 2 && name[seg_start] == '.' && name[seg_start + 1] == '.'))
            return bad(why, "dot segment");
        if (sl > FILES_SEGMENT_MAX)
            return bad(why, "path segment too long");
        seg_start = i + 1;
    }
    return 0;
}

int files_name_decode(const char *raw, size_t len, char *out, size_t cap, size_t *out_len,
                      const char **why)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            int hi;
            int lo;
            if (len - i < 3)
                return bad(why, "truncated %-escape");
            hi = hex_digit_value((unsigned char)raw[i + 1]);
            lo = hex_digit_value((unsigned char)raw[i + 2]);
            if (hi < 0 || lo < 0)
                return bad(why, "bad %-escape");
            c = (unsigned char)(hi << 4 | lo);
            if (c == '/')
                return bad(why, "encoded slash");
            i += 2;
        }
        if (o >= FILES_NAME_MAX || o + 1 >= cap)
            return bad(why, "name too long");
        out[o++] = (char)c;
    }
    out[o] = '\0';
    if (check_decoded(out, o, why) < 0)
        return -1;
    *out_len = o;
    return 0;
}

/* ---- opening and reading ---- */

static bool odirect_disabled_for_test(void)
{
    const char *v = getenv("S1_TEST_NO_ODIRECT");
    return v != NULL && strcmp(v, "1") == 0;
}

static int openat2_beneath(int dirfd, const char *name, uint64_t flags)
{
    struct open_how how = {
        .flags = flags,
        .mode = 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd;

    if ((flags & O_DIRECT) && odirect_disabled_for_test())
        return -EINVAL;
    do {
        fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
    } while (fd < 0 && errno == EAGAIN); /* the kernel asks for a retry on a rename race */
    return fd < 0 ? -errno : (int)fd;
}

/*
 * Whether fd, opened beneath root_fd through a symlink, is really a file of a reserved
 * directory (the upload store): its path relative to the root, as the kernel resolved it, has
 * a segment starting with FILES_RESERVED_PREFIX. A name that spells such a segment is refused
 * before any open; this catches a symlink such as `st -> .s1store` or `x -> .s1store/0.seg`.
 * When the paths cannot be read, the answer is yes (refuse).
 */
static bool resolves_into_reserved(int root_fd, int fd)
{
    char link[64], root[PATH_MAX], path[PATH_MAX];
    ssize_t rl, pl;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
    rl = readlink(link, root, sizeof(root) - 1);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    pl = readlink(link, path, sizeof(path) - 1);
    if (rl <= 0 || pl <= 0 || rl >= (ssize_t)sizeof(root) - 1 || pl >= (ssize_t)sizeof(path) - 1)
        return true;
    root[rl] = '\0';
    path[pl] = '\0';
    if (strcmp(root, "/") == 0)
        rl = 0;
    if (strncmp(path, root, (size_t)rl) != 0 || path[rl] != '/')
        return true; /* not beneath the root after all */
    return files_name_is_reserved(path + rl + 1, (size_t)(pl - rl - 1));
}

int files_open(const struct files *f, const char *name, bool direct)
{
    /* O_NONBLOCK: opening a FIFO must not block the worker (it is then refused as irregular) */
    uint64_t flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (direct ? O_DIRECT : 0);
    struct open_how how = {
        .flags = flags,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
    };
    long fd;

    if ((flags & O_DIRECT) && odirect_disabled_for_test())
        return -EINVAL;
    /* Without a symlink on the way the file is the name as spelled, which was checked (no
     * reserved segment); only a path through a symlink needs its resolved path checked. */
    do {
        fd = syscall(SYS_openat2, f->root_fd, name, &how, sizeof(how));
    } while (fd < 0 && errno == EAGAIN);
    if (fd >= 0 || errno != ELOOP)
        return fd < 0 ? -errno : (int)fd;
    fd = openat2_beneath(f->root_fd, name, flags);
    if (fd >= 0 && resolves_into_reserved(f->root_fd, (int)fd)) {
        close((int)fd);
        return -EXDEV; /* answered as a name that resolves outside the root: 404 */
    }
    return (int)fd;
}

int files_open_dir(const struct files *f, const char *dir)
{
    int fd = openat2_beneath(f->root_fd, *dir ? dir : ".",
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);

    if (fd >= 0 && *dir && resolves_into_reserved(f->root_fd, fd)) {
        close(fd);
        return -EXDEV;
    }
    return fd;
}

static size_t round_up(size_t n, size_t align)
{
    return (n + align - 1) / align * align;
}

long files_pread_direct(const struct files *f, int fd, void *buf, size_t cap, uint64_t off)
{
    char *p = buf;
    size_t got = 0;

    (void)f;
    while (got < cap) {
        size_t want = cap - got;
        ssize_t r;
        if (want > FILES_READ_CHUNK)
            want = FILES_READ_CHUNK;
        r = pread(fd, p + got, want, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break; /* end of file */
        got += (size_t)r;
        if ((size_t)r < want)
            break; /* short read: end of file */
    }
    return (long)got;
}

long files_read_direct(const struct files *f, int fd, size_t size, void **buf)
{
    size_t alloc = round_up(size, f->align);
    char *p;
    long got;

    *buf = NULL;
    if (size == 0)
        return 0;
    p = xmemalign(f->align, alloc);
    got = files_pread_direct(f, fd, p, alloc, 0);
    if (got < 0) {
        free(p);
        return got;
    }
    *buf = p;
    return (long)((size_t)got < size ? (size_t)got : size);
}

/* ---- prefetch table ---- */

bool files_name_valid(const char *name, size_t len)
{
    const char *why;

    return check_decoded(name, len, &why) == 0 && memchr(name, '\0', len) == NULL &&
           !files_name_is_reserved(name, len);
}

bool files_name_is_reserved(const char *name, size_t len)
{
    size_t plen = sizeof(FILES_RESERVED_PREFIX) - 1;

    for (size_t i = 0; i < len; i++) {
        if ((i == 0 || name[i - 1] == '/') && len - i >= plen &&
            memcmp(name + i, FILES_RESERVED_PREFIX, plen) == 0)
            return true;
    }
    return false;
}

/* The slot of name, or of the empty slot where it would go. */
static struct files_entry *slot_of(struct files_entry *table, size_t cap, const char *name,
                                   size_t len, uint64_t h)
{
    size_t mask = cap - 1;

    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct files_entry *e = &table[i];
        if (e->name == NULL)
            return e;
        if (e->hash == h && e->name_len == len && memcmp(e->name, name, len) == 0)
            return e;
    }
}

const struct files_blob *files_lookup(const struct files *f, const char *name, size_t len)
{
    if (f->table == NULL)
        return NULL;
    return slot_of(f->table, f->table_cap, name, len, fnv1a64(name, len))->blob;
}

int files_dir_exists(const struct files *f, const char *dir, size_t len)
{
    char name[FILES_NAME_MAX + 1];
    int fd;

    if (f->mode == FILES_PREFETCH)
        return f->dirs != NULL &&
               slot_of(f->dirs, f->dirs_cap, dir, len, fnv1a64(dir, len))->name != NULL;
    if (len > FILES_NAME_MAX)
        return 0;
    memcpy(name, dir, len);
    name[len] = '\0';
    fd = files_open_dir(f, name);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    return files_absent(fd) ? 0 : fd;
}

static void blob_free(struct files_blob *b)
{
    if (b == NULL)
        return;
    free((void *)b->data);
    free(b);
}

/* A new blob holding data (aligned, malloc'd; the blob owns it). */
static struct files_blob *blob_new(void *data, size_t size)
{
    struct files_blob *b = xmalloc(sizeof(*b));

    b->data = data;
    b->size = size;
    b->mtime_ns = -1;
    b->ino = 0;
    b->last_modified = -1;
    b->strong_date = -1;
    b->active = false;
    b->validators[0] = '\0';
    b->validators_len = 0;
    b->head[0] = '\0';
    b->head_len = 0;
    return b;
}

size_t files_etag(uint64_t ino, uint64_t size, int64_t mtime_ns, char *out)
{
    int n;

    out[0] = '\0';
    if (mtime_ns < 0)
        return 0;
    n = snprintf(out, FILES_ETAG_MAX + 1, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"", ino, size,
                 (uint64_t)mtime_ns);
    return n > 0 && n <= FILES_ETAG_MAX ? (size_t)n : 0; /* (always fits) */
}

size_t files_validators(uint64_t ino, uint64_t size, int64_t mtime_ns, int64_t last_modified,
                        char *out)
{
    char date[HTTPDATE_LEN + 1];
    char etag[FILES_ETAG_MAX + 1];
    int n;

    out[0] = '\0';
    if (files_etag(ino, size, mtime_ns, etag) == 0)
        return 0;
    if (last_modified < 0) {
        n = snprintf(out, FILES_VALIDATORS_MAX + 1, "ETag: %s\r\n", etag);
    } else {
        httpdate_format(last_modified, date);
        n = snprintf(out, FILES_VALIDATORS_MAX + 1, "ETag: %s\r\nLast-Modified: %s\r\n", etag,
                     date);
    }
    if (n < 0 || n > FILES_VALIDATORS_MAX) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

void files_foreach(const struct files *f, const char *prefix, size_t plen,
                   void (*fn)(void *arg, const char *name, size_t len,
                              const struct files_blob *b),
                   void *arg)
{
    for (size_t i = 0; f->table != NULL && i < f->table_cap; i++) {
        const struct files_entry *e = &f->table[i];
        if (e->name != NULL && e->blob != NULL && e->name_len >= plen &&
            memcmp(e->name, prefix, plen) == 0)
            fn(arg, e->name, e->name_len, e->blob);
    }
}

void files_stats(const struct files *f, uint64_t *count, uint64_t *bytes)
{
    *count = f->count;
    *bytes = f->bytes;
}

/* The header block of a loaded file's 200 (struct files_blob's head). */
static void blob_head(struct files_blob *b, const struct mimetypes *types, const char *name,
                      size_t len)
{
    const char *type = types != NULL ? mimetypes_lookup(types, name, len) : NULL;
    int n = snprintf(b->head, sizeof(b->head),
                     "X-Content-Type-Options: nosniff\r\nContent-Type: %s\r\n%sAccept-Ranges: "
                     "bytes\r\n",
                     type != NULL ? type : "application/octet-stream", b->validators);

    b->active = type != NULL && mimetypes_is_active(type);

    _Static_assert(MIMETYPES_TYPE_MAX + FILES_VALIDATORS_MAX + 80 < FILES_HEAD_MAX, "fits");
    b->head_len = n > 0 && (size_t)n < sizeof(b->head) ? (size_t)n : 0;
}

struct loader {
    struct files *f;
    const struct mimetypes *types;
    struct files_entry *list; /* loaded files, before hashing */
    size_t n;
    size_t cap;
    char *err;
};

/* f->dirs from the names in f->table: every prefix of a name that ends before a '/'. */
static void dirs_build(struct files *f)
{
    size_t slashes = 0, cap = 16;

    for (size_t i = 0; i < f->table_cap; i++) {
        const struct files_entry *e = &f->table[i];
        for (size_t k = 0; e->name != NULL && k < e->name_len; k++)
            slashes += e->name[k] == '/';
    }
    while (cap < slashes * 2)
        cap *= 2;
    f->dirs = xcalloc(cap, sizeof(*f->dirs));
    f->dirs_cap = cap;
    for (size_t i = 0; i < f->table_cap; i++) {
        const struct files_entry *e = &f->table[i];
        for (size_t k = 0; e->name != NULL && k < e->name_len; k++) {
            struct files_entry *d;
            uint64_t h;
            char *name;

            if (e->name[k] != '/')
                continue;
            h = fnv1a64(e->name, k);
            d = slot_of(f->dirs, cap, e->name, k, h);
            if (d->name != NULL)
                continue;
            name = xmalloc(k + 1);
            memcpy(name, e->name, k);
            name[k] = '\0';
            *d = (struct files_entry){.name = name, .name_len = k, .hash = h};
        }
    }
}

static void table_build(struct loader *ld)
{
    struct files *f = ld->f;
    size_t cap = 16;

    while (cap < ld->n * 2)
        cap *= 2;
    f->table = xcalloc(cap, sizeof(*f->table));
    f->table_cap = cap;
    for (size_t k = 0; k < ld->n; k++) {
        struct files_entry *e = &ld->list[k];
        *slot_of(f->table, cap, e->name, e->name_len, e->hash) = *e;
    }
    f->used = ld->n;
    free(ld->list);
    ld->list = NULL;
    dirs_build(f);
}

static int load_file(struct loader *ld, const char *rel, size_t rel_len)
{
    struct files *f = ld->f;
    struct stat st;
    void *buf = NULL;
    char ebuf[128];
    int64_t loaded_s;
    long got;
    int fd;

    /* first resolve it without opening it: only regular files inside the root are loaded */
    fd = openat2_beneath(f->root_fd, rel, O_PATH | O_CLOEXEC);
    if (fd >= 0) {
        bool reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        close(fd);
        if (!reg) {
            log_debug("prefetch: skipping '%s': not a regular file", rel);
            return 0;
        }
    }
    fd = files_open(f, rel, true);
    if (fd == -EINVAL) {
        snprintf(ld->err, FILES_ERR_LEN, "cannot open '%s' with O_DIRECT: %s", rel,
                 odirect_hint);
        return -1;
    }
    if (files_absent(fd)) {
        log_debug("prefetch: skipping '%s': it resolves outside the root or nowhere", rel);
        return 0;
    }
    if (fd == -EACCES || fd == -EPERM) {
        log_warn("prefetch: skipping '%s': %s", rel, strerror_r(-fd, ebuf, sizeof(ebuf)));
        return 0;
    }
    if (fd < 0) {
        snprintf(ld->err, FILES_ERR_LEN, "cannot open '%s': %s", rel,
                 strerror_r(-fd, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        log_debug("prefetch: skipping '%s': not a regular file", rel);
        return 0;
    }
    loaded_s = clock_wall_s(); /* before the read: its bytes are read at this time or later */
    got = files_read_direct(f, fd, (size_t)st.st_size, &buf);
    close(fd);
    if (got == -EINVAL) {
        snprintf(ld->err, FILES_ERR_LEN, "cannot read '%s' with O_DIRECT: %s", rel, odirect_hint);
        return -1;
    }
    if (got < 0) {
        snprintf(ld->err, FILES_ERR_LEN, "cannot read '%s': %s", rel,
                 strerror_r((int)-got, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (ld->n == ld->cap) {
        ld->cap = ld->cap ? ld->cap * 2 : 64;
        ld->list = xrealloc(ld->list, ld->cap * sizeof(*ld->list));
    }
    ld->list[ld->n++] = (struct files_entry){
        .name = xstrdup(rel),
        .name_len = rel_len,
        .hash = fnv1a64(rel, rel_len),
        .blob = blob_new(buf, (size_t)got),
    };
    {
        /* what a response sends of the version, made once */
        struct files_blob *b = ld->list[ld->n - 1].blob;
        struct httpcond_stamp stamp = {
            .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
            .read_s = loaded_s,
            .pending_ns = INT64_MAX, /* an upload made later is dated after the load */
            .since_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
        };
        b->mtime_ns = stamp.mtime_ns;
        b->ino = (uint64_t)st.st_ino;
        b->last_modified = httpcond_last_modified(&stamp);
        b->strong_date = httpcond_strong_date(&stamp);
        b->validators_len = files_validators(b->ino, b->size, b->mtime_ns, b->last_modified,
                                             b->validators);
        blob_head(b, ld->types, rel, rel_len);
    }
    f->count++;
    f->bytes += (uint64_t)got;
    return 0;
}

/* Visits dirfd (the directory named prefix, "" for the root); depth-first, no symlinked dirs. */
static int walk(struct loader *ld, int dirfd, const char *prefix, int depth)
{
    char rel[FILES_NAME_MAX + 1];
    struct dirent *de;
    DIR *d;
    int rc = 0;

    if (depth > FILES_MAX_DEPTH) {
        log_warn("prefetch: skipping '%s': nested too deep", prefix);
        close(dirfd);
        return 0;
    }
    d = fdopendir(dirfd);
    if (d == NULL) {
        snprintf(ld->err, FILES_ERR_LEN, "cannot read directory '%s': %s", prefix,
                 strerror_r(errno, rel, sizeof(rel)));
        close(dirfd);
        return -1;
    }
    while (rc == 0) {
        const char *why;
        char ebuf[128];
        struct stat st;
        int n;

        errno = 0;
        de = readdir(d);
        if (de == NULL)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        n = snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n >= sizeof(rel) || check_decoded(rel, (size_t)n, &why) < 0) {
            log_warn("prefetch: skipping '%s': not a servable name", rel);
            continue;
        }
        if (files_name_is_reserved(rel, (size_t)n))
            continue; /* upload temp files and metadata */
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                log_warn("prefetch: skipping directory '%s': %s", rel,
                         strerror_r(errno, ebuf, sizeof(ebuf)));
                continue;
            }
            rc = walk(ld, sub, rel, depth + 1);
        } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
            /* a symlink is served under its own name if it resolves to a file inside the root */
            rc = load_file(ld, rel, (size_t)n);
        }
    }
    closedir(d);
    return rc;
}

/* A directory fd for the root, usable by fdopendir (which takes ownership). */
static int dup_dir(int fd)
{
    return openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Finds one regular file under the root (breadth-limited) and tries an O_DIRECT read of it. */
static int probe_direct(struct files *f, int dirfd, const char *prefix, int depth, char *err,
                        int *found)
{
    char rel[FILES_NAME_MAX + 1];
    char ebuf[128];
    struct dirent *de;
    DIR *d = fdopendir(dirfd);
    int rc = 0;

    if (d == NULL) {
        close(dirfd);
        return 0;
    }
    while (!*found && rc == 0) {
        struct stat st;
        de = readdir(d);
        if (de == NULL)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) >=
            (int)sizeof(rel))
            continue;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISREG(st.st_mode)) {
            void *buf = NULL;
            long got;
            int fd = files_open(f, rel, true);
            if (fd == -EINVAL) {
                snprintf(err, FILES_ERR_LEN, "cannot open '%s' with O_DIRECT: %s", rel,
                         odirect_hint);
                rc = -1;
                break;
            }
            if (fd < 0)
                continue;
            got = files_read_direct(f, fd, (size_t)(st.st_size < 4096 ? st.st_size : 4096),
                                    &buf);
            close(fd);
            free(buf);
            if (got == -EINVAL) {
                snprintf(err, FILES_ERR_LEN, "cannot read '%s' with O_DIRECT: %s", rel,
                         odirect_hint);
                rc = -1;
                break;
            }
            if (got < 0) {
                log_warn("O_DIRECT probe of '%s': %s", rel,
                         strerror_r((int)-got, ebuf, sizeof(ebuf)));
                continue;
            }
            *found = 1;
        } else if (S_ISDIR(st.st_mode) && depth < 4) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                rc = probe_direct(f, sub, rel, depth + 1, err, found);
        }
    }
    closedir(d);
    return rc;
}

/* True if the directory can be listed; errno says why not. */
static bool dir_readable(int fd)
{
    int dfd = dup_dir(fd);
    DIR *d;
    bool ok;

    if (dfd < 0)
        return false;
    d = fdopendir(dfd);
    if (d == NULL) {
        int e = errno;
        close(dfd);
        errno = e;
        return false;
    }
    errno = 0;
    ok = readdir(d) != NULL || errno == 0;
    if (!ok) {
        int e = errno;
        closedir(d);
        errno = e;
        return false;
    }
    closedir(d);
    return true;
}

size_t files_direct_alignment(int fd)
{
    struct statx stx;
    size_t align = 4096;

    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN)) {
        if (stx.stx_dio_offset_align > align)
            align = stx.stx_dio_offset_align;
        if (stx.stx_dio_mem_align > align)
            align = stx.stx_dio_mem_align;
    }
    /* posix_memalign needs a power of two */
    while (align & (align - 1))
        align &= align - 1;
    return align;
}

int files_init(struct files *f, const char *root, enum files_mode mode,
               const struct mimetypes *types, char *err)
{
    char ebuf[128];
    struct stat st;
    int dfd;

    memset(f, 0, sizeof(*f));
    f->root_fd = -1;
    f->mode = mode;
    f->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f->root_fd < 0) {
        snprintf(err, FILES_ERR_LEN, "cannot open --root '%s': %s", root,
                 errno == ENOTDIR ? "not a directory" : strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (fstat(f->root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, FILES_ERR_LEN, "--root '%s' is not a directory", root);
        goto err;
    }
    /* readable: listing it must work */
    if (!dir_readable(f->root_fd)) {
        snprintf(err, FILES_ERR_LEN, "cannot read --root '%s': %s", root,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err;
    }
    f->align = files_direct_alignment(f->root_fd);

    if (mode == FILES_DIRECT) {
        int found = 0;
        dfd = dup_dir(f->root_fd);
        if (dfd < 0 || probe_direct(f, dfd, "", 0, err, &found) < 0)
            goto err;
        if (!found && odirect_disabled_for_test()) {
            snprintf(err, FILES_ERR_LEN, "cannot use O_DIRECT under '%s': %s", root,
                     odirect_hint);
            goto err;
        }
        if (!found)
            log_warn("--root '%s' has no regular file to probe O_DIRECT with", root);
    } else if (mode == FILES_PREFETCH) {
        struct loader ld = {.f = f, .types = types, .err = err};
        uint64_t t0 = clock_now_ns();
        double secs;

        if (odirect_disabled_for_test()) {
            snprintf(err, FILES_ERR_LEN, "cannot use O_DIRECT under '%s': %s", root,
                     odirect_hint);
            goto err;
        }
        dfd = dup_dir(f->root_fd);
        if (dfd < 0 || walk(&ld, dfd, "", 0) < 0) {
            for (size_t k = 0; k < ld.n; k++) {
                free((void *)ld.list[k].name);
                blob_free(ld.list[k].blob);
            }
            free(ld.list);
            f->count = 0;
            f->bytes = 0;
            goto err;
        }
        table_build(&ld);
        secs = (double)(clock_now_ns() - t0) / 1e9;
        f->load_seconds = secs;
        log_info("prefetched %zu files, %llu bytes in %.3f s (%.1f MB/s)", f->count,
                 (unsigned long long)f->bytes, secs,
                 secs > 0 ? (double)f->bytes / 1e6 / secs : 0.0);
    }
    return 0;

err:
    close(f->root_fd);
    f->root_fd = -1;
    return -1;
}

void files_release(struct files *f)
{
    if (f->table != NULL) {
        for (size_t i = 0; i < f->table_cap; i++) {
            free((void *)f->table[i].name);
            blob_free(f->table[i].blob);
        }
        free(f->table);
        f->table = NULL;
    }
    if (f->dirs != NULL) {
        for (size_t i = 0; i < f->dirs_cap; i++)
            free((void *)f->dirs[i].name);
        free(f->dirs);
        f->dirs = NULL;
    }
    if (f->root_fd >= 0)
        close(f->root_fd);
    f->root_fd = -1;
}
