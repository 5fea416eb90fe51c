#!/usr/bin/env bash
# RADOS on its own, the figure server1's upload store on Ceph is set against: `rados bench`
# (Ceph's own load generator, through librados as server1 uses it) on a throw-away cluster
# (scripts/ceph.sh: one monitor, one manager, three OSDs on BlueStore files, the pool s1 of 3
# copies), as client.s1: writes, then random reads of what was written, of 4 KB and of 1 MiB
# objects, at 1, 16 and 64 operations in flight, in interleaved rounds. Prints per point the
# medians of operations/s, MB/s and the mean latency, and the largest latency seen in any round
# (rados bench gives no percentiles); with --out, the tables in DIR.
#
#   scripts/bench-rados.sh [--rounds N] [--seconds S] [--sizes "4096 1048576"]
#                          [--conc "1 16 64"] [--ceph-dir DIR] [--out DIR] [--keep]
#     --rounds N     interleaved rounds; medians over them (default 3)
#     --seconds S    measured seconds of each write and each read (default 10)
#     --sizes LIST   object sizes in bytes (default "4096 1048576")
#     --conc LIST    operations in flight (default "1 16 64")
#     --ceph-dir DIR a cluster that scripts/ceph.sh runs already (default: one made here, in a
#                    temp dir under $TMPDIR, and removed at exit)
#     --out DIR      write raw.tsv (every window), medians.tsv, report.md and machine.md to DIR
#     --keep         keep the temp dir (the cluster's logs)
# Each write window writes objects of its own run name, the read window after it reads them at
# random, and they are removed before the next window, so that no window reads or fills what
# another left. Exit 0 unless a measurement failed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { header_usage "${BASH_SOURCE[0]}" 10 19 "${1:-2}"; }

ROUNDS=3 SECS=10 SIZES="4096 1048576" CONC="1 16 64" CEPH_DIR="" OUT="" KEEP=""
while (($# > 0)); do
    case $1 in
    --rounds) ROUNDS=${2:-}; shift 2 || usage ;;
    --seconds) SECS=${2:-}; shift 2 || usage ;;
    --sizes) SIZES=${2:-}; shift 2 || usage ;;
    --conc) CONC=${2:-}; shift 2 || usage ;;
    --ceph-dir) CEPH_DIR=${2:-}; shift 2 || usage ;;
    --out) OUT=${2:-}; shift 2 || usage ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds: a whole number of at least 1, not '$ROUNDS'"
[[ $SECS =~ ^[1-9][0-9]*$ ]] || die "--seconds: a whole number of at least 1, not '$SECS'"
for v in $SIZES; do
    if ! [[ $v =~ ^[1-9][0-9]*$ ]] || ((v > 1 << 26)); then
        die "--sizes: bytes from 1 to 67108864, not '$v'"
    fi
done
for v in $CONC; do
    if ! [[ $v =~ ^[1-9][0-9]*$ ]] || ((v > 1024)); then die "--conc: 1 to 1024, not '$v'"; fi
done
[[ -n $SIZES && -n $CONC ]] || die "--sizes and --conc need at least one value each"
require_cmd rados ceph python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-rados.XXXXXX")
made=""
cleanup() {
    [[ -z $made ]] || bash "$TOP/scripts/ceph.sh" stop "$CEPH_DIR" >/dev/null 2>&1 || true
    if [[ -n $KEEP ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -z $CEPH_DIR ]]; then
    CEPH_DIR=$WORK/ceph
    made=1
    log "a cluster in $CEPH_DIR: $(bash "$TOP/scripts/ceph.sh" start "$CEPH_DIR")"
fi
[[ -r $CEPH_DIR/ceph.conf ]] || die "--ceph-dir: no ceph.conf in $CEPH_DIR"
# rados as client.s1, bounded in time (a window, its reads and the cleanup)
r() { timeout $((SECS * 3 + 120)) rados -c "$CEPH_DIR/ceph.conf" --id s1 -p s1 "$@"; }

# window KIND SIZE CONC ROUND: one write window (KIND write) or its random reads (KIND rand);
# one raw.tsv line: round kind size conc ops/s MB/s mean_ms max_ms
RAW=$WORK/raw.tsv
printf 'round\tkind\tsize\tconc\tops_s\tmb_s\tmean_ms\tmax_ms\n' >"$RAW"
window() {
    local kind=$1 size=$2 conc=$3 round=$4 out=$WORK/$1-$2-$3-$4.out args=()
    [[ $kind == write ]] && args=(-b "$size" --no-cleanup)
    r bench "$SECS" "$kind" -t "$conc" --run-name "b$size-$conc-$round" "${args[@]}" \
        >"$out" 2>&1 || { tail -n 5 "$out" >&2; die "rados bench $kind $size $conc failed"; }
    python3 - "$out" "$round" "$kind" "$size" "$conc" >>"$RAW" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def field(name):
    m = re.search(r"^%s:\s+([0-9.]+)" % re.escape(name), text, re.M)
    if not m:
        sys.exit("rados bench printed no '%s'" % name)
    return float(m.group(1))
ops, mb = field("Average IOPS"), field("Bandwidth (MB/sec)")
mean, mx = field("Average Latency(s)"), field("Max latency(s)")
print("\t".join(sys.argv[2:6] + ["%.0f" % ops, "%.2f" % mb, "%.3f" % (mean * 1000),
                                 "%.1f" % (mx * 1000)]))
EOF
}

for ((round = 1; round <= ROUNDS; round++)); do
    for size in $SIZES; do
        for conc in $CONC; do
            window write "$size" "$conc" "$round"
            window rand "$size" "$conc" "$round"
            r cleanup --run-name "b$size-$conc-$round" >/dev/null 2>&1 ||
                die "rados cleanup of b$size-$conc-$round failed"
            log "round $round, $size bytes, $conc in flight: $(tail -n 2 "$RAW" |
                awk -F'\t' '{printf "%s %s ops/s  ", $2, $5}')"
        done
    done
done

# the medians per kind, size and in-flight count; the largest latency of all rounds
MED=$WORK/medians.tsv
python3 - "$RAW" >"$MED" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
keys = []
for r in rows:
    k = (r["kind"], r["size"], r["conc"])
    if k not in keys:
        keys.append(k)
print("kind\tsize\tconc\trounds\tops_s\tmb_s\tmean_ms\tmax_ms")
for k in keys:
    rs = [r for r in rows if (r["kind"], r["size"], r["conc"]) == k]
    med = lambda f: statistics.median(float(r[f]) for r in rs)
    print("%s\t%s\t%s\t%d\t%.0f\t%.2f\t%.3f\t%.1f" % (k + (len(rs), med("ops_s"), med("mb_s"),
          med("mean_ms"), max(float(r["max_ms"]) for r in rs))))
EOF
column -t -s $'\t' "$MED"

if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    cp "$RAW" "$MED" "$OUT/"
    bash "$TOP/scripts/machine-info.sh" >"$OUT/machine.md" 2>/dev/null || true
    {
        echo "# RADOS on its own: $(date -u +%Y-%m-%d)"
        echo
        echo "\`scripts/bench-rados.sh --rounds $ROUNDS --seconds $SECS --sizes \"$SIZES\"" \
            "--conc \"$CONC\"\`: \`rados bench\` as client.s1 on the pool s1 (3 copies, min_size" \
            "2) of a scripts/ceph.sh cluster (one monitor, one manager, three OSDs on BlueStore" \
            "files on this machine's disk); writes, then random reads of what they wrote; the" \
            "machine: [machine.md](machine.md)."
        echo
        echo "| kind | bytes | in flight | ops/s | MB/s | mean ms | max ms |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
        tail -n +2 "$MED" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s |\n",
            $1, $2, $3, $5, $6, $7, $8}'
        echo
        echo "Medians of $ROUNDS rounds (max ms: the largest of all rounds); raw.tsv holds" \
            "every window."
    } >"$OUT/report.md"
    log "wrote $OUT"
fi
