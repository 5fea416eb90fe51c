#!/usr/bin/env bash
# What https costs, server and client: loadgen drives a throw-away nginx (Debian's, non-daemon,
# its own config on free loopback ports, a throw-away CA and certificate made with openssl in a
# temporary directory; never the system service) serving a 1 KB file, over http and over https
# (TLS 1.3, certificate verified with --cacert), with keep-alive connections and with a new
# connection per request (https: session resumption on and off). ROUNDS rounds, the five modes
# in turn within each round, each CONNS connections, 2 threads, a 1 s warm-up and SECONDS s
# measured. Prints every run's req/s and loadgen's own CPU per request (its cpu:loadgen demand,
# U / X), then the medians. Stops nginx at the end, also on Ctrl-C or failure.
# About 5 * ROUNDS * (SECONDS + 2) s.
#
#   scripts/loadgen-tls.sh [--rounds N] [--seconds S] [--conns C]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}
rounds=3 secs=3 conns=16
while (($# > 0)); do
    case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --seconds) secs=${2:?}; shift 2 ;;
    --conns) conns=${2:?}; shift 2 ;;
    *) die "usage: ${0##*/} [--rounds N] [--seconds S] [--conns C]" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $secs =~ ^[1-9][0-9]*$ && $conns =~ ^[1-9][0-9]*$ ]] ||
    die "--rounds, --seconds and --conns take positive integers"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "nginx not installed (scripts/setup.sh installs nginx-light)"
require_cmd openssl python3
[[ -x $BIN_DIR/loadgen ]] || die "$BIN_DIR/loadgen missing: run make"

dir=$(mktemp -d "${TMPDIR:-/tmp}/lg-tls.XXXXXX")
nginx_pid=""
cleanup() {
    [[ -z $nginx_pid ]] || stop_process nginx "$nginx_pid" 10 QUIT # workers finish, then exit
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 \
    -subj "/CN=loadgen-tls CA" 2>/dev/null || die "openssl could not make a CA"
openssl req -newkey rsa:2048 -nodes -keyout "$dir/srv.key" -out "$dir/srv.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null || die "openssl could not make a key"
printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/srv.ext"
openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/srv.ext" -out "$dir/srv.pem" 2>/dev/null ||
    die "openssl could not sign the certificate"
mkdir -p "$dir/www/files" "$dir/tmp"
head -c 1024 /dev/urandom >"$dir/www/files/1k"
chmod -R a+rX "$dir" # nginx's workers run as another user when we are root
port=$(free_port)
sport=$(free_port)
while [[ $sport == "$port" ]]; do sport=$(free_port); done
nginx_conf "$dir" "listen 127.0.0.1:$port;" \
    "listen 127.0.0.1:$sport ssl; ssl_certificate $dir/srv.pem; ssl_certificate_key $dir/srv.key; ssl_protocols TLSv1.2 TLSv1.3;"
"$NGINX" -e "$dir/nginx.err" -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx.log" 2>&1 &
nginx_pid=$!
for p in "$port" "$sport"; do
    wait_port 127.0.0.1 "$p" 10 ||
        die "nginx did not start: $(cat "$dir/nginx.err" "$dir/nginx.log" 2>/dev/null)"
done

modes=(http http-new https https-new-resume https-new-full)
# flags MODE: loadgen's flags for a mode
flags() {
    case $1 in
    http) echo "--url http://127.0.0.1:$port" ;;
    http-new) echo "--url http://127.0.0.1:$port --new-conn-per-request" ;;
    https) echo "--url https://127.0.0.1:$sport --cacert $dir/ca.pem" ;;
    https-new-resume) echo "--url https://127.0.0.1:$sport --cacert $dir/ca.pem --new-conn-per-request" ;;
    https-new-full) echo "--url https://127.0.0.1:$sport --cacert $dir/ca.pem --new-conn-per-request --tls-resume off" ;;
    esac
}
# run MODE: one measurement; prints "req/s loadgen-CPU-us-per-request"
run() {
    local -a f
    read -ra f <<<"$(flags "$1")"
    rm -rf "$dir/lg"
    timeout $((secs + 30)) "$BIN_DIR/loadgen" "${f[@]}" --file 1k --expect-length 1024 \
        -u "$conns" -t 2 -d "$secs" --window-max 0 --warmup 1 -o "$dir/lg" >"$dir/lg.log" 2>&1 ||
        die "loadgen ($1) failed: $(tail -n 3 "$dir/lg.log")"
    python3 - "$dir/lg/run.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
if p["all"]["errors"]["total"]:
    sys.exit("errors: %s" % p["all"]["errors"])
cpu = [r["demand_ms"] for r in p["resources"] if r["name"] == "cpu:loadgen"]
print("%.0f %.1f" % (p["all"]["x_rps"], cpu[0] * 1e3 if cpu else float("nan")))
EOF
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), $(openssl version), 1 KB file; $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "loadgen: $conns connections, 2 threads, 1 s warm-up, $secs s measured; $rounds rounds"
echo
printf '%-17s %6s %10s %16s\n' mode round "req/s" "loadgen us/req"
for ((r = 1; r <= rounds; r++)); do
    for m in "${modes[@]}"; do
        read -r x cpu <<<"$(run "$m")"
        echo "$x" >>"$dir/$m.x"
        echo "$cpu" >>"$dir/$m.cpu"
        printf '%-17s %6s %10s %16s\n' "$m" "$r" "$x" "$cpu"
    done
done
echo
printf '%-17s %12s %22s\n' mode "median req/s" "median loadgen us/req"
for m in "${modes[@]}"; do
    printf '%-17s %12.0f %22.1f\n' "$m" "$(median <"$dir/$m.x")" "$(median <"$dir/$m.cpu")"
done
