#!/usr/bin/env bash
# The sign-up policy and the accounts' admin tool, on Redis and on MariaDB: two server2s (A, B)
# on one database, a server1 on each (X on A, Y on B) with --signup closed and the credential
# cache on. Sign-up answers 403 and creates nothing; `server2 admin create` makes the account;
# `reset` is refused the old password at once through X, which had it cached, and through Y,
# on the other server2 (revoke.py: no 200 for a request sent after the tool exited); the
# account's own password change still works; `lock` made while A hangs waits until X can no
# longer answer from its cache, and refuses the password (401), `unlock`
# accepts it again; `delete` makes it 401; `list` shows the expected rows, also over many SCAN
# pages (3003 accounts on Redis); bad input exits 2 and changes nothing; the database down
# exits 3; on a terminal the password is asked twice without echo (ttyrun.py); no
# password ever appears in the tool's output or in a server's log.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init admin
itest_timeout 300
require_cmd curl python3

PASS=first-horse-$$ # none of these may appear in any log or in the tool's output
NEWPASS=second-battery-$$
OWNPASS=third-staple-$$
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/f1k"
SECRET=$ITEST_DIR/link.secret
(umask 077 && head -c 32 /dev/urandom >"$SECRET")
REVOKE=$ITEST_ROOT/tests/integration/revoke.py
TTYRUN=$ITEST_ROOT/tests/integration/ttyrun.py
OUT=$ITEST_DIR/admin.out # everything the tool printed, stdout and stderr
PWFILE=$ITEST_DIR/newpass # --password-file
(umask 077 && printf '%s\n' "$NEWPASS" >"$PWFILE")

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
status_is() {
    local want=$1
    shift
    [[ $(code "$@") == "$want" ]]
}
# metric URL NAME: NAME's value from the metrics listener of the server1 at URL
declare -A METRICS_OF=()
metric() { curl -s --max-time 5 "${METRICS_OF[$1]}" | awk -v m="$2" '$1 == m { print $2 }'; }
leased() {
    local v
    v=$(metric "$1" server1_auth_leases_total)
    [[ ${v:-0} -ge 1 ]]
}

# start_s2 NAME MODE URL PWFILE: sets S2_PORT, S2_PID.
start_s2() {
    itest_start "$1" server2 --port 0 --backend "$3" --backend-password-file "$4" \
        --mode "$2" --workers 2 --hash-cost min --login-fail-limit 0 --secret-file "$SECRET" ||
        itest_fail "$1: server2 did not start"
    S2_PORT=$ITEST_PORT
    S2_PID=$ITEST_PID_LAST
}
# start_s1 NAME S2PORT FLAGS...: sets URL, PID.
start_s1() {
    local name=$1 port=$2
    shift 2
    itest_start "$name" server1 --port 0 --threads 2 --root "$ROOT" --read-only \
        --auth "127.0.0.1:$port" --auth-secret-file "$SECRET" --login-fail-limit 0 \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 --signup closed \
        --auth-cache 1000 --auth-cache-ttl 60s "$@" || itest_fail "$name: server1 did not start"
    URL=$ITEST_URL
    PID=$ITEST_PID_LAST
    METRICS_OF[$URL]=$ITEST_METRICS_URL
    wait_until 10 status_is 200 "$URL/healthz" || itest_fail "$name: not healthy"
}
# admin ARGS...: `server2 admin` on the database of this round ($DB_URL, $DB_PW); its output
# (both streams) is appended to $OUT and left in ADMIN_OUT, its exit status in ADMIN_RC.
admin() {
    local f=$ITEST_DIR/admin.last
    ADMIN_RC=0
    "$BIN_DIR/server2" admin --backend "$DB_URL" --backend-password-file "$DB_PW" \
        --hash-cost min "$@" >"$f" 2>&1 || ADMIN_RC=$?
    ADMIN_OUT=$(<"$f")
    cat "$f" >>"$OUT"
}
# admin_is LABEL RC ARGS...: `admin ARGS...` exits RC
admin_is() {
    local label=$1 rc=$2
    shift 2
    admin "$@"
    check_eq "$label: exit status ($ADMIN_OUT)" "$ADMIN_RC" "$rc"
}
stop_pid() {
    local rc=0
    kill -TERM "$2"
    wait "$2" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
}

round() {
    local b=$1 u=ann-$1 X X_PID Y Y_PID A_PID B_PID out st okafter took rc
    DB_URL=$2 DB_PW=$3
    start_s2 "$b-s2a" threads "$DB_URL" "$DB_PW"
    A_PID=$S2_PID
    start_s1 "$b-x" "$S2_PORT"
    X=$URL X_PID=$PID
    start_s2 "$b-s2b" processes "$DB_URL" "$DB_PW"
    B_PID=$S2_PID
    start_s1 "$b-y" "$S2_PORT"
    Y=$URL Y_PID=$PID

    # sign-up closed: 403 from server1 itself, nothing created
    check_eq "$b: POST /users with sign-up closed: 403" \
        "$(code -d "username=$u&password=$PASS" "$X/users")" 403
    check_eq "$b: ... saying so" "$(curl -s -d "username=$u&password=$PASS" "$Y/users")" \
        "sign-up is closed; ask the administrator"
    check_eq "$b: ... counted" "$(metric "$X" server1_signups_refused_total)" 1
    admin_is "$b: list" 0 list
    check_eq "$b: ... nothing was created" "$ADMIN_OUT" ""
    check_eq "$b: ... and nothing logged in" "$(code -u "$u:$PASS" "$X/files/f1k")" 401

    # create, with the password on stdin (not a terminal)
    admin_is "$b: create $u" 0 create "$u" <<<"$PASS"
    check_eq "$b: ... says so" "$ADMIN_OUT" "created '$u'"
    check_eq "$b: GET through X (server2 A)" "$(code -u "$u:$PASS" "$X/files/f1k")" 200
    check_eq "$b: GET through Y (server2 B)" "$(code -u "$u:$PASS" "$Y/files/f1k")" 200
    admin_is "$b: create $u again: exists" 1 create "$u" <<<"$PASS"
    admin_is "$b: create bob from --password-file" 0 create bob --password-file "$PWFILE"
    check_eq "$b: ... bob's password is the file's first line" \
        "$(code -u "bob:$NEWPASS" "$Y/files/f1k")" 200

    # reset: X and Y both have the old password cached; no 200 for it once the tool is done
    check_ok "$b: X holds a lease" wait_until 10 leased "$X"
    check_ok "$b: Y holds a lease" wait_until 10 leased "$Y"
    out=$(python3 "$REVOKE" --watch "${X#*://}" --watch "${Y#*://}" --user "$u" --old "$PASS" \
        --file f1k --run "$BIN_DIR/server2 admin --backend $DB_URL --backend-password-file \
$DB_PW --hash-cost min --password-file $PWFILE reset $u")
    log "$b: reset: $out"
    read -r st _ okafter _ <<<"$out"
    check_eq "$b: reset: the tool's exit status" "$st" exit=0
    check_eq "$b: reset: no 200 for the old password after the tool exited, through X or Y" \
        "$okafter" ok-after=0
    check_ok "$b: ... X had answered from its cache ($(metric "$X" server1_auth_cache_hits_total))" \
        test "$(metric "$X" server1_auth_cache_hits_total)" -gt 10
    check_eq "$b: old password through X: 401" "$(code -u "$u:$PASS" "$X/files/f1k")" 401
    check_eq "$b: old password through Y: 401" "$(code -u "$u:$PASS" "$Y/files/f1k")" 401
    check_eq "$b: new password through X: 200" "$(code -u "$u:$NEWPASS" "$X/files/f1k")" 200
    check_eq "$b: new password through Y: 200" "$(code -u "$u:$NEWPASS" "$Y/files/f1k")" 200

    # the account's own password change works with sign-up closed
    check_eq "$b: PUT /users/$u by its owner: 204" "$(code -X PUT -u "$u:$NEWPASS" \
        -H 'Content-Type: application/x-www-form-urlencoded' --data "password=$OWNPASS" \
        "$X/users/$u")" 204
    check_eq "$b: ... the new password through Y" "$(code -u "$u:$OWNPASS" "$Y/files/f1k")" 200

    # lock while server2 A hangs (SIGSTOP, 5 s): the tool waits for A's registration to run
    # out (3.5 s), by when X, on A, no longer answers from its cache; then refused like a wrong
    # password where it was cached
    for _ in 1 2 3; do code -u "$u:$OWNPASS" "$X/files/f1k" >/dev/null; done
    out=$(python3 "$REVOKE" --watch "${X#*://}" --user "$u" --old "$OWNPASS" --file f1k \
        --freeze "$A_PID" 5000 --after 2 --run "$BIN_DIR/server2 admin --backend $DB_URL \
--backend-password-file $DB_PW lock $u")
    log "$b: lock, server2 A frozen: $out"
    read -r st _ okafter _ _ took <<<"$out"
    took=${took#took=}
    check_eq "$b: lock, A frozen: the tool's exit status" "$st" exit=0
    check_eq "$b: lock, A frozen: no 200 through X after the tool exited" "$okafter" ok-after=0
    check_ok "$b: ... the tool waited for A's registration to run out (${took})" \
        test "${took%ms}" -ge 1500
    check_ok "$b: locked: GET through X (cached before): 401" \
        wait_until 10 status_is 401 -u "$u:$OWNPASS" "$X/files/f1k"
    check_eq "$b: locked: GET through Y: 401" "$(code -u "$u:$OWNPASS" "$Y/files/f1k")" 401
    check_eq "$b: locked: the owner's password change: 401" "$(code -X PUT -u "$u:$OWNPASS" \
        -H 'Content-Type: application/x-www-form-urlencoded' --data "password=x$OWNPASS" \
        "$X/users/$u")" 401
    admin_is "$b: lock $u again: nothing to do" 0 lock "$u"
    check_eq "$b: ... says so" "$ADMIN_OUT" "'$u' is locked already"
    admin_is "$b: list" 0 list
    check_eq "$b: ... rows" "$ADMIN_OUT" "$(printf '%s\t%s\n%s\t%s' "$u" locked bob active)"
    admin_is "$b: unlock $u" 0 unlock "$u"
    check_eq "$b: unlocked: GET through X: 200" "$(code -u "$u:$OWNPASS" "$X/files/f1k")" 200
    check_eq "$b: unlocked: GET through Y: 200" "$(code -u "$u:$OWNPASS" "$Y/files/f1k")" 200

    # bad input: exit 2, nothing changed
    admin_is "$b: reset with an empty password" 2 reset "$u" </dev/null
    admin_is "$b: reset with a 257-byte password" 2 reset "$u" <<<"$(head -c 257 /dev/zero | tr '\0' a)"
    admin_is "$b: reset with a missing --password-file" 2 reset "$u" \
        --password-file "$ITEST_DIR/none"
    A256=$(head -c 256 /dev/zero | tr '\0' a)
    admin_is "$b: reset bob with a 256-byte password (the longest)" 0 reset bob <<<"$A256"
    check_eq "$b: ... which works" "$(code -u "bob:$A256" "$Y/files/f1k")" 200
    admin_is "$b: a bad name" 2 lock 'a b'
    admin_is "$b: an unknown command" 2 rename "$u"
    admin_is "$b: create without a name" 2 create
    admin_is "$b: after --, a name that begins with '-' is a name (none such)" 1 -- lock -nobody
    admin_is "$b: after --, a third word: refused" 2 -- lock "$u" -x
    check_eq "$b: ... the password unchanged" "$(code -u "$u:$OWNPASS" "$Y/files/f1k")" 200

    # delete, and what is left
    admin_is "$b: delete $u" 0 delete "$u"
    check_eq "$b: deleted: GET through X: 401" "$(code -u "$u:$OWNPASS" "$X/files/f1k")" 401
    check_eq "$b: deleted: GET through Y: 401" "$(code -u "$u:$OWNPASS" "$Y/files/f1k")" 401
    admin_is "$b: delete $u again: not found" 1 delete "$u"
    admin_is "$b: reset nobody: not found" 1 reset nobody --password-file "$PWFILE"
    admin_is "$b: unlock nobody: not found" 1 unlock nobody
    admin_is "$b: create $u, deleted: its name stays taken" 1 create "$u" --password-file "$PWFILE"
    check_eq "$b: DELETE /users/bob by its owner, sign-up closed: 204" \
        "$(code -X DELETE -u "bob:$A256" "$Y/users/bob")" 204
    admin_is "$b: list" 0 list
    check_eq "$b: ... rows" "$ADMIN_OUT" "$(printf '%s\t%s\n%s\t%s' "$u" deleted bob deleted)"

    # on a terminal: the password is asked twice, without echo; two that differ: exit 2
    rc=0
    out=$(python3 "$TTYRUN" "$PASS" "$PASS" -- "$BIN_DIR/server2" admin --backend "$DB_URL" \
        --backend-password-file "$DB_PW" --hash-cost min create carol) || rc=$?
    printf '%s\n' "$out" >>"$OUT"
    check_eq "$b: create carol on a terminal: exit status" "$rc" 0
    check_eq "$b: ... asked twice, nothing echoed" "${out//$'\r'/}" \
        "$(printf "new password for 'carol': \nthe same again: \ncreated 'carol'")"
    check_eq "$b: ... carol's password works" "$(code -u "carol:$PASS" "$Y/files/f1k")" 200
    rc=0
    out=$(python3 "$TTYRUN" "$PASS" "x$PASS" -- "$BIN_DIR/server2" admin --backend "$DB_URL" \
        --backend-password-file "$DB_PW" --hash-cost min create dave) || rc=$?
    printf '%s\n' "$out" >>"$OUT"
    check_eq "$b: create dave, two passwords that differ: exit status" "$rc" 2
    check_eq "$b: ... saying so" "${out//$'\r'/}" "$(printf "new password for 'dave': \n\
the same again: \nserver2 admin: the two passwords differ")"
    check_eq "$b: ... not created" "$(code -u "dave:$PASS" "$Y/files/f1k")" 401

    stop_pid "$b: server1 X" "$X_PID"
    stop_pid "$b: server1 Y" "$Y_PID"
    stop_pid "$b: server2 A" "$A_PID"
    stop_pid "$b: server2 B" "$B_PID"
}

redis_port=$(itest_redis_start)
round redis "redis://127.0.0.1:$redis_port" "$ITEST_DIR/redis/password"

# a list longer than one SCAN page (500 keys a page): 3000 accounts more, stored behind the
# tool's back as copies of carol's record; every one listed once, in order; then, with the
# database down, exit 3
export REDISCLI_AUTH
REDISCLI_AUTH=$(<"$ITEST_DIR/redis/password")
rec=$(redis-cli -p "$redis_port" --no-auth-warning GET user:carol)
check_ok "redis: carol's record read" test -n "$rec"
for i in $(seq -w 0 2999); do printf 'SET user:p%s "%s"\n' "$i" "$rec"; done |
    redis-cli -p "$redis_port" --no-auth-warning >/dev/null
check_eq "redis: 3003 accounts stored" \
    "$(redis-cli -p "$redis_port" --no-auth-warning --scan --pattern 'user:*' | wc -l)" 3003
DB_URL=redis://127.0.0.1:$redis_port DB_PW=$ITEST_DIR/redis/password
admin list
check_eq "redis: list of 3003 accounts (7 SCAN pages at least): exit status" "$ADMIN_RC" 0
check_eq "redis: ... 3003 rows" "$(wc -l <<<"$ADMIN_OUT")" 3003
check_eq "redis: ... each once" "$(cut -f1 <<<"$ADMIN_OUT" | LC_ALL=C sort -u | wc -l)" 3003
check_eq "redis: ... sorted" "$(cut -f1 <<<"$ADMIN_OUT")" "$(cut -f1 <<<"$ADMIN_OUT" | LC_ALL=C sort)"
check_eq "redis: ... p0000 to p2999 all active" \
    "$(awk -F'\t' '$1 ~ /^p[0-9][0-9][0-9][0-9]$/ && $2 == "active"' <<<"$ADMIN_OUT" | wc -l)" 3000
unset REDISCLI_AUTH

# the database down: exit 3, saying so
DB_URL=redis://127.0.0.1:$(free_port)/0
admin_is "redis: list with the database down: the database failed" 3 list
check_ok "redis: ... saying so" grep -q '^server2 admin: ' <<<"$ADMIN_OUT"
mysql_port=$(itest_mysql_start)
round mysql "mysql://auth@127.0.0.1:$mysql_port/auth" "$ITEST_DIR/mysql/password"

# no password in the tool's output, or in any server's log
for p in "$PASS" "$NEWPASS" "$OWNPASS"; do
    check_ok "no password in the tool's output" test -s "$OUT" -a -z "$(grep -F -- "$p" "$OUT")"
    check_eq "no password in any log" "$(grep -lF -- "$p" "$ITEST_DIR"/*.log)" ""
done
itest_summary
