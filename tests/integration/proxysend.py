#!/usr/bin/env python3
"""proxysend.py - one HTTP request behind a PROXY protocol header, as a load balancer sends it.

Usage: proxysend.py PORT HEADER [--path P] [--user U:P] [--signup NAME] [--hold S]
  HEADER: v1:ADDR (PROXY TCP4/TCP6 ADDR ... in text), v2:ADDR (binary, TCP over IPv4 or IPv6),
          v2local (binary LOCAL, the balancer's own check), none, or hex:BYTES (sent as they are)
  --path P       GET P (default /healthz); --user: with Basic credentials
  --signup NAME  POST /users creating NAME instead
  --hold S       after the answer keep the connection open S seconds (a client that stays)
Prints the response's status code, or "closed" if the connection ended without one.
"""
import argparse
import base64
import ipaddress
import socket
import struct
import sys
import time

SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def header(spec):
    if spec == "none":
        return b""
    if spec == "v2local":
        return SIG + bytes([0x20, 0x00]) + struct.pack("!H", 0)
    if spec.startswith("hex:"):
        return bytes.fromhex(spec[4:])
    kind, addr = spec.split(":", 1)
    ip = ipaddress.ip_address(addr)
    if kind == "v1":
        fam = "TCP4" if ip.version == 4 else "TCP6"
        dst = "10.0.0.1" if ip.version == 4 else "2001:db8::1"
        return ("PROXY %s %s %s 51000 443\r\n" % (fam, ip, dst)).encode()
    if ip.version == 4:
        body = ip.packed + ipaddress.ip_address("10.0.0.1").packed + struct.pack("!HH", 51000, 443)
        return SIG + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body
    body = ip.packed + ipaddress.ip_address("2001:db8::1").packed + struct.pack("!HH", 51000, 443)
    return SIG + bytes([0x21, 0x21]) + struct.pack("!H", len(body)) + body


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("header")
    p.add_argument("--path", default="/healthz")
    p.add_argument("--user")
    p.add_argument("--signup")
    p.add_argument("--hold", type=float, default=0)
    a = p.parse_args()
    if a.signup:
        body = ("username=%s&password=pw12345-x" % a.signup).encode()
        req = ("POST /users HTTP/1.1\r\nHost: t\r\nContent-Type: "
               "application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n" % len(body)
               ).encode() + body
    else:
        auth = ""
        if a.user:
            auth = "Authorization: Basic %s\r\n" % base64.b64encode(a.user.encode()).decode()
        req = ("GET %s HTTP/1.1\r\nHost: t\r\n%s\r\n" % (a.path, auth)).encode()
    s = socket.create_connection(("127.0.0.1", a.port), timeout=20)
    try:
        s.sendall(header(a.header) + req)
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError:
        got = b""
    line = got.split(b"\r\n", 1)[0].split()
    print(line[1].decode() if len(line) >= 2 and line[0].startswith(b"HTTP/") else "closed")
    sys.stdout.flush()
    if a.hold > 0:
        time.sleep(a.hold)
    s.close()


if __name__ == "__main__":
    main()
