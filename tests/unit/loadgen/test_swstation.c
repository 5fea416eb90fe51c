/*
 * test_swstation.c - loadgen/swstation and loadgen/thrsample: the rules per thread name,
 * the classification of captured wait channels and syscall lines (tests/unit/data/
 * proc_task_wchan.txt, proc_task_syscall.txt), station names, the grouping of threads into
 * stations (threads present, busy fractions, CPU, the top wait, the limit on stations), and the
 * sampler on this process's own threads: a thread that spins reads as running, one in epoll as
 * idle, one blocked on a pipe as blocked, a committer idle in an untimed wait and busy in a
 * timed one, and threads beyond LG_THR_MAX are left out and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/config.h"
#include "../../../loadgen/swstation.h"
#include "../../../loadgen/thrsample.h"
#include "clock.h"
#include "procstat.h"
#include "../testdata.h"

static void test_sw_rules(void **state)
{
    const struct lg_sw_rule *r;

    (void)state;
    r = lg_sw_rule_of("s2-wrk-1");
    assert_non_null(r);
    assert_int_equal(r->idle, LG_SW_IDLE_EPOLL);
    assert_false(r->nested);
    assert_false(r->pinned); /* server1 deals requests round-robin to every worker */
    assert_true(lg_sw_rule_of("s1-wrk-0")->pinned); /* a connection stays on its thread */
    assert_true(lg_sw_rule_of("lg-wrk-0")->pinned);
    r = lg_sw_rule_of("s1-commit");
    assert_non_null(r);
    assert_int_equal(r->idle, LG_SW_IDLE_FUTEX);
    r = lg_sw_rule_of("redis-server");
    assert_non_null(r);
    assert_true(r->nested);
    assert_non_null(lg_sw_rule_of("lg-wrk-12"));
    assert_non_null(lg_sw_rule_of("s2-proc-0"));
    assert_null(lg_sw_rule_of("mariadbd"));
    assert_null(lg_sw_rule_of("lg-usr-3")); /* --model threads: a user, not a server */
    assert_null(lg_sw_rule_of("s2-wrk"));   /* the prefix rules need the dash */
    assert_null(lg_sw_rule_of("s1-commitx"));
    assert_null(lg_sw_rule_of("server1"));
    assert_null(lg_sw_rule_of(""));
}

/* Every captured line: comm, state, wchan, expected class. */
static void test_sw_classify_captured(void **state)
{
    char *save = NULL;
    int lines = 0;

    (void)state;
    for (char *line = strtok_r((char *)sample("proc_task_wchan.txt"), "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char comm[32], st[4], wchan[64], want[16];
        const struct lg_sw_rule *r;
        enum lg_sw_state got;

        if (line[0] == '#')
            continue;
        assert_int_equal(sscanf(line, "%31s %3s %63s %15s", comm, st, wchan, want), 4);
        r = lg_sw_rule_of(comm);
        assert_non_null(r);
        got = lg_sw_classify(r, wchan);
        if (strcmp(want, "run") == 0)
            assert_int_equal(got, LG_SW_RUN);
        else if (strcmp(want, "idle") == 0)
            assert_int_equal(got, LG_SW_IDLE);
        else
            assert_int_equal(got, LG_SW_BLOCKED);
        lines++;
    }
    assert_true(lines >= 15);
}

static void test_sw_classify_edges(void **state)
{
    const struct lg_sw_rule *loop = lg_sw_rule_of("s1-wrk-0");
    const struct lg_sw_rule *queue = lg_sw_rule_of("s1-commit");

    (void)state;
    assert_int_equal(lg_sw_classify(loop, "0\n"), LG_SW_RUN);
    assert_int_equal(lg_sw_classify(loop, ""), LG_SW_RUN);
    assert_int_equal(lg_sw_classify(loop, "do_epoll_wait\n"), LG_SW_IDLE);
    assert_int_equal(lg_sw_classify(loop, "do_epoll_pwait.part.0"), LG_SW_IDLE);
    assert_int_equal(lg_sw_classify(loop, "futex_do_wait"), LG_SW_BLOCKED); /* a lock */
    assert_int_equal(lg_sw_classify(queue, "do_epoll_wait"), LG_SW_BLOCKED);
    assert_int_equal(lg_sw_classify(loop, "00"), LG_SW_BLOCKED); /* not the running mark */
}

/* Which stations serve in batches: server1's committer only, by its station name. */
static void test_sw_batch(void **state)
{
    (void)state;
    assert_true(lg_sw_is_batch("s1-commit"));
    assert_false(lg_sw_is_batch("s1-wrk"));
    assert_false(lg_sw_is_batch("s2-wrk"));
    assert_false(lg_sw_is_batch("s1-commit-1"));
    assert_false(lg_sw_is_batch("s1-com"));
    assert_false(lg_sw_is_batch(""));
}

/* The committer's futex waits: untimed (waiting for work) or timed (its group-commit window). */
static void test_sw_classify_syscall(void **state)
{
    const struct lg_sw_rule *queue = lg_sw_rule_of("s1-commit");
    char *save = NULL;
    int lines = 0;

    (void)state;
    assert_true(lg_sw_wants_syscall(queue, "futex_do_wait"));
    assert_false(lg_sw_wants_syscall(queue, "submit_bio_wait"));
    assert_false(lg_sw_wants_syscall(lg_sw_rule_of("s2-wrk-0"), "futex_do_wait"));
    assert_int_equal(lg_sw_classify_syscall(""), LG_SW_BLOCKED);
    assert_int_equal(lg_sw_classify_syscall("202 0x1 junk"), LG_SW_BLOCKED);
#if defined(__x86_64__) /* the captured numbers are x86_64's */
    for (char *line = strtok_r((char *)sample("proc_task_syscall.txt"), "\n", &save);
         line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *bar = strchr(line, '|');
        enum lg_sw_state want;

        if (line[0] == '#')
            continue;
        assert_non_null(bar);
        *bar = '\0';
        want = strcmp(bar + 1, "idle") == 0  ? LG_SW_IDLE
               : strcmp(bar + 1, "run") == 0 ? LG_SW_RUN
                                             : LG_SW_BLOCKED;
        assert_int_equal(lg_sw_classify_syscall(line), want);
        lines++;
    }
    assert_int_equal(lines, 4);
#endif
}

static void test_sw_station_name(void **state)
{
    char out[LG_SW_NAME];

    (void)state;
    lg_sw_station_name("s2-wrk-1", out, sizeof(out));
    assert_string_equal(out, "s2-wrk");
    lg_sw_station_name("lg-wrk-12", out, sizeof(out));
    assert_string_equal(out, "lg-wrk");
    lg_sw_station_name("redis-server", out, sizeof(out));
    assert_string_equal(out, "redis-server");
    lg_sw_station_name("s1-commit", out, sizeof(out));
    assert_string_equal(out, "s1-commit");
    lg_sw_station_name("worker7", out, sizeof(out));
    assert_string_equal(out, "worker");
    lg_sw_station_name("1234", out, sizeof(out));
    assert_string_equal(out, "1234");
    lg_sw_station_name("abcdefghijklmnopqrstuvwxyz", out, 8);
    assert_string_equal(out, "abcdefg");
}

static void test_sw_count_wait(void **state)
{
    struct lg_sw_thread t;

    (void)state;
    memset(&t, 0, sizeof(t));
    lg_sw_count_wait(&t, "wait_woken\n");
    lg_sw_count_wait(&t, "wait_woken");
    for (int i = 0; i < LG_SW_WAITS + 2; i++) {
        char w[16];
        snprintf(w, sizeof(w), "w%d", i);
        lg_sw_count_wait(&t, w);
    }
    assert_string_equal(t.wait[0], "wait_woken");
    assert_int_equal(t.wait_n[0], 2);
    assert_string_equal(t.wait[LG_SW_WAITS - 1], "w2");
    assert_int_equal(t.wait_n[LG_SW_WAITS - 1], 1); /* later distinct ones are not kept */
}

static struct lg_sw_thread thr(const char *station, uint64_t present, uint64_t run,
                               uint64_t blocked, double cpu_s)
{
    struct lg_sw_thread t;

    memset(&t, 0, sizeof(t));
    snprintf(t.station, sizeof(t.station), "%s", station);
    t.present = present;
    t.run = run;
    t.blocked = blocked;
    t.cpu_s = cpu_s;
    return t;
}

static void test_sw_group(void **state)
{
    struct lg_sw_thread t[5];
    struct lg_sw_station st[LG_SW_MAX_STATIONS];
    unsigned dropped = 99;
    size_t n;

    (void)state;
    /* 1000 samples over 2 s: a pool of two threads and one that came late */
    t[0] = thr("s2-wrk", 1000, 300, 600, 0.5);
    t[1] = thr("s2-wrk", 1000, 200, 700, 0.3);
    t[2] = thr("s2-wrk", 300, 100, 100, 0.1); /* present 30% of the window: not a server */
    t[3] = thr("s1-commit", 1000, 10, 490, 0.02);
    t[4] = thr("redis-server", 1000, 400, 0, 0.8);
    t[4].nested = true;
    t[0].pinned = t[1].pinned = t[2].pinned = true;
    lg_sw_count_wait(&t[0], "poll_schedule_timeout");
    t[0].wait_n[0] = 500;
    lg_sw_count_wait(&t[0], "futex_do_wait");
    t[0].wait_n[1] = 100;
    lg_sw_count_wait(&t[1], "futex_do_wait");
    t[1].wait_n[0] = 450; /* across both threads: poll 500, futex 550 */
    n = lg_sw_group(t, 5, 1000, 2.0, st, LG_SW_MAX_STATIONS, &dropped);
    assert_int_equal(n, 3);
    assert_int_equal(dropped, 0);
    assert_string_equal(st[0].name, "s2-wrk");
    assert_int_equal(st[0].threads, 2);
    assert_true(fabs(st[0].run - 0.6) < 1e-12);
    assert_true(fabs(st[0].blocked - 1.4) < 1e-12);
    assert_true(fabs(st[0].busy - 2.0) < 1e-12);
    assert_true(fabs(st[0].cpu_cores - 0.45) < 1e-12);
    assert_true(fabs(st[0].cpu_max - 0.25) < 1e-12);
    assert_string_equal(st[0].top_wait, "futex_do_wait");
    assert_true(fabs(st[0].top_wait_frac - 550.0 / 1050) < 1e-12);
    assert_true(st[0].pinned);
    assert_string_equal(st[1].name, "s1-commit");
    assert_int_equal(st[1].threads, 1);
    assert_false(st[1].nested);
    assert_false(st[1].pinned);
    assert_string_equal(st[1].top_wait, "");
    assert_true(st[2].nested);
    assert_true(fabs(st[2].cpu_cores - 0.4) < 1e-12);
    /* the limit: one station fits, the two others are counted */
    n = lg_sw_group(t, 5, 1000, 2.0, st, 1, &dropped);
    assert_int_equal(n, 1);
    assert_int_equal(dropped, 2);
    /* no window, no stations */
    assert_int_equal(lg_sw_group(t, 5, 0, 2.0, st, LG_SW_MAX_STATIONS, NULL), 0);
    assert_int_equal(lg_sw_group(t, 5, 1000, 0, st, LG_SW_MAX_STATIONS, NULL), 0);
}

/* ---- the sampler on this process's threads ------------------------------------------------ */

static atomic_bool quit;
static int quit_fd = -1; /* an eventfd: readable once the threads in epoll must end */
static _Atomic pid_t tids[3]; /* spin, in_epoll, on_pipe: set once each has its name */

/* The thread's name set, and its id published (tids[i]) for the settling wait. */
static void named(int i, const char *name)
{
    pthread_setname_np(pthread_self(), name);
    atomic_store(&tids[i], (pid_t)syscall(SYS_gettid));
}

/* Thread tid of this process is asleep ('S' in /proc/self/task/TID/stat). */
static bool asleep(pid_t tid)
{
    char path[64], buf[512];
    const char *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    if ((fd = open(path, O_RDONLY)) < 0)
        return false;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && p[2] == 'S';
}

/* Until thread tid is asleep (at most 10 s). */
static void wait_asleep(pid_t tid)
{
    uint64_t deadline = clock_now_ns() + 10000000000ull;

    while (!asleep(tid)) {
        if (clock_now_ns() > deadline)
            fail_msg("thread %d did not fall asleep in 10 s", (int)tid);
        usleep(1000);
    }
}

/*
 * Until the three threads have their names and the two that wait are asleep in their waits
 * (at most 10 s, however busy the machine): a fixed pause could end before a late thread ran.
 */
static void settle(void)
{
    uint64_t deadline = clock_now_ns() + 10000000000ull;

    for (;;) {
        bool ready = true;
        for (int i = 0; i < 3; i++)
            ready = ready && atomic_load(&tids[i]) != 0;
        ready = ready && asleep(atomic_load(&tids[1])) && asleep(atomic_load(&tids[2]));
        if (ready)
            return;
        if (clock_now_ns() > deadline)
            fail_msg("the test's threads did not settle in 10 s");
        usleep(1000);
    }
}

/* Waits in epoll (no timeout: no wake-ups to count) until quit_fd is written. */
static void idle_until_quit(void)
{
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};

    epoll_ctl(ep, EPOLL_CTL_ADD, quit_fd, &ev);
    while (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR)
        ;
    close(ep);
}

static void quit_all(void)
{
    uint64_t one = 1;

    atomic_store(&quit, true);
    assert_int_equal(write(quit_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

static void *spin(void *arg)
{
    (void)arg;
    named(0, "s1-wrk-0");
    while (!atomic_load(&quit))
        ;
    return NULL;
}

static void *in_epoll(void *arg)
{
    (void)arg;
    named(1, "s1-wrk-1");
    idle_until_quit();
    return NULL;
}

static void *on_pipe(void *arg)
{
    char c;
    named(2, "s2-wrk-0");
    while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static int find(const struct lg_thr_result *r, const char *name)
{
    for (unsigned i = 0; i < r->nst; i++)
        if (strcmp(r->st[i].name, name) == 0)
            return (int)i;
    fail_msg("no station %s", name);
    return -1;
}

static void test_thrsample_self(void **state)
{
    static struct lg_config cfg;
    struct lg_thrsample *s;
    struct lg_window win;
    struct lg_thr_result r;
    pthread_t t[3];
    int fds[2];
    uint64_t now;
    const struct lg_sw_station *st;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.thread_hz = 500;
    assert_int_equal(pipe(fds), 0);
    quit_fd = eventfd(0, 0) /* never read: stays readable for every waiter */;
    assert_true(quit_fd >= 0);
    atomic_store(&quit, false);
    for (int i = 0; i < 3; i++)
        atomic_store(&tids[i], 0);
    assert_int_equal(pthread_create(&t[0], NULL, spin, NULL), 0);
    assert_int_equal(pthread_create(&t[1], NULL, in_epoll, NULL), 0);
    assert_int_equal(pthread_create(&t[2], NULL, on_pipe, &fds[0]), 0);
    settle();
    s = lg_thrsample_new(&cfg);
    now = clock_now_ns();
    lg_window_init(&win, now + 400000000ull);
    assert_int_equal(lg_thrsample_start(s, now, &win), 0);
    usleep(500000);
    lg_thrsample_stop(s, &r);
    quit_all();
    assert_int_equal(write(fds[1], "x", 1), 1);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    close(fds[0]);
    close(fds[1]);
    close(quit_fd);
    lg_thrsample_free(s);

    assert_true(r.ticks >= 20); /* 200 planned; a loaded machine may skip some */
    assert_true(r.window_s > 0.3 && r.window_s < 0.5);
    assert_int_equal(r.threads, 3);
    assert_int_equal(r.left_out, 0);
    assert_true(r.cost_cores >= 0);
    st = &r.st[find(&r, "s1-wrk")];
    print_message("s1-wrk: run %.3f blocked %.3f cpu %.3f; ticks %llu\n", st->run, st->blocked,
                  st->cpu_cores, (unsigned long long)r.ticks);
    assert_int_equal(st->threads, 2);
    /* the spinner, never asleep: its CPU and run-queue time fill the window, but for what the
     * hypervisor steals on a busy VM (0.84 seen at load average 15): well above the idle
     * thread's 0 all the same */
    assert_true(st->run > 0.7 && st->run < 1.05);
    assert_true(st->blocked < 0.05);              /* the other is idle in epoll */
    assert_true(st->cpu_cores <= 1.2);
    st = &r.st[find(&r, "s2-wrk")];
    assert_int_equal(st->threads, 1);
    assert_true(st->blocked > 0.95); /* in read(): holds its request */
    assert_non_null(strstr(st->top_wait, "pipe_read")); /* anon_pipe_read, pipe_read */
}

static pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cm_cond = PTHREAD_COND_INITIALIZER;
static int cm_phase; /* 0: wait for work, untimed; 1: a long timed wait; 2: end */
static _Atomic pid_t cm_tid;   /* the committer's thread id, once named */
static atomic_bool cm_timed; /* the committer has gone on to its timed wait */

/* A committer: waits on its condition variable, first with no deadline, then with one. */
static void *committer(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "s1-commit");
    atomic_store(&cm_tid, (pid_t)syscall(SYS_gettid));
    pthread_mutex_lock(&cm_lock);
    while (cm_phase == 0)
        pthread_cond_wait(&cm_cond, &cm_lock);
    atomic_store(&cm_timed, true);
    while (cm_phase == 1) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 30;
        pthread_cond_timedwait(&cm_cond, &cm_lock, &ts);
    }
    pthread_mutex_unlock(&cm_lock);
    return NULL;
}

static void cm_set(int phase)
{
    pthread_mutex_lock(&cm_lock);
    cm_phase = phase;
    pthread_cond_broadcast(&cm_cond);
    pthread_mutex_unlock(&cm_lock);
}

/* One window of 200 ms at 500 Hz over this process's threads. */
static void sample_window(struct lg_thr_result *r)
{
    static struct lg_config cfg;
    struct lg_thrsample *s;
    struct lg_window win;
    uint64_t now;

    lg_config_defaults(&cfg);
    cfg.thread_hz = 500;
    s = lg_thrsample_new(&cfg);
    now = clock_now_ns();
    lg_window_init(&win, now + 200000000ull);
    assert_int_equal(lg_thrsample_start(s, now, &win), 0);
    usleep(300000);
    lg_thrsample_stop(s, r);
    lg_thrsample_free(s);
}

/* The committer is idle in an untimed wait, busy in a timed one (the group-commit window). */
static void test_thrsample_committer(void **state)
{
    struct lg_thr_result r;
    pthread_t t;
    const struct lg_sw_station *st;

    (void)state;
    cm_phase = 0;
    atomic_store(&cm_tid, 0);
    atomic_store(&cm_timed, false);
    assert_int_equal(pthread_create(&t, NULL, committer, NULL), 0);
    while (atomic_load(&cm_tid) == 0)
        usleep(1000);
    wait_asleep(atomic_load(&cm_tid)); /* in its untimed wait */
    sample_window(&r);
    st = &r.st[find(&r, "s1-commit")];
    assert_true(st->busy < 0.05);
    cm_set(1);
    while (!atomic_load(&cm_timed))
        usleep(1000);
    wait_asleep(atomic_load(&cm_tid)); /* in its timed wait */
    sample_window(&r);
    cm_set(2);
    pthread_join(t, NULL);
    st = &r.st[find(&r, "s1-commit")];
    assert_true(st->blocked > 0.95);
    assert_string_equal(st->top_wait + strcspn(st->top_wait, " "), " (timed)");
}

static atomic_int nnamed; /* named_idle threads that have their names */

static void *named_idle(void *arg)
{
    char name[16];

    snprintf(name, sizeof(name), "s1-wrk-%d", (int)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    atomic_fetch_add(&nnamed, 1);
    idle_until_quit();
    return NULL;
}

/* More threads than LG_THR_MAX: the first LG_THR_MAX are sampled, the rest counted. */
static void test_thrsample_limit(void **state)
{
    enum { NT = LG_THR_MAX + 6 };
    static struct lg_config cfg;
    static pthread_t t[NT];
    struct lg_thrsample *s;
    struct lg_window win;
    struct lg_thr_result r;
    uint64_t now;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.thread_hz = 200;
    quit_fd = eventfd(0, 0);
    assert_true(quit_fd >= 0);
    atomic_store(&quit, false);
    atomic_store(&nnamed, 0);
    for (int i = 0; i < NT; i++)
        assert_int_equal(pthread_create(&t[i], NULL, named_idle, (void *)(intptr_t)i), 0);
    for (uint64_t deadline = clock_now_ns() + 10000000000ull; atomic_load(&nnamed) < NT;) {
        if (clock_now_ns() > deadline)
            fail_msg("the threads did not name themselves in 10 s");
        usleep(1000);
    }
    s = lg_thrsample_new(&cfg);
    now = clock_now_ns();
    lg_window_init(&win, now + 100000000ull);
    assert_int_equal(lg_thrsample_start(s, now, &win), 0);
    usleep(200000);
    lg_thrsample_stop(s, &r);
    quit_all();
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    close(quit_fd);
    lg_thrsample_free(s);
    assert_int_equal(r.threads, LG_THR_MAX);
    assert_int_equal(r.left_out, NT - LG_THR_MAX);
    assert_int_equal(r.nst, 1);
    assert_int_equal(r.st[0].threads, LG_THR_MAX);
    assert_true(r.st[0].busy < 0.1 * LG_THR_MAX);
}

/* --thread-hz 0: no thread, nothing sampled. */
static void test_thrsample_off(void **state)
{
    static struct lg_config cfg;
    struct lg_thrsample *s;
    struct lg_window win;
    struct lg_thr_result r;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.thread_hz = 0;
    s = lg_thrsample_new(&cfg);
    lg_window_init(&win, clock_now_ns() + 1000000ull);
    assert_int_equal(lg_thrsample_start(s, clock_now_ns(), &win), 0);
    lg_thrsample_stop(s, &r);
    lg_thrsample_free(s);
    assert_int_equal(r.ticks, 0);
    assert_int_equal(r.nst, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sw_rules),
        cmocka_unit_test(test_sw_classify_captured),
        cmocka_unit_test(test_sw_classify_edges),
        cmocka_unit_test(test_sw_classify_syscall),
        cmocka_unit_test(test_sw_batch),
        cmocka_unit_test(test_sw_station_name),
        cmocka_unit_test(test_sw_count_wait),
        cmocka_unit_test(test_sw_group),
        cmocka_unit_test(test_thrsample_self),
        cmocka_unit_test(test_thrsample_committer),
        cmocka_unit_test(test_thrsample_limit),
        cmocka_unit_test(test_thrsample_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
