# shellcheck shell=bash disable=SC2034  # (S1, S1_LOG, FAKE_PID, ...: set here for the sourcing test)
# tests/integration/s1lib.sh - helpers shared by the tests that run server1 against
# fake_server2.py (test_server1.sh, test_uploads.sh). Source it after lib.sh; it expects
# ITEST_DIR (itest_init), HERE (this directory), S1_BIN and ROOT to be set by the caller.
# Under ITEST_TLS=1 (lib.sh: a run over HTTPS) start_s1 gives server1 its HTTPS port too, and
# S1 / S1_PORT name that port; S1_PLAIN_PORT is the plain one.

# itest_off_tmpfs: O_DIRECT needs a disk filesystem, so the run dir must not be on tmpfs.
# Call before itest_init.
itest_off_tmpfs() {
    if [[ $(stat -f -c %T "${TMPDIR:-/tmp}") == tmpfs ]]; then
        export TMPDIR=/var/tmp
    fi
}

# link_secret: the link secret file shared by the fake server2 and server1 ($LINK_SECRET, made
# once per run dir, mode 0600).
link_secret() {
    LINK_SECRET=$ITEST_DIR/link.secret
    [[ -s $LINK_SECRET ]] || (umask 077 && head -c 32 /dev/urandom >"$LINK_SECRET")
}

# start_fake PORT [FLAGS...]: fake_server2.py on PORT (0: a free one) with the link secret and
# FLAGS, logging to $ITEST_DIR/fake_server2.log (emptied first); sets FAKE_PID and FAKE_PORT.
start_fake() {
    local port=$1 log=$ITEST_DIR/fake_server2.log
    shift
    link_secret
    : >"$log"
    python3 "$HERE/fake_server2.py" --port "$port" --secret-file "$LINK_SECRET" "$@" >>"$log" 2>&1 &
    FAKE_PID=$!
    itest_bg "$FAKE_PID"
    wait_until 10 grep -q 'listening on ' "$log" || itest_fail "fake server2 did not start"
    FAKE_PORT=$(grep -m1 -o 'listening on [^ ]*' "$log")
    FAKE_PORT=${FAKE_PORT##*:}
}

# start_s1 NAME ARGS...: server1 on a free port against the fake server2, started in this shell
# (so `wait` gets its exit status); its log is $ITEST_DIR/NAME.log. Sets S1_PID, S1_PORT, S1
# (base URL), S1_PLAIN_PORT, S1_METRICS and S1_METRICS_PORT (its /metrics URL and port: the
# --metrics-listen 127.0.0.1:0 it is given unless ARGS name one, lib.sh's itest_s1_metrics_args)
# and S1_LOG; waits for "listening on" (under ITEST_TLS=1: for "listening for https on", with S1
# https:// on that port, checked by lib.sh). The per-client limits are off unless ARGS turn them
# on (the tests sign up and guess from one address far more often than they allow;
# test_limits.sh tests them). The link secret is $LINK_SECRET unless ARGS name one
# (--auth-secret-file) or none (--insecure-no-secret).
S1_NO_CLIENT_LIMITS=(--login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0
    --max-conns-per-ip 0 --list-limit 0)
start_s1() {
    local name=$1 log=$ITEST_DIR/$1.log link mflags
    shift
    link_secret
    link=(--auth-secret-file "$LINK_SECRET")
    [[ " $* " == *" --auth-secret-file "* || " $* " == *" --insecure-no-secret "* ]] && link=()
    itest_tls_setup
    mapfile -t mflags < <(itest_s1_metrics_args "$@")
    "$S1_BIN" --port 0 --threads 2 --root "$ROOT" --auth "127.0.0.1:$FAKE_PORT" "${link[@]}" \
        "${S1_NO_CLIENT_LIMITS[@]}" "${ITEST_TLS_ARGS[@]}" "${mflags[@]}" "$@" >"$log" 2>&1 &
    S1_PID=$!
    S1_LOG=$log
    itest_bg "$S1_PID"
    itest_s1_listening "$name" "$log" 20 || itest_fail "$name: server1 did not start"
    S1_PORT=$ITEST_PORT
    S1_PLAIN_PORT=$ITEST_PLAIN_PORT
    S1=$ITEST_URL
    S1_METRICS=$ITEST_METRICS_URL
    S1_METRICS_PORT=$ITEST_METRICS_PORT
}

# stop_s1 DESC [SECONDS]: SIGTERM; it must exit 0 within SECONDS (default 15).
stop_s1() {
    local desc=$1 secs=${2:-15} rc=0
    kill -TERM "$S1_PID"
    wait_pid_exit "$S1_PID" "$secs" || itest_not_ok "$desc: still running $secs s after SIGTERM"
    wait "$S1_PID" 2>/dev/null || rc=$?
    check_eq "$desc: exit status after SIGTERM" "$rc" 0
}
