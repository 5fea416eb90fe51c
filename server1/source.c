/* source.c - see source.h. */
#include "source.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* An operator's file, opened (O_DIRECT in --read direct); 0 or -errno as source_resolve. */
static int resolve_file(const struct files *f, const char *name, struct source *src)
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
    return 0;
}

int source_resolve(struct files *f, struct committer *cm, const char *name, size_t len,
                   struct source *src)
{
    *src = (struct source){.kind = SOURCE_MEM, .fd = -1, .mtime_ns = -1};
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
            return 0;
        }
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
        return 0;
    }
    return resolve_file(f, name, src);
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
