#!/usr/bin/env python3
"""chunkput.py - PUT uploads with Transfer-Encoding: chunked, for tests/integration/test_chunked.sh.
The connection is made by itls.py: over TLS when the run is over HTTPS (ITEST_TLS=1).

  chunkput.py client PORT NAME FILE --auth USER:PASS
      http.client's own chunked encoding (encode_chunked), the file given in chunks of odd
      sizes (1, 7, 4093, 65537, 3 bytes, ... over again); prints the status code.
  chunkput.py raw PORT NAME --auth USER:PASS [--expect] [--then-get NAME] < BODY
      the head, then stdin as the chunked body exactly as it is (framing included), in pieces of
      1, 5, 17 and 333 bytes with a pause of 1 ms after each, so that the pieces reach server1
      in many reads (with --expect: "Expect: 100-continue", and the body only after the 100);
      prints the final status and "closed" if server1 then closed the connection, else "open".
      --then-get NAME: on the same connection, a GET of /files/NAME after the answer; its
      status is printed too (a body's end must be found exactly for that request to parse).
      --pause-at N --go PATH: after N bytes of the body (at once), create PATH.started and
      wait (at most 30 s) for PATH to exist before the rest. --trickle S: the body one byte
      every S seconds instead (until server1 answers).
"""
import argparse
import base64
import http.client
import os
import sys
import time

import itls

PIECES = (1, 7, 4093, 65537, 3, 1021, 131071)
RAW_PIECES = (1, 5, 17, 333)


def auth_header(auth):
    return "Basic " + base64.b64encode(auth.encode()).decode()


def client(args):
    if itls.enabled():
        conn = http.client.HTTPSConnection("127.0.0.1", args.port, timeout=30,
                                           context=itls.context())
    else:
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    with open(args.file, "rb") as f:
        data = f.read()

    def chunks():
        off, k = 0, 0
        while off < len(data):
            n = PIECES[k % len(PIECES)]
            yield data[off:off + n]
            off += n
            k += 1

    conn.request("PUT", "/files/" + args.name, body=chunks(), encode_chunked=True,
                 headers={"Authorization": auth_header(args.auth)})
    resp = conn.getresponse()
    resp.read()
    print(resp.status)


def read_answer(sock, buf, deadline):
    """(status, rest of buf, eof): the next final answer's status (0 if none in time); the
    answer's body (by its Content-Length) is taken off buf."""
    eof = False
    while True:
        while b"\r\n\r\n" not in buf and not eof:
            left = deadline - time.monotonic()
            if left <= 0:
                return 0, buf, eof
            try:
                d = itls.recv_within(sock, left)
            except OSError:
                d = b""
            if d is None:
                continue
            if not d:
                eof = True
            buf += d
        if b"\r\n\r\n" not in buf:
            return 0, buf, eof
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        clen = 0
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            if k.strip().lower() == "content-length":
                clen = int(v.strip())
        if status == 100:
            buf = rest
            continue
        while len(rest) < clen and not eof:
            if time.monotonic() >= deadline:
                break
            try:
                d = itls.recv_within(sock, max(deadline - time.monotonic(), 0.01))
            except OSError:
                d = b""
            if d is None:
                continue
            if not d:
                eof = True
            rest += d
        return status, rest[clen:], eof


def closed_after(sock, buf, eof):
    """Whether the server closed the connection (within 2 s) with nothing more to say."""
    if eof:
        return True
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            d = itls.recv_within(sock, deadline - time.monotonic())
        except OSError:
            return True
        if d == b"":
            return True
    return False


def raw(args):
    body = sys.stdin.buffer.read()
    sock = itls.connect(args.port, timeout=20)
    head = "PUT /files/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" % args.name
    head += "Authorization: %s\r\n" % auth_header(args.auth)
    if args.expect:
        head += "Expect: 100-continue\r\n"
    sock.sendall((head + "\r\n").encode())
    buf = b""
    if args.expect:
        deadline = time.monotonic() + 20
        while b"\r\n\r\n" not in buf and time.monotonic() < deadline:
            d = itls.recv_within(sock, deadline - time.monotonic())
            if d == b"":
                break
            buf += d or b""
        if not buf.startswith(b"HTTP/1.1 100 "):
            print("no-100", buf[:40])
            return
        buf = buf.split(b"\r\n\r\n", 1)[1]
    off, k = 0, 0
    try:
        if args.pause_at:
            sock.sendall(body[:args.pause_at])
            off = args.pause_at
            open(args.go + ".started", "w").close()
            deadline = time.monotonic() + 30
            while not os.path.exists(args.go) and time.monotonic() < deadline:
                time.sleep(0.01)
        while off < len(body):
            n = 1 if args.trickle else RAW_PIECES[k % len(RAW_PIECES)]
            sock.sendall(body[off:off + n])
            off += n
            k += 1
            if args.trickle:
                d = itls.recv_within(sock, args.trickle)
                if d is not None:  # an answer (or the end) came: stop sending
                    buf += d
                    break
            time.sleep(0.001)
    except OSError:
        pass  # server1 answered and closed before the end: the answer says why
    status, buf, eof = read_answer(sock, buf, time.monotonic() + 20)
    out = [str(status)]
    if args.then_get and not eof:
        sock.sendall(("GET /files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n"
                      % (args.then_get, auth_header(args.auth))).encode())
        st2, buf, eof = read_answer(sock, buf, time.monotonic() + 20)
        out.append(str(st2))
    out.append("closed" if closed_after(sock, buf, eof) else "open")
    print(" ".join(out))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("client")
    c.add_argument("port", type=int)
    c.add_argument("name")
    c.add_argument("file")
    c.add_argument("--auth", required=True)
    r = sub.add_parser("raw")
    r.add_argument("port", type=int)
    r.add_argument("name")
    r.add_argument("--auth", required=True)
    r.add_argument("--expect", action="store_true")
    r.add_argument("--then-get")
    r.add_argument("--pause-at", type=int, default=0)
    r.add_argument("--go")
    r.add_argument("--trickle", type=float, default=0)
    args = ap.parse_args()
    client(args) if args.cmd == "client" else raw(args)


if __name__ == "__main__":
    main()
