/*
 * threaded.h - threads mode: --workers threads, each a loopworker (loopworker.h) with its own
 * event loop, the server1 connections it accepted and its own backend connection, answering
 * every request on its own thread; they share the auth cache. The calling thread only takes
 * SIGTERM/SIGINT and stops them.
 */
#ifndef S2_THREADED_H
#define S2_THREADED_H

#include "config.h"

/* Serves on listen_fd until SIGTERM/SIGINT; returns the process exit code (0 = clean). */
int s2_threaded_run(const struct s2_config *cfg, int listen_fd);

#endif /* S2_THREADED_H */
