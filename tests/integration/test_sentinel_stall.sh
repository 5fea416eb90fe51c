#!/usr/bin/env bash
# A primary the Sentinels vote down while it still runs (it stalled longer than
# down-after-milliseconds, e.g. in a slow fsync) keeps taking writes until they tell it
# otherwise, and its other replicas acknowledge them until they are moved to the promoted one,
# which lacks them: with WAIT 1 such creations were answered ok and then lost. Here, on
# loopback, a primary A with replicas B, C and D and one Sentinel that never fails over by
# itself (down-after-milliseconds 60 s); the Sentinel's steps are played by hand:
#   - D is SIGKILLed: a replica that is gone costs at most one creation, then writes go on
#     (server2 waits for every replica the primary lists online, and one that refuses
#     connections is gone);
#   - C is promoted (REPLICAOF NO ONE) while A runs: no creation is answered ok from then on,
#     and server2 logs that A is deposed;
#   - B and A are pointed at C, as the Sentinel would: every creation answered ok is on C.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init sentinel_stall
itest_timeout 120
require_cmd redis-server redis-cli python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration

itest_redis_shared a b c d
A=$(itest_redis_start a)
B=$(itest_redis_start b)
C=$(itest_redis_start c)
D=$(itest_redis_start d)
rcli() { REDISCLI_AUTH=$PW redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
for p in "$A" "$B" "$C" "$D"; do
    rcli "$p" config set masterauth "$PW" >/dev/null
    rcli "$p" config set repl-diskless-sync-delay 0 >/dev/null
done
for p in "$B" "$C" "$D"; do rcli "$p" replicaof 127.0.0.1 "$A" >/dev/null; done
# online PORT N: that primary lists N replicas online
online() {
    test "$(rcli "$1" info replication | grep -c '^slave[0-9]*:.*,state=online,')" -eq "$2"
}
wait_until 20 online "$A" 3 || itest_fail "the primary does not list its three replicas online"

ensure_password "$ITEST_DIR/sentinel.password"
SPW=$(<"$ITEST_DIR/sentinel.password")
SPORT=$(free_port)
mkdir -p "$ITEST_DIR/sentinel"
cat >"$ITEST_DIR/sentinel/sentinel.conf" <<EOF
port $SPORT
bind 127.0.0.1
daemonize no
dir $ITEST_DIR/sentinel
logfile $ITEST_DIR/sentinel/sentinel.log
sentinel resolve-hostnames no
sentinel monitor mymaster 127.0.0.1 $A 1
sentinel auth-pass mymaster $PW
requirepass $SPW
sentinel down-after-milliseconds mymaster 60000
sentinel failover-timeout mymaster 60000
EOF
chmod 600 "$ITEST_DIR/sentinel/sentinel.conf"
redis-server "$ITEST_DIR/sentinel/sentinel.conf" --sentinel >"$ITEST_DIR/sentinel/stdout.log" 2>&1 &
itest_bg $!
scli() { REDISCLI_AUTH=$SPW redis-cli -h 127.0.0.1 -p "$SPORT" "$@"; }
knows() {
    local p
    for p in "$B" "$C" "$D"; do
        scli sentinel replicas mymaster 2>/dev/null | grep -q -x "127.0.0.1:$p" || return 1
    done
}
wait_until 30 knows || itest_fail "the Sentinel did not find the three replicas"

S2=$(itest_server2 server2 "redis-sentinel://127.0.0.1:$SPORT/mymaster" "$ITEST_DIR/a/password" \
    --workers 1 --sentinel-password-file "$ITEST_DIR/sentinel.password")
s2() { python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" "$@"; }
check_eq "a creation through the primary the Sentinel names" "$(s2 create first pw12345)" ok
check_ok "server2 waits for the three replicas the primary lists" \
    grep -q "lists 3 replicas online: writes WAIT for 3" "$ITEST_DIR/server2.log"
# RESULTS: one line per creation, "NAME STATUS"
RESULTS=$ITEST_DIR/results.txt
echo "first ok" >"$RESULTS"
create() { echo "$1 $(s2 create "$1" pw12345)" | tee -a "$RESULTS" | cut -d' ' -f2; }

# a replica gone for good
kill -KILL "$(cat "$ITEST_DIR/d/redis.pid")"
unavail=0
for i in 1 2 3 4 5; do
    [[ $(create "gone$i") == ok ]] || unavail=$((unavail + 1))
done
check_ok "a replica SIGKILLed: at most one of 5 creations unavailable ($unavail)" \
    test "$unavail" -le 1
check_ok "... and the last one ok" grep -q -x "gone5 ok" "$RESULTS"

# C promoted while A runs
rcli "$C" replicaof no one >/dev/null
oks=0
for i in $(seq 1 10); do
    [[ $(create "after$i") != ok ]] || oks=$((oks + 1))
done
check_eq "C promoted while A runs: creations answered ok" "$oks" 0
check_ok "... server2 says A is deposed by the promoted C" \
    grep -q "127.0.0.1:$A is deposed: 127.0.0.1:$C also says it is a primary, promoted from" \
    "$ITEST_DIR/server2.log"

# the Sentinel's last steps, by hand: B and A follow C
rcli "$B" replicaof 127.0.0.1 "$C" >/dev/null
rcli "$A" replicaof 127.0.0.1 "$C" >/dev/null
check_ok "B and A follow C" wait_until 20 online "$C" 2
missing=0 acked=0
while read -r name st; do
    [[ $st == ok ]] || continue
    acked=$((acked + 1))
    [[ $(rcli "$C" exists "user:$name") == 1 ]] || missing=$((missing + 1))
done <"$RESULTS"
check_eq "every creation answered ok ($acked) is on C" "$missing" 0
itest_summary
