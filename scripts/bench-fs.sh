#!/usr/bin/env bash
# The file system under the upload store, measured: each configuration of the matrix made on a
# loop device (losetup --direct-io=on over an image file on this machine's disk), mounted, and
#   fio     writes with an fdatasync after each (fio --fdatasync=1), of 4 KB, 32 KB, 128 KB and
#           1 MB, by 1 and 4 jobs, to files of their own: appending to new files, over
#           fallocated blocks (--fallocate=native) and over blocks written before (--overwrite)
#   perid   the one-file-per-id store: 10 000 files of 4 KB replaced at random by 1 and 16
#           threads, one fsync each, by overwriting in place, writing a temporary and renaming,
#           or deleting and creating (scripts/fsops.py)
#   store   server1's upload store there: scripts/bench-writes.sh --configs group, PUTs of 4 KB
#           and of 1 MB at 1, 16 and 64 users (its TMPDIR on the mount)
#   get     GETs of one file per name from server1 (no --prefetch: an open, a read per GET),
#           20 000 files of 4 KB, 16 users, names drawn uniformly (loadgen --names), the file
#           system remounted noatime, relatime (the kernel's default) and strictatime
# The matrix (--configs): ext4-ordered ext4-writeback ext4-journal ext4-fc (fast_commit)
# ext4-nojournal ext4-extjournal (the journal on a second loop device) xfs xfs-logbsize
# (logbsize=256k) xfs-extlog (the log on a second loop device) btrfs btrfs-nodatacow; each
# mounted noatime (but for get's remounts), with online discard off and on (--discard).
# mkfs never discards (-E nodiscard, -K), ext4 initializes its tables at mkfs, not in the
# background, and every cell starts from a fresh file system. Rounds alternate: in each, every
# cell once, in an order rotated from round to round. Prints the medians (and p99) per cell and
# load, and writes report.md, raw.tsv, medians.tsv, plots (gnuplot) and machine.md to --out.
#
#   scripts/bench-fs.sh [--rounds N] [--seconds S] [--configs LIST] [--discard off,on]
#                       [--parts fio,perid,store,get] [--image-gb G] [--quick] [--out DIR]
#                       [--keep]
#     --rounds N     rounds (default 5); medians over them
#     --seconds S    seconds per measurement (default 3; bench-writes: S per point)
#     --configs LIST configurations of the matrix (default all eleven)
#     --discard LIST off, on or both (default off,on): mounted with -o discard or not
#     --parts LIST   any of fio,perid,store,get (default all)
#     --image-gb G   the loop device's size (default 8; made and written once, at start)
#     --quick        1 round of 1 s, ext4-ordered and xfs, discard off, fio 4 KB and 1 MB by 1
#                    job, perid with 16 threads, store PUTs of 4 KB at 1 and 16 users, get
#                    noatime and strictatime: about 3 minutes, to see that it all runs
#     --out DIR      default results/<YYYYMMDD-HHMM>-fs-<host>
#     --keep         keep the work directory (images, logs)
# Needs root (loop devices, mounts), fio, xfsprogs, btrfs-progs (scripts/setup.sh installs them).
# Removes every mount, loop device, process and file it made, also on failure or Ctrl-C.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

usage() { header_usage "${BASH_SOURCE[0]}" 23 39 "${1:-2}"; }

ALL_CONFIGS="ext4-ordered ext4-writeback ext4-journal ext4-fc ext4-nojournal ext4-extjournal xfs xfs-logbsize xfs-extlog btrfs btrfs-nodatacow"
ROUNDS=5 SECS=3 CONFIGS=$ALL_CONFIGS DISCARD="off on" PARTS="fio perid store get" IMAGE_GB=8
OUT="" KEEP="" QUICK=""
FIO_BS="4k 32k 128k 1m" FIO_JOBS="1 4" FIO_PATTERNS="append fallocated reused"
PERID_THREADS="1 16" PERID_PATTERNS="overwrite rename recreate"
STORE_SIZES="4096 1048576" STORE_USERS="1 16 64" GET_ATIME="noatime relatime strictatime"
while (($# > 0)); do
    case $1 in
    --rounds) ROUNDS=${2:-}; shift 2 || usage ;;
    --seconds) SECS=${2:-}; shift 2 || usage ;;
    --configs) CONFIGS=${2//,/ }; shift 2 || usage ;;
    --discard) DISCARD=${2//,/ }; shift 2 || usage ;;
    --parts) PARTS=${2//,/ }; shift 2 || usage ;;
    --image-gb) IMAGE_GB=${2:-}; shift 2 || usage ;;
    --quick) QUICK=1; shift ;;
    --out) OUT=${2:-}; shift 2 || usage ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
if [[ -n $QUICK ]]; then
    ROUNDS=1 SECS=1 CONFIGS="ext4-ordered xfs" DISCARD=off FIO_BS="4k 1m" FIO_JOBS=1
    PERID_THREADS=16 STORE_SIZES=4096 STORE_USERS="1 16" GET_ATIME="noatime strictatime"
fi
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]] ||
    die "--rounds and --seconds take positive integers"
if ! [[ $IMAGE_GB =~ ^[1-9][0-9]*$ ]] || ((IMAGE_GB < 4 || IMAGE_GB > 64)); then
    die "--image-gb takes 4 to 64"
fi
for c in $CONFIGS; do [[ " $ALL_CONFIGS " == *" $c "* ]] || die "--configs: unknown '$c' (any of $ALL_CONFIGS)"; done
for d in $DISCARD; do [[ $d == off || $d == on ]] || die "--discard: off, on or both"; done
for p in $PARTS; do [[ " fio perid store get " == *" $p "* ]] || die "--parts: unknown '$p'"; done
[[ -n ${CONFIGS// /} && -n ${DISCARD// /} && -n ${PARTS// /} ]] || usage
((EUID == 0)) || die "needs root (loop devices, mounts)"
require_cmd losetup mount umount mkfs.ext4 python3 awk curl
[[ $PARTS != *fio* ]] || require_cmd fio
[[ $CONFIGS != *xfs* ]] || require_cmd mkfs.xfs
[[ $CONFIGS != *btrfs* ]] || require_cmd mkfs.btrfs
[[ $PARTS != *get* && $PARTS != *store* ]] || for p in server1 server2 loadgen; do
    [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"
done
OUT=${OUT:-$TOP/results/$(date -u +%Y%m%d-%H%M)-fs-$(hostname -s | tr -c 'a-zA-Z0-9\n' - | cut -c1-20)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

WORK=$(mktemp -d /var/tmp/bench-fs.XXXXXX)
MNT=$WORK/mnt
DEV="" JDEV="" STACK=""
mkdir -p "$MNT"
cleanup() {
    local rc=$?
    [[ -z $STACK ]] || "$TOP/scripts/stack.sh" stop "$STACK" >/dev/null 2>&1 || true
    if mountpoint -q "$MNT"; then umount "$MNT" 2>/dev/null || umount -l "$MNT" || true; fi
    [[ -z $DEV ]] || losetup -d "$DEV" 2>/dev/null || true
    [[ -z $JDEV ]] || losetup -d "$JDEV" 2>/dev/null || true
    if [[ -n $KEEP || $rc -ne 0 ]]; then
        log "work dir kept: $WORK"
        [[ -n $KEEP ]] || rm -f "$WORK"/*.img
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the disks ----------------------------------------------------------------------------
# Both images are written whole once, so that no cell pays for the host file system allocating
# the image's blocks; a cell with online discard punches holes in them (the loop driver turns a
# discard into a hole), which fill_holes writes again before the next cell.
IMG=$WORK/disk.img JIMG=$WORK/journal.img
log "writing the images: $IMAGE_GB GiB and 1 GiB under $WORK"
dd if=/dev/zero of="$IMG" bs=1M count=$((IMAGE_GB * 1024)) oflag=direct status=none
dd if=/dev/zero of="$JIMG" bs=1M count=1024 oflag=direct status=none
fill_holes() {
    python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
size, off, filled, zero = os.fstat(fd).st_size, 0, 0, bytes(1 << 20)
while off < size:
    try:
        hole = os.lseek(fd, off, os.SEEK_HOLE)
    except OSError:
        break
    if hole >= size:
        break
    try:
        data = os.lseek(fd, hole, os.SEEK_DATA)
    except OSError:
        data = size
    while hole < data:
        n = os.pwrite(fd, zero[:min(len(zero), data - hole)], hole)
        hole += n
        filled += n
    off = data
os.fsync(fd)
print(filled)
PY
}

# mkfs_and_mount CONFIG DISCARD: DEV (and JDEV) attached, the file system made and mounted
mkfs_and_mount() {
    local cfg=$1 discard=$2 opts=noatime
    DEV=$(losetup -f --show --direct-io=on "$IMG")
    case $cfg in
    ext4-extjournal | xfs-extlog) JDEV=$(losetup -f --show --direct-io=on "$JIMG") ;;
    esac
    local ext4=(mkfs.ext4 -q -F -E "nodiscard,lazy_itable_init=0,lazy_journal_init=0")
    case $cfg in
    ext4-ordered) "${ext4[@]}" "$DEV"; opts+=,data=ordered ;;
    ext4-writeback) "${ext4[@]}" "$DEV"; opts+=,data=writeback ;;
    ext4-journal) "${ext4[@]}" "$DEV"; opts+=,data=journal ;;
    ext4-fc) "${ext4[@]}" -O fast_commit "$DEV" ;;
    ext4-nojournal) "${ext4[@]}" -O ^has_journal "$DEV" ;;
    ext4-extjournal)
        mkfs.ext4 -q -F -E nodiscard -O journal_dev -b 4096 "$JDEV"
        "${ext4[@]}" -b 4096 -J device="$JDEV" "$DEV"
        ;;
    xfs) mkfs.xfs -q -f -K "$DEV" ;;
    xfs-logbsize) mkfs.xfs -q -f -K "$DEV"; opts+=,logbsize=256k ;;
    xfs-extlog) mkfs.xfs -q -f -K -l logdev="$JDEV",size=512m "$DEV"; opts+=,logdev=$JDEV ;;
    btrfs) mkfs.btrfs -q -f -K "$DEV" ;;
    btrfs-nodatacow) mkfs.btrfs -q -f -K "$DEV"; opts+=,nodatacow ;;
    esac
    [[ $discard == off ]] || opts+=,discard
    mount -o "$opts" "$DEV" "$MNT"
    CELL_OPTS=$opts
}

unmount_cell() {
    local discard=$1 filled
    umount "$MNT"
    losetup -d "$DEV"
    DEV=""
    if [[ -n $JDEV ]]; then
        losetup -d "$JDEV"
        JDEV=""
    fi
    if [[ $discard == on ]]; then
        filled=$(fill_holes "$IMG")
        filled=$((filled + $(fill_holes "$JIMG")))
        log "  discard: $((filled >> 20)) MiB of holes written again"
    fi
}

RAW=$OUT/raw.tsv
printf 'config\tdiscard\tmount options\n' >"$OUT/mounts.tsv"
printf 'round\tconfig\tdiscard\tpart\ttest\tsize\tload\tops_s\tMB_s\tp50_ms\tp99_ms\n' >"$RAW"
# row ROUND CONFIG DISCARD PART TEST SIZE LOAD OPS MB P50 P99
row() { local IFS=$'\t'; echo "$*" >>"$RAW"; }

# ---- the parts ----------------------------------------------------------------------------
declare -A FIO_APPEND_SIZE=([4k]=64m [32k]=256m [128k]=512m [1m]=1g)
part_fio() {
    local r=$1 cfg=$2 dis=$3 pat bs jobs args out
    for pat in $FIO_PATTERNS; do
        for bs in $FIO_BS; do
            for jobs in $FIO_JOBS; do
                mkdir -p "$MNT/fio"
                args=(--directory="$MNT/fio" --name=w --rw=write --bs="$bs" --numjobs="$jobs"
                    --fdatasync=1 --ioengine=psync --runtime="$SECS" --time_based
                    --group_reporting --output-format=json)
                case $pat in
                append) args+=(--size="${FIO_APPEND_SIZE[$bs]}" --fallocate=none) ;;
                fallocated) args+=(--size="${FIO_APPEND_SIZE[$bs]}" --fallocate=native) ;;
                reused) args+=(--size=64m --overwrite=1 --fallocate=none) ;;
                esac
                out=$WORK/fio.json
                timeout -k 5 $((SECS + 120)) fio "${args[@]}" >"$out" 2>"$WORK/fio.err" ||
                    die "fio failed ($cfg, $pat $bs x$jobs): $(tail -n 3 "$WORK/fio.err")"
                # ops: fdatasync'd writes a second; latency: each fdatasync's (the write
                # before it is a copy into the page cache)
                python3 - "$out" <<'PY' | {
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, s = j["write"], j["sync"]["lat_ns"]
p = s.get("percentile", {})
print("%.1f\t%.2f\t%.3f\t%.3f" % (w["iops"], w["bw_bytes"] / 1e6,
      p.get("50.000000", 0) / 1e6, p.get("99.000000", 0) / 1e6))
PY
                    IFS=$'\t' read -r ops mb p50 p99
                    row "$r" "$cfg" "$dis" fio "$pat" "$bs" "$jobs" "$ops" "$mb" "$p50" "$p99"
                }
                rm -rf "$MNT/fio"
            done
        done
    done
}

part_perid() {
    local r=$1 cfg=$2 dis=$3 pat th line
    for pat in $PERID_PATTERNS; do
        for th in $PERID_THREADS; do
            line=$(timeout -k 5 $((SECS + 300)) python3 "$TOP/scripts/fsops.py" "$MNT/perid" \
                --pattern "$pat" --threads "$th" --ids 10000 --size 4096 --seconds "$SECS") ||
                die "fsops failed ($cfg, $pat x$th)"
            python3 - "$line" <<'PY' | {
import json, sys
j = json.loads(sys.argv[1])
print("%.1f\t%.2f\t%.3f\t%.3f" % (j["ops_s"], j["ops_s"] * 4096 / 1e6, j["p50_ms"], j["p99_ms"]))
PY
                IFS=$'\t' read -r ops mb p50 p99
                row "$r" "$cfg" "$dis" perid "$pat" 4k "$th" "$ops" "$mb" "$p50" "$p99"
            }
            rm -rf "$MNT/perid"
        done
    done
}

part_store() {
    local r=$1 cfg=$2 dis=$3 size d
    for size in $STORE_SIZES; do
        d=$WORK/bw-$size
        rm -rf "$d"
        TMPDIR=$MNT BIN_DIR=$BIN_DIR timeout -k 5 1200 bash "$TOP/scripts/bench-writes.sh" \
            --configs group --rounds 1 --duration "$SECS" --users "$STORE_USERS" --size "$size" \
            --out "$d" >"$WORK/bw.log" 2>&1 || die "bench-writes failed ($cfg, $size B): $(tail -n 3 "$WORK/bw.log")"
        # medians.csv: config,users,ops_s_median,p99_ms_median,errors,rounds,per_flush_median
        while IFS=, read -r c users ops p99 _; do
            [[ $c == group ]] || continue
            row "$r" "$cfg" "$dis" store put "$size" "$users" "$ops" \
                "$(awk -v o="$ops" -v s="$size" 'BEGIN { printf "%.2f", o * s / 1e6 }')" "" "$p99"
        done <"$d/medians.csv"
        rm -rf "$MNT"/bench-writes.*
    done
}

part_get() {
    local r=$1 cfg=$2 dis=$3 atime url out p
    python3 - "$MNT/www" <<'PY'
import os, sys
root, blob = sys.argv[1], os.urandom(4096)
for d in range(20):
    os.makedirs("%s/d%02d" % (root, d))
    for f in range(1000):
        with open("%s/d%02d/f%04d" % (root, d, f), "wb") as fh:
            fh.write(blob)
PY
    sync
    STACK=$WORK/stack
    rm -rf "$STACK" # (a fresh database: the account is made again)
    url=$(BIN_DIR=$BIN_DIR "$TOP/scripts/stack.sh" start "$STACK" --backend redis \
        --hash-cost min --auth-cache 100000 --root "$MNT/www" --port 0 -- --max-conns-per-ip 0 \
        --login-fail-limit 0 --signup-limit 0 --auth-cache 100000 --auth-cache-ttl 60s \
        2>>"$WORK/stack.log") || die "get: the stack did not start: $(tail -n 3 "$WORK/stack.log")"
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/users" -d 'username=fsbench&password=fsbench-pw-1') == 201 ]] ||
        die "get: the account was not created"
    for atime in $GET_ATIME; do
        mount -o "remount,$atime" "$MNT"
        out=$WORK/lg-get
        rm -rf "$out"
        timeout -k 5 $((SECS + 60)) "$BIN_DIR/loadgen" --url "$url" --username fsbench \
            --password fsbench-pw-1 --names 'd{00..19}/f{0000..0999}' --pick uniform \
            --users 16 --duration "$SECS" --warmup 1 --timeout 10 -o "$out" \
            >"$out.txt" 2>"$out.log" || die "get: loadgen failed: $(tail -n 3 "$out.log")"
        p=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
            $h["type"] == "all" { print $h["x_rps"] "\t" $h["p50_ms"] "\t" $h["p99_ms"]; exit }' \
            "$out/points.csv")
        [[ -n $p ]] || die "get: no point in $out/points.csv"
        IFS=$'\t' read -r ops p50 p99 <<<"$p"
        row "$r" "$cfg" "$dis" get "$atime" 4k 16 "$ops" \
            "$(awk -v o="$ops" 'BEGIN { printf "%.2f", o * 4096 / 1e6 }')" "$p50" "$p99"
    done
    "$TOP/scripts/stack.sh" stop "$STACK" >/dev/null 2>&1 || true
    STACK=""
    mount -o remount,noatime "$MNT"
}

# ---- the rounds ---------------------------------------------------------------------------
CELLS=()
for c in $CONFIGS; do for d in $DISCARD; do CELLS+=("$c $d"); done; done
started=$(now_ms)
for ((round = 1; round <= ROUNDS; round++)); do
    n=${#CELLS[@]}
    for ((i = 0; i < n; i++)); do
        read -r cfg dis <<<"${CELLS[$(((i + round - 1) % n))]}"
        log "round $round/$ROUNDS: $cfg, discard $dis ($((($(now_ms) - started) / 1000)) s so far)"
        mkfs_and_mount "$cfg" "$dis"
        ((round > 1)) || printf '%s\t%s\t%s\n' "$cfg" "$dis" "$CELL_OPTS" >>"$OUT/mounts.tsv"
        for part in $PARTS; do "part_$part" "$round" "$cfg" "$dis"; done
        unmount_cell "$dis"
    done
done
log "measured in $((($(now_ms) - started) / 1000)) s"

# ---- the report ---------------------------------------------------------------------------
bash "$TOP/scripts/machine-info.sh" >"$OUT/machine.md" 2>/dev/null || true
{
    echo "# The file system under the store: $(date -u +%F)"
    echo
    echo "\`scripts/bench-fs.sh --rounds $ROUNDS --seconds $SECS --configs ${CONFIGS// /,}" \
        "--discard ${DISCARD// /,} --parts ${PARTS// /,} --image-gb $IMAGE_GB${QUICK:+ --quick}\`," \
        "$((($(now_ms) - started) / 1000)) s. Loop devices with direct I/O over image" \
        "files on $(findmnt -no SOURCE,FSTYPE --target "$WORK" | tr '\n' ' ')(the machine:" \
        "[machine.md](machine.md)); every cell a fresh file system, mounted noatime."
    echo
    echo "| configuration | discard | mount options |"
    echo "|---|---|---|"
    tail -n +2 "$OUT/mounts.tsv" | awk -F'\t' '{ printf "| %s | %s | `%s` |\n", $1, $2, $3 }'
    echo
    echo "ops/s: fio, fdatasync'd writes a second (all jobs); perid, files replaced a second;"
    echo "store, PUTs answered a second; get, GETs a second. p99: fio, of each fdatasync; the"
    echo "others, of each whole operation or request. Medians of the rounds."
    echo
} >"$OUT/report.md"
python3 - "$RAW" "$OUT" >>"$OUT/report.md" <<'PY'
import csv, statistics, sys
raw, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
key = lambda r: (r["part"], r["test"], r["size"], r["load"], r["config"], r["discard"])
groups = {}
for r in rows:
    groups.setdefault(key(r), []).append(r)
def med(rs, f):
    v = [float(r[f]) for r in rs if r[f] not in ("", None)]
    return statistics.median(v) if v else float("nan")
with open(out + "/medians.tsv", "w") as f:
    f.write("part\ttest\tsize\tload\tconfig\tdiscard\trounds\tops_s\tMB_s\tp50_ms\tp99_ms\n")
    for k, rs in groups.items():
        f.write("\t".join(k) + "\t%d\t%.1f\t%.2f\t%.3f\t%.3f\n" % (
            len(rs), med(rs, "ops_s"), med(rs, "MB_s"), med(rs, "p50_ms"), med(rs, "p99_ms")))
configs = list(dict.fromkeys((r["config"], r["discard"]) for r in rows))
loads = list(dict.fromkeys((r["part"], r["test"], r["size"], r["load"]) for r in rows))
unit = {"fio": "jobs", "perid": "threads", "store": "users", "get": "users"}
for part in dict.fromkeys(l[0] for l in loads):
    print("## %s\n" % part)
    cols = [l for l in loads if l[0] == part]
    print("| configuration | " + " | ".join("%s %s ×%s %s" % (t, s, n, unit[p]) for p, t, s, n in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for c, d in configs:
        cells = []
        for p, t, s, n in cols:
            rs = groups.get((p, t, s, n, c, d), [])
            cells.append("%.0f (%.1f ms)" % (med(rs, "ops_s"), med(rs, "p99_ms")) if rs else "")
        print("| %s%s | " % (c, ", discard" if d == "on" else "") + " | ".join(cells) + " |")
    print("\nops/s (p99). raw.tsv holds every round, medians.tsv the medians.\n")
PY
if command -v gnuplot >/dev/null 2>&1; then
    # one bar chart per part's first load: ops/s of every configuration
    python3 - "$OUT/medians.tsv" "$OUT" <<'PY' || log "plots: failed (report.md has the figures)"
import csv, subprocess, sys
med, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(med), delimiter="\t"))
for part in dict.fromkeys(r["part"] for r in rows):
    rs = [r for r in rows if r["part"] == part]
    first = (rs[0]["test"], rs[0]["size"], rs[0]["load"])
    rs = [r for r in rs if (r["test"], r["size"], r["load"]) == first]
    dat = "%s/plot-%s.dat" % (out, part)
    with open(dat, "w") as f:
        for r in rs:
            f.write('"%s%s" %s %s\n' % (r["config"], "+discard" if r["discard"] == "on" else "",
                                        r["ops_s"], r["p99_ms"]))
    script = """set terminal pngcairo size 1000,500
set output '%s/%s.png'
set title '%s: %s %s x%s (medians)'
set style data histograms
set style fill solid 0.8
set ylabel 'ops/s'
set y2label 'p99 ms'
set y2tics
set xtics rotate by -35
plot '%s' using 2:xtic(1) title 'ops/s', '' using 0:3 axes x1y2 with points pt 7 title 'p99 ms'
""" % (out, part, part, first[0], first[1], first[2], dat)
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
PY
    rm -f "$OUT"/plot-*.dat
fi
log "report: $OUT/report.md"
cat "$OUT/report.md"
