#!/usr/bin/env bash
# server1 with several server2s (--auth A,B): requests spread over both; a server2 that stops
# answering has its VERIFYs and CREATEs sent once more to the other (answered within about two
# --auth-timeouts, counted in server1_auth_retries_total; a CREATE with its creation token); a
# server2 that dies leaves the other to answer everything, and
# one that comes back on its port is used again; --auth limits. Runs against two
# fake_server2.py.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_init multi_auth
itest_timeout 240
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
printf 'hello' >"$ROOT/f.txt"
AUTH=(-u alice:secret)

# fake K [PORT]: fake server2 number K (its log $ITEST_DIR/fakeK.log, its blackhole file
# $ITEST_DIR/hole-K); sets PORT_K and PID_K
fake() {
    local k=$1 port=${2:-0} log=$ITEST_DIR/fake$1.log
    link_secret
    : >"$log"
    python3 "$HERE/fake_server2.py" --port "$port" --secret-file "$LINK_SECRET" --log-requests \
        --blackhole-file "$ITEST_DIR/hole-$k" >>"$log" 2>&1 &
    printf -v "PID_$k" '%s' "$!"
    itest_bg "$!"
    wait_until 10 grep -q 'listening on ' "$log" || itest_fail "fake server2 $k did not start"
    port=$(grep -m1 -o 'listening on [^ ]*' "$log")
    printf -v "PORT_$k" '%s' "${port##*:}"
}
verifies() { grep -c 'request VERIFY' "$ITEST_DIR/fake$1.log" || true; }
creates() { grep -c 'request CREATE' "$ITEST_DIR/fake$1.log" || true; }
# gets N: the statuses of N GETs, counted ("200:N 503:M")
gets() {
    local i
    for ((i = 0; i < $1; i++)); do
        curl -s -o /dev/null -w '%{http_code}\n' "${AUTH[@]}" "$S1/files/f.txt"
    done | sort | uniq -c | awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1}'
}
metric() { python3 "$HERE/s1client.py" metrics "$S1_METRICS_PORT" "$1" | sed -n 2p; }

fake 1
fake 2
FAKE_PORT=$PORT_1 # (start_s1's --auth, which the one given here replaces)
start_s1 s1 --auth "127.0.0.1:$PORT_1,127.0.0.1:$PORT_2" --auth-timeout 1s --auth-conns 2
wait_until 10 grep -q "connected to server2 at 127.0.0.1:$PORT_2" "$S1_LOG" ||
    itest_not_ok "server1 did not connect to the second server2"
check_eq "40 GETs with both server2s up" "$(gets 40)" "200:40"
v1=$(verifies 1)
v2=$(verifies 2)
check_ok "... spread over both ($v1 and $v2 VERIFYs)" test "$v1" -ge 10 -a "$v2" -ge 10

# server2 number 1 stops answering: its VERIFYs time out and go to number 2
touch "$ITEST_DIR/hole-1"
t0=$(now_ms)
check_eq "20 GETs while server2 1 answers nothing: all 200" "$(gets 20)" "200:20"
t1=$(now_ms)
check_ok "... in $((t1 - t0)) ms: the silent one is passed over after a timeout" \
    test $((t1 - t0)) -lt 10000
r=$(metric server1_auth_retries_total)
check_ok "... server1_auth_retries_total counts them ($r)" test "$r" -ge 1
check_eq "... and a CREATE goes to the one that answers: 201" \
    "$(curl -s -o /dev/null -w '%{http_code}' -d 'username=newbie&password=pw123456' \
        "$S1/users")" 201
rm -f "$ITEST_DIR/hole-1"

# server2 number 2 dies: number 1 answers everything; back on its port, it is used again (each
# of server1's two threads logs its own reconnection)
conn_lines() { grep -c "connected to server2 at 127.0.0.1:$PORT_2" "$S1_LOG" || true; }
connected_before=$(conn_lines)
kill -KILL "$PID_2"
check_eq "20 GETs after server2 2 died: all 200" "$(gets 20)" "200:20"
check_ok "server1 says it lost server2 2" \
    grep -q "lost every connection to server2 at 127.0.0.1:$PORT_2" "$S1_LOG"
fake 2 "$PORT_2"
reconnected() { test "$(conn_lines)" -ge $((connected_before + 2)); }
wait_until 15 reconnected || itest_not_ok "server1 did not reconnect to server2 2"
before=$(verifies 2)
check_eq "20 GETs once server2 2 is back" "$(gets 20)" "200:20"
check_ok "... some of them answered by it again ($(($(verifies 2) - before)))" \
    test "$(verifies 2)" -gt "$before"
stop_s1 "server1 with two server2s"

# a fresh server1's first request goes to the first server2: silent, the CREATE is sent again
# to the second, with the same creation token (test_create_resend.sh: when the first had
# stored it)
touch "$ITEST_DIR/hole-1"
start_s1 s1b --auth "127.0.0.1:$PORT_1,127.0.0.1:$PORT_2" --auth-timeout 1s --auth-conns 1
wait_until 10 grep -q "connected to server2 at 127.0.0.1:$PORT_2" "$S1_LOG" ||
    itest_not_ok "server1 did not connect to the second server2"
c1=$(creates 1)
c2=$(creates 2)
check_eq "a CREATE whose server2 does not answer is sent to the other: 201" \
    "$(curl -s -o /dev/null -w '%{http_code}' -d 'username=second&password=pw123456' \
        "$S1/users")" 201
check_eq "... once to each" "$(($(creates 1) - c1)) $(($(creates 2) - c2))" "1 1"
rm -f "$ITEST_DIR/hole-1"
stop_s1 "second server1"

# limits of --auth
nine=$(printf '127.0.0.1:%d,' $(seq 7001 7009))
check_ok "--auth with 9 server2s is refused" \
    grep -q 'more than 8 server2s' <("$S1_BIN" --root "$ROOT" --insecure-no-secret \
        --auth "${nine%,}" 2>&1)
check_ok "--auth-conns 40 with 2 server2s (80 > 64) is refused" \
    grep -q 'over 64 connections' <("$S1_BIN" --root "$ROOT" --insecure-no-secret \
        --auth 127.0.0.1:7001,127.0.0.1:7002 --auth-conns 40 2>&1)
check_ok "a bad entry in --auth is refused" \
    grep -q "is not HOST:PORT" <("$S1_BIN" --root "$ROOT" --insecure-no-secret \
        --auth 127.0.0.1:7001,nonsense 2>&1)
itest_summary
