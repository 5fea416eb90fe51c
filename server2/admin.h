/*
 * admin.h - `server2 admin`: the administrator's tool for the accounts in server2's database
 * (list, create, reset a password, delete, lock, unlock), a mode of server2's own binary:
 *   server2 admin --backend URL [flags] list | create NAME | reset NAME | delete NAME |
 *                 lock NAME | unlock NAME
 *
 * DESIGN
 * - It works on the database itself, like redis-cli or mysql, so it needs no running server2;
 *   it does so through server2's own code: the same flags for the database (config.h), the
 *   same backend_ops (backend.h) and the same records (record.h). Every change to an existing
 *   account is a REPLACE: a compare-and-set that appends the account to the database's change
 *   feed in the same atomic operation, exactly as a SETPASS or DELETE through server1 does.
 *   Every server2 on the database follows that feed and has its server1s forget the account
 *   (INVALIDATE); the tool then waits, as the server2 that made a change does, until no live
 *   server2 is behind the change (feed_behind, INVAL_WAIT_MS at most). So when it says the
 *   change is made, no server1 of any server2 on that database accepts the old password any
 *   more, from its cache or otherwise (docs/protocol.md, "Invalidation").
 * - A creation needs no invalidation: server1s cache only successes.
 * - Passwords (create, reset) come from --password-file or stdin (read without echo after a
 *   prompt on a terminal), never from argv (ps shows it); they are never printed and are
 *   wiped once hashed.
 * - Exit status: ADMIN_EXIT_*. Single-threaded and short-lived.
 */
#ifndef S2_ADMIN_H
#define S2_ADMIN_H

enum s2_admin_exit {
    ADMIN_EXIT_OK = 0,       /* done (also: nothing to do, e.g. lock of a locked account) */
    ADMIN_EXIT_NOTFOUND = 1, /* no such account (reset, delete, lock, unlock), or it exists
                              * (create) */
    ADMIN_EXIT_USAGE = 2,    /* bad flags, command, name or password: nothing was done */
    ADMIN_EXIT_FAILED = 3,   /* the database failed, or a change is made but not every
                              * server2 confirmed in time that its server1s forgot the old one */
};

#define ADMIN_CAS_TRIES 3 /* a change whose account changed meanwhile is tried this often */
#define ADMIN_POLL_MS 10  /* between two questions whether every server2 applied a change */

/* `server2 admin ...`: argv[0] is "admin". Returns the exit status (enum s2_admin_exit). */
int s2_admin_main(int argc, char **argv);

#endif /* S2_ADMIN_H */
