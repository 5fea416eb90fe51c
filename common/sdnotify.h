/*
 * sdnotify.h - tells the service manager how a daemon is doing: the sd_notify(3) protocol,
 * one datagram of "KEY=VALUE" lines to the AF_UNIX socket named in $NOTIFY_SOCKET (a path, or
 * an abstract name after '@'). systemd documents the protocol as stable and meant to be
 * written anew, so it is done here without libsystemd. Without $NOTIFY_SOCKET (not started by
 * systemd with Type=notify) every call does nothing and returns 0.
 * Thread-safe (no state); the servers call it from their main thread only, since systemd takes
 * notifications from the main process alone (NotifyAccess=main).
 */
#ifndef SDNOTIFY_H
#define SDNOTIFY_H

/* The longest message sdnotify_send takes (systemd reads a datagram of up to 4 KiB). */
#define SDNOTIFY_MSG_MAX 4096

/*
 * Sends state (e.g. "READY=1", lines joined by '\n') to $NOTIFY_SOCKET, as it is. Returns
 * 0 when sent or when there is no $NOTIFY_SOCKET; -1 with errno set when it cannot be sent
 * (EINVAL: a socket name that is neither a path nor '@name', or state empty or too long;
 * ENAMETOOLONG: a name too long for sockaddr_un; else socket's or sendto's errno).
 */
int sdnotify_send(const char *state);

/*
 * sdnotify_send, and on failure one warning in the log naming state and the error (the
 * servers keep serving: a missed notification is the service manager's to time out).
 */
void sdnotify_or_warn(const char *state);

/*
 * A reload begins: "RELOADING=1" with MONOTONIC_USEC, the CLOCK_MONOTONIC time in microseconds,
 * as systemd asks of Type=notify-reload services (and takes from the others), through
 * sdnotify_or_warn; "READY=1" ends the reload.
 */
void sdnotify_reloading_or_warn(void);

#endif /* SDNOTIFY_H */
