/*
 * attrib.c - see attrib.h.
 */
#include "attrib.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "procstat.h"
#include "xalloc.h"

#define LG_ATTRIB_BUF (64u * 1024) /* a /proc/PID/status or cmdline */
#define LG_ATTRIB_PROCS 4096     /* matched processes examined, at most */

/* The next blank-separated field of *p (advanced past it) into out; false at the line's end. */
static bool next_field(const char **p, char *out, size_t cap)
{
    const char *s = *p;
    size_t n = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0' || *s == '\n')
        return false;
    while (*s != '\0' && *s != '\n' && *s != ' ' && *s != '\t') {
        if (n + 1 < cap)
            out[n++] = *s;
        s++;
    }
    out[n] = '\0';
    *p = s;
    return true;
}

/* One line of /proc/net/tcp{,6}: 1 for a listening socket of port (*inode, *uid), 0 for
 * another socket or a short line, -1 when malformed. */
static int listen_line(const char *line, uint16_t port, uint64_t *inode, uid_t *uid)
{
    char f[10][72];
    const char *p = line;
    const char *colon;
    unsigned long lport;
    char *end;
    int k = 0;

    while (k < 10 && next_field(&p, f[k], sizeof(f[k])))
        k++;
    if (k < 10)
        return 0; /* blank or short line */
    colon = strrchr(f[1], ':');
    if (colon == NULL)
        return -1;
    lport = strtoul(colon + 1, &end, 16);
    if (*end != '\0' || strcmp(f[3], "0A") != 0 || lport != port) /* 0A: TCP_LISTEN */
        return 0;
    *inode = strtoull(f[9], NULL, 10);
    *uid = (uid_t)strtoul(f[7], NULL, 10);
    return 1;
}

int lg_attrib_listeners(FILE *f, uint16_t port, uint64_t *inodes, int max, uid_t *uid)
{
    char *line = NULL;
    size_t cap = 0;
    int n = 0;

    if (getline(&line, &cap, f) < 0 || strstr(line, "local_address") == NULL)
        n = -1;
    while (n >= 0 && getline(&line, &cap, f) >= 0) {
        uint64_t ino;
        uid_t u;
        int r = listen_line(line, port, &ino, &u);

        if (r < 0)
            n = -1;
        else if (r == 1 && n < max) {
            if (n == 0)
                *uid = u;
            inodes[n++] = ino;
        }
    }
    free(line);
    return n;
}

/* lg_attrib_listeners of the file at path: -1 also when it cannot be opened. */
static int listeners_of(const char *path, uint16_t port, uint64_t *inodes, int max, uid_t *uid)
{
    FILE *f = fopen(path, "re");
    int n;

    if (f == NULL)
        return -1;
    n = lg_attrib_listeners(f, port, inodes, max, uid);
    fclose(f);
    return n;
}

int lg_attrib_socket_inode(const char *link, uint64_t *inode)
{
    char *end;

    if (strncmp(link, "socket:[", 8) != 0)
        return -1;
    *inode = strtoull(link + 8, &end, 10);
    return end != link + 8 && strcmp(end, "]") == 0 ? 0 : -1;
}

int lg_attrib_status(const char *text, uid_t *uid, pid_t *ppid)
{
    uint64_t u;
    uint64_t pp;

    if (procstat_key_u64(text, "Uid:", &u) < 0 || procstat_key_u64(text, "PPid:", &pp) < 0)
        return -1;
    *uid = (uid_t)u;
    *ppid = (pid_t)pp;
    return 0;
}

void lg_attrib_cmdline(const char *raw, size_t len, char *out, size_t cap)
{
    size_t n = 0;

    if (cap == 0)
        return;
    while (len > 0 && raw[len - 1] == '\0')
        len--;
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        unsigned char c = (unsigned char)raw[i];
        out[n++] = c == '\0' ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[n] = '\0';
    if (n < len && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

/* Whether p[i] is the target's: a listener, or same uid in a group without one, or a child. */
static bool own(const struct lg_attrib_proc *p, unsigned n, uid_t target_uid,
                const bool *group_listens, unsigned i, unsigned depth)
{
    if (p[i].listens || (!group_listens[p[i].group] && p[i].uid == target_uid))
        return true;
    if (depth >= 4) /* a parent chain of the same group, as deep as master/worker/helper */
        return false;
    for (unsigned j = 0; j < n; j++)
        if (j != i && p[j].pid == p[i].ppid && p[j].group == p[i].group)
            return own(p, n, target_uid, group_listens, j, depth + 1);
    return false;
}

unsigned lg_attrib_foreign(const struct lg_attrib_proc *p, unsigned n, uid_t target_uid,
                           bool *foreign)
{
    bool group_listens[LG_WATCH_MAX] = {false};
    unsigned count = 0;

    for (unsigned i = 0; i < n; i++)
        if (p[i].listens && p[i].group < LG_WATCH_MAX)
            group_listens[p[i].group] = true;
    for (unsigned i = 0; i < n; i++) {
        foreign[i] = p[i].group >= LG_WATCH_MAX || !own(p, n, target_uid, group_listens, i, 0);
        count += foreign[i];
    }
    return count;
}

struct scan {
    struct lg_attrib_proc *procs;
    unsigned n;
};

static void on_match(size_t index, pid_t pid, void *arg)
{
    struct scan *s = arg;

    if (s->n >= LG_ATTRIB_PROCS)
        return;
    s->procs[s->n].pid = pid;
    s->procs[s->n].group = (unsigned)index;
    s->n++;
}

/* Whether pid holds one of the sockets (its fd links; false when they cannot be read). */
static bool holds(pid_t pid, const uint64_t *inodes, int ninodes)
{
    char path[64];
    DIR *d;
    struct dirent *e;
    bool found = false;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (d == NULL)
        return false;
    while (!found && (e = readdir(d)) != NULL) {
        char link[64];
        char target[64];
        uint64_t ino;
        ssize_t len;

        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "/proc/%d/fd/%.16s", (int)pid, e->d_name);
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (lg_attrib_socket_inode(target, &ino) < 0)
            continue;
        for (int k = 0; k < ninodes; k++)
            if (inodes[k] == ino)
                found = true;
    }
    closedir(d);
    return found;
}

static void user_name(uid_t uid, char *out, size_t cap)
{
    struct passwd pw;
    struct passwd *res = NULL;
    char buf[1024];

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res != NULL)
        snprintf(out, cap, "%s", res->pw_name);
    else
        snprintf(out, cap, "%u", (unsigned)uid);
}

static void warn_one(const struct lg_config *cfg, const struct lg_attrib_proc *p, char *buf,
                     uid_t target_uid)
{
    char path[64];
    char user[64];
    char why[160];
    char cmd[LG_ATTRIB_CMDLINE + 1];
    ssize_t len;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)p->pid);
    len = -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) { /* its start is enough: it is cut anyway */
        len = read(fd, buf, LG_ATTRIB_CMDLINE + 1);
        close(fd);
    }
    lg_attrib_cmdline(buf, len > 0 ? (size_t)len : 0, cmd, sizeof(cmd));
    user_name(p->uid, user, sizeof(user));
    if (p->uid != target_uid) {
        char tuser[64];
        user_name(target_uid, tuser, sizeof(tuser));
        snprintf(why, sizeof(why), "another user than %s, who listens on port %u", tuser,
                 cfg->target.port);
    } else {
        snprintf(why, sizeof(why), "it does not hold port %u's listening socket",
                 cfg->target.port);
    }
    log_warn("--watch-comm %s matches a process that is not the target's (%s): pid %d, user "
             "%s, comm %s, cmdline '%s'; its CPU is counted as the stack's",
             cfg->watch_comm[p->group], why, (int)p->pid, user, cfg->watch_comm[p->group], cmd);
}

unsigned lg_attrib_check(const struct lg_config *cfg)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    const char *comms[LG_WATCH_MAX];
    uint64_t inodes[LG_ATTRIB_LISTEN_MAX];
    int ninodes = 0;
    uid_t target_uid = 0;
    bool have_uid = false;
    struct scan s = {0};
    bool *foreign;
    char *buf;
    unsigned nforeign;

    if (cfg->nwatch_comm == 0 || !lg_target_is_loopback((const struct sockaddr *)&cfg->target.addr))
        return 0;
    buf = xmalloc(LG_ATTRIB_BUF);
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        uid_t u = 0;
        int k = listeners_of(tables[t], cfg->target.port, inodes + ninodes,
                             LG_ATTRIB_LISTEN_MAX - ninodes, &u);
        if (k > 0 && !have_uid) {
            target_uid = u;
            have_uid = true;
        }
        if (k > 0)
            ninodes += k;
    }
    if (!have_uid) {
        log_debug("--watch-comm: nothing listens on port %u here: matches not checked",
                  cfg->target.port);
        free(buf);
        return 0;
    }
    for (unsigned i = 0; i < cfg->nwatch_comm; i++)
        comms[i] = cfg->watch_comm[i];
    s.procs = xcalloc(LG_ATTRIB_PROCS, sizeof(*s.procs));
    if (procstat_scan_comm(comms, cfg->nwatch_comm, on_match, &s) < 0)
        s.n = 0;
    for (unsigned i = 0; i < s.n; i++) {
        struct lg_attrib_proc *p = &s.procs[i];
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
        if (procstat_read_file(path, buf, LG_ATTRIB_BUF) < 0 ||
            lg_attrib_status(buf, &p->uid, &p->ppid) < 0) {
            p->uid = target_uid; /* gone: nothing to say about it */
            p->listens = true;
            continue;
        }
        p->listens = holds(p->pid, inodes, ninodes);
    }
    foreign = xcalloc(s.n + 1, sizeof(*foreign));
    nforeign = lg_attrib_foreign(s.procs, s.n, target_uid, foreign);
    for (unsigned i = 0, shown = 0; i < s.n; i++) {
        if (!foreign[i])
            continue;
        if (shown++ < LG_ATTRIB_WARN_MAX)
            warn_one(cfg, &s.procs[i], buf, target_uid);
    }
    if (nforeign > LG_ATTRIB_WARN_MAX)
        log_warn("--watch-comm: %u more processes that are not the target's",
                 nforeign - LG_ATTRIB_WARN_MAX);
    free(foreign);
    free(s.procs);
    free(buf);
    return nforeign;
}

void lg_attrib_outside(const struct lg_monitor_result *m, double *cores, double *share)
{
    double busy = m->machine_cpu * m->ncpu;
    double watched = 0;

    for (unsigned i = 0; i < m->nprocs; i++)
        watched += m->procs[i].cpu_cores;
    *cores = busy > watched ? busy - watched : 0;
    *share = busy > 0 ? *cores / busy : 0;
}

bool lg_attrib_not_stack(const char *busiest, double share)
{
    return busiest != NULL && strcmp(busiest, "cpu") == 0 && share > LG_OUTSIDE_MOSTLY;
}
