#!/usr/bin/env bash
# An account creation whose answer is lost is sent again, and answered 201, not 409: server1
# with two real server2s (--auth A,B) on one Redis primary with a replica; A is reached through
# replydrop.py, which can throw A's answers away after A has stored the account. The CREATE
# times out at A, goes to B with the same creation token (docs/protocol.md, "Creation
# tokens"), and B finds the record A stored: 201, and the account logs in. Another creation of
# the name gets 409. With --redis-wait 1 the repeat confirms the record on the replica first:
# with the replica stopped, 503 instead of an unconfirmed 201.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init create_resend
itest_timeout 180
require_cmd redis-server redis-cli curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
printf 'hello' >"$ROOT/f.txt"

# a primary and its replica, one password
itest_redis_shared a b
A=$(itest_redis_start a)
B=$(itest_redis_start b)
rcli() { REDISCLI_AUTH=$PW redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
rcli "$B" config set masterauth "$PW" >/dev/null
rcli "$B" replicaof 127.0.0.1 "$A" >/dev/null
# the primary lists its replica online (WAIT counts it from then on; the replica says its link
# is up a moment before, once it has loaded the primary's data)
online() { rcli "$A" info replication | grep -q '^slave0:.*,state=online,'; }
wait_until 20 online || itest_fail "the primary does not list its replica online"

URL=redis://127.0.0.1:$A
S2A=$(itest_server2 s2a "$URL" "$ITEST_DIR/a/password" --workers 2 --redis-wait 1)
S2B=$(itest_server2 s2b "$URL" "$ITEST_DIR/a/password" --workers 2 --redis-wait 1)
DROP=$ITEST_DIR/drop
python3 "$HERE/replydrop.py" --target "127.0.0.1:$S2A" --drop-file "$DROP" \
    2>"$ITEST_DIR/proxy.log" &
itest_bg $!
wait_until 10 grep -q 'listening on ' "$ITEST_DIR/proxy.log" || itest_fail "proxy did not start"
PROXY=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/proxy.log")
PROXY=${PROXY##*:}

# one thread with one connection to each server2, so requests alternate A, B, A, ...
S1_LOG=$ITEST_DIR/s1.log
"$BIN_DIR/server1" --port 0 --threads 1 --root "$ROOT" --auth-conns 1 --auth-timeout 3s \
    --auth "127.0.0.1:$PROXY,127.0.0.1:$S2B" --auth-secret-file "$ITEST_DIR/link.secret" \
    --login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 \
    --metrics-listen 127.0.0.1:0 >"$S1_LOG" 2>&1 &
itest_bg $!
wait_until 20 grep -q 'listening on ' "$S1_LOG" || itest_fail "server1 did not start"
S1=$(grep -m1 -o 'listening on [^ ]*' "$S1_LOG")
S1=http://${S1#listening on }
S1_METRICS=$(grep -m1 -o 'serving /metrics on [^ ]*' "$S1_LOG")
S1_METRICS=http://${S1_METRICS#serving /metrics on }/metrics
up() { test "$(grep -c 'connected to server2 at' "$S1_LOG")" -ge 2; }
wait_until 10 up || itest_fail "server1 did not connect to both server2s"

create() { curl -s -o /dev/null -w '%{http_code}' -d "username=$1&password=pw-$1" "$S1/users"; }
login() { curl -s -o /dev/null -w '%{http_code}' -u "$1:pw-$1" "$S1/files/f.txt"; }
retries() { curl -s "$S1_METRICS" | awk '$1 == "server1_auth_retries_total" {print $2}'; }
evals() {
    local n
    n=$(rcli "$A" info commandstats | sed -n 's/^cmdstat_eval:calls=\([0-9]*\),.*/\1/p')
    echo "${n:-0}"
}
stored_at_a() { rcli "$A" get "user:$1"; }

# answers from A lost: each creation that goes to A is applied there, then sent to B
touch "$DROP"
r0=$(retries)
e0=$(evals)
for name in lost1 lost2; do
    check_eq "a creation whose answer is lost: 201 ($name)" "$(create "$name")" 201
done
check_ok "... one of them went to A and was sent again ($(retries) retries)" \
    test "$(retries)" -gt "$r0"
check_ok "... A had stored it before its answer was lost" \
    grep -q 'dropped' "$ITEST_DIR/proxy.log"
check_ok "... B wrote the record again for WAIT ($(evals) EVALs, $e0 before)" \
    test "$(evals)" -gt "$e0"
rm -f "$DROP"
for name in lost1 lost2; do
    check_eq "... and the account logs in ($name)" "$(login "$name")" 200
    check_eq "... another creation of the name: 409 ($name)" "$(create "$name")" 409
    check_ok "... stored once, with its creation's token ($name)" \
        grep -q '^c:[0-9a-f]\{32\}:\$argon2id\$' <(stored_at_a "$name")
done

# the replica stopped: the repeat cannot be confirmed on it, so 503, never an unconfirmed 201
REPLICA_PID=$(cat "$ITEST_DIR/b/redis.pid")
kill -STOP "$REPLICA_PID"
touch "$DROP"
codes=$(for name in unconf1 unconf2; do create "$name"; echo; done | sort | tr '\n' ' ')
rm -f "$DROP"
kill -CONT "$REPLICA_PID"
check_eq "replica stopped: both creations 503 (WAIT unconfirmed at A, then at B)" \
    "$codes" "503 503 "
wait_until 10 online || itest_fail "the replica did not come back"
check_eq "with the replica back, a creation: 201" "$(create fresh)" 201
check_eq "... and it logs in" "$(login fresh)" 200
itest_summary
