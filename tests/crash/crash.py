#!/usr/bin/env python3
"""crash.py - crash-consistency harness for the whole stack (server1, server2, Redis or MariaDB),
a profile on tests/faultlib (its HTTP/1.1 client, ledger, read-back and killable stack).

Starts a throw-away stack under a temp dir (scripts/stack.sh), runs a mixed load from several
client threads (account creations, uploads of random sizes with known sha256 to per-client
names, deletes, gets), and in a bounded loop SIGKILLs a randomly chosen process of the stack at
a random moment: server1, server2 (the whole process group; in --mode processes sometimes one
worker process), redis-server or mariadbd. server1 checkpoints its upload index every 40
records (S1_TEST_STORE_CKPT_RECORDS), so that kills also land while one is written and its
restarts start from one. It restarts what it killed, waits (bounded) until the
stack is healthy again, and carries on. Clients treat a connection error, a timeout or a 503 as
"not acknowledged" and carry on.

Every acknowledged write is recorded client-side: an account created (201), an upload (201/204,
with its sha256), a delete (204). Per name the ledger keeps the last acknowledged version and
the versions attempted after it whose outcome is unknown (they may or may not have landed).
After the rounds comes a SIGTERM round: server1 gets SIGTERM while three requests are half
received (the rest of each is sent after the signal), and they must be answered 201/204; then
server2 gets SIGTERM while account creations are queued to it (it is SIGSTOPped while they
arrive, the SIGTERM lands with SIGCONT), and each must be answered (201, or 503 - never a
dropped connection). Both must exit 0. Then the final check: every acknowledged account
logs in, every file's bytes are those of its last acknowledged version (or of a later attempt
whose outcome was unknown), deleted files are gone. Prints

    rounds R, writes acknowledged A, verified V, lost L, corrupt C

and exits 1 if L > 0, C > 0, nothing was acknowledged, or a SIGTERM check failed; 2 on bad
usage; 3 when the stack could not be started or did not come back.

While server1 does not implement PUT (404/405/501 to a probe), uploads are skipped with a note
and the harness checks accounts only.

Bounded everywhere: a timeout on every request and every wait, a total time limit; traffic
only to 127.0.0.1; never touches system services; stops everything it started on exit
(finally, and on SIGINT/SIGTERM).
"""
import argparse
import ctypes
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests"))
from faultlib.http import Conn, HttpError, basic, request_once  # noqa: E402
from faultlib.ledger import ABSENT, Ledger, ask, read_back, short, version_of  # noqa: E402
from faultlib.stack import Fatal, Stack, children_of, proc_alive, wait_until  # noqa: E402

NAMES_PER_CLIENT = 8     # each client uploads to c<id>-f0..7, overwriting
PR_SET_CHILD_SUBREAPER = 36


def log(msg):
    sys.stderr.write("crash: %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def create_account(port, user, password, timeout=20.0):
    form = urllib.parse.urlencode({"username": user, "password": password}).encode()
    return request_once(port, "POST", "/users", form, ctype="application/x-www-form-urlencoded",
                        timeout=timeout)


# ---- the ledger and the clients ----

class Client(threading.Thread):
    """One user of the stack: its own accounts and its own names, one request at a time."""

    def __init__(self, cid, h, uploads, seed):
        super().__init__(name="client-%d" % cid, daemon=True)
        self.cid = cid
        self.h = h
        self.uploads = uploads
        self.rng = random.Random(seed)
        self.accounts = []        # acknowledged (user, password)
        self.main = None          # the account that owns this client's files
        self.files = Ledger()     # this client's names (owner: main)
        self.acks = {"account": 0, "upload": 0, "delete": 0}
        self.unknown = {}         # requests with no answer or a 5xx: "OP status" -> count
        self.rejected = {}        # unexpected definite answers: status -> count
        self.online_lost = []     # reads that contradicted the ledger during the run
        self.online_corrupt = []
        self.ops = 0
        self.serial = 0
        self.error = None

    def new_name(self):
        self.serial += 1
        return "cr%s-c%d-a%d" % (self.h.run_id, self.cid, self.serial)

    def not_acked(self, what, r):
        key = "%s %s" % (what, r.status if r is not None else "no-answer")
        self.unknown[key] = self.unknown.get(key, 0) + 1
        time.sleep(self.rng.uniform(0.02, 0.1))  # the stack is restarting: don't spin

    def reject(self, what, status):
        key = "%s %d" % (what, status)
        self.rejected[key] = self.rejected.get(key, 0) + 1

    def run(self):
        try:
            self._run()
        except Exception as e:  # reported by the main thread
            self.error = "%s: %r" % (self.name, e)

    def _run(self):
        h = self.h
        # the main account: the same name until it is there (201, or 409 after a lost answer)
        user, pw = self.new_name(), "pw-%016x" % self.rng.getrandbits(64)
        while not h.stop.is_set():
            r = create_account(h.port, user, pw)
            if r is not None and r.status == 201:
                self.accounts.append((user, pw))
                self.acks["account"] += 1
                self.main = (user, pw)
                break
            if r is not None and r.status == 409:
                self.main = (user, pw)
                break
            self.not_acked("POST", r)
            time.sleep(0.1)
        while not h.stop.is_set():
            if h.pause.is_set():
                time.sleep(0.02)
                continue
            x = self.rng.random()
            self.ops += 1
            if not self.uploads or x < 0.15:
                if self.uploads or x < 0.3:
                    self.op_account()
                else:
                    self.op_read_hello()
            elif x < 0.60:
                self.op_upload()
            elif x < 0.70:
                self.op_delete()
            else:
                self.op_get()

    def op_account(self):
        user, pw = self.new_name(), "p%x" % self.rng.getrandbits(48)
        r = create_account(self.h.port, user, pw)
        if r is None or r.status >= 500:
            self.not_acked("POST", r)
        elif r.status == 201:
            self.accounts.append((user, pw))
            self.acks["account"] += 1
        else:
            self.reject("POST /users", r.status)

    def op_read_hello(self):
        r = request_once(self.h.port, "GET", "/files/hello.txt", auth=self.main, timeout=10)
        if r is not None and r.status not in (200, 503):
            self.reject("GET hello.txt", r.status)

    def pick_size(self):
        x = self.rng.random()
        if x < 0.1:
            return self.rng.choice([0, 1, 4095, 4096, 4097])
        if x < 0.6:
            return self.rng.randint(0, 64 * 1024)
        if x < 0.85:
            return self.rng.randint(0, 512 * 1024)
        return self.rng.randint(0, self.h.max_size)

    def op_upload(self):
        name = "c%d-f%d" % (self.cid, self.rng.randrange(NAMES_PER_CLIENT))
        st = self.files.entry(name, self.main)
        body = os.urandom(self.pick_size())
        v = version_of(body)
        existed = st.acked is not ABSENT and not st.maybe
        unknown_before = bool(st.maybe)
        before = self.files.attempt(name, v)
        r = request_once(self.h.port, "PUT", "/files/" + name, body, auth=self.main,
                         ctype="application/octet-stream", timeout=30)
        if r is None or r.status >= 500:
            self.not_acked("PUT", r)   # it stays a maybe
        elif r.status in (201, 204):
            if (r.status == 204) != existed and not unknown_before:
                self.reject("PUT (201 vs 204 disagrees with the ledger)", r.status)
            self.files.acknowledged(name, v)
            self.acks["upload"] += 1
        else:
            self.files.refused(name, before)
            self.reject("PUT", r.status)

    def op_delete(self):
        names = [n for n, s in self.files.entries.items() if s.acked is not ABSENT or s.maybe]
        if not names:
            return
        name = self.rng.choice(sorted(names))
        st = self.files.entries[name]
        absent_ok = st.allows(ABSENT)
        before = self.files.attempt(name, ABSENT)
        r = request_once(self.h.port, "DELETE", "/files/" + name, auth=self.main, timeout=20)
        if r is None or r.status >= 500:
            self.not_acked("DELETE", r)   # it stays a maybe
        elif r.status == 204:
            self.files.acknowledged(name, ABSENT)
            self.acks["delete"] += 1
        elif r.status == 404:
            if not absent_ok:
                self.online_lost.append("%s: DELETE answered 404, the ledger has %s" %
                                        (name, short(st.acked)))
            self.files.acknowledged(name, ABSENT)   # observed: count the loss once
        else:
            self.files.refused(name, before)
            self.reject("DELETE", r.status)

    def op_get(self):
        if not self.files.entries:
            return
        name = self.rng.choice(sorted(self.files.entries))
        r = request_once(self.h.port, "GET", "/files/" + name, auth=self.main, timeout=30)
        if r is None or r.status >= 500:
            return
        verdict = self.files.judge(name, r.status, r.body)
        if verdict == "lost":
            self.online_lost.append("%s: GET saw %s, the ledger allows %s" %
                                    (name, describe(r), allowed(self.files.entries[name])))
        elif verdict == "corrupt":
            self.online_corrupt.append("%s: GET saw %s, matching no version" % (name, describe(r)))
        elif verdict == "other":
            self.reject("GET", r.status)


def describe(r):
    if r.status == 200:
        return "%d bytes sha256 %s" % (len(r.body), version_of(r.body).sha[:12])
    return "status %d" % r.status


def allowed(st):
    """The versions a ledger entry allows, for a log line."""
    return sorted({short(v) for v in st.acceptable()})


# ---- the run ----

class Harness:
    def __init__(self, args):
        self.args = args
        self.run_id = "%06x" % random.Random(args.seed).getrandbits(24)
        self.stop = threading.Event()
        self.pause = threading.Event()
        self.port = None
        self.max_size = args.max_size
        self.failures = []        # SIGTERM-round and harness failures (exit 1)
        self.notes = []

    def probe_uploads(self, stack, account):
        """True if server1 answers PUT; False (with a note) if it does not implement it."""
        name = "probe-%s" % self.run_id
        for _ in range(3):
            r = request_once(self.port, "PUT", "/files/" + name, b"probe", auth=account,
                             timeout=20)
            if r is None or r.status == 503:
                time.sleep(0.5)
                continue
            if r.status in (201, 204):
                request_once(self.port, "DELETE", "/files/" + name, auth=account, timeout=20)
                return True
            if r.status in (404, 405, 501):
                self.notes.append("uploads SKIPPED: server1 answers PUT with %d (not implemented, "
                                  "or --read-only): accounts only" % r.status)
                return False
            self.failures.append("PUT probe answered %d" % r.status)
            return False
        raise Fatal("PUT probe got no answer")

    def sigterm_round(self, stack, clients, account):
        """server1, then server2: SIGTERM with requests in flight; they complete, exit 0."""
        port = self.port
        uploads = clients[0].uploads
        # -- server1: raw requests fully written before the signal, answers read after it
        socks = []
        expect = []
        for i in range(3):
            if uploads:
                body = os.urandom(random.randint(256 * 1024, 1024 * 1024))
                name = "t-%s-%d" % (self.run_id, i)
                head = ("PUT /files/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: %s\r\n"
                        "Content-Length: %d\r\nConnection: close\r\n\r\n" %
                        (name, basic(*account), len(body)))
                expect.append(("upload", name, version_of(body)))
                head = head.encode()
                data = head + body
            else:
                user, pw = "cr%s-term-%d" % (self.run_id, i), "term%d" % i
                form = urllib.parse.urlencode({"username": user, "password": pw}).encode()
                data = ("POST /users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                        "application/x-www-form-urlencoded\r\nContent-Length: %d\r\n"
                        "Connection: close\r\n\r\n" % len(form)).encode() + form
                expect.append(("account", user, pw))
                head = b""
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            # in flight = accepted and partly received: the head and half the body now, the
            # rest after the signal
            half = len(head) + (len(data) - len(head)) // 2 if uploads else len(data) // 2
            s.sendall(data[:half])
            socks.append((s, data[half:]))
        time.sleep(0.3)
        pid1, argv1 = stack.capture("server1")
        log("SIGTERM server1 (pid %d) with %d requests in flight" % (pid1, len(socks)))
        os.kill(pid1, signal.SIGTERM)
        time.sleep(0.05)
        answered = 0
        for (s, rest), e in zip(socks, expect):
            try:
                s.sendall(rest)
            except OSError:
                pass  # read_status tells
            status = read_status(s)
            s.close()
            if status not in (201, 204):
                self.failures.append("SIGTERM server1: in-flight %s %s answered %s" %
                                     (e[0], e[1], status))
                continue
            answered += 1
            if e[0] == "upload":
                self.term_files.entry(e[1], account)
                self.term_files.acknowledged(e[1], e[2])
            else:
                self.term_accounts.append((e[1], e[2]))
        rc = stack.wait_exit(pid1, 30)
        if rc is None and proc_alive(pid1):
            self.failures.append("SIGTERM server1: still running 30 s later")
            os.kill(pid1, signal.SIGKILL)
            stack.wait_exit(pid1, 10)
        elif rc is None:
            self.notes.append("SIGTERM server1: exited, status unknown (not our child)")
        elif rc != 0:
            self.failures.append("SIGTERM server1: exit status %d" % rc)
        else:
            log("server1 exited 0 after SIGTERM; %d in-flight requests answered" % answered)
        stack.start_server("server1", argv1)
        if not stack.healthy(account, self.args.heal_timeout):
            raise Fatal("server1 not healthy after its SIGTERM restart")

        # -- server2: account creations in flight through server1
        results = []

        def create(i):
            user, pw = "cr%s-term2-%d" % (self.run_id, i), "t2-%d" % i
            r = create_account(port, user, pw, timeout=30)
            results.append((user, pw, r.status if r is not None else None))
        # server2 is stopped (SIGSTOP) while the creations reach it through server1, so they
        # are surely in flight when it gets SIGTERM (delivered with SIGCONT)
        pid2, argv2 = stack.capture("server2")
        os.killpg(pid2, signal.SIGSTOP)
        ts = [threading.Thread(target=create, args=(i,)) for i in range(6)]
        for t in ts:
            t.start()
        time.sleep(0.3)
        log("SIGTERM server2 (pid %d) with %d account creations in flight" % (pid2, len(ts)))
        os.kill(pid2, signal.SIGTERM)
        os.killpg(pid2, signal.SIGCONT)
        for t in ts:
            t.join(40)
        for user, pw, status in results:
            if status == 201:
                self.term_accounts.append((user, pw))
            elif status != 503:  # 503: answered, not acknowledged; no answer is a failure
                self.failures.append("SIGTERM server2: creation through server1 answered %s"
                                     % status)
        rc = stack.wait_exit(pid2, 30)
        if rc is None and proc_alive(pid2):
            self.failures.append("SIGTERM server2: still running 30 s later")
            os.killpg(pid2, signal.SIGKILL)
            stack.wait_exit(pid2, 10)
        elif rc is None:
            self.notes.append("SIGTERM server2: exited, status unknown (not our child)")
        elif rc != 0:
            self.failures.append("SIGTERM server2: exit status %d" % rc)
        else:
            log("server2 exited 0 after SIGTERM (%d of %d creations acknowledged)" %
                (sum(1 for r in results if r[2] == 201), len(results)))
        wait_until(10, lambda: not any(proc_alive(k) for k in children_of(pid2)))
        stack.start_server("server2", argv2)
        if not stack.healthy(account, self.args.heal_timeout):
            raise Fatal("stack not healthy after the server2 SIGTERM restart")

    def run(self):
        args = self.args
        t0 = time.monotonic()
        tmp = tempfile.mkdtemp(prefix="crash-", dir=args.tmpdir)
        stack = Stack(args, tmp, log)
        clients = []
        self.term_files = Ledger()   # acknowledged in the SIGTERM round (owner: the harness)
        self.term_accounts = []
        rounds = 0
        ok = False
        try:
            stack.start()
            self.port = stack.port
            if not stack.healthy(None, args.heal_timeout):
                raise Fatal("stack not healthy after start")
            # the harness's own account: health checks and the SIGTERM round
            me = ("cr%s-harness" % self.run_id, "harness-pw")
            r = None
            for _ in range(50):
                r = create_account(self.port, *me)
                if r is not None and r.status in (201, 409):
                    break
                time.sleep(0.1)
            if r is None or r.status not in (201, 409):
                raise Fatal("cannot create the harness account: %s" %
                            (r.status if r else "no answer"))
            self.term_accounts.append(me)
            uploads = args.uploads and self.probe_uploads(stack, me)
            for n in self.notes:
                log("NOTE: " + n)
            clients = [Client(i, self, uploads, args.seed * 1000 + i) for i in range(args.clients)]
            for c in clients:
                c.start()
            rng = random.Random(args.seed)
            victims = ["server1", "server2", "db"]
            if args.mode == "processes":
                victims.append("server2-worker")
            deadline = t0 + args.time_limit
            for rnd in range(1, args.rounds + 1):
                time.sleep(rng.uniform(0.3, 2.0))  # load runs; the kill lands anywhere in it
                if time.monotonic() > deadline - args.reserve:
                    self.notes.append("time limit: stopped after %d of %d rounds" %
                                      (rounds, args.rounds))
                    break
                victim = rng.choice(victims)
                t = time.monotonic()
                stack.kill_and_restart(victim)
                if not stack.healthy(me, args.heal_timeout):
                    raise Fatal("round %d: stack not healthy %ds after killing %s" %
                                (rnd, args.heal_timeout, victim))
                rounds = rnd
                acked = sum(sum(c.acks.values()) for c in clients)
                log("round %d/%d: SIGKILL %s, healthy again in %.2f s; %d writes acknowledged "
                    "so far" % (rnd, args.rounds, victim, time.monotonic() - t, acked))
                stack.reap_all()
            time.sleep(0.5)
            if args.sigterm:
                self.sigterm_round(stack, clients, me)
                time.sleep(0.5)
            self.stop.set()
            for c in clients:
                c.join(60)
                if c.is_alive():
                    self.failures.append("%s did not stop within 60 s" % c.name)
                if c.error:
                    self.failures.append(c.error)
            if args.sabotage:
                self.sabotage(tmp, clients)
            ok = self.verify(stack, clients, rounds)
        except Fatal as e:
            log("FATAL: %s" % e)
            self.stop.set()
            for c in clients:
                c.join(40)
            self.dump_logs(tmp)
            return 3
        finally:
            self.stop.set()
            stack.stop()
            if args.keep or (not ok and not args.sabotage):
                log("run dir kept: %s" % tmp)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
        return 0 if ok else 1

    def sabotage(self, tmp, clients):
        """Checks the checker: behind the clients' backs, delete one acknowledged file and
        replace another with different bytes of the same length (through server1, as their
        owner, so whatever the storage), so the verification must report lost >= 1 and
        corrupt >= 1."""
        present = sorted((name, c) for c in clients for name, st in c.files.entries.items()
                         if st.acked is not ABSENT and not st.maybe)
        big = []
        for n, c in present:
            r = request_once(self.port, "GET", "/files/" + n, auth=c.main, timeout=20)
            if r is not None and r.status == 200 and len(r.body) > 0:
                big.append((n, c, r.body))
            if len(big) == 2:
                break
        if len(big) < 2:
            self.failures.append("sabotage: fewer than 2 non-empty acknowledged files")
            return
        (gone, gc, _), (flipped, fc, data) = big
        r1 = request_once(self.port, "DELETE", "/files/" + gone, auth=gc.main, timeout=20)
        r2 = request_once(self.port, "PUT", "/files/" + flipped,
                          bytes([data[0] ^ 0xFF]) + data[1:], auth=fc.main, timeout=20)
        if r1 is None or r1.status != 204 or r2 is None or r2.status != 204:
            self.failures.append("sabotage: the DELETE or PUT was not acknowledged")
            return
        log("sabotage: deleted %s, flipped the first byte of %s" % (gone, flipped))

    def verify(self, stack, clients, rounds):
        port = self.port
        lost, corrupt = [], []
        verified = 0
        accounts = list(self.term_accounts)
        for c in clients:
            accounts += c.accounts
            lost += c.online_lost
            corrupt += c.online_corrupt
        acked = (sum(sum(c.acks.values()) for c in clients) + len(self.term_accounts) +
                 len(self.term_files.entries))
        files = {}   # name -> the ledger that has it (the entry's owner reads it back)
        for led in [self.term_files] + [c.files for c in clients]:
            for name in led.entries:
                files[name] = led

        def answered(r):
            return r is not None and r.status != 503

        def check(item):
            """An account's status, or a file's Resp; None: no answer (503 thrice)."""
            kind, what = item
            if kind == "a":
                r = ask(lambda: request_once(port, "GET", "/files/hello.txt", auth=what,
                                             timeout=20), answered, 0.5, tries=3)
                return r.status if answered(r) else None
            owner = files[what].entries[what].owner
            r = ask(lambda: request_once(port, "GET", "/files/" + what, auth=owner, timeout=30),
                    answered, 0.5, tries=3)
            return r if answered(r) else None

        # a few threads: thousands of accounts take a while one by one
        work = [("a", a) for a in accounts] + [("f", n) for n in sorted(files)]
        results = read_back(work, check, threads=4, join_timeout=self.args.reserve)
        unanswered = 0
        for (kind, what), res in zip(work, results):
            if kind == "a":
                if res is None:
                    unanswered += 1
                elif res == 401:
                    lost.append("account %s: 401 (acknowledged, cannot log in)" % what[0])
                else:
                    verified += 1
                continue
            led = files[what]
            if res is None:
                unanswered += 1
                continue
            v = led.judge(what, res.status, res.body)
            if v == "ok":
                verified += 1
            elif v == "lost":
                lost.append("%s: %s, the ledger allows %s" %
                            (what, describe(res), allowed(led.entries[what])))
            elif v == "corrupt":
                corrupt.append("%s: %s, matching no acknowledged or in-flight version" %
                               (what, describe(res)))
            else:
                self.failures.append("%s: GET answered %d" % (what, res.status))
        if unanswered:
            self.failures.append("%d checks got no answer" % unanswered)

        kinds = {"account": 0, "upload": 0, "delete": 0}
        unknown = {}
        rejected = {}
        for c in clients:
            for k in kinds:
                kinds[k] += c.acks[k]
            for k, n in c.unknown.items():
                unknown[k] = unknown.get(k, 0) + n
            for k, n in c.rejected.items():
                rejected[k] = rejected.get(k, 0) + n
        log("acknowledged: %d accounts, %d uploads, %d deletes (+%d in the SIGTERM round); "
            "not acknowledged (no answer or 5xx): %s" %
            (kinds["account"], kinds["upload"], kinds["delete"],
             len(self.term_accounts) - 1 + len(self.term_files.entries),
             ", ".join("%s: %d" % kv for kv in sorted(unknown.items())) or "none"))
        if rejected:
            log("unexpected answers (not failures): %s" %
                ", ".join("%s: %d" % kv for kv in sorted(rejected.items())))
        for n in self.notes:
            log("NOTE: " + n)
        for x in lost[:20]:
            log("LOST: " + x)
        for x in corrupt[:20]:
            log("CORRUPT: " + x)
        for x in self.failures:
            log("FAIL: " + x)
        print("rounds %d, writes acknowledged %d, verified %d, lost %d, corrupt %d" %
              (rounds, acked, verified, len(lost), len(corrupt)))
        sys.stdout.flush()
        if acked == 0:
            log("FAIL: nothing was acknowledged")
        return not lost and not corrupt and acked > 0 and not self.failures

    def dump_logs(self, d):
        for root, _, names in os.walk(d):
            for n in sorted(names):
                if n.endswith((".log", ".err")):
                    p = os.path.join(root, n)
                    try:
                        with open(p, errors="replace") as f:
                            tail = f.readlines()[-15:]
                    except OSError:
                        continue
                    sys.stderr.write("===== %s (last 15 lines)\n%s" % (p, "".join(tail)))


def read_status(s):
    """The status code of the HTTP response on socket s, or None (no answer)."""
    s.settimeout(30)
    try:
        return Conn.adopt(s).read_head()[0]
    except (OSError, HttpError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["redis", "mysql"], default="redis")
    ap.add_argument("--mode", choices=["threads", "processes"], default="threads",
                    help="server2's process model (processes: workers are victims too)")
    ap.add_argument("--rounds", type=int, default=20, help="SIGKILL rounds (default 20)")
    ap.add_argument("--time-limit", type=float, default=600,
                    help="seconds for the whole run; rounds stop early to keep it (default 600)")
    ap.add_argument("--reserve", type=float, default=60,
                    help="seconds kept for the SIGTERM round and the checks (default 60)")
    ap.add_argument("--heal-timeout", type=int, default=30,
                    help="seconds the stack has to become healthy after a kill (default 30)")
    ap.add_argument("--clients", type=int, default=6, help="client threads (default 6)")
    ap.add_argument("--max-size", type=int, default=2 * 1024 * 1024,
                    help="largest upload in bytes (default 2 MiB)")
    ap.add_argument("--seed", type=int, default=None, help="default: random, printed")
    ap.add_argument("--no-sigterm", dest="sigterm", action="store_false",
                    help="skip the SIGTERM round")
    ap.add_argument("--no-uploads", dest="uploads", action="store_false",
                    help="accounts only, even if server1 implements PUT")
    ap.add_argument("--server1-flag", action="append", metavar="FLAG",
                    help="extra server1 flag (repeatable), e.g. --server1-flag=--commit-window=2ms")
    ap.add_argument("--bin-dir", default=os.environ.get("BIN_DIR",
                                                        os.path.join(TOP, "build", "release")))
    ap.add_argument("--tmpdir", default=None, help="where the run dir goes (default $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the run dir")
    ap.add_argument("--sabotage", action="store_true",
                    help="test of the checker: damage two acknowledged files before the check; "
                    "the run must then report lost >= 1 and corrupt >= 1")
    args = ap.parse_args()
    if args.rounds < 0 or args.clients < 1 or args.max_size < 0:
        ap.error("--rounds >= 0, --clients >= 1, --max-size >= 0")
    args.bin_dir = os.path.abspath(args.bin_dir)
    for prog in ("server1", "server2"):
        if not os.access(os.path.join(args.bin_dir, prog), os.X_OK):
            ap.error("no %s in %s: run make" % (prog, args.bin_dir))
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    log("seed %d (rerun with --seed %d), %d rounds, backend %s, mode %s" %
        (args.seed, args.seed, args.rounds, args.backend, args.mode))
    # server1 checkpoints its upload index every 40 records (not every million): kills land
    # while one is written, and restarts load one and replay the log after it
    os.environ.setdefault("S1_TEST_STORE_CKPT_RECORDS", "40")

    # orphans of stack.sh (the servers, the database) become our children: we can read
    # server1's and server2's exit status after SIGTERM
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            log("prctl(PR_SET_CHILD_SUBREAPER) failed: exit status checks may be skipped")
    except OSError:
        pass

    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    try:
        return Harness(args).run()
    except KeyboardInterrupt:
        log("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
