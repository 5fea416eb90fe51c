#!/usr/bin/env bash
# Scaling measured: the same loads, GET 1 KB and new accounts, through HAProxy on clusters of
# scripts/cluster.sh with 1 and 2 server1 and 1 and 2 server2 (Redis + Sentinel behind), and
# server1 directly (no HAProxy) on the 1 + 1 cluster, in one run. Two loadgens, in lg-1 and
# lg-2, half the users each, started together and merged exactly (--start-at, `loadgen merge`),
# closed loop, --users N in all, over HTTPS (the cluster's; server1's HTTPS port when direct);
# GETs spread over 16 files; per window X, p50, p99 and, from
# /proc, the CPU of every process of
# the cluster (HAProxy, server1s, server2s, the Redis primary, the replicas, the Sentinels) and of
# loadgen, as core-microseconds per request; the machine's busy CPU besides (other processes).
# Medians of the rounds; the order of the loads rotates from round to round. On a 2-core machine
# more processes add no CPU: the table shows what HAProxy and the extra hop cost per request (CPU
# and latency), and the operational-law prediction X <= cores / D (D: the cluster's CPU per
# request; a single-threaded Redis primary caps X at 1 / D_primary) for more cores. Writes
# report.md, raw.tsv and machine.md to --out. Needs root (network namespaces). Takes about
# 4 x 15 s of cluster ups plus ROUNDS x 10 windows x (S + 2) s: 6 minutes with the defaults.
#
#   scripts/bench-scale.sh [--rounds N] [--seconds S] [--users N] [--out DIR] [--keep]
#   scripts/bench-scale.sh --report DIR      write DIR/report.md again from DIR/{raw,meta}.tsv
#     --rounds N   rounds; medians over them (default 3)
#     --seconds S  measured seconds per window (default 5; plus a 1 s warm-up)
#     --users N    users = connections, in all, an even number (default 32)
#     --out DIR    report.md, raw.tsv (every window), meta.tsv, machine.md
#                  (default results/<YYYYMMDD-HHMM>-scale-<host>)
#     --keep       keep the clusters' directory (logs, loadgen outputs)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}
export BIN_DIR
CLUSTER=$TOP/scripts/cluster.sh

usage() { header_usage "${BASH_SOURCE[0]}" 16 24 "${1:-2}"; }

ARGS="$*"
ROUNDS=3 SECS=5 USERS=32 OUT="" KEEP="" REPORT=""
while (($# > 0)); do
    case $1 in
    --rounds | --seconds | --users | --out | --report) (($# >= 2)) || usage ;;&
    --report) REPORT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --users) USERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]?$ && $SECS =~ ^[1-9][0-9]?$ && $USERS =~ ^[1-9][0-9]{0,3}$ ]] &&
    ((USERS % 2 == 0)) || die "--rounds 1..99, --seconds 1..99, --users 2..9998 (even)"
# report DIR: DIR/report.md from DIR/raw.tsv and DIR/meta.tsv
report() {
    python3 - "$1" <<'PY' >"$1/report.md"
import csv, statistics, sys
out = sys.argv[1]
meta = dict(line.rstrip("\n").split("\t", 1) for line in open(out + "/meta.tsv"))
users, secs, rounds = meta["users"], meta["seconds"], meta["rounds"]
load0, load1, ncores = meta["loadavg_start"], meta["loadavg_end"], int(meta["cores"])
rows = list(csv.DictReader(open(out + "/raw.tsv"), delimiter="\t"))
groups = ["haproxy", "server1", "server2", "redis_primary", "redis_replica", "sentinel"]
cells = {}
for r in rows:
    cells.setdefault((r["cluster"], r["path"], r["load"]), []).append(r)

def med(rs, f):
    return statistics.median(float(r[f] or 0) for r in rs)

def us_per_req(rs, g):
    """median over rounds of core-microseconds per request of group g"""
    return statistics.median(float(r[g + "_cores"] or 0) / 100.0 / float(r["x_rps"]) * 1e6
                             for r in rs)

def other_cores(rs):
    return statistics.median(float(r["u_machine"]) * ncores -
                             sum(float(r[g + "_cores"] or 0) / 100.0 for g in groups + ["loadgen"])
                             for r in rs)

order = [("s1x1-s2x1", "direct", "server1 direct (1 server1, 1 server2)"),
         ("s1x1-s2x1", "haproxy", "HAProxy, 1 server1, 1 server2"),
         ("s1x2-s2x1", "haproxy", "HAProxy, 2 server1, 1 server2"),
         ("s1x1-s2x2", "haproxy", "HAProxy, 1 server1, 2 server2"),
         ("s1x2-s2x2", "haproxy", "HAProxy, 2 server1, 2 server2")]
names = {"get": "GET 1 KB (16 names, user u getting the (u mod 16)th, as one of 16 accounts)",
         "new": "new accounts (POST /users, a new name each)"}
print("# Scaling behind HAProxy on one 2-core machine\n")
print("`scripts/bench-scale.sh`: clusters of `scripts/cluster.sh` (network namespaces, Redis +"
      " Sentinel, server1 `--prefetch --threads 2`, server2 `--workers 2 --hash-cost min`), two"
      " loadgens (lg-1 and lg-2, started together, merged exactly by `loadgen merge`), %s users"
      " in all, closed loop, %s rounds of %s s windows (1 s warm-up each); medians of the"
      " rounds. CPU is core-microseconds per request from /proc (`loadgen --watch`); *other* is"
      " the machine's busy CPU besides the cluster and loadgen, in cores. Load average at the"
      " start %s, at the end %s (*other* says how much else ran)."
      % (users, rounds, secs, load0, load1))
pred = {}
for load in ("get", "new"):
    print("\n## %s\n" % names[load])
    print("| path | X req/s | p50 ms | p99 ms | errors | HAProxy | server1 | server2 | Redis "
          "primary | replicas | Sentinels | cluster total | loadgen | other (cores) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cl, path, label in order:
        rs = cells.get((cl, path, load))
        if not rs:
            continue
        per = {g: us_per_req(rs, g) for g in groups + ["loadgen"]}
        total = sum(per[g] for g in groups)
        pred[(cl, path, load)] = (total, per["redis_primary"], med(rs, "x_rps"))
        print("| %s | %.0f | %.2f | %.2f | %.0f | %s | %.1f | %.1f | %.1f | %.1f | %.1f | "
              "**%.1f** | %.1f | %.2f |" % (
                  label, med(rs, "x_rps"), med(rs, "p50_ms"), med(rs, "p99_ms"),
                  med(rs, "errors"), "-" if path == "direct" else "%.1f" % per["haproxy"],
                  per["server1"], per["server2"], per["redis_primary"], per["redis_replica"],
                  per["sentinel"], total, per["loadgen"], other_cores(rs)))

print("\n## What HAProxy and the extra hop cost (1 server1, 1 server2, same run)\n")
print("| load | X via HAProxy / X direct | p50 direct → via HAProxy | cluster CPU µs/request "
      "direct → via HAProxy | of which HAProxy |")
print("|---|---:|---|---|---:|")
for load in ("get", "new"):
    d = cells.get(("s1x1-s2x1", "direct", load))
    h = cells.get(("s1x1-s2x1", "haproxy", load))
    if not d or not h:
        continue
    dt, ht = pred[("s1x1-s2x1", "direct", load)][0], pred[("s1x1-s2x1", "haproxy", load)][0]
    print("| %s | %.2f | %.2f → %.2f ms | %.1f → %.1f | %.1f |" % (
        load, med(h, "x_rps") / med(d, "x_rps"), med(d, "p50_ms"), med(h, "p50_ms"), dt, ht,
        us_per_req(h, "haproxy")))

print("\n## Operational-law prediction for more cores\n")
print("With the cluster's processes spread over N cores (and loadgen on other machines), the"
      " utilization law gives X ≤ N / D, D the cluster's CPU per request measured above; the"
      " Redis primary runs its commands on one thread, so also X ≤ 1 / D_primary. Bounds, not"
      " promises: they assume the work parallelizes (enough server1 threads and processes,"
      " HAProxy `nbthread` = cores) and nothing else saturates (the network, fsync).\n")
print("| load | path | D µs | X ≤ 2/D | 4/D | 8/D | 16/D | 1/D_primary | measured X (%d cores, shared) |"
      % ncores)
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for load in ("get", "new"):
    for cl, path, label in order:
        if (cl, path, load) not in pred:
            continue
        total, prim, x = pred[(cl, path, load)]
        print("| %s | %s | %.1f | %s | %s | %s | %s | %s | %.0f |" % (
            load, label, total, *["%.0f" % (n / total * 1e6) for n in (2, 4, 8, 16)],
            "%.0f" % (1e6 / prim) if prim > 0 else "-", x))
# the reading, from the medians above
def cpu(cl, path, load, g=None):
    rs = cells[(cl, path, load)]
    return sum(us_per_req(rs, x) for x in groups) if g is None else us_per_req(rs, g)

def x_of(cl, path, load):
    return med(cells[(cl, path, load)], "x_rps")

one, four = "s1x1-s2x1", "s1x2-s2x2"
need = [(one, "direct", "get"), (one, "haproxy", "get"), (four, "haproxy", "get"),
        (one, "direct", "new"), (one, "haproxy", "new"), (four, "haproxy", "new")]
if all(k in cells for k in need):
    print("\n## Reading\n")
    dg, hg = cpu(one, "direct", "get"), cpu(one, "haproxy", "get")
    print("- **The hop.** HAProxy in front of one server1 costs %.0f µs of CPU per GET itself;"
          " the cluster's CPU per GET goes from %.0f to %.0f µs (server1 %.0f → %.0f, server2"
          " %.0f → %.0f: behind HAProxy each wake-up of theirs likely finds fewer requests to"
          " share its cost, as the requests now also wait in HAProxy) and p50 from %.2f to"
          " %.2f ms. On this machine X follows the CPU per request, roughly: %.0f → %.0f req/s"
          " (%.2f)."
          " For new accounts, whose cost is mostly the database's (the write, its replication,"
          " the wait for a replica), the same hop is %.0f µs of %.0f (X %.2f of direct)." % (
              cpu(one, "haproxy", "get", "haproxy"), dg, hg,
              cpu(one, "direct", "get", "server1"), cpu(one, "haproxy", "get", "server1"),
              cpu(one, "direct", "get", "server2"), cpu(one, "haproxy", "get", "server2"),
              med(cells[(one, "direct", "get")], "p50_ms"),
              med(cells[(one, "haproxy", "get")], "p50_ms"),
              x_of(one, "direct", "get"), x_of(one, "haproxy", "get"),
              x_of(one, "haproxy", "get") / x_of(one, "direct", "get"),
              cpu(one, "haproxy", "new", "haproxy"), cpu(one, "haproxy", "new"),
              x_of(one, "haproxy", "new") / x_of(one, "direct", "new")))
    print("- **More processes on 2 cores add no CPU, they divide it.** From 1 + 1 to 2 server1"
          " + 2 server2 behind HAProxy the cluster's CPU per request goes %.0f → %.0f µs (GET)"
          " and %.0f → %.0f µs (new accounts): each process's costs per wake-up and per system"
          " call are shared by fewer requests. X does not rise: %.0f → %.0f and %.0f → %.0f"
          " req/s. GETs name 16 files, which `balance uri` spreads over the server1s (one"
          " name always to the same one: names spread, a hot name would not); account"
          " creations go round robin." % (
              hg, cpu(four, "haproxy", "get"), cpu(one, "haproxy", "new"),
              cpu(four, "haproxy", "new"), x_of(one, "haproxy", "get"),
              x_of(four, "haproxy", "get"), x_of(one, "haproxy", "new"),
              x_of(four, "haproxy", "new")))
    print("- **More cores.** With the processes spread over N cores and the load generated"
          " elsewhere, X ≤ N / D: for GETs through HAProxy (1 + 1) %.0f req/s at 4 cores and"
          " %.0f at 8, against %.0f and %.0f for server1 alone; the hop's share does not shrink"
          " with N (X via HAProxy ≤ %.2f of direct at any N: the ratio of the demands). Account"
          " creations are also capped by the single-threaded Redis primary, 1 / D_primary ="
          " %.0f/s, which binds from about %.1f cores on (D / D_primary). These are upper bounds"
          " from this run's demands; a quiet machine gives lower demands (less sharing of caches"
          " and cores with other work), so higher bounds." % (
              4e6 / hg, 8e6 / hg, 4e6 / dg, 8e6 / dg, dg / hg,
              1e6 / cpu(one, "haproxy", "new", "redis_primary"),
              cpu(one, "haproxy", "new") / cpu(one, "haproxy", "new", "redis_primary")))
PY
}

if [[ -n $REPORT ]]; then
    [[ -s $REPORT/raw.tsv && -s $REPORT/meta.tsv ]] || die "--report $REPORT: no raw.tsv and meta.tsv"
    report "$REPORT"
    cat "$REPORT/report.md"
    exit 0
fi
((EUID == 0)) || die "needs root: the cluster's hosts are network namespaces"
[[ -x $BIN_DIR/loadgen ]] || die "no loadgen in $BIN_DIR: run make"
OUT=${OUT:-$TOP/results/$(date +%Y%m%d-%H%M)-scale-$(hostname -s)}
[[ ! -e $OUT/report.md ]] || die "$OUT/report.md exists: give another --out"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-scale.XXXXXX")
UP=()
cleanup() {
    local rc=$? d
    trap - EXIT INT TERM
    set +e
    for d in "${UP[@]}"; do "$CLUSTER" down "$d"; done
    if [[ -n $KEEP ]] || ((rc != 0)); then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the process groups loadgen samples: NAME=PID per process of the cluster (DIR/cluster.state:
# "pid HOST/PROG PID STARTTIME"; every process of a fresh cluster has one record)
watch_list() {
    awk '$1 == "pid" {
        split($2, hp, "/"); h = hp[1]; p = hp[2]
        name = p
        if (p == "redis") name = (h == primary ? "redis_primary" : "redis_replica")
        printf "%s%s=%s", (n++ ? "," : ""), name, $3
    }' primary="$("$CLUSTER" primary "$1")" "$1/cluster.state"
}
WATCH_GROUPS=(haproxy server1 server2 redis_primary redis_replica sentinel loadgen)

# one_window CL PATH LOAD ROUND: one measured window, a line of raw.tsv. Two loadgens, in lg-1
# and lg-2, half the users each, start the window together (--start-at) and their outputs are
# joined exactly (`loadgen merge`: counts summed, histograms merged bucket by bucket). GETs
# spread over the 16 files, user u getting f1k-(u mod 16), so that HAProxy's `balance uri`
# spreads them over the server1s as it would a real mix of names.
one_window() {
    local cl=$1 path=$2 load=$3 round=$4 host out args=() row x start lg pids=()
    if [[ $path == direct ]]; then host=s1-1; else host=lb; fi
    out=$WORK/lg-${cl##*/}-$path-$load-$round
    case $load in
    get) args=(--type get --file "$FILES" --prepare-users 16 --expect-length 1024) ;;
    new) args=(--type new) ;;
    esac
    start=$(($(date +%s%3N) + 5000)) # after both have made their accounts
    for lg in 1 2; do
        "$CLUSTER" exec "$cl" "lg-$lg" "$BIN_DIR/loadgen" \
            --url "https://$(addr "$cl" "$host"):8443" --cacert "$cl/tls/ca.pem" \
            --allow-remote "${args[@]}" \
            --sweep "$((USERS / 2))" --duration "$SECS" --warmup 1 --start-at "$start" \
            --watch "$(watch_list "$cl")" --out "$out.$lg" >"$out.$lg.log" 2>&1 &
        pids+=($!)
    done
    for lg in 1 2; do
        wait "${pids[lg - 1]}" ||
            die "loadgen in lg-$lg failed ($cl $path $load): $(tail -n 3 "$out.$lg.log")"
    done
    "$BIN_DIR/loadgen" merge -o "$out" "$out.1" "$out.2" >"$out.merge.log" 2>&1 ||
        die "loadgen merge failed ($cl $path $load): $(tail -n 3 "$out.merge.log")"
    row=$(csv_get "$out/points.csv" 'c["type"] == "all"' x_rps p50_ms p99_ms errors u_cpu \
        "${WATCH_GROUPS[@]/#/cpu_core_pct_}")
    printf '%s\t%s\t%s\t%s\t%s\n' "${cl##*/}" "$path" "$load" "$round" "$row" >>"$OUT/raw.tsv"
    read -r x _ <<<"$row"
    log "${cl##*/} $path $load round $round: $x req/s"
}
FILES=$(printf 'f1k-%02d,' $(seq 0 15))
FILES=${FILES%,}
addr() { awk -v h="$2" '$1 == h {print $2}' "$1/hosts"; }

printf 'cluster\tpath\tload\tround\tx_rps\tp50_ms\tp99_ms\terrors\tu_machine' >"$OUT/raw.tsv"
printf '\t%s_cores' "${WATCH_GROUPS[@]}" >>"$OUT/raw.tsv"
printf '\n' >>"$OUT/raw.tsv"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for cfg in "1 1" "2 1" "1 2" "2 2"; do
    read -r n1 n2 <<<"$cfg"
    cl=$WORK/s1x${n1}-s2x${n2}
    UP=("$cl")
    "$CLUSTER" up "$cl" --server1 "$n1" --server2 "$n2"
    cells=("haproxy get" "haproxy new")
    [[ $cfg != "1 1" ]] || cells+=("direct get" "direct new")
    for ((r = 1; r <= ROUNDS; r++)); do
        for ((i = 0; i < ${#cells[@]}; i++)); do
            read -r path load <<<"${cells[(i + r) % ${#cells[@]}]}"
            one_window "$cl" "$path" "$load" "$r"
        done
    done
    "$CLUSTER" down "$cl"
    UP=()
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

BIN_DIR=$BIN_DIR "$TOP/scripts/machine-info.sh" "$WORK" >"$OUT/machine.md"
{
    printf 'users\t%s\nseconds\t%s\nrounds\t%s\ncores\t%s\n' "$USERS" "$SECS" "$ROUNDS" "$(nproc)"
    printf 'loadavg_start\t%s\nloadavg_end\t%s\n' "$LOAD_START" "$LOAD_END"
    printf 'haproxy\t%s\n' "$(haproxy -v | head -n 1)"
    printf 'commit\t%s\n' "$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)"
    printf 'command\t%s\n' "scripts/bench-scale.sh $ARGS"
} >"$OUT/meta.tsv"
report "$OUT"
log "report: $OUT/report.md"
cat "$OUT/report.md"

