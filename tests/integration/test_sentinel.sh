#!/usr/bin/env bash
# server2 on Redis with Sentinel (redis-sentinel://S1,S2,S3/MASTER), all on loopback: a primary,
# two replicas and three Sentinels (quorum 2, down-after-milliseconds 2000). server2 finds the
# primary through the Sentinels; accounts are created one after another while the primary is
# SIGKILLed; the Sentinels promote a replica (the other follows it) and server2 follows. Every
# account whose CREATE was answered ok must verify afterwards (lost = 0: --redis-wait 1 answers
# ok only once a replica has it), and the window in which creations failed must be within the
# bound the configuration sets (WINDOW_MAX_MS below). Then an announced failover (SENTINEL
# FAILOVER, the primary demoted, not killed): server2 leaves the old primary on +switch-master,
# without waiting for a write to meet READONLY. Also: a Sentinel URL naming an unknown master is
# reported. The Sentinels require a password of their own (requirepass): without it SENTINEL
# MASTERS and SENTINEL MONITOR get NOAUTH, and a server2 not given it (--sentinel-password-file)
# finds no primary and says why; the server2 given it follows both failovers.
# itest-sanitizers: no (a six-process Redis cluster; server2 on Redis is tested elsewhere)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init sentinel
itest_timeout 240
require_cmd redis-server redis-cli python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
# down-after-milliseconds: twice the ping period. At 1000 ms, equal to it, one late PONG was
# enough: on a busy machine (the ASan pass of .ci/run) a Sentinel called the replica it had just
# promoted down 1 s after the switch and failed over a second time, to the last replica, which
# had no replica left to acknowledge WAIT until the demoted one came back: creations failed for
# 12.2 s, and the announced failover below was refused for failover-timeout.
DOWN_AFTER_MS=2000
# The longest creations may fail across the kill, from the configuration, for a failover that
# completes at its first election (one that fails waits 2 x failover-timeout before the next:
# not the failover measured here). Sentinel's own periods are fixed at 1 s (PERIOD_MS):
#   it pings every min(down-after, 1 s) and calls the primary down once a ping has gone
#   unanswered for down-after-milliseconds:                    PERIOD_MS + DOWN_AFTER_MS
#   then asks the other Sentinels whether they agree, once a second:           + PERIOD_MS
#   its election (the vote requests go at once, the votes come with the next asks): + PERIOD_MS
#   sees the promotion in the replica's INFO, asked once a second during a failover: + PERIOD_MS
#   points the other replica at the new primary (next 100 ms tick) and it resynchronises: at
#   once with repl-diskless-sync-delay 0 (set below; Redis's default waits 5 s for more
#   replicas before a full resynchronisation):                                   + PERIOD_MS
# and server2 connects again at most every 250 ms (BACKEND_RETRY_MS), asking the Sentinels in
# turn, and a creation on the new primary before its replica is back fails once WAIT times
# out (half --backend-timeout, at most 1 s): the last failed one ends that much later.
PERIOD_MS=1000
S2_RETRY_MS=250
S2_WAIT_MS=1000
WINDOW_MAX_MS=$((5 * PERIOD_MS + DOWN_AFTER_MS + S2_RETRY_MS + S2_WAIT_MS))

# the two data nodes share one password (a replica authenticates to its primary with it)
itest_redis_shared a b c
A=$(itest_redis_start a)
B=$(itest_redis_start b)
C=$(itest_redis_start c)
rcli() { REDISCLI_AUTH=$PW redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
for p in "$A" "$B" "$C"; do
    rcli "$p" config set masterauth "$PW" >/dev/null
    rcli "$p" config set repl-diskless-sync-delay 0 >/dev/null
done
rcli "$B" replicaof 127.0.0.1 "$A" >/dev/null
rcli "$C" replicaof 127.0.0.1 "$A" >/dev/null
# both online at the primary: WAIT counts them from then on
online() { test "$(rcli "$A" info replication | grep -c '^slave[0-9]*:.*,state=online,')" -eq 2; }
wait_until 20 online || itest_fail "the primary does not list its two replicas online"

# three Sentinels, with a password of their own (server2 reads it from a file)
ensure_password "$ITEST_DIR/sentinel.password"
SPW=$(<"$ITEST_DIR/sentinel.password")
SPORTS=()
for i in 1 2 3; do
    d=$ITEST_DIR/sentinel$i
    mkdir -p "$d"
    port=$(free_port)
    cat >"$d/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
daemonize no
dir $d
logfile $d/sentinel.log
sentinel resolve-hostnames no
sentinel monitor mymaster 127.0.0.1 $A 2
sentinel auth-pass mymaster $PW
requirepass $SPW
sentinel down-after-milliseconds mymaster $DOWN_AFTER_MS
sentinel failover-timeout mymaster 10000
EOF
    chmod 600 "$d/sentinel.conf"
    redis-server "$d/sentinel.conf" --sentinel >"$d/stdout.log" 2>&1 &
    itest_bg $!
    SPORTS+=("$port")
done
scli() { REDISCLI_AUTH=$SPW redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
ready() {
    local p
    for p in "${SPORTS[@]}"; do
        scli "$p" sentinel master mymaster 2>/dev/null | grep -A1 -x num-other-sentinels |
            tail -1 | grep -qx 2 || return 1
        scli "$p" sentinel replicas mymaster 2>/dev/null | grep -q "127.0.0.1:$B" || return 1
        scli "$p" sentinel replicas mymaster 2>/dev/null | grep -q "127.0.0.1:$C" || return 1
    done
}
wait_until 30 ready || itest_fail "the Sentinels did not find each other and the replica"
# without the password (or with another one), a Sentinel takes no command
check_ok "SENTINEL MASTERS without the password: NOAUTH" \
    grep -q NOAUTH <<<"$(redis-cli -h 127.0.0.1 -p "${SPORTS[0]}" sentinel masters 2>&1)"
check_ok "SENTINEL MONITOR without the password: NOAUTH" \
    grep -q NOAUTH <<<"$(redis-cli -h 127.0.0.1 -p "${SPORTS[1]}" sentinel monitor rogue \
        127.0.0.1 "$A" 2 2>&1)"
check_ok "SENTINEL MONITOR with another password: NOAUTH" \
    grep -q NOAUTH <<<"$(REDISCLI_AUTH=not-$SPW redis-cli -h 127.0.0.1 -p "${SPORTS[2]}" \
        sentinel monitor rogue 127.0.0.1 "$A" 2 2>&1)"
check_eq "... and no Sentinel monitors 'rogue'" \
    "$(for p in "${SPORTS[@]}"; do scli "$p" sentinel masters; done | grep -c -x rogue || true)" 0

URL="redis-sentinel://127.0.0.1:${SPORTS[0]},127.0.0.1:${SPORTS[1]},127.0.0.1:${SPORTS[2]}/mymaster"
S2=$(itest_server2 server2 "$URL" "$ITEST_DIR/a/password" --workers 2 --log-level debug \
    --sentinel-password-file "$ITEST_DIR/sentinel.password")
check_ok "server2 takes --redis-wait 1 for a Sentinel URL" \
    grep -q 'redis-wait=1' "$ITEST_DIR/server2.log"
s2() { python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" "$@"; }
check_eq "a CREATE through the primary the Sentinels name" "$(s2 create first pw12345)" ok
check_eq "... and its VERIFY" "$(s2 verify first pw12345)" ok

# creations while the primary dies
s2 churn 12 acct pw12345 "$ITEST_DIR/churn.txt" >"$ITEST_DIR/churn.out" &
CHURN=$!
churning() { test "$(grep -c ' ok ' "$ITEST_DIR/churn.txt" 2>/dev/null)" -ge 100; }
wait_until 10 churning || itest_fail "the creations did not get going"
PRIMARY_PID=$(cat "$ITEST_DIR/a/redis.pid")
kill -KILL "$PRIMARY_PID"
t_kill=$(awk 'END {print $1}' "$ITEST_DIR/churn.txt")
wait "$CHURN" || true
log "churn: $(cat "$ITEST_DIR/churn.out")"
promoted() { rcli "$B" role | head -1 | grep -qx master || rcli "$C" role | head -1 | grep -qx master; }
check_ok "the Sentinels promoted a replica" wait_until 20 promoted
read -r first_err last_err nerr < <(awk '$2 != "ok" {if (!n) f = $1; l = $1; n++}
    END {print (n ? f : 0), (n ? l : 0), n + 0}' "$ITEST_DIR/churn.txt")
window=$((last_err - first_err))
log "failed creations: $nerr, from $first_err to $last_err ms (the kill at about $t_kill ms)"
check_ok "creations went on after the failover ($(cat "$ITEST_DIR/churn.out"))" \
    test "$(awk -v t="$last_err" '$1 > t && $2 == "ok"' "$ITEST_DIR/churn.txt" | wc -l)" -gt 0
# timeline: what each Sentinel saw of the failover and how the replicas resynchronised, by time
timeline() {
    grep -h -e '+sdown master' -e '+odown' -e '+elected-leader' -e '-failover-abort' \
        -e '+promoted-slave' -e '+slave-reconf' -e 'failover-end' -e '+switch-master' \
        -e 'Successful partial' -e 'Full resync from' \
        "$ITEST_DIR"/sentinel*/sentinel.log "$ITEST_DIR"/[abc]/redis.log | sort -k5,5 | head -n 40
}
check_ok "error window ${window} ms <= $WINDOW_MAX_MS ms (configuration: see WINDOW_MAX_MS)" \
    test "$window" -le "$WINDOW_MAX_MS"
((window <= WINDOW_MAX_MS)) || timeline
check_eq "every acknowledged account verifies after the failover" \
    "$(s2 verifyall "$ITEST_DIR/churn.txt" pw12345 | cut -d' ' -f1,2)" "lost 0"

# An announced failover (SENTINEL FAILOVER): the primary is demoted, not killed, so reads alone
# would never meet READONLY there; server2 follows +switch-master and leaves it, idle or not.
primary_port() { scli "${SPORTS[0]}" sentinel get-master-addr-by-name mymaster | sed -n 2p; }
named() { rcli "$1" client list | grep -c 'name=server2' || true; }
# settled first: every Sentinel names one primary, and both workers are connected to it
settled() {
    local p q s
    p=$(primary_port)
    for s in "${SPORTS[@]}"; do
        q=$(scli "$s" sentinel get-master-addr-by-name mymaster | sed -n 2p)
        [[ $q == "$p" ]] || return 1
    done
    test "$(named "$p")" -ge 2
}
check_ok "the Sentinels agree on a primary, and server2's connections are on it" \
    wait_until 30 settled
OLD=$(primary_port)
asked() { scli "${SPORTS[0]}" sentinel failover mymaster | grep -qx OK; }
wait_until 30 asked || itest_fail "SENTINEL FAILOVER was refused"
moved() { [[ $(primary_port) != "$OLD" ]]; }
check_ok "SENTINEL FAILOVER moved the primary" wait_until 30 moved
NEW=$(primary_port)
check_ok "server2 heard +switch-master" \
    wait_until 5 grep -q "the primary of 'mymaster' moved" "$ITEST_DIR/server2.log"
left_old() { test "$(named "$OLD")" -eq 0; }
check_ok "... and left the demoted primary without a request" wait_until 10 left_old
check_eq "a VERIFY after the announced failover" "$(s2 verify first pw12345)" ok
check_ok "... served by the new primary ($NEW)" test "$(named "$NEW")" -ge 1
# (its one replica is the demoted node, which must first resynchronise: WAIT 1 refuses until then)
out=$(s2 until ok create second pw12345 20)
check_ok "a CREATE after it, once the demoted node is a replica ($out)" grep -q '^ok after' <<<"$out"

# a Sentinel URL with an unknown master: server2 starts, says why, answers unavailable
P=$(itest_server2 server2-nosuch "${URL%/mymaster}/nosuch" "$ITEST_DIR/a/password" --workers 1 \
    --sentinel-password-file "$ITEST_DIR/sentinel.password")
check_eq "an unknown master: CREATE unavailable" \
    "$(python3 "$HERE/s2client.py" --port "$P" --secret-file "$ITEST_DIR/link.secret" \
        create x pw12345)" unavailable
check_ok "... and the log says the Sentinels do not know it" \
    wait_until 5 grep -q "does not know master 'nosuch'" "$ITEST_DIR/server2-nosuch.log"

# a server2 not given the Sentinels' password: warned at start, no primary found, NOAUTH logged
P=$(
    unset S2_SENTINEL_PASSWORD
    itest_server2 server2-nopw "$URL" "$ITEST_DIR/a/password" --workers 1
)
check_ok "without --sentinel-password-file: a warning at start" \
    grep -q 'Sentinels are asked without a password' "$ITEST_DIR/server2-nopw.log"
check_eq "... CREATE unavailable" \
    "$(python3 "$HERE/s2client.py" --port "$P" --secret-file "$ITEST_DIR/link.secret" \
        create y pw12345)" unavailable
check_ok "... and the log says the Sentinel wants a password" \
    wait_until 5 grep -q "Sentinel 127.0.0.1:[0-9]*: NOAUTH" "$ITEST_DIR/server2-nopw.log"
itest_summary
