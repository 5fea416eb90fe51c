/*
 * sdnotify.c - see sdnotify.h. One SOCK_DGRAM socket per message, closed at once: the
 * messages are a handful per process lifetime (start, reloads, stop), so nothing is kept.
 */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* The address named by $NOTIFY_SOCKET into sa; its length, or 0 with errno set. */
static socklen_t notify_addr(const char *name, struct sockaddr_un *sa)
{
    size_t len = strlen(name);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (len < 2 || (name[0] != '/' && name[0] != '@')) {
        errno = EINVAL;
        return 0;
    }
    if (len > sizeof(sa->sun_path) - (name[0] == '/')) {
        errno = ENAMETOOLONG;
        return 0;
    }
    memcpy(sa->sun_path, name, len);
    if (name[0] == '@') {
        sa->sun_path[0] = '\0'; /* abstract: no terminating NUL, the length says where it ends */
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

int sdnotify_send(const char *state)
{
    const char *name = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    socklen_t salen;
    int len;
    ssize_t n;
    int fd;
    int saved;

    if (name == NULL || name[0] == '\0')
        return 0;
    len = (int)strlen(state);
    if (len == 0 || len > SDNOTIFY_MSG_MAX) {
        errno = EINVAL;
        return -1;
    }
    salen = notify_addr(name, &sa);
    if (salen == 0)
        return -1;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    do {
        n = sendto(fd, state, (size_t)len, MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
    } while (n < 0 && errno == EINTR);
    saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    if (n != len) {
        errno = EMSGSIZE;
        return -1;
    }
    return 0;
}

void sdnotify_reloading_or_warn(void)
{
    char state[64];

    snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)(clock_now_ns() / 1000));
    sdnotify_or_warn(state);
}

void sdnotify_or_warn(const char *state)
{
    char ebuf[128];

    if (sdnotify_send(state) < 0)
        log_warn("cannot tell the service manager '%.*s' through NOTIFY_SOCKET: %s",
                 (int)strcspn(state, "\n"), state, strerror_r(errno, ebuf, sizeof(ebuf)));
}
