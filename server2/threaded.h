/*
 * threaded.h - threads mode: the calling thread runs the I/O loop (ioloop.h); --workers threads
 * each own one backend connection and answer batches of jobs taken from a shared queue.
 */
#ifndef S2_THREADED_H
#define S2_THREADED_H

#include "config.h"

/* Serves on listen_fd until SIGTERM/SIGINT; returns the process exit code (0 = clean). */
int s2_threaded_run(const struct s2_config *cfg, int listen_fd);

#endif /* S2_THREADED_H */
