#!/usr/bin/env python3
"""mktree.py - writes a tree of numbered files for server1 --root or s1pack build (docs/pack.md):
100 x 100 x 100 directories of 100 files each, d00/d00/d00/f00 ... d99/d99/d99/f99, filled in
order: file i is d{i/1e6}/d{i/1e4 % 100}/d{i/100 % 100}/f{i % 100}, so N files take the first
N names (at most 100 M).

  mktree.py DIR --files N [--size BYTES] [--content fixed|random] [--seed S] [--jobs J]

Each file has --size bytes (default 1024): with --content fixed (the default) its number in
decimal, repeated, so no two files are alike; with random, bytes from a seeded generator
(--seed, default 1). --jobs processes (default: the CPUs) write ranges of the numbers side by
side. DIR must be empty or not exist. Prints the files written and the rate.
"""
import argparse
import multiprocessing
import os
import random
import sys
import time

FANOUT = 100
LEVELS = 4  # three levels of directories, then the file


def name_of(i):
    parts = []
    for _ in range(LEVELS):
        parts.append(i % FANOUT)
        i //= FANOUT
    d3, d2, d1, f = parts[3], parts[2], parts[1], parts[0]
    return "d%02d/d%02d/d%02d" % (d3, d2, d1), "f%02d" % f


def write_range(args):
    """Writes files [lo, hi) under top (one process of --jobs); returns how many."""
    top, lo, hi, size, content, seed = args
    rng = random.Random(seed * 1000003 + lo)
    pool = rng.randbytes(size + 65536) if content == "random" else b""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    cur_dir = None
    dfd = -1
    try:
        for i in range(lo, hi):
            d, f = name_of(i)
            if d != cur_dir:
                if dfd >= 0:
                    os.close(dfd)
                os.makedirs(os.path.join(top, d), exist_ok=True)
                dfd = os.open(os.path.join(top, d), os.O_RDONLY | os.O_DIRECTORY)
                cur_dir = d
            if content == "random":
                off = rng.randrange(65536)
                data = pool[off:off + size]
            else:
                tag = b"%d\n" % i
                data = (tag * (size // len(tag) + 1))[:size]
            fd = os.open(f, flags, 0o644, dir_fd=dfd)
            try:
                if data:
                    os.write(fd, data)
            finally:
                os.close(fd)
    finally:
        if dfd >= 0:
            os.close(dfd)
    return hi - lo


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--content", choices=("fixed", "random"), default="fixed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if not 0 <= a.files <= FANOUT ** LEVELS:
        sys.exit("mktree.py: --files must be 0..%d" % FANOUT ** LEVELS)
    if a.size < 0:
        sys.exit("mktree.py: --size must be >= 0")
    if a.jobs < 1:
        sys.exit("mktree.py: --jobs must be >= 1")
    if os.path.exists(a.dir) and os.listdir(a.dir):
        sys.exit("mktree.py: '%s' is not empty" % a.dir)
    os.makedirs(a.dir, exist_ok=True)
    t0 = time.monotonic()
    # ranges of one leaf directory's 100 files at least, 10000 at most, spread over the jobs
    step = max(FANOUT, min(FANOUT * FANOUT, a.files // (a.jobs * 4) // FANOUT * FANOUT or FANOUT))
    work = [(a.dir, lo, min(lo + step, a.files), a.size, a.content, a.seed)
            for lo in range(0, a.files, step)]
    if a.jobs == 1 or len(work) <= 1:
        done = sum(write_range(w) for w in work)
    else:
        with multiprocessing.Pool(a.jobs) as pool:
            done = sum(pool.imap_unordered(write_range, work))
    secs = time.monotonic() - t0
    print("mktree.py: wrote %d files of %d bytes under %s in %.1f s (%.0f files/s, %d jobs)"
          % (done, a.size, a.dir, secs, done / secs if secs > 0 else 0, a.jobs))


if __name__ == "__main__":
    main()
