#!/usr/bin/env bash
# test_s2_handshake.sh - server2's connections that never prove the link secret cannot keep a
# server1 out, in threads and in processes mode:
# - 2,100 idle TCP connections (more than --max-conns 1024 x 2 workers), held open, with
#   --handshake-timeout 30s so that only the caps on handshakes can help: a server1 started
#   after them gets /healthz 200 within 3 s (polled, the time printed), then 201 for an account
#   and 200 for a GET; server2's exit log counts the connections closed to make room;
# - --handshake-timeout 1s closes a connection that sends nothing, and one that sends HELLO
#   only, after about 1 s; one that finished its handshake stays open;
# - --max-unauth-conns 4 --max-unauth-conns-per-ip 2, one worker: of two silent connections from
#   127.0.0.2, three from 127.0.0.1 and one from 127.0.0.3, the first of 127.0.0.1's gives way
#   to its third, and the oldest of all to 127.0.0.3's;
# - --max-conns 2: a silent connection gives way to a newer one; once both slots are
#   authenticated, a new connection is refused and the others are served.
# Before these limits, the 2,100 connections held every slot until --idle-timeout (300 s) and
# server1 got 503 for all of it. BIN_DIR selects the build (default build/release).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init s2-handshake
itest_timeout 300
require_cmd python3 curl
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
IDLE=2100

# the idle connections and server2's accepts of them need descriptors
ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" || itest_fail "cannot raise the open-file limit to $(ulimit -Hn)"
(($(ulimit -n) >= IDLE + 2200)) || itest_fail "an open-file limit of $(ulimit -n) is too low"

PW_FILE=$ITEST_DIR/redis/password
RPORT=$(itest_redis_start redis)
URL=redis://127.0.0.1:$RPORT
s2() { python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" "$@"; }
# stop_s2 NAME PID: SIGTERM, exit status 0, no sanitizer report
stop_s2() {
    local rc=0
    kill -TERM "$2"
    wait "$2" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
    check_eq "$1: no sanitizer report in the log" \
        "$(grep -c -E 'Sanitizer|runtime error:' "$ITEST_DIR/$1.log" || true)" 0
}
# start_s2 NAME ARGS...: server2 on a free port, log $ITEST_DIR/NAME.log; sets S2 (its port)
# and S2_PID. Started in this shell, so that `wait` gets its exit status.
start_s2() {
    local name=$1 log=$ITEST_DIR/$1.log
    shift
    [[ -s $ITEST_DIR/link.secret ]] ||
        (umask 077 && head -c 32 /dev/urandom >"$ITEST_DIR/link.secret")
    "$BIN_DIR/server2" --port 0 --backend "$URL" --backend-password-file "$PW_FILE" \
        --secret-file "$ITEST_DIR/link.secret" --hash-cost min "$@" >"$log" 2>&1 &
    S2_PID=$!
    itest_bg "$S2_PID"
    wait_until 15 grep -q 'listening on ' "$log" || itest_fail "$name: server2 did not start"
    S2=$(grep -m1 -o 'listening on [^ ]*' "$log")
    S2=${S2##*:}
}
# handshakes NAME: the figures of server2's closing "handshakes:" lines, summed (one line per
# worker process in processes mode): "REFUSED TIMED_OUT MADE_ROOM MADE_ROOM_SAME_ADDRESS"
handshakes() {
    sed -n 's/.*handshakes: //p' "$ITEST_DIR/$1.log" | tr -c '0-9\n' ' ' |
        awk '{for (i = 1; i <= 4; i++) s[i] += $i}
            END {print s[1] + 0, s[2] + 0, s[3] + 0, s[4] + 0}'
}

mkdir -p "$ITEST_DIR/root"
head -c 1024 /dev/urandom >"$ITEST_DIR/root/f1k"

for mode in threads processes; do
    log "---- $mode: $IDLE idle connections, then a server1"
    start_s2 "idle-$mode" --mode "$mode" --workers 2 --handshake-timeout 30s
    rm -f "$ITEST_DIR/go"
    s2 hold "$IDLE" "$ITEST_DIR/go" >"$ITEST_DIR/hold-$mode.out" 2>&1 &
    HOLD=$!
    itest_bg "$HOLD"
    wait_until 60 grep -q '^connected' "$ITEST_DIR/hold-$mode.out" ||
        itest_fail "$mode: the idle connections were not made: $(cat "$ITEST_DIR/hold-$mode.out")"
    # server1 comes after them: /healthz polled until 200, at most 3 s from its start
    t0=$(now_ms)
    "$BIN_DIR/server1" --port 0 --threads 2 --root "$ITEST_DIR/root" --read buffered \
        --auth "127.0.0.1:$S2" --auth-secret-file "$ITEST_DIR/link.secret" --login-fail-limit 0 \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 \
        >"$ITEST_DIR/s1-$mode.log" 2>&1 &
    S1_PID=$!
    itest_bg "$S1_PID"
    wait_until 10 grep -q 'listening on ' "$ITEST_DIR/s1-$mode.log" ||
        itest_fail "$mode: server1 did not start"
    port=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/s1-$mode.log")
    S1=http://127.0.0.1:${port##*:}
    code=""
    while (($(now_ms) - t0 < 3000)); do
        code=$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$S1/healthz" || true)
        [[ $code != 200 ]] || break
        sleep 0.05
    done
    took=$(($(now_ms) - t0))
    log "$mode: /healthz $code $took ms after server1 was started"
    check_ok "$mode: $IDLE idle connections held, and a new server1's /healthz is 200 within \
3 s ($code after $took ms)" test "$code" = 200 -a "$took" -le 3000
    check_eq "$mode: ... it creates an account" "$(curl -s -o /dev/null -m 10 -w '%{http_code}' \
        --data "username=alice-$mode&password=s3cret-pw" "$S1/users")" 201
    check_eq "$mode: ... and serves a GET" "$(curl -s -o /dev/null -m 10 -w '%{http_code}' \
        -u "alice-$mode:s3cret-pw" "$S1/files/f1k")" 200
    touch "$ITEST_DIR/go"
    wait "$HOLD" || true
    log "$mode: $(tr '\n' ' ' <"$ITEST_DIR/hold-$mode.out")"
    kill -TERM "$S1_PID"
    wait "$S1_PID" || true
    stop_s2 "idle-$mode" "$S2_PID"
    read -r refused timeouts evicted per_addr < <(handshakes "idle-$mode")
    log "$mode: handshakes: $refused refused, $timeouts timed out, $evicted made room" \
        "($per_addr for the same address)"
    # every worker keeps at most --max-unauth-conns-per-ip (32) of 127.0.0.1's handshakes
    check_ok "$mode: the exit log counts the idle connections closed to make room \
($evicted >= $IDLE - 64)" test "$evicted" -ge $((IDLE - 64))
    check_ok "$mode: ... for newer ones from the same address ($per_addr)" \
        test "$per_addr" -ge $((IDLE - 64))

    log "---- $mode: --handshake-timeout 1s"
    start_s2 "deadline-$mode" --mode "$mode" --workers 1 --handshake-timeout 1s
    out=$(s2 deadline silent 10)
    check_ok "$mode: a connection that sends nothing is closed after 1 s ($out)" \
        grep -Eq '^closed after ([89][0-9]{2}|[1-4][0-9]{3}) ms$' <<<"$out"
    out=$(s2 deadline hello 10)
    check_ok "$mode: one that sends HELLO only is closed after 1 s ($out)" \
        grep -Eq '^closed after ([89][0-9]{2}|[1-4][0-9]{3}) ms$' <<<"$out"
    check_eq "$mode: one that finished its handshake stays open" "$(s2 idle 2)" open
    stop_s2 "deadline-$mode" "$S2_PID"
    read -r _ timeouts _ _ < <(handshakes "deadline-$mode")
    check_eq "$mode: the exit log counts 2 handshake timeouts" "$timeouts" 2
done

log "---- the caps on handshakes, and --max-conns"
start_s2 caps --workers 1 --handshake-timeout 30s --max-unauth-conns 4 --max-unauth-conns-per-ip 2
check_eq "the third silent connection of 127.0.0.1 closes its first; 127.0.0.3's the oldest" \
    "$(s2 caps)" "closed: a0 b0 open: a1 b1 b2 c0"
stop_s2 caps "$S2_PID"
check_eq "the exit log: 2 made room, 1 of them for one of the same address" \
    "$(handshakes caps)" "0 0 2 1"

start_s2 full --workers 1 --max-conns 2
check_eq "--max-conns 2: a silent connection gives way; all authenticated: refused" \
    "$(s2 full)" "S1 closed, S2 ok, S3 closed, A ok"
stop_s2 full "$S2_PID"
check_eq "the exit log: 1 refused, 1 made room" "$(handshakes full)" "1 0 1 0"
itest_summary
