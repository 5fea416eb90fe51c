#!/usr/bin/env bash
# Accounts that change, over HTTP, and the credential cache of server1 (--auth-cache) that
# must never outlive them: PUT /users/NAME (password=NEW) and DELETE /users/NAME, each with the
# account's own Basic credentials; two server1 processes on one server2 (threads mode, then
# processes mode), both caching, hammered with the old password while one of them changes it:
# no request sent after the 204 is received gets 200 (revoke.py measures it), and the 204 waits
# for a server1 that is frozen meanwhile. Then several server2s on one database (Redis, then
# MariaDB): a change made through one reaches the server1s of every other, also one whose link
# to it is not up yet, and one whose server2 hangs or dies. Then the cache's
# own rules: a lost connection to server2 (server2 killed) empties it, --auth-cache-ttl bounds
# an entry's life, --auth-cache-ttl 0 turns it off, and the HTTP errors of the two routes.
# (The old passwords hammered are failed logins: server2's --login-fail-limit is off here, as are
# server1's limits; tests/integration/test_login_limit.sh tests them.)
# itest-https: no (accounts and the credential cache do not see the transport)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init accounts
itest_timeout 480
require_cmd curl python3

PASS=old-horse-$$ # must never appear in any log
NEWPASS=new-battery-$$
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/f1k"
SECRET=$ITEST_DIR/link.secret
(umask 077 && head -c 32 /dev/urandom >"$SECRET")
REVOKE=$ITEST_ROOT/tests/integration/revoke.py

redis_port=$(itest_redis_start)
REDIS_URL=redis://127.0.0.1:$redis_port

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
# status_is CODE CURL_ARGS...: true if a request made now gets CODE (wait_until re-runs it)
status_is() {
    local want=$1
    shift
    [[ $(code "$@") == "$want" ]]
}
# metric URL NAME: NAME's value in /metrics of the server1 at URL (on its --metrics-listen)
declare -A METRICS_OF
metric() { curl -s --max-time 5 "${METRICS_OF[$1]}" | awk -v m="$2" '$1 == m { print $2 }'; }

# start_s2 NAME MODE [PORT]: sets S2_PORT, S2_PID.
start_s2() {
    itest_start "$1" server2 --port "${3:-0}" --backend "$REDIS_URL" \
        --backend-password-file "$ITEST_DIR/redis/password" --mode "$2" --workers 2 \
        --hash-cost min --login-fail-limit 0 --secret-file "$SECRET" || itest_fail "$1: server2 did not start"
    S2_PORT=$ITEST_PORT
    S2_PID=$ITEST_PID_LAST
}
# start_s1 NAME FLAGS...: a server1 on $S2_PORT; sets URL and PID of the last one.
start_s1() {
    local name=$1
    shift
    itest_start "$name" server1 --port 0 --threads 2 --root "$ROOT" --read-only \
        --auth "127.0.0.1:$S2_PORT" --auth-secret-file "$SECRET" --login-fail-limit 0 \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 "$@" ||
        itest_fail "$name: server1 did not start"
    URL=$ITEST_URL
    METRICS_OF[$URL]=$ITEST_METRICS_URL
    PID=$ITEST_PID_LAST
    wait_until 10 status_is 200 "$URL/healthz" || itest_fail "$name: not healthy"
}
stop_pid() {
    local rc=0
    kill -TERM "$2"
    wait "$2" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
}

# ---- revocation over two server1s, in both server2 modes --------------------------------------
for mode in threads processes; do
    u=alice-$mode
    start_s2 "$mode-server2" "$mode"
    start_s1 "$mode-a" --auth-cache 1000 --auth-cache-ttl 60s
    A=$URL A_PID=$PID
    start_s1 "$mode-b" --auth-cache 1000 --auth-cache-ttl 60s
    B=$URL B_PID=$PID
    check_eq "$mode: create" "$(code -d "username=$u&password=$PASS" "$A/users")" 201
    check_eq "$mode: GET through A" "$(code -u "$u:$PASS" "$A/files/f1k")" 200
    check_eq "$mode: GET through B" "$(code -u "$u:$PASS" "$B/files/f1k")" 200

    # B is frozen (SIGSTOP) for 400 ms as the change is sent through A: A's 204 must wait for B
    out=$(python3 "$REVOKE" --watch "${A#*://}" --watch "${B#*://}" --changer "${A#*://}" \
        --user "$u" --old "$PASS" --new "$NEWPASS" --file f1k --freeze "$B_PID" 400)
    log "$mode: password change, A and B hammered with the old one, B frozen 400 ms: $out"
    read -r st sent okafter okbefore last took <<<"$out"
    took=${took#took=}
    check_ok "$mode: the 204 waited for the frozen server1 to forget (${took%ms} ms >= 400)" \
        test "${took%ms}" -ge 400
    check_eq "$mode: PUT /users/$u answers 204" "$st" 204
    check_eq "$mode: no 200 for the old password after the 204 (${sent#*=} requests)" \
        "$okafter" ok-after=0
    check_ok "$mode: ... which was served (from the caches) before it (${okbefore#*=})" \
        test "${okbefore#*=}" -gt 100
    check_ok "$mode: ... and sent after it: ${sent#*=} (last 200 at ${last#*=} from the 204)" \
        test "${sent#*=}" -gt 10
    hits_a=$(metric "$A" server1_auth_cache_hits_total)
    hits_b=$(metric "$B" server1_auth_cache_hits_total)
    check_ok "$mode: both caches answered ($hits_a and $hits_b hits)" \
        test "${hits_a:-0}" -gt 10 -a "${hits_b:-0}" -gt 10
    check_ok "$mode: both were told (INVALIDATE)" \
        test "$(metric "$A" server1_auth_invalidations_total)" -ge 1 -a \
        "$(metric "$B" server1_auth_invalidations_total)" -ge 1
    check_eq "$mode: new password through B" "$(code -u "$u:$NEWPASS" "$B/files/f1k")" 200
    check_eq "$mode: old password through B" "$(code -u "$u:$PASS" "$B/files/f1k")" 401

    out=$(python3 "$REVOKE" --watch "${A#*://}" --watch "${B#*://}" --changer "${B#*://}" \
        --user "$u" --old "$NEWPASS" --delete --file f1k)
    log "$mode: deletion, A and B hammered with the password: $out"
    read -r st sent okafter okbefore last took <<<"$out"
    check_eq "$mode: DELETE /users/$u answers 204" "$st" 204
    check_eq "$mode: no 200 after the 204 (${sent#*=} requests)" "$okafter" ok-after=0
    check_ok "$mode: ... served before it (${okbefore#*=})" test "${okbefore#*=}" -gt 100
    check_eq "$mode: the deleted account through A" "$(code -u "$u:$NEWPASS" "$A/files/f1k")" 401
    check_eq "$mode: its name cannot be taken again" \
        "$(code -d "username=$u&password=x$PASS" "$A/users")" 409
    stop_pid "$mode: server1 A" "$A_PID"
    stop_pid "$mode: server1 B" "$B_PID"
    stop_pid "$mode: server2" "$S2_PID"
done

# ---- several server2s on one database ------------------------------------------------------------
# Every account change reaches every server2 on the database through its change feed, and a
# server1 answers from its cache only under a lease: X caches through server2 A only, the
# change goes through server2 B (Y); then X also lists a server2 it is not yet connected to; then
# A hangs (SIGSTOP) while the change is made, and dies. No request sent after the 204 gets 200.
# start_s2_on NAME MODE URL PASSWORD_FILE [PORT]: sets S2_PORT, S2_PID.
start_s2_on() {
    itest_start "$1" server2 --port "${5:-0}" --backend "$3" --backend-password-file "$4" \
        --mode "$2" --workers 2 --hash-cost min --login-fail-limit 0 --secret-file "$SECRET" ||
        itest_fail "$1: server2 did not start"
    S2_PORT=$ITEST_PORT
    S2_PID=$ITEST_PID_LAST
}
leased() {
    local v
    v=$(metric "$1" server1_auth_leases_total)
    [[ ${v:-0} -ge 1 ]]
}
# revoke_check LABEL REVOKE_ARGS...: runs revoke.py; 204 and no 200 after it
revoke_check() {
    local label=$1 out st sent okafter okbefore last took
    shift
    out=$(python3 "$REVOKE" "$@")
    log "$label: $out"
    read -r st sent okafter okbefore last took <<<"$out"
    check_eq "$label: 204" "$st" 204
    check_eq "$label: no 200 for the old password after the 204 (${sent#*=} sent, ${took})" \
        "$okafter" ok-after=0
    TOOK=${took#took=}
    TOOK=${TOOK%ms}
}
several_server2s() {
    local b=$1 url=$2 pwf=$3 u=dave-$1 n=0 SA SA_PID SB X X_PID Y Y_PID bport
    start_s2_on "$b-s2a" threads "$url" "$pwf"
    SA=$S2_PORT SA_PID=$S2_PID
    start_s2_on "$b-s2b" processes "$url" "$pwf"
    SB=$S2_PORT
    start_s1 "$b-x" --auth "127.0.0.1:$SA" --auth-cache 1000 --auth-cache-ttl 60s \
        --auth-timeout 1s
    X=$URL X_PID=$PID
    start_s1 "$b-y" --auth "127.0.0.1:$SB"
    Y=$URL Y_PID=$PID
    check_ok "$b: X holds a lease from server2 A" wait_until 10 leased "$X"
    check_eq "$b: create through Y (server2 B)" "$(code -d "username=$u&password=$PASS" "$Y/users")" 201
    revoke_check "$b: X caches through A, the change goes through B" --watch "${X#*://}" \
        --changer "${Y#*://}" --user "$u" --old "$PASS" --new "${NEWPASS}1" --file f1k
    check_ok "$b: ... X answered from its cache before ($(metric "$X" server1_auth_cache_hits_total))" \
        test "$(metric "$X" server1_auth_cache_hits_total)" -gt 10
    check_eq "$b: the new password through X" "$(code -u "$u:${NEWPASS}1" "$X/files/f1k")" 200

    # X2 lists A and a server2 not yet up; that one starts, and takes the change at once
    bport=$(free_port)
    start_s1 "$b-x2" --auth "127.0.0.1:$SA,127.0.0.1:$bport" --auth-cache 1000 \
        --auth-cache-ttl 60s
    X2=$URL
    check_ok "$b: X2 holds a lease" wait_until 10 leased "$X2"
    start_s2_on "$b-s2c" threads "$url" "$pwf" "$bport"
    start_s1 "$b-y2" --auth "127.0.0.1:$bport"
    revoke_check "$b: X2 caches through A; its link to C is not up when C takes the change" \
        --watch "${X2#*://}" --changer "${URL#*://}" --user "$u" --old "${NEWPASS}1" \
        --new "${NEWPASS}2" --file f1k --warmup 0.3

    # A hangs for 5 s while the change is made through B: the 204 waits for A's registration
    # to run out (changefeed.h: 3.5 s), X has stopped using its cache before, and when A is
    # back X does not take the old password from its cache
    check_eq "$b: cached again through X" "$(code -u "$u:${NEWPASS}2" "$X/files/f1k")" 200
    revoke_check "$b: server2 A hangs (SIGSTOP, 5 s) while the change goes through B" \
        --watch "${X#*://}" --changer "${Y#*://}" --user "$u" --old "${NEWPASS}2" \
        --new "${NEWPASS}3" --file f1k --freeze "$SA_PID" 5000 --after 2
    check_ok "$b: ... the 204 did not wait for A to come back (${TOOK} ms < 5000)" \
        test "$TOOK" -lt 5000
    check_ok "$b: X answers again once A is back" \
        wait_until 10 status_is 200 -u "$u:${NEWPASS}3" "$X/files/f1k"
    check_eq "$b: ... and refuses the old password" "$(code -u "$u:${NEWPASS}2" "$X/files/f1k")" 401

    # A dies: B's changes wait for its registration to run out, then go on
    kill -KILL "$SA_PID"
    wait "$SA_PID" 2>/dev/null || true
    check_eq "$b: a change through B after A died: 204" "$(code -X PUT -u "$u:${NEWPASS}3" \
        -H 'Content-Type: application/x-www-form-urlencoded' --data "password=${NEWPASS}4" \
        "$Y/users/$u")" 204
    check_eq "$b: X, without a server2, does not answer from its cache" \
        "$(code -u "$u:${NEWPASS}3" "$X/files/f1k")" 503
    stop_pid "$b: server1 X" "$X_PID"
    stop_pid "$b: server1 Y" "$Y_PID"
    n=$(cat "$ITEST_DIR/$b"-s2*.log | grep -c 'account change is answered' || true)
    check_eq "$b: no account change answered before every server2 had told its server1s" "$n" 0
}
several_server2s redis "$REDIS_URL" "$ITEST_DIR/redis/password"
mysql_port=$(itest_mysql_start)
several_server2s mysql "mysql://auth@127.0.0.1:$mysql_port/auth" "$ITEST_DIR/mysql/password"

# ---- reconnect = forget -----------------------------------------------------------------------
s2port=$(free_port)
start_s2 forget-server2 threads "$s2port"
start_s1 forget --auth-cache 1000 --auth-cache-ttl 60s --auth-timeout 2s
F=$URL F_PID=$PID
check_eq "forget: create" "$(code -d "username=bob&password=$PASS" "$F/users")" 201
for i in 1 2 3 4 5 6; do code -u "bob:$PASS" "$F/files/f1k" >/dev/null; done
check_ok "forget: cached ($(metric "$F" server1_auth_cache_entries) entries)" \
    test "$(metric "$F" server1_auth_cache_entries)" -ge 1
kill -KILL "$S2_PID"
wait "$S2_PID" 2>/dev/null || true
check_ok "forget: server1 saw server2 go" wait_until 10 grep -q 'lost every connection' "$ITEST_DIR/forget.log"
check_eq "forget: the cache is empty" "$(metric "$F" server1_auth_cache_entries)" 0
check_eq "forget: a cached password gets 503 without server2, not 200" \
    "$(code -u "bob:$PASS" "$F/files/f1k")" 503
start_s2 forget-server2b threads "$s2port"
check_ok "forget: served again once server2 is back" \
    wait_until 15 status_is 200 -u "bob:$PASS" "$F/files/f1k"
stop_pid "forget: server1" "$F_PID"

# ---- TTL ---------------------------------------------------------------------------------------
start_s1 ttl --auth-cache 1000 --auth-cache-ttl 1s --threads 1
T=$URL T_PID=$PID
for i in 1 2 3; do code -u "bob:$PASS" "$T/files/f1k" >/dev/null; done
check_eq "ttl 1s: 1 miss, then hits" \
    "$(metric "$T" server1_auth_cache_misses_total) $(metric "$T" server1_auth_cache_hits_total)" "1 2"
sleep 1.2
check_eq "ttl 1s: GET after the TTL" "$(code -u "bob:$PASS" "$T/files/f1k")" 200
check_eq "ttl 1s: ... asked server2 again (2 misses)" \
    "$(metric "$T" server1_auth_cache_misses_total)" 2
stop_pid "ttl: server1" "$T_PID"

start_s1 ttl0 --auth-cache 1000 --auth-cache-ttl 0 --threads 1
T=$URL T_PID=$PID
for i in 1 2 3 4; do code -u "bob:$PASS" "$T/files/f1k" >/dev/null; done
check_eq "ttl 0: the cache is off (no hit, no miss)" \
    "$(metric "$T" server1_auth_cache_hits_total) $(metric "$T" server1_auth_cache_misses_total)" "0 0"
stop_pid "ttl0: server1" "$T_PID"

# ---- the routes' errors -------------------------------------------------------------------------
start_s1 routes --auth-cache 1000
R=$URL R_PID=$PID
check_eq "create carol" "$(code -d "username=carol&password=$PASS" "$R/users")" 201
form=(-H 'Content-Type: application/x-www-form-urlencoded')
check_eq "PUT /users/carol as bob: 403" \
    "$(code -X PUT -u "bob:$PASS" "${form[@]}" --data "password=x" "$R/users/carol")" 403
check_eq "PUT /users/carol, wrong password: 401" \
    "$(code -X PUT -u "carol:x$PASS" "${form[@]}" --data "password=x" "$R/users/carol")" 401
check_eq "PUT /users/carol, no credentials: 401" \
    "$(code -X PUT "${form[@]}" --data "password=x" "$R/users/carol")" 401
check_eq "PUT /users/carol, not a form: 415" \
    "$(code -X PUT -u "carol:$PASS" -H 'Content-Type: text/plain' --data "password=x" "$R/users/carol")" 415
check_eq "PUT /users/carol, no password field: 400" \
    "$(code -X PUT -u "carol:$PASS" "${form[@]}" --data "pw=x" "$R/users/carol")" 400
check_eq "PUT /users/carol, empty password: 400" \
    "$(code -X PUT -u "carol:$PASS" "${form[@]}" --data "password=" "$R/users/carol")" 400
check_eq "GET /users/carol: 405" "$(code -u "carol:$PASS" "$R/users/carol")" 405
check_eq "PUT /users/bad%20name: 404" \
    "$(code -X PUT -u "carol:$PASS" "${form[@]}" --data "password=x" "$R/users/bad%20name")" 404
check_eq "DELETE /users/carol as bob: 403" "$(code -X DELETE -u "bob:$PASS" "$R/users/carol")" 403
check_eq "carol unchanged" "$(code -u "carol:$PASS" "$R/files/f1k")" 200
check_eq "PUT /users/carol: 204" \
    "$(code -X PUT -u "carol:$PASS" "${form[@]}" --data "password=$NEWPASS" "$R/users/carol")" 204
check_eq "carol with the new password" "$(code -u "carol:$NEWPASS" "$R/files/f1k")" 200
stop_pid "routes: server1" "$R_PID"

check_eq "no password in any log" \
    "$(cat "$ITEST_DIR"/*.log | grep -c -F -e "$PASS" -e "$NEWPASS" || true)" 0
check_eq "no sanitizer report in any log" \
    "$(cat "$ITEST_DIR"/*.log | grep -c -E 'Sanitizer|runtime error:' || true)" 0
itest_summary
