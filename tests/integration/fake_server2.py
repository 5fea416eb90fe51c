#!/usr/bin/env python3
"""fake_server2.py - a tiny stand-in for server2 speaking common/PROTOCOL.md, for deterministic
tests of server1 alone.

Accounts live in memory: "alice", "slowpoke" and "sloth" (password "secret") exist at start. CREATE adds an
account (EXISTS if taken), VERIFY checks one (DENIED if wrong), PING answers OK. The account rules
of common/account.h give INVALID. Knobs for tests:
  --unavailable-file PATH   while PATH exists, CREATE/VERIFY answer UNAVAILABLE
  --blackhole-file PATH     while PATH exists, CREATE/VERIFY get no answer at all
  --slow-delay SECONDS      VERIFY for "slowpoke" is answered after this delay (default 2), for
                            "sloth" after twice as long, so answers come back out of order
  --log-requests            print "request CREATE|VERIFY USER" on stderr for each one received
Prints "listening on HOST:PORT" on stderr once ready (--port 0 picks a free port).
"""
import argparse
import asyncio
import os
import re
import struct
import sys

HELLO, HELLO_ACK, CREATE, VERIFY, REPLY, PING = 1, 2, 3, 4, 5, 6
ST_OK, ST_EXISTS, ST_DENIED, ST_INVALID, ST_UNAVAILABLE = 0, 1, 2, 3, 4
MAGIC = 0x41555448
HDR = struct.Struct(">IBBHI")
USER_RE = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")

users = {b"alice": b"secret", b"slowpoke": b"secret", b"sloth": b"secret"}
args = None
stats = {"conns": 0, "requests": 0}


def frame(ftype, status, fid, payload=b""):
    return HDR.pack(len(payload), ftype, status, 0, fid) + payload


def valid(user, pw):
    return USER_RE.match(user) is not None and 1 <= len(pw) <= 256 and b"\0" not in pw


async def answer_later(writer, fid, status, delay):
    await asyncio.sleep(delay)
    if not writer.is_closing():
        writer.write(frame(REPLY, status, fid))


async def serve(reader, writer):
    stats["conns"] += 1
    hello_done = False
    try:
        while True:
            hdr = await reader.readexactly(HDR.size)
            plen, ftype, _status, reserved, fid = HDR.unpack(hdr)
            if plen > 512 or reserved != 0:
                break
            payload = await reader.readexactly(plen) if plen else b""
            if not hello_done:
                if ftype != HELLO or plen != 6:
                    break
                magic, version = struct.unpack(">IH", payload)
                if magic != MAGIC:
                    break
                if version != 1:
                    writer.write(frame(HELLO_ACK, 6, fid, struct.pack(">H", 1)))
                    break
                writer.write(frame(HELLO_ACK, ST_OK, fid, struct.pack(">H", 1)))
                hello_done = True
                continue
            stats["requests"] += 1
            if ftype == PING and plen == 0:
                writer.write(frame(REPLY, ST_OK, fid))
                continue
            if ftype not in (CREATE, VERIFY) or plen < 3:
                break
            ulen, pwlen = struct.unpack(">BH", payload[:3])
            if 3 + ulen + pwlen != plen:
                break
            user, pw = payload[3:3 + ulen], payload[3 + ulen:]
            if args.log_requests:
                print("request %s %s" % ("CREATE" if ftype == CREATE else "VERIFY",
                                         user.decode("ascii", "replace")), file=sys.stderr, flush=True)
            if args.blackhole_file and os.path.exists(args.blackhole_file):
                continue
            if args.unavailable_file and os.path.exists(args.unavailable_file):
                writer.write(frame(REPLY, ST_UNAVAILABLE, fid))
                continue
            if not valid(user, pw):
                writer.write(frame(REPLY, ST_INVALID, fid))
                continue
            if ftype == CREATE:
                if user in users:
                    st = ST_EXISTS
                else:
                    users[user] = pw
                    st = ST_OK
                writer.write(frame(REPLY, st, fid))
            else:
                st = ST_OK if users.get(user) == pw else ST_DENIED
                if user in (b"slowpoke", b"sloth"):
                    delay = args.slow_delay * (2 if user == b"sloth" else 1)
                    asyncio.ensure_future(answer_later(writer, fid, st, delay))
                else:
                    writer.write(frame(REPLY, st, fid))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    global args
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--unavailable-file")
    ap.add_argument("--blackhole-file")
    ap.add_argument("--slow-delay", type=float, default=2.0)
    ap.add_argument("--log-requests", action="store_true")
    args = ap.parse_args()
    server = await asyncio.start_server(serve, args.host, args.port, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {args.host}:{port}", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
