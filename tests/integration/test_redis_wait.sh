#!/usr/bin/env bash
# server2's --redis-wait default on a plain redis:// primary: from the replicas the primary
# lists (ROLE), asked at connect and before a write at most once a second. A primary with a
# replica: every creation sends WAIT 1 (cmdstat_wait counts it), the replica has the account
# when the ok comes, and with the replica stopped a creation is unavailable, never an
# unconfirmed ok; once the primary lists no replica (REPLICAOF NO ONE on it), creations stop
# sending WAIT (at most one of them unavailable on the way). A primary with --redis-wait 0, and
# one with no replica and no flag: no WAIT at all; a replica attached to the latter later: its
# creations WAIT for it, without a new connection.
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
# online PORT: that primary lists a replica online, as ROLE does (the replica says its link is up
# once it has loaded the primary's data; the primary puts it online at its first acknowledgement)
online() { rcli "$1" info replication | grep -q '^slave0:.*,state=online,'; }
wait_until 20 online "$A" || itest_fail "the primary does not list its replica online"
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
check_ok "server2 saw the replica when it connected" \
    wait_until 10 grep -q 'the primary lists 1 replica: writes WAIT for 1' "$ITEST_DIR/s2a.log"
w0=$(waits "$A")
replicated=0
for i in 1 2 3 4 5; do
    st=$(s2 "$S2A" create "wa$i" pw12345)
    [[ $st != ok ]] || [[ $(rcli "$B" exists "user:wa$i") != 1 ]] || replicated=$((replicated + 1))
done
check_eq "5 creations on a primary with a replica: each ok and on the replica when answered" \
    "$replicated" 5
check_eq "... each sent WAIT" "$(($(waits "$A") - w0))" 5
REPLICA_PID=$(cat "$ITEST_DIR/b/redis.pid")
kill -STOP "$REPLICA_PID"
st=$(s2 "$S2A" create wstopped pw12345)
kill -CONT "$REPLICA_PID"
check_eq "the replica stopped: a creation is unavailable, not acknowledged" "$st" unavailable
wait_until 10 online "$A" || itest_fail "the replica did not come back"
check_eq "... and with it back, ok" "$(s2 "$S2A" create wback pw12345)" ok

# the same primary, --redis-wait 0: an explicit value wins
S2Z=$(itest_server2 s2z "redis://127.0.0.1:$A" "$ITEST_DIR/a/password" --workers 1 \
    --redis-wait 0)
w0=$(waits "$A")
oks=0
for i in 1 2 3; do [[ $(s2 "$S2Z" create "wz$i" pw12345) != ok ]] || oks=$((oks + 1)); done
check_eq "--redis-wait 0 on the same primary: 3 creations ok" "$oks" 3
check_eq "... and no WAIT" "$(($(waits "$A") - w0))" 0

# the replica detached for good: server2 asks ROLE again, before a write once its last answer
# is a second old, or after a WAIT that finds no replica (that creation is unavailable): from
# then on creations are ok without WAIT
rcli "$B" replicaof no one >/dev/null
detached() { rcli "$A" info replication | grep -q 'connected_slaves:0'; }
wait_until 10 detached || itest_fail "the primary still lists its replica"
n=0 unavail=0
unwaited() { # a creation; true once one is ok without a WAIT
    local w st
    n=$((n + 1))
    w=$(waits "$A")
    st=$(s2 "$S2A" create "wgone$n" pw12345)
    [[ $st != unavailable ]] || unavail=$((unavail + 1))
    [[ $st == ok && $(waits "$A") == "$w" ]]
}
check_ok "the replica detached: a creation ok without WAIT" wait_until 10 unwaited
check_ok "... after $n creations, at most one of them unavailable ($unavail)" \
    test "$unavail" -le 1
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

# a replica attached to it now: server2's connection (made without one) asks ROLE again
# before a write once its last answer is a second old, so its creations WAIT for it
rcli "$B" replicaof 127.0.0.1 "$C" >/dev/null
wait_until 20 online "$C" || itest_fail "the primary c does not list its new replica online"
n=0 st=""
waited() { # a creation; true once one sent WAIT
    local w
    n=$((n + 1))
    w=$(waits "$C")
    st=$(s2 "$S2C" create "wl$n" pw12345)
    (($(waits "$C") > w))
}
check_ok "a replica attached later: creations WAIT for it" wait_until 10 waited
check_eq "... the first that did is ok and on the replica when answered" \
    "$st $(rcli "$B" exists "user:wl$n")" "ok 1"
check_ok "... as server2 logged" \
    grep -q 'the primary lists 1 replica: writes WAIT for 1' "$ITEST_DIR/s2c.log"
itest_summary
