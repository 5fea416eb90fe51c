#!/usr/bin/env python3
"""s2client.py - a small client of server2's protocol (common/PROTOCOL.md) for tests.

Usage: s2client.py [--host H] --port P COMMAND [ARGS]
  hello                       HELLO; prints the HELLO_ACK status name
  create USER PASS            prints the REPLY status name (ok, exists, denied, ...)
  verify USER PASS            likewise
  ping                        likewise
  pipeline N PREFIX PASS      on one connection, sends N requests back to back without
                              waiting (creates of PREFIX<i>, verifies of them, pings, bad
                              names), then reads every reply; prints "ok N" if each id was
                              answered exactly once with the expected status
  bad KIND                    sends bad input; prints "closed" if server2 closed the
                              connection, "open" if it is still open after --wait seconds,
                              then " other-ok" if a second connection opened before still
                              answers a PING.
                              KIND: garbage, oversize, reserved, badtype, nohello, reply,
                              hello2, truncated (a partial frame: must stay open),
                              badversion (prints "bad-version closed" on success)
  until STATUS create|verify USER PASS TIMEOUT
                              repeats the request (reconnecting as needed) until it gets
                              STATUS; prints "STATUS after N ms", or "timeout (last: X)"
  idle SECONDS                HELLO, then silence; prints "closed" if server2 closes the
                              connection within SECONDS, else "open"
  conns N                     opens N connections at once, HELLO on each; prints how many
                              got HELLO_ACK ok
  term N PID PASS PREFIX      sends N creates of PREFIX<i> on one connection, waits until
                              server2 has read them, sends SIGTERM to PID and reads the
                              replies; prints "answered A/N, then closed" (or what happened)
  spread NWRONG NRIGHT USER PASS
                              on one connection, sends NWRONG verifies of USER with a wrong
                              password and NRIGHT with PASS spread evenly among them, back to
                              back, then reads every reply; prints "right R/NRIGHT first F
                              last L" (F, L: ms from the send to the first and last reply)
  timing N USER PASS          alternates N verifies of USER with a wrong password and N of
                              an unknown user, one at a time; prints "wrong W unknown U"
                              (median ms of each kind)
Exit status: 0 if the command ran (whatever the answer), 1 on a client-side failure.
"""

import argparse
import os
import signal
import socket
import struct
import sys
import time

HELLO, HELLO_ACK, CREATE, VERIFY, REPLY, PING = 1, 2, 3, 4, 5, 6
MAGIC = 0x41555448
STATUS = ["ok", "exists", "denied", "invalid", "unavailable", "internal", "bad-version"]


def status_name(st):
    return STATUS[st] if 0 <= st < len(STATUS) else "status-%d" % st


def frame(ftype, fid, payload=b"", status=0, reserved=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">IBBHI", n, ftype, status, reserved, fid) + payload


def hello_frame(version=1, fid=0):
    return frame(HELLO, fid, struct.pack(">IH", MAGIC, version))


def cred_frame(ftype, fid, user, password):
    u = user.encode() if isinstance(user, str) else user
    p = password.encode() if isinstance(password, str) else password
    return frame(ftype, fid, struct.pack(">BH", len(u), len(p)) + u + p)


class Conn:
    def __init__(self, host, port, timeout=10.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.s.close()

    def send(self, data):
        self.s.sendall(data)

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed by server2")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self):
        hdr = self.read_exact(12)
        n, ftype, st, _res, fid = struct.unpack(">IBBHI", hdr)
        payload = self.read_exact(n) if n else b""
        return ftype, st, fid, payload

    def hello(self):
        self.send(hello_frame())
        ftype, st, _fid, _p = self.read_frame()
        if ftype != HELLO_ACK:
            raise RuntimeError("expected HELLO_ACK, got type %d" % ftype)
        return st

    def request(self, ftype, fid, user=None, password=None):
        if ftype == PING:
            self.send(frame(PING, fid))
        else:
            self.send(cred_frame(ftype, fid, user, password))
        rtype, st, rid, _p = self.read_frame()
        if rtype != REPLY or rid != fid:
            raise RuntimeError("bad reply: type %d id %d for id %d" % (rtype, rid, fid))
        return st

    def closed_within(self, seconds):
        """True if the server closes (EOF or reset) within `seconds`; skips any frames."""
        self.s.settimeout(seconds)
        try:
            while True:
                if not self.s.recv(65536):
                    return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True


def cmd_simple(a):
    c = Conn(a.host, a.port)
    st = c.hello()
    if st != 0:
        print(status_name(st))
        return 0
    if a.cmd == "hello":
        print(status_name(st))
    elif a.cmd == "ping":
        print(status_name(c.request(PING, 7)))
    else:
        ftype = CREATE if a.cmd == "create" else VERIFY
        print(status_name(c.request(ftype, 42, a.args[0], a.args[1])))
    c.close()
    return 0


def cmd_pipeline(a):
    n, prefix, pw = int(a.args[0]), a.args[1], a.args[2]
    c = Conn(a.host, a.port, timeout=60)
    if c.hello() != 0:
        print("hello refused")
        return 0
    reqs = []  # (id, bytes, expected status or set of statuses)
    users = []
    for i in range(n):
        fid = 1000 + i * 7  # ids need not be consecutive
        kind = i % 5
        if kind in (0, 1):
            user = "%s%d" % (prefix, i)
            users.append(user)
            reqs.append((fid, cred_frame(CREATE, fid, user, pw), {"ok"}))
        elif kind == 2 and users:
            # an earlier create in the same pipeline: may be answered before it, so either
            reqs.append((fid, cred_frame(VERIFY, fid, users[-1], pw), {"ok", "denied"}))
        elif kind == 3:
            reqs.append((fid, frame(PING, fid), {"ok"}))
        else:
            reqs.append((fid, cred_frame(VERIFY, fid, "bad name!", pw), {"invalid"}))
    c.send(b"".join(r[1] for r in reqs))
    want = {r[0]: r[2] for r in reqs}
    seen = {}
    for _ in reqs:
        rtype, st, rid, _p = c.read_frame()
        if rtype != REPLY:
            print("unexpected frame type %d" % rtype)
            return 0
        if rid in seen or rid not in want:
            print("unexpected or repeated id %d" % rid)
            return 0
        seen[rid] = status_name(st)
    bad = [(rid, seen[rid]) for rid in want if seen[rid] not in want[rid]]
    if bad:
        print("wrong statuses: %s" % bad[:5])
        return 0
    # the verifies that may have raced their create must succeed now
    for u in users[:3]:
        if c.request(VERIFY, 1, u, pw) != 0:
            print("verify of %s failed after the pipeline" % u)
            return 0
    print("ok %d" % len(seen))
    return 0


def cmd_bad(a):
    other = Conn(a.host, a.port)
    other.hello()
    res = bad_input(a)
    try:
        if other.request(PING, 99) == 0:
            res += " other-ok"
    except (OSError, EOFError, RuntimeError) as e:
        res += " other-failed (%s)" % e
    print(res)
    return 0


def bad_input(a):
    kind = a.args[0]
    c = Conn(a.host, a.port)
    if kind == "garbage":
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    elif kind == "oversize":
        c.send(hello_frame())
        c.read_frame()
        c.send(frame(VERIFY, 1, b"", length=1 << 20))
    elif kind == "reserved":
        c.send(frame(HELLO, 0, struct.pack(">IH", MAGIC, 1), reserved=1))
    elif kind == "badtype":
        c.send(hello_frame())
        c.read_frame()
        c.send(frame(99, 1))
    elif kind == "nohello":
        c.send(cred_frame(VERIFY, 1, "alice", "pw"))
    elif kind == "reply":
        c.send(hello_frame())
        c.read_frame()
        c.send(frame(REPLY, 1))
    elif kind == "hello2":
        c.send(hello_frame())
        c.read_frame()
        c.send(hello_frame())
    elif kind == "truncated":
        c.send(hello_frame())
        c.read_frame()
        c.send(cred_frame(VERIFY, 1, "alice", "password")[:15])
    elif kind == "badversion":
        c.send(hello_frame(version=99))
        try:
            ftype, st, _fid, _p = c.read_frame()
        except EOFError:
            return "closed without HELLO_ACK"
        if ftype != HELLO_ACK:
            return "got frame type %d" % ftype
        return "%s %s" % (status_name(st), "closed" if c.closed_within(a.wait) else "open")
    else:
        raise RuntimeError("unknown kind %s" % kind)
    return "closed" if c.closed_within(a.wait) else "open"


def cmd_idle(a):
    c = Conn(a.host, a.port)
    c.hello()
    print("closed" if c.closed_within(float(a.args[0])) else "open")
    return 0


def cmd_conns(a):
    n = int(a.args[0])
    conns = [Conn(a.host, a.port) for _ in range(n)]
    ok = 0
    for c in conns:
        try:
            if c.hello() == 0:
                ok += 1
        except (OSError, EOFError, RuntimeError):
            pass
    print(ok)
    return 0


def cmd_until(a):
    want, op, user, pw, timeout = a.args[0], a.args[1], a.args[2], a.args[3], float(a.args[4])
    ftype = CREATE if op == "create" else VERIFY
    start = time.monotonic()
    last = "none"
    c = None
    while time.monotonic() - start < timeout:
        try:
            if c is None:
                c = Conn(a.host, a.port, timeout=5)
                c.hello()
            last = status_name(c.request(ftype, 5, user, pw))
            if last == want:
                print("%s after %d ms" % (want, (time.monotonic() - start) * 1000))
                return 0
        except (OSError, EOFError, RuntimeError) as e:
            last = "error: %s" % e
            if c is not None:
                c.close()
            c = None
        time.sleep(0.05)
    print("timeout (last: %s)" % last)
    return 0


def cmd_term(a):
    n, pid, pw, prefix = int(a.args[0]), int(a.args[1]), a.args[2], a.args[3]
    c = Conn(a.host, a.port, timeout=60)
    c.hello()
    c.send(b"".join(cred_frame(CREATE, i + 1, "%s%d" % (prefix, i), pw) for i in range(n)))
    time.sleep(0.3)  # server2's loop reads them at once; they take far longer to answer
    os.kill(pid, signal.SIGTERM)
    got = {}
    try:
        for _ in range(n):
            rtype, st, rid, _p = c.read_frame()
            if rtype == REPLY:
                got[rid] = status_name(st)
    except (EOFError, ConnectionResetError) as e:
        print("answered %d/%d, then %s" % (len(got), n, e))
        return 0
    oks = sum(1 for v in got.values() if v == "ok")
    after = "closed" if c.closed_within(10) else "still open"
    print("answered %d/%d (%d ok), then %s" % (len(got), n, oks, after))
    return 0


def cmd_spread(a):
    nwrong, nright, user, pw = int(a.args[0]), int(a.args[1]), a.args[2], a.args[3]
    total = nwrong + nright
    right_at = {(k * total) // nright + total // (2 * nright) for k in range(nright)}
    c = Conn(a.host, a.port, timeout=120)
    c.hello()
    reqs = []
    for i in range(total):
        fid = i + 1
        reqs.append(cred_frame(VERIFY, fid, user, pw if i in right_at else pw + "-wrong"))
    t0 = time.monotonic()
    c.send(b"".join(reqs))
    first = last = None
    right = 0
    for _ in range(total):
        rtype, st, rid, _p = c.read_frame()
        now = time.monotonic()
        if rtype != REPLY:
            print("unexpected frame type %d" % rtype)
            return 0
        first = now if first is None else first
        last = now
        if rid - 1 in right_at and st == 0:
            right += 1
    print("right %d/%d first %d last %d" % (right, nright, (first - t0) * 1000, (last - t0) * 1000))
    return 0


def cmd_timing(a):
    n, user, pw = int(a.args[0]), a.args[1], a.args[2]
    c = Conn(a.host, a.port, timeout=60)
    c.hello()
    wrong, unknown = [], []
    for i in range(n):
        for kind, out in (("wrong", wrong), ("unknown", unknown)):
            u = user if kind == "wrong" else "%s-nosuch%d" % (user, i)
            t0 = time.monotonic()
            st = c.request(VERIFY, 2 * i + (kind == "wrong"), u, pw + "-wrong")
            out.append((time.monotonic() - t0) * 1000)
            if st != 2:
                print("%s: status %s" % (kind, status_name(st)))
                return 0
    wrong.sort()
    unknown.sort()
    print("wrong %.3f unknown %.3f" % (wrong[n // 2], unknown[n // 2]))
    return 0


def main():
    p = argparse.ArgumentParser(description="server2 protocol test client")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wait", type=float, default=3.0, help="seconds to wait for a close")
    p.add_argument("cmd")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    cmds = {"hello": cmd_simple, "create": cmd_simple, "verify": cmd_simple, "ping": cmd_simple,
            "pipeline": cmd_pipeline, "bad": cmd_bad, "conns": cmd_conns, "idle": cmd_idle, "until": cmd_until, "term": cmd_term,
            "spread": cmd_spread, "timing": cmd_timing}
    if a.cmd not in cmds:
        print("unknown command %s" % a.cmd, file=sys.stderr)
        return 1
    try:
        return cmds[a.cmd](a)
    except (OSError, EOFError, RuntimeError) as e:
        print("error: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
