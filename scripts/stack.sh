#!/usr/bin/env bash
# Start or stop the whole stack on loopback: a throw-away Redis or MariaDB, server2 and server1,
# everything under one run directory (logs, data, pids). Used by the README's quick start and by
# the reproduction run.
#
#   scripts/stack.sh start DIR [--backend redis|mysql] [--mode threads|processes]
#                              [--workers N] [--hash-cost min|interactive|moderate]
#                              [--auth-cache N] [--login-fail-limit N/DUR] [--root FILES]
#                              [--port N] [-- SERVER1_FLAGS...]
#   scripts/stack.sh stop DIR [--servers]      (--servers: server1 and server2 only, keep the database)
#
# start reuses a database already running under DIR (so several stacks can share one in turn).
# start prints the server1 URL on stdout (http://127.0.0.1:PORT) and writes it to DIR/url; its
# /metrics is on a port of its own (--metrics-listen 127.0.0.1:0; a later one in SERVER1_FLAGS
# wins), whose URL (http://127.0.0.1:PORT/metrics) start writes to DIR/metrics-url.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

usage() {
    sed -n '6,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# start_prog DIR NAME ARGS...: run $BIN_DIR/NAME in the background, wait for its
# "listening on" line, print the port.
start_prog() {
    local dir=$1 name=$2 log pid port
    shift 2
    log=$dir/$name.log
    setsid "$BIN_DIR/$name" "$@" >"$log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/$name.pid"
    wait_until 15 grep -q 'listening on ' "$log" || die "$name did not start: $(tail -n 3 "$log")"
    port=$(grep -m1 -o 'listening on [^ ]*' "$log")
    echo "${port##*:}"
}

stop_pidfile() {
    local f=$1 pid
    [[ -f $f ]] || return 0
    pid=$(cat "$f")
    ! pid_alive "$pid" || stop_process "${f##*/}" "$pid" 20
    rm -f "$f"
}

cmd_stop() {
    local dir=$1
    [[ -d $dir ]] || return 0
    stop_pidfile "$dir/server1.pid"
    stop_pidfile "$dir/server2.pid"
    [[ ${2:-} != --servers ]] || return 0
    "$TOP/scripts/redis.sh" stop "$dir/redis" || true
    "$TOP/scripts/mysql.sh" stop "$dir/mysql" || true
}

cmd_start() {
    local dir=$1 backend=redis mode=threads workers=2 cost=min cache=0 root="" port=8080
    local lfl=()
    shift
    while (($# > 0)); do
        case $1 in
        --backend) backend=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --hash-cost) cost=$2; shift 2 ;;
        --auth-cache) cache=$2; shift 2 ;;
        --login-fail-limit) lfl=(--login-fail-limit "$2"); shift 2 ;;
        --root) root=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --) shift; break ;;
        *) usage ;;
        esac
    done
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # a start that fails half-way stops what it had started (a global: the trap runs after
    # cmd_start's locals are gone)
    STACK_DIR=$dir
    trap '[[ -n ${STARTED:-} ]] || cmd_stop "$STACK_DIR"' EXIT
    [[ -x $BIN_DIR/server1 && -x $BIN_DIR/server2 ]] || die "no binaries in $BIN_DIR: run make"
    if [[ -z $root ]]; then
        root=$dir/files
        mkdir -p "$root"
        [[ -f $root/hello.txt ]] || echo "hello from server1" >"$root/hello.txt"
    fi
    local url pwfile
    case $backend in
    redis)
        url=redis://127.0.0.1:$("$TOP/scripts/redis.sh" start "$dir/redis")
        pwfile=$dir/redis/password
        ;;
    mysql)
        "$TOP/scripts/mysql.sh" start "$dir/mysql" >/dev/null
        url="mysql://auth@localhost/auth?socket=$dir/mysql/mysqld.sock"
        pwfile=$dir/mysql/password
        ;;
    *) die "--backend must be redis or mysql, not '$backend'" ;;
    esac
    # the secret that authenticates the server1 <-> server2 link (docs/protocol.md): made once
    # per DIR, readable by the owner only, given to both
    local secret=$dir/link.secret
    if [[ ! -s $secret ]]; then
        (umask 077 && head -c 32 /dev/urandom >"$secret") || die "cannot write $secret"
    fi
    local p2 p1
    p2=$(start_prog "$dir" server2 --port 0 --backend "$url" \
        --backend-password-file "$pwfile" --mode "$mode" --workers "$workers" \
        --hash-cost "$cost" --auth-cache "$cache" "${lfl[@]}" --secret-file "$secret")
    local mport metrics=()
    # (a server1 older than --metrics-listen serves /metrics on its public port)
    grep -q -- --metrics-listen <<<"$("$BIN_DIR/server1" --help)" &&
        metrics=(--metrics-listen 127.0.0.1:0)
    p1=$(start_prog "$dir" server1 --port "$port" --root "$root" --auth "127.0.0.1:$p2" \
        --auth-secret-file "$secret" "${metrics[@]}" "$@")
    if mport=$(grep -m1 -o 'serving /metrics on [^ ]*' "$dir/server1.log"); then
        echo "http://127.0.0.1:${mport##*:}/metrics" >"$dir/metrics-url"
    else
        echo "http://127.0.0.1:$p1/metrics" >"$dir/metrics-url"
    fi
    echo "http://127.0.0.1:$p1" | tee "$dir/url"
    STARTED=1
    log "stack up: server1 :$p1 -> server2 :$p2 -> $backend; logs in $dir; stop: $0 stop $dir"
}

case ${1:-} in
start) [[ $# -ge 2 ]] || usage; shift; cmd_start "$@" ;;
stop)
    [[ $# -eq 2 || ($# -eq 3 && $3 == --servers) ]] || usage
    cmd_stop "$2" "${3:-}"
    ;;
*) usage ;;
esac
