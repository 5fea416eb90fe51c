#!/usr/bin/env python3
"""slowrange.py - a ranged GET read slowly while the file is replaced under it.

  slowrange.py PORT USER PASS NAME FIRST LAST OUT GO_FILE

Sends GET /files/NAME with Range: bytes=FIRST-LAST on a socket with a small receive buffer, reads
the head and 64 KiB of the body, creates GO_FILE (the caller then replaces the file and waits
for its answer) and waits until GO_FILE is removed; then reads the rest and writes the body to
OUT. Prints the status line.
"""
import base64
import os
import socket
import sys
import time


def main():
    port, user, pw, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    first, last, out, go = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
    auth = base64.b64encode(f"{user}:{pw}".encode()).decode()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.connect(("127.0.0.1", port))
    s.sendall((f"GET /files/{name} HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {auth}\r\n"
               f"Range: bytes={first}-{last}\r\nConnection: close\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, body = buf.split(b"\r\n\r\n", 1)
    while len(body) < 65536:
        body += s.recv(4096)
    open(go, "w").close()
    deadline = time.time() + 60
    while os.path.exists(go) and time.time() < deadline:
        time.sleep(0.05)
    while True:
        b = s.recv(65536)
        if not b:
            break
        body += b
    open(out, "wb").write(body)
    print(head.split(b"\r\n", 1)[0].decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
