/*
 * test_procstat.c - common/procstat parsers on captured /proc samples in tests/unit/data/
 * (a /proc/PID/stat whose comm holds spaces and parentheses, status, io, /proc/stat,
 * diskstats, net/dev), plus malformed inputs and the file helpers on the live /proc.
 * The stat sample's utime/stime/num_threads were edited to non-zero values.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "procstat.h"
#include "../testdata.h"

static char text[65536]; /* the live /proc files read below */

static void test_procstat_pid_stat_odd_comm(void **state)
{
    struct procstat_pid p;

    (void)state;
    assert_int_equal(procstat_parse_pid_stat(sample("proc_pid_stat.txt"), &p), 0);
    assert_string_equal(p.comm, "x) (y z");
    assert_int_equal(p.state, 'S');
    assert_int_equal(p.utime_ticks, 1234);
    assert_int_equal(p.stime_ticks, 567);
    assert_int_equal(p.num_threads, 3);
    assert_int_equal(p.rss_pages, 385);
}

static void test_procstat_pid_stat_malformed(void **state)
{
    struct procstat_pid p;

    (void)state;
    assert_int_equal(procstat_parse_pid_stat("", &p), -1);
    assert_int_equal(procstat_parse_pid_stat("12 (cat S 1 2 3", &p), -1);
    assert_int_equal(procstat_parse_pid_stat("12 (cat) S 1 2 3 4 5", &p), -1); /* truncated */
    assert_int_equal(procstat_parse_pid_stat("12 (cat) S 1 1 1 0 -1 0 0 0 0 0 x 5 0 0 20 0 1 0 "
                                             "9 9 9",
                                             &p),
                     -1); /* utime not a number */
    assert_int_equal(procstat_parse_pid_stat("12 (cat) S 1 1 1 0 -1 0 0 0 0 0 7 5 0 0 20 0 1 0 "
                                             "9 9 42",
                                             &p),
                     0);
    assert_string_equal(p.comm, "cat");
    assert_int_equal(p.utime_ticks, 7);
    assert_int_equal(p.rss_pages, 42);
}

static void test_procstat_status(void **state)
{
    struct procstat_status s;

    (void)state;
    assert_int_equal(procstat_parse_status(sample("proc_pid_status.txt"), &s), 0);
    assert_int_equal(s.voluntary_ctxt, 8);
    assert_int_equal(s.nonvoluntary_ctxt, 0);
    assert_int_equal(s.vm_rss_kb, 1720);
    assert_int_equal(s.threads, 1);
    /* "voluntary_ctxt_switches:" must not match inside "nonvoluntary_ctxt_switches:" */
    assert_int_equal(procstat_parse_status("Threads:\t2\nnonvoluntary_ctxt_switches:\t5\n"
                                           "voluntary_ctxt_switches:\t7\n",
                                           &s),
                     0);
    assert_int_equal(s.voluntary_ctxt, 7);
    assert_int_equal(s.nonvoluntary_ctxt, 5);
    assert_int_equal(s.vm_rss_kb, 0); /* kernel threads have no VmRSS */
    assert_int_equal(procstat_parse_status("Threads:\t2\n", &s), -1);
}

static void test_procstat_io(void **state)
{
    struct procstat_io io;

    (void)state;
    assert_int_equal(procstat_parse_io(sample("proc_pid_io.txt"), &io), 0);
    assert_int_equal(io.rchar, 27445);
    assert_int_equal(io.wchar, 1719);
    assert_int_equal(io.read_bytes, 20480);
    assert_int_equal(io.write_bytes, 12288);
    assert_int_equal(procstat_parse_io("rchar: 1\nwchar: 2\n", &io), -1);
}

static void test_procstat_stat(void **state)
{
    struct procstat_cpu c;

    (void)state;
    assert_int_equal(procstat_parse_stat(sample("proc_stat.txt"), &c), 0);
    /* cpu  10725 0 14959 207401 1035 0 2852 17 0 0 */
    assert_int_equal(c.total_ticks, 10725 + 0 + 14959 + 207401 + 1035 + 0 + 2852 + 17);
    assert_int_equal(c.idle_ticks, 207401 + 1035);
    assert_int_equal(c.ncpu, 2);
    assert_true(c.ctxt > 0);
    assert_int_equal(procstat_parse_stat("cpu0 1 2 3 4 5 6 7 8\n", &c), -1);
    assert_int_equal(procstat_parse_stat("cpu  1 2 3\n", &c), -1);
}

static void test_procstat_diskstats(void **state)
{
    struct procstat_disk d[8];
    int n;

    (void)state;
    n = procstat_parse_diskstats(sample("proc_diskstats.txt"), d, 8);
    /* loop0..7 and zram0 are skipped; vda and its partition vda1 are reported */
    assert_int_equal(n, 2);
    assert_string_equal(d[0].name, "vda");
    assert_int_equal(d[0].sectors_read, 6727786);
    assert_int_equal(d[0].sectors_written, 2517368);
    assert_int_equal(d[0].io_ticks_ms, 19120);
    assert_string_equal(d[1].name, "vda1");
    assert_int_equal(procstat_parse_diskstats(sample("proc_diskstats.txt"), d, 1), 1);
    assert_true(procstat_disk_is_virtual("loop12"));
    assert_true(procstat_disk_is_virtual("ram0"));
    assert_false(procstat_disk_is_virtual("nvme0n1"));
    assert_int_equal(procstat_parse_diskstats(" 8 0 sda 1 2\n", d, 8), -1);
    assert_int_equal(procstat_parse_diskstats("", d, 8), 0);
}

static void test_procstat_netdev(void **state)
{
    struct procstat_netdev nd[8];
    int n;

    (void)state;
    n = procstat_parse_netdev(sample("proc_net_dev.txt"), nd, 8);
    assert_int_equal(n, 4);
    assert_string_equal(nd[0].name, "lo");
    assert_int_equal(nd[0].rx_bytes, 3885656734ull);
    assert_int_equal(nd[0].tx_bytes, 3885656734ull);
    assert_string_equal(nd[3].name, "eth0");
    assert_int_equal(nd[3].rx_bytes, 50314327);
    assert_int_equal(nd[3].tx_bytes, 56169);
    /* an interface name glued to its counters */
    n = procstat_parse_netdev("eth1:12 1 0 0 0 0 0 0 34 2 0 0 0 0 0 0\n", nd, 8);
    assert_int_equal(n, 1);
    assert_int_equal(nd[0].rx_bytes, 12);
    assert_int_equal(nd[0].tx_bytes, 34);
    assert_int_equal(procstat_parse_netdev("eth1: 12 1\n", nd, 8), -1);
}

static void test_procstat_keys(void **state)
{
    char s[64];
    uint64_t v;

    (void)state;
    assert_int_equal(
        procstat_key_u64("MemTotal:       24684084 kB\nMemFree: 1 kB\n", "MemTotal:", &v), 0);
    assert_int_equal(v, 24684084);
    assert_int_equal(procstat_key_u64("MemFree: 1 kB\n", "MemTotal:", &v), -1);
    assert_int_equal(procstat_key_str("processor\t: 0\nmodel name\t: AMD EPYC 7B13  \n",
                                      "model name", s, sizeof(s)),
                     0);
    assert_string_equal(s, "AMD EPYC 7B13");
}

static void test_procstat_read_file(void **state)
{
    char small[8];

    (void)state;
    errno = 0;
    assert_int_equal(procstat_read_file("/proc/nonexistent/stat", text, sizeof(text)), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(procstat_read_file("/proc/self/status", small, sizeof(small)), -1);
    assert_int_equal(errno, EFBIG);
    assert_true(procstat_read_file("/proc/self/stat", text, sizeof(text)) > 0);
}

static void on_match(size_t index, pid_t pid, void *arg)
{
    pid_t *found = arg;
    assert_int_equal(index, 1);
    if (pid == getpid())
        *found = pid;
}

static void test_procstat_scan_comm_self(void **state)
{
    struct procstat_pid self;
    const char *comms[2] = {"no-such-comm-x", NULL};
    pid_t found = 0;

    (void)state;
    assert_true(procstat_read_file("/proc/self/stat", text, sizeof(text)) > 0);
    assert_int_equal(procstat_parse_pid_stat(text, &self), 0);
    comms[1] = self.comm;
    assert_true(procstat_scan_comm(comms, 2, on_match, &found) >= 1);
    assert_int_equal(found, getpid());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_procstat_pid_stat_odd_comm),
        cmocka_unit_test(test_procstat_pid_stat_malformed),
        cmocka_unit_test(test_procstat_status),
        cmocka_unit_test(test_procstat_io),
        cmocka_unit_test(test_procstat_stat),
        cmocka_unit_test(test_procstat_diskstats),
        cmocka_unit_test(test_procstat_netdev),
        cmocka_unit_test(test_procstat_keys),
        cmocka_unit_test(test_procstat_read_file),
        cmocka_unit_test(test_procstat_scan_comm_self),
    };
    return cmocka_run_group_tests_name("procstat", tests, NULL, NULL);
}
