/*
 * test_attrib.c - loadgen/attrib on /proc samples (tests/unit/data/): the listening sockets of
 * the target's port and their owner in /proc/net/tcp and tcp6, fd links, uid and parent from
 * /proc/PID/status, shortened command lines; the rule that tells the target's processes from
 * foreign ones (a second server1, another user's server1, nginx's workers, the backends); and
 * the CPU used outside the watched processes with the "not the stack" verdict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/attrib.h"
#include "procstat.h"
#include "../testdata.h"

/* lg_attrib_listeners on text, through a stream as it reads /proc */
static int listeners(const char *text, uint16_t port, uint64_t *inodes, int max, uid_t *uid)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    int n;

    assert_non_null(f);
    n = lg_attrib_listeners(f, port, inodes, max, uid);
    fclose(f);
    return n;
}

static void test_attrib_listeners_tcp(void **state)
{
    uint64_t ino[4];
    uid_t uid = 12345;

    (void)state;
    /* port 8080 (1F90): two listening sockets (127.0.0.1 and 0.0.0.0), established ones not */
    assert_int_equal(listeners(sample("proc_net_tcp.txt"), 8080, ino, 4, &uid), 2);
    assert_int_equal(ino[0], 31337);
    assert_int_equal(ino[1], 31341);
    assert_int_equal(uid, 1000);
    uid = 12345;
    assert_int_equal(listeners(sample("proc_net_tcp.txt"), 8081, ino, 4, &uid), 1);
    assert_int_equal(uid, 1001);
    uid = 12345;
    assert_int_equal(listeners(sample("proc_net_tcp.txt"), 9999, ino, 4, &uid), 0);
    assert_int_equal(uid, 12345); /* untouched */
    assert_int_equal(listeners(sample("proc_net_tcp.txt"), 8080, ino, 1, &uid), 1);
    assert_int_equal(listeners("garbage", 8080, ino, 4, &uid), -1);
}

static void test_attrib_listeners_tcp6(void **state)
{
    uint64_t ino[4];
    uid_t uid = 0;

    (void)state;
    assert_int_equal(listeners(sample("proc_net_tcp6.txt"), 8080, ino, 4, &uid), 1);
    assert_int_equal(ino[0], 41337);
    assert_int_equal(uid, 999);
}

static void test_attrib_status_fd_cmdline(void **state)
{
    static const char raw[] = "/usr/bin/server1\0--port\0\x38\x30\x38\x30\0";
    uint64_t ino;
    uid_t uid;
    pid_t ppid;
    char out[16];
    char wide[64];

    (void)state;
    assert_int_equal(lg_attrib_status(sample("proc_pid_status.txt"), &uid, &ppid), 0);
    assert_int_equal(uid, 0);
    assert_int_equal(ppid, 528);
    assert_int_equal(lg_attrib_status("Name: x\n", &uid, &ppid), -1);

    assert_int_equal(lg_attrib_socket_inode("socket:[31337]", &ino), 0);
    assert_int_equal(ino, 31337);
    assert_int_equal(lg_attrib_socket_inode("pipe:[31337]", &ino), -1);
    assert_int_equal(lg_attrib_socket_inode("socket:[]", &ino), -1);
    assert_int_equal(lg_attrib_socket_inode("socket:[12]x", &ino), -1);

    lg_attrib_cmdline(raw, sizeof(raw) - 1, wide, sizeof(wide));
    assert_string_equal(wide, "/usr/bin/server1 --port 8080");
    lg_attrib_cmdline(raw, sizeof(raw) - 1, out, sizeof(out));
    assert_string_equal(out, "/usr/bin/ser...");
    lg_attrib_cmdline("a\nb", 3, wide, sizeof(wide));
    assert_string_equal(wide, "a?b");
    lg_attrib_cmdline("", 0, wide, sizeof(wide));
    assert_string_equal(wide, "");
}

/* groups: 0 server1, 1 server2, 2 nginx, 3 redis-server */
static void test_attrib_foreign_rule(void **state)
{
    static const struct lg_attrib_proc p[] = {
        {.pid = 100, .ppid = 1, .uid = 1000, .group = 0, .listens = true},  /* the target */
        {.pid = 200, .ppid = 1, .uid = 1000, .group = 0, .listens = false}, /* 2nd server1 */
        {.pid = 300, .ppid = 1, .uid = 1001, .group = 0, .listens = false}, /* another user's */
        {.pid = 400, .ppid = 1, .uid = 1000, .group = 1, .listens = false}, /* server2 */
        {.pid = 500, .ppid = 1, .uid = 1001, .group = 1, .listens = false}, /* its server2 */
        {.pid = 600, .ppid = 100, .uid = 1000, .group = 0, .listens = false}, /* a child */
    };
    /* nginx started by root, its socket owned by root, workers as www-data; fds unreadable */
    static const struct lg_attrib_proc ng[] = {
        {.pid = 10, .ppid = 1, .uid = 0, .group = 2, .listens = false},
        {.pid = 11, .ppid = 10, .uid = 33, .group = 2, .listens = false},
        {.pid = 12, .ppid = 10, .uid = 33, .group = 2, .listens = false},
        {.pid = 13, .ppid = 1, .uid = 33, .group = 2, .listens = false}, /* not its child */
        {.pid = 20, .ppid = 1, .uid = 999, .group = 3, .listens = false}, /* system redis */
    };
    bool f[8];

    (void)state;
    assert_int_equal(lg_attrib_foreign(p, 6, 1000, f), 3);
    assert_false(f[0]);
    assert_true(f[1]);
    assert_true(f[2]);
    assert_false(f[3]);
    assert_true(f[4]);
    assert_false(f[5]);
    assert_int_equal(lg_attrib_foreign(ng, 5, 0, f), 2);
    assert_false(f[0]);
    assert_false(f[1]);
    assert_false(f[2]);
    assert_true(f[3]);
    assert_true(f[4]);
    assert_int_equal(lg_attrib_foreign(p, 0, 0, f), 0);
}

static void test_attrib_outside_arithmetic(void **state)
{
    struct lg_monitor_result m;
    double cores;
    double share;

    (void)state;
    memset(&m, 0, sizeof(m));
    m.ncpu = 2;
    m.machine_cpu = 0.8; /* 1.6 busy cores */
    m.nprocs = 3;
    m.procs[0].cpu_cores = 0.2; /* loadgen */
    m.procs[1].cpu_cores = 0.25;
    m.procs[2].cpu_cores = 0.05;
    lg_attrib_outside(&m, &cores, &share);
    assert_float_equal(cores, 1.1, 1e-9);
    assert_float_equal(share, 1.1 / 1.6, 1e-9);
    assert_true(lg_attrib_not_stack("cpu", share));
    assert_false(lg_attrib_not_stack("cpu:server1", share));
    assert_false(lg_attrib_not_stack("disk:sda", share));
    assert_false(lg_attrib_not_stack(NULL, share));
    /* exactly half outside is not "mostly" */
    m.procs[1].cpu_cores = 0.55;
    lg_attrib_outside(&m, &cores, &share);
    assert_float_equal(share, 0.5, 1e-9);
    assert_false(lg_attrib_not_stack("cpu", share));
    /* watched above busy (sampling skew): nothing outside */
    m.procs[1].cpu_cores = 2.0;
    lg_attrib_outside(&m, &cores, &share);
    assert_float_equal(cores, 0, 0);
    assert_float_equal(share, 0, 0);
    /* an idle machine */
    m.machine_cpu = 0;
    lg_attrib_outside(&m, &cores, &share);
    assert_float_equal(share, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attrib_listeners_tcp),
        cmocka_unit_test(test_attrib_listeners_tcp6),
        cmocka_unit_test(test_attrib_status_fd_cmdline),
        cmocka_unit_test(test_attrib_foreign_rule),
        cmocka_unit_test(test_attrib_outside_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
