/* source.c - see source.h. */
#include "source.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "httpcond.h"
#include "log.h"

/* Sets src's dates from its version's, looked up at now_s (httpcond.h). */
static void date_source(struct source *src, int64_t now_s, uint64_t pending, int64_t since_ns)
{
    struct httpcond_stamp stamp = {
        .mtime_ns = src->mtime_ns,
        .read_s = now_s,
        .pending_ns = pending > INT64_MAX ? INT64_MAX : (int64_t)pending,
        .since_ns = since_ns,
    };

    src->last_modified = httpcond_last_modified(&stamp);
    src->strong_date = httpcond_strong_date(&stamp);
}

/*
 * An operator's file, opened (O_DIRECT in --read direct), dated as looked up at now_s with
 * pending uploads (store_found); 0 or -errno as source_resolve.
 */
static int resolve_file(const struct files *f, const char *name, int64_t now_s,
                        uint64_t pending, struct source *src)
{
    bool direct = f->mode == FILES_DIRECT;
    struct stat st;
    int fd = files_open(f, name, direct);

    if (fd == -EINVAL && direct) {
        /* O_DIRECT refused: a directory (no direct I/O there), or a filesystem that refuses it */
        int plain = files_open(f, name, false);
        bool reg = plain >= 0 && fstat(plain, &st) == 0 && S_ISREG(st.st_mode);
        if (plain >= 0)
            close(plain);
        if (!reg)
            return -ENOENT;
        log_warn("cannot open '%s' with O_DIRECT (a filesystem without direct I/O under "
                 "--root?); answering 500",
                 name);
        return -EOPNOTSUPP;
    }
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOENT;
    }
    src->kind = SOURCE_FD;
    src->fd = fd;
    src->size = (uint64_t)st.st_size;
    src->direct = direct;
    src->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    src->ino = (uint64_t)st.st_ino;
    date_source(src, now_s, pending,
                (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
    return 0;
}

int source_resolve(struct files *f, struct committer *cm, const char *name, size_t len,
                   struct source *src)
{
    /* the time before the lookup: a version the committer dates after it is pending there */
    int64_t now_s = clock_wall_s();
    uint64_t pending = UINT64_MAX;

    *src = (struct source){.kind = SOURCE_MEM, .fd = -1, .mtime_ns = -1, .last_modified = -1,
                           .strong_date = -1};
    if (cm != NULL) {
        /* uploads come from the store in every mode, never from memory: what users upload is
         * bounded by the disk, not by server1's memory */
        struct store_found found;
        int st = commit_lookup(cm, name, len, &found);
        if (st == STORE_WHITEOUT)
            return -ENOENT;
        if (st < 0)
            return st;
        if (st == STORE_FILE) {
            src->kind = SOURCE_FD;
            src->upload = true;
            src->fd = found.fd;
            src->pin = found.pin;
            src->off = found.off;
            src->size = found.size;
            src->mtime_ns = found.version > 0 ? (int64_t)found.version : -1;
            memcpy(src->owner, found.owner, sizeof(found.owner));
            /* in place since it was published: after its date, but pending until then */
            date_source(src, now_s, found.pending, src->mtime_ns);
            return 0;
        }
        pending = found.pending;
    }
    if (f->mode == FILES_PREFETCH) {
        const struct files_blob *blob = files_lookup(f, name, len);
        if (blob == NULL)
            return -ENOENT;
        src->blob = blob;
        src->data = blob->data;
        src->size = blob->size;
        src->mtime_ns = blob->mtime_ns;
        src->ino = blob->ino;
        src->last_modified = blob->last_modified;
        src->strong_date = blob->strong_date;
        return 0;
    }
    return resolve_file(f, name, now_s, pending, src);
}

void source_release(struct source *src)
{
    src->blob = NULL;
    src->data = NULL;
    if (src->fd >= 0)
        close(src->fd);
    src->fd = -1;
    store_unpin(src->pin);
    src->pin = NULL;
}
