#!/usr/bin/env bash
# Millions of small files, cold: random GETs of a numbered tree (scripts/mktree.py: d00/d00/d00/f00
# ...) whose bytes cannot stay in memory, side by side in one run:
#   pack-direct   server1 --pack (s1pack build of the tree) --read direct: one O_DIRECT read,
#                 up to --read-depth (64) of them in flight per worker thread (Linux AIO)
#   pack-inline   the same with --read-depth 0: each read stops its worker thread until done
#   pack-buffered server1 --pack --read buffered: one sendfile from the page cache
#   root-direct   server1 --root on the tree (its default --read direct): an open, an O_DIRECT
#                 read and a close per GET
#   root-buffered server1 --root --read buffered: an open, a sendfile and a close per GET
#   nginx         nginx on the tree, open_file_cache off
#   nginx-ofc     nginx on the tree, open_file_cache max=100000 (less under a lower hard open-file
#                 limit: the limit less 2048)
# The tree and the pack live on a file system of their own (ext4 on a loop device with direct
# I/O over an image file on this machine's disk), so that its reads per GET are counted alone
# (/sys/block/loopN/stat); the servers run in a memory cgroup (--mem-limit, default 1 GiB, page
# cache included), and every window starts with the caches dropped (echo 3 >
# /proc/sys/vm/drop_caches) and a 2 s warm-up run, then --seconds measured. loadgen draws the
# names (--names 'd{00..99}/...' over the files made, --pick: uniform by default), 1, 16 and 64
# connections, with server1's credential cache on (one account). Per window: GET/s, p50, p99,
# disk reads per GET; once: the time to make the tree, the pack's build time and rate, its index
# bytes per file (index part ÷ N, and server1's resident memory with the pack over without),
# and server1's start time with the pack. The order of the servers rotates from round to round.
#
#   scripts/bench-smallfiles.sh [--files N] [--size BYTES] [--mem-limit BYTES] [--rounds N]
#                               [--seconds S] [--conns "1 16 64"] [--pick LAW]
#                               [--servers LIST] [--out DIR] [--keep]
#     --files N        files in the tree (default 1000000; 10000000 for the source document's
#                      scale, which needs about 45 GB of disk at 1 KB)
#     --size BYTES     bytes per file (default 8192)
#     --mem-limit B    the servers' memory cgroup limit (default 1073741824)
#     --rounds N       rounds (default 3); medians over them
#     --seconds S      measured seconds per window (default 10)
#     --conns LIST     connections (default "1 16 64")
#     --pick LAW       loadgen --pick: uniform or zipf:S (default uniform)
#     --servers LIST   any of pack-direct,pack-inline,pack-buffered,root-direct,
#                      root-buffered,nginx,nginx-ofc (default all)
#     --out DIR        default results/<YYYYMMDD-HHMM>-smallfiles-<host>
#     --keep           keep the work directory (image, logs)
# Needs root (loop device, mount, cgroup, drop_caches). Removes every mount, loop device,
# cgroup, process and file it made, also on failure or Ctrl-C.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

usage() { header_usage "${BASH_SOURCE[0]}" 25 41 "${1:-2}"; }

ALL_SERVERS="pack-direct pack-inline pack-buffered root-direct root-buffered nginx nginx-ofc"
FILES=1000000 SIZE=8192 MEM_LIMIT=$((1 << 30)) ROUNDS=3 SECS=10 CONNS="1 16 64" PICK=uniform
SERVERS=$ALL_SERVERS OUT="" KEEP=""
while (($# > 0)); do
    case $1 in
    --files) FILES=${2:-}; shift 2 || usage ;;
    --size) SIZE=${2:-}; shift 2 || usage ;;
    --mem-limit) MEM_LIMIT=${2:-}; shift 2 || usage ;;
    --rounds) ROUNDS=${2:-}; shift 2 || usage ;;
    --seconds) SECS=${2:-}; shift 2 || usage ;;
    --conns) CONNS=${2:-}; shift 2 || usage ;;
    --pick) PICK=${2:-}; shift 2 || usage ;;
    --servers) SERVERS=${2//,/ }; shift 2 || usage ;;
    --out) OUT=${2:-}; shift 2 || usage ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
for v in "$FILES" "$SIZE" "$MEM_LIMIT" "$ROUNDS" "$SECS"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "--files, --size, --mem-limit, --rounds, --seconds take positive integers"
done
((FILES >= 100 && FILES <= 100000000)) || die "--files takes 100 to 100000000"
((SIZE <= 1 << 20)) || die "--size takes at most 1 MiB"
((MEM_LIMIT >= 64 << 20)) || die "--mem-limit takes at least 64 MiB"
for c in $CONNS; do [[ $c =~ ^[1-9][0-9]*$ ]] || die "--conns: '$c' is not a count"; done
for s in $SERVERS; do [[ " $ALL_SERVERS " == *" $s "* ]] || die "--servers: unknown '$s' (any of $ALL_SERVERS)"; done
[[ -n ${SERVERS// /} && -n ${CONNS// /} ]] || usage
((EUID == 0)) || die "needs root (loop device, mount, cgroup, drop_caches)"
require_cmd losetup mount umount mkfs.ext4 python3 awk curl
[[ $SERVERS != *nginx* ]] || require_cmd nginx
for p in server1 server2 loadgen s1pack; do
    [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"
done
# has SERVER: whether SERVER is measured
has() { [[ " $SERVERS " == *" $1 "* ]]; }

# the memory cgroup (v1 or v2), under this process's own
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    CG_PARENT=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup) CG_LIMIT=memory.max
else
    CG_PARENT=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup) CG_LIMIT=memory.limit_in_bytes
fi
[[ -d $CG_PARENT ]] || die "no memory cgroup at $CG_PARENT"

OUT=${OUT:-$TOP/results/$(date -u +%Y%m%d-%H%M)-smallfiles-$(hostname -s | tr -c 'a-zA-Z0-9\n' - | cut -c1-20)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /var/tmp/bench-small.XXXXXX)
chmod 755 "$WORK" # nginx's workers (nobody) read the tree under it
FS=$WORK/fs CG=$CG_PARENT/s1-bench-small-$$ LOOP="" NGINX_PID="" STACK=$WORK/stack
declare -A S1_PID=()
mkdir -p "$FS"
cleanup() {
    local rc=$? p
    [[ -z $NGINX_PID ]] || { kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null; } || true
    for p in "${S1_PID[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${S1_PID[@]}"; do wait "$p" 2>/dev/null || true; done
    "$TOP/scripts/stack.sh" stop "$STACK" >/dev/null 2>&1 || true
    if [[ -d $CG ]]; then # anything left in it goes back to the parent, then it goes
        while read -r p; do echo "$p" >"$CG_PARENT/cgroup.procs" 2>/dev/null || true; done <"$CG/cgroup.procs"
        rmdir "$CG" 2>/dev/null || true
    fi
    if mountpoint -q "$FS"; then umount "$FS" 2>/dev/null || umount -l "$FS" || true; fi
    [[ -z $LOOP ]] || losetup -d "$LOOP" 2>/dev/null || true
    if [[ -n $KEEP ]]; then
        log "work dir kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the tree and the pack ----------------------------------------------------------------
# ext4 holds a file of SIZE in whole 4 KiB blocks plus its inode; the pack, SIZE rounded up to
# its alignment (512) plus its index: room for both, and a quarter more
per_file=$(((SIZE + 4095) / 4096 * 4096 + 256 + (SIZE + 511) / 512 * 512 + 64))
IMG_BYTES=$((FILES * per_file * 5 / 4 + (1 << 30)))
avail=$(($(df --output=avail -B1 "$WORK" | tail -n 1)))
((IMG_BYTES < avail)) || die "the image needs $((IMG_BYTES >> 30)) GiB; $WORK has $((avail >> 30)) GiB"
log "image of $((IMG_BYTES >> 30)) GiB under $WORK; $FILES files of $SIZE bytes"
fallocate -l "$IMG_BYTES" "$WORK/disk.img"
LOOP=$(losetup -f --show --direct-io=on "$WORK/disk.img")
DISK=${LOOP#/dev/}
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 -N $((FILES + FILES / 4 + 100000)) "$LOOP"
mount -o noatime "$LOOP" "$FS"
t0=$(now_ms)
python3 "$TOP/scripts/mktree.py" "$FS/tree" --files "$FILES" --size "$SIZE" >"$WORK/mktree.log" 2>&1 ||
    die "mktree failed: $(tail -n 3 "$WORK/mktree.log")"
sync
TREE_S=$((($(now_ms) - t0) / 1000))
log "tree made in $TREE_S s"
t0=$(now_ms)
"$BIN_DIR/s1pack" build "$FS/tree" "$FS/tree.pack" >"$WORK/s1pack.log" 2>&1 ||
    die "s1pack build failed: $(tail -n 3 "$WORK/s1pack.log")"
BUILD_MS=$(($(now_ms) - t0))
PACK=$FS/tree.pack
read -r INDEX_BYTES PACK_BYTES < <(python3 - "$PACK" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    h = f.read(96)
    f.seek(0, 2)
    size = f.tell()
# header: magic 8, version u32, alignment u32, files u64, data off u64, data bytes u64,
# index offset u64, index bytes u64 (docs/pack.md)
index_bytes = struct.unpack_from("<Q", h, 8 + 4 + 4 + 8 + 8 + 8 + 8)[0]
print(index_bytes, size)
PY
)
log "pack built in $BUILD_MS ms ($((FILES * 1000 / (BUILD_MS + 1))) files/s); index $INDEX_BYTES bytes"
mkdir -p "$WORK/uploads" "$WORK/empty"

# ---- the servers --------------------------------------------------------------------------
mkdir "$CG"
echo "$MEM_LIMIT" >"$CG/$CG_LIMIT"
# into_cgroup PID...: each process (with its threads) into the servers' cgroup
into_cgroup() { local p; for p in "$@"; do echo "$p" >"$CG/cgroup.procs"; done; }
# rss_kb PID: resident set
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

declare -A URL=()
S1_FLAGS=(--login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0
    --auth-cache 100000 --auth-cache-ttl 600s)
# the stack: Redis, server2 and a server1 without a pack (idle, outside the cgroup: its memory is
# the base of the pack's index's)
URL[base]=$(BIN_DIR=$BIN_DIR "$TOP/scripts/stack.sh" start "$STACK" --backend redis \
    --hash-cost min --auth-cache 100000 --root "$WORK/empty" --port 0 -- "${S1_FLAGS[@]}" \
    2>>"$WORK/stack.log") || die "the stack did not start: $(tail -n 3 "$WORK/stack.log")"
[[ $(curl -s -o /dev/null -w '%{http_code}' "${URL[base]}/users" -d 'username=small&password=small-pw-123') == 201 ]] ||
    die "the account was not created"
S1_ARGV=()
while IFS= read -r -d '' a; do S1_ARGV+=("$a"); done <"/proc/$(cat "$STACK/server1.pid")/cmdline"
BASE_RSS=$(rss_kb "$(cat "$STACK/server1.pid")")
# start_s1 NAME FLAGS...: another server1 with the stack's server2 and these flags (--root, --port
# and --metrics-listen of its own), in the cgroup; sets URL[NAME], S1_PID[NAME] and START_MS (from
# exec to listening)
START_MS=0
start_s1() {
    local name=$1 argv=() skip="" a port t
    shift
    for a in "${S1_ARGV[@]}"; do
        if [[ -n $skip ]]; then skip=""; continue; fi
        case $a in --root | --port | --metrics-listen) skip=1; continue ;; esac
        argv+=("$a")
    done
    t=$(now_ms)
    "${argv[@]}" --port 0 --metrics-listen 127.0.0.1:0 "$@" >"$WORK/$name.log" 2>&1 </dev/null &
    S1_PID[$name]=$!
    into_cgroup "${S1_PID[$name]}"
    wait_until 300 grep -q 'listening on ' "$WORK/$name.log" ||
        die "$name did not start: $(tail -n 3 "$WORK/$name.log")"
    START_MS=$(($(now_ms) - t))
    port=$(grep -m1 -o 'listening on [^ ]*' "$WORK/$name.log" | grep -o '[0-9]*$')
    URL[$name]=http://127.0.0.1:$port
}
PACK_START_MS="" PACK_RSS=""
if has pack-direct; then
    start_s1 pack-direct --root "$WORK/uploads" --pack "$PACK" --read direct
    PACK_START_MS=$START_MS PACK_RSS=$(rss_kb "${S1_PID[pack-direct]}")
fi
! has pack-inline || start_s1 pack-inline --root "$WORK/uploads" --pack "$PACK" --read direct \
    --read-depth 0
if has pack-buffered; then
    start_s1 pack-buffered --root "$WORK/uploads" --pack "$PACK" --read buffered
    [[ -n $PACK_START_MS ]] || { PACK_START_MS=$START_MS PACK_RSS=$(rss_kb "${S1_PID[pack-buffered]}"); }
fi
! has root-direct || start_s1 root-direct --root "$FS/tree" --read direct
! has root-buffered || start_s1 root-buffered --root "$FS/tree" --read buffered
if has nginx || has nginx-ofc; then
    NOFILE=$(ulimit -Hn)
    [[ $NOFILE == unlimited ]] && NOFILE=1048576
    OFC_MAX=$((NOFILE > 102048 ? 100000 : NOFILE - 2048))
    ((OFC_MAX >= 1000)) ||
        die "nginx-ofc: a hard open-file limit of $NOFILE leaves no room for open_file_cache"
    p1=$(free_port) p2=$(free_port)
    while [[ $p2 == "$p1" ]]; do p2=$(free_port); done
    # open_file_cache holds a descriptor per cached file: each worker may open as many as the
    # hard limit lets it, and the cache keeps room for 1024 connections and more below that
    files="location /files/ { alias $FS/tree/; }"
    NGINX_ROOT=$FS/tree NGINX_MAIN="worker_rlimit_nofile $NOFILE;" nginx_conf "$WORK/nginx" \
        "$files listen 127.0.0.1:$p1; open_file_cache off; sendfile on;" \
        "$files listen 127.0.0.1:$p2; open_file_cache max=$OFC_MAX inactive=600s; sendfile on;"
    nginx -e "$WORK/nginx/nginx.err" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" >"$WORK/nginx.log" 2>&1 </dev/null &
    NGINX_PID=$!
    for p in "$p1" "$p2"; do wait_port 127.0.0.1 "$p" 10 || die "nginx did not start: $(tail -n 3 "$WORK/nginx/nginx.err")"; done
    wait_until 10 test "$(child_pids "$NGINX_PID" | wc -l)" -ge 2 || die "nginx did not start its workers"
    # shellcheck disable=SC2046
    into_cgroup "$NGINX_PID" $(child_pids "$NGINX_PID")
    URL[nginx]=http://127.0.0.1:$p1
    URL[nginx-ofc]=http://127.0.0.1:$p2
fi
log "servers: $(for s in $SERVERS; do printf '%s %s  ' "$s" "${URL[$s]}"; done)"

# ---- the windows --------------------------------------------------------------------------
NAMES=$(python3 - "$FILES" <<'PY'
import sys
# the first N names of the numbered tree (scripts/mktree.py): a pattern when N fills whole
# levels, else a names file
n = int(sys.argv[1])
for k, pat in ((100, "d00/d00/d00/f{00..99}"), (10**4, "d00/d00/d{00..99}/f{00..99}"),
               (10**6, "d00/d{00..99}/d{00..99}/f{00..99}"),
               (10**8, "d{00..99}/d{00..99}/d{00..99}/f{00..99}")):
    if n == k:
        print(pat)
        break
else:
    print("")
PY
)
if [[ -z $NAMES ]]; then # a names file of the first FILES names
    NAMES=$WORK/names.txt
    python3 - "$FILES" >"$NAMES" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print("d%02d/d%02d/d%02d/f%02d" % (i // 10**6 % 100, i // 10**4 % 100, i // 100 % 100, i % 100))
PY
fi
RAW=$OUT/raw.tsv
printf 'round\tserver\tconns\trequests\tget_s\tp50_ms\tp99_ms\treads\treads_per_get\terrors\n' >"$RAW"
# disk_reads: reads completed on the tree's disk (the loop device)
disk_reads() { awk '{ print $1 }' "/sys/block/$DISK/stat"; }
# lg NAME CONNS SECONDS OUT: loadgen GETs of drawn names, credentials for server1 only
lg() {
    local s=$1 c=$2 secs=$3 out=$4 cred=()
    [[ $s == nginx* ]] || cred=(--username small --password small-pw-123)
    rm -rf "$out"
    timeout -k 5 $((secs + 120)) "$BIN_DIR/loadgen" --url "${URL[$s]}" "${cred[@]}" \
        --names "$NAMES" --pick "$PICK" --users "$c" --threads 2 --duration "$secs" --warmup 0 \
        --timeout 30 --seed "$RANDOM" -o "$out" >"$out.txt" 2>"$out.log"
}
started=$(now_ms)
read -r -a ORDER <<<"$SERVERS"
for ((round = 1; round <= ROUNDS; round++)); do
    n=${#ORDER[@]}
    for ((i = 0; i < n; i++)); do
        s=${ORDER[$(((i + round - 1) % n))]}
        for c in $CONNS; do
            sync
            echo 3 >/proc/sys/vm/drop_caches
            lg "$s" "$c" 2 "$WORK/warm" || die "$s: the warm-up failed: $(tail -n 3 "$WORK/warm.log")"
            r0=$(disk_reads)
            lg "$s" "$c" "$SECS" "$WORK/lg" || die "$s x$c: loadgen failed: $(tail -n 3 "$WORK/lg.log")"
            r1=$(disk_reads)
            p=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                $h["type"] == "all" { print $h["ok"] "\t" $h["x_rps"] "\t" $h["p50_ms"] "\t" $h["p99_ms"] "\t" $h["errors"]; exit }' \
                "$WORK/lg/points.csv")
            [[ -n $p ]] || die "$s x$c: no point in $WORK/lg/points.csv"
            IFS=$'\t' read -r ok rps p50 p99 errs <<<"$p"
            per=$(awk -v r=$((r1 - r0)) -v n="$ok" 'BEGIN { printf "%.3f", n ? r / n : 0 }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$s" "$c" "$ok" "$rps" \
                "$p50" "$p99" $((r1 - r0)) "$per" "$errs" >>"$RAW"
            log "round $round/$ROUNDS: $s x$c: $rps GET/s, p99 $p99 ms, $per disk reads per GET, $errs errors"
        done
    done
done
log "measured in $((($(now_ms) - started) / 1000)) s"

# ---- the report ---------------------------------------------------------------------------
bash "$TOP/scripts/machine-info.sh" "$FS" >"$OUT/machine.md" 2>/dev/null || true
{
    echo "# Millions of small files, cold: $(date -u +%F)"
    echo
    echo "\`scripts/bench-smallfiles.sh --files $FILES --size $SIZE --mem-limit $MEM_LIMIT" \
        "--rounds $ROUNDS --seconds $SECS --conns \"$CONNS\" --pick $PICK" \
        "--servers ${SERVERS// /,}\`: the numbered tree on ext4 (noatime) on a loop device" \
        "with direct I/O over an image on $(findmnt -no SOURCE,FSTYPE --target "$WORK" | tr '\n' ' ')" \
        "the servers in a memory cgroup of $((MEM_LIMIT >> 20)) MiB, caches dropped before each" \
        "window, a 2 s warm-up, then $SECS s measured (the machine: [machine.md](machine.md))."
    echo
    echo "| the pack | |"
    echo "|---|---|"
    echo "| files | $FILES of $SIZE bytes |"
    echo "| tree made (mktree.py) | $TREE_S s |"
    echo "| s1pack build | $BUILD_MS ms, $((FILES * 1000 / (BUILD_MS + 1))) files/s |"
    echo "| pack | $PACK_BYTES bytes |"
    echo "| index part ÷ files | $(awk -v a="$INDEX_BYTES" -v n="$FILES" 'BEGIN { printf "%.2f", a / n }') bytes per file |"
    if [[ -n $PACK_RSS ]]; then
        echo "| server1 resident memory, with the pack − without | $(awk -v a="$PACK_RSS" -v b="$BASE_RSS" -v n="$FILES" 'BEGIN { printf "%d KiB, %.2f bytes per file", a - b, (a - b) * 1024 / n }') |"
        echo "| server1 start with the pack (exec to listening) | $PACK_START_MS ms |"
    fi
    echo
} >"$OUT/report.md"
python3 - "$RAW" "$OUT/medians.tsv" >>"$OUT/report.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
keys = list(dict.fromkeys((r["server"], int(r["conns"])) for r in rows))
def med(rs, f):
    return statistics.median(float(r[f]) for r in rs)
m = {}
with open(sys.argv[2], "w") as f:
    f.write("server\tconns\trounds\tget_s\tp50_ms\tp99_ms\treads_per_get\terrors\n")
    for k in keys:
        rs = [r for r in rows if (r["server"], int(r["conns"])) == k]
        m[k] = (med(rs, "get_s"), med(rs, "p50_ms"), med(rs, "p99_ms"), med(rs, "reads_per_get"),
                sum(int(r["errors"]) for r in rs), len(rs))
        f.write("%s\t%d\t%d\t%.1f\t%.3f\t%.3f\t%.3f\t%d\n" % (k + m[k][5:] + m[k][:5]))
print("| server | connections | GET/s | p50 ms | p99 ms | disk reads per GET | errors |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k in keys:
    g, p50, p99, rpg, e, n = m[k]
    print("| %s | %d | %.0f | %.2f | %.2f | %.2f | %d |" % (k[0], k[1], g, p50, p99, rpg, e))
print("\nMedians of %d rounds; raw.tsv holds every window, medians.tsv the medians." %
      max(v[5] for v in m.values()))
conns = sorted({k[1] for k in keys})
for pack in ("pack-direct", "pack-buffered"):
    for other in ("nginx", "nginx-ofc", "root-direct", "root-buffered", "pack-inline"):
        rs = [("%.2f" % (m[pack, c][0] / m[other, c][0]) if not m[pack, c][4] and
               not m[other, c][4] else "n/a (errors)") for c in conns
              if (pack, c) in m and (other, c) in m and m[other, c][0]]
        if rs:
            print("\n%s ÷ %s, GET/s at %s connections: %s" % (
                pack, other, ", ".join(map(str, conns)), ", ".join(rs)), end="")
print()
PY
log "report: $OUT/report.md"
cat "$OUT/report.md"
