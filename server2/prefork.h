/*
 * prefork.h - processes mode: the parent forks --workers children that each accept on the
 * shared listening socket and answer their connections' requests synchronously with their own
 * database connection; the parent restarts children that die and forwards SIGTERM/SIGINT.
 */
#ifndef S2_PREFORK_H
#define S2_PREFORK_H

#include "config.h"

/* Serves on listen_fd until SIGTERM/SIGINT; returns the process exit code (0 = clean). */
int s2_prefork_run(const struct s2_config *cfg, int listen_fd);

#endif /* S2_PREFORK_H */
