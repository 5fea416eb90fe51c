/*
 * server.c - see server.h. Start-up failures (port in use, bad listen address) are reported as
 * one line "server2: <what failed>" on stderr, since they happen before serving starts.
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "net.h"
#include "prefork.h"
#include "threaded.h"

#define LISTEN_BACKLOG 4096
#define FD_OVERHEAD 64 /* listener, eventfds, database connections, logs, ... */

/* Makes room for max_conns descriptors per worker (threads: all in this process) if the hard
 * limit allows. */
static void ensure_fd_limit(const struct s2_config *cfg)
{
    struct rlimit rl;
    rlim_t per_process = cfg->mode == S2_MODE_THREADS ? cfg->workers : 1;
    rlim_t need = (rlim_t)cfg->max_conns * per_process + FD_OVERHEAD + 4 * cfg->workers;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return;
    rl.rlim_cur = need <= rl.rlim_max ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < need)
        log_warn("descriptor limit is %llu, below the %llu that --max-conns %u needs; "
                 "connections past it will fail to be accepted",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)need, cfg->max_conns);
}

int s2_server_run(const struct s2_config *cfg)
{
    char err[NET_ERR_LEN];
    char desc[1024];
    int fd;
    int rc;

    ensure_fd_limit(cfg);
    fd = net_listen_tcp(cfg->listen_addr, cfg->port, false, LISTEN_BACKLOG, err);
    if (fd < 0) {
        fprintf(stderr, "server2: %s\n", err);
        return 1;
    }
    s2_config_describe(cfg, desc, sizeof(desc));
    log_info("%s", desc);
    if (strchr(cfg->listen_addr, ':') != NULL)
        log_info("listening on [%s]:%u", cfg->listen_addr, net_local_port(fd));
    else
        log_info("listening on %s:%u", cfg->listen_addr, net_local_port(fd));
    if (cfg->mode == S2_MODE_PROCESSES)
        rc = s2_prefork_run(cfg, fd);
    else
        rc = s2_threaded_run(cfg, fd);
    if (close(fd) < 0)
        log_warn("closing the listening socket failed");
    log_info("exiting with status %d", rc);
    return rc;
}
