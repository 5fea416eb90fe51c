/*
 * clock.h - monotonic time in nanoseconds; wall-clock seconds; an epoch time in ms as text.
 * Thread-safe.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Seconds since the epoch, to the last tick (the coarse clock: no system call). */
static inline int64_t clock_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec;
}

/* Epoch milliseconds as UTC "2024-01-31T12:00:00.123Z" (24 characters) into out. */
static inline void clock_format_epoch_ms(uint64_t ms, char *out, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    size_t n;

    gmtime_r(&t, &tm);
    n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%03uZ", (unsigned)(ms % 1000));
}

#endif /* CLOCK_H */
