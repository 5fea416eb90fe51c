/*
 * attrib.h - who uses the machine besides the stack, on a shared machine: the processes that
 * --watch-comm matches but that are not the target's (another user's server1, a second server1
 * on another port), and the CPU used outside the watched processes, with the verdict that the
 * stack is not the bottleneck.
 *
 * The target's processes: the listening socket of the target's port (/proc/net/tcp and tcp6,
 * loopback targets only) has an owner uid, the target uid. A matched process is the target's
 * when it holds that socket (its /proc/PID/fd, readable for our own uid or as root); or, in a
 * --watch-comm group where no process was seen holding it, when its uid is the target uid
 * (server2, Redis and MariaDB listen on ports of their own); or when its parent is one of the
 * target's processes of the same group (nginx's workers). Every other match is foreign: it is
 * warned about once, before the first point (pid, user, comm, shortened command line), and
 * still counted in its group.
 *
 * Outside CPU: the machine's busy cores less the cores of every watched group (loadgen
 * included), never below 0. The stack is not the bottleneck when the busiest resource (the
 * largest demand) is the machine's CPU and more than LG_OUTSIDE_MOSTLY of its busy time is
 * outside the watched processes: then even an idle stack would leave that CPU mostly busy, and
 * the knee and the bottleneck measure the machine's other load, not the stack.
 *
 * DESIGN: the parsers and the decisions are pure functions (unit-tested on /proc fixtures);
 * lg_attrib_check reads /proc once, from the main thread, before the workers start.
 */
#ifndef LG_ATTRIB_H
#define LG_ATTRIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "monitor.h"

#define LG_OUTSIDE_MOSTLY 0.5  /* share of the busy CPU outside the stack that is "mostly" */
#define LG_ATTRIB_LISTEN_MAX 64 /* listening sockets of the target's port taken into account */
#define LG_ATTRIB_CMDLINE 80    /* a command line in a warning, at most (cut with "...") */
#define LG_ATTRIB_WARN_MAX 8    /* foreign processes named one by one; the rest counted */

/* What the foreign-process rule needs to know of one matched process. */
struct lg_attrib_proc {
    pid_t pid;
    pid_t ppid;
    uid_t uid;
    unsigned group; /* index of its --watch-comm name */
    bool listens;   /* holds a listening socket of the target's port */
};

/*
 * The listening TCP sockets of port in f, /proc/net/tcp or tcp6 read line by line (no size
 * limit): their inodes into inodes[0..max) and the uid owning the first into *uid (untouched
 * when none). Returns how many, or -1 when f is not such a table.
 */
int lg_attrib_listeners(FILE *f, uint16_t port, uint64_t *inodes, int max, uid_t *uid);
/* The inode of a /proc/PID/fd link's target "socket:[INODE]": 0, or -1 for anything else. */
int lg_attrib_socket_inode(const char *link, uint64_t *inode);
/* The real uid and the parent of /proc/PID/status text: 0, or -1. */
int lg_attrib_status(const char *text, uid_t *uid, pid_t *ppid);
/* /proc/PID/cmdline (len bytes, NUL-separated) as one line of at most cap - 1 bytes. */
void lg_attrib_cmdline(const char *raw, size_t len, char *out, size_t cap);
/*
 * Marks in foreign[0..n) the matched processes that are not the target's (the rule above;
 * target_uid: the owner of the target's listening socket). Returns how many.
 */
unsigned lg_attrib_foreign(const struct lg_attrib_proc *p, unsigned n, uid_t target_uid,
                           bool *foreign);
/*
 * Looks for foreign --watch-comm matches on this machine and warns about each (log_warn).
 * Nothing for a target that is not loopback or whose port has no listening socket here.
 * Returns the number of foreign processes.
 */
unsigned lg_attrib_check(const struct lg_config *cfg);

/*
 * The machine's busy cores outside the watched groups of m (loadgen included), >= 0, and
 * their share of the busy cores (0 when nothing was busy).
 */
void lg_attrib_outside(const struct lg_monitor_result *m, double *cores, double *share);
/* True when the busiest resource is the machine's CPU ("cpu") and share > LG_OUTSIDE_MOSTLY. */
bool lg_attrib_not_stack(const char *busiest, double share);

#endif /* LG_ATTRIB_H */
