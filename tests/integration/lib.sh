# shellcheck shell=bash
# Sourced by integration tests:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   itest_init NAME                  # run dir $ITEST_DIR, set -euo pipefail, cleanup trap
#   itest_timeout 120                # whole test killed (and cleaned up) after 120 s
#   port=$(itest_redis_start)        # redis under $ITEST_DIR/redis (or itest_mysql_start)
#   "$BIN_DIR/server2" ... >"$ITEST_DIR/server2.log" 2>&1 &    # BIN_DIR: set by tests/run-integration.sh
#   itest_bg $!                      # stopped at exit (SIGTERM, then SIGKILL after 10 s)
#   check_eq "status of GET /healthz" "$(curl -s -o /dev/null -w '%{http_code}' ...)" 200
#   itest_summary                    # last line "N passed, M failed"; exit 1 if any failed
#
# At exit, whatever the reason (end of script, failed command under set -e,
# itest_fail, timeout, SIGINT/SIGTERM), everything registered is stopped, newest
# first; on failure the tail of every *.log / *.err under $ITEST_DIR is printed and
# the run dir is kept, on success it is removed (ITEST_KEEP=1 keeps it).  The last
# line printed is always "N passed, M failed".
# Registrations are kept in a file, so helpers work inside $(...) too; the pass
# and fail counters are shell variables, so call check_* / itest_ok in the main shell.
# Don't use a bare `wait` for "all background jobs" if you itest_bg long-lived
# servers; wait for specific pids.
#
# Over HTTPS: with ITEST_TLS=1 in the environment, every server1 a test starts through
# itest_start (or s1lib.sh's start_s1) also gets a throw-away certificate (scripts/tls-certs.sh,
# made once per run dir under $ITEST_DIR/tls) and --tls-port 0, and the test talks to its TLS
# port: ITEST_PORT (S1_PORT) is that port, ITEST_URL (S1) is https://127.0.0.1:PORT, the plain
# port is in ITEST_PLAIN_PORT (S1_PLAIN_PORT). Clients follow the environment set here: curl
# (CURL_CA_BUNDLE), wget (WGETRC), Python (ITEST_TLS_CA, SSL_CERT_FILE; the clients connect
# through itls.py), Chromium (ITEST_CHROMIUM_TLS: the server key's pin). Each server1 started
# is asked once for /healthz over TLS: its certificate must verify and server1 must count the
# handshake (in its /metrics), or the test fails; so does a test that started no server1 over
# HTTPS. Only a test
# that carries the line
#   # itest-https: yes
# runs over HTTPS; under ITEST_TLS=1 itest_init ends any other test at once, printing why
# (its "# itest-https: no REASON" line, if it has one), with exit status 0.

ITEST_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ITEST_ROOT
# shellcheck source-path=SCRIPTDIR/../.. source=scripts/lib.sh
source "$ITEST_ROOT/scripts/lib.sh"

ITEST_PASS=0
ITEST_FAIL=0
ITEST_ENDING=""      # set by itest_summary / itest_fail: the exit is deliberate
ITEST_WATCHDOG=""

itest_init() {
    local name=${1:?usage: itest_init NAME}
    set -euo pipefail
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "itest_init: bad test name '$name'"
    ITEST_NAME=$name
    ITEST_PID=$BASHPID
    ITEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/itest-$name.XXXXXX")
    export ITEST_NAME ITEST_DIR
    : >"$ITEST_DIR/.cleanup"
    trap _itest_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap '_itest_err $LINENO "$BASH_COMMAND"' ERR
    log "$name: run dir $ITEST_DIR"
    if itest_tls && ! grep -q '^# itest-https: yes' "$0"; then
        local why
        why=$(sed -n 's/^# itest-https: no *//p' "$0" | head -n1)
        log "$name: not run over HTTPS: ${why:-not marked \"# itest-https: yes\"}"
        ITEST_TLS_SKIP=1
        itest_summary
    fi
    ! itest_tls || log "$name: over HTTPS (ITEST_TLS=1)"
}

# itest_tls: true if this run speaks HTTPS to server1 (ITEST_TLS=1).
itest_tls() { [[ ${ITEST_TLS:-0} == 1 ]]; }

# itest_tls_setup: under ITEST_TLS=1, the run's certificates (once per run dir) and the clients'
# environment; sets ITEST_TLS_ARGS, the flags that give server1 its HTTPS port. Call it in the
# test's own shell (start_s1 and itest_start do).
itest_tls_setup() {
    ITEST_TLS_ARGS=()
    itest_tls || return 0
    local dir=$ITEST_DIR/tls
    if [[ ! -s $dir/server.pem ]]; then
        "$ITEST_ROOT/scripts/tls-certs.sh" "$dir" >/dev/null ||
            itest_fail "cannot make certificates"
    fi
    export ITEST_TLS_CA=$dir/ca.pem CURL_CA_BUNDLE=$dir/ca.pem SSL_CERT_FILE=$dir/ca.pem
    printf 'ca_certificate = %s\n' "$dir/ca.pem" >"$dir/wgetrc"
    export WGETRC=$dir/wgetrc
    if [[ -z ${ITEST_CHROMIUM_TLS:-} ]]; then
        ITEST_CHROMIUM_TLS=--ignore-certificate-errors-spki-list=$(openssl pkey \
            -in "$dir/server.key" -pubout -outform der | openssl dgst -sha256 -binary | base64)
        export ITEST_CHROMIUM_TLS
    fi
    ITEST_TLS_ARGS=(--tls-cert "$dir/server.pem" --tls-key "$dir/server.key" --tls-port 0)
}

# itest_s1_metrics_args ARGS...: prints --metrics-listen 127.0.0.1:0 (one per line) unless ARGS,
# a server1 command line, names a --metrics-listen of its own: every server1 a test starts
# through itest_start or start_s1 serves /metrics on a free loopback port (ITEST_METRICS_URL).
itest_s1_metrics_args() {
    [[ " $* " == *" --metrics-listen "* ]] || printf '%s\n' --metrics-listen 127.0.0.1:0
}

# itest_s1_listening NAME LOG SECS: wait SECS for server1's "listening on" line (and, under
# ITEST_TLS=1, its "listening for https on" one) in LOG; sets ITEST_PORT (the port the test
# talks to), ITEST_PLAIN_PORT, ITEST_URL and, with a --metrics-listen, ITEST_METRICS_PORT and
# ITEST_METRICS_URL (http://127.0.0.1:PORT/metrics; else both empty); over HTTPS, asks it for
# /healthz once (itls.py probe, which reads until server1 has closed that connection) and fails
# the test unless the certificate verified and server1 counted a TLS handshake (in /metrics).
# 1 if it did not start.
itest_s1_listening() {
    local name=$1 log=$2 secs=$3 want='listening on ' port got
    itest_tls && want='listening for https on '
    wait_until "$secs" grep -q "$want" "$log" || return 1
    port=$(grep -m1 -o ' listening on [^ ]*' "$log")
    ITEST_PLAIN_PORT=${port##*:}
    ITEST_PORT=$ITEST_PLAIN_PORT
    ITEST_URL=http://127.0.0.1:$ITEST_PORT
    ITEST_METRICS_PORT=""
    ITEST_METRICS_URL=""
    if port=$(grep -m1 -o 'serving /metrics on [^ ]*' "$log"); then
        ITEST_METRICS_PORT=${port##*:}
        # shellcheck disable=SC2034  # (read by the sourcing test)
        ITEST_METRICS_URL=http://127.0.0.1:$ITEST_METRICS_PORT/metrics
    fi
    itest_tls || return 0
    port=$(grep -m1 -o 'listening for https on [^ ]*' "$log")
    ITEST_PORT=${port##*:}
    ITEST_URL=https://127.0.0.1:$ITEST_PORT
    [[ -n $ITEST_METRICS_PORT ]] || itest_fail "$name: over HTTPS without --metrics-listen"
    got=$(python3 "$ITEST_ROOT/tests/integration/itls.py" probe "$ITEST_PORT" "$ITEST_METRICS_PORT") ||
        itest_fail "$name: no verified HTTPS answer on $ITEST_URL ($got)"
    printf '%s %s %s\n' "$name" "$ITEST_URL" "$got" >>"$ITEST_DIR/.https"
}

itest_ok() {
    ITEST_PASS=$((ITEST_PASS + 1))
    printf 'ok - %s\n' "$*"
}

# Record a failure and carry on.
itest_not_ok() {
    ITEST_FAIL=$((ITEST_FAIL + 1))
    printf 'FAIL - %s\n' "$*"
}

# Record a failure and stop the test.
itest_fail() {
    itest_not_ok "$*"
    ITEST_ENDING=fail
    exit 1
}

check_eq() {
    local desc=$1 got=$2 want=$3
    if [[ $got == "$want" ]]; then
        itest_ok "$desc"
    else
        itest_not_ok "$desc: got '$got', want '$want'"
    fi
}

# check_ok DESC CMD...: passes if CMD exits 0.
check_ok() {
    local desc=$1 rc=0; shift
    "$@" || rc=$?
    if ((rc == 0)); then itest_ok "$desc"; else itest_not_ok "$desc: '$*' exited $rc"; fi
}

itest_summary() {
    ITEST_ENDING=summary
    exit $((ITEST_FAIL > 0))
}

# itest_bg PID...: stop these processes at exit.
itest_bg() {
    local pid
    for pid in "$@"; do
        [[ $pid =~ ^[0-9]+$ ]] || die "itest_bg: bad pid '$pid'"
        printf 'pid %s\n' "$pid" >>"$ITEST_DIR/.cleanup"
    done
}

# itest_redis_start [SUBDIR [PORT]] / itest_mysql_start [SUBDIR [PORT]]:
# start under $ITEST_DIR/SUBDIR (default redis / mysql), print the port, stop at exit.
itest_redis_start() { _itest_server redis "${1:-redis}" "${2:-}"; }

# itest_redis_shared NAME...: one password for the Redis instances NAME... under $ITEST_DIR
# (a replica authenticates to its primary with it), before they start; it is left in PW.
itest_redis_shared() {
    local n
    mkdir -p "$ITEST_DIR/$1"
    ensure_password "$ITEST_DIR/$1/password"
    for n in "${@:2}"; do
        mkdir -p "$ITEST_DIR/$n"
        cp "$ITEST_DIR/$1/password" "$ITEST_DIR/$n/password"
    done
    PW=$(<"$ITEST_DIR/$1/password")
}
itest_mysql_start() { _itest_server mysql "${1:-mysql}" "${2:-}"; }
# itest_server2 NAME URL PASSWORD_FILE [ARGS...]: server2 ($BIN_DIR) on a free port with the
# link secret $ITEST_DIR/link.secret (made if missing) and --hash-cost min, its log
# $ITEST_DIR/NAME.log; stopped at exit; prints the port.
itest_server2() {
    local name=$1 url=$2 pw=$3 log=$ITEST_DIR/$1.log port
    shift 3
    if [[ ! -s $ITEST_DIR/link.secret ]]; then
        head -c 32 /dev/urandom >"$ITEST_DIR/link.secret"
        chmod 600 "$ITEST_DIR/link.secret"
    fi
    "$BIN_DIR/server2" --port 0 --backend "$url" --backend-password-file "$pw" \
        --secret-file "$ITEST_DIR/link.secret" --hash-cost min "$@" >"$log" 2>&1 &
    itest_bg $!
    wait_until 15 grep -q 'listening on ' "$log" || itest_fail "$name did not start"
    port=$(grep -m1 -o 'listening on [^ ]*' "$log")
    printf '%s\n' "${port##*:}"
}

# itest_cluster_down DIR: take down the cluster of scripts/cluster.sh under DIR at exit.
itest_cluster_down() { printf 'cluster %s\n' "$1" >>"$ITEST_DIR/.cleanup"; }

# itest_galera_start SUBDIR N: a Galera cluster of N nodes (scripts/galera.sh) under
# $ITEST_DIR/SUBDIR; prints the client ports, comma-separated; stopped at exit.
itest_galera_start() { _itest_server galera "$1" "$2"; }
# itest_ceph_start SUBDIR: a Ceph cluster (scripts/ceph.sh) under $ITEST_DIR/SUBDIR; prints its
# monitor's address; stopped at exit.
itest_ceph_start() { _itest_server ceph "$1" ""; }
_itest_server() {
    local kind=$1 dir=$ITEST_DIR/$2 port=$3
    printf '%s %s\n' "$kind" "$dir" >>"$ITEST_DIR/.cleanup"
    "$ITEST_ROOT/scripts/$kind.sh" start "$dir" ${port:+"$port"}
}

# itest_timeout SECONDS: after SECONDS, SIGTERM every process descended from the
# test shell and the shell itself (whose exit trap then cleans up); if it is still
# there ITEST_GRACE (default 60) s later, SIGKILL them and clean up from the watchdog.  The watchdog is
# not a child of the test shell (so `wait` does not wait for it) and goes away by
# itself when the test ends.
itest_timeout() {
    local secs=${1:?usage: itest_timeout SECONDS}
    [[ $secs =~ ^[0-9]+$ ]] || die "itest_timeout: bad seconds '$secs'"
    [[ -z $ITEST_WATCHDOG ]] || kill "$ITEST_WATCHDOG" 2>/dev/null || true
    ITEST_WATCHDOG=$(
        _itest_watchdog "$secs" </dev/null >&2 &
        echo $!
    )
}

_itest_watchdog() {
    local secs=$1 deadline pid
    trap - EXIT INT TERM ERR
    deadline=$(($(now_ms) + secs * 1000))
    while (($(now_ms) < deadline)); do
        pid_alive "$ITEST_PID" || exit 0
        sleep 0.2
    done
    echo "$secs" >"$ITEST_DIR/.timeout"
    log "$ITEST_NAME: TIMEOUT after $secs s, stopping the test"
    _itest_signal_tree TERM
    wait_pid_exit "$ITEST_PID" "${ITEST_GRACE:-60}" && exit 0
    log "$ITEST_NAME: test shell still alive ${ITEST_GRACE:-60} s after SIGTERM, killing it"
    _itest_signal_tree KILL
    _itest_cleanup
    _itest_print_logs
    log "$ITEST_NAME: FAILED (timeout, killed); run dir kept: $ITEST_DIR"
}

_itest_signal_tree() {
    local pid
    for pid in $(_itest_descendants "$ITEST_PID") "$ITEST_PID"; do
        kill -"$1" "$pid" 2>/dev/null || true
    done
}

# Print every descendant of process $1 (from /proc, parents before children).
_itest_descendants() {
    local -A kids=()
    local f line pid ppid
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null <"$f" || continue
        pid=${line%% *}
        line=${line##*) }        # "STATE PPID ..." (comm may hold spaces and parens)
        ppid=${line#* }
        ppid=${ppid%% *}
        kids[$ppid]+=" $pid"
    done
    local queue=("$1") kid
    while ((${#queue[@]} > 0)); do
        for kid in ${kids[${queue[0]}]:-}; do
            printf '%s\n' "$kid"
            queue+=("$kid")
        done
        queue=("${queue[@]:1}")
    done
}

# Stop everything registered, newest first.  Idempotent.
_itest_cleanup() {
    local kind arg
    [[ -f $ITEST_DIR/.cleanup ]] || return 0
    while read -r kind arg; do
        case $kind in
        pid)
            pid_alive "$arg" || continue
            kill -TERM "$arg" 2>/dev/null || true
            wait_pid_exit "$arg" 10 || {
                log "pid $arg ignored SIGTERM for 10 s, killing it"
                kill -KILL "$arg" 2>/dev/null || true
            }
            ;;
        redis | mysql | galera | ceph) "$ITEST_ROOT/scripts/$kind.sh" stop "$arg" </dev/null || true ;;
        cluster) "$ITEST_ROOT/scripts/cluster.sh" down "$arg" </dev/null || true ;;
        mount) umount "$arg" 2>/dev/null || umount -l "$arg" 2>/dev/null || true ;;
        esac
    done < <(tac "$ITEST_DIR/.cleanup")
}

# itest_mount_tmpfs DIR SIZE: a tmpfs of SIZE (e.g. 6m) on DIR, unmounted at exit (before the
# run dir is removed). Fails (status 1) where mounting is not allowed.
itest_mount_tmpfs() {
    mkdir -p "$1"
    mount -t tmpfs -o "size=$2,mode=0755" tmpfs "$1" 2>/dev/null || return 1
    printf 'mount %s\n' "$1" >>"$ITEST_DIR/.cleanup"
}

_itest_print_logs() {
    local f
    while IFS= read -r -d '' f; do
        printf '\n===== %s (last 30 lines) =====\n' "${f#"$ITEST_DIR"/}" >&2
        tail -n 30 "$f" >&2
    done < <(find "$ITEST_DIR" \( -name '*.log' -o -name '*.err' \) -type f -print0 | sort -z)
}

_itest_err() {
    log "$ITEST_NAME: line $1: command failed: $2"
}

_itest_exit() {
    local rc=$? https=0
    trap - EXIT ERR
    set +e
    [[ ! -f $ITEST_DIR/.https ]] || https=$(wc -l <"$ITEST_DIR/.https")
    if itest_tls && [[ -z ${ITEST_TLS_SKIP:-} ]] && ((https == 0)); then
        itest_not_ok "ITEST_TLS=1 but no server1 was checked over HTTPS"
    fi
    if [[ -f $ITEST_DIR/.timeout ]]; then
        itest_not_ok "timed out after $(cat "$ITEST_DIR/.timeout") s"
    elif ((rc != 0)) && [[ -z $ITEST_ENDING ]]; then
        itest_not_ok "aborted with exit status $rc"
    fi
    ((ITEST_FAIL == 0)) || rc=1
    _itest_cleanup
    if ((rc != 0)); then
        _itest_print_logs
        log "$ITEST_NAME: FAILED; run dir kept: $ITEST_DIR"
    elif [[ -n ${ITEST_KEEP:-} ]]; then
        log "$ITEST_NAME: run dir kept: $ITEST_DIR"
    else
        rm -rf "$ITEST_DIR"
    fi
    [[ -z $ITEST_WATCHDOG ]] || kill "$ITEST_WATCHDOG" 2>/dev/null || true
    ! itest_tls || [[ -n ${ITEST_TLS_SKIP:-} ]] ||
        log "$ITEST_NAME: over HTTPS: $https server1 start(s), each checked (itls.py probe)"
    printf '%s passed, %s failed\n' "$ITEST_PASS" "$ITEST_FAIL"
    exit "$rc"
}

# itest_start NAME PROG ARGS...: start $BIN_DIR/PROG in the background with its log in
# $ITEST_DIR/NAME.log, stop it at exit, and wait (10 s) for its "listening on ADDR:PORT" line.
# Sets ITEST_PORT and ITEST_PID_LAST. Call it in the test's own shell (not inside $(...)), so
# that the test can `wait` for the program and read its exit status. For server1 it also sets
# ITEST_URL, ITEST_PLAIN_PORT and ITEST_METRICS_URL (--metrics-listen 127.0.0.1:0 unless ARGS
# name one: itest_s1_metrics_args), and under ITEST_TLS=1 gives it its HTTPS port (see above).
itest_start() {
    local name=$1 prog=$2 log port tls=()
    shift 2
    log=$ITEST_DIR/$name.log
    if [[ $prog == server1 ]]; then
        itest_tls_setup
        mapfile -t tls < <(itest_s1_metrics_args "$@")
        tls+=("${ITEST_TLS_ARGS[@]}")
    fi
    "$BIN_DIR/$prog" "$@" "${tls[@]}" >"$log" 2>&1 &
    ITEST_PID_LAST=$!
    itest_bg "$ITEST_PID_LAST"
    if [[ $prog == server1 ]]; then
        itest_s1_listening "$name" "$log" 10 || {
            log "$prog did not start: $(tail -n 5 "$log")"
            return 1
        }
        return 0
    fi
    wait_until 10 grep -q 'listening on ' "$log" || {
        log "$prog did not start: $(tail -n 5 "$log")"
        return 1
    }
    port=$(grep -m1 -o 'listening on [^ ]*' "$log")
    ITEST_PORT=${port##*:}
}
