/*
 * test_sdnotify.c - common/sdnotify: a datagram to a socket path and to an abstract name,
 * a reload's RELOADING=1 with MONOTONIC_USEC (any other state sent as it is), nothing sent
 * without NOTIFY_SOCKET, refused names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../common/sdnotify.h"

/* A datagram socket bound to name ("/path" or "@abstract"), non-blocking; its fd. */
static int bind_dgram(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    memcpy(sa.sun_path, name, len);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    else
        salen++;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
    return fd;
}

/* The next datagram on fd as a string (empty if none is waiting). */
static const char *recv_msg(int fd)
{
    static char buf[SDNOTIFY_MSG_MAX + 1];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_sdnotify_send_path(void **state)
{
    char dir[] = "/tmp/test_sdnotify.XXXXXX";
    char path[64];
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/notify", dir);
    fd = bind_dgram(path);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(sdnotify_send("READY=1\nSTATUS=serving"), 0);
    assert_string_equal(recv_msg(fd), "READY=1\nSTATUS=serving");
    assert_int_equal(sdnotify_send("STOPPING=1"), 0);
    assert_string_equal(recv_msg(fd), "STOPPING=1");
    close(fd);
    unlink(path);
    rmdir(dir);
    /* nobody listening any more: the error is the caller's to see */
    assert_int_equal(sdnotify_send("READY=1"), -1);
    assert_int_equal(errno, ENOENT);
    unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_send_abstract(void **state)
{
    char name[64];
    int fd;

    (void)state;
    snprintf(name, sizeof(name), "@test_sdnotify.%d", (int)getpid());
    fd = bind_dgram(name);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_int_equal(sdnotify_send("READY=1"), 0);
    assert_string_equal(recv_msg(fd), "READY=1");
    close(fd);
    unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_send_reloading(void **state)
{
    char name[64];
    struct timespec ts;
    unsigned long long before;
    unsigned long long usec;
    const char *msg;
    int fd;

    (void)state;
    snprintf(name, sizeof(name), "@test_sdnotify.r.%d", (int)getpid());
    fd = bind_dgram(name);
    setenv("NOTIFY_SOCKET", name, 1);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    before = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
    sdnotify_reloading_or_warn();
    msg = recv_msg(fd);
    assert_int_equal(strncmp(msg, "RELOADING=1\nMONOTONIC_USEC=", 27), 0);
    usec = strtoull(msg + 27, NULL, 10);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    assert_true(usec >= before);
    assert_true(usec <= (unsigned long long)ts.tv_sec * 1000000ull +
                           (unsigned long long)ts.tv_nsec / 1000);
    assert_int_equal(sdnotify_send("RELOADING=1"), 0); /* as it is: nothing added */
    assert_string_equal(recv_msg(fd), "RELOADING=1");
    close(fd);
    unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_send_refused(void **state)
{
    char longname[200];

    (void)state;
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(sdnotify_send("READY=1"), 0); /* not under systemd: nothing to do */
    setenv("NOTIFY_SOCKET", "", 1);
    assert_int_equal(sdnotify_send("READY=1"), 0);
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    assert_int_equal(sdnotify_send("READY=1"), -1);
    assert_int_equal(errno, EINVAL);
    setenv("NOTIFY_SOCKET", "@", 1);
    assert_int_equal(sdnotify_send("READY=1"), -1);
    assert_int_equal(errno, EINVAL);
    memset(longname, 'a', sizeof(longname) - 1);
    longname[0] = '/';
    longname[sizeof(longname) - 1] = '\0';
    setenv("NOTIFY_SOCKET", longname, 1);
    assert_int_equal(sdnotify_send("READY=1"), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    setenv("NOTIFY_SOCKET", "@x", 1);
    assert_int_equal(sdnotify_send(""), -1);
    assert_int_equal(errno, EINVAL);
    unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdnotify_send_path),
        cmocka_unit_test(test_sdnotify_send_abstract),
        cmocka_unit_test(test_sdnotify_send_reloading),
        cmocka_unit_test(test_sdnotify_send_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
