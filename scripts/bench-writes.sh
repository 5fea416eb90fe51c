#!/usr/bin/env bash
# Durable writes, side by side in one run: PUT of 4 KB bodies (loadgen --type put) against
#   group     server1 with group commit (its default)
#   oneflush  the same server1 with one flush per request (--group-commit off)
#   redis     redis-benchmark -t set -d 4096 against a throw-away Redis with appendfsync always
# at 1, 16 and 64 users (connections), in interleaved rounds; prints the medians of ops/s and
# p99, the ratios group/oneflush and group/redis, and whether the targets are met (group >= 5x
# oneflush at 64 users, group >= 1.0x Redis durable SET, p99 < 200 ms at every point). Targets
# are reported, never enforced (exit 0 unless a measurement itself failed). Both server1s are
# first brought to the steady state of their upload store (PUTs until a dead segment is reused).
#
#   scripts/bench-writes.sh [--rounds N] [--duration S] [--users "1 16 64"] [--size BYTES]
#                           [--configs LIST] [--server1-flags "FLAGS"] [--out DIR] [--keep]
#     --rounds N     interleaved rounds; medians over them (default 3)
#     --duration S   measured seconds per point (default 5; plus 1 s warm-up)
#     --configs LIST any of group,oneflush,redis (default all three); the ratios and targets
#                    that need one left out are not printed
#     --server1-flags "FLAGS"  extra flags for both server1s, e.g. "--commit-window 2ms"
#     --out DIR      also write raw.csv (every measurement), medians.csv and meta.txt to DIR
#     --keep         keep the run dir (logs, loadgen output)
# Everything runs on 127.0.0.1 under a temp dir (in $TMPDIR, default /tmp: the upload stores
# are there, so TMPDIR chooses their file system) and is stopped at exit.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

# usage [CODE]: the usage lines of the header; to stdout for --help (0), else to stderr (2).
usage() { header_usage "${BASH_SOURCE[0]}" 11 20 "${1:-2}"; }

ROUNDS=3 DURATION=5 USERS="1 16 64" SIZE=4096 OUT="" KEEP="" S1_FLAGS="" CONFIGS="group oneflush redis"
while (($# > 0)); do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --users) USERS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --server1-flags) S1_FLAGS=$2; shift 2 ;;
    --configs) CONFIGS=${2//,/ }; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $DURATION =~ ^[1-9][0-9]*$ && $SIZE =~ ^[0-9]+$ ]] || usage
for u in $USERS; do [[ $u =~ ^[1-9][0-9]*$ ]] || usage; done
for c in $CONFIGS; do [[ $c == group || $c == oneflush || $c == redis ]] || usage; done
[[ -n ${CONFIGS// /} ]] || usage
# has CONFIG: whether CONFIG is measured
has() { [[ " $CONFIGS " == *" $1 "* ]]; }
require_cmd redis-server redis-cli redis-benchmark python3 awk curl
for p in server1 server2 loadgen; do
    [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"
done
grep -q -- '--group-commit' <<<"$("$BIN_DIR/server1" --help)" ||
    die "server1 has no --group-commit flag: uploads with group commit are not built in yet"

RUN=$(mktemp -d "${TMPDIR:-/tmp}/bench-writes.XXXXXX")
cleanup() {
    local rc=$?
    "$TOP/scripts/stack.sh" stop "$RUN/group" >/dev/null 2>&1 || true
    "$TOP/scripts/stack.sh" stop "$RUN/oneflush" >/dev/null 2>&1 || true
    "$TOP/scripts/redis.sh" stop "$RUN/redis" >/dev/null 2>&1 || true
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

# Each server1 has its own stack (own server2 and auth Redis, own root) so the two cannot
# disturb each other's files; only the one being measured is busy at any time. Both are the
# reproduction run's "ours" configuration (Redis, server2 threads with the auth cache), so the
# write path, not the password check, is what differs.
log "run dir $RUN; starting the two stacks and the Redis for SET"
declare -A URL=()
read -r -a extra <<<"$S1_FLAGS"
# the per-client limits off: every user comes from 127.0.0.1 and signs up at full speed
extra=(--login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0
    "${extra[@]}")
if has group; then
    URL[group]=$("$TOP/scripts/stack.sh" start "$RUN/group" --backend redis --hash-cost min \
        --auth-cache 100000 --port 0 -- --max-upload 1m "${extra[@]}" 2>>"$RUN/stack.log")
    grep -q 'group-commit=on' "$RUN/group/server1.log" || log "warning: 'group-commit=on' not in server1's config line"
fi
if has oneflush; then
    URL[oneflush]=$("$TOP/scripts/stack.sh" start "$RUN/oneflush" --backend redis --hash-cost min \
        --auth-cache 100000 --port 0 -- --max-upload 1m --group-commit off "${extra[@]}" \
        2>>"$RUN/stack.log")
    grep -q 'group-commit=off' "$RUN/oneflush/server1.log" || log "warning: 'group-commit=off' not in server1's config line"
fi
if has redis; then
    # No accounts in this one, and redis-benchmark takes a password only in argv: none.
    REDIS_PORT=$(REDIS_NO_PASSWORD=1 "$TOP/scripts/redis.sh" start "$RUN/redis" 2>>"$RUN/stack.log")
    [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" config get appendfsync | tail -n 1) == always ]] ||
        die "the benchmark Redis is not appendfsync always"
fi

MAX_USERS=1
for u in $USERS; do ((u > MAX_USERS)) && MAX_USERS=$u; done
RAW=$RUN/raw.csv
echo "round,config,users,ops_s,p99_ms,errors,per_flush" >"$RAW"

# metrics CONFIG NAME...: the values of server1's metrics NAME..., on one line (0 if absent).
metrics() {
    local cfg=$1
    shift
    curl -s --max-time 5 "$(cat "$RUN/$cfg/metrics-url")" | awk -v names="$*" '
        BEGIN { n = split(names, want, " ") }
        { v[$1] = $2 }
        END { for (i = 1; i <= n; i++) printf "%s%s", (want[i] in v ? v[want[i]] : 0), (i < n ? " " : "\n") }'
}

# batch_counts CONFIG: "sum count" of server1_commit_batch_size (writes made durable, flushes).
batch_counts() {
    metrics "$1" server1_commit_batch_size_sum server1_commit_batch_size_count
}

# loadgen_point CONFIG USERS ROUND: one loadgen run (prepares its own accounts), appends to raw.
loadgen_point() {
    local cfg=$1 users=$2 round=$3 out row b0 b1 per_flush
    out=$RUN/lg-$cfg-$users-$round
    b0=$(batch_counts "$cfg")
    timeout -k 5 $((DURATION + 60)) "$BIN_DIR/loadgen" --url "${URL[$cfg]}/" --type put --size "$SIZE" \
        --users "$users" --prepare-users "$MAX_USERS" --duration "$DURATION" --warmup 1 \
        --timeout 10 -o "$out" >"$out.txt" 2>"$out.log" || {
        log "loadgen failed ($cfg, $users users): $(tail -n 3 "$out.log")"
        return 1
    }
    row=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        $h["type"] == "all" { print $h["x_rps"] "," $h["p99_ms"] "," $h["errors"]; exit }' \
        "$out/points.csv")
    [[ -n $row ]] || { log "no point in $out/points.csv"; return 1; }
    # writes per flush over the whole run (account preparation, warm-up and window)
    b1=$(batch_counts "$cfg")
    per_flush=$(awk -v a="$b0" -v b="$b1" 'BEGIN { split(a, x, " "); split(b, y, " ");
        n = y[2] - x[2]; if (n > 0) printf "%.2f", (y[1] - x[1]) / n }')
    echo "$round,$cfg,$users,$row,$per_flush" >>"$RAW"
}

# redis_point USERS ROUND: redis-benchmark SET of SIZE bytes; the request count is sized from a
# short probe so the run takes about DURATION seconds.
declare -A REDIS_N=()
redis_point() {
    local users=$1 round=$2 n line rps p99
    if [[ -z ${REDIS_N[$users]:-} ]]; then
        line=$(timeout 60 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t set -d "$SIZE" \
            -c "$users" -n $((users * 200 > 2000 ? users * 200 : 2000)) -r 100000 --csv | tail -n 1)
        rps=$(tr -d '"' <<<"$line" | cut -d, -f2)
        REDIS_N[$users]=$(awk -v r="$rps" -v d="$DURATION" 'BEGIN { n = int(r * d); print n < 1000 ? 1000 : n }')
    fi
    n=${REDIS_N[$users]}
    line=$(timeout -k 5 $((DURATION * 4 + 60)) redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" \
        -t set -d "$SIZE" -c "$users" -n "$n" -r 100000 --precision 3 --csv 2>>"$RUN/redis-bench.log" |
        tail -n 1) || { log "redis-benchmark failed ($users clients)"; return 1; }
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    line=$(tr -d '"' <<<"$line")
    rps=$(cut -d, -f2 <<<"$line")
    p99=$(cut -d, -f7 <<<"$line")
    [[ $rps =~ ^[0-9.]+$ && $p99 =~ ^[0-9.]+$ ]] || { log "cannot parse redis-benchmark: $line"; return 1; }
    echo "$round,redis,$users,$rps,$p99,0," >>"$RAW"
}

# steady_state CONFIG: PUTs until the server's upload store reuses dead segments, as any store
# that has run for a while does (fresh segments are appended to; reused ones are written over,
# which makes each flush cheaper): measuring a young store against an old one would be unfair.
steady_state() {
    local cfg=$1 t0 reused
    t0=$(now_ms)
    while :; do
        reused=$(metrics "$cfg" server1_store_segments_reused_total)
        [[ ${reused:-0} -ge 1 ]] && break
        (($(now_ms) - t0 < 180000)) || die "$cfg: no segment reused after 180 s of PUTs"
        timeout -k 5 60 "$BIN_DIR/loadgen" --url "${URL[$cfg]}/" --type put --size "$SIZE" \
            --users 64 --prepare-users 64 --duration 3 --warmup 0 --timeout 10 \
            -o "$RUN/steady-$cfg" >/dev/null 2>>"$RUN/steady.log" || die "$cfg: warm-up PUTs failed"
    done
    log "$cfg: upload store in steady state (segments reused) after $((($(now_ms) - t0) / 1000)) s"
}
for c in group oneflush; do ! has $c || steady_state $c; done

NCONFIGS=$(wc -w <<<"$CONFIGS")
started=$(now_ms)
for ((round = 1; round <= ROUNDS; round++)); do
    for users in $USERS; do
        # rotate the order every round so no configuration always runs first
        order=$(tr ' ' '\n' <<<"$CONFIGS" | awk -v k=$(((round + users) % NCONFIGS)) '
            { a[NR - 1] = $0 } END { for (i = 0; i < NR; i++) print a[(i + k) % NR] }')
        for cfg in $order; do
            log "round $round/$ROUNDS: $cfg, $users users"
            if [[ $cfg == redis ]]; then
                redis_point "$users" "$round"
            else
                loadgen_point "$cfg" "$users" "$round"
            fi
        done
    done
done
log "measured in $((($(now_ms) - started) / 1000)) s"

# Medians, ratios and targets.
python3 - "$RAW" "$USERS" "$RUN/medians.csv" "$SIZE" "$CONFIGS" <<'PY'
import csv, statistics, sys
raw, users, out = sys.argv[1], [int(u) for u in sys.argv[2].split()], sys.argv[3]
configs = sys.argv[5].split()
rows = list(csv.DictReader(open(raw)))
med = {}
for cfg in ("group", "oneflush", "redis"):
    for u in users:
        pts = [r for r in rows if r["config"] == cfg and int(r["users"]) == u]
        if pts:
            pf = [float(r["per_flush"]) for r in pts if r["per_flush"]]
            med[cfg, u] = (statistics.median(float(r["ops_s"]) for r in pts),
                           statistics.median(float(r["p99_ms"]) for r in pts),
                           sum(int(r["errors"]) for r in pts), len(pts),
                           statistics.median(pf) if pf else float("nan"))
with open(out, "w") as f:
    f.write("config,users,ops_s_median,p99_ms_median,errors,rounds,per_flush_median\n")
    for (cfg, u), (x, p, e, n, pf) in sorted(med.items()):
        f.write("%s,%d,%.1f,%.3f,%d,%d,%.2f\n" % (cfg, u, x, p, e, n, pf))
def g(cfg, u, i):
    v = med.get((cfg, u))
    return v[i] if v else float("nan")
print("durable writes of %s-byte values, medians of %d rounds (ops/s; p99 in ms)" %
      (sys.argv[4], max(v[3] for v in med.values())))
title = {"group": "group", "oneflush": "one-flush", "redis": "redis SET"}
shown = [c for c in ("group", "oneflush", "redis") if c in configs]
ratios = [(a, b, h) for a, b, h in (("group", "oneflush", "group/1fl"), ("group", "redis", "group/red"))
          if a in configs and b in configs]
print("%6s | " % "users" + " | ".join("%10s %8s" % (title[c], "p99") for c in shown) +
      "".join(" | %10s" % h for _, _, h in ratios))
for u in users:
    print("%6d | " % u + " | ".join("%10.0f %8.2f" % (g(c, u, 0), g(c, u, 1)) for c in shown) +
          "".join(" | %9.2fx" % (g(a, u, 0) / g(b, u, 0) if g(b, u, 0) else float("nan"))
                  for a, b, _ in ratios))
print("writes per flush (server1_commit_batch_size, median): " + ", ".join(
    "%d users: " % u + ", ".join("%s %.1f" % (title[c], g(c, u, 4)) for c in shown if c != "redis")
    for u in users))
errs = {k: v[2] for k, v in med.items() if v[2]}
if errs:
    print("errors: " + ", ".join("%s@%d: %d" % (k[0], k[1], n) for k, n in sorted(errs.items())))
top = max(users)
def verdict(ok):
    return "MET" if ok else "NOT MET"
if "group" in configs and "oneflush" in configs:
    r1 = g("group", top, 0) / g("oneflush", top, 0)
    print("target group >= 5x one-flush at %d users: %s (%.2fx)" % (top, verdict(r1 >= 5), r1))
if "group" in configs and "redis" in configs:
    r2 = g("group", top, 0) / g("redis", top, 0)
    worst = min(g("group", u, 0) / g("redis", u, 0) for u in users)
    print("target group >= 1.0x Redis durable SET at %d users: %s (%.2fx; lowest over all points %.2fx)"
          % (top, verdict(r2 >= 1.0), r2, worst))
if "group" in configs:
    p99s = [(cfg, u, g(cfg, u, 1)) for cfg in ("group",) for u in users]
    bad = [(c, u, p) for c, u, p in p99s if not p < 200]
    print("target p99 < 200 ms at every point (group commit): %s (worst %.2f ms)" %
          (verdict(not bad), max(p for _, _, p in p99s)))
PY

if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    cp "$RAW" "$RUN/medians.csv" "$OUT/"
    {
        echo "command: $0 --rounds $ROUNDS --duration $DURATION --users \"$USERS\" --size $SIZE --configs \"$CONFIGS\" --server1-flags \"$S1_FLAGS\""
        for c in group oneflush; do ! has $c || grep -h 'config:' "$RUN/$c/server1.log"; done | sed 's/^/server1 config: /'
        echo "date: $(date -u +%FT%TZ)"
        echo "host: $(uname -a)"
        echo "cpus: $(nproc)"
        "$BIN_DIR/server1" --version 2>&1 | sed 's/^/server1: /'
        "$BIN_DIR/loadgen" --version 2>&1 | sed 's/^/loadgen: /'
        redis-server --version | sed 's/^/redis: /'
    } >"$OUT/meta.txt"
    log "raw.csv, medians.csv and meta.txt written to $OUT"
fi
