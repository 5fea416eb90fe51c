#!/usr/bin/env bash
# Listings among many uploads: how long GET /files/ and GET /files/DIR/ take with a million
# uploads in the store, and what a listing does meanwhile to the uploads: the committer's
# publish latency (server1_commit_publish_seconds, which waits for the index's readers) and
# the PUT p99 of loadgen, with and without a client listing back to back. The store is written
# directly (scripts/mkstore.py: --files uploads in --dirs directories, 3 s for a million)
# and server1 replays it at start like any other; its RSS then gives the memory per upload.
# Prints what it measured; asserts nothing.
#
#   scripts/bench-listing.sh [--files N] [--dirs D] [--users U] [--size B] [--duration S]
#                            [--rounds R] [--server1-flags "FLAGS"] [--keep]
#     --files N      uploads in the store (default 1000000)
#     --dirs D       directories they are spread over (default 1000; 0: all in /files/)
#     --users U      loadgen users sending PUTs (default 16)
#     --size B       bytes per PUT (default 64: the run stays inside one segment, so no
#                    compaction, whose steps stall the committer on their own, mixes in)
#     --duration S   seconds of PUTs per measurement (default 10, plus 1 s of warm-up)
#     --rounds R     rounds of (PUTs alone, PUTs with a lister); medians over them (default 3)
#     --server1-flags "FLAGS"  extra server1 flags (e.g. "--max-list 100")
#     --keep         keep the run dir
# Everything runs on 127.0.0.1 under a temp dir (on disk: the store is ~60 MB) and is stopped
# at exit.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

usage() { header_usage "${BASH_SOURCE[0]}" 10 22 "${1:-2}"; }

FILES=1000000 DIRS=1000 USERS=16 SIZE=64 DURATION=10 ROUNDS=3 S1_FLAGS="" KEEP=""
while (($# > 0)); do
    case $1 in
    --files) FILES=$2; shift 2 ;;
    --dirs) DIRS=$2; shift 2 ;;
    --users) USERS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --server1-flags) S1_FLAGS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
for v in "$FILES" "$DIRS" "$USERS" "$SIZE" "$DURATION" "$ROUNDS"; do [[ $v =~ ^[0-9]+$ ]] || usage; done
((USERS > 0 && DURATION > 0 && ROUNDS > 0 && FILES > 0)) || usage
require_cmd redis-server curl python3 awk
for p in server1 server2 loadgen; do
    [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"
done

RUN=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-listing.XXXXXX")
LISTER_PID=""
cleanup() {
    local rc=$?
    [[ -z $LISTER_PID ]] || kill "$LISTER_PID" 2>/dev/null || true
    "$TOP/scripts/stack.sh" stop "$RUN/stack" >/dev/null 2>&1 || true
    if [[ -n $KEEP || $rc -ne 0 ]]; then
        log "run dir kept: $RUN"
    else
        rm -rf "$RUN"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "run dir $RUN; writing $FILES uploads in $DIRS directories"
t0=$(now_ms)
python3 "$TOP/scripts/mkstore.py" "$RUN/root" --files "$FILES" --dirs "$DIRS" --size 16 >&2
log "store written in $((($(now_ms) - t0) / 1000)) s"

read -r -a extra <<<"$S1_FLAGS"
# every client is 127.0.0.1 and signs up at full speed, and the lister lists back to back: the
# per-client limits off (--list-limit where server1 has it)
extra=(--login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0
    "${extra[@]}")
! grep -q -- --list-limit <<<"$("$BIN_DIR/server1" --help)" || extra=(--list-limit 0 "${extra[@]}")
t0=$(now_ms)
URL=$("$TOP/scripts/stack.sh" start "$RUN/stack" --backend redis --hash-cost min \
    --auth-cache 100000 --root "$RUN/root" --port 0 -- "${extra[@]}" 2>>"$RUN/stack.log")
START_MS=$(($(now_ms) - t0))
MURL=$(cat "$RUN/stack/metrics-url") # server1's /metrics (stack.sh: its --metrics-listen)
S1_PID=$(cat "$RUN/stack/server1.pid")
RSS_KB=$(awk '/^VmRSS:/{print $2}' "/proc/$S1_PID/status")
CPU_S=$(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$S1_PID/stat")
log "stack up in $START_MS ms (server1 replayed the store: $CPU_S s of CPU); server1 RSS $RSS_KB kB"
grep -m1 'recovery:' "$RUN/stack/server1.log" >&2 || true

PW="lister-password-1"
LISTER=lister:$PW
[[ $(curl -s -o /dev/null -w '%{http_code}' -d "username=lister&password=$PW" "$URL/users") == 201 ]] ||
    die "cannot create the lister's account"
DIR1=/files/
if ((DIRS > 0)); then DIR2=/files/d$(printf %04d $((DIRS / 2)))/; else DIR2=/files/; fi

# list PATH: "seconds bytes status" of one listing
list() { curl -s -o /dev/null -w '%{time_total} %{size_download} %{http_code}\n' --max-time 300 -u "$LISTER" "$URL$1"; }

# metrics NAME...: the values of server1's metrics NAME..., on one line (0 if absent).
metrics() {
    curl -s --max-time 30 "$MURL" | awk -v names="$*" '
        BEGIN { n = split(names, want, " ") }
        { v[$1] = $2 }
        END { for (i = 1; i <= n; i++) printf "%s%s", (want[i] in v ? v[want[i]] : 0), (i < n ? " " : "\n") }'
}
BOUNDS="0.0001 0.00025 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 +Inf"
publish_buckets() {
    local names=() b
    for b in $BOUNDS; do names+=("server1_commit_publish_seconds_bucket{le=\"$b\"}"); done
    metrics "${names[@]}"
}

RAW=$RUN/raw.csv
echo "round,phase,put_rps,put_p99_ms,put_errors,publish_p50_s,publish_p99_s,publish_max_s,lists,list_median_s" >"$RAW"

# phase ROUND NAME WITH_LISTER: one loadgen run of PUTs, with a client listing $DIR2 back to
# back or not; appends a row to raw.csv.
phase() {
    local round=$1 name=$2 lister=$3 out b0 b1 c0 c1 row pct lists lmed
    out=$RUN/lg-$name-$round
    : >"$out.lists"
    if ((lister)); then
        (while [[ ! -e $out.stop ]]; do list "$DIR2" >>"$out.lists"; done) &
        LISTER_PID=$!
    fi
    b0=$(publish_buckets)
    c0=$(metrics server1_store_segments server1_store_compactions_total)
    timeout -k 5 $((DURATION + 120)) "$BIN_DIR/loadgen" --url "$URL/" --type put --size "$SIZE" \
        --users "$USERS" --prepare-users "$USERS" --duration "$DURATION" --warmup 1 \
        --timeout 30 -o "$out" >"$out.txt" 2>"$out.log" || die "loadgen failed: $(tail -n 3 "$out.log")"
    b1=$(publish_buckets)
    c1=$(metrics server1_store_segments server1_store_compactions_total)
    [[ $c1 == "$c0" ]] || log "warning: a segment rolled or compaction ran during this phase (segments, compactions: $c0 -> $c1)"
    if ((lister)); then
        touch "$out.stop" # (the listing under way finishes first)
        wait "$LISTER_PID" 2>/dev/null || true
        LISTER_PID=""
    fi
    row=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        $h["type"] == "all" { print $h["x_rps"] "," $h["p99_ms"] "," $h["errors"]; exit }' \
        "$out/points.csv")
    [[ -n $row ]] || die "no point in $out/points.csv"
    # publish p50, p99 and the slowest of this phase: the upper bound of the bucket that holds
    # them, from the counts of this phase
    pct=$(awk -v a="$b0" -v b="$b1" -v bounds="$BOUNDS" 'BEGIN {
        n = split(a, x, " "); split(b, y, " "); split(bounds, bd, " ")
        total = y[n] - x[n]
        for (q = 1; q <= 3; q++) {
            want = (q == 1 ? 0.5 : q == 2 ? 0.99 : 1) * total; r = "-"
            for (i = 1; i <= n; i++) if (total > 0 && y[i] - x[i] >= want) { r = bd[i]; break }
            printf "%s%s", r, (q < 3 ? "," : "\n")
        } }')
    lists=$(grep -c ' 200$' "$out.lists" || true)
    lmed=$(awk '$3 == 200 { print $1 }' "$out.lists" | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }')
    echo "$round,$name,$row,$pct,$lists,$lmed" >>"$RAW"
    log "round $round, $name: $(tail -n 1 "$RAW")"
}

# Listings alone, 5 of each, before any load.
for p in "$DIR1" "$DIR2"; do
    for _ in 1 2 3 4 5; do echo "$p $(list "$p")"; done
done >"$RUN/lists-alone.txt"
SCRAPE_S=$(for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' "$MURL"; done | sort -n | sed -n 3p)

for ((round = 1; round <= ROUNDS; round++)); do
    phase "$round" puts 0
    phase "$round" puts+lister 1
done

# the upload index's memory (a build from before upindex reports only its order of names)
INDEX_BYTES=$(metrics server1_store_index_bytes)
[[ $INDEX_BYTES != 0 ]] || INDEX_BYTES=$(metrics server1_store_order_bytes)
python3 - "$RAW" "$RUN/lists-alone.txt" "$FILES" "$DIRS" "$RSS_KB" "$START_MS" "$DIR1" "$DIR2" \
    "$SCRAPE_S" "$USERS" "$SIZE" "$CPU_S" "$INDEX_BYTES" <<'PY'
import csv, statistics, sys
(raw, alone, files, dirs, rss_kb, start_ms, d1, d2, scrape, users, size, cpu,
 index) = sys.argv[1:]
rows = list(csv.DictReader(open(raw)))
print("== bench-listing: %s uploads in %s directories; server1 RSS %.1f MiB (%.0f bytes per "
      "upload, of which the index %.1f); start with replay %.1f s (server1: %s s of "
      "CPU); GET /metrics %.1f ms"
      % (files, dirs, int(rss_kb) / 1024, int(rss_kb) * 1024 / int(files),
         float(index) / int(files), int(start_ms) / 1000, cpu, float(scrape) * 1000))
times = {}
for line in open(alone):
    p, t, nbytes, st = line.split()
    times.setdefault(p, []).append((float(t), int(nbytes), st))
for p in (d1, d2):
    ts = times.get(p, [])
    if ts:
        print("listing %-14s alone: median %8.1f ms (of %d), %d bytes, status %s"
              % (p, statistics.median(t for t, _, _ in ts) * 1000, len(ts), ts[0][1], ts[0][2]))
print("PUT %s bytes at %s users, medians of %d rounds:" % (size, users, len(rows) // 2))
print("%-13s %9s %10s %8s %12s %12s %12s %7s %12s" % ("phase", "PUT/s", "PUT p99", "errors",
      "publish p50", "publish p99", "publish max", "lists", "list median"))
def med(vals):
    vals = [float(v) for v in vals if v not in ("-", "", "+Inf")]
    return statistics.median(vals) if vals else float("nan")
def worst(vals):
    key = lambda v: 1e9 if v == "+Inf" else -1 if v == "-" else float(v)
    return "<= " + max(vals, key=key)
for ph in ("puts", "puts+lister"):
    rs = [r for r in rows if r["phase"] == ph]
    print("%-13s %9.0f %7.1f ms %8.0f %10s s %10s s %10s s %7.0f %9.1f ms"
          % (ph, med(r["put_rps"] for r in rs), med(r["put_p99_ms"] for r in rs),
             med(r["put_errors"] for r in rs), worst(r["publish_p50_s"] for r in rs),
             worst(r["publish_p99_s"] for r in rs), worst(r["publish_max_s"] for r in rs),
             med(r["lists"] for r in rs), med(r["list_median_s"] for r in rs) * 1000))
print("(publish: server1_commit_publish_seconds, the upper bound of the bucket that holds the "
      "p50, p99 and slowest, worst of the rounds; lists: listings of %s done during the PUTs)"
      % d2)
PY
