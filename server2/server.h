/*
 * server.h - starts server2 from a validated config: raises the descriptor limit if
 * --max-conns needs it, binds the listening socket, logs "listening on ADDR:PORT", and runs
 * threads mode or processes mode until shutdown.
 */
#ifndef S2_SERVER_H
#define S2_SERVER_H

#include "config.h"

/* Returns the process exit code: 0 after a clean shutdown, 1 if start-up or serving failed. */
int s2_server_run(const struct s2_config *cfg);

#endif /* S2_SERVER_H */
