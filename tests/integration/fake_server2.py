#!/usr/bin/env python3
"""fake_server2.py - a tiny stand-in for server2 speaking docs/protocol.md (version 6), for
deterministic tests of server1 alone.

Accounts live in memory: "alice", "slowpoke", "sloth", "victim" and "ghost" (password "secret")
exist at start. CREATE adds an account (EXISTS if taken by another creation; the same creation
sent again, with the same token, gets OK), VERIFY checks one (DENIED if wrong),
PING answers OK; LEASE (1500 ms) goes out every 250 ms on every authenticated connection, so
server1 may use its cache. The account rules of common/account.h give INVALID. Every REPLY echoes its
request's type and user, except where a knob below says otherwise. The link handshake is done
with the key from --secret-file (without it: the all-zero key of --insecure-no-secret); a client
that fails it is closed. With a secret, every frame after the handshake is sealed (linkseal.py).
Knobs for tests:
  --secret-file PATH        the link secret
  --unavailable-file PATH   while PATH exists, CREATE/VERIFY answer UNAVAILABLE
  --deny-file PATH          while PATH exists, every VERIFY is DENIED (the passwords changed)
  --blackhole-file PATH     while PATH exists, CREATE/VERIFY get no answer at all
  --slow-delay SECONDS      VERIFY for "slowpoke" is answered after this delay (default 2), for
                            "sloth" after twice as long, so answers come back out of order
  --log-requests            print "request CREATE|VERIFY USER" on stderr for each one received
  --verify-delay SECONDS    a VERIFY no knob above concerns is answered after this delay
                            (default 0), so that requests sent together are in flight at once
  --replay-user NAME        the first VERIFY of NAME is held, never answered; the next VERIFY
                            of NAME (on any connection) gets first a late OK for the held id
                            (echo correct), then an OK for its own id that echoes "alice"
  --ghost-user NAME         a VERIFY of NAME is answered OK under an id 1000 above its own
  --expire-user NAME        a VERIFY of NAME is answered EXPIRED
  --protocol-version N      speak version N (default 6): a HELLO of another version gets
                            BAD_VERSION, as an older or newer server2 would answer
Logs "listening on HOST:PORT" on stderr once ready (--port 0 picks a free port), then one line
per request: "TYPE USER id=N budget=MS" (never the password), and one per failed handshake.
"""
import argparse
import asyncio
import hashlib
import hmac
import os
import re
import struct
import sys

import linkseal

HELLO, HELLO_ACK, CREATE, VERIFY, REPLY, PING, AUTH = 1, 2, 3, 4, 5, 6, 7
LEASE = 12
ST_OK, ST_EXISTS, ST_DENIED, ST_INVALID, ST_UNAVAILABLE = 0, 1, 2, 3, 4
ST_BAD_VERSION, ST_EXPIRED = 6, 7
MAGIC = 0x41555448
VERSION = 6
HDR = struct.Struct(">IBBHQI")
USER_RE = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")

users = {u: b"secret" for u in (b"alice", b"slowpoke", b"sloth", b"victim", b"ghost")}
args = None
key = bytes(32)
tokens = {}  # user -> the creation token of the CREATE that made it
held = {}  # user -> id of the VERIFY held by --replay-user
stats = {"conns": 0, "requests": 0}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def frame(ftype, status, fid, payload=b""):
    return HDR.pack(len(payload), ftype, status, 0, fid, 0) + payload


async def lease_loop(writer):
    """LEASE (1500 ms) now and every 250 ms, as a server2 that follows the account changes."""
    try:
        while not writer.is_closing():
            writer.write(frame(LEASE, 0, 0, struct.pack(">I", 1500)))
            await asyncio.sleep(0.25)
    except (ConnectionError, RuntimeError):
        pass


def reply(fid, status, rtype, user=b""):
    return frame(REPLY, status, fid, bytes([rtype, len(user)]) + user)


def mac(label, nonce_c, nonce_s):
    """libsodium crypto_auth (HMAC-SHA-512-256) over label || nonce_c || nonce_s."""
    return hmac.new(key, label + nonce_c + nonce_s, hashlib.sha512).digest()[:32]


def valid(user, pw):
    return USER_RE.match(user) is not None and 1 <= len(pw) <= 256 and b"\0" not in pw


async def answer_later(writer, fid, status, rtype, user, delay):
    await asyncio.sleep(delay)
    if not writer.is_closing():
        writer.write(reply(fid, status, rtype, user))


class SealedWriter:
    """The writer of a sealed link: each frame written goes out in its own sealed record."""

    def __init__(self, writer, tx):
        self.w = writer
        self.tx = tx

    def write(self, data):
        self.w.write(b"".join(self.tx.seal(f) for f in linkseal.split_frames(data)))

    def is_closing(self):
        return self.w.is_closing()

    def close(self):
        self.w.close()


async def read_frame(reader, rx=None):
    """The next frame; on a sealed link (rx) opened from its record. None: bad input."""
    if rx is not None:
        lenb = await reader.readexactly(2)
        n = struct.unpack(">H", lenb)[0]
        if not linkseal.BODY_MIN <= n <= linkseal.BODY_MAX:
            return None
        raw = rx.open(lenb, await reader.readexactly(n))
        if raw is None:
            log("a sealed record does not open; closing")
            return None
        plen, ftype, _status, reserved, fid, budget = HDR.unpack(raw[:HDR.size])
        if plen != len(raw) - HDR.size or reserved != 0:
            return None
        return ftype, fid, budget, raw[HDR.size:]
    hdr = await reader.readexactly(HDR.size)
    plen, ftype, _status, reserved, fid, budget = HDR.unpack(hdr)
    if plen > 640 or reserved != 0:
        return None
    payload = await reader.readexactly(plen) if plen else b""
    return ftype, fid, budget, payload


async def handshake(reader, writer, peer):
    """HELLO -> HELLO_ACK (our nonce, our proof) -> AUTH checked. False if the client failed,
    else (tx, rx): linkseal.Dir of each direction, or (None, None) on a link left in clear."""
    f = await read_frame(reader)
    if f is None or f[0] != HELLO or len(f[3]) != 38:
        return False
    magic, version = struct.unpack(">IH", f[3][:6])
    nonce_c = f[3][6:]
    if magic != MAGIC:
        return False
    if version != args.protocol_version:
        log("protocol version %d not supported (want %d)" % (version, args.protocol_version))
        writer.write(frame(HELLO_ACK, ST_BAD_VERSION, f[1],
                           struct.pack(">H", args.protocol_version) + bytes(64)))
        return False
    nonce_s = os.urandom(32)
    writer.write(frame(HELLO_ACK, ST_OK, f[1], struct.pack(">H", VERSION) + nonce_s +
                       mac(b"server2", nonce_c, nonce_s)))
    f = await read_frame(reader)
    if f is None or f[0] != AUTH or not hmac.compare_digest(
            f[3], mac(b"server1", nonce_c, nonce_s)):
        log("connection from %s failed link authentication" % peer)
        return False
    if not linkseal.enabled(key):
        return None, None
    return linkseal.pair(key, nonce_c, nonce_s, client=False)


async def serve(reader, writer):
    stats["conns"] += 1
    peer = "%s:%s" % writer.get_extra_info("peername")[:2]
    leases = None
    rx = None
    try:
        hs = await handshake(reader, writer, peer)
        if not hs:
            return
        if hs[0] is not None:
            writer = SealedWriter(writer, hs[0])
            rx = hs[1]
        log("connection %d from %s: link authenticated" % (stats["conns"], peer))
        leases = asyncio.ensure_future(lease_loop(writer))
        while True:
            f = await read_frame(reader, rx)
            if f is None:
                break
            ftype, fid, budget, payload = f
            stats["requests"] += 1
            if ftype == PING and not payload:
                writer.write(reply(fid, ST_OK, PING))
                continue
            if ftype not in (CREATE, VERIFY) or len(payload) < 3:
                break
            ulen, pwlen = struct.unpack(">BH", payload[:3])
            tlen = 16 if ftype == CREATE else 0  # a CREATE's creation token
            if 3 + tlen + ulen + pwlen != len(payload):
                break
            token = payload[3:3 + tlen]
            user, pw = payload[3 + tlen:3 + tlen + ulen], payload[3 + tlen + ulen:]
            log("%s %s id=%d budget=%d" % ("CREATE" if ftype == CREATE else "VERIFY",
                                           user.decode(errors="replace"), fid, budget))
            if args.log_requests:
                print("request %s %s" % ("CREATE" if ftype == CREATE else "VERIFY",
                                         user.decode("ascii", "replace")), file=sys.stderr, flush=True)
            if args.blackhole_file and os.path.exists(args.blackhole_file):
                continue
            if args.unavailable_file and os.path.exists(args.unavailable_file):
                writer.write(reply(fid, ST_UNAVAILABLE, ftype, user))
                continue
            if not valid(user, pw):
                writer.write(reply(fid, ST_INVALID, ftype, user))
                continue
            if ftype == CREATE:
                if user in users:
                    st = ST_OK if tokens.get(user) == token else ST_EXISTS  # sent again
                else:
                    users[user] = pw
                    tokens[user] = token
                    st = ST_OK
                writer.write(reply(fid, st, ftype, user))
                continue
            st = ST_OK if users.get(user) == pw else ST_DENIED
            if args.deny_file and os.path.exists(args.deny_file):
                st = ST_DENIED  # as if every password had changed
            if args.replay_user and user == args.replay_user.encode():
                if user not in held:
                    held[user] = fid
                    log("holding VERIFY %s id=%d" % (user.decode(), fid))
                    continue
                old = held.pop(user)
                log("late OK for id=%d, then OK for id=%d echoing alice" % (old, fid))
                writer.write(reply(old, ST_OK, VERIFY, user) + reply(fid, ST_OK, VERIFY, b"alice"))
            elif args.ghost_user and user == args.ghost_user.encode():
                writer.write(reply(fid + 1000, ST_OK, VERIFY, user))
            elif args.expire_user and user == args.expire_user.encode():
                writer.write(reply(fid, ST_EXPIRED, VERIFY, user))
            elif user in (b"slowpoke", b"sloth"):
                delay = args.slow_delay * (2 if user == b"sloth" else 1)
                asyncio.ensure_future(answer_later(writer, fid, st, ftype, user, delay))
            elif args.verify_delay > 0:
                asyncio.ensure_future(answer_later(writer, fid, st, ftype, user,
                                                   args.verify_delay))
            else:
                writer.write(reply(fid, st, ftype, user))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        if leases is not None:
            leases.cancel()
        writer.close()


async def main():
    global args, key
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--secret-file")
    ap.add_argument("--unavailable-file")
    ap.add_argument("--deny-file")
    ap.add_argument("--blackhole-file")
    ap.add_argument("--slow-delay", type=float, default=2.0)
    ap.add_argument("--log-requests", action="store_true")
    ap.add_argument("--verify-delay", type=float, default=0.0)
    ap.add_argument("--replay-user")
    ap.add_argument("--ghost-user")
    ap.add_argument("--expire-user")
    ap.add_argument("--protocol-version", type=int, default=VERSION)
    args = ap.parse_args()
    if args.secret_file:
        with open(args.secret_file, "rb") as f:
            key = hashlib.blake2b(f.read(), digest_size=32).digest()
    server = await asyncio.start_server(serve, args.host, args.port, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    log(f"listening on {args.host}:{port}")
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
