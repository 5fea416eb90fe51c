#!/usr/bin/env bash
# The cost of the sealed server1 <-> server2 link (docs/protocol.md, "Sealed frames"), side by
# side with a build whose link is in clear: two stacks (scripts/stack.sh: Redis, server2 with 2
# threads, server1 with 2 threads), one from each build, each with a secret; server1 without
# --auth-cache, so every GET asks server2 (a VERIFY and its REPLY cross the link); server2 with
# its own cache (--auth-cache 1000), so that argon2id does not hide the link's cost. loadgen
# (2 threads, --conns connections, one user) GETs a 19-byte file; the two stacks take turns,
# in alternating order, --rounds times; the medians of their req/s and of the CPU time server1
# and server2 spent per request (from /proc: steadier than req/s on a busy machine), and their
# ratios, are printed and written to OUT (default stdout only).
#
#   scripts/bench-linkseal.sh --base REV|BUILD_DIR [--rounds N] [--seconds S] [--conns C]
#                             [--out FILE]
#
# --base: a git revision (its tree is built under a temporary directory) or a build directory
# holding server1 and server2. This tree's build/release is the other side.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=$TOP/build/release
ROUNDS=5 SECS=5 CONNS=32 BASE="" OUT=""

usage() {
    sed -n '11,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while (($# > 0)); do
    case $1 in
    --base) BASE=${2:-}; shift 2 || usage ;;
    --rounds) ROUNDS=${2:-}; shift 2 || usage ;;
    --seconds) SECS=${2:-}; shift 2 || usage ;;
    --conns) CONNS=${2:-}; shift 2 || usage ;;
    --out) OUT=${2:-}; shift 2 || usage ;;
    *) usage ;;
    esac
done
[[ -n $BASE ]] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ && $CONNS =~ ^[1-9][0-9]*$ ]] ||
    die "--rounds, --seconds and --conns take positive integers"
for p in server1 server2 loadgen; do [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"; done

RUN=$(mktemp -d "${TMPDIR:-/tmp}/bench-linkseal.XXXXXX")
cleanup() {
    "$TOP/scripts/stack.sh" stop "$RUN/new" >/dev/null 2>&1 || true
    "$TOP/scripts/stack.sh" stop "$RUN/base" >/dev/null 2>&1 || true
    rm -rf "$RUN"
}
trap cleanup EXIT

if [[ -d $BASE ]]; then
    BASE_BIN=$(cd "$BASE" && pwd)
else
    log "building $BASE under $RUN/src"
    mkdir -p "$RUN/src"
    git -C "$TOP" archive "$BASE" | tar -x -C "$RUN/src" || die "cannot export $BASE"
    make -C "$RUN/src" -j2 all >"$RUN/build.log" 2>&1 ||
        die "cannot build $BASE: $(tail -n 3 "$RUN/build.log")"
    BASE_BIN=$RUN/src/build/release
fi
[[ -x $BASE_BIN/server1 && -x $BASE_BIN/server2 ]] || die "no server1 and server2 in $BASE_BIN"

PW=bench-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
declare -A URL
for side in new base; do
    bin=$BIN_DIR
    [[ $side == new ]] || bin=$BASE_BIN
    URL[$side]=$(BIN_DIR=$bin "$TOP/scripts/stack.sh" start "$RUN/$side" --backend redis \
        --workers 2 --hash-cost min --auth-cache 1000 --port 0 -- --threads 2 --auth-cache 0 \
        --login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 \
        2>>"$RUN/stack.log") || die "$side: the stack did not start: $(tail -n 3 "$RUN/stack.log")"
    got=$(curl -s -o /dev/null -w '%{http_code}' --data "username=bench&password=$PW" \
        "${URL[$side]}/users")
    [[ $got == 201 ]] || die "$side: POST /users answered $got"
done

# cpu_ticks SIDE: utime + stime of SIDE's server1 and server2 so far, in clock ticks
cpu_ticks() {
    local f
    for f in "$RUN/$1/server1.pid" "$RUN/$1/server2.pid"; do
        awk '{ s = $0; sub(/^.*\) /, "", s); split(s, x, " "); print x[12] + x[13] }' \
            "/proc/$(cat "$f")/stat"
    done | awk '{ t += $1 } END { print t }'
}
HZ=$(getconf CLK_TCK)

# one SIDE: "REQ_S CPU_US_PER_REQUEST" of one loadgen run against SIDE
one() {
    local t0 t1
    rm -rf "$RUN/lg"
    t0=$(cpu_ticks "$1")
    "$BIN_DIR/loadgen" --url "${URL[$1]}" --file hello.txt --username bench --password "$PW" \
        -u "$CONNS" -t 2 -d "$SECS" --window-max 0 --warmup 0 --timeout 30 -o "$RUN/lg" \
        >"$RUN/lg.out" 2>&1 || die "loadgen against $1 failed: $(tail -n 3 "$RUN/lg.out")"
    t1=$(cpu_ticks "$1")
    csv_get "$RUN/lg/points.csv" 'c["type"] == "all"' x_rps errors ok |
        awk -F'\t' -v t=$((t1 - t0)) -v hz="$HZ" '{ if ($2 + 0 > 0 || $3 + 0 == 0) exit 1
            printf "%.0f %.1f\n", $1, t * 1e6 / hz / $3 }' ||
        die "$1: errors in the run: $(tail -n 3 "$RUN/lg.out")"
}

one new >/dev/null # warm-up of both
one base >/dev/null
declare -a R_NEW R_BASE C_NEW C_BASE
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(new base); else order=(base new); fi
    for side in "${order[@]}"; do
        read -r x c < <(one "$side")
        if [[ $side == new ]]; then
            R_NEW+=("$x") C_NEW+=("$c")
        else
            R_BASE+=("$x") C_BASE+=("$c")
        fi
    done
    log "round $r: sealed ${R_NEW[-1]} req/s ${C_NEW[-1]} us/req," \
        "clear (base) ${R_BASE[-1]} req/s ${C_BASE[-1]} us/req"
done
median() {
    printf '%s\n' "$@" | sort -n |
        awk '{ v[NR] = $1 }
            END { n = NR; print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
m_new=$(median "${R_NEW[@]}")
m_base=$(median "${R_BASE[@]}")
c_new=$(median "${C_NEW[@]}")
c_base=$(median "${C_BASE[@]}")
report=$(
    printf 'uncached authenticated GETs, %d connections, %d rounds of %d s\n' "$CONNS" "$ROUNDS" \
        "$SECS"
    printf 'sealed link (this tree): median %s req/s (%s)\n' "$m_new" "${R_NEW[*]}"
    printf 'clear link (%s): median %s req/s (%s)\n' "$BASE" "$m_base" "${R_BASE[*]}"
    printf 'server CPU per request, sealed: median %s us (%s)\n' "$c_new" "${C_NEW[*]}"
    printf 'server CPU per request, clear: median %s us (%s)\n' "$c_base" "${C_BASE[*]}"
    awk -v a="$m_new" -v b="$m_base" -v c="$c_new" -v d="$c_base" \
        'BEGIN { printf "ratio sealed/clear: req/s %.3f, CPU per request %.3f\n", a / b, c / d }')
printf '%s\n' "$report"
[[ -z $OUT ]] || printf '%s\n' "$report" >"$OUT"
