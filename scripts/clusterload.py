#!/usr/bin/env python3
"""clusterload.py - the closed-loop load of scripts/cluster-failover.sh, and its verdict.

  clusterload.py run --url http[s]://ADDR:PORT --out JOURNAL --seed-file F --tag T
                     [--cacert CA] [--threads N] [--new-percent P] [--max-seconds S]
                     [--stop-file F]
      N threads (default 4), each on one keep-alive connection, one request at a time, no
      think time: P% (default 30) create a new account (POST /users, a unique name), the rest
      GET one of the operator's files f1k-00..f1k-15 (1 KiB) as one of the accounts this thread
      created. Every request is journalled: start and end (ms since the epoch), kind (new, get),
      result (the status, or connect / reset / timeout / bad-response) and, for a creation, the
      username. Passwords are never written: each is HMAC-SHA256(seed, username), the seed in a
      file of mode 0600. After a failed request a thread waits 20 ms (a client backing off; it
      also keeps a failing loop from eating the CPU the recovering servers need). It writes
      JOURNAL.ready once every thread has its first account, and stops when --stop-file exists
      or after --max-seconds (default 600), then writes JOURNAL.
  clusterload.py report --faults FILE [--period MS] JOURNAL...
      FILE has one line per fault: "NAME KILL_MS RESTART_MS READY_MS TARGET_MS" (the process
      was SIGKILLed at KILL_MS, started again at RESTART_MS, back in service at READY_MS; its
      error windows may last TARGET_MS). A failed request belongs to the last kill or restart
      before its end: one in flight at a kill that failed after it counts toward that kill,
      not toward the period before (periods: after the kill = KILL_MS to RESTART_MS, after
      the restart = RESTART_MS to the next KILL_MS). Prints per fault the failed requests by
      kind and class, the error window of the kill and of the restart (from the first failed
      request's start, or the kill or restart if that request was already in flight, to the
      last one's end), and the throughput (answered requests/s) in the PERIOD (default
      3000 ms) before the kill, from the kill to READY_MS, and in the PERIOD after READY_MS.
      Exit 1 if a window exceeds its target.
  clusterload.py verify --url URL --seed-file F [--cacert CA] [--threads N] JOURNAL...
      Logs in (GET /files/f1k-00 with Basic credentials) with every account whose creation was
      answered 201. 200: there; 401: lost; anything else is asked again for up to 30 s. Prints
      "lost = N"; exit 1 if N > 0 or an account could not be checked either way.
  An https:// URL needs --cacert: the server's certificate must chain to CA (PEM) and name
  ADDR (TLS 1.2 or later; each connection's handshake is part of its connect).

Built on tests/faultlib: its HTTP/1.1 client, read-back, attribution of errors to faults.
"""
import argparse
import hashlib
import hmac
import os
import random
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from faultlib.faults import attribute, read_kills, window  # noqa: E402
from faultlib.http import Conn, ConnectFailed, HttpError, basic, tls_context  # noqa: E402
from faultlib.ledger import ask, print_lost, read_back  # noqa: E402

FILES = 16          # f1k-00 .. f1k-15, made by scripts/cluster.sh
BACKOFF_S = 0.02    # after a failed request
TIMEOUT_S = 10      # a request unanswered this long fails as "timeout"
CACERT = None       # --cacert: the CA file an https:// --url's certificate is checked with


def now_ms():
    return time.time() * 1000.0


def parse_url(url):
    """(host, port, tls context or None) of --url and --cacert, checked."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise SystemExit("clusterload: --url must be http[s]://HOST:PORT, not %r" % url)
    host, _, port = rest.rstrip("/").partition(":")
    if not port.isdigit() and port:
        raise SystemExit("clusterload: --url: bad port in %r" % url)
    tls = None
    if scheme == "https":
        if not CACERT:
            raise SystemExit("clusterload: an https:// --url needs --cacert")
        try:
            tls = tls_context(CACERT)
        except (OSError, ValueError) as e:
            raise SystemExit("clusterload: --cacert %s: %s" % (CACERT, e)) from e
    elif CACERT:
        raise SystemExit("clusterload: --cacert goes with an https:// --url")
    return host, int(port or (443 if tls else 80)), tls


def password(seed, user):
    return hmac.new(seed, user.encode(), hashlib.sha256).hexdigest()[:24]


def read_seed(path):
    with open(path, "rb") as f:
        seed = f.read()
    if len(seed) < 16:
        raise SystemExit("clusterload: %s: the seed must be at least 16 bytes" % path)
    return seed


def classify(exc):
    if isinstance(exc, ConnectFailed):
        return "connect"
    if isinstance(exc, socket.timeout):
        return "timeout"
    if isinstance(exc, HttpError) and "closed" not in str(exc):
        return "bad-response"
    return "reset"


def one(conn, method, path, headers=(), body=b""):
    """(status or failure class, end_ms) of one request; the connection is closed on failure."""
    try:
        st = conn.request(method, path, list(headers), body)[0]
    except (OSError, HttpError, ConnectFailed) as e:
        conn.close()
        return classify(e), now_ms()
    return st, now_ms()


def create(conn, user, pw):
    body = ("username=%s&password=%s" % (user, pw)).encode()
    return one(conn, "POST", "/users", ["Content-Type: application/x-www-form-urlencoded"], body)


class Loader(threading.Thread):
    def __init__(self, a, idx, seed, runid, stop, ready):
        super().__init__(daemon=True)
        self.a, self.idx, self.seed, self.stop, self.ready = a, idx, seed, stop, ready
        self.host, self.port, tls = parse_url(a.url)
        self.conn = Conn(self.port, TIMEOUT_S, self.host, tls=tls)
        self.rnd = random.Random("%s/%s/%d" % (runid, a.tag, idx))
        self.prefix = "%s-%s-%d-" % (runid, a.tag, idx)
        self.n = 0
        self.accounts = []      # usernames this thread created (201)
        self.journal = []       # (start_ms, end_ms, kind, result, user)
        self.error = None

    def new_account(self):
        user = "%s%d" % (self.prefix, self.n)
        self.n += 1
        t0 = now_ms()
        st, t1 = create(self.conn, user, password(self.seed, user))
        self.journal.append((t0, t1, "new", st, user))
        if st == 201:
            self.accounts.append(user)
        return st

    def get(self):
        user = self.rnd.choice(self.accounts)
        path = "/files/f1k-%02d" % self.rnd.randrange(FILES)
        t0 = now_ms()
        st, t1 = one(self.conn, "GET", path,
                     ["Authorization: " + basic(user, password(self.seed, user))])
        self.journal.append((t0, t1, "get", st, "-"))
        return st

    def run(self):
        try:
            deadline = time.time() + 30
            while not self.accounts:
                if self.new_account() != 201:
                    if time.time() > deadline:
                        self.error = "no account created in 30 s"
                        return
                    time.sleep(0.2)
            self.ready.release()
            while not self.stop.is_set():
                if self.rnd.randrange(100) < self.a.new_percent:
                    st, ok = self.new_account(), 201
                else:
                    st, ok = self.get(), 200
                if st != ok:
                    time.sleep(BACKOFF_S)
        finally:
            self.conn.close()


def cmd_run(a):
    seed = read_seed(a.seed_file)
    runid = "%06x" % random.SystemRandom().randrange(1 << 24)
    stop = threading.Event()
    ready = threading.Semaphore(0)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    loaders = [Loader(a, i, seed, runid, stop, ready) for i in range(a.threads)]
    for ld in loaders:
        ld.start()
    t_end = time.time() + a.max_seconds
    got = 0
    while got < len(loaders) and time.time() < t_end and not stop.is_set():
        if ready.acquire(timeout=0.2):
            got += 1
        elif not any(ld.is_alive() for ld in loaders):
            break
    if got == len(loaders):
        with open(a.out + ".ready", "w") as f:
            f.write("%d\n" % now_ms())
    while time.time() < t_end and not stop.is_set():
        if a.stop_file and os.path.exists(a.stop_file):
            break
        if not any(ld.is_alive() for ld in loaders):
            break
        time.sleep(0.1)
    stop.set()
    for ld in loaders:
        ld.join(TIMEOUT_S + 5)
    rows = sorted(r for ld in loaders for r in ld.journal)
    with open(a.out + ".tmp", "w") as f:
        for t0, t1, kind, st, user in rows:
            f.write("%.1f %.1f %s %s %s\n" % (t0, t1, kind, st, user))
    os.rename(a.out + ".tmp", a.out)
    errors = [ld.error for ld in loaders if ld.error]
    print("clusterload %s: %d requests, %d accounts created%s" % (
        a.tag, len(rows), sum(len(ld.accounts) for ld in loaders),
        "; " + "; ".join(errors) if errors else ""))
    return 1 if errors or got < len(loaders) else 0


def read_journals(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for line in f:
                t0, t1, kind, st, user = line.split()
                rows.append((float(t0), float(t1), kind, st, user))
    rows.sort()
    return rows


def ok(kind, st):
    return st == ("201" if kind == "new" else "200")


def by_class(fails):
    counts = {}
    for r in fails:
        k = "%s %s" % (r[2], r[3])
        counts[k] = counts.get(k, 0) + 1
    return ", ".join("%s x%d" % (k, n) for k, n in sorted(counts.items())) or "none"


def rate(rows, t0, t1):
    if t1 <= t0:
        return 0.0
    n = sum(1 for r in rows if t0 <= r[1] < t1 and ok(r[2], r[3]))
    return n * 1000.0 / (t1 - t0)


def cmd_report(a):
    rows = read_journals(a.journals)
    if not rows:
        print("clusterload report: no requests in the journals")
        return 1
    faults = read_kills(a.faults)
    fails = [r for r in rows if not ok(r[2], r[3])]
    end = rows[-1][1] + 1
    bad = 0
    before, periods = attribute(faults, fails)
    print("load: %d requests from %d journals, %d failed; before the first fault: %d failed "
          "(%s)" % (len(rows), len(a.journals), len(fails), len(before), by_class(before)))
    summary = []
    for i, (name, kill, restart, ready, target) in enumerate(faults):
        nxt = faults[i + 1][1] if i + 1 < len(faults) else end
        f_kill, f_rest = periods[i]
        w_kill, w_rest = window(f_kill, kill), window(f_rest, restart)
        over = w_kill > target or w_rest > target
        bad += over
        print("fault %d: %s (killed for %.1f s, back in service %.1f s after its restart)" % (
            i + 1, name, (restart - kill) / 1000, (ready - restart) / 1000))
        print("  failed after the kill:    %d (%s)" % (len(f_kill), by_class(f_kill)))
        print("  failed after the restart: %d (%s)" % (len(f_rest), by_class(f_rest)))
        print("  throughput, answered/s:   before %.0f, down %.0f, after %.0f" % (
            rate(rows, kill - a.period, kill), rate(rows, kill, ready),
            rate(rows, ready, min(ready + a.period, nxt))))
        print("  error window: %d ms after the kill, %d ms after the restart (target <= %d ms)%s"
              % (w_kill, w_rest, target, "  OVER" if over else ""))
        summary.append("%s error window = %d ms (restart %d ms; target %d ms)" % (
            name, w_kill, w_rest, target))
    for s in summary:
        print(s)
    return 1 if bad else 0


def cmd_verify(a):
    seed = read_seed(a.seed_file)
    host, port, tls = parse_url(a.url)
    users = [r[4] for r in read_journals(a.journals) if r[2] == "new" and r[3] == "201"]
    local = threading.local()

    def check(user):
        """The last answer to a login as user: 200 there, 401 lost; anything else is asked
        again for up to 30 s."""
        if not hasattr(local, "conn"):
            local.conn = Conn(port, TIMEOUT_S, host, tls=tls)
        auth = ["Authorization: " + basic(user, password(seed, user))]
        return ask(lambda: one(local.conn, "GET", "/files/f1k-00", auth)[0],
                   lambda st: st in (200, 401), 0.2, deadline_s=30)

    def done():
        if hasattr(local, "conn"):
            local.conn.close()

    results = read_back(users, check, threads=a.threads, done=done)
    lost = [u for u, st in zip(users, results) if st == 401]
    unknown = ["%s (%s)" % (u, st) for u, st in zip(users, results) if st not in (200, 401)]
    print("verify: %d acknowledged accounts logged in with: %d there, %d lost, %d not checked" %
          (len(users), len(users) - len(lost) - len(unknown), len(lost), len(unknown)))
    for u in lost[:20]:
        print("  LOST " + u)
    for u in unknown[:20]:
        print("  NOT CHECKED " + u)
    print_lost(len(lost))
    return 1 if lost or unknown or not users else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--url", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--seed-file", required=True)
    r.add_argument("--cacert")
    r.add_argument("--tag", required=True)
    r.add_argument("--threads", type=int, default=4)
    r.add_argument("--new-percent", type=int, default=30)
    r.add_argument("--max-seconds", type=float, default=600)
    r.add_argument("--stop-file")
    o = sub.add_parser("report")
    o.add_argument("--faults", required=True)
    o.add_argument("--period", type=float, default=3000)
    o.add_argument("journals", nargs="+")
    v = sub.add_parser("verify")
    v.add_argument("--url", required=True)
    v.add_argument("--seed-file", required=True)
    v.add_argument("--cacert")
    v.add_argument("--threads", type=int, default=8)
    v.add_argument("journals", nargs="+")
    a = p.parse_args()
    global CACERT
    CACERT = getattr(a, "cacert", None)
    if a.cmd != "report":
        parse_url(a.url)    # refused here, before anything starts
    if a.cmd == "run":
        if not 1 <= a.threads <= 256 or not 0 <= a.new_percent <= 100 or a.max_seconds <= 0:
            raise SystemExit("clusterload: --threads 1..256, --new-percent 0..100, "
                             "--max-seconds > 0")
        if not (a.tag.replace("-", "").isalnum() and len(a.tag) <= 16):
            raise SystemExit("clusterload: --tag: up to 16 letters, digits and '-'")
    sys.exit({"run": cmd_run, "report": cmd_report, "verify": cmd_verify}[a.cmd](a))


if __name__ == "__main__":
    main()
