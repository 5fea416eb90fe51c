#!/usr/bin/env bash
# Our loadgen against wrk, driving the same server side by side: a throw-away nginx (Debian's,
# non-daemon, its own config on a free loopback port, files in a temporary root; never the
# system service) serving a 1 KB file. For each connection count, ROUNDS rounds alternate the
# two tools (which goes first alternates too), each with 2 threads, a 1 s warm-up and SECONDS s
# measured. Prints every round's request rate, the medians and the ratio loadgen / wrk.
# Stops nginx at the end, also on Ctrl-C or failure. About 2 * 2 * ROUNDS * (SECONDS + 2) s.
#
#   scripts/loadgen-vs-wrk.sh [--rounds N] [--seconds S] [--conns 16,64]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}
rounds=5 secs=5 conns=16,64
while (($# > 0)); do
    case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --seconds) secs=${2:?}; shift 2 ;;
    --conns) conns=${2:?}; shift 2 ;;
    *) die "usage: ${0##*/} [--rounds N] [--seconds S] [--conns 16,64]" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $secs =~ ^[1-9][0-9]*$ && $conns =~ ^[0-9]+(,[0-9]+)*$ ]] ||
    die "--rounds and --seconds take positive integers, --conns a list like 16,64"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "nginx not installed (scripts/setup.sh installs nginx-light)"
require_cmd wrk
[[ -x $BIN_DIR/loadgen ]] || die "$BIN_DIR/loadgen missing: run make"

dir=$(mktemp -d "${TMPDIR:-/tmp}/lg-vs-wrk.XXXXXX")
nginx_pid=""
cleanup() {
    [[ -z $nginx_pid ]] || stop_process nginx "$nginx_pid" 10 QUIT # workers finish, then exit
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$dir/www/files" "$dir/tmp"
head -c 1024 /dev/urandom >"$dir/www/files/1k"
chmod -R a+rX "$dir" # nginx's workers run as another user when we are root
port=$(free_port)
nginx_conf "$dir" "listen 127.0.0.1:$port;"
"$NGINX" -e "$dir/nginx.err" -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx.log" 2>&1 &
nginx_pid=$!
wait_port 127.0.0.1 "$port" 10 || die "nginx did not start: $(cat "$dir/nginx.err" "$dir/nginx.log" 2>/dev/null)"
url=http://127.0.0.1:$port/files/1k

# run_loadgen C / run_wrk C: one measurement with C connections and 2 threads; prints req/s.
# loadgen's window is exactly $secs (--window-max 0), as wrk's -d: the two measure alike.
run_loadgen() {
    rm -rf "$dir/lg"
    timeout $((secs + 30)) "$BIN_DIR/loadgen" --url "http://127.0.0.1:$port" --file 1k \
        --expect-length 1024 -u "$1" -t 2 -d "$secs" --window-max 0 --warmup 1 -o "$dir/lg" \
        >"$dir/lg.log" 2>&1 ||
        die "loadgen failed: $(tail -n 3 "$dir/lg.log")"
    csv_get "$dir/lg/points.csv" 'c["type"] == "all"' x_rps
}
run_wrk() {
    timeout 30 wrk -t 2 -c "$1" -d 1s "$url" >/dev/null 2>&1 || die "wrk warm-up failed"
    timeout $((secs + 30)) wrk -t 2 -c "$1" -d "${secs}s" "$url" >"$dir/wrk.log" 2>&1 ||
        die "wrk failed: $(tail -n 3 "$dir/wrk.log")"
    grep -q 'Non-2xx' "$dir/wrk.log" && die "wrk got errors: $(cat "$dir/wrk.log")"
    awk '/^Requests\/sec:/ { print $2 }' "$dir/wrk.log"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), 1 KB file, $url; $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "each tool: 2 threads, 1 s warm-up, $secs s measured; $rounds rounds, alternating"
echo
printf '%6s %6s %14s %14s\n' conns round "loadgen req/s" "wrk req/s"
summary=()
IFS=, read -ra clist <<<"$conns"
for c in "${clist[@]}"; do
    : >"$dir/lg.rates"
    : >"$dir/wrk.rates"
    for ((r = 1; r <= rounds; r++)); do
        if ((r % 2)); then
            lg=$(run_loadgen "$c")
            wk=$(run_wrk "$c")
        else
            wk=$(run_wrk "$c")
            lg=$(run_loadgen "$c")
        fi
        echo "$lg" >>"$dir/lg.rates"
        echo "$wk" >>"$dir/wrk.rates"
        printf '%6s %6s %14.0f %14.0f\n' "$c" "$r" "$lg" "$wk"
    done
    mlg=$(median <"$dir/lg.rates")
    mwk=$(median <"$dir/wrk.rates")
    summary+=("$(awk -v c="$c" -v a="$mlg" -v b="$mwk" 'BEGIN { printf "%6s %14.0f %14.0f %8.2f", c, a, b, a / b }')")
done
echo
printf '%6s %14s %14s %8s\n' conns "loadgen median" "wrk median" ratio
printf '%s\n' "${summary[@]}"
