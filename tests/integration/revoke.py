#!/usr/bin/env python3
"""revoke.py - how long an old password keeps working after an account change is
acknowledged. Several keep-alive connections to each server1 in WATCH ask for FILE with
USER:OLD as fast as they can (so every server1 has it cached); after a warm-up, one request to
CHANGER changes the password (PUT /users/USER, password=NEW) or deletes the account
(--delete), or, with --run CMD, the command CMD (split as the shell would, no shell run:
`server2 admin ... reset USER`) makes it. When its 204 has been read (CMD has exited), the clock
starts; the watchers go on for --after seconds.

With --freeze PID MS, that process (a watched server1) is stopped (SIGSTOP) just before the
change is sent and continued MS later: the change must not be answered before it has caught
up, so its latency is at least MS.

Prints one line:
  STATUS sent-after=N ok-after=K ok-before=B last-ok=Tms took=Dms
where STATUS is the change's HTTP status (with --run: "exit=" and CMD's exit status), N counts
requests sent after the 204 was received, K how many of them got 200 (must be
0), B the 200s before the change, last-ok the time of the last 200 relative to the 204
(negative: before it), and took the change's own latency. Exit status 0 unless the driver
itself failed. Over HTTPS when the run is (ITEST_TLS=1: itls.py)."""
import argparse
import base64
import http.client
import os
import shlex
import subprocess
import signal
import sys
import threading
import time
import urllib.parse

import itls


def connection(host, port, timeout):
    """An HTTP/1.1 connection to server1, over TLS if the run is."""
    if itls.enabled():
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=itls.context())
    return http.client.HTTPConnection(host, port, timeout=timeout)


def split_hostport(hostport):
    host, port = hostport.rsplit(":", 1)
    return host, int(port)


def basic(user, pw):
    return "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--watch", action="append", required=True, help="host:port of a server1")
    p.add_argument("--changer", help="host:port of the server1 that changes (unless --run)")
    p.add_argument("--user", required=True)
    p.add_argument("--old", required=True)
    p.add_argument("--new", default="")
    p.add_argument("--delete", action="store_true")
    p.add_argument("--file", required=True)
    p.add_argument("--conns", type=int, default=3, help="connections per watched server1")
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--after", type=float, default=0.5)
    p.add_argument("--freeze", nargs=2, type=int, metavar=("PID", "MS"))
    p.add_argument("--run", metavar="CMD", help="make the change with this command instead")
    a = p.parse_args()
    if not a.run and not a.changer:
        p.error("--changer or --run is needed")

    stop = threading.Event()
    lock = threading.Lock()
    log = []  # (sent, received, status)
    errors = []
    auth = basic(a.user, a.old)

    def watch(hostport):
        host, port = hostport.rsplit(":", 1)
        c = connection(host, int(port), 10)
        mine = []
        try:
            while not stop.is_set():
                t0 = time.monotonic()
                c.request("GET", "/files/" + a.file, headers={"Authorization": auth})
                r = c.getresponse()
                r.read()
                mine.append((t0, time.monotonic(), r.status))
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    c = connection(host, int(port), 10)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        with lock:
            log.extend(mine)

    threads = [threading.Thread(target=watch, args=(w,)) for w in a.watch for _ in range(a.conns)]
    for t in threads:
        t.start()
    time.sleep(a.warmup)
    c = None if a.run else connection(*split_hostport(a.changer), 30)
    thaw = None
    t_sent = time.monotonic()  # (before the stop: a timer never fires early, so took >= MS)
    if a.freeze:
        os.kill(a.freeze[0], signal.SIGSTOP)
        thaw = threading.Timer(a.freeze[1] / 1000.0, os.kill, (a.freeze[0], signal.SIGCONT))
        thaw.start()
    if a.run:
        done = subprocess.run(shlex.split(a.run), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, check=False, timeout=60)
        t204 = time.monotonic()
        status = "exit=%d" % done.returncode
    else:
        if a.delete:
            c.request("DELETE", "/users/" + a.user, headers={"Authorization": auth})
        else:
            body = urllib.parse.urlencode({"password": a.new})
            c.request("PUT", "/users/" + a.user, body=body,
                      headers={"Authorization": auth,
                               "Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse()
        r.read()
        t204 = time.monotonic()
        status = r.status
    if thaw is not None:
        thaw.join()
    time.sleep(a.after)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        print("driver error: %s" % errors[0])
        return 1
    after = [x for x in log if x[0] > t204]
    ok_after = sum(1 for x in after if x[2] == 200)
    ok_before = sum(1 for x in log if x[0] <= t204 and x[2] == 200)
    oks = [x[1] for x in log if x[2] == 200]
    last = (max(oks) - t204) * 1000 if oks else float("nan")
    print("%s sent-after=%d ok-after=%d ok-before=%d last-ok=%.1fms took=%dms"
          % (status, len(after), ok_after, ok_before, last, (t204 - t_sent) * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
