#!/usr/bin/env python3
"""notify_sink.py - stands in for systemd's notification socket (sd_notify(3)): binds an
AF_UNIX datagram socket at PATH (what a test gives a server as NOTIFY_SOCKET) and appends each
message it gets to OUT as one JSON line {"msg": TEXT}. A message that says READY=1 with
"STATUS=listening on HOST:PORT" gets "port_answers": whether a TCP connection to HOST:PORT
was accepted at once, tried as soon as the message arrived. Runs until killed."""
import argparse
import json
import os
import re
import socket


def port_answers(host, port):
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("out")
    a = ap.parse_args()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(a.path)
    # the sink is ready once the socket is bound: the test waits for OUT to exist
    open(a.out, "a").close()
    while True:
        msg = s.recv(8192).decode("utf-8", "replace")
        rec = {"msg": msg}
        lines = msg.split("\n")
        if "READY=1" in lines:
            m = re.search(r"^STATUS=listening on \[?([^\]\s]+?)\]?:(\d+)\b", msg, re.M)
            if m:
                rec["port_answers"] = port_answers(m.group(1), int(m.group(2)))
        with open(a.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())


if __name__ == "__main__":
    main()
