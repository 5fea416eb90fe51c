/*
 * procstat.c - see procstat.h. Numbers are parsed by hand (digits only, overflow checked), so a
 * truncated or garbled file is an error rather than a silent zero.
 */
#include "procstat.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ssize_t procstat_read_file(const char *path, char *buf, size_t cap)
{
    size_t len = 0;
    int fd;

    if (cap == 0) {
        errno = EINVAL;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            goto err;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap - 1) {
            errno = EFBIG;
            goto err;
        }
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;

err : {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}
}

/* Skips blanks, then parses an unsigned decimal; *p is left after it. */
/* Reads the decimal digits at *s (at least one, no overflow) and advances *s past them. */
static int parse_digits(const char **s, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;

    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        p++;
    }
    *s = p;
    *out = v;
    return 0;
}

static int next_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    if (parse_digits(&s, &v) < 0)
        return -1;
    if (*s != '\0' && !isspace((unsigned char)*s))
        return -1;
    *p = s;
    *out = v;
    return 0;
}

/* Skips one blank-separated token; -1 if there is none on this line. */
static int skip_token(const char **p)
{
    const char *s = *p;

    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0' || *s == '\n')
        return -1;
    while (*s != '\0' && !isspace((unsigned char)*s))
        s++;
    *p = s;
    return 0;
}

/* Parses the tokens of one line at *p: values[i] receives token want[i] (ascending indexes). */
static int parse_tokens(const char **p, const unsigned *want, uint64_t *values, size_t n)
{
    unsigned tok = 0;

    for (size_t i = 0; i < n; i++) {
        while (tok < want[i]) {
            if (skip_token(p) < 0)
                return -1;
            tok++;
        }
        if (next_u64(p, &values[i]) < 0)
            return -1;
        tok++;
    }
    return 0;
}

int procstat_parse_pid_stat(const char *text, struct procstat_pid *out)
{
    /* Tokens after the state letter: proc(5) field k is token k - 4 (ppid, field 4, is 0). */
    static const unsigned want[] = {10, 11, 16, 20}; /* utime stime num_threads rss */
    const char *open = strchr(text, '(');
    const char *close = strrchr(text, ')');
    const char *p;
    uint64_t v[4];
    size_t len;

    if (open == NULL || close == NULL || close < open)
        return -1;
    len = (size_t)(close - open - 1);
    if (len >= sizeof(out->comm))
        len = sizeof(out->comm) - 1;
    p = close + 1;
    while (*p == ' ')
        p++;
    if (*p == '\0' || isspace((unsigned char)*p))
        return -1;
    out->state = *p;
    p++;
    if (parse_tokens(&p, want, v, 4) < 0)
        return -1;
    memcpy(out->comm, open + 1, len);
    out->comm[len] = '\0';
    out->utime_ticks = v[0];
    out->stime_ticks = v[1];
    out->num_threads = v[2];
    out->rss_pages = v[3];
    return 0;
}

/* The start of the line that begins with key, or NULL. */
static const char *find_line(const char *text, const char *key)
{
    size_t klen = strlen(key);
    const char *p = text;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, key, klen) == 0)
            return p;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

int procstat_key_u64(const char *text, const char *key, uint64_t *out)
{
    const char *p = find_line(text, key);

    if (p == NULL)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == '\t' || *p == ':')
        p++;
    return parse_digits(&p, out);
}

int procstat_key_str(const char *text, const char *key, char *out, size_t cap)
{
    const char *p = find_line(text, key);
    const char *end;
    size_t len;

    if (p == NULL || cap == 0)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == '\t' || *p == ':')
        p++;
    end = strchr(p, '\n');
    if (end == NULL)
        end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    len = (size_t)(end - p);
    if (len >= cap)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

int procstat_parse_status(const char *text, struct procstat_status *out)
{
    struct procstat_status st = {0};

    if (procstat_key_u64(text, "voluntary_ctxt_switches:", &st.voluntary_ctxt) < 0 ||
        procstat_key_u64(text, "nonvoluntary_ctxt_switches:", &st.nonvoluntary_ctxt) < 0 ||
        procstat_key_u64(text, "Threads:", &st.threads) < 0)
        return -1;
    /* Kernel threads and zombies have no VmRSS line. */
    if (procstat_key_u64(text, "VmRSS:", &st.vm_rss_kb) < 0)
        st.vm_rss_kb = 0;
    *out = st;
    return 0;
}

int procstat_parse_io(const char *text, struct procstat_io *out)
{
    struct procstat_io io;

    if (procstat_key_u64(text, "rchar:", &io.rchar) < 0 ||
        procstat_key_u64(text, "wchar:", &io.wchar) < 0 ||
        procstat_key_u64(text, "read_bytes:", &io.read_bytes) < 0 ||
        procstat_key_u64(text, "write_bytes:", &io.write_bytes) < 0)
        return -1;
    *out = io;
    return 0;
}

int procstat_parse_stat(const char *text, struct procstat_cpu *out)
{
    static const unsigned want[] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct procstat_cpu c = {0};
    const char *p = find_line(text, "cpu ");
    uint64_t v[8];

    if (p == NULL)
        return -1;
    p += 3;
    if (parse_tokens(&p, want, v, 8) < 0)
        return -1;
    for (size_t i = 0; i < 8; i++)
        c.total_ticks += v[i];
    c.idle_ticks = v[3] + v[4];
    for (p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9')
            c.ncpu++;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    if (procstat_key_u64(text, "ctxt ", &c.ctxt) < 0)
        c.ctxt = 0;
    *out = c;
    return 0;
}

bool procstat_disk_is_virtual(const char *name)
{
    return strncmp(name, "loop", 4) == 0 || strncmp(name, "ram", 3) == 0 ||
           strncmp(name, "zram", 4) == 0;
}

/* Copies the token at *p (up to a blank or ':' when colon) into name; -1 if empty/too long. */
static int take_name(const char **p, char *name, size_t cap, bool colon)
{
    const char *s = *p;
    size_t len = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    while (s[len] != '\0' && !isspace((unsigned char)s[len]) && !(colon && s[len] == ':'))
        len++;
    if (len == 0 || len >= cap)
        return -1;
    memcpy(name, s, len);
    name[len] = '\0';
    *p = s + len;
    return 0;
}

int procstat_parse_diskstats(const char *text, struct procstat_disk *out, size_t cap)
{
    /* After "major minor name": token 2 sectors read, 6 sectors written, 9 io_ticks. */
    static const unsigned want[] = {2, 6, 9};
    const char *line = text;
    int n = 0;

    while (line != NULL && *line != '\0') {
        const char *p = line;
        const char *next = strchr(line, '\n');
        struct procstat_disk d;
        uint64_t v[3];
        uint64_t major;
        uint64_t minor;

        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0')
            goto next_line;
        if (next_u64(&p, &major) < 0 || next_u64(&p, &minor) < 0 ||
            take_name(&p, d.name, sizeof(d.name), false) < 0 || parse_tokens(&p, want, v, 3) < 0)
            return -1;
        if (procstat_disk_is_virtual(d.name))
            goto next_line;
        d.sectors_read = v[0];
        d.sectors_written = v[1];
        d.io_ticks_ms = v[2];
        if ((size_t)n < cap)
            out[n++] = d;
    next_line:
        line = next != NULL ? next + 1 : NULL;
    }
    return n;
}

int procstat_parse_netdev(const char *text, struct procstat_netdev *out, size_t cap)
{
    static const unsigned want[] = {0, 8}; /* rx bytes, tx bytes */
    const char *line = text;
    int n = 0;

    while (line != NULL && *line != '\0') {
        const char *next = strchr(line, '\n');
        const char *colon = strchr(line, ':');
        const char *p = line;
        struct procstat_netdev d;
        uint64_t v[2];

        size_t len = next != NULL ? (size_t)(next - line) : strlen(line);

        /* The two header lines have '|' and no ':'. */
        if (colon == NULL || (next != NULL && colon > next) || memchr(line, '|', len) != NULL)
            goto next_line;
        if (take_name(&p, d.name, sizeof(d.name), true) < 0 || *p != ':')
            return -1;
        p++;
        if (parse_tokens(&p, want, v, 2) < 0)
            return -1;
        d.rx_bytes = v[0];
        d.tx_bytes = v[1];
        if ((size_t)n < cap)
            out[n++] = d;
    next_line:
        line = next != NULL ? next + 1 : NULL;
    }
    return n;
}

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

int procstat_scan_comm(const char *const *comms, size_t n, procstat_comm_cb cb, void *arg)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    int found = 0;

    if (dir == NULL)
        return -1;
    for (;;) {
        char path[300]; /* d_name is up to 255 bytes */
        char comm[PROCSTAT_COMM_LEN];
        ssize_t len;

        de = readdir(dir);
        if (de == NULL)
            break;
        if (!all_digits(de->d_name))
            continue;
        snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
        len = procstat_read_file(path, comm, sizeof(comm));
        if (len <= 0)
            continue; /* gone meanwhile */
        if (comm[len - 1] == '\n')
            comm[len - 1] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (strcmp(comm, comms[i]) == 0) {
                long pid = 0;
                for (const char *s = de->d_name; *s != '\0'; s++)
                    pid = pid * 10 + (*s - '0');
                cb(i, (pid_t)pid, arg);
                found++;
                break;
            }
        }
    }
    closedir(dir);
    return found;
}

int procstat_task_ctxt(pid_t pid, char *buf, size_t cap, uint64_t *voluntary,
                       uint64_t *nonvoluntary)
{
    char path[320];
    DIR *dir;
    struct dirent *de;
    int n = 0;

    *voluntary = 0;
    *nonvoluntary = 0;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    dir = opendir(path);
    if (dir == NULL)
        return -1;
    for (;;) {
        struct procstat_status st;

        de = readdir(dir);
        if (de == NULL)
            break;
        if (!all_digits(de->d_name))
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, de->d_name);
        if (procstat_read_file(path, buf, cap) < 0 || procstat_parse_status(buf, &st) < 0)
            continue; /* the thread exited meanwhile */
        *voluntary += st.voluntary_ctxt;
        *nonvoluntary += st.nonvoluntary_ctxt;
        n++;
    }
    closedir(dir);
    return n;
}
