/*
 * s1pack.c - the pack tool (pack.h, docs/pack.md): `s1pack build DIR PACK` packs every regular
 * file under DIR that server1 --root would serve, `s1pack verify PACK` re-reads every file
 * against its checksum and the index against its structure, `s1pack ls PACK [PREFIX]` lists
 * names. A program of its own, not a server1 subcommand: it shares the pack code and the name
 * rules (files_name_valid) but none of server1's flags, and an operator runs it where the
 * tree is, which need not be where server1 runs. Exit status: 0 done, 1 failed (damage, I/O),
 * 2 usage.
 *
 * DESIGN: build walks DIR (symlinks and special files skipped and counted), sorts the names
 * bytewise, then copies the files in that order into PACK.tmp through one write buffer (each
 * file padded to the alignment), CRC-32 computed on the way, then writes the index and the
 * header, fsyncs, renames PACK.tmp to PACK and fsyncs the directory: a crash never leaves a
 * half pack under the name. A file that changes size while being packed fails the build.
 * The reads (open, fstat, read, close: the cost of a build) run on --jobs reader threads, each
 * taking the next batch of S1PACK_BATCH files in order into a buffer of its own (files up to
 * S1PACK_SMALL; bigger ones are left to the writer, which streams them); the main thread
 * writes the batches in order. A batch's state is handed over under the batches' lock, at most
 * S1PACK_AHEAD batches per reader ahead of the writer, so memory stays bounded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "pack.h"
#include "xalloc.h"

#define S1PACK_BUF (4u << 20)    /* bytes of the write (and verify read) buffer */
#define S1PACK_DEPTH_MAX 64      /* directory levels under DIR */
#define S1PACK_BATCH 256         /* files a reader thread reads in one go */
#define S1PACK_SMALL (256u << 10) /* bytes of a file a reader reads; bigger ones the writer */
#define S1PACK_AHEAD 8           /* batches read ahead of the writer, at most, per reader */
#define S1PACK_JOBS_MAX 16

static void usage(FILE *out)
{
    fprintf(out,
            "usage: s1pack build [--align 512|4096] [--block-names N] [--jobs N] DIR PACK\n"
            "       s1pack index-size [--block-names N] DIR\n"
            "       s1pack verify PACK\n"
            "       s1pack ls [-l] PACK [PREFIX]\n"
            "build: packs every regular file under DIR that server1 --root would serve (no\n"
            "  dot-segments, nothing under .s1*, names of at most %d bytes; symlinks are\n"
            "  skipped), in bytewise path order, each file starting at a multiple of --align\n"
            "  (default %u: the logical block size O_DIRECT needs), with an index of %u names\n"
            "  per block (--block-names, 1..%u), read by --jobs threads (1..16, default: the\n"
            "  CPUs); writes PACK.tmp, fsyncs, renames it to PACK.\n"
            "index-size: the walk and the index of build, without reading or writing any data:\n"
            "  the index's bytes (the memory server1 --pack maps) for DIR.\n"
            "verify: checks the header, the index and every file's CRC-32; exit 1 on damage.\n"
            "ls: the names (with -l: size, mtime and name), all or those starting with PREFIX.\n",
            FILES_NAME_MAX, PACK_ALIGN_DEFAULT, PACK_BLOCK_NAMES, PACK_BLOCK_NAMES_MAX);
}

static int die_usage(const char *what)
{
    fprintf(stderr, "s1pack: %s\n", what);
    usage(stderr);
    return 2;
}

/* ---- build: the walk ---- */

struct item {
    char *name;      /* relative to DIR */
    size_t name_len;
    size_t base;     /* where its last segment starts in name */
};

struct walk {
    int root_fd;
    struct item *items;
    size_t n, cap;
    uint64_t skipped_links, skipped_names, skipped_other;
};

static int walk_dir(struct walk *w, int dfd, char *path, size_t plen, int depth)
{
    DIR *d = fdopendir(dfd);
    struct dirent *de;
    int rc = 0;

    if (d == NULL) {
        fprintf(stderr, "s1pack: cannot read directory '%s': %s\n", plen ? path : ".",
                strerror(errno));
        close(dfd);
        return -1;
    }
    while (rc == 0) {
        size_t clen, len;
        struct stat st;
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                fprintf(stderr, "s1pack: cannot read directory '%s': %s\n", plen ? path : ".",
                        strerror(errno));
                rc = -1;
            }
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        clen = strlen(de->d_name);
        len = plen + (plen ? 1 : 0) + clen;
        if (len > FILES_NAME_MAX) {
            w->skipped_names++;
            continue;
        }
        if (plen)
            path[plen] = '/';
        memcpy(path + plen + (plen ? 1 : 0), de->d_name, clen + 1);
        if (!files_name_valid(path, len)) {
            w->skipped_names++; /* a reserved or dot name: never served, nor what is beneath */
            path[plen] = '\0';
            continue;
        }
        /* the type from the directory entry; a stat only where the filesystem gives none */
        if (de->d_type == DT_UNKNOWN &&
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            fprintf(stderr, "s1pack: cannot stat '%s': %s\n", path, strerror(errno));
            rc = -1;
        } else if (de->d_type == DT_DIR || (de->d_type == DT_UNKNOWN && S_ISDIR(st.st_mode))) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                       O_CLOEXEC);
            if (depth + 1 > S1PACK_DEPTH_MAX) {
                fprintf(stderr, "s1pack: '%s' is deeper than %d levels\n", path,
                        S1PACK_DEPTH_MAX);
                if (sub >= 0)
                    close(sub);
                rc = -1;
            } else if (sub < 0) {
                fprintf(stderr, "s1pack: cannot open '%s': %s\n", path, strerror(errno));
                rc = -1;
            } else {
                rc = walk_dir(w, sub, path, len, depth + 1);
            }
        } else if (de->d_type == DT_REG || (de->d_type == DT_UNKNOWN && S_ISREG(st.st_mode))) {
            struct item *it;
            if (w->n == w->cap) {
                w->cap = w->cap ? w->cap * 2 : 4096;
                w->items = xrealloc(w->items, w->cap * sizeof(*w->items));
            }
            it = &w->items[w->n++];
            it->name = xmalloc(len + 1);
            memcpy(it->name, path, len + 1);
            it->name_len = len;
            it->base = plen + (plen ? 1 : 0);
        } else if (de->d_type == DT_LNK || (de->d_type == DT_UNKNOWN && S_ISLNK(st.st_mode))) {
            w->skipped_links++;
        } else {
            w->skipped_other++;
        }
        path[plen] = '\0';
    }
    closedir(d);
    return rc;
}

static int item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;

    return strcmp(a->name, b->name); /* bytewise: strcmp compares unsigned chars */
}

/* ---- build: the output ---- */

struct out {
    int fd;
    const char *path;
    uint8_t *buf;
    size_t len;       /* bytes in buf */
    uint64_t at;      /* where buf's first byte goes in the file */
};

static int out_flush(struct out *o)
{
    size_t done = 0;

    while (done < o->len) {
        ssize_t n = pwrite(o->fd, o->buf + done, o->len - done, (off_t)(o->at + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "s1pack: cannot write '%s': %s\n", o->path, strerror(errno));
            return -1;
        }
        done += (size_t)n;
    }
    o->at += o->len;
    o->len = 0;
    return 0;
}

static int out_zeros(struct out *o, uint64_t n)
{
    while (n > 0) {
        size_t k = S1PACK_BUF - o->len < n ? S1PACK_BUF - o->len : (size_t)n;
        memset(o->buf + o->len, 0, k);
        o->len += k;
        n -= k;
        if (o->len == S1PACK_BUF && out_flush(o) < 0)
            return -1;
    }
    return 0;
}

static int out_bytes(struct out *o, const void *p, size_t n)
{
    while (n > 0) {
        size_t k = S1PACK_BUF - o->len < n ? S1PACK_BUF - o->len : n;
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p = (const uint8_t *)p + k;
        n -= k;
        if (o->len == S1PACK_BUF && out_flush(o) < 0)
            return -1;
    }
    return 0;
}

/*
 * Opens the file it (in the directory dfd) and fstats it into *st: its descriptor, or -1 (said
 * why) when it cannot be opened or is no longer a regular file.
 */
static int open_item(int dfd, const struct item *it, struct stat *st)
{
    int fd = openat(dfd, it->name + it->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0) {
        fprintf(stderr, "s1pack: cannot open '%s': %s\n", it->name, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        fprintf(stderr, "s1pack: '%s' is no longer a regular file\n", it->name);
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * Copies the file it (in the directory dfd) into o, read straight into the buffer, and
 * describes it in *src (its size and mtime from fstat, its CRC). The last read asks for a byte
 * more than is left when the buffer has room: a file that grew or shrank since its fstat fails
 * the build.
 */
static int copy_file(struct out *o, int dfd, const struct item *it, struct pack_src *src)
{
    struct stat st;
    int fd = open_item(dfd, it, &st);
    uint64_t left;
    uint32_t crc = 0;
    int rc = -1;

    if (fd < 0)
        return -1;
    if ((uint64_t)st.st_size > PACK_FILE_SIZE_MAX) {
        fprintf(stderr, "s1pack: '%s' is %lld bytes, at most %" PRIu64 "\n", it->name,
                (long long)st.st_size, (uint64_t)PACK_FILE_SIZE_MAX);
        goto out;
    }
    left = (uint64_t)st.st_size;
    for (;;) {
        size_t room = S1PACK_BUF - o->len;
        size_t want = room;
        ssize_t n;
        if (room == 0) {
            if (out_flush(o) < 0)
                goto out;
            continue;
        }
        if (left < room)
            want = (size_t)left + 1;
        n = read(fd, o->buf + o->len, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "s1pack: cannot read '%s': %s\n", it->name, strerror(errno));
            goto out;
        }
        if ((uint64_t)n > left || (n == 0 && left > 0)) {
            fprintf(stderr, "s1pack: '%s' changed size while being packed\n", it->name);
            goto out;
        }
        crc = pack_crc32(crc, o->buf + o->len, (size_t)n);
        o->len += (size_t)n;
        left -= (uint64_t)n;
        if (n == 0 || (left == 0 && (size_t)n < want))
            break; /* asked for one more than was left, got none: the end */
    }
    *src = (struct pack_src){.name = it->name, .name_len = it->name_len,
                             .size = (uint64_t)st.st_size, .mtime_s = (int64_t)st.st_mtim.tv_sec,
                             .crc = crc};
    rc = 0;
out:
    close(fd);
    return rc;
}

/* The directory of it open in *dfd (named *dir): reopened only when it changes. */
static int dir_of(int root_fd, const struct item *it, int *dfd, char *dir, size_t *dir_len)
{
    size_t dlen = it->base > 0 ? it->base - 1 : 0;

    if (*dfd >= 0 && dlen == *dir_len && memcmp(dir, it->name, dlen) == 0)
        return 0;
    if (*dfd >= 0 && *dfd != root_fd)
        close(*dfd);
    *dfd = -1;
    memcpy(dir, it->name, dlen);
    dir[dlen] = '\0';
    *dir_len = dlen;
    if (dlen == 0) {
        *dfd = root_fd;
        return 0;
    }
    *dfd = openat(root_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dfd < 0) {
        fprintf(stderr, "s1pack: cannot open directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Writes the index and the header, fsyncs and renames tmp to pack. */
static int finish(struct out *o, const struct pack_src *src, size_t n, unsigned block_names,
                  unsigned align, uint64_t data_len, const char *pack, uint64_t *index_bytes)
{
    uint8_t *index = NULL;
    size_t index_len = 0;
    uint64_t data_len2;
    int64_t base;
    char err[PACK_ERR_LEN];
    uint8_t *hdr;
    int rc = -1;

    if (pack_index_encode(src, n, block_names, align, &index, &index_len, &data_len2, &base,
                          err) < 0) {
        fprintf(stderr, "s1pack: %s\n", err);
        return -1;
    }
    if (data_len2 != data_len) {
        fprintf(stderr, "s1pack: data part of %" PRIu64 " bytes, the index says %" PRIu64 "\n",
                data_len, data_len2);
        goto out;
    }
    if (out_zeros(o, pack_index_off(data_len) - (o->at + o->len)) < 0 ||
        out_bytes(o, index, index_len) < 0 || out_flush(o) < 0)
        goto out;
    hdr = xcalloc(1, PACK_HEADER_BYTES);
    pack_header_make(hdr, n, block_names, align, data_len, index_len, base,
                     pack_crc32(0, index, index_len), pack_index_id(index, index_len));
    o->at = 0;
    memcpy(o->buf, hdr, PACK_HEADER_BYTES);
    o->len = PACK_HEADER_BYTES;
    free(hdr);
    if (out_flush(o) < 0)
        goto out;
    if (fsync(o->fd) < 0) {
        fprintf(stderr, "s1pack: cannot fsync '%s': %s\n", o->path, strerror(errno));
        goto out;
    }
    if (rename(o->path, pack) < 0) {
        fprintf(stderr, "s1pack: cannot rename '%s' to '%s': %s\n", o->path, pack,
                strerror(errno));
        goto out;
    }
    *index_bytes = index_len;
    rc = 0;
out:
    free(index);
    return rc;
}

/* fsync of the directory pack lies in: the rename survives a crash. */
static int sync_dir_of(const char *pack)
{
    char *dir = xmalloc(strlen(pack) + 2);
    char *slash;
    int fd, rc = 0;

    strcpy(dir, pack);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0) {
        fprintf(stderr, "s1pack: cannot fsync directory '%s': %s\n", dir, strerror(errno));
        rc = -1;
    }
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

/* One batch of files read ahead by a reader thread. */
struct batch {
    uint8_t *buf;       /* the small files' bytes, back to back */
    size_t len, cap;
    size_t *at;         /* per file: where its bytes are in buf, or SIZE_MAX: the writer's */
    int state;          /* BATCH_*: under the readers' lock */
};

enum { BATCH_FREE, BATCH_READING, BATCH_READY, BATCH_FAILED };

struct readers {
    const struct walk *w;
    struct pack_src *src;       /* filled by the readers for the small files */
    struct batch *batches;      /* a ring of nslots, batch k in slot k % nslots */
    size_t nslots;
    size_t nbatches;
    pthread_mutex_t lock;       /* protects next, written, stop, every batch's state */
    pthread_cond_t cond;        /* a batch became ready or free, or stop */
    size_t next;                /* the next batch to take */
    size_t written;             /* batches the writer is done with */
    bool stop;                  /* the writer gave up */
};

/* Reads file i (in the directory dfd) into b if small: 0, or -1 (logged). */
static int read_small(struct readers *r, struct batch *b, size_t k, size_t i, int dfd)
{
    const struct item *it = &r->w->items[i];
    struct stat st;
    int fd;
    size_t size, got = 0;
    int rc = -1;

    b->at[i - k * S1PACK_BATCH] = SIZE_MAX;
    fd = open_item(dfd, it, &st);
    if (fd < 0)
        return -1;
    if ((uint64_t)st.st_size > S1PACK_SMALL) {
        rc = 0; /* the writer's */
        goto out;
    }
    size = (size_t)st.st_size;
    if (b->len + size + 1 > b->cap) {
        b->cap = (b->len + size + 1) * 2;
        b->buf = xrealloc(b->buf, b->cap);
    }
    for (;;) {
        ssize_t n = read(fd, b->buf + b->len + got, size + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "s1pack: cannot read '%s': %s\n", it->name, strerror(errno));
            goto out;
        }
        got += (size_t)n;
        if (n == 0 || got > size)
            break;
    }
    if (got != size) {
        fprintf(stderr, "s1pack: '%s' changed size while being packed\n", it->name);
        goto out;
    }
    r->src[i] = (struct pack_src){.name = it->name, .name_len = it->name_len, .size = size,
                                  .mtime_s = (int64_t)st.st_mtim.tv_sec,
                                  .crc = pack_crc32(0, b->buf + b->len, size)};
    b->at[i - k * S1PACK_BATCH] = b->len;
    b->len += size;
    rc = 0;
out:
    close(fd);
    return rc;
}

static void *reader_thread_main(void *arg)
{
    struct readers *r = arg;
    char dir[FILES_NAME_MAX + 1];
    size_t dir_len = 0;
    int dfd = -1;

    for (;;) {
        struct batch *b;
        size_t k, lo, hi;
        int rc = 0;

        pthread_mutex_lock(&r->lock);
        while (!r->stop && r->next < r->nbatches &&
               r->batches[r->next % r->nslots].state != BATCH_FREE)
            pthread_cond_wait(&r->cond, &r->lock); /* its slot still holds an older batch */
        if (r->stop || r->next >= r->nbatches) {
            pthread_mutex_unlock(&r->lock);
            break;
        }
        k = r->next++;
        b = &r->batches[k % r->nslots];
        b->state = BATCH_READING;
        pthread_mutex_unlock(&r->lock);

        b->len = 0;
        lo = k * S1PACK_BATCH;
        hi = lo + S1PACK_BATCH < r->w->n ? lo + S1PACK_BATCH : r->w->n;
        for (size_t i = lo; i < hi && rc == 0; i++)
            rc = dir_of(r->w->root_fd, &r->w->items[i], &dfd, dir, &dir_len) < 0
                     ? -1
                     : read_small(r, b, k, i, dfd);

        pthread_mutex_lock(&r->lock);
        b->state = rc == 0 ? BATCH_READY : BATCH_FAILED;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
    if (dfd >= 0 && dfd != r->w->root_fd)
        close(dfd);
    return NULL;
}

/* Waits for batch k: its slot, or NULL when a reader failed on it. */
static struct batch *batch_wait(struct readers *r, size_t k)
{
    struct batch *b = &r->batches[k % r->nslots];

    pthread_mutex_lock(&r->lock);
    while (b->state == BATCH_FREE || b->state == BATCH_READING)
        pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
    return b->state == BATCH_READY ? b : NULL;
}

static void batch_done(struct readers *r, struct batch *b, bool stop)
{
    pthread_mutex_lock(&r->lock);
    b->state = BATCH_FREE;
    r->written++;
    r->stop = r->stop || stop;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/*
 * Copies every file into o in path order: the readers' batches, and the big files the writer
 * reads itself. Returns the data part's bytes in *data, or -1 (logged).
 */
static int copy_all(struct out *o, const struct walk *w, struct pack_src *src, unsigned align,
                    unsigned jobs, uint64_t *data)
{
    struct readers r = {.w = w, .src = src, .nbatches = (w->n + S1PACK_BATCH - 1) / S1PACK_BATCH};
    pthread_t tids[S1PACK_JOBS_MAX];
    char dir[FILES_NAME_MAX + 1];
    size_t dir_len = 0;
    unsigned started = 0;
    int dfd = -1, rc = 0;

    r.nslots = (size_t)jobs * S1PACK_AHEAD;
    r.batches = xcalloc(r.nslots, sizeof(*r.batches));
    for (size_t s = 0; s < r.nslots; s++)
        r.batches[s].at = xcalloc(S1PACK_BATCH, sizeof(size_t));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    for (; started < jobs; started++)
        if (pthread_create(&tids[started], NULL, reader_thread_main, &r) != 0)
            break;
    if (started == 0) {
        fprintf(stderr, "s1pack: cannot start a reader thread\n");
        rc = -1;
    }
    *data = 0;
    for (size_t k = 0; rc == 0 && k < r.nbatches; k++) {
        struct batch *b = batch_wait(&r, k);
        size_t lo = k * S1PACK_BATCH;
        size_t hi = lo + S1PACK_BATCH < w->n ? lo + S1PACK_BATCH : w->n;
        for (size_t i = lo; b != NULL && rc == 0 && i < hi; i++) {
            size_t at = b->at[i - lo];
            if (at == SIZE_MAX)
                rc = dir_of(w->root_fd, &w->items[i], &dfd, dir, &dir_len) < 0 ||
                             copy_file(o, dfd, &w->items[i], &src[i]) < 0
                         ? -1
                         : 0;
            else
                rc = out_bytes(o, b->buf + at, (size_t)src[i].size);
            if (rc == 0)
                rc = out_zeros(o, pack_round_up(src[i].size, align) - src[i].size);
            *data += pack_round_up(src[i].size, align);
            if (rc == 0 && *data > PACK_DATA_MAX) {
                fprintf(stderr, "s1pack: the files pass the data limit of %" PRIu64 " bytes\n",
                        (uint64_t)PACK_DATA_MAX);
                rc = -1;
            }
        }
        if (b == NULL)
            rc = -1;
        batch_done(&r, &r.batches[k % r.nslots], rc < 0);
    }
    pthread_mutex_lock(&r.lock);
    r.stop = true; /* (the readers are done, or give up) */
    pthread_cond_broadcast(&r.cond);
    pthread_mutex_unlock(&r.lock);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (dfd >= 0 && dfd != w->root_fd)
        close(dfd);
    for (size_t s = 0; s < r.nslots; s++) {
        free(r.batches[s].buf);
        free(r.batches[s].at);
    }
    free(r.batches);
    pthread_mutex_destroy(&r.lock);
    pthread_cond_destroy(&r.cond);
    return rc;
}

/* The files under tree into w, in path order (w->root_fd open on tree): 0, or -1 (said why). */
static int walk_tree(struct walk *w, const char *tree)
{
    char path[FILES_NAME_MAX + 2] = "";
    int dfd;

    w->root_fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->root_fd < 0) {
        fprintf(stderr, "s1pack: cannot open directory '%s': %s\n", tree, strerror(errno));
        return -1;
    }
    dfd = dup(w->root_fd);
    if (dfd < 0 || walk_dir(w, dfd, path, 0, 0) < 0)
        return -1;
    if (w->n > PACK_FILES_MAX) {
        fprintf(stderr, "s1pack: %zu files, a pack holds at most %" PRIu64 "\n", w->n,
                (uint64_t)PACK_FILES_MAX);
        return -1;
    }
    if (w->n > 0)
        qsort(w->items, w->n, sizeof(*w->items), item_cmp);
    return 0;
}

/* Frees what walk_tree gathered and closes its descriptor. */
static void walk_release(struct walk *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->items[i].name);
    free(w->items);
    if (w->root_fd >= 0)
        close(w->root_fd);
}

static int cmd_build(const char *tree, const char *pack, unsigned align, unsigned block_names,
                     unsigned jobs)
{
    struct walk w = {.root_fd = -1};
    struct out o = {.fd = -1};
    struct pack_src *src = NULL;
    uint64_t data = 0, index_bytes = 0, t0 = clock_now_ns(), t1;
    char *tmp = NULL;
    int rc = 1;

    if (walk_tree(&w, tree) < 0)
        goto out;
    t1 = clock_now_ns();
    tmp = xmalloc(strlen(pack) + 5);
    sprintf(tmp, "%s.tmp", pack);
    o.path = tmp;
    o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o.fd < 0) {
        fprintf(stderr, "s1pack: cannot create '%s': %s\n", tmp, strerror(errno));
        goto out;
    }
    o.buf = xmemalign(4096, S1PACK_BUF);
    src = xcalloc(w.n ? w.n : 1, sizeof(*src));
    if (out_zeros(&o, PACK_HEADER_BYTES) < 0) /* the header's room, written last */
        goto out_unlink;
    if (copy_all(&o, &w, src, align, jobs, &data) < 0)
        goto out_unlink;
    if (finish(&o, src, w.n, block_names, align, data, pack, &index_bytes) < 0)
        goto out_unlink;
    if (sync_dir_of(pack) < 0)
        goto out;
    {
        double secs = (double)(clock_now_ns() - t0) / 1e9;
        printf("s1pack: packed %zu files (%" PRIu64 " data bytes, index %" PRIu64
               " bytes, %.2f per file) into '%s' in %.2f s (walk %.2f s), %.0f files/s; "
               "skipped %" PRIu64 " symlinks, %" PRIu64 " names server1 would not serve, "
               "%" PRIu64 " special files\n",
               w.n, data, index_bytes, w.n ? (double)index_bytes / (double)w.n : 0.0, pack,
               secs, (double)(t1 - t0) / 1e9, secs > 0 ? (double)w.n / secs : 0.0,
               w.skipped_links, w.skipped_names, w.skipped_other);
    }
    rc = 0;
    goto out;
out_unlink:
    unlink(tmp);
out:
    if (o.fd >= 0)
        close(o.fd);
    free(o.buf);
    free(src);
    free(tmp);
    walk_release(&w);
    return rc;
}

/*
 * The index build would write for tree, from a stat of each file (its CRC left 0: it takes 4
 * bytes whatever its value), without reading a file or writing a pack.
 */
static int cmd_index_size(const char *tree, unsigned block_names)
{
    struct walk w = {.root_fd = -1};
    struct pack_src *src = NULL;
    char err[PACK_ERR_LEN];
    uint8_t *index = NULL;
    size_t index_len = 0;
    uint64_t data_len = 0;
    int64_t base;
    int rc = 1;

    if (walk_tree(&w, tree) < 0)
        goto out;
    src = xcalloc(w.n ? w.n : 1, sizeof(*src));
    for (size_t i = 0; i < w.n; i++) {
        struct stat st;
        if (fstatat(w.root_fd, w.items[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            fprintf(stderr, "s1pack: cannot stat '%s': %s\n", w.items[i].name,
                    strerror(errno));
            goto out;
        }
        src[i] = (struct pack_src){.name = w.items[i].name, .name_len = w.items[i].name_len,
                                   .size = (uint64_t)st.st_size,
                                   .mtime_s = (int64_t)st.st_mtim.tv_sec};
    }
    if (pack_index_encode(src, w.n, block_names, PACK_ALIGN_DEFAULT, &index, &index_len,
                          &data_len, &base, err) < 0) {
        fprintf(stderr, "s1pack: %s\n", err);
        goto out;
    }
    printf("s1pack: %zu files under '%s': index %zu bytes (%.2f per file, %u names per "
           "block), data part %" PRIu64 " bytes aligned to %u\n",
           w.n, tree, index_len, w.n ? (double)index_len / (double)w.n : 0.0, block_names,
           data_len, PACK_ALIGN_DEFAULT);
    rc = 0;
out:
    free(index);
    free(src);
    walk_release(&w);
    return rc;
}

/* ---- verify, ls ---- */

static int cmd_verify(const char *path)
{
    struct pack p;
    struct pack_iter it;
    struct pack_entry e;
    char err[PACK_ERR_LEN];
    uint8_t *buf;
    uint64_t n = 0, bad = 0, bytes = 0;
    int rc = 1;

    if (pack_open(&p, path, false, err) < 0) {
        fprintf(stderr, "s1pack: %s\n", err);
        return 1;
    }
    if (pack_check(&p, err) < 0) {
        fprintf(stderr, "s1pack: pack '%s': %s\n", path, err);
        pack_close(&p);
        return 1;
    }
    buf = xmalloc(S1PACK_BUF);
    pack_iter_seek(&it, &p, "", 0);
    while (pack_iter_next(&it, &e)) {
        uint32_t crc = 0;
        uint64_t done = 0;
        while (done < e.size) {
            size_t want = e.size - done < S1PACK_BUF ? (size_t)(e.size - done) : S1PACK_BUF;
            ssize_t got = pread(p.fd, buf, want, (off_t)(e.off + done));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                fprintf(stderr, "s1pack: cannot read '%s' from the pack: %s\n", it.name,
                        got < 0 ? strerror(errno) : "cut short");
                goto out;
            }
            crc = pack_crc32(crc, buf, (size_t)got);
            done += (uint64_t)got;
        }
        if (crc != e.crc) {
            fprintf(stderr, "s1pack: '%s' is damaged: CRC-32 %08x, the index says %08x\n",
                    it.name, crc, e.crc);
            bad++;
        }
        bytes += e.size;
        n++;
    }
    if (it.failed) {
        fprintf(stderr, "s1pack: pack '%s': damaged index after %" PRIu64 " files\n", path, n);
        goto out;
    }
    if (bad > 0) {
        fprintf(stderr, "s1pack: pack '%s': %" PRIu64 " of %" PRIu64 " files damaged\n", path,
                bad, n);
        goto out;
    }
    printf("s1pack: '%s' ok: %" PRIu64 " files, %" PRIu64 " bytes in files, %" PRIu64
           " data bytes, index %" PRIu64 " bytes (%.2f per file), %u names per block, "
           "aligned to %u\n",
           path, n, bytes, p.data_len, p.index_len,
           n ? (double)p.index_len / (double)n : 0.0, p.block_names, p.align);
    rc = 0;
out:
    free(buf);
    pack_close(&p);
    return rc;
}

static int cmd_ls(const char *path, const char *prefix, bool longfmt)
{
    struct pack p;
    struct pack_iter it;
    struct pack_entry e;
    char err[PACK_ERR_LEN];
    size_t plen = strlen(prefix);

    if (pack_open(&p, path, false, err) < 0) {
        fprintf(stderr, "s1pack: %s\n", err);
        return 1;
    }
    pack_iter_seek(&it, &p, prefix, plen);
    while (pack_iter_next(&it, &e)) {
        if (it.name_len < plen || memcmp(it.name, prefix, plen) != 0)
            break;
        if (longfmt) {
            struct tm tm;
            char when[32];
            time_t t = (time_t)e.mtime_s;
            gmtime_r(&t, &tm);
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
            printf("%12" PRIu64 " %s %s\n", e.size, when, it.name);
        } else {
            printf("%s\n", it.name);
        }
    }
    pack_close(&p);
    if (it.failed) {
        fprintf(stderr, "s1pack: pack '%s': damaged index\n", path);
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "build") == 0) {
        unsigned align = PACK_ALIGN_DEFAULT, block_names = PACK_BLOCK_NAMES;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned jobs = cpus < 1 ? 1 : cpus > S1PACK_JOBS_MAX ? S1PACK_JOBS_MAX : (unsigned)cpus;
        int i = 2;
        for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
            if (strcmp(argv[i], "--align") == 0) {
                if (parse_uint(argv[i + 1], 512, 65536, &align) < 0 ||
                    (align & (align - 1)) != 0)
                    return die_usage("--align takes a power of two in 512..65536");
            } else if (strcmp(argv[i], "--block-names") == 0) {
                if (parse_uint(argv[i + 1], 1, PACK_BLOCK_NAMES_MAX, &block_names) < 0)
                    return die_usage("--block-names takes 1..1024");
            } else if (strcmp(argv[i], "--jobs") == 0) {
                if (parse_uint(argv[i + 1], 1, S1PACK_JOBS_MAX, &jobs) < 0)
                    return die_usage("--jobs takes 1..16");
            } else {
                return die_usage("unknown build option");
            }
        }
        if (argc - i != 2)
            return die_usage("build takes DIR and PACK");
        return cmd_build(argv[i], argv[i + 1], align, block_names, jobs);
    }
    if (argc >= 3 && strcmp(argv[1], "index-size") == 0) {
        unsigned block_names = PACK_BLOCK_NAMES;
        int i = 2;
        if (argc == 5 && strcmp(argv[2], "--block-names") == 0) {
            if (parse_uint(argv[3], 1, PACK_BLOCK_NAMES_MAX, &block_names) < 0)
                return die_usage("--block-names takes 1..1024");
            i = 4;
        }
        if (argc - i != 1)
            return die_usage("index-size takes DIR");
        return cmd_index_size(argv[i], block_names);
    }
    if (argc == 3 && strcmp(argv[1], "verify") == 0)
        return cmd_verify(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "ls") == 0) {
        bool longfmt = strcmp(argv[2], "-l") == 0;
        int i = longfmt ? 3 : 2;
        if (argc - i < 1 || argc - i > 2)
            return die_usage("ls takes PACK and an optional PREFIX");
        return cmd_ls(argv[i], argc - i == 2 ? argv[i + 1] : "", longfmt);
    }
    return die_usage(argc < 2 ? "no command" : "unknown command or wrong arguments");
}
