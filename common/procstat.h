/*
 * procstat.h - parsers for the Linux /proc files a resource monitor needs: /proc/PID/stat,
 * /proc/PID/status, /proc/PID/io, /proc/stat, /proc/diskstats, /proc/net/dev, and "Key: value"
 * files such as /proc/meminfo. The parsers are pure functions over a NUL-terminated text (so
 * they can be tested on captured samples); procstat_read_file() and procstat_find_comm() are
 * the only functions that touch the file system. Thread-safe (no global state).
 */
#ifndef PROCSTAT_H
#define PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCSTAT_COMM_LEN 64 /* the kernel's comm is at most 15 bytes; room for odd inputs */
#define PROCSTAT_DISK_NAME_LEN 32

/* /proc/PID/stat: the fields a monitor uses (times in clock ticks, rss in pages). */
struct procstat_pid {
    char comm[PROCSTAT_COMM_LEN]; /* between the first '(' and the last ')', may hold both */
    char state;
    uint64_t utime_ticks;
    uint64_t stime_ticks;
    uint64_t num_threads;
    uint64_t rss_pages;
};

/* /proc/PID/status: context switches and memory. */
struct procstat_status {
    uint64_t voluntary_ctxt;
    uint64_t nonvoluntary_ctxt;
    uint64_t vm_rss_kb;
    uint64_t threads;
};

/* /proc/PID/io (readable only by the owner or root). */
struct procstat_io {
    uint64_t rchar;
    uint64_t wchar;
    uint64_t read_bytes;  /* really fetched from storage */
    uint64_t write_bytes; /* really sent to storage */
};

/* /proc/stat: the aggregate "cpu" line, summed, and the number of "cpuN" lines. */
struct procstat_cpu {
    uint64_t total_ticks; /* user+nice+system+idle+iowait+irq+softirq+steal */
    uint64_t idle_ticks;  /* idle+iowait */
    unsigned ncpu;
    uint64_t ctxt; /* context switches since boot */
};

/* One line of /proc/diskstats. */
struct procstat_disk {
    char name[PROCSTAT_DISK_NAME_LEN];
    uint64_t sectors_read; /* 512-byte units, whatever the device's sector size */
    uint64_t sectors_written;
    uint64_t io_ticks_ms; /* time the device had I/O in flight: utilization */
};

/* One interface of /proc/net/dev. */
struct procstat_netdev {
    char name[PROCSTAT_DISK_NAME_LEN];
    uint64_t rx_bytes;
    uint64_t tx_bytes;
};

/*
 * Reads a whole (small) file into buf[0..cap-1], NUL-terminated. Returns the length, or -1 with
 * errno set (ENOENT when a process is gone, EACCES for another user's io, EFBIG if it does not
 * fit).
 */
ssize_t procstat_read_file(const char *path, char *buf, size_t cap);

int procstat_parse_pid_stat(const char *text, struct procstat_pid *out);
int procstat_parse_status(const char *text, struct procstat_status *out);
int procstat_parse_io(const char *text, struct procstat_io *out);
int procstat_parse_stat(const char *text, struct procstat_cpu *out);
/*
 * Parses /proc/diskstats into out[0..cap) and returns how many entries it wrote, skipping
 * loop and ram devices (procstat_disk_is_virtual), or -1 on a malformed line.
 */
int procstat_parse_diskstats(const char *text, struct procstat_disk *out, size_t cap);
bool procstat_disk_is_virtual(const char *name);
/* Parses /proc/net/dev into out[0..cap); returns the count, or -1 when malformed. */
int procstat_parse_netdev(const char *text, struct procstat_netdev *out, size_t cap);
/*
 * Finds the line "key<spaces>value" (key includes its ':', e.g. "MemTotal:") and stores the
 * first number of the value. Returns 0, or -1 when the key is absent or not followed by one.
 */
int procstat_key_u64(const char *text, const char *key, uint64_t *out);
/* Copies the rest of the line after "key" (e.g. "model name"), trimmed of ' ', '\t' and ':'. */
int procstat_key_str(const char *text, const char *key, char *out, size_t cap);

/*
 * Sums voluntary and involuntary context switches over every thread of process pid
 * (/proc/PID/task/TID/status; /proc/PID/status alone counts the main thread only). buf (cap
 * bytes) is scratch space. Returns the number of threads read, or -1 if the process is gone.
 */
int procstat_task_ctxt(pid_t pid, char *buf, size_t cap, uint64_t *voluntary,
                       uint64_t *nonvoluntary);

/* Called by procstat_scan_comm for each process whose comm is comms[index]. */
typedef void (*procstat_comm_cb)(size_t index, pid_t pid, void *arg);

/*
 * Reads /proc/PID/comm of every process once and calls cb for each one whose comm is exactly
 * one of comms[0..n). Returns the number of matches, or -1 if /proc cannot be listed.
 */
int procstat_scan_comm(const char *const *comms, size_t n, procstat_comm_cb cb, void *arg);

#endif /* PROCSTAT_H */
