#!/usr/bin/env python3
"""flushreplay.py - trust, but verify the flushes: server1's upload store on a file system whose
disk records every write and every cache flush, then that disk replayed up to flush after
flush, each replay mounted and served, each checked against what was acknowledged before it.

  flushreplay.py --bin-dir DIR [--fs ext4|xfs] [--seconds S] [--marks K] [--threads N]
                 [--seed N] [--skew-ms MS] [--workdir DIR] [--keep]

1. The disk: tests/crash/flushlog (FUSE) serves a file as large as a zeroed image; a loop
   device over it (buffered) passes every write to it, and every flush as an fsync, which it
   logs with its time (the method of the kernel's dm-log-writes, which this kernel may lack).
2. The run: mkfs --fs on the loop device, mount it, start the stack (scripts/stack.sh: Redis,
   server2, server1 with --root on the mount), and for S seconds N client threads upload
   random bodies (1 B to 256 KiB) to names of their own, overwrite and delete them; every
   request's start and, when it was acknowledged (201, 204), the time of its answer are noted
   (CLOCK_MONOTONIC, as the log's marks). Then server1 stops, the file system is unmounted.
3. The replay: the log's writes are applied in order to a fresh zeroed image; at K flush marks
   spread over the load (every mark of the load with --marks 0), a copy of the image as it is
   at that mark (a reflink copy on a scratch XFS) is mounted (the file system recovers its
   journal), server1 starts on it, and every name is asked for (GET with the owner's
   credentials). For a mark at time T, a name must hold the last version acknowledged before
   T, or a version whose request started after that one did and before T (it may have
   reached the disk before the answer went out), or, with nothing acknowledged before T,
   nothing or such a version. Anything else is lost (an older version, or none) or corrupt
   (bytes no request sent); a replay that does not mount or that server1 refuses to start on
   counts as a failed mark.

Prints one line per mark checked, then

    fs F, marks M of N checked, writes acknowledged A, lost L, corrupt C, failed marks X

--skew-ms MS checks the checker: each mark is judged as if it had come MS ms later than it did,
so that uploads acknowledged in those MS ms are wanted from a disk that cannot have them; a
run with it must report lost > 0 (tests/integration/test_flush_replay.sh runs it).

Exits 1 if L, C or X is not 0 or nothing was acknowledged, 2 on bad usage, 3 when the
machine cannot run it (not root, no FUSE, no loop device, a tool missing): it says why.

Bounded: a timeout on every request and every wait, S seconds of load, K replays. Traffic only
to 127.0.0.1. Removes every mount, loop device, process and file it made (--keep: the files).
"""
import argparse
import hashlib
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests"))
from faultlib.http import request_once  # noqa: E402
from faultlib.stack import wait_until  # noqa: E402

MAGIC = b"S1FLOG1\n"
DISK_BYTES = {"ext4": 512 << 20, "xfs": 512 << 20}   # XFS needs 300 MB at least
ABSENT = None


class CannotRun(Exception):
    pass


def log(msg):
    print("flushreplay: %s" % msg, file=sys.stderr, flush=True)


def run(argv, timeout=120, check=True):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), r.returncode,
                                               (r.stderr or r.stdout).strip()[-400:]))
    return r


def read_log(path):
    """The log's records: ("W", offset, bytes) and ("F", ns), in order."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC):
        raise RuntimeError("%s: not a flushlog log" % path)
    i = len(MAGIC)
    while i < len(data):
        t = data[i:i + 1]
        if t == b"W" and i + 13 <= len(data):
            off, n = struct.unpack_from("<QI", data, i + 1)
            if i + 13 + n > len(data):
                break    # cut short while being written: the tail is not a record
            out.append(("W", off, data[i + 13:i + 13 + n]))
            i += 13 + n
        elif t == b"F" and i + 9 <= len(data):
            out.append(("F", struct.unpack_from("<Q", data, i + 1)[0]))
            i += 9
        else:
            break
    return out


class Cleanup:
    """What was made, undone in reverse order."""

    def __init__(self):
        self.steps = []

    def add(self, what, fn):
        """Returns a handle for run()."""
        self.steps.append((what, fn))
        return (what, fn)

    def run(self, step):
        """Undoes one step now (and forgets it)."""
        self.steps.remove(step)
        self._do(*step)

    def pop(self, n=1):
        for _ in range(n):
            what, fn = self.steps.pop()
            self._do(what, fn)

    def _do(self, what, fn):
        try:
            fn()
        except Exception as e:  # keep undoing the rest
            log("cleanup: %s: %s" % (what, e))

    def all(self):
        while self.steps:
            self.pop()


def losetup(path, cl):
    dev = run(["losetup", "-f", "--show", path]).stdout.strip()
    return dev, cl.add("losetup -d " + dev, lambda: run(["losetup", "-d", dev], check=False))


def mount(dev, mnt, fs, cl):
    run(["mount", "-t", fs, dev, mnt])
    return cl.add("umount " + mnt, lambda: run(["umount", mnt], check=False))


def monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Load:
    """N threads, each with names of its own: PUT, PUT again, DELETE. events[name] lists
    (start_ns, ack_ns or None, sha or ABSENT) in the order they were sent."""

    def __init__(self, port, auth, threads, seconds, seed):
        self.port, self.auth = port, auth
        self.threads, self.seconds = threads, seconds
        self.seed = seed
        self.events = {}
        self.acked = 0
        self.lock = threading.Lock()

    def client(self, k):
        rnd = random.Random(self.seed * 1000 + k)
        names = ["fr/t%d/n%02d" % (k, i) for i in range(12)]
        end = time.monotonic() + self.seconds
        serial = 0
        while time.monotonic() < end:
            name = rnd.choice(names)
            ev = self.events.setdefault(name, [])
            serial += 1
            if ev and ev[-1][2] is not ABSENT and rnd.random() < 0.15:
                method, body, sha = "DELETE", None, ABSENT
            else:
                n = rnd.choice([1, 100, 4096, 65536, rnd.randrange(1, 256 << 10)])
                body = rnd.randbytes(n - 8) + struct.pack("<Q", serial) if n >= 8 else rnd.randbytes(n)
                method, sha = "PUT", hashlib.sha256(body).hexdigest()
            start = monotonic_ns()
            r = request_once(self.port, method, "/files/" + name, body=body, auth=self.auth,
                             timeout=20)
            ack = monotonic_ns() if r is not None and r.status in (201, 204) else None
            ev.append((start, ack, sha))
            if ack is not None:
                with self.lock:
                    self.acked += 1

    def run(self):
        ts = [threading.Thread(target=self.client, args=(k,)) for k in range(self.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


def allowed(events, t):
    """The versions a name may hold on a disk replayed to the mark at time t, and the
    acknowledged one it must not fall behind (or None)."""
    last = None
    for i, (start, ack, sha) in enumerate(events):
        if ack is not None and ack < t:
            last = i
    ok = set()
    base = 0
    if last is None:
        ok.add(ABSENT)
    else:
        ok.add(events[last][2])
        base = last + 1
    for start, ack, sha in events[base:]:
        if start < t:
            ok.add(sha)
    return ok, (events[last][2] if last is not None else None)


def check_mark(a, t, mnt, s1_argv, names_events, auth):
    """Starts server1 on mnt and asks every name; returns (lost, corrupt, failed, detail)."""
    argv = list(s1_argv)
    argv[argv.index("--root") + 1] = mnt
    argv[argv.index("--port") + 1] = "0"
    logf = os.path.join(a.workdir, "replay-server1.log")
    with open(logf, "w") as lf:
        p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    port = None

    def up():
        nonlocal port
        with open(logf, errors="replace") as f:
            for line in f:
                if "listening on " in line and port is None:
                    port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
        return port is not None or p.poll() is not None
    try:
        wait_until(30, up)
        if port is None:
            with open(logf, errors="replace") as f:
                return 0, 0, 1, "server1 did not start: " + f.read().strip()[-300:]
        lost = corrupt = 0
        detail = []
        every = set()
        for name, events in names_events.items():
            every.update(sha for _, _, sha in events)
            ok, need = allowed(events, t)
            # (a 503 says "not yet": server1's link to server2 may still be coming up)
            for _ in range(100):
                r = request_once(port, "GET", "/files/" + name, auth=auth, timeout=20)
                if r is None or r.status != 503:
                    break
                time.sleep(0.1)
            if r is None or r.status not in (200, 404):
                return lost, corrupt, 1, "%s: GET answered %s" % (name, r and r.status)
            got = ABSENT if r.status == 404 else hashlib.sha256(r.body).hexdigest()
            if got in ok:
                continue
            if got is ABSENT or got in every:
                lost += 1
            else:
                corrupt += 1
            detail.append("%s: got %s, want one of %s (acknowledged: %s)" % (
                name, got and got[:12], sorted((v or "absent")[:12] for v in ok),
                (need or "absent")[:12]))
        return lost, corrupt, 0, "; ".join(detail[:3])
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--fs", choices=sorted(DISK_BYTES), default="ext4")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--marks", type=int, default=100, help="marks to check (0: all)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skew-ms", type=int, default=0,
                    help="judge each mark as if it came this much later (checks the checker)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if a.seconds <= 0 or a.seconds > 600 or a.marks < 0 or not 1 <= a.threads <= 64:
        ap.error("--seconds in (0, 600], --marks >= 0, --threads in [1, 64]")
    a.bin_dir = os.path.abspath(a.bin_dir)
    flushlog = os.path.join(a.bin_dir, "flushlog")
    try:
        if os.geteuid() != 0:
            raise CannotRun("needs root (loop devices, mounts)")
        for tool in ("losetup", "mount", "umount", "fusermount3", "mkfs." + a.fs, "mkfs.xfs"):
            if shutil.which(tool) is None:
                raise CannotRun("%s is not installed (scripts/setup.sh installs it)" % tool)
        if not os.path.exists("/dev/fuse"):
            raise CannotRun("no /dev/fuse")
        if not os.access(flushlog, os.X_OK):
            raise CannotRun("no %s: run make" % flushlog)
    except CannotRun as e:
        print("flushreplay: cannot run here: %s" % e, file=sys.stderr)
        return 3
    # SIGTERM and SIGINT unwind like an error, so that every mount and process is undone
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    made_dir = a.workdir is None
    a.workdir = tempfile.mkdtemp(prefix="s1-flushreplay-", dir="/var/tmp") if made_dir \
        else os.path.abspath(a.workdir)
    cl = Cleanup()
    if made_dir and not a.keep:
        cl.add("rm " + a.workdir, lambda: shutil.rmtree(a.workdir, ignore_errors=True))
    try:
        return replay_run(a, flushlog, cl)
    except CannotRun as e:
        print("flushreplay: cannot run here: %s" % e, file=sys.stderr)
        return 3
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print("flushreplay: failed: %s" % e, file=sys.stderr)
        return 1
    finally:
        cl.all()


def replay_run(a, flushlog, cl):
    w = a.workdir
    # a scratch XFS for the images: reflink copies of a replayed disk cost nothing
    scratch_img, scratch = os.path.join(w, "scratch.img"), os.path.join(w, "scratch")
    os.makedirs(scratch, exist_ok=True)
    with open(scratch_img, "wb") as f:
        f.truncate(4 * DISK_BYTES[a.fs] + (1 << 30))
    cl.add("rm scratch.img", lambda: os.unlink(scratch_img))
    run(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", scratch_img])
    sdev, _ = losetup(scratch_img, cl)
    mount(sdev, scratch, "xfs", cl)
    image, wlog = os.path.join(scratch, "disk.img"), os.path.join(scratch, "writes.log")
    with open(image, "wb") as f:
        f.truncate(DISK_BYTES[a.fs])

    # 1. the recording disk
    fusedir, mnt = os.path.join(w, "fuse"), os.path.join(w, "mnt")
    os.makedirs(fusedir, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    fl_err = open(os.path.join(w, "flushlog.err"), "w")
    fl = subprocess.Popen([flushlog, image, wlog, fusedir], stdout=fl_err,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop_flushlog():
        run(["fusermount3", "-u", fusedir], check=False)
        try:
            fl.wait(20)
        except subprocess.TimeoutExpired:
            fl.kill()
            fl.wait()
        fl_err.close()
    fl_step = cl.add("stop flushlog", stop_flushlog)
    disk = os.path.join(fusedir, "disk")
    if not wait_until(15, lambda: os.path.exists(disk) or fl.poll() is not None) \
            or fl.poll() is not None:
        raise CannotRun("flushlog did not mount (FUSE): see %s/flushlog.err" % w)
    dev, dev_step = losetup(disk, cl)
    run(["mkfs." + a.fs, "-q"] + (["-f"] if a.fs == "xfs" else []) + [dev])
    mnt_step = mount(dev, mnt, a.fs, cl)
    os.makedirs(os.path.join(mnt, "files"))

    # 2. the load
    stack = os.path.join(w, "stack")
    env = dict(os.environ, BIN_DIR=a.bin_dir)
    r = subprocess.run([os.path.join(TOP, "scripts", "stack.sh"), "start", stack, "--backend",
                        "redis", "--hash-cost", "min", "--root", os.path.join(mnt, "files"),
                        "--port", "0", "--", "--login-fail-limit", "0", "--signup-limit", "0",
                        "--max-conns-per-ip", "0"],
                       capture_output=True, text=True, timeout=120, env=env)
    cl.add("stack.sh stop", lambda: subprocess.run(
        [os.path.join(TOP, "scripts", "stack.sh"), "stop", stack], capture_output=True,
        timeout=120, env=env))
    if r.returncode != 0:
        raise RuntimeError("stack.sh start: %s" % r.stderr.strip()[-400:])
    port = int(r.stdout.strip().splitlines()[-1].rsplit(":", 1)[1])
    auth = ("replay", "replay-pass-1")
    resp = request_once(port, "POST", "/users", body=b"username=replay&password=replay-pass-1",
                        ctype="application/x-www-form-urlencoded")
    if resp is None or resp.status != 201:
        raise RuntimeError("account: POST /users answered %s" % (resp and resp.status))
    with open(os.path.join(stack, "server1.pid")) as f:
        s1pid = int(f.read())
    with open("/proc/%d/cmdline" % s1pid, "rb") as f:
        s1_argv = [x.decode() for x in f.read().split(b"\0") if x]
    if "--port" not in s1_argv:
        s1_argv += ["--port", "0"]
    load = Load(port, auth, a.threads, a.seconds, a.seed)
    t0 = monotonic_ns()
    load.run()
    t1 = monotonic_ns()
    log("load: %d requests acknowledged in %.1f s" % (load.acked, (t1 - t0) / 1e9))
    # server1 stops (server2 and Redis stay for the replays), the disk is let go
    os.kill(s1pid, signal.SIGTERM)
    if not wait_until(60, lambda: not os.path.exists("/proc/%d" % s1pid) or
                      open("/proc/%d/stat" % s1pid).read().split(") ")[1][0] == "Z"):
        raise RuntimeError("server1 did not stop within 60 s of SIGTERM")
    for step in (mnt_step, dev_step, fl_step):
        cl.run(step)

    # 3. the replays
    recs = read_log(wlog)
    marks = [i for i, rec in enumerate(recs) if rec[0] == "F" and t0 <= rec[1] <= t1 + 10**9]
    nmarks = sum(1 for rec in recs if rec[0] == "F")
    if not marks:
        raise RuntimeError("no flush during the load: %d records" % len(recs))
    if a.marks and len(marks) > a.marks:
        step = len(marks) / a.marks
        marks = sorted({marks[int(i * step)] for i in range(a.marks)} | {marks[-1]})
    replay_img, copy_img = os.path.join(scratch, "replay.img"), os.path.join(scratch, "copy.img")
    with open(replay_img, "wb") as f:
        f.truncate(DISK_BYTES[a.fs])
    fd = os.open(replay_img, os.O_WRONLY)
    lost = corrupt = failed = 0
    done = 0
    want = set(marks)
    try:
        for i, rec in enumerate(recs):
            if rec[0] == "W":
                os.pwrite(fd, rec[2], rec[1])
                continue
            if i not in want:
                continue
            subprocess.run(["cp", "--reflink=always", replay_img, copy_img], check=True)
            steps = []
            try:
                cdev, step = losetup(copy_img, cl)
                steps.append(step)
                try:
                    steps.append(mount(cdev, mnt, a.fs, cl))
                except RuntimeError as e:
                    failed += 1
                    print("mark %d (%.3f s): does not mount: %s" % (i, (rec[1] - t0) / 1e9, e))
                    continue
                l, c, x, why = check_mark(a, rec[1] + a.skew_ms * 10**6, os.path.join(mnt, "files"), s1_argv,
                                          load.events, auth)
                lost, corrupt, failed = lost + l, corrupt + c, failed + x
                print("mark %d (%.3f s): lost %d, corrupt %d%s%s" % (
                    i, (rec[1] - t0) / 1e9, l, c, ", failed" if x else "",
                    (": " + why) if why else ""), flush=True)
            finally:
                for step in reversed(steps):
                    cl.run(step)
                os.unlink(copy_img)
            done += 1
    finally:
        os.close(fd)
    print("fs %s, marks %d of %d checked, writes acknowledged %d, lost %d, corrupt %d, "
          "failed marks %d" % (a.fs, done, nmarks, load.acked, lost, corrupt, failed))
    return 1 if lost or corrupt or failed or load.acked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
