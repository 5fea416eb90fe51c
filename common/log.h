/*
 * log.h - leveled, thread-safe logger. Each line is written to stderr with one write(2):
 * "2026-11-21 23:40:01.123 server1[s1-wrk-0] I message". Arguments are not evaluated when the
 * level is disabled. Never pass a password to these functions.
 */
#ifndef LOG_H
#define LOG_H

#include "compat.h"

enum log_level {
    LOG_ERROR = 0, /* something failed; the program may go on */
    LOG_WARN = 1,  /* unexpected but handled */
    LOG_INFO = 2,  /* start-up, shutdown, state changes (default) */
    LOG_DEBUG = 3, /* per-connection and per-request detail */
};

extern int log_level_current; /* set once at start-up, read by every thread */

/* Sets the program name shown on each line (a static string). */
void log_init(const char *prog, enum log_level level);
/* Parses "error|warn|info|debug"; returns -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);
void log_write(enum log_level level, const char *fmt, ...) PRINTF_FMT(2, 3);

#define log_at(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((int)(lvl) <= log_level_current)                                                       \
            log_write((lvl), __VA_ARGS__);                                                         \
    } while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif /* LOG_H */
