/*
 * wholefile.c - see wholefile.h.
 */
#include "wholefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

enum wholefile_status wholefile_read(const char *path, uint64_t cap, struct wholefile *f)
{
    struct stat st;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *f = (struct wholefile){0};
    if (fd < 0) {
        f->err = errno;
        return WHOLEFILE_CANNOT_OPEN;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return WHOLEFILE_NOT_REGULAR;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size > cap) {
        close(fd);
        return WHOLEFILE_TOO_BIG;
    }
    f->data = xmalloc((size_t)f->size + 1);
    while (got < (size_t)f->size) {
        ssize_t n = read(fd, f->data + got, (size_t)f->size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            f->err = n < 0 ? errno : 0;
            free(f->data);
            f->data = NULL;
            close(fd);
            return WHOLEFILE_CANNOT_READ;
        }
        got += (size_t)n;
    }
    close(fd);
    f->data[got] = '\0';
    f->len = got;
    return WHOLEFILE_OK;
}
