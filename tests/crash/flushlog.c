/*
 * flushlog.c - a disk that records every write and every flush, for the flush-by-flush crash
 * replay (tests/crash/flushreplay.py): the method of the kernel's dm-log-writes target, in
 * user space, for kernels built without device-mapper.
 *
 *   flushlog IMAGE LOG MOUNTPOINT
 *
 * Serves one file, MOUNTPOINT/disk, as large as IMAGE, over FUSE. A loop device over it
 * (`losetup`, buffered: without --direct-io) is a disk whose writes land in IMAGE and whose
 * cache flushes arrive here as fsync: the loop driver turns a flush (and a FUA write) into an
 * fsync of its backing file. Every write is appended to LOG, in the order it arrived, before it
 * is applied to IMAGE and answered; every fsync appends a flush mark, with the time of
 * CLOCK_MONOTONIC, before it is answered. So the writes before a mark in LOG include every
 * write the disk had completed when that flush was asked for, and a replay up to the last mark
 * before a moment T holds all that any flush finished before T made durable. Replaying LOG's
 * writes onto a zeroed disk up to a mark gives the disk as it may be after a power cut right
 * after that flush, every write not yet flushed lost (the harshest case a crash can give): the
 * file system must mount it, and the store must hold every upload acknowledged before the
 * mark's time.
 *
 * LOG: the 8 bytes "S1FLOG1\n", then records, little-endian:
 *   'W' u64 offset, u32 length, the bytes     a write
 *   'F' u64 CLOCK_MONOTONIC nanoseconds      a flush (an fsync of the disk)
 *
 * DESIGN: single-threaded (fuse's -s): the requests are taken one at a time, so LOG's order is
 * the order they were answered in. Pages are not cached (direct_io), so that every write of the
 * loop device reaches this process as it is made. Exits when unmounted (fusermount3 -u) or on
 * SIGTERM/SIGINT, and says how many writes and flushes it recorded. Test tooling only: it
 * trusts its caller (root) and stops at the first failed write of LOG or IMAGE.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FLUSHLOG_MAGIC "S1FLOG1\n"

static struct {
    int image;
    FILE *log;
    off_t size;
    unsigned long writes, flushes;
    int failed; /* errno of the first failed write of LOG or IMAGE */
} g = {.image = -1};

static int log_bytes(const void *p, size_t n)
{
    if (g.failed == 0 && fwrite(p, 1, n, g.log) != n)
        g.failed = errno ? errno : EIO;
    return g.failed ? -g.failed : 0;
}

static int fl_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    memset(st, 0, sizeof(*st));
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (strcmp(path, "/disk") == 0) {
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        st->st_size = g.size;
        return 0;
    }
    return -ENOENT;
}

static int fl_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    if (strcmp(path, "/") != 0)
        return -ENOENT;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    fill(buf, "disk", NULL, 0, 0);
    return 0;
}

static int fl_open(const char *path, struct fuse_file_info *fi)
{
    if (strcmp(path, "/disk") != 0)
        return -ENOENT;
    fi->direct_io = 1;
    return 0;
}

static int fl_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi)
{
    ssize_t r;

    (void)path;
    (void)fi;
    r = pread(g.image, buf, n, off);
    return r < 0 ? -errno : (int)r;
}

static int fl_write(const char *path, const char *buf, size_t n, off_t off,
                    struct fuse_file_info *fi)
{
    uint64_t o = (uint64_t)off;
    uint32_t len = (uint32_t)n;
    ssize_t r;
    int rc;

    (void)path;
    (void)fi;
    if (off < 0 || (uint64_t)off + n > (uint64_t)g.size)
        return -ENOSPC;
    if ((rc = log_bytes("W", 1)) < 0 || (rc = log_bytes(&o, 8)) < 0 ||
        (rc = log_bytes(&len, 4)) < 0 || (rc = log_bytes(buf, n)) < 0)
        return rc;
    r = pwrite(g.image, buf, n, off);
    if (r < 0)
        return -errno;
    g.writes++;
    return (int)r;
}

static int fl_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct timespec ts;
    uint64_t ns;
    int rc;

    (void)path;
    (void)datasync;
    (void)fi;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if ((rc = log_bytes("F", 1)) < 0 || (rc = log_bytes(&ns, 8)) < 0)
        return rc;
    if (fflush(g.log) != 0) { /* the mark is in LOG before the flush is answered */
        g.failed = errno ? errno : EIO;
        return -g.failed;
    }
    g.flushes++;
    return 0;
}

static void fl_destroy(void *data)
{
    (void)data;
    if (fflush(g.log) != 0 && g.failed == 0)
        g.failed = errno ? errno : EIO;
}

static const struct fuse_operations ops = {
    .getattr = fl_getattr,
    .readdir = fl_readdir,
    .open = fl_open,
    .read = fl_read,
    .write = fl_write,
    .fsync = fl_fsync,
    .destroy = fl_destroy,
};

int main(int argc, char **argv)
{
    struct stat st;
    char *fargv[] = {argv[0], "-f", "-s", NULL, NULL};
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: flushlog IMAGE LOG MOUNTPOINT\n");
        return 2;
    }
    g.image = open(argv[1], O_RDWR | O_CLOEXEC);
    if (g.image < 0 || fstat(g.image, &st) < 0) {
        fprintf(stderr, "flushlog: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    g.size = st.st_size;
    g.log = fopen(argv[2], "wxe");
    if (g.log == NULL) {
        fprintf(stderr, "flushlog: %s: %s\n", argv[2], strerror(errno));
        return 2;
    }
    if (log_bytes(FLUSHLOG_MAGIC, 8) < 0 || fflush(g.log) != 0) {
        fprintf(stderr, "flushlog: %s: %s\n", argv[2], strerror(errno));
        return 2;
    }
    fargv[3] = argv[3];
    rc = fuse_main(4, fargv, &ops, NULL);
    if (fclose(g.log) != 0 && g.failed == 0)
        g.failed = errno ? errno : EIO;
    fprintf(stderr, "flushlog: %lu writes, %lu flushes recorded%s%s\n", g.writes, g.flushes,
            g.failed ? ": LOG or IMAGE failed: " : "", g.failed ? strerror(g.failed) : "");
    return rc != 0 ? 1 : g.failed ? 1 : 0;
}
