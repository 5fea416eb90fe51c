/*
 * log.c - see log.h. A line is formatted into a stack buffer and emitted with a single write(2)
 * so that lines from different threads never interleave.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int log_level_current = LOG_INFO;
static const char *log_prog = "?";

void log_init(const char *prog, enum log_level level)
{
    log_prog = prog;
    log_level_current = level;
}

int log_level_parse(const char *s, enum log_level *out)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[1024];
    char tname[16] = "main";
    struct timeval tv;
    struct tm tm;
    size_t n;
    va_list ap;
    int r;

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    pthread_getname_np(pthread_self(), tname, sizeof(tname));
    n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
    r = snprintf(line + n, sizeof(line) - n, ".%03d %s[%s] %c ", (int)(tv.tv_usec / 1000),
                 log_prog, tname, "EWID"[level]);
    if (r > 0)
        n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
    va_start(ap, fmt);
    r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (r > 0)
        n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
    if (n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to report it */
    }
}
