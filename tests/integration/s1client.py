#!/usr/bin/env python3
"""s1client.py - raw-socket HTTP helpers for tests/integration/test_server1.sh, for the cases
curl cannot express (NUL bytes, pipelining, resets, slow readers, concurrency, /metrics syntax).
Answers are read with the fault-injection tests' HTTP/1.1 client (tests/faultlib/http.py).
Every connection is made by itls.py: over TLS when the run is over HTTPS (ITEST_TLS=1).

  raw PORT [--timeout S] [--rst] [--shut]
      send stdin as is, print every byte received; last line "<closed>" if the server closed the
      connection, "<open>" if it was still open after S seconds of silence (default 1.5).
      --rst: reset the connection (SO_LINGER 0) right after sending; --shut: half-close
      (over TLS: the TCP write side, without a close_notify).
  fetch PORT USER PASS CLIENTS ROUNDS NAME=PATH...
      CLIENTS threads, each on one keep-alive connection, GET every NAME ROUNDS times and compare
      the body with the file at PATH. Prints "ok N" or the first mismatch (exit 1).
  slowget PORT USER PASS NAME OUT [--delay S]
      GET /files/NAME reading 64 KiB every S seconds (default 0.05); body to OUT; prints status.
  pausedget PORT USER PASS NAME OUT STARTED GO [RANGE]
      GET /files/NAME (Range: bytes=RANGE if given, Connection: close) on a socket with a fixed
      64 KiB receive window, so most of a large response stays queued in server1; after the
      first bytes, creates STARTED and waits (at most 60 s) for GO to exist, then reads to the
      end, writes the body to OUT and prints the status code.
  maxconns PORT N
      open N connections and prove each is served, then one more, which sends nothing: prints
      "rejected, dated" if that one got a 503 with a current Date (within 60 s), "rejected, no
      Date" if the 503 had none, "rejected, closed" if it was closed without an answer,
      "accepted" otherwise (over TLS a refused connection fails its handshake: "closed").
  spread PORT METRICS_PORT N THREADS
      open N connections one after another, each served before the next, and hold them; then
      ask /metrics on METRICS_PORT (--metrics-listen, plain HTTP) and print how many
      connections each worker thread holds, least first (e.g. "4 4"), the metrics connection
      itself (worker 0's) left out.
  burst PORT N USER PASS
      open N connections, then send on each at once (after all are open) a GET /files/pub.txt
      with Basic USER:PASS (a "{i}" in USER is the connection's number, 1..N), and read every
      answer; prints the count of each status, sorted ("401=3 429=27"), then
      "retry-after=K": how many 429s carried a Retry-After of at least 1 s.
  metrics PORT [NAME...]
      GET /metrics from PORT, server1's --metrics-listen (plain HTTP always), check the whole text against the Prometheus text format (histograms
      cumulative, _count == +Inf bucket); print "valid", then the value of each NAME (a full
      series name with labels; 0 if absent).
"""
import email.utils
import os
import re
import socket
import ssl
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from faultlib.http import Conn, basic  # noqa: E402
import itls  # noqa: E402


def connect(port, rcvbuf=None):
    return itls.connect(port, timeout=10, rcvbuf=rcvbuf)


def connect_metrics(port):
    """A connection to the --metrics-listen port: plain HTTP, whatever the run speaks."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def cmd_raw(argv):
    port = int(argv[0])
    timeout, rst, shut = 1.5, False, False
    i = 1
    while i < len(argv):
        if argv[i] == "--timeout":
            timeout = float(argv[i + 1])
            i += 1
        elif argv[i] == "--rst":
            rst = True
        elif argv[i] == "--shut":
            shut = True
        i += 1
    data = sys.stdin.buffer.read()
    s = connect(port)
    try:
        s.sendall(data)
    except OSError:
        pass
    if rst:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        print("<reset>")
        return 0
    if shut:
        itls.half_close(s)
    s.settimeout(timeout)
    out = sys.stdout.buffer
    state = "<open>"
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, ssl.SSLError):
            state = "<closed>"
            break
        if not chunk:
            state = "<closed>"
            break
        out.write(chunk)
    out.write(b"\n" + state.encode() + b"\n")
    out.flush()
    s.close()
    return 0


def read_response(s):
    """The next response on socket s (status, headers, body), by faultlib's client."""
    return Conn.adopt(s).read_response()


def cmd_fetch(argv):
    port, user, pw = int(argv[0]), argv[1], argv[2]
    clients, rounds = int(argv[3]), int(argv[4])
    files = []
    for spec in argv[5:]:
        name, path = spec.split("=", 1)
        with open(path, "rb") as fh:
            files.append((name, fh.read()))
    auth = basic(user, pw)
    errors = []
    count = [0]
    lock = threading.Lock()

    def worker(k):
        try:
            c = Conn.adopt(connect(port))
            c.host_header = "t"
            for r in range(rounds):
                for j in range(len(files)):
                    name, want = files[(j + k) % len(files)]
                    resp = c.request("GET", f"/files/{name}", [f"Authorization: {auth}"])
                    if resp.status != 200 or resp.body != want:
                        with lock:
                            errors.append(f"client {k} {name}: status {resp.status}, "
                                          f"{len(resp.body)} bytes (want {len(want)}), "
                                          f"equal={resp.body == want}")
                        return
                    with lock:
                        count[0] += 1
            c.close()
        except Exception as e:  # report, don't hang
            with lock:
                errors.append(f"client {k}: {e!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(errors[0])
        return 1
    print(f"ok {count[0]}")
    return 0


def cmd_slowget(argv):
    port, user, pw, name, out = int(argv[0]), argv[1], argv[2], argv[3], argv[4]
    delay = float(argv[6]) if len(argv) > 6 and argv[5] == "--delay" else 0.05
    s = connect(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall((f"GET /files/{name} HTTP/1.1\r\nHost: t\r\n"
               f"Authorization: {basic(user, pw)}\r\n\r\n").encode())
    s.settimeout(30)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(65536)
        if not chunk:
            break
        head += chunk
    head, _, first = head.partition(b"\r\n\r\n")
    m = re.search(rb"Content-Length: (\d+)", head)
    want = int(m.group(1)) if m else 0
    parts, got = [first], len(first)
    while got < want:
        time.sleep(delay)
        chunk = s.recv(65536)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    with open(out, "wb") as fh:
        fh.write(b"".join(parts))
    print(head.split(b" ")[1].decode() if head else "none")
    return 0


def cmd_pausedget(argv):
    port, user, pw, name, out, started, go = (int(argv[0]),) + tuple(argv[1:7])
    rng = f"Range: bytes={argv[7]}\r\n" if len(argv) > 7 else ""
    s = connect(port, rcvbuf=65536)  # set before connect: no autotuning
    s.settimeout(90)
    s.sendall((f"GET /files/{name} HTTP/1.1\r\nHost: t\r\n"
               f"Authorization: {basic(user, pw)}\r\n{rng}Connection: close\r\n\r\n")
              .encode())
    parts = [s.recv(65536)]
    open(started, "w").close()
    deadline = time.time() + 60
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.02)
    while parts[-1]:
        parts.append(s.recv(65536))
    data = b"".join(parts)
    head, _, body = data.partition(b"\r\n\r\n")
    with open(out, "wb") as fh:
        fh.write(body)
    print(head.split(b" ")[1].decode() if head else "none")
    return 0


def has_current_date(data):
    """Whether the response head in data has a Date field within 60 s of now."""
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1")
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "date":
            try:
                t = email.utils.parsedate_to_datetime(value.strip()).timestamp()
            except (TypeError, ValueError):
                return False
            return abs(t - time.time()) < 60
    return False


def cmd_maxconns(argv):
    port, n = int(argv[0]), int(argv[1])
    held = []
    for _ in range(n):
        s = connect(port)
        s.sendall(b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
        resp = read_response(s)
        if resp.status != 404:
            print(f"connection {len(held)} got {resp.status}")
            return 1
        held.append(s)
    try:
        extra = connect(port)
        extra.settimeout(3)
        data = extra.recv(4096)  # a rejection is sent at accept, before any request
    except socket.timeout:
        data = b"<timeout>"
    except OSError:  # reset; over TLS also: closed before the handshake ended
        data = b""
    if data.startswith(b"HTTP/1.1 503"):
        print("rejected, dated" if has_current_date(data) else "rejected, no Date")
    elif data == b"":
        print("rejected, closed")
    else:
        print("accepted")
    for s in held:
        s.close()
    return 0


def cmd_spread(argv):
    port, mport, n, threads = int(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    held = []
    for _ in range(n):
        s = connect(port)
        s.sendall(b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
        c = Conn.adopt(s)
        resp = c.read_response()
        if resp.status != 404:
            print(f"connection {len(held)} got {resp.status}")
            return 1
        held.append((s, c))
    ms = connect_metrics(mport)
    ms.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    resp = read_response(ms)
    ms.close()
    counts = []
    for k in range(threads):
        m = re.search(r'^server1_worker_connections\{worker="%d"\} (\d+)$' % k,
                      resp.body.decode(), re.M)
        counts.append(int(m.group(1)) - (1 if k == 0 else 0) if m else -1)
    print(" ".join(str(c) for c in sorted(counts)))
    for s, _ in held:
        s.close()
    return 0


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*)?\})? (-?[0-9.e+-]+|\+Inf|NaN)$')


def cmd_metrics(argv):
    port = int(argv[0])
    s = connect_metrics(port)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
    resp = read_response(s)
    s.close()
    if resp.status != 200 or not resp.headers.get("content-type", "").startswith(
            "text/plain; version=0.0.4"):
        print(f"bad response: {resp.status} {resp.headers.get('content-type')}")
        return 1
    values = {}
    types = {}
    for line in resp.body.decode().splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if typ not in ("counter", "gauge", "histogram", "summary", "untyped"):
                print(f"bad type line: {line}")
                return 1
            types[name] = typ
            continue
        m = SAMPLE.match(line)
        if not m:
            print(f"bad sample line: {line!r}")
            return 1
        values[m.group(1) + (m.group(2) or "")] = float(m.group(5))
    for name, typ in types.items():
        if typ != "histogram":
            continue
        buckets = [(k, v) for k, v in values.items() if k.startswith(name + "_bucket{")]
        if not buckets:
            print(f"histogram {name} has no buckets")
            return 1
        prev = -1
        for _, v in buckets:
            if v < prev:
                print(f"histogram {name} is not cumulative")
                return 1
            prev = v
        inf = values.get(name + '_bucket{le="+Inf"}')
        if inf is None or inf != values.get(name + "_count") or name + "_sum" not in values:
            print(f"histogram {name}: +Inf bucket / _count / _sum inconsistent")
            return 1
    print("valid")
    for name in argv[1:]:
        v = values.get(name, 0.0)
        print(int(v) if v == int(v) else v)
    return 0


def cmd_burst(argv):
    port, n, user, pw = int(argv[0]), int(argv[1]), argv[2], argv[3]
    socks = [connect(port) for _ in range(n)]
    reqs = [(f"GET /files/pub.txt HTTP/1.1\r\nHost: t\r\nAuthorization: "
             f"{basic(user.replace('{i}', str(i + 1)), pw)}\r\n\r\n").encode()
            for i in range(n)]
    for s, req in zip(socks, reqs):  # one after another, none waiting for an answer
        s.sendall(req)
    counts, retry = {}, 0
    for s in socks:
        s.settimeout(30)
        resp = read_response(s)
        counts[resp.status] = counts.get(resp.status, 0) + 1
        ra = resp.headers.get("retry-after", "")
        if resp.status == 429 and ra.isdigit() and int(ra) >= 1:
            retry += 1
        s.close()
    print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    print(f"retry-after={retry}")
    return 0


def main():
    cmds = {"raw": cmd_raw, "fetch": cmd_fetch, "slowget": cmd_slowget,
            "pausedget": cmd_pausedget, "maxconns": cmd_maxconns, "spread": cmd_spread,
            "burst": cmd_burst, "metrics": cmd_metrics}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
