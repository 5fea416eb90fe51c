#!/usr/bin/env python3
"""s2client.py - a small client of server2's protocol (docs/protocol.md) for tests.

Usage: s2client.py [--host H] --port P [--secret-file F] [--budget MS] COMMAND [ARGS]
Every connection starts with the link handshake (HELLO, HELLO_ACK checked, AUTH) keyed by
--secret-file (without it: the all-zero key of --insecure-no-secret). Every REPLY must echo the
request's type and user; --budget sets the budget of CREATE/VERIFY frames (default 0 = none).
  hello                       handshake; prints the HELLO_ACK status name, or "auth-failed"
                              if server2 did not prove it holds the same secret
  create USER PASS [TOKEN]    prints the REPLY status name (ok, exists, denied, ...); TOKEN:
                              the creation token, 32 hex digits (default: a random one; the
                              same token again is the same creation sent again)
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
                              badversion, v5 (HELLO of version 99 or 5: prints
                              "bad-version closed" on success), sealflip, sealreplay,
                              sealclear (after the handshake, a sealed PING with a bit
                              flipped, one sent twice, a PING in clear),
                              dupid (two requests with one id in flight)
  unauth HOW USER PASS        a client that does not prove the secret pipelines a CREATE of
                              USER right behind: HOW = noauth (HELLO, CREATE; no AUTH) or
                              forged (HELLO, then AUTH keyed by --secret-file and the CREATE
                              in one write, server2's proof not checked); prints "closed" if
                              server2 closed without answering, else the CREATE's status
  budget USER PASS            on one connection, a CREATE of USER with no budget and right
                              behind it a VERIFY of USER with a budget of 1 ms; prints the
                              VERIFY's status (expired when the CREATE kept the worker busy)
  until STATUS create|verify USER PASS TIMEOUT
                              repeats the request (reconnecting as needed) until it gets
                              STATUS; prints "STATUS after N ms", or "timeout (last: X)"; a
                              create is one creation sent again (the same token)
  flood N PREFIX PASS VUSER VPASS
                              on one connection, a VERIFY of VUSER (so that it is in the
                              cache of the process serving the connection), N creates of
                              PREFIX<i> back to back, then
                              (0.2 s later) a VERIFY of VUSER; prints "verify STATUS T ms;
                              hash H ms; creates STATUS=COUNT ..." once every reply is in
                              (H: a CREATE of PREFIXalone timed alone first)
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
  churn SECONDS PREFIX PASS OUT
                              creates PREFIX<i> one after another for SECONDS, reconnecting
                              after any failure; writes "MS STATUS NAME" per attempt to OUT
                              (MS since the start; STATUS "error" for a failed connection)
                              and prints "ok N other M"
  hold N GOFILE [SRC]         opens N connections (from address SRC, default any) that send
                              nothing; prints "connected N", waits (at most 120 s) until
                              GOFILE exists, then prints "alive K" (K: still open)
  deadline silent|hello SECONDS
                              a connection that sends nothing, or HELLO only (HELLO_ACK read);
                              prints "closed after N ms" (from the connect) if server2 closes
                              it within SECONDS, else "open"
  caps                        five connections that send nothing, in this order: a0 a1 from
                              127.0.0.2, b0 b1 b2 from 127.0.0.1, then c0 from 127.0.0.3;
                              prints "closed: ... open: ..." (names in that order)
  full                        for --max-conns 2, one worker: an authenticated connection A,
                              then silent S1 and S2; S2 finishes its handshake, then S3
                              comes; prints "S1 closed|open, S2 STATUS, S3 closed|open, A
                              STATUS" (STATUS: a PING's)
  verifyall OUT PASS          a VERIFY of every NAME whose CREATE got "ok" in OUT (asked
                              again for up to 30 s while the answer is unavailable); prints
                              "lost N of M" and each lost name (denied), and how many got
                              no answer
Exit status: 0 if the command ran (whatever the answer), 1 on a client-side failure.
"""

import argparse
import hashlib
import hmac
import os
import select
import signal
import socket
import struct
import sys
import time

import linkseal

HELLO, HELLO_ACK, CREATE, VERIFY, REPLY, PING, AUTH = 1, 2, 3, 4, 5, 6, 7
SETPASS, DELETE, INVALIDATE, INVALIDATE_ACK, LEASE = 8, 9, 10, 11, 12
MAGIC = 0x41555448
VERSION = 6
HDR = struct.Struct(">IBBHQI")
STATUS = ["ok", "exists", "denied", "invalid", "unavailable", "internal", "bad-version",
          "expired", "limited"]
KEY = bytes(32)  # link key, from --secret-file
BUDGET = 0


def load_key(path):
    """The key both programs derive from the secret file: BLAKE2b-256 of its bytes."""
    with open(path, "rb") as f:
        return hashlib.blake2b(f.read(), digest_size=32).digest()


def link_mac(key, label, nonce_c, nonce_s):
    """libsodium crypto_auth: HMAC-SHA-512 truncated to 32 bytes."""
    return hmac.new(key, label + nonce_c + nonce_s, hashlib.sha512).digest()[:32]


def status_name(st):
    if st == -1:
        return "auth-failed"
    return STATUS[st] if 0 <= st < len(STATUS) else "status-%d" % st


def frame(ftype, fid, payload=b"", status=0, reserved=0, length=None, budget=0):
    n = len(payload) if length is None else length
    return HDR.pack(n, ftype, status, reserved, fid, budget) + payload


def hello_frame(version=VERSION, fid=0, nonce=bytes(32)):
    return frame(HELLO, fid, struct.pack(">IH", MAGIC, version) + nonce)


def cred_frame(ftype, fid, user, password, budget=None, token=None):
    """CREATE, VERIFY or DELETE; a CREATE carries its creation token (random by default)."""
    u = user.encode() if isinstance(user, str) else user
    p = password.encode() if isinstance(password, str) else password
    tok = b""
    if ftype == CREATE:
        tok = os.urandom(16) if token is None else token
    return frame(ftype, fid, struct.pack(">BH", len(u), len(p)) + tok + u + p,
                 budget=BUDGET if budget is None else budget)


def setpass_frame(fid, user, password, new):
    u, p, n = user.encode(), password.encode(), new.encode()
    return frame(SETPASS, fid, struct.pack(">BHH", len(u), len(p), len(n)) + u + p + n,
                 budget=BUDGET)


def echo_of(ftype, user=b""):
    """The payload a REPLY to this request must carry."""
    u = user.encode() if isinstance(user, str) else user
    return bytes([ftype, len(u)]) + u


class Conn:
    def __init__(self, host, port, timeout=10.0, source=None):
        self.s = socket.create_connection((host, port), timeout=timeout,
                                          source_address=(source, 0) if source else None)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.tx = None  # linkseal.Dir of each direction once the link is sealed
        self.rx = None
        self.invalidated = []
        self.leases = 0

    def close(self):
        self.s.close()

    def send(self, data):
        """Sends frames, each sealed once the link is (see linkseal.split_frames)."""
        if self.tx is not None:
            data = b"".join(self.tx.seal(f) for f in linkseal.split_frames(data))
        self.s.sendall(data)

    def send_raw(self, data):
        """Sends bytes as they are, sealed link or not."""
        self.s.sendall(data)

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed by server2")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_one(self):
        """The bytes of the next frame, opened from its record on a sealed link."""
        if self.rx is None:
            hdr = self.read_exact(HDR.size)
            n = HDR.unpack(hdr)[0]
            return hdr + (self.read_exact(n) if n else b"")
        lenb = self.read_exact(2)
        n = struct.unpack(">H", lenb)[0]
        if not linkseal.BODY_MIN <= n <= linkseal.BODY_MAX:
            raise RuntimeError("sealed record length %d out of bounds" % n)
        f = self.rx.open(lenb, self.read_exact(n))
        if f is None:
            raise RuntimeError("a sealed record from server2 does not open")
        return f

    def read_frame(self):
        """The next frame other than LEASE (server2 sends those unasked; counted)."""
        while True:
            raw = self.read_one()
            n, ftype, st, _res, fid, _budget = HDR.unpack(raw[:HDR.size])
            payload = raw[HDR.size:]
            if len(payload) != n:
                raise RuntimeError("frame length %d, %d bytes" % (n, len(payload)))
            if ftype != LEASE:
                return ftype, st, fid, payload
            self.leases += 1

    def hello_ack(self):
        """Sends HELLO, reads HELLO_ACK: (status, server nonce, proof ok, client nonce)."""
        nonce_c = os.urandom(32)
        self.send(hello_frame(nonce=nonce_c))
        ftype, st, _fid, p = self.read_frame()
        if ftype != HELLO_ACK or len(p) != 66:
            raise RuntimeError("expected HELLO_ACK, got type %d" % ftype)
        nonce_s, mac = p[2:34], p[34:66]
        ok = hmac.compare_digest(mac, link_mac(KEY, b"server2", nonce_c, nonce_s))
        return st, nonce_s, ok, nonce_c

    def hello(self):
        """The whole handshake; returns the HELLO_ACK status (-1: server2's proof is wrong)."""
        st, nonce_s, ok, nonce_c = self.hello_ack()
        if st != 0:
            return st
        if not ok:
            return -1
        self.send(frame(AUTH, 0, link_mac(KEY, b"server1", nonce_c, nonce_s)))
        if linkseal.enabled(KEY):
            self.tx, self.rx = linkseal.pair(KEY, nonce_c, nonce_s, client=True)
        return st

    def next_reply(self):
        """The next REPLY; INVALIDATEs on the way are acknowledged (and counted)."""
        while True:
            rtype, st, rid, p = self.read_frame()
            if rtype != INVALIDATE:
                return rtype, st, rid, p
            self.invalidated.append(p[1:].decode())
            self.send(frame(INVALIDATE_ACK, rid))

    def request(self, ftype, fid, user=None, password=None, new=None, token=None):
        if ftype == PING:
            self.send(frame(PING, fid))
        elif ftype == SETPASS:
            self.send(setpass_frame(fid, user, password, new))
        else:
            self.send(cred_frame(ftype, fid, user, password, token=token))
        rtype, st, rid, p = self.next_reply()
        if rtype != REPLY or rid != fid:
            raise RuntimeError("bad reply: type %d id %d for id %d" % (rtype, rid, fid))
        if p != echo_of(ftype, user or b""):
            raise RuntimeError("reply to id %d echoes %r" % (fid, p))
        return st

    def closed_within(self, seconds):
        """True if the server closes (EOF or reset) within `seconds`; skips any frames (LEASEs
        keep coming on a connection that is up)."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.s.settimeout(left)
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
    elif a.cmd == "setpass":
        print(status_name(c.request(SETPASS, 42, a.args[0], a.args[1], a.args[2])))
    elif a.cmd == "delete":
        print(status_name(c.request(DELETE, 42, a.args[0], a.args[1])))
    elif a.cmd == "create":
        token = bytes.fromhex(a.args[2]) if len(a.args) > 2 else None
        if token is not None and len(token) != 16:
            raise RuntimeError("a creation token is 32 hex digits")
        print(status_name(c.request(CREATE, 42, a.args[0], a.args[1], token=token)))
    else:
        print(status_name(c.request(VERIFY, 42, a.args[0], a.args[1])))
    c.close()
    return 0


def cmd_pipeline(a):
    n, prefix, pw = int(a.args[0]), a.args[1], a.args[2]
    c = Conn(a.host, a.port, timeout=60)
    if c.hello() != 0:
        print("hello refused")
        return 0
    reqs = []  # (id, bytes, expected status or set of statuses, echo)
    users = []
    for i in range(n):
        fid = (1000 + i * 7) << 32 | i  # ids need not be consecutive; all 64 bits count
        kind = i % 5
        if kind in (0, 1):
            user = "%s%d" % (prefix, i)
            users.append(user)
            reqs.append((fid, cred_frame(CREATE, fid, user, pw), {"ok"}, echo_of(CREATE, user)))
        elif kind == 2 and users:
            # an earlier create in the same pipeline: may be answered before it, so either
            reqs.append((fid, cred_frame(VERIFY, fid, users[-1], pw), {"ok", "denied"},
                         echo_of(VERIFY, users[-1])))
        elif kind == 3:
            reqs.append((fid, frame(PING, fid), {"ok"}, echo_of(PING)))
        else:
            reqs.append((fid, cred_frame(VERIFY, fid, "bad name!", pw), {"invalid"},
                         echo_of(VERIFY, "bad name!")))
    c.send(b"".join(r[1] for r in reqs))
    want = {r[0]: r[2] for r in reqs}
    echo = {r[0]: r[3] for r in reqs}
    seen = {}
    for _ in reqs:
        rtype, st, rid, p = c.read_frame()
        if rtype != REPLY:
            print("unexpected frame type %d" % rtype)
            return 0
        if rid in seen or rid not in want:
            print("unexpected or repeated id %d" % rid)
            return 0
        if p != echo[rid]:
            print("reply to id %d echoes %r, not %r" % (rid, p, echo[rid]))
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
        c.hello()
        c.send(frame(VERIFY, 1, b"", length=1 << 20))
    elif kind == "reserved":
        c.send(frame(HELLO, 0, struct.pack(">IH", MAGIC, VERSION) + bytes(32), reserved=1))
    elif kind == "badtype":
        c.hello()
        c.send(frame(99, 1))
    elif kind == "nohello":
        c.send(cred_frame(VERIFY, 1, "alice", "pw"))
    elif kind == "reply":
        c.hello()
        c.send(frame(REPLY, 1))
    elif kind == "hello2":
        c.hello()
        c.send(hello_frame())
    elif kind == "truncated":
        c.hello()
        if c.tx is None:
            c.send(cred_frame(VERIFY, 1, "alice", "password")[:25])
        else:  # part of a sealed record
            c.send_raw(c.tx.seal(cred_frame(VERIFY, 1, "alice", "password"))[:25])
    elif kind == "ackwrong":
        c.hello()
        c.send(frame(INVALIDATE_ACK, 5))  # no INVALIDATE was ever sent on it
    elif kind == "dupid":
        c.hello()
        c.send(cred_frame(VERIFY, 5, "alice", "password") + cred_frame(VERIFY, 5, "bob", "pw"))
    elif kind in ("sealflip", "sealreplay", "sealclear"):
        # on a sealed link: a record with one bit flipped, the same record twice, or a frame
        # in clear after AUTH (a PING each; every one of them must close the connection)
        if c.hello() != 0 or c.tx is None:
            return "not sealed"
        ping = frame(PING, 1)
        if kind == "sealclear":
            c.send_raw(ping)
        else:
            rec = c.tx.seal(ping)
            if kind == "sealflip":
                rec = rec[:10] + bytes([rec[10] ^ 0x04]) + rec[11:]
                c.send_raw(rec)
            else:
                c.send_raw(rec)
                if c.next_reply()[1] != 0:
                    return "the first PING was not answered"
                c.send_raw(rec)
    elif kind in ("badversion", "v5"):
        c.send(hello_frame(version=99 if kind == "badversion" else 5))
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


def cmd_unauth(a):
    how, user, pw = a.args[0], a.args[1], a.args[2]
    c = Conn(a.host, a.port)
    create = cred_frame(CREATE, 1, user, pw)
    if how == "noauth":
        c.send(hello_frame(nonce=os.urandom(32)) + create)
    elif how == "forged":
        st, nonce_s, _ok, nonce_c = c.hello_ack()
        if linkseal.enabled(KEY):  # sealed with the keys of --secret-file, as server1 would
            c.tx, c.rx = linkseal.pair(KEY, nonce_c, nonce_s, client=True)
            create = c.tx.seal(create)
        c.send_raw(frame(AUTH, 0, link_mac(KEY, b"server1", nonce_c, nonce_s)) + create)
    else:
        raise RuntimeError("unknown way %s" % how)
    try:
        while True:
            rtype, st, _rid, _p = c.read_frame()
            if rtype == REPLY:
                print(status_name(st))
                return 0
    except (EOFError, ConnectionResetError):
        print("closed")
    return 0


def cmd_budget(a):
    user, pw = a.args[0], a.args[1]
    c = Conn(a.host, a.port, timeout=30)
    if c.hello() != 0:
        print("hello refused")
        return 0
    c.send(cred_frame(CREATE, 1, user, pw, budget=0) + cred_frame(VERIFY, 2, user, pw, budget=1))
    got = {}
    while len(got) < 2:
        rtype, st, rid, _p = c.read_frame()
        if rtype == REPLY:
            got[rid] = status_name(st)
    print(got.get(2, "none"))
    return 0


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
    token = os.urandom(16)  # one creation, sent until it gets its answer
    start = time.monotonic()
    last = "none"
    c = None
    while time.monotonic() - start < timeout:
        try:
            if c is None:
                c = Conn(a.host, a.port, timeout=5)
                c.hello()
            last = status_name(c.request(ftype, 5, user, pw, token=token))
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


def cmd_flood(a):
    n, prefix, pw, vuser, vpw = int(a.args[0]), a.args[1], a.args[2], a.args[3], a.args[4]
    c = Conn(a.host, a.port, timeout=120)
    c.hello()
    # on this connection, so in this process's auth cache (processes mode: one cache each)
    if c.request(VERIFY, 3, vuser, vpw) != 0:
        print("verify of %s failed before the flood" % vuser)
        return 0
    t0 = time.monotonic()
    c.request(CREATE, 2, prefix + "alone", pw)  # what one hash costs here
    hash_ms = (time.monotonic() - t0) * 1000
    c.send(b"".join(cred_frame(CREATE, 10 + i, "%s%d" % (prefix, i), pw) for i in range(n)))
    time.sleep(0.2)  # all of them read and queued by now
    t0 = time.monotonic()
    c.send(cred_frame(VERIFY, 1, vuser, vpw))
    counts = {}
    verify = None
    for _ in range(n + 1):
        rtype, st, rid, _p = c.read_frame()
        if rid == 1:
            verify = (status_name(st), (time.monotonic() - t0) * 1000)
        else:
            counts[status_name(st)] = counts.get(status_name(st), 0) + 1
    print("verify %s %.0f ms; hash %.0f ms; creates %s" % (verify[0], verify[1], hash_ms,
          " ".join("%s=%d" % kv for kv in sorted(counts.items()))))
    return 0


def cmd_inval(a):
    """inval USER PASS NEW ACK_MS|never: a second connection (the watcher) gets the INVALIDATE
    for USER when the first changes its password, and acknowledges it after ACK_MS (or never).
    Prints the change's status, whether the watcher got the INVALIDATE, how long after the
    watcher's ack the answer came (it must not come before), and whether the watcher was
    closed."""
    user, pw, new, when = a.args[0], a.args[1], a.args[2], a.args[3]
    watcher = Conn(a.host, a.port)
    changer = Conn(a.host, a.port)
    if watcher.hello() != 0 or changer.hello() != 0:
        print("hello refused")
        return 0
    if watcher.request(PING, 1) != 0:  # the watcher is serving: it will be told
        print("ping failed")
        return 0
    t0 = time.monotonic()
    changer.send(setpass_frame(7, user, pw, new))
    ftype, _st, fid, p = watcher.read_frame()
    if ftype != INVALIDATE or p[1:].decode() != user or fid == 0:
        print("watcher got type %d, not an INVALIDATE for %s" % (ftype, user))
        return 0
    acked_at = None
    early = False
    if when != "never":
        time.sleep(int(when) / 1000.0)
        # has the answer come already, before the watcher acknowledged? (the changer's own
        # INVALIDATE is acknowledged as it is read, in next_reply)
        r, _, _ = select.select([changer.s], [], [], 0)
        if r:
            changer.s.settimeout(0.05)
            try:
                rtype, st, rid, rp = changer.next_reply()
                early = True
            except (socket.timeout, BlockingIOError):
                pass
            changer.s.settimeout(10)
        acked_at = time.monotonic()
        watcher.send(frame(INVALIDATE_ACK, fid))
    if not early:
        rtype, st, rid, rp = changer.next_reply()
    answered = time.monotonic()
    if rtype != REPLY or rid != 7 or rp != echo_of(SETPASS, user):
        print("bad reply to SETPASS")
        return 0
    closed = "open" if acked_at is not None else (
        "closed" if watcher.closed_within(a.wait) else "open")
    if acked_at is not None:
        after = "reply-before-ack" if early else "reply-after-ack"
    else:
        after = "reply-after-%dms" % int((answered - t0) * 1000)
    print("%s invalidated %s %s" % (status_name(st), after, closed))
    return 0


def cmd_churn(a):
    secs, prefix, pw, out = float(a.args[0]), a.args[1], a.args[2], a.args[3]
    start = time.monotonic()
    c = None
    n = ok = 0
    with open(out, "w", buffering=1) as f:  # a line per attempt, readable at once
        while time.monotonic() - start < secs:
            name = "%s%d" % (prefix, n)
            n += 1
            try:
                if c is None:
                    c = Conn(a.host, a.port, timeout=5)
                    if c.hello() != 0:
                        raise RuntimeError("handshake refused")
                st = status_name(c.request(CREATE, n, name.encode(), pw.encode()))
            except (OSError, EOFError, RuntimeError):
                st = "error"
                if c is not None:
                    c.close()
                c = None
                time.sleep(0.05)
            ok += st == "ok"
            f.write("%d %s %s\n" % ((time.monotonic() - start) * 1000, st, name))
            if st not in ("ok", "error"):
                time.sleep(0.02)  # as a client would before trying again
    print("ok %d other %d" % (ok, n - ok))
    return 0


def cmd_hold(a):
    n, go = int(a.args[0]), a.args[1]
    src = (a.args[2], 0) if len(a.args) > 2 else None
    socks = [socket.create_connection((a.host, a.port), timeout=10, source_address=src)
             for _ in range(n)]
    print("connected", len(socks), flush=True)
    end = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < end:
        time.sleep(0.1)
    alive = 0
    for s in socks:  # still open on the server side: nothing to read, no EOF
        s.setblocking(False)
        try:
            alive += s.recv(1) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    print("alive", alive, flush=True)
    return 0


def cmd_deadline(a):
    what, secs = a.args[0], float(a.args[1])
    start = time.monotonic()
    c = Conn(a.host, a.port)
    if what == "hello":
        c.hello_ack()
    if c.closed_within(secs - (time.monotonic() - start)):
        print("closed after %d ms" % ((time.monotonic() - start) * 1000))
    else:
        print("open")
    return 0


def cmd_caps(a):
    order = [("a0", "127.0.0.2"), ("a1", "127.0.0.2"), ("b0", "127.0.0.1"), ("b1", "127.0.0.1"),
             ("b2", "127.0.0.1"), ("c0", "127.0.0.3")]
    conns = [(name, Conn(a.host, a.port, source=src)) for name, src in order]
    closed = [name for name, c in conns if c.closed_within(0.5)]
    print("closed: %s open: %s" % (" ".join(closed),
                                   " ".join(n for n, _ in conns if n not in closed)))
    return 0


def cmd_full(a):
    def ping(c):
        try:
            return status_name(c.request(PING, 1))
        except (OSError, EOFError, RuntimeError):
            return "closed"
    first = Conn(a.host, a.port)
    first.hello()
    st_a = ping(first)
    s1, s2 = Conn(a.host, a.port), Conn(a.host, a.port)
    s2.hello()
    st2 = ping(s2)
    s3 = Conn(a.host, a.port)
    print("S1 %s, S2 %s, S3 %s, A %s" % ("closed" if s1.closed_within(1) else "open", st2,
                                         "closed" if s3.closed_within(1) else "open",
                                         ping(first) if st_a == "ok" else st_a))
    return 0


def cmd_verifyall(a):
    out, pw = a.args[0], a.args[1]
    names = [l.split()[2] for l in open(out) if l.split()[1] == "ok"]
    c = Conn(a.host, a.port, timeout=10)
    c.hello()
    lost, unknown = [], []
    for i, name in enumerate(names):
        # "denied" says the account is not there; unavailable or internal says nothing: asked
        # again for up to 30 s
        deadline = time.monotonic() + 30
        while True:
            st = status_name(c.request(VERIFY, i + 1, name.encode(), pw.encode()))
            if st in ("ok", "denied") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if st == "denied":
            lost.append(name)
        elif st != "ok":
            unknown.append(name)
    print("lost %d of %d%s%s" % (len(lost), len(names), "".join(" " + x for x in lost[:20]),
                                 "; %d unanswered" % len(unknown) if unknown else ""))
    return 0


def main():
    p = argparse.ArgumentParser(description="server2 protocol test client")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wait", type=float, default=3.0, help="seconds to wait for a close")
    p.add_argument("--secret-file", help="the link secret (default: the all-zero key)")
    p.add_argument("--budget", type=int, default=0, help="budget of CREATE/VERIFY in ms")
    p.add_argument("cmd")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    global KEY, BUDGET
    if a.secret_file:
        KEY = load_key(a.secret_file)
    BUDGET = a.budget
    cmds = {"hello": cmd_simple, "create": cmd_simple, "verify": cmd_simple, "ping": cmd_simple,
            "pipeline": cmd_pipeline, "bad": cmd_bad, "conns": cmd_conns, "idle": cmd_idle, "until": cmd_until, "term": cmd_term,
            "spread": cmd_spread, "timing": cmd_timing, "flood": cmd_flood,
            "unauth": cmd_unauth, "budget": cmd_budget, "setpass": cmd_simple,
            "delete": cmd_simple, "inval": cmd_inval, "churn": cmd_churn,
            "verifyall": cmd_verifyall, "hold": cmd_hold, "deadline": cmd_deadline,
            "caps": cmd_caps, "full": cmd_full}
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
