#!/usr/bin/env python3
"""fsops.py - one file per id, written durably over and over: the three ways a store that keeps
only the latest value of each id can replace a file, timed (scripts/bench-fs.sh part c).

  fsops.py DIR --pattern overwrite|rename|recreate [--threads N] [--ids M] [--size BYTES]
               [--seconds S] [--seed N]

Makes M files of BYTES bytes under DIR/ids (flushed, then timed from a synced state), then for S
seconds N threads each replace random ids of their own (id mod N = the thread's number, so that
no two threads write one file) with new bytes, one fsync each:
  overwrite  open the file, pwrite the new bytes at offset 0, fsync, close
  rename     write ID.tmp (created, truncated), fsync, close, rename it over ID
  recreate   unlink ID, create it again (O_EXCL), write, fsync, close
Prints one line of JSON: {"pattern", "threads", "ops", "seconds", "ops_s", "p50_ms", "p99_ms"}
(latency of one whole replacement). Exits 2 on bad usage, 1 when a system call fails.
"""
import argparse
import json
import os
import random
import sys
import threading
import time


def percentile(sorted_ms, q):
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


def replace(pattern, d, name, data):
    path = os.path.join(d, name)
    if pattern == "overwrite":
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
    elif pattern == "rename":
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
    else:
        os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--pattern", required=True, choices=("overwrite", "rename", "recreate"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ids", type=int, default=10000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not (1 <= a.threads <= 256 and a.threads <= a.ids <= 10**7 and 1 <= a.size <= 64 << 20
            and 0 < a.seconds <= 3600):
        ap.error("--threads 1-256, --ids from --threads to 10^7, --size 1 B-64 MiB, "
                 "--seconds (0, 3600]")
    d = os.path.join(a.dir, "ids")
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(a.seed)
    blob = rnd.randbytes(a.size + 4096)
    for i in range(a.ids):
        with open(os.path.join(d, "%08d" % i), "wb") as f:
            f.write(blob[:a.size])
    os.sync()

    lat = [[] for _ in range(a.threads)]
    errors = []
    end = time.monotonic() + a.seconds

    def worker(k):
        r = random.Random(a.seed * 1000 + k)
        mine = a.ids // a.threads + (1 if k < a.ids % a.threads else 0)
        try:
            while time.monotonic() < end:
                i = r.randrange(mine) * a.threads + k
                off = r.randrange(4096)
                t = time.monotonic_ns()
                replace(a.pattern, d, "%08d" % i, blob[off:off + a.size])
                lat[k].append((time.monotonic_ns() - t) / 1e6)
        except OSError as e:
            errors.append(str(e))

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.monotonic() - t0
    if errors:
        print("fsops: %s" % errors[0], file=sys.stderr)
        return 1
    ms = sorted(x for part in lat for x in part)
    print(json.dumps({"pattern": a.pattern, "threads": a.threads, "ops": len(ms),
                      "seconds": round(secs, 3), "ops_s": round(len(ms) / secs, 1),
                      "p50_ms": round(percentile(ms, 0.50), 3),
                      "p99_ms": round(percentile(ms, 0.99), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
