/*
 * main.c - server2, the auth backend: flags -> config -> libraries -> s2_server_run.
 * Exit status: 0 clean shutdown or --help/--version, 2 bad flags, 1 failure to start or serve.
 * `server2 admin ...` is the accounts' admin tool instead (admin.h, its own exit statuses).
 */
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "backend.h"
#include "config.h"
#include "ioloop.h"
#include "linkauth.h"
#include "log.h"
#include "server.h"

int main(int argc, char **argv)
{
    struct s2_config cfg;
    char err[S2_CONFIG_ERR_LEN];
    int rc;

    if (argc > 1 && strcmp(argv[1], "admin") == 0) /* server2 admin ...: admin.h */
        return s2_admin_main(argc - 1, argv + 1);
    s2_config_defaults(&cfg);
    switch (s2_config_parse(&cfg, argc, argv, err)) {
    case S2_CONFIG_EXIT:
        return 0;
    case S2_CONFIG_ERROR:
        fprintf(stderr, "server2: %s\n", err);
        return 2;
    case S2_CONFIG_OK:
        break;
    }
    log_init("server2", cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    if (sodium_init() < 0) {
        fprintf(stderr, "server2: cannot initialise libsodium\n");
        return 1;
    }
    if (backend_library_init() < 0) {
        fprintf(stderr, "server2: cannot initialise the MySQL client library\n");
        return 1;
    }
    {
        uint8_t key[LINKAUTH_KEY_SIZE];
        char kerr[LINKAUTH_ERR_LEN];
        if (cfg.insecure_no_secret) {
            linkauth_insecure_key(key);
            log_warn("--insecure-no-secret: the link to server1 is not authenticated; anyone who "
                     "can connect may create accounts and guess passwords");
        } else if (linkauth_load_key(cfg.secret_file, key, kerr) < 0) {
            fprintf(stderr, "server2: %s\n", kerr);
            return 1;
        }
        s2_ioloop_set_link_key(key);
        sodium_memzero(key, sizeof(key));
    }
    if (cfg.backend.sentinel && !cfg.backend.has_sentinel_password)
        log_warn("the Sentinels are asked without a password (no --sentinel-password-file or "
                 "%s): whoever can reach them may name another primary, which would get the "
                 "database password", S2_SENTINEL_PASSWORD_ENV);
    rc = s2_server_run(&cfg);
    backend_library_end();
    backend_url_wipe(&cfg.backend);
    return rc;
}
