#!/usr/bin/env python3
"""rawput.py - a PUT over a raw socket, with control over when the body goes out, for tests of
what server1 does before and while it reads an upload's body (curl always sends the body).

  rawput.py PORT NAME SIZE [--auth USER:PASS] [--expect] [--body MODE] [--timeout S]

MODE: "wait" (default with --expect: the body only after 100 Continue; else at once), "none"
(never), "now" (right after the head, whatever comes back), "trickle:SECONDS" (one byte per
SECONDS), "part:BYTES" (BYTES of it, then nothing). Prints one line of JSON: "continue" (a 100
Continue came), "status" (the final status, 0 if none), "closed" (the server closed the
connection after the answer), "sent" (body bytes sent), "elapsed" (seconds from the head to the
answer), "headers" (the final answer's headers, lower-case names).

As a module: Put(port, name, size, auth, expect) opens the connection and sends the head;
.wait_continue(), .send(n), .readable(), .answer() drive it. The connection is made by
itls.py: over TLS when the run is over HTTPS (ITEST_TLS=1).
"""
import base64
import json
import sys
import time

import itls


class Put:
    def __init__(self, port, name, size, auth=None, expect=False, timeout=20.0):
        self.size = size
        self.sent = 0
        self.buf = b""
        self.eof = False  # readable() met the end of the connection
        self.timeout = timeout
        self.sock = itls.connect(port, timeout=timeout, nodelay=False)
        head = "PUT /files/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (name, size)
        if auth:
            head += "Authorization: Basic %s\r\n" % base64.b64encode(auth.encode()).decode()
        if expect:
            head += "Expect: 100-continue\r\n"
        self.sock.sendall((head + "\r\n").encode())
        self.t0 = time.monotonic()
        self.got_continue = False

    def _read_head(self, deadline):
        """The next response head (status, headers), or (0, {}) at EOF / timeout."""
        while b"\r\n\r\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return 0, {}
            try:
                d = itls.recv_within(self.sock, left)
            except OSError:  # reset, or a TLS record cut short
                return 0, {}
            if not d:  # nothing within the deadline, or the end
                return 0, {}
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return int(lines[0].split()[1]), hdrs

    def wait_continue(self, secs=5.0):
        """True if the next thing the server says is 100 Continue (else it is kept for answer)."""
        st, hdrs = self._read_head(time.monotonic() + secs)
        if st == 100:
            self.got_continue = True
            return True
        self.pending = (st, hdrs)
        return False

    def send(self, n):
        n = min(n, self.size - self.sent)
        try:
            self.sock.sendall(b"x" * n)
        except OSError:  # reset, broken pipe, or TLS closed
            return False
        self.sent += n
        return True

    def readable(self):
        """Whether the server has said something (read into the buffer) or closed."""
        if b"\r\n\r\n" in self.buf or self.eof:
            return True
        try:
            d = itls.recv_within(self.sock, 0)
        except OSError:
            d = b""
        if d is None:
            return False
        self.eof = not d
        self.buf += d
        return True

    def answer(self, close_wait=5.0):
        """The final status and headers, whether the connection then closed (waiting up to
        close_wait seconds for it), and seconds taken."""
        pending = getattr(self, "pending", None)
        if pending is not None and pending[0] != 0:
            st, hdrs = pending
        else:
            st, hdrs = self._read_head(time.monotonic() + self.timeout)
            while st == 100:
                self.got_continue = True
                st, hdrs = self._read_head(time.monotonic() + self.timeout)
        elapsed = time.monotonic() - self.t0
        body_len = int(hdrs.get("content-length", "0"))
        closed = False
        end = time.monotonic() + close_wait
        while time.monotonic() < end:
            if self.eof:
                closed = True
                break
            try:
                d = itls.recv_within(self.sock, end - time.monotonic())
            except OSError:  # reset, or a TLS record cut short
                closed = True
                break
            if d is None:
                break
            if not d:
                closed = True
                break
            self.buf += d
            if len(self.buf) >= body_len and hdrs.get("connection", "") != "close":
                break
        self.sock.close()
        return st, hdrs, closed, elapsed


def main():
    args = sys.argv[1:]
    port, name, size = int(args[0]), args[1], int(args[2])
    auth, expect, mode, timeout = None, False, None, 20.0
    i = 3
    while i < len(args):
        if args[i] == "--auth":
            auth = args[i + 1]
            i += 2
        elif args[i] == "--expect":
            expect = True
            i += 1
        elif args[i] == "--body":
            mode = args[i + 1]
            i += 2
        elif args[i] == "--timeout":
            timeout = float(args[i + 1])
            i += 2
        else:
            sys.exit("rawput.py: unknown argument " + args[i])
    if mode is None:
        mode = "wait" if expect else "now"
    p = Put(port, name, size, auth, expect, timeout)
    if mode == "wait":
        if p.wait_continue(timeout):
            p.send(size)
    elif mode == "now":
        p.send(size)
    elif mode.startswith("part:"):
        p.send(int(mode[5:]))
    elif mode.startswith("trickle:"):
        gap = float(mode[8:])
        while p.sent < size and not p.readable():
            if not p.send(1):
                break
            time.sleep(gap)
    st, hdrs, closed, elapsed = p.answer()
    print(json.dumps({"continue": p.got_continue, "status": st, "closed": closed,
                      "sent": p.sent, "elapsed": round(elapsed, 3), "headers": hdrs}))


if __name__ == "__main__":
    main()
