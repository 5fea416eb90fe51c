#!/usr/bin/env bash
# server2's --redis-wait default on a plain redis:// primary: decided at connect from the
# replicas the primary lists (ROLE). A primary with a replica: every creation sends WAIT 1
# (cmdstat_wait counts it), the replica has the account when the ok comes, and with the replica
# stopped a creation is unavailable, never an unconfirmed ok; once the primary lists no replica
# (REPLICAOF NO ONE on it), one creation is unavailable and the next ones need no WAIT. A
# primary with --redis-wait 0, and one with no replica and no flag: no WAIT at all.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init redis_wait
itest_timeout 120
require_cmd redis-server redis-cli python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration

# a primary a with its replica b, one password; c alone
itest_redis_shared a b c
A=$(itest_redis_start a)
B=$(itest_redis_start b)
C=$(itest_redis_start c)
rcli() { REDISCLI_AUTH=$PW redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
rcli "$B" config set masterauth "$PW" >/dev/null
rcli "$B" replicaof 127.0.0.1 "$A" >/dev/null
linked() { rcli "$B" info replication | grep -q 'master_link_status:up'; }
wait_until 20 linked || itest_fail "the replica did not link to the primary"
# waits PORT: how many WAITs that Redis has run
waits() {
    local n
    n=$(rcli "$1" info commandstats | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
    echo "${n:-0}"
}
s2() {
    local port=$1
    shift
    python3 "$HERE/s2client.py" --port "$port" --secret-file "$ITEST_DIR/link.secret" "$@"
}

# a primary with a replica, no --redis-wait: WAIT 1
S2A=$(itest_server2 s2a "redis://127.0.0.1:$A" "$ITEST_DIR/a/password" --workers 1)
check_ok "the configuration line says redis-wait=auto" \
    grep -q ' redis-wait=auto ' "$ITEST_DIR/s2a.log"
w0=$(waits "$A")
replicated=0
for i in 1 2 3 4 5; do
    st=$(s2 "$S2A" create "wa$i" pw12345)
    [[ $st != ok ]] || [[ $(rcli "$B" exists "user:wa$i") != 1 ]] || replicated=$((replicated + 1))
done
check_eq "5 creations on a primary with a replica: each ok and on the replica when answered" \
    "$replicated" 5
check_eq "... each sent WAIT" "$(($(waits "$A") - w0))" 5
check_ok "... and server2 logged its choice" \
    grep -q 'the primary lists 1 replica: writes WAIT for 1' "$ITEST_DIR/s2a.log"
REPLICA_PID=$(cat "$ITEST_DIR/b/redis.pid")
kill -STOP "$REPLICA_PID"
st=$(s2 "$S2A" create wstopped pw12345)
kill -CONT "$REPLICA_PID"
check_eq "the replica stopped: a creation is unavailable, not acknowledged" "$st" unavailable
wait_until 10 linked || itest_fail "the replica did not come back"
check_eq "... and with it back, ok" "$(s2 "$S2A" create wback pw12345)" ok

# the same primary, --redis-wait 0: an explicit value wins
S2Z=$(itest_server2 s2z "redis://127.0.0.1:$A" "$ITEST_DIR/a/password" --workers 1 \
    --redis-wait 0)
w0=$(waits "$A")
oks=0
for i in 1 2 3; do [[ $(s2 "$S2Z" create "wz$i" pw12345) != ok ]] || oks=$((oks + 1)); done
check_eq "--redis-wait 0 on the same primary: 3 creations ok" "$oks" 3
check_eq "... and no WAIT" "$(($(waits "$A") - w0))" 0

# the replica detached for good: one creation unavailable (WAIT 1 finds none), then ok unwaited
rcli "$B" replicaof no one >/dev/null
detached() { rcli "$A" info replication | grep -q 'connected_slaves:0'; }
wait_until 10 detached || itest_fail "the primary still lists its replica"
w0=$(waits "$A")
st1=$(s2 "$S2A" create wgone1 pw12345)
w1=$(waits "$A")
st2=$(s2 "$S2A" create wgone2 pw12345)
check_eq "the replica detached: the next creation unavailable, the one after ok" \
    "$st1 $st2" "unavailable ok"
check_eq "... the first one with WAIT, the second without" "$((w1 - w0)) $(($(waits "$A") - w1))" \
    "1 0"
check_ok "... as server2 logged" \
    grep -q 'the primary lists 0 replicas: writes WAIT for 0' "$ITEST_DIR/s2a.log"

# a primary with no replica, no --redis-wait: no WAIT
S2C=$(itest_server2 s2c "redis://127.0.0.1:$C" "$ITEST_DIR/c/password" --workers 1)
oks=0
for i in 1 2 3; do [[ $(s2 "$S2C" create "wc$i" pw12345) != ok ]] || oks=$((oks + 1)); done
check_eq "a primary without replicas: 3 creations ok" "$oks" 3
check_eq "... and no WAIT" "$(waits "$C")" 0
check_ok "... as server2 logged" \
    grep -q 'the primary lists 0 replicas: writes WAIT for 0' "$ITEST_DIR/s2c.log"
itest_summary
