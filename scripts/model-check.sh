#!/usr/bin/env bash
# How well loadgen's queueing model (exact MVA, see docs/design/model.md) predicts a
# committed run: for every sweep's run.json under RUN_DIR (a committed run keeps them all in one
# RUN_DIR/sweeps.json.gz, written by `--pack`), `loadgen --predict-only` solves the model and
# compares it with the measured points.
# Prints one line per sweep and two totals for each demand set (each point's own demands,
# "per-N"; the N = 1 demands, "n1"): the points whose predicted X is within 10% of the measured
# X, and the sweeps whose predicted knee is within 25% of the measured N*.
#
#   scripts/model-check.sh [-q] [-H] RUN_DIR
#   scripts/model-check.sh --pack RUN_DIR   packs RUN_DIR's CONFIG/LOAD/run.json files into
#                                           RUN_DIR/sweeps.json.gz (each file's text, by sweep)
#
#   -q   the totals only
#   -H   the hardware model (CPU, disks, Redis) even where the run sampled the stack's threads:
#        the model as it was before the software stations (loadgen --hardware-model)
#
# Needs build/release/loadgen (make), or LOADGEN=path.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOADGEN=${LOADGEN:-$TOP/build/release/loadgen}
quiet=0
hw=()
while [[ ${1:-} == -q || ${1:-} == -H ]]; do
    [[ $1 == -q ]] && quiet=1
    [[ $1 == -H ]] && hw=(--hardware-model)
    shift
done
if [[ ${1:-} == --pack ]]; then
    (($# == 2)) && [[ -d $2 ]] || die "usage: ${0##*/} --pack RUN_DIR"
    python3 - "$2" <<'PY'
import glob, gzip, json, os, sys
run = sys.argv[1]
sweeps = {}
for path in sorted(glob.glob(os.path.join(run, "*", "*", "run.json"))):
    with open(path, encoding="utf-8") as f:
        sweeps[os.path.relpath(os.path.dirname(path), run)] = f.read()
if not sweeps:
    sys.exit("model-check.sh: error: no CONFIG/LOAD/run.json under " + run)
with gzip.GzipFile(os.path.join(run, "sweeps.json.gz"), "wb", mtime=0) as f:
    f.write(json.dumps(sweeps, sort_keys=True).encode("utf-8"))
print("model-check.sh: %d sweeps packed into %s/sweeps.json.gz" % (len(sweeps), run))
PY
    exit
fi
(($# == 1)) || die "usage: ${0##*/} [-q] [-H] RUN_DIR"
[[ -d $1 ]] || die "'$1' is not a directory"
[[ -x $LOADGEN ]] || die "$LOADGEN missing: run make first (or set LOADGEN)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the sweeps as they lie under the run, or unpacked from its sweeps.json.gz into $tmp/RUN_DIR
root=$1
if [[ -f $1/sweeps.json.gz ]]; then
    root=$tmp/sweeps
    python3 - "$1/sweeps.json.gz" "$root" <<'PY' || die "$1/sweeps.json.gz: cannot unpack it"
import gzip, json, os, sys
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
    sweeps = json.load(f)
for name, text in sweeps.items():
    if name.startswith("/") or ".." in name.split("/"):
        sys.exit("a sweep name that leaves the run: " + name)
    os.makedirs(os.path.join(sys.argv[2], name), exist_ok=True)
    with open(os.path.join(sys.argv[2], name, "run.json"), "w", encoding="utf-8") as out:
        out.write(text)
PY
fi
mapfile -t files < <(find "$root" -name run.json | sort)
((${#files[@]} > 0)) || die "no run.json under '$1'"

main() {
    local f line sweep
    for f in "${files[@]}"; do
        sweep=${f#"$root"/}
        sweep=${sweep%/run.json}
        if ! line=$("$LOADGEN" --predict-only "$f" --max-users 1 "${hw[@]}" 2>&1 |
            grep '^check: '); then
            echo "skip $sweep (no model: $("$LOADGEN" --predict-only "$f" "${hw[@]}" 2>&1 |
                tail -n 1))"
            continue
        fi
        echo "sweep $sweep ${line#check: }"
    done
}

main "$1" | awk -v quiet="$quiet" '
    $1 == "skip" { if (!quiet) print; skipped++; next }
    {
        for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
        n++; pts += v["points"]; wp += v["within10_pern"]; w1 += v["within10_n1"]
        kp += v["knee_pern_ok"]; k1 += v["knee_n1_ok"]
        if (!quiet)
            printf "%-36s points %3d within 10%%: per-N %3d, n1 %3d; N* %3d, knee per-N %3d%s, n1 %3d%s\n",
                $2, v["points"], v["within10_pern"], v["within10_n1"], v["nstar"],
                v["knee_pern"], v["knee_pern_ok"] ? "" : " (off)", v["knee_n1"], v["knee_n1_ok"] ? "" : " (off)"
    }
    END {
        if (n == 0) { print "no sweep could be modelled"; exit 1 }
        printf "per-N demands: X within 10%% at %d of %d points (%.0f%%); knee within 25%% of N* in %d of %d sweeps (%.0f%%)\n",
            wp, pts, 100 * wp / pts, kp, n, 100 * kp / n
        printf "N = 1 demands: X within 10%% at %d of %d points (%.0f%%); knee within 25%% of N* in %d of %d sweeps (%.0f%%)\n",
            w1, pts, 100 * w1 / pts, k1, n, 100 * k1 / n
        if (skipped) printf "%d sweeps without a model (see above)\n", skipped
    }'
