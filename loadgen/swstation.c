/*
 * swstation.c - see swstation.h. The wait channel names differ between kernels
 * (futex_wait_queue_me, futex_wait_queue, futex_do_wait; ep_poll, do_epoll_wait) and may carry
 * a compiler suffix (".isra.0", ".constprop.0"): idle waits are matched by prefix.
 */
#include "swstation.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

static const struct lg_sw_rule rules[] = {
    {"lg-wrk-", LG_SW_IDLE_EPOLL, false, true, false},
    {"s1-wrk-", LG_SW_IDLE_EPOLL, false, true, false},
    {"s1-commit", LG_SW_IDLE_FUTEX, false, false, true},
    {"s2-wrk-", LG_SW_IDLE_EPOLL, false, false, false},
    {"s2-proc-", LG_SW_IDLE_EPOLL, false, false, false},
    {"redis-server", LG_SW_IDLE_EPOLL, true, false, false},
};

static const char *const epoll_waits[] = {"do_epoll_wait", "do_epoll_pwait", "ep_poll"};
static const char *const futex_waits[] = {"futex_"};

const struct lg_sw_rule *lg_sw_rule_of(const char *comm)
{
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        size_t len = strlen(rules[i].name);
        if (rules[i].name[len - 1] == '-' ? strncmp(comm, rules[i].name, len) == 0
                                          : strcmp(comm, rules[i].name) == 0)
            return &rules[i];
    }
    return NULL;
}

bool lg_sw_is_batch(const char *station)
{
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        size_t len = strlen(rules[i].name);
        if (rules[i].name[len - 1] == '-')
            len--;
        if (strlen(station) == len && strncmp(station, rules[i].name, len) == 0)
            return rules[i].batch;
    }
    return false;
}

static bool starts_any(const char *s, const char *const *prefixes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

enum lg_sw_state lg_sw_classify(const struct lg_sw_rule *rule, const char *wchan)
{
    if (wchan[0] == '\0' || wchan[0] == '\n' || (wchan[0] == '0' && (wchan[1] == '\0' ||
                                                                      wchan[1] == '\n')))
        return LG_SW_RUN;
    if (rule->idle == LG_SW_IDLE_EPOLL &&
        starts_any(wchan, epoll_waits, sizeof(epoll_waits) / sizeof(epoll_waits[0])))
        return LG_SW_IDLE;
    if (rule->idle == LG_SW_IDLE_FUTEX &&
        starts_any(wchan, futex_waits, sizeof(futex_waits) / sizeof(futex_waits[0])))
        return LG_SW_IDLE; /* when the system call is not known */
    return LG_SW_BLOCKED;
}

bool lg_sw_wants_syscall(const struct lg_sw_rule *rule, const char *wchan)
{
    return rule->idle == LG_SW_IDLE_FUTEX &&
           starts_any(wchan, futex_waits, sizeof(futex_waits) / sizeof(futex_waits[0]));
}

/* "NR ARG1 ARG2 ARG3 ARG4 ... SP PC": futex(uaddr, op, val, timeout, ...). */
enum lg_sw_state lg_sw_classify_syscall(const char *syscall)
{
    unsigned long long v[5];
    const char *p = syscall;
    char *end;

    if (strncmp(syscall, "running", 7) == 0)
        return LG_SW_RUN;
    for (int i = 0; i < 5; i++) {
        errno = 0;
        v[i] = strtoull(p, &end, 0);
        if (end == p || errno != 0)
            return LG_SW_BLOCKED;
        p = end;
    }
    return v[0] == (unsigned long long)SYS_futex && v[4] == 0 ? LG_SW_IDLE : LG_SW_BLOCKED;
}

void lg_sw_station_name(const char *comm, char *out, size_t cap)
{
    size_t len = strlen(comm);

    while (len > 0 && comm[len - 1] >= '0' && comm[len - 1] <= '9')
        len--;
    if (len > 0 && len < strlen(comm) && comm[len - 1] == '-')
        len--;
    if (len == 0) /* a name that is all digits stays as it is */
        len = strlen(comm);
    snprintf(out, cap, "%.*s", (int)len, comm);
}

void lg_sw_count_wait(struct lg_sw_thread *t, const char *wchan)
{
    char name[LG_SW_WCHAN];
    size_t len = strcspn(wchan, "\n");

    snprintf(name, sizeof(name), "%.*s", (int)len, wchan);
    for (size_t i = 0; i < LG_SW_WAITS; i++) {
        if (t->wait_n[i] == 0) {
            snprintf(t->wait[i], sizeof(t->wait[i]), "%s", name);
            t->wait_n[i] = 1;
            return;
        }
        if (strcmp(t->wait[i], name) == 0) {
            t->wait_n[i]++;
            return;
        }
    }
}

/* The most frequent wait channel of the threads of station st among t[0..n). */
static void top_wait(const struct lg_sw_thread *t, size_t n, struct lg_sw_station *st)
{
    uint64_t total = 0;
    uint64_t best = 0;

    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].station, st->name) != 0)
            continue;
        for (size_t w = 0; w < LG_SW_WAITS && t[i].wait_n[w] > 0; w++) {
            uint64_t sum = 0;
            total += t[i].wait_n[w];
            for (size_t j = 0; j < n; j++) {
                if (strcmp(t[j].station, st->name) != 0)
                    continue;
                for (size_t v = 0; v < LG_SW_WAITS && t[j].wait_n[v] > 0; v++)
                    if (strcmp(t[j].wait[v], t[i].wait[w]) == 0)
                        sum += t[j].wait_n[v];
            }
            if (sum > best) {
                best = sum;
                snprintf(st->top_wait, sizeof(st->top_wait), "%s", t[i].wait[w]);
            }
        }
    }
    st->top_wait_frac = total > 0 ? (double)best / (double)total : 0;
}

size_t lg_sw_group(const struct lg_sw_thread *t, size_t n, uint64_t ticks, double window_s,
                   struct lg_sw_station *out, size_t cap, unsigned *dropped)
{
    size_t ns = 0;

    if (dropped != NULL)
        *dropped = 0;
    if (ticks == 0 || !(window_s > 0))
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct lg_sw_station *st = NULL;
        double cpu = t[i].cpu_s / window_s;
        double run, blocked;

        for (size_t s = 0; s < ns; s++)
            if (strcmp(out[s].name, t[i].station) == 0)
                st = &out[s];
        if (st == NULL) {
            if (ns == cap) {
                bool counted = false;
                for (size_t j = 0; j < i; j++)
                    counted = counted || strcmp(t[j].station, t[i].station) == 0;
                if (dropped != NULL && !counted)
                    (*dropped)++;
                continue;
            }
            st = &out[ns++];
            memset(st, 0, sizeof(*st));
            snprintf(st->name, sizeof(st->name), "%s", t[i].station);
            st->nested = t[i].nested;
            st->pinned = t[i].pinned;
        }
        if (t[i].present * 2 >= ticks)
            st->threads++;
        run = t[i].exact ? (t[i].cpu_s + t[i].wait_s) / window_s : (double)t[i].run / (double)ticks;
        run = run < 1 ? run : 1;
        blocked = (double)t[i].blocked / (double)ticks;
        st->run += run;
        st->blocked += blocked < 1 - run ? blocked : 1 - run;
        st->cpu_cores += cpu;
        if (cpu > st->cpu_max)
            st->cpu_max = cpu;
    }
    for (size_t s = 0; s < ns; s++) {
        if (out[s].threads == 0)
            out[s].threads = 1;
        out[s].busy = out[s].run + out[s].blocked;
        top_wait(t, n, &out[s]);
    }
    return ns;
}
