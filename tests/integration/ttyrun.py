#!/usr/bin/env python3
"""ttyrun.py - runs a command on a terminal (a pseudo-terminal as its stdin, stdout and
stderr) and types LINE... into it, one line after each prompt (output ending in ": ").

  ttyrun.py [--timeout S] LINE... -- CMD [ARGS...]

Prints everything the command wrote to the terminal (what a user would see: a line typed with
echo on would be there) and exits with the command's exit status (124 on timeout)."""
import os
import pty
import select
import sys
import time


def main():
    args = sys.argv[1:]
    timeout = 10.0
    if args[:1] == ["--timeout"]:
        timeout = float(args[1])
        args = args[2:]
    if "--" not in args:
        sys.exit("usage: ttyrun.py [--timeout S] LINE... -- CMD [ARGS...]")
    k = args.index("--")
    lines, cmd = args[:k], args[k + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    seen = b""
    pending = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            sys.stdout.write(seen.decode(errors="replace"))
            return 124
        r, _, _ = select.select([fd], [], [], min(left, 0.1))
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: the command closed the terminal
                data = b""
            if not data:
                break
            seen += data
            pending += data
            if pending.rstrip(b" ").endswith(b":") and lines:
                os.write(fd, lines.pop(0).encode() + b"\n")
                pending = b""
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode(errors="replace"))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
