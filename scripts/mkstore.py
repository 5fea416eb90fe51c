#!/usr/bin/env python3
"""mkstore.py - writes an upload store directly, in the log format of server1/store.c (segment,
batch and record headers, CRC-32s), so that a benchmark can start server1 on a million uploads
in seconds instead of sending them all (scripts/bench-listing.sh).

  mkstore.py ROOT --files N [--dirs D] [--owner NAME] [--size BYTES] [--max-size BYTES]
             [--append]

Writes ROOT/.s1store/NNNNNNNN.seg (ROOT/.s1store must not exist yet): N uploads of --size
bytes (default 0; with --max-size, of a size drawn evenly from --size to --max-size, the same
sizes on every run) by --owner (default "bench"), named dNNNN/fNNNNNNN, spread evenly over D
directories (default 1000); with --dirs 0, all in the root (fNNNNNNN). Batches of 256 records,
segments of about 64 MiB, as server1 writes them; each upload's version is its time of
writing. server1 replays them at start like any others, and refuses the store if a byte is
wrong. No index checkpoint is written: the first start replays the whole log (and writes one
when it stops). With --append, ROOT/.s1store exists and the uploads go to new segments after
its last one, named aNNNN/fNNNNNNN (--dirs 0: afNNNNNNN): the log that a crash leaves after
the last checkpoint (scripts/bench-store-start.sh).
"""
import argparse
import os
import random
import struct
import sys
import time
import zlib

SEG_MAGIC = 0x47533153    # "S1SG"
BATCH_MAGIC = 0x54423153  # "S1BT"
REC_MAGIC = 0x31523153    # "S1R1"
REC_PUT_V = 3
SEG_BYTES = 64 << 20
BATCH = 256


def seg_header(seg_id, salt):
    rest = struct.pack("<IIQQ", seg_id, salt, 0, 0)
    return struct.pack("<II", SEG_MAGIC, zlib.crc32(rest)) + rest


def record(name, owner, data, salt, version):
    # struct rec_hdr: magic, crc, data_len, name_len, owner_len, op, salt; then the version
    after_crc = struct.pack("<QHBBIQ", len(data), len(name), len(owner), REC_PUT_V, salt, version)
    crc = zlib.crc32(name + owner + data, zlib.crc32(after_crc))
    return struct.pack("<II", REC_MAGIC, crc) + after_crc + name + owner + data


def batch(records, salt):
    body = b"".join(records)
    rest = struct.pack("<IIQQ", salt, len(records), len(body), 0)
    return struct.pack("<II", BATCH_MAGIC, zlib.crc32(rest)) + rest + body


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--dirs", type=int, default=1000)
    ap.add_argument("--owner", default="bench")
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--max-size", type=int, default=None)
    ap.add_argument("--append", action="store_true")
    a = ap.parse_args()
    if a.max_size is None:
        a.max_size = a.size
    if (a.files < 0 or a.dirs < 0 or a.size < 0 or a.max_size < a.size or not a.owner or
            len(a.owner) > 64):
        sys.exit("mkstore.py: bad arguments")
    rng = random.Random(1)
    store = os.path.join(a.root, ".s1store")
    seg_id, prefix = 0, "d"
    if a.append:
        ids = [int(n[:8], 16) for n in os.listdir(store) if n.endswith(".seg")]
        seg_id, prefix = max(ids) + 1, "a"
    else:
        os.makedirs(store)
    first = seg_id
    owner, data = a.owner.encode(), b"x" * a.max_size
    version = time.time_ns()
    out, seg_len, recs = None, 0, []

    def new_segment():
        nonlocal seg_id, out, seg_len
        if out is not None:
            out.close()
            seg_id += 1
        salt = int.from_bytes(os.urandom(4), "little")
        out = open(os.path.join(store, "%08x.seg" % seg_id), "wb")
        out.write(seg_header(seg_id, salt))
        seg_len = 32
        return salt

    salt = new_segment()
    for i in range(a.files):
        if a.dirs > 0:
            name = ("%s%04d/f%07d" % (prefix, i % a.dirs, i // a.dirs)).encode()
        else:
            name = ("%sf%07d" % ("a" if a.append else "", i)).encode()
        size = a.size if a.max_size == a.size else rng.randint(a.size, a.max_size)
        recs.append(record(name, owner, data[:size], salt, version + i))
        if len(recs) == BATCH or i == a.files - 1:
            b = batch(recs, salt)
            out.write(b)
            seg_len += len(b)
            recs = []
            if seg_len >= SEG_BYTES and i < a.files - 1:
                salt = new_segment()
    out.close()
    print("mkstore.py: %d uploads in %d segment(s) under %s" % (a.files, seg_id - first + 1,
                                                               store))


if __name__ == "__main__":
    main()
