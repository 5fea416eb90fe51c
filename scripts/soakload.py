#!/usr/bin/env python3
"""soakload.py - the mixed load of scripts/soak.sh, and its checks.

  soakload.py run --out DIR --seconds S --faults FILE TARGET...
      TARGET is NAME=PORT:ROOT (server1 on 127.0.0.1:PORT serving the files under ROOT).
      Creates an account per worker, then for S seconds runs --workers threads per target on
      keep-alive connections, each drawing its next request from a fixed mix: GETs of the
      operator's files of every size under ROOT and of its own uploads, PUTs (0 B to 1 MiB,
      Expect: 100-continue) and DELETEs of names only it writes, 10% wrong passwords, account
      creations, 1% malformed requests, uploads and downloads abandoned half-way; and --slow
      threads per target that send a request a byte per second, send a body a byte per second,
      or read a 4 MiB file a KiB per second. Every answer is checked against what the worker
      knows: the bytes of a file, the last acknowledged version of an upload, 401 for a wrong
      password (a 200 there is counted apart, and fails the run). An answer outside the
      expected class is an event; at the end, events that fall in a fault window of FILE (lines
      "START_MS END_MS KIND TARGET,TARGET", written by soak.sh) are put in the class that fault
      explains: 503 with Retry-After during an outage, 507 while the disk is full. Writes
      DIR/journal.json (what every name must hold) and DIR/run.json; prints a summary; exit 1
      if anything is unexplained.
  soakload.py verify --out DIR [--label L] TARGET...
      Reads every name of DIR/journal.json back: its bytes must be one of the versions the
      journal allows (a version is acknowledged by 201/204; a write whose answer was lost may
      or may not be there). Prints "lost = N" (names whose acknowledged state is not what is
      served); exit 1 unless N is 0.

Built on tests/faultlib: its HTTP/1.1 client, ledger of acknowledged writes, fault windows.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from faultlib.faults import Windows  # noqa: E402
from faultlib.http import Conn, HttpError, basic  # noqa: E402
from faultlib.ledger import ABSENT, Ledger, ask, print_lost, read_back, version_of  # noqa: E402

SIZES_PUT = [(0, 2), (1, 2), (1024, 30), (10 * 1024, 30), (100 * 1024, 10), (1 << 20, 3)]
MALFORMED = [
    # (what, raw bytes, statuses that are right)
    ("garbage request line", b"GARBAGE\r\n\r\n", {400}),
    ("bad HTTP version", b"GET /healthz HTTP/9.9\r\n\r\n", {400, 505}),
    ("NUL in the target", b"GET /files/a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", {400}),
    ("header over the limit", None, {431}),
    ("body over --max-body", None, {413}),
    ("bad %-encoding in a form", None, {400}),
    ("header line without a colon", b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", {400}),
]


def now_ms():
    return int(time.time() * 1000)


def version_bytes(name, version, size):
    """The bytes of version `version` of upload `name`: reproducible from the journal."""
    rnd = random.Random("%s/%d" % (name, version))
    return rnd.randbytes(size)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}       # (target, action, status-or-class) -> n
        self.events = []       # unexpected answers: (t_ms, target, action, status, what)
        self.wrong_pw_ok = 0   # a wrong password that got 200: never right
        self.corrupt = []      # bodies that are none of the allowed versions

    def count(self, target, action, what):
        with self.lock:
            k = (target, action, str(what))
            self.counts[k] = self.counts.get(k, 0) + 1

    def event(self, target, action, status, what, retry_after=False):
        with self.lock:
            self.events.append((now_ms(), target, action, status, what, retry_after))


class Target:
    def __init__(self, spec):
        name, _, rest = spec.partition("=")
        port, _, root = rest.partition(":")
        self.name, self.port, self.root = name, int(port), root
        self.files = {}  # name -> (size, sha256) of the operator's files under root
        for fn in sorted(os.listdir(root)):
            p = os.path.join(root, fn)
            if os.path.isfile(p) and not fn.startswith("."):
                with open(p, "rb") as f:
                    self.files[fn] = (os.path.getsize(p), hashlib.sha256(f.read()).hexdigest())
        if not self.files:
            raise SystemExit("soakload: no files under %s" % root)


def create_user(conn, user, pw):
    body = ("username=%s&password=%s" % (user, pw)).encode()
    return conn.request("POST", "/users", ["Content-Type: application/x-www-form-urlencoded"],
                        body)[0]


class Worker(threading.Thread):
    def __init__(self, tgt, idx, args, stats, journal, stop, seed):
        super().__init__(daemon=True)
        self.t, self.idx, self.args, self.stats, self.journal = tgt, idx, args, stats, journal
        self.stop = stop
        self.rnd = random.Random(seed)
        self.user = "soak%s%d" % (tgt.name, idx)
        self.pw = "pw-%d-%s" % (idx, base64.b32encode(os.urandom(10)).decode().lower())
        self.conn = Conn(tgt.port)
        self.names = ["u%d-%d" % (idx, k) for k in range(args.names)]
        self.version = 0
        self.new_users = 0
        self.requests = 0

    # --- bookkeeping ---------------------------------------------------------------------
    def jkey(self, name):
        return "%s/%s" % (self.t.name, name)

    def entry(self, name):
        return self.journal.entries[self.jkey(name)]

    def call(self, action, method, path, headers=(), body=b"", expect=False, head_only=False):
        """One request on the worker's connection; None when the connection failed."""
        self.requests += 1
        try:
            return self.conn.request(method, path, headers, body, head_only=head_only,
                                     expect=expect)
        except (OSError, HttpError) as e:
            self.conn.close()
            self.stats.count(self.t.name, action, "conn-error")
            self.stats.event(self.t.name, action, 0, "connection failed: %s" % e)
            return None

    def verdict(self, action, st, hd, ok, what=""):
        """Counts the answer; an answer not in `ok` is an event."""
        self.stats.count(self.t.name, action, st)
        if st not in ok:
            self.stats.event(self.t.name, action, st, what or "unexpected status",
                             "retry-after" in hd)

    # --- actions ---------------------------------------------------------------------------
    def get_file(self):
        fn = self.rnd.choice(list(self.t.files))
        r = self.call("get-file", "GET", "/files/" + fn, ["Authorization: " + basic(self.user, self.pw)])
        if r is None:
            return
        st, hd, body = r
        self.verdict("get-file", st, hd, {200})
        if st == 200:
            size, sha = self.t.files[fn]
            if len(body) != size or hashlib.sha256(body).hexdigest() != sha:
                self.stats.corrupt.append("%s/files/%s: %d bytes, not the file's" %
                                          (self.t.name, fn, len(body)))

    def wrong_password(self):
        fn = self.rnd.choice(list(self.t.files))
        r = self.call("wrong-password", "GET", "/files/" + fn,
                      ["Authorization: " + basic(self.user, self.pw + "x")])
        if r is None:
            return
        st, hd, _ = r
        if st == 200:
            with self.stats.lock:
                self.stats.wrong_pw_ok += 1
        self.verdict("wrong-password", st, hd, {401})

    def get_upload(self):
        name = self.rnd.choice(self.names)
        r = self.call("get-upload", "GET", "/files/" + name,
                      ["Authorization: " + basic(self.user, self.pw)])
        if r is None:
            return
        st, hd, body = r
        e = self.entry(name)
        ok = set()
        if e.allows(ABSENT):
            ok.add(404)
        if any(s is not ABSENT for s in e.acceptable()):
            ok.add(200)
        self.verdict("get-upload", st, hd, ok, "allowed: %s" % sorted(ok))
        if st == 200:
            if not e.allows(hashlib.sha256(body).hexdigest()):
                self.stats.corrupt.append("%s/files/%s: %d bytes, no version written" %
                                          (self.t.name, name, len(body)))

    def put_upload(self):
        name = self.rnd.choice(self.names)
        size = self.rnd.choices([s for s, _ in SIZES_PUT], [w for _, w in SIZES_PUT])[0]
        self.version += 1
        data = version_bytes(self.jkey(name), self.version, size)
        state = version_of(data, self.version)
        # until the answer: either
        before = self.journal.attempt(self.jkey(name), state)
        r = self.call("put", "PUT", "/files/" + name,
                      ["Authorization: " + basic(self.user, self.pw)], data, expect=True)
        if r is None:
            return  # unknown: either stays allowed
        st, hd, _ = r
        self.verdict("put", st, hd, {201, 204})
        if st in (201, 204):
            self.journal.acknowledged(self.jkey(name), state)
        else:
            self.journal.refused(self.jkey(name), before)

    def delete_upload(self):
        name = self.rnd.choice(self.names)
        ok = {204, 404} if self.entry(name).allows(ABSENT) else {204}
        before = self.journal.attempt(self.jkey(name), ABSENT)
        r = self.call("delete", "DELETE", "/files/" + name,
                      ["Authorization: " + basic(self.user, self.pw)])
        if r is None:
            return
        st, hd, _ = r
        self.verdict("delete", st, hd, ok)
        if st in (204, 404):
            self.journal.acknowledged(self.jkey(name), ABSENT)
        else:
            self.journal.refused(self.jkey(name), before)

    def new_account(self):
        self.new_users += 1
        dup = self.new_users % 4 == 0
        user = self.user if dup else "%sn%d" % (self.user, self.new_users)
        body = ("username=%s&password=%s" % (user, self.pw)).encode()
        r = self.call("new-account", "POST", "/users",
                      ["Content-Type: application/x-www-form-urlencoded"], body)
        if r is None:
            return
        st, hd, _ = r
        self.verdict("new-account", st, hd, {409} if dup else {201})

    def malformed(self):
        what, raw, ok = self.rnd.choice(MALFORMED)
        if what == "header over the limit":
            raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 9000 + b"\r\n\r\n"
        elif what == "body over --max-body":
            body = b"username=x&password=" + b"p" * 20000
            raw = (b"POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: "
                   b"application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n" % len(body))
        elif what == "bad %-encoding in a form":
            body = b"username=da%zzve&password=x"
            raw = (b"POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: "
                   b"application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" %
                   (len(body), body))
        c = Conn(self.t.port, timeout=10)
        self.requests += 1
        try:
            c.open().sendall(raw)
            st, hd = c.read_head()
        except (OSError, HttpError) as e:
            self.stats.count(self.t.name, "malformed", "conn-error")
            self.stats.event(self.t.name, "malformed", 0, "%s: %s" % (what, e))
            return
        finally:
            c.close()
        self.verdict("malformed", st, hd, ok, what)

    def abandon_upload(self):
        """A PUT whose client goes away half-way through the body: the name must not change."""
        name = self.rnd.choice(self.names)
        c = Conn(self.t.port, timeout=10)
        self.requests += 1
        try:
            s = c.open()
            s.sendall(("PUT /files/%s HTTP/1.1\r\nHost: soak\r\nAuthorization: %s\r\n"
                       "Content-Length: 200000\r\n\r\n" % (name, basic(self.user, self.pw))).encode())
            s.sendall(b"z" * 100000)
        except OSError:
            pass
        finally:
            c.close()
        self.stats.count(self.t.name, "abandon-upload", "sent")

    def abandon_download(self):
        fn = max(self.t.files, key=lambda f: self.t.files[f][0])
        c = Conn(self.t.port, timeout=10)
        self.requests += 1
        try:
            s = c.open()
            s.sendall(("GET /files/%s HTTP/1.1\r\nHost: soak\r\nAuthorization: %s\r\n\r\n" %
                       (fn, basic(self.user, self.pw))).encode())
            c.read_head()
            c.read_body({"content-length": str(self.t.files[fn][0])}, limit=65536)
        except (OSError, HttpError):
            pass
        finally:
            c.close()
        self.stats.count(self.t.name, "abandon-download", "sent")

    MIX = [("get_file", 40), ("get_upload", 12), ("put_upload", 14), ("delete_upload", 3),
           ("wrong_password", 10), ("new_account", 2), ("malformed", 1),
           ("abandon_upload", 1), ("abandon_download", 1)]

    def setup(self):
        for name in self.names:
            self.journal.entry(self.jkey(name), (self.user, self.pw))
        deadline = time.time() + 60
        while True:
            try:
                st = create_user(self.conn, self.user, self.pw)
            except (OSError, HttpError):
                st = 0
                self.conn.close()
            if st == 201:
                return
            if time.time() > deadline:
                raise SystemExit("soakload: cannot create account %s: status %s" %
                                 (self.user, st))
            time.sleep(0.5)

    def run(self):
        acts = [getattr(self, a) for a, _ in self.MIX]
        weights = [w for _, w in self.MIX]
        while not self.stop.is_set():
            self.rnd.choices(acts, weights)[0]()
        self.conn.close()


class Slow(threading.Thread):
    """A client at a byte per second: head, body, or reading a KiB per second."""

    def __init__(self, tgt, idx, user, pw, stats, stop):
        super().__init__(daemon=True)
        self.t, self.idx, self.user, self.pw, self.stats, self.stop = tgt, idx, user, pw, stats, stop
        self.rounds = 0

    def trickle(self, s, data):
        """Sends data a byte a second until the server answers (True) or the run ends."""
        for b in data:
            if self.stop.is_set():
                return False
            s.sendall(bytes([b]))
            if select.select([s], [], [], 1.0)[0]:
                return True
        return True

    def one(self, kind):
        c = Conn(self.t.port, timeout=30)
        try:
            s = c.open()
            auth = basic(self.user, self.pw)
            if kind == "slow-head":
                if not self.trickle(s, ("GET /files/%s HTTP/1.1\r\nHost: soak\r\nAuthorization: "
                                        "%s\r\n\r\n" % (min(self.t.files), auth)).encode()):
                    return
                st, hd = c.read_head()
                ok = {408, 200}
            elif kind == "slow-body":
                s.sendall(("PUT /files/slow%d HTTP/1.1\r\nHost: soak\r\nAuthorization: %s\r\n"
                           "Content-Length: 4096\r\n\r\n" % (self.idx, auth)).encode())
                if not self.trickle(s, b"s" * 4096):
                    return
                st, hd = c.read_head()
                ok = {408}
            else:  # slow-read
                fn = max(self.t.files, key=lambda f: self.t.files[f][0])
                s.sendall(("GET /files/%s HTTP/1.1\r\nHost: soak\r\nAuthorization: %s\r\n\r\n" %
                           (fn, auth)).encode())
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                while not self.stop.is_set():
                    if not s.recv(1024):
                        break
                    time.sleep(1)
                self.stats.count(self.t.name, kind, "closed by the server")
                return
        except (OSError, HttpError):
            # the server gave up on a client this slow: a reset or a close is the right answer
            self.stats.count(self.t.name, kind, "closed by the server")
            return
        finally:
            c.close()
        self.stats.count(self.t.name, kind, st)
        if st not in ok:
            self.stats.event(self.t.name, kind, st, "unexpected status", "retry-after" in hd)

    def run(self):
        kinds = ["slow-head", "slow-body", "slow-read"]
        while not self.stop.is_set():
            self.one(kinds[(self.idx + self.rounds) % 3])
            self.rounds += 1


def cmd_run(a):
    targets = [Target(s) for s in a.targets]
    stats, journal, stop = Stats(), Ledger(), threading.Event()
    workers = []
    for t in targets:
        for i in range(a.workers):
            workers.append(Worker(t, i, a, stats, journal, stop, a.seed * 1000 + len(workers)))
    for w in workers:
        w.setup()
    slows = []
    for t in targets:
        w0 = next(w for w in workers if w.t is t)
        for i in range(a.slow):
            slows.append(Slow(t, i, w0.user, w0.pw, stats, stop))
    t0 = time.time()
    print("soakload: %d workers and %d slow clients on %s for %d s" %
          (len(workers), len(slows), ", ".join(t.name for t in targets), a.seconds), flush=True)
    for th in workers + slows:
        th.start()
    while time.time() - t0 < a.seconds:
        time.sleep(0.5)
    stop.set()
    for th in workers:
        th.join(60)
    for th in slows:
        th.join(5)
    elapsed = time.time() - t0
    total = sum(w.requests for w in workers)

    faults = Windows(a.faults)
    explained, unexplained = {}, []
    for ev in stats.events:
        t, tgt, action, st, what, ra = ev
        # a failed connection (st 0) is never explained: during an outage of server2 or of its
        # database server1 stays up and must answer
        kind = faults.explains(t, tgt, st, ra)
        if kind is not None:
            explained[(kind, st)] = explained.get((kind, st), 0) + 1
        else:
            unexplained.append(ev)

    with open(os.path.join(a.out, "journal.json"), "w") as f:
        json.dump(journal.to_json(), f)
    summary = {
        "seconds": round(elapsed, 1), "requests": total,
        "requests_per_second": round(total / elapsed, 1),
        "counts": {"%s %s %s" % k: v for k, v in sorted(stats.counts.items())},
        "explained": {"%s %s" % k: v for k, v in sorted(explained.items())},
        "unexplained": len(unexplained), "wrong_password_accepted": stats.wrong_pw_ok,
        "corrupt": len(stats.corrupt),
    }
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(summary, f, indent=1)

    print("soakload: %d requests in %.0f s (%.0f/s), by target, action and answer:" %
          (total, elapsed, total / elapsed))
    for (tgt, action, st), n in sorted(stats.counts.items()):
        print("  %-3s %-17s %-22s %8d" % (tgt, action, st, n))
    print("soakload: errors a fault explains:", ", ".join(
        "%s: %d x %s" % (k, v, s) for (k, s), v in sorted(explained.items())) or "none")
    print("soakload: wrong passwords accepted: %d" % stats.wrong_pw_ok)
    print("soakload: bodies that are not what was written: %d" % len(stats.corrupt))
    for c in stats.corrupt[:10]:
        print("    " + c)
    print("soakload: answers outside every known class: %d" % len(unexplained))
    for t, tgt, action, st, what, ra in unexplained[:20]:
        print("    t=%+.1fs %s %s: %s (%s%s)" % (t / 1000 - t0, tgt, action, st or "-", what,
                                              ", Retry-After" if ra else ""))
    bad = unexplained or stats.wrong_pw_ok or stats.corrupt
    return 1 if bad else 0


def cmd_verify(a):
    targets = {t.name: t for t in (Target(s) for s in a.targets)}
    with open(os.path.join(a.out, "journal.json")) as f:
        journal = Ledger.from_json(json.load(f))
    conns = {}

    def check(key):
        """The answer to GET of key as its owner: (status or 0, body), asked again for up to
        60 s until it is 200 or 404."""
        tname, name = key.split("/", 1)
        c = conns.setdefault(tname, Conn(targets[tname].port))
        auth = ["Authorization: " + basic(*journal.entries[key].owner)]

        def get():
            try:
                return c.request("GET", "/files/" + name, auth)[::2]
            except (OSError, HttpError):
                c.close()
                return 0, b""
        return ask(get, lambda r: r[0] in (200, 404), 0.5, deadline_s=60)

    keys = sorted(journal.entries)
    lost, unknown_ok = [], 0
    for key, (st, body) in zip(keys, read_back(keys, check, threads=1)):
        e = journal.entries[key]
        if journal.judge(key, st, body) != "ok":
            lost.append("%s: got %s, allowed %s" % (key, st, [
                "absent" if v is ABSENT else "v%d (%d B)" % (v.serial, v.size)
                for v in e.acceptable()]))
        elif len(e.acceptable()) > 1:
            unknown_ok += 1
    checked = len(keys)
    label = " (%s)" % a.label if a.label else ""
    print("soakload verify%s: %d names read back, %d of them after a write whose answer was lost"
          % (label, checked, unknown_ok))
    for x in lost[:20]:
        print("    LOST " + x)
    print_lost(len(lost))
    return 1 if lost or checked == 0 else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--seconds", type=int, required=True)
    r.add_argument("--faults", required=True)
    r.add_argument("--workers", type=int, default=4)
    r.add_argument("--slow", type=int, default=3)
    r.add_argument("--names", type=int, default=6)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("targets", nargs="+")
    v = sub.add_parser("verify")
    v.add_argument("--out", required=True)
    v.add_argument("--label", default="")
    v.add_argument("targets", nargs="+")
    a = p.parse_args()
    sys.exit(cmd_run(a) if a.cmd == "run" else cmd_verify(a))


if __name__ == "__main__":
    main()
