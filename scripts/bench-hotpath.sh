#!/usr/bin/env bash
# The hot path next to static servers, side by side in one run: GETs of one file from
#   h2o         h2o static, no auth (Debian's h2o, 2 threads, no access log)
#   nginx       nginx static, no auth (2 workers, open_file_cache, sendfile on, no access log)
#   nginx-auth  the same nginx with auth_basic, its htpasswd entry SHA-1 ({SHA}: one SHA-1 per request)
#   s1-on       server1 --prefetch, caches on: server2 --auth-cache 100000 (+ server1's own
#               --auth-cache 100000 --auth-cache-ttl 60s when this server1 has it)
#   s1-off      server1 --prefetch, caches off: every GET an argon2id verify (--hash-cost min)
#               plus a Redis lookup
#   s1-base     with --base DIR: s1-on from another build (DIR/server1, DIR/server2), to compare
#               two versions of the code side by side (the ratio of each round's pair, and its
#               median, is in the report)
#   s1-plain    with --tls and s1-on: s1-on's own plain-HTTP port (the same processes), so that
#               HTTPS and plain HTTP of one server1 compare side by side
#   nginx-plain with --tls and nginx: a plain-HTTP server block of the same nginx, so that
#               nginx's own HTTPS ÷ plain ratio stands beside server1's
# all on 127.0.0.1, serving the same files (one temp root on disk; server1 gets hard links to
# them), driven by wrk and by our loadgen (2 threads each; wrk 1 thread at 1 connection, as wrk
# needs a connection per thread). Loads: 1 KB at 16 and 64 connections, 100 MB at 1 and 4;
# on request, 1KB-new and 1KB-resumed: the 1 KB file over a new connection per request (loadgen
# only; with --tls a full handshake per request, or a resumed one: handshakes per second).
# Each measured window: a 1 s warm-up run of the same generator first, then S seconds; the order
# of the servers rotates from round to round. Per window: req/s, MB/s (req/s x file size), p50
# and p99, the generator's CPU and the server's CPU in cores (all its processes, /proc/PID/stat),
# the server's context switches per request (/proc/PID/task/*/status), and the rest of the
# machine's busy CPU (/proc/stat less generator and server: shows a window that shared the
# machine). Prints a Markdown report (every round, medians, ratios, the machine) and writes it
# with raw.tsv to --out. Stops everything it started and removes its temp dir, also on failure
# or Ctrl-C. Takes about ROUNDS x cells x generators x servers x (S + 1.1) s: 12-13 minutes
# with the defaults. With --tls every server listens with TLS only (one ECDSA P-256 certificate
# from scripts/tls-certs.sh, TLS 1.3 only, session tickets and a cache) and the generators speak
# https:// (keep-alive: one handshake per connection).
#
#   scripts/bench-hotpath.sh [--rounds N] [--seconds S] [--gen wrk,loadgen] [--sizes 1KB,100MB]
#                            [--loads 1KB:16,1KB:64,100MB:1,100MB:4] [--servers LIST]
#                            [--base BUILD_DIR] [--tls [--ktls on|off]] [--out DIR] [--keep]
#     --rounds N     rounds; medians over them (default 3)
#     --seconds S    measured seconds per window (default 5; plus a 1 s warm-up)
#     --gen LIST     generators: wrk, loadgen or both (default wrk,loadgen)
#     --sizes LIST   keep the default loads of these files only (1KB, 100MB)
#     --loads LIST   FILE:CONNECTIONS cells, overriding --sizes (FILE: 1KB or 100MB, or
#                    1KB-new / 1KB-resumed: a new connection per request, resumed needs --tls)
#     --servers LIST any of h2o,nginx,nginx-auth,s1-on,s1-off,s1-base,s1-plain,nginx-plain
#                    (default all but s1-base, s1-plain and nginx-plain)
#     --base DIR     a build directory of another version (server1, server2): the server
#                    s1-base, added to the list (e.g. `--base /tmp/old/build/release --servers
#                    s1-on --gen loadgen --sizes 1KB`: this build against that one, in pairs
#                    whose order alternates from round to round)
#     --tls          HTTPS: nginx, h2o and server1 over TLS 1.3 (server1: --tls-cert,
#                    --tls-key, --tls-port; a server1 without them is refused)
#     --ktls on|off  with --tls: nginx's `ssl_conf_command Options KTLS` (default on: the
#                    kernel encrypts and sendfile stays; off: every byte through OpenSSL)
#     --out DIR      report.md, raw.tsv, medians.tsv, machine.md, configs
#                    (default results/<YYYYMMDD-HHMM>-hotpath-<host>)
#     --keep         keep the temp dir (logs, configs, files) instead of removing it
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

# server1's own auth-cache flags: left out (with a warning) when this build's server1 --help
# does not mention --auth-cache (a build older than the cache, run for comparison).
S1_CACHE_FLAGS=(--auth-cache 100000 --auth-cache-ttl 60s)
S1_NOCACHE_FLAGS=(--auth-cache 0)
# both server1s: as scripts/reproduce.sh runs them (per-client limits off: every request comes
# from 127.0.0.1), files prefetched
S1_COMMON=(--threads 2 --prefetch --login-fail-limit 0 --login-fail-addr-limit 0
    --signup-limit 0 --max-conns-per-ip 0)
S2_CACHE=100000

declare -A FILE_BYTES=([1KB]=1024 [100MB]=104857600 [1KB-new]=1024 [1KB-resumed]=1024)
# a cell's load names the file it GETs and how: a new connection per request (loadgen's
# --new-conn-per-request; with --tls resumption off or on); wrk keeps its connections, so it
# measures only the keep-alive loads
declare -A CELL_FILE=([1KB]=1KB [100MB]=100MB [1KB-new]=1KB [1KB-resumed]=1KB)
declare -A CELL_LG=([1KB-new]="--new-conn-per-request" [1KB-resumed]="--new-conn-per-request")
ALL_SERVERS=(h2o nginx nginx-auth s1-on s1-off)
declare -A LABEL=([h2o]="h2o static" [nginx]="nginx static" [nginx-auth]="nginx auth_basic {SHA}"
    [s1-on]="server1 caches on" [s1-off]="server1 caches off" [s1-base]="server1 caches on, base build"
    [s1-plain]="server1 caches on, plain HTTP" [nginx-plain]="nginx static, plain HTTP")
DEFAULT_LOADS=1KB:16,1KB:64,100MB:1,100MB:4

usage() { header_usage "${BASH_SOURCE[0]}" 32 53 "${1:-2}"; }

ARGS="$*"
ROUNDS=3 SECS=5 GENS=wrk,loadgen SIZES="" LOADS="" SERVERS_ARG="" OUT="" KEEP="" BASE="" TLS=""
KTLS=on
while (($# > 0)); do
    case $1 in
    --rounds) ROUNDS=${2:-}; shift 2 || usage ;;
    --seconds) SECS=${2:-}; shift 2 || usage ;;
    --gen) GENS=${2:-}; shift 2 || usage ;;
    --sizes) SIZES=${2:-}; shift 2 || usage ;;
    --loads) LOADS=${2:-}; shift 2 || usage ;;
    --servers) SERVERS_ARG=${2:-}; shift 2 || usage ;;
    --out) OUT=${2:-}; shift 2 || usage ;;
    --base) BASE=${2:-}; shift 2 || usage ;;
    --keep) KEEP=1; shift ;;
    --tls) TLS=1; shift ;;
    --ktls) KTLS=${2:-}; shift 2 || usage ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]] ||
    die "--rounds and --seconds take positive integers"
[[ $KTLS == on || $KTLS == off ]] || die "--ktls takes on or off"

# ---- what to measure ----------------------------------------------------------------------
IFS=, read -ra GEN_LIST <<<"$GENS"
((${#GEN_LIST[@]} > 0)) || die "--gen: empty list"
for g in "${GEN_LIST[@]}"; do
    [[ $g == wrk || $g == loadgen ]] || die "--gen: '$g' is neither wrk nor loadgen"
done
IFS=, read -ra SERVERS <<<"${SERVERS_ARG:-$(
    IFS=,
    echo "${ALL_SERVERS[*]}"
)}"
((${#SERVERS[@]} > 0)) || die "--servers: empty list"
if [[ -n $BASE ]]; then
    [[ -x $BASE/server1 && -x $BASE/server2 ]] || die "--base: no server1 and server2 in '$BASE'"
    BASE=$(cd "$BASE" && pwd)
    [[ " ${SERVERS[*]} " == *" s1-base "* ]] || SERVERS+=(s1-base)
fi
for s in "${SERVERS[@]}"; do
    [[ -n ${LABEL[$s]:-} ]] || die "--servers: unknown server '$s' (any of ${ALL_SERVERS[*]} s1-base)"
    [[ $s != s1-base || -n $BASE ]] || die "--servers: s1-base needs --base BUILD_DIR"
    [[ $s != s1-plain || (-n $TLS && " ${SERVERS[*]} " == *" s1-on "*) ]] ||
        die "--servers: s1-plain needs --tls and s1-on (it is s1-on's plain port)"
    [[ $s != nginx-plain || (-n $TLS && " ${SERVERS[*]} " == *" nginx "*) ]] ||
        die "--servers: nginx-plain needs --tls and nginx (it is that nginx's plain port)"
done
if [[ -z $LOADS ]]; then
    LOADS=$DEFAULT_LOADS
    if [[ -n $SIZES ]]; then
        IFS=, read -ra want <<<"$SIZES"
        for w in "${want[@]}"; do
            [[ -n ${FILE_BYTES[$w]:-} ]] || die "--sizes: unknown file '$w' (1KB or 100MB)"
        done
        LOADS=$(tr , '\n' <<<"$DEFAULT_LOADS" | awk -F: -v s=",$SIZES," 'index(s, "," $1 ",")' | paste -sd,)
    fi
fi
IFS=, read -ra CELLS <<<"$LOADS"
((${#CELLS[@]} > 0)) || die "--loads: empty list"
declare -A NEED_FILE=()
for cell in "${CELLS[@]}"; do
    [[ $cell =~ ^([0-9A-Za-z-]+):([1-9][0-9]*)$ && -n ${FILE_BYTES[${BASH_REMATCH[1]}]:-} ]] ||
        die "--loads: bad cell '$cell' (FILE:CONNECTIONS, FILE 1KB, 100MB, 1KB-new or 1KB-resumed)"
    ((BASH_REMATCH[2] <= 1000)) || die "--loads: at most 1000 connections ($cell)"
    [[ ${BASH_REMATCH[1]} != 1KB-resumed || -n $TLS ]] || die "--loads: 1KB-resumed needs --tls"
    NEED_FILE[${CELL_FILE[${BASH_REMATCH[1]}]}]=1
done
has_server() {
    local s
    for s in "${SERVERS[@]}"; do [[ $s != "$1" ]] || return 0; done
    return 1
}

# ---- tools --------------------------------------------------------------------------------
require_cmd python3 curl awk timeout paste
for g in "${GEN_LIST[@]}"; do
    case $g in
    wrk) require_cmd wrk ;;
    loadgen) [[ -x $BIN_DIR/loadgen ]] || die "no loadgen in $BIN_DIR: run make" ;;
    esac
done
has_server h2o && { command -v h2o >/dev/null 2>&1 || die "h2o not installed (scripts/setup.sh installs it)"; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if has_server nginx || has_server nginx-auth; then
    [[ -x $NGINX ]] || die "nginx not installed (scripts/setup.sh installs nginx-light)"
fi
S1_HAS_CACHE=""
if has_server s1-on || has_server s1-off || has_server s1-base; then
    require_cmd redis-server redis-cli
    for p in server1 server2; do
        [[ -x $BIN_DIR/$p ]] || die "no $p in $BIN_DIR: run make"
    done
    if grep -q -- '--auth-cache' <<<"$("$BIN_DIR/server1" --help 2>&1)"; then
        S1_HAS_CACHE=1
    else
        log "warning: this server1 has no --auth-cache: left out ${S1_CACHE_FLAGS[*]} / ${S1_NOCACHE_FLAGS[*]} (server2's cache only)"
        S1_CACHE_FLAGS=()
        S1_NOCACHE_FLAGS=()
    fi
    if [[ -n $TLS ]] && ! grep -q -- '--tls-cert' <<<"$("$BIN_DIR/server1" --help 2>&1)"; then
        die "--tls: this server1 has no --tls-cert flag"
    fi
    if [[ -n $BASE ]] && ! grep -q -- '--auth-cache' <<<"$("$BASE/server1" --help 2>&1)"; then
        die "--base: that server1 has no --auth-cache flag: the pair would not compare like with like"
    fi
fi
CLK_TCK=$(getconf CLK_TCK)
# versions now, before anything starts (another build may replace the binaries during the run)
ver() { "$@" 2>&1 | head -n 1 || true; }
declare -A VER=()
has_server h2o && VER[h2o]=$(ver h2o --version)
VER[nginx]=$(ver "$NGINX" -v | sed 's/.*nginx\///')
VER[wrk]=$(ver wrk -v | awk '{ print $1, $2 }')
VER[loadgen]=$(ver "$BIN_DIR/loadgen" --version | awk '{ print $2 }')
VER[server1]=$(ver "$BIN_DIR/server1" --version | awk '{ print $2 }')
VER[server2]=$(ver "$BIN_DIR/server2" --version | awk '{ print $2 }')
if [[ -n $BASE ]]; then
    VER[base1]=$(ver "$BASE/server1" --version | awk '{ print $2 }')
    VER[base2]=$(ver "$BASE/server2" --version | awk '{ print $2 }')
fi
VER[redis]=$(ver redis-server --version | awk '{ print $3 }' | sed 's/v=//')

# ---- temp dir (on a disk: server1 prefetches with O_DIRECT) and output dir ----------------
base=${TMPDIR:-/tmp}
[[ $(stat -f -c %T "$base") != tmpfs ]] || base=/var/tmp
[[ $(stat -f -c %T "$base") != tmpfs ]] || die "$base is tmpfs: set TMPDIR to a directory on a disk"
if [[ -z $OUT ]]; then
    OUT=$TOP/results/$(date +%Y%m%d-%H%M)-hotpath-$(hostname -s)
    [[ ! -e $OUT ]] || die "$OUT exists (a run in the same minute?): use --out DIR"
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

RUN=$(mktemp -d "$base/bench-hotpath.XXXXXX")
STARTED=() # "pid comm" of every process started here (besides the stacks)
cleanup() {
    local rc=$? e pid comm
    trap - INT TERM
    for d in on off base; do
        [[ ! -d $RUN/$d ]] || "$TOP/scripts/stack.sh" stop "$RUN/$d" >/dev/null 2>&1 || true
    done
    # the roots first (nginx's master: QUIT = graceful), then whatever of theirs is left
    for e in "${STARTED[@]}"; do
        read -r pid comm <<<"$e"
        if [[ $comm == nginx && $pid == "${NGINX_PID:-}" ]]; then
            kill -QUIT "$pid" 2>/dev/null || true
        elif [[ $pid == "${H2O_PID:-}" ]]; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    for pid in ${NGINX_PID:-} ${H2O_PID:-}; do wait_pid_exit "$pid" 10 || true; done
    for e in "${STARTED[@]}"; do
        read -r pid comm <<<"$e"
        if pid_alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]]; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    if ((rc != 0)) && [[ -d $OUT ]]; then
        mkdir -p "$OUT/logs"
        find "$RUN" -maxdepth 3 \( -name '*.log' -o -name '*.err' -o -name gen.out \) \
            -exec cp --backup=numbered {} "$OUT/logs/" \; 2>/dev/null || true
        log "logs of the failed run copied to $OUT/logs"
    fi
    if [[ -n $KEEP ]]; then
        log "temp dir kept: $RUN"
    else
        rm -rf "$RUN"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# note_started PID: note PID and its descendants as ours (for cleanup and the CPU sums)
note_started() {
    local p
    for p in $(tree_pids "$1"); do STARTED+=("$p $(cat "/proc/$p/comm" 2>/dev/null)"); done
}

# ---- files and credentials ----------------------------------------------------------------
FILES=$RUN/www/files
mkdir -p "$FILES"
for f in "${!NEED_FILE[@]}"; do random_file "$FILES/$f" "${FILE_BYTES[$f]}"; done
chmod 711 "$RUN" # nginx's workers and h2o run as other users when we are root
chmod -R a+rX "$RUN/www"
ensure_password "$RUN/password"
PW=$(<"$RUN/password")
B64=$(printf 'bench:%s' "$PW" | base64 -w0)
printf 'Authorization: Basic %s\n' "$B64" >"$RUN/auth.hdr"
printf 'username=bench&password=%s' "$PW" >"$RUN/signup.form"
chmod 600 "$RUN/auth.hdr" "$RUN/signup.form"
PW="$PW" python3 -c 'import base64, hashlib, os
print("bench:{SHA}" + base64.b64encode(hashlib.sha1(os.environ["PW"].encode()).digest()).decode())' \
    >"$RUN/htpasswd"
chmod 644 "$RUN/htpasswd"

SCHEME=http CURL_TLS=() LG_TLS=()
if [[ -n $TLS ]]; then
    "$TOP/scripts/tls-certs.sh" "$RUN/certs"
    chmod 755 "$RUN/certs"
    chmod 644 "$RUN/certs/server.key" # nginx's master reads it as root, h2o as its user
    SCHEME=https CURL_TLS=(--cacert "$RUN/certs/ca.pem") LG_TLS=(--cacert "$RUN/certs/ca.pem")
fi
declare -A URL=() PIDS=() AUTH=()
# http_code URL [CURL_FLAGS...]: the status of one request (bounded), body discarded
http_code() {
    local u=$1
    shift
    curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 10 "${CURL_TLS[@]}" "$@" \
        "$u" || true
}
# check SERVER FILE EXPECT_AUTH: one GET of every file answers 200 with the file's length
# (with credentials when the server wants them, and 401 without)
check() {
    local s=$1 f got
    [[ ${URL[$s]} != http://* ]] || local CURL_TLS=()
    for f in "${!NEED_FILE[@]}"; do
        if [[ -n ${AUTH[$s]:-} ]]; then
            got=$(http_code "${URL[$s]}/files/$f")
            [[ $got == 401\ * ]] || die "$s: GET /files/$f without credentials answered $got, not 401"
            got=$(http_code "${URL[$s]}/files/$f" -H "@$RUN/auth.hdr")
        else
            got=$(http_code "${URL[$s]}/files/$f")
        fi
        [[ $got == "200 ${FILE_BYTES[$f]}" ]] || die "$s: GET /files/$f answered '$got', not '200 ${FILE_BYTES[$f]}'"
    done
}

# ---- servers ------------------------------------------------------------------------------
log "temp dir $RUN; starting servers"
if has_server h2o; then
    port=$(free_port)
    cat >"$RUN/h2o.conf" <<EOF
# generated by ${0##*/}: no access-log directive = no access log
num-threads: 2
error-log: $RUN/h2o.err
hosts:
  default:
    listen:
      host: 127.0.0.1
      port: $port${TLS:+
      ssl:
        certificate-file: $RUN/certs/server.pem
        key-file: $RUN/certs/server.key
        minimum-version: TLSv1.3
        ocsp-update-interval: 0}
    paths:
      /files:
        file.dir: $FILES
EOF
    h2o -c "$RUN/h2o.conf" >"$RUN/h2o.log" 2>&1 </dev/null &
    H2O_PID=$!
    STARTED+=("$H2O_PID h2o")
    wait_port 127.0.0.1 "$port" 10 || die "h2o did not start: $(tail -n 3 "$RUN/h2o.log" "$RUN/h2o.err" 2>/dev/null | tr '\n' ' ')"
    note_started "$H2O_PID"
    URL[h2o]=$SCHEME://127.0.0.1:$port
    PIDS[h2o]=$(tree_pids "$H2O_PID" | paste -sd' ')
fi
if has_server nginx || has_server nginx-auth; then
    p1=$(free_port)
    p2=$(free_port)
    [[ $p1 != "$p2" ]] || p2=$(free_port)
    p3=$(free_port)
    while [[ $p3 == "$p1" || $p3 == "$p2" ]]; do p3=$(free_port); done
    # the nginx_conf helper: 2 workers, no access log, pid/error log/temp files under $RUN,
    # root $RUN/www; one nginx, two server blocks (static and auth_basic) on two ports
    common="open_file_cache max=1000; sendfile on;" ssl=""
    if [[ -n $TLS ]]; then
        ssl=" ssl"
        common+=" ssl_certificate $RUN/certs/server.pem; ssl_certificate_key $RUN/certs/server.key;"
        common+=" ssl_protocols TLSv1.3; ssl_session_cache shared:SSL:10m; ssl_session_tickets on;"
        [[ $KTLS == off ]] || common+=" ssl_conf_command Options KTLS;"
    fi
    # (with --tls a third block, plain HTTP: nginx-plain)
    nginx_conf "$RUN" "listen 127.0.0.1:$p1$ssl; $common" \
        "listen 127.0.0.1:$p2$ssl; $common auth_basic \"bench\";
        auth_basic_user_file $RUN/htpasswd;" \
        ${TLS:+"listen 127.0.0.1:$p3; open_file_cache max=1000; sendfile on;"}
    "$NGINX" -e "$RUN/nginx.err" -p "$RUN" -c "$RUN/nginx.conf" >"$RUN/nginx.log" 2>&1 </dev/null &
    NGINX_PID=$!
    STARTED+=("$NGINX_PID nginx")
    for p in "$p1" "$p2" ${TLS:+"$p3"}; do
        wait_port 127.0.0.1 "$p" 10 ||
            die "nginx did not start: $(tail -n 3 "$RUN/nginx.err" "$RUN/nginx.log" 2>/dev/null | tr '\n' ' ')"
    done
    two_children() { (($(child_pids "$NGINX_PID" | wc -l) >= 2)); }
    wait_until 10 two_children || die "nginx did not start its 2 workers"
    note_started "$NGINX_PID"
    URL[nginx]=$SCHEME://127.0.0.1:$p1
    URL[nginx-auth]=$SCHEME://127.0.0.1:$p2
    AUTH[nginx-auth]=1
    PIDS[nginx]=$(tree_pids "$NGINX_PID" | paste -sd' ')
    PIDS[nginx-auth]=${PIDS[nginx]}
    URL[nginx-plain]=http://127.0.0.1:$p3
    PIDS[nginx-plain]=${PIDS[nginx]}
fi
# start_stack NAME DIRNAME S2_CACHE S1_FLAGS...: server1 + server2 + a throw-away Redis, server1's
# root hard links to the shared files, one account; the programs of $STACK_BIN
start_stack() {
    local s=$1 d=$RUN/$2 root=$RUN/root-$2 cache=$3 f got tls=() port
    shift 3
    [[ -z $TLS ]] || tls=(--tls-cert "$RUN/certs/server.pem" --tls-key "$RUN/certs/server.key"
        --tls-port 0)
    mkdir -p "$root"
    for f in "${!NEED_FILE[@]}"; do ln "$FILES/$f" "$root/$f" || die "cannot hard-link $FILES/$f"; done
    URL[$s]=$(BIN_DIR=${STACK_BIN:-$BIN_DIR} "$TOP/scripts/stack.sh" start "$d" --backend redis --mode threads --workers 2 \
        --hash-cost min --auth-cache "$cache" --root "$root" --port 0 -- "${S1_COMMON[@]}" "$@" \
        "${tls[@]}" 2>>"$RUN/stack.log") ||
        die "$s: the stack did not start: $(tail -n 3 "$RUN/stack.log" | tr '\n' ' ')"
    if [[ -n $TLS ]]; then # the HTTPS port server1 logged; the plain one is s1-plain's
        port=$(grep -m1 -o 'listening for https on [^ ]*' "$d/server1.log") ||
            die "$s: server1 did not log its https port"
        PLAIN_URL=${URL[$s]}
        URL[$s]=https://127.0.0.1:${port##*:}
    fi
    got=$(http_code "${URL[$s]}/users" -X POST --data-binary "@$RUN/signup.form")
    [[ $got == 201\ * ]] || die "$s: POST /users answered $got, not 201"
    AUTH[$s]=1
    PIDS[$s]=$(tree_pids "$(cat "$d/server1.pid")" "$(cat "$d/server2.pid")" \
        "$(cat "$d/redis/redis.pid")" | paste -sd' ')
}
if has_server s1-on; then
    start_stack s1-on on "$S2_CACHE" "${S1_CACHE_FLAGS[@]}"
    if has_server s1-plain; then
        URL[s1-plain]=$PLAIN_URL
        AUTH[s1-plain]=1
        PIDS[s1-plain]=${PIDS[s1-on]}
    fi
fi
if has_server s1-off; then
    start_stack s1-off off 0 "${S1_NOCACHE_FLAGS[@]}"
fi
if has_server s1-base; then
    STACK_BIN=$BASE start_stack s1-base base "$S2_CACHE" "${S1_CACHE_FLAGS[@]}"
fi
for s in "${SERVERS[@]}"; do check "$s"; done
log "servers up: $(for s in "${SERVERS[@]}"; do printf '%s %s  ' "$s" "${URL[$s]}"; done)"

# ---- one measurement ----------------------------------------------------------------------
# proc_sample PID...: "TICKS SWITCHES BUSY": utime+stime of each whole process (/proc/PID/stat,
# clock ticks) and voluntary+nonvoluntary context switches of each of its threads, summed; and
# the whole machine's busy ticks (/proc/stat: user nice system irq softirq steal)
proc_sample() {
    local p files=(/proc/stat)
    for p in "$@"; do files+=("/proc/$p/stat" /proc/"$p"/task/*/status); done
    awk 'FILENAME == "/proc/stat" { if ($1 == "cpu") m = $2 + $3 + $4 + $7 + $8 + $9; next }
        FILENAME ~ /\/stat$/ { s = $0; sub(/^.*\) /, "", s); split(s, f, " "); t += f[12] + f[13]; nextfile }
        /^(non)?voluntary_ctxt_switches:/ { c += $2 }
        END { printf "%d %d %d\n", t, c, m }' "${files[@]}" 2>/dev/null || true
}
# children_cpu_ms FILE: user+sys ms of the waited-for children, from the second line of `times`
children_cpu_ms() {
    awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub(/s$/, "", a[2]); t += a[1] * 60 + a[2] }
        printf "%d\n", t * 1000 }' "$1"
}

# run_gen GEN SERVER CELL_FILE CONNS SECS: one run of the generator in the foreground of this
# shell (so that `times` counts its CPU; nothing else forks around it), output in $RUN/gen.out
# (wrk) or $RUN/lg/ (loadgen; removed before each run)
run_gen() {
    local gen=$1 s=$2 f=${CELL_FILE[$3]} c=$4 secs=$5 rc=0 extra=() how=() tls=("${LG_TLS[@]}")
    read -ra how <<<"${CELL_LG[$3]:-}"
    if [[ ${URL[$s]} == http://* ]]; then
        tls=()
    elif [[ $3 == *-new ]]; then
        how+=(--tls-resume off)
    fi
    case $gen in
    wrk)
        [[ -z ${AUTH[$s]:-} ]] || extra=(-H "Authorization: Basic $B64")
        timeout --foreground -k 5 $((secs + 60)) wrk -t $((c < 2 ? c : 2)) -c "$c" -d "${secs}s" \
            --timeout 30s --latency "${extra[@]}" "${URL[$s]}/files/$f" >"$RUN/gen.out" 2>&1 || rc=$?
        ;;
    loadgen)
        [[ -z ${AUTH[$s]:-} ]] || extra=(--username bench --password "$PW")
        # a window of exactly $secs (--window-max 0), as wrk's -d: the generators measure alike
        timeout --foreground -k 5 $((secs + 60)) "$BIN_DIR/loadgen" --url "${URL[$s]}" --file "$f" \
            --expect-length "${FILE_BYTES[$f]}" -u "$c" -t 2 -d "$secs" --window-max 0 --warmup 0 \
            --timeout 30 "${extra[@]}" "${how[@]}" "${tls[@]}" -o "$RUN/lg" >"$RUN/gen.out" 2>&1 || rc=$?
        ;;
    esac
    ((rc != 130)) || exit 130
    ((rc == 0)) || die "$gen against $s ($f, $c conns) exited $rc: $(tail -n 3 "$RUN/gen.out" | tr '\n' ' ')"
}

# gen_figures GEN: "REQUESTS ERRORS WINDOW_S REQ_S P50_MS P99_MS" of the last run_gen
gen_figures() {
    case $1 in
    wrk)
        awk 'function ms(v) {
                if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0
                if (v ~ /m$/) return v * 60000; if (v ~ /h$/) return v * 3600000
                if (v ~ /s$/) return v * 1000; return v + 0 }
            $1 == "50%" { p50 = ms($2) }
            $1 == "99%" { p99 = ms($2) }
            / requests in / { n = $1; w = $4; sub(/,$/, "", w); w = ms(w) / 1000 }
            /Non-2xx or 3xx responses:/ { e += $NF }
            /Socket errors:/ { e += $4 + $6 + $8 + $10 }
            /^Requests\/sec:/ { x = $2 }
            END { if (n == "" || x == "" || p99 == "") exit 1
                  printf "%d %d %.3f %.3f %.4f %.4f\n", n, e, w, x, p50, p99 }' "$RUN/gen.out" ||
            die "cannot read wrk's output: $(tr '\n' ' ' <"$RUN/gen.out")"
        ;;
    loadgen)
        local row
        row=$(csv_get "$RUN/lg/points.csv" 'c["type"] == "all"' ok errors window_s x_rps p50_ms p99_ms 2>/dev/null) || true
        [[ -n $row ]] || die "no figures in loadgen's points.csv: $(tail -n 3 "$RUN/gen.out" | tr '\n' ' ')"
        awk -F'\t' '{ printf "%d %d %.3f %.3f %.4f %.4f\n", $1 + $2, $2, $3, $4, $5, $6 }' <<<"$row"
        ;;
    esac
}

RAW=$OUT/raw.tsv
printf 'round\tfile\tconns\tgen\tgen_threads\tserver\trequests\terrors\twindow_s\treq_s\tMB_s\tp50_ms\tp99_ms\tgen_cpu_cores\tserver_cpu_cores\tserver_cpu_us_per_req\tctxsw_per_req\tother_cpu_cores\n' >"$RAW"

# measure ROUND FILE CONNS GEN SERVER: warm-up, measured window, one row of raw.tsv
measure() {
    local r=$1 f=$2 c=$3 gen=$4 s=$5 pid a0 a1 w0 w1 g0 g1 figs threads
    for pid in ${PIDS[$s]}; do
        pid_alive "$pid" || die "$s: process $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo gone)) is gone; logs under $RUN"
    done
    rm -rf "$RUN/lg"
    run_gen "$gen" "$s" "$f" "$c" 1 # warm-up
    rm -rf "$RUN/lg"
    # shellcheck disable=SC2086 # PIDS holds a list
    a0=$(proc_sample ${PIDS[$s]})
    times >"$RUN/times0"
    w0=${EPOCHREALTIME//[!0-9]/} # microseconds, without forking
    run_gen "$gen" "$s" "$f" "$c" "$SECS"
    w1=${EPOCHREALTIME//[!0-9]/}
    times >"$RUN/times1"
    # shellcheck disable=SC2086
    a1=$(proc_sample ${PIDS[$s]})
    g0=$(children_cpu_ms "$RUN/times0")
    g1=$(children_cpu_ms "$RUN/times1")
    figs=$(gen_figures "$gen")
    threads=$((c < 2 ? c : 2))
    awk -v r="$r" -v f="$f" -v c="$c" -v gen="$gen" -v th="$threads" -v s="$s" \
        -v figs="$figs" -v a0="$a0" -v a1="$a1" -v wall_ms=$(((10#$w1 - 10#$w0) / 1000)) -v gms=$((g1 - g0)) \
        -v clk="$CLK_TCK" -v bytes="${FILE_BYTES[$f]}" 'BEGIN {
            split(figs, x, " "); split(a0, p, " "); split(a1, q, " ")
            n = x[1]; wall = wall_ms / 1000; scpu = (q[1] - p[1]) / clk
            if (n <= 0) { print "no request completed" > "/dev/stderr"; exit 1 }
            gcpu = gms / 1000 / wall; mcpu = (q[3] - p[3]) / clk / wall
            printf "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.3f\t%.1f\t%.2f\t%.4f\t%.4f\t%.3f\t%.3f\t%.2f\t%.4f\t%.3f\n",
                r, f, c, gen, th, s, n, x[2], x[3], x[4], x[4] * bytes / 1e6, x[5], x[6],
                gcpu, scpu / wall, scpu / n * 1e6, (q[2] - p[2]) / n, mcpu - gcpu - scpu / wall
        }' >>"$RAW" || die "$gen against $s ($f, $c conns): no request completed"
    tail -n 1 "$RAW" | awk -F'\t' -v l="${LABEL[$s]}" '{ printf "  %-24s %-7s %5s x%-3s %10.0f req/s %9.1f MB/s  p99 %8.3f ms  cpu gen %.2f srv %.2f rest %.2f  cs/req %.2f%s\n",
        l, $4, $2, $3, $10, $11, $13, $14, $15, $18, $17, ($8 > 0 ? "  ERRORS " $8 : "") }' >&2
    [[ $(tail -n 1 "$RAW" | cut -f8) == 0 ]] || log "warning: $gen against $s ($f, $c conns): $(tail -n 1 "$RAW" | cut -f8) errors"
}

# ---- the rounds ---------------------------------------------------------------------------
# skip CELL GEN: wrk keeps its connections, so it has no new-connection loads
skip() { [[ $2 == wrk && -n ${CELL_LG[$1]:-} ]]; }
n_meas=0
for cell in "${CELLS[@]}"; do
    for gen in "${GEN_LIST[@]}"; do
        skip "${cell%%:*}" "$gen" || n_meas=$((n_meas + ROUNDS * ${#SERVERS[@]}))
    done
done
((n_meas > 0)) || die "nothing to measure: wrk has no new-connection loads (--gen loadgen)"
log "$n_meas windows of $SECS s (+1 s warm-up each): about $((n_meas * (SECS * 10 + 15) / 600)) min"
T0=$(now_ms)
done_n=0
for ((r = 1; r <= ROUNDS; r++)); do
    for ((ci = 0; ci < ${#CELLS[@]}; ci++)); do
        f=${CELLS[ci]%%:*}
        c=${CELLS[ci]##*:}
        # generators alternate, and the servers' order rotates, from round to round (and cell)
        gens=("${GEN_LIST[@]}")
        if (((r + ci) % 2 == 0)) && ((${#gens[@]} == 2)); then gens=("${gens[1]}" "${gens[0]}"); fi
        k=$(((r - 1 + ci) % ${#SERVERS[@]}))
        order=("${SERVERS[@]:k}" "${SERVERS[@]:0:k}")
        for gen in "${gens[@]}"; do
            ! skip "$f" "$gen" || continue
            log "round $r/$ROUNDS: $f at $c connections, $gen ($((done_n * 100 / n_meas))% done)"
            for s in "${order[@]}"; do
                measure "$r" "$f" "$c" "$gen" "$s"
                done_n=$((done_n + 1))
            done
        done
    done
done
ELAPSED=$((($(now_ms) - T0) / 1000))
log "measured in $ELAPSED s"

# ---- report -------------------------------------------------------------------------------
mkdir -p "$OUT/configs"
[[ ! -f $RUN/h2o.conf ]] || cp "$RUN/h2o.conf" "$OUT/configs/"
[[ ! -f $RUN/nginx.conf ]] || cp "$RUN/nginx.conf" "$OUT/configs/"
MACHINE=""
if [[ -x $TOP/scripts/machine-info.sh ]]; then
    BIN_DIR=$BIN_DIR "$TOP/scripts/machine-info.sh" "$FILES" >"$OUT/machine.md" 2>/dev/null ||
        log "warning: scripts/machine-info.sh failed"
    MACHINE=$OUT/machine.md
fi
{
    echo "# Hot path next to static servers: GETs of one file"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), host $(hostname -s), $(nproc) CPUs; \`scripts/bench-hotpath.sh${ARGS:+ $ARGS}\`;"
    echo "$ROUNDS round(s); per window a 1 s warm-up run of the same generator, then $SECS s measured;"
    echo "servers in rotating order, generators alternating; measured in $ELAPSED s."
    if [[ -n $TLS ]]; then
        echo "Over HTTPS: every server listens with TLS 1.3 only, one ECDSA P-256 certificate"
        echo "(scripts/tls-certs.sh), session tickets and a cache; the generators keep their"
        echo "connections (one handshake each) and let OpenSSL choose the cipher; nginx with"
        echo "kTLS $KTLS (used only where the kernel has its tls module)."
    fi
    if [[ $LOADS == *KB-new* || $LOADS == *KB-resumed* ]]; then
        echo "1KB-new and 1KB-resumed: the same 1 KB GET over a new connection per request (loadgen"
        echo "\`--new-conn-per-request\`; wrk has no such mode)${TLS:+: with resumption off, a full}"
        echo "${TLS:+handshake per request; with it on, a resumed one (a ticket; loadgen counts both)}."
    fi
    if has_server s1-plain; then
        echo "server1 caches on, plain HTTP: the plain port of the same server1 (the same processes)."
    fi
    if has_server nginx-plain; then
        echo "nginx static, plain HTTP: a plain server block of the same nginx (the same processes)."
    fi
    echo
    echo "| server | what ran |"
    echo "|---|---|"
    for s in "${SERVERS[@]}"; do
        case $s in
        h2o) what="${VER[h2o]}: num-threads 2, file.dir, no access log (configs/h2o.conf)" ;;
        nginx) what="nginx ${VER[nginx]}: 2 workers, open_file_cache max=1000, sendfile on, access_log off (configs/nginx.conf)" ;;
        nginx-auth) what="the same nginx, second server block: auth_basic, htpasswd entry {SHA} (base64 of SHA-1 of the password)" ;;
        s1-on | s1-off)
            d=on cache=$S2_CACHE fl=("${S1_CACHE_FLAGS[@]}")
            [[ $s == s1-on ]] || { d=off cache=0 fl=("${S1_NOCACHE_FLAGS[@]}"); }
            what="server1 ${VER[server1]} \`${S1_COMMON[*]}${fl[*]:+ ${fl[*]}}\` → server2 ${VER[server2]} \`--mode threads --workers 2 --hash-cost min --auth-cache $cache\` → Redis ${VER[redis]}"
            [[ -n $S1_HAS_CACHE ]] || what+="; this server1 has no --auth-cache flag: server1's own cache flags left out"
            ;;
        s1-base)
            what="the same as server1 caches on, from the build in \`$BASE\`: server1 ${VER[base1]}, server2 ${VER[base2]}"
            ;;
        s1-plain) what="the plain-HTTP port of server1 caches on (the same processes)" ;;
        nginx-plain) what="the same nginx, a third server block without ssl: open_file_cache max=1000, sendfile on" ;;
        esac
        echo "| ${LABEL[$s]} ($s) | $what |"
    done
    echo
    for g in "${GEN_LIST[@]}"; do
        case $g in
        wrk) echo "Generator wrk: ${VER[wrk]} (\`-t 2\`, \`-t 1\` at 1 connection; \`--latency\`; reads bodies into user space)." ;;
        loadgen) echo "Generator loadgen: ${VER[loadgen]} (\`-t 2\`, at most one per connection; \`--warmup 0\` after the separate warm-up run; bodies discarded in the kernel with MSG_TRUNC)." ;;
        esac
    done
    echo "Both send Basic credentials (\`-H Authorization\` / \`--username --password\`) to nginx auth_basic and server1."
    echo "req/s and p50/p99: the generator's own figures; MB/s = req/s × file size / 10⁶;"
    echo "CPU in cores and context switches: /proc deltas over the generator's whole measured run"
    echo "(start to exit; server: all its processes, h2o / nginx master + workers / server1 + server2 + redis-server;"
    echo "generator: its user + system time); switches per request = voluntary + nonvoluntary of every thread"
    echo "of the server's processes, divided by the requests the generator completed. \"rest CPU\": the"
    echo "machine's busy cores (/proc/stat) less generator and server: kernel work charged to neither"
    echo "(e.g. softirq) plus anything else running; well above ~0.1 means the window shared the machine"
    echo "(slightly negative values: the generator's time is exact, /proc/stat counts clock ticks)."
    echo "Generator, servers and Redis share the machine's $(nproc) CPUs."
    echo
    if has_server s1-on || has_server s1-off || has_server s1-base; then
        for d in on off base; do
            [[ -f $RUN/$d/server1.log ]] || continue
            grep -h 'config:' "$RUN/$d/server1.log" "$RUN/$d/server2.log" 2>/dev/null | sed "s/^/    s1-$d /"
        done
        echo
    fi
} >"$OUT/report.md"
python3 - "$RAW" "$OUT/medians.tsv" "${SERVERS[*]}" "${GEN_LIST[*]}" "$LOADS" >>"$OUT/report.md" <<'PY'
import csv, statistics, sys
raw, medout = sys.argv[1], sys.argv[2]
servers, gens = sys.argv[3].split(), sys.argv[4].split()
cells = [(c.split(":")[0], int(c.split(":")[1])) for c in sys.argv[5].split(",")]
label = {"h2o": "h2o static", "nginx": "nginx static", "nginx-auth": "nginx auth_basic {SHA}",
         "s1-on": "server1 caches on", "s1-off": "server1 caches off",
         "s1-base": "server1 caches on, base build", "s1-plain": "server1 caches on, plain HTTP",
         "nginx-plain": "nginx static, plain HTTP"}
rows = list(csv.DictReader(open(raw), delimiter="\t"))
cols = ["req_s", "MB_s", "p50_ms", "p99_ms", "gen_cpu_cores", "server_cpu_cores",
        "server_cpu_us_per_req", "ctxsw_per_req", "other_cpu_cores"]
fmt = {"req_s": "%.0f", "MB_s": "%.1f", "p50_ms": "%.3f", "p99_ms": "%.3f", "gen_cpu_cores": "%.2f",
       "server_cpu_cores": "%.2f", "server_cpu_us_per_req": "%.1f", "ctxsw_per_req": "%.3f",
       "other_cpu_cores": "%.2f"}
head = ["req/s", "MB/s", "p50 ms", "p99 ms", "gen CPU", "server CPU", "server CPU µs/req",
        "server cs/req", "rest CPU"]

print("## Every round\n")
print("| round | file | conns | gen | threads | server | requests | errors | window s | " +
      " | ".join(head) + " |")
print("|" + "---|" * (9 + len(head)))
for r in rows:
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | " % (
        r["round"], r["file"], r["conns"], r["gen"], r["gen_threads"], label[r["server"]],
        r["requests"], r["errors"], r["window_s"]) +
        " | ".join(fmt[c] % float(r[c]) for c in cols) + " |")
print("\nRaw: `raw.tsv` (tab-separated, one line per window).\n")
busy = [r for r in rows if float(r["other_cpu_cores"]) > 0.3]
print("Windows whose rest CPU was above 0.30 cores (other work on the machine, most likely): "
      "%d of %d%s.\n" % (len(busy), len(rows), "".join(
          [": " + ", ".join("round %s %s x%s %s %s (%.2f)" % (r["round"], r["file"], r["conns"], r["gen"],
                                                            r["server"], float(r["other_cpu_cores"]))
                            for r in busy)] if busy else [])))

med = {}
for f, c in cells:
    for g in gens:
        for s in servers:
            pts = [r for r in rows if r["file"] == f and int(r["conns"]) == c and r["gen"] == g
                   and r["server"] == s]
            if pts:
                med[f, c, g, s] = ({k: statistics.median(float(p[k]) for p in pts) for k in cols},
                                   sum(int(p["errors"]) for p in pts), len(pts))
with open(medout, "w") as out:
    out.write("file\tconns\tgen\tserver\trounds\terrors\t" + "\t".join(cols) + "\n")
    for (f, c, g, s), (m, e, n) in med.items():
        out.write("%s\t%d\t%s\t%s\t%d\t%d\t" % (f, c, g, s, n, e) +
                  "\t".join(fmt[k] % m[k] for k in cols) + "\n")

nr = max((v[2] for v in med.values()), default=0)
print("## Medians (%d round%s)\n" % (nr, "" if nr == 1 else "s"))
print("| file | conns | gen | server | " + " | ".join(head) + " | errors (all rounds) |")
print("|" + "---|" * (5 + len(head)))
for (f, c, g, s), (m, e, n) in med.items():
    print("| %s | %d | %s | %s | " % (f, c, g, label[s]) + " | ".join(fmt[k] % m[k] for k in cols) +
          " | %d%s |" % (e, "" if e == 0 else " ⚠"))
print("\nmedians.tsv holds the same figures.\n")

def ratio(f, c, g, a, b, k="req_s"):
    if (f, c, g, a) not in med or (f, c, g, b) not in med:
        return "n/a"
    x, y = med[f, c, g, a][0][k], med[f, c, g, b][0][k]
    flag = " ⚠" if med[f, c, g, a][1] or med[f, c, g, b][1] else ""
    return ("%.2f" % (x / y) if y else "n/a") + flag

pairs = [("s1-on", "nginx"), ("s1-on", "h2o"), ("s1-off", "nginx-auth")]
if "s1-plain" in servers:
    pairs.append(("s1-on", "s1-plain"))
if "nginx-plain" in servers:
    pairs.append(("nginx", "nginx-plain"))
print("## Ratios of the median req/s\n")
print("| file | conns | gen | " + " | ".join("%s ÷ %s" % (label[a], label[b]) for a, b in pairs) + " |")
print("|" + "---|" * (3 + len(pairs)))
for f, c in cells:
    for g in gens:
        print("| %s | %d | %s | " % (f, c, g) + " | ".join(ratio(f, c, g, a, b) for a, b in pairs) + " |")
big = [(f, c) for f, c in cells if f == "100MB"]
if big:
    pairs = [("s1-on", "h2o"), ("s1-on", "nginx"), ("s1-off", "h2o"), ("s1-off", "nginx")]
    print("\n## 100 MB: ratios of the median MB/s\n")
    print("| conns | gen | " + " | ".join("%s MB/s" % label[s] for s in ("s1-on", "s1-off", "h2o", "nginx")) +
          " | " + " | ".join("%s ÷ %s" % (label[a], label[b]) for a, b in pairs) + " |")
    print("|" + "---|" * (2 + 4 + len(pairs)))
    for f, c in big:
        for g in gens:
            mb = ["%.1f" % med[f, c, g, s][0]["MB_s"] if (f, c, g, s) in med else "n/a"
                  for s in ("s1-on", "s1-off", "h2o", "nginx")]
            print("| %d | %s | " % (c, g) + " | ".join(mb) + " | " +
                  " | ".join(ratio(f, c, g, a, b, "MB_s") for a, b in pairs) + " |")
if "s1-base" in servers and "s1-on" in servers:
    # each round's pair (s1-on, s1-base) ran back to back, in an order that alternates
    print("\n## This build ÷ the base build, pair by pair\n")
    print("| file | conns | gen | req/s ratio of each round's pair | median of the ratios | "
          "server CPU µs/req, medians: this / base |")
    print("|---|---|---|---|---|---|")
    for f, c in cells:
        for g in gens:
            pick = lambda s: {r["round"]: r for r in rows if r["file"] == f and int(r["conns"]) == c
                              and r["gen"] == g and r["server"] == s}
            a, b = pick("s1-on"), pick("s1-base")
            rs = [float(a[k]["req_s"]) / float(b[k]["req_s"]) for k in sorted(a, key=int)
                  if k in b and float(b[k]["req_s"]) > 0]
            if not rs:
                continue
            cpu = lambda d: statistics.median(float(r["server_cpu_us_per_req"]) for r in d.values())
            print("| %s | %d | %s | %s | **%.3f** | %.2f / %.2f |" % (
                f, c, g, " ".join("%.3f" % x for x in rs), statistics.median(rs), cpu(a), cpu(b)))
if any(v[1] for v in med.values()):
    print("\n⚠: some request of that cell failed (see the errors column); its figures include failures.\n")
PY
if [[ -n $MACHINE ]]; then
    { echo; sed 's/^# Machine/## Machine/' "$MACHINE"; } >>"$OUT/report.md"
fi
cat "$OUT/report.md"
log "report, raw.tsv and medians.tsv in $OUT"
