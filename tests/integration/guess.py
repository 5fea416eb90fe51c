#!/usr/bin/env python3
"""guess.py - how many password guesses for one username reach server2 through several server1s.

Sends GET /files/FILE with USER and a new wrong password each time, one request at a time, to
each server1 of --target in turn, --rate a second, for --seconds, and prints one line:
  sent=N denied=D limited=L other=O seconds=S per-minute=P retry-after-min=R
where denied counts the 401s (guesses that were checked), limited the 429s (each must carry a
Retry-After of at least 1 second: R is the smallest seen, 0 if one lacked it), and per-minute
is D scaled to a minute. Exit status 0 unless the driver itself failed."""
import argparse
import base64
import http.client
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", action="append", required=True, help="host:port of a server1")
    p.add_argument("--user", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--rate", type=float, default=50.0, help="guesses a second")
    a = p.parse_args()
    conns = []
    for t in a.target:
        host, port = t.rsplit(":", 1)
        conns.append(http.client.HTTPConnection(host, int(port), timeout=10))
    counts = {"denied": 0, "limited": 0, "other": 0}
    retry_min = None
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        due = t0 + sent / a.rate
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        i = sent % len(conns)
        cred = base64.b64encode(("%s:guess-%d" % (a.user, sent)).encode()).decode()
        try:
            conns[i].request("GET", "/files/" + a.file, headers={"Authorization": "Basic " + cred})
            r = conns[i].getresponse()
            r.read()
        except (OSError, http.client.HTTPException):
            host, port = a.target[i].rsplit(":", 1)
            conns[i] = http.client.HTTPConnection(host, int(port), timeout=10)
            continue
        sent += 1
        if r.status == 401:
            counts["denied"] += 1
        elif r.status == 429:
            counts["limited"] += 1
            try:
                ra = int(r.getheader("Retry-After", "0"))
            except ValueError:
                ra = 0
            retry_min = ra if retry_min is None else min(retry_min, ra)
        else:
            counts["other"] += 1
    took = time.monotonic() - t0
    print("sent=%d denied=%d limited=%d other=%d seconds=%.1f per-minute=%.0f retry-after-min=%d"
          % (sent, counts["denied"], counts["limited"], counts["other"], took,
             counts["denied"] * 60.0 / took, retry_min if retry_min is not None else -1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
