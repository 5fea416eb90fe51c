#!/usr/bin/env bash
# test_server2.sh - server2 against a real redis-server and mariadbd, in threads and processes
# mode, driven by s2client.py (docs/protocol.md): create/verify statuses (a creation sent
# again with its token is answered ok, another creation of the name exists), 200 pipelined
# requests, every kind of bad input (that connection closes, a second one carries on), the
# backend killed (UNAVAILABLE) and restarted (OK again by itself), SIGTERM with requests in
# flight (all answered, exit 0), flags and start-up errors, answers one by one as each is
# hashed, an unknown user costing a hash, and that no password (account or database) ever
# reaches the log, even at debug level, or server2's command line: the databases require a
# password, given in a file or the environment; a password in the URL is refused. The link
# handshake: a client without the secret, or with another one, is closed before any request of
# it is read (its pipelined CREATE is not applied); the secret file's checks; the budget of a
# request that waits behind a busy worker runs out (EXPIRED).
# BIN_DIR selects the build (default build/release), e.g. BIN_DIR=build/asan.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init server2
itest_timeout 600

S2=${BIN_DIR:-$ITEST_ROOT/build/release}/server2
[[ -x $S2 ]] || itest_fail "no server2 binary at $S2 (run make, or set BIN_DIR)"
CLIENT=$ITEST_ROOT/tests/integration/s2client.py
PW='Pw-n0t-in-l0gs-7z'      # account password: must never appear in a log
URLPW='Url-s3cret-q9x'      # backend URL password: likewise
require_cmd python3

S2_PID=""
S2_PORT=""
S2_LOG=""
# the link secret every server2 here is started with, and another one
SECRET=$ITEST_DIR/link.secret
OTHER_SECRET=$ITEST_DIR/other.secret
(umask 077 && head -c 32 /dev/urandom >"$SECRET" && head -c 48 /dev/urandom >"$OTHER_SECRET")

# start_s2 NAME ARGS...: server2 on an ephemeral port, log in $ITEST_DIR/NAME.log, with the
# link secret $SECRET unless ARGS has --insecure-no-secret.
start_s2() {
    local name=$1
    shift
    S2_LOG=$ITEST_DIR/$name.log
    local link=(--secret-file "$SECRET")
    [[ " $* " == *" --insecure-no-secret "* ]] && link=()
    "$S2" --port 0 "${link[@]}" "$@" >"$S2_LOG" 2>&1 &
    S2_PID=$!
    itest_bg "$S2_PID"
    wait_until 20 grep -q 'listening on' "$S2_LOG" || itest_fail "$name: server2 did not start"
    S2_PORT=$(sed -n 's/.* listening on .*:\([0-9][0-9]*\)$/\1/p' "$S2_LOG" | head -n 1)
    [[ $S2_PORT =~ ^[0-9]+$ ]] || itest_fail "$name: no port in the 'listening on' line"
}

# stop_s2 NAME: SIGTERM, which must give exit status 0.
stop_s2() {
    local rc=0
    kill -TERM "$S2_PID"
    wait "$S2_PID" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
    check_eq "$1: no sanitizer report in the log" \
        "$(grep -c -E 'Sanitizer|runtime error:' "$S2_LOG" || true)" 0
}

cl() { python3 "$CLIENT" --port "$S2_PORT" --secret-file "$SECRET" "$@"; }
# a client that holds another secret
cl_other() { python3 "$CLIENT" --port "$S2_PORT" --secret-file "$OTHER_SECRET" "$@"; }
# rcli ARGS...: redis-cli on the test's Redis, to look in the database itself (with its
# password, when scripts/redis.sh made one)
rcli() {
    if [[ -s $ITEST_DIR/redis/password ]]; then
        REDISCLI_AUTH=$(<"$ITEST_DIR/redis/password") redis-cli -s "$ITEST_DIR/redis/redis.sock" "$@"
    else
        redis-cli -s "$ITEST_DIR/redis/redis.sock" "$@"
    fi
}

# no_secrets NAME: neither password in NAME's log (nor a sanitizer report: asan/tsan builds).
no_secrets() {
    local f=$ITEST_DIR/$1.log
    check_eq "$1: no sanitizer report in the log" \
        "$(grep -c -E 'Sanitizer|runtime error:' "$f" || true)" 0
    check_eq "$1: account password not in the log" "$(grep -c -F -e "$PW" "$f" || true)" 0
    check_eq "$1: URL password not in the log" "$(grep -c -F -e "$URLPW" "$f" || true)" 0
    local k
    for k in redis mysql; do
        [[ -s $ITEST_DIR/$k/password ]] || continue
        check_eq "$1: $k password not in the log" \
            "$(grep -c -F -e "$(<"$ITEST_DIR/$k/password")" "$f" || true)" 0
    done
}

# True when server2 ($S2_PID) has exactly $1 child processes.
# shellcheck disable=SC2317 # called through wait_until
has_children() { [[ $(pgrep -c -P "$S2_PID" || true) -eq $1 ]]; }

backend_pid() {
    case $1 in
    redis) cat "$ITEST_DIR/redis/redis.pid" ;;
    mysql) cat "$ITEST_DIR/mysql/mysqld.pid" ;;
    esac
}

# suite KIND URL MODE: the behaviour every backend/mode pair must have.
suite() {
    local kind=$1 url=$2 mode=$3
    local n="$kind-$mode" u="${kind:0:1}${mode:0:1}" out pid

    local pwf=$ITEST_DIR/$kind/password
    start_s2 "$n" --backend "$url" --backend-password-file "$pwf" --mode "$mode" --workers 2 \
        --hash-cost min --log-level debug
    check_eq "$n: hello" "$(cl hello)" ok
    check_eq "$n: create" "$(cl create "${u}alice" "$PW")" ok
    check_eq "$n: create again" "$(cl create "${u}alice" "$PW")" exists
    check_eq "$n: create again, other password" "$(cl create "${u}alice" other)" exists
    check_eq "$n: verify right password" "$(cl verify "${u}alice" "$PW")" ok
    check_eq "$n: verify wrong password" "$(cl verify "${u}alice" "${PW}x")" denied
    check_eq "$n: verify unknown user" "$(cl verify "${u}nobody" "$PW")" denied
    check_eq "$n: create invalid username" "$(cl create "bad name" "$PW")" invalid
    check_eq "$n: verify invalid username" "$(cl verify "a/b" "$PW")" invalid
    # a creation sent again (its answer lost): the same token is the same creation
    local tok=0123456789abcdef0123456789abcdef
    check_eq "$n: create with a token" "$(cl create "${u}tok" "$PW" "$tok")" ok
    check_eq "$n: the same creation sent again: ok" "$(cl create "${u}tok" "$PW" "$tok")" ok
    check_eq "$n: another creation of the name: exists" \
        "$(cl create "${u}tok" "$PW" "${tok%?}0")" exists
    check_eq "$n: the account created once verifies" "$(cl verify "${u}tok" "$PW")" ok
    check_eq "$n: ping" "$(cl ping)" ok
    check_eq "$n: 200 pipelined requests" "$(cl pipeline 200 "${u}pl" "$PW")" "ok 200"
    for k in garbage oversize reserved badtype nohello reply hello2 dupid ackwrong; do
        check_eq "$n: bad input '$k' closes that connection only" "$(cl --wait 3 bad $k)" \
            "closed other-ok"
    done
    check_eq "$n: truncated frame waits" "$(cl --wait 1 bad truncated)" "open other-ok"
    check_eq "$n: bad version gets BAD_VERSION, then closed" "$(cl --wait 3 bad badversion)" \
        "bad-version closed other-ok"
    check_eq "$n: still serving" "$(cl verify "${u}alice" "$PW")" ok

    # Account changes: checked like a verify, a compare-and-set in the database, and answered
    # only once every connection was told (INVALIDATE) and acknowledged, or was closed.
    check_eq "$n: create the account to change" "$(cl create "${u}carol" "$PW")" ok
    check_eq "$n: change with a wrong password" "$(cl setpass "${u}carol" "x$PW" new1)" denied
    check_eq "$n: change of an unknown user" "$(cl setpass "${u}nobody" "$PW" new1)" denied
    check_eq "$n: change to an invalid password" "$(cl setpass "${u}carol" "$PW" "")" invalid
    check_eq "$n: the old password still works" "$(cl verify "${u}carol" "$PW")" ok
    check_eq "$n: change, a watcher acks after 300 ms" \
        "$(cl inval "${u}carol" "$PW" "${PW}2" 300)" "ok invalidated reply-after-ack open"
    check_eq "$n: old password after the change" "$(cl verify "${u}carol" "$PW")" denied
    check_eq "$n: new password after the change" "$(cl verify "${u}carol" "${PW}2")" ok
    out=$(cl --wait 5 inval "${u}carol" "${PW}2" "${PW}3" never)
    log "$n: a watcher that never acks: $out"
    [[ $out =~ ^ok\ invalidated\ reply-after-([0-9]+)ms\ closed$ ]] ||
        itest_not_ok "$n: a watcher that never acks is closed, then the change answered ($out)"
    check_ok "$n: ... after the ack timeout (${BASH_REMATCH[1]:-?} ms >= 900)" \
        test "${BASH_REMATCH[1]:-0}" -ge 900
    check_eq "$n: delete with the old password" "$(cl delete "${u}carol" "${PW}2")" denied
    check_eq "$n: delete" "$(cl delete "${u}carol" "${PW}3")" ok
    check_eq "$n: a deleted account does not verify" "$(cl verify "${u}carol" "${PW}3")" denied
    check_eq "$n: delete again" "$(cl delete "${u}carol" "${PW}3")" denied
    check_eq "$n: a deleted name cannot be taken again" "$(cl create "${u}carol" other)" exists
    check_eq "$n: ... nor by its own creation sent again" \
        "$(cl create "${u}tok" "$PW" "$tok")$(cl delete "${u}tok" "$PW")$(cl create \
            "${u}tok" "$PW" "$tok")" "okokexists"

    if [[ $mode == processes ]]; then
        check_ok "$n: 2 worker processes" wait_until 10 has_children 2
        kill -KILL "$(pgrep -P "$S2_PID" | head -n 1)"
        check_ok "$n: a killed worker process is restarted" \
            wait_until 10 grep -q 'restarting it' "$S2_LOG"
        check_ok "$n: 2 worker processes again" wait_until 10 has_children 2
        check_eq "$n: serving after a worker process was killed" \
            "$(cl verify "${u}alice" "$PW")" ok
    fi

    # The backend dies: UNAVAILABLE, not a hang or a crash. Then it comes back by itself.
    pid=$(backend_pid "$kind")
    kill -KILL "$pid"
    wait_pid_exit "$pid" 10 || itest_fail "$kind did not die"
    check_eq "$n: verify with $kind down" "$(cl verify "${u}alice" "$PW")" unavailable
    check_eq "$n: create with $kind down" "$(cl create "${u}down" "$PW")" unavailable
    "$ITEST_ROOT/scripts/$kind.sh" restart "$ITEST_DIR/$kind" >/dev/null
    out=$(cl until ok verify "${u}alice" "$PW" 15)
    check_eq "$n: service resumes after $kind restarts (account survived)" "${out%% *}" ok
    log "$n: $out"
    check_eq "$n: create after restart" "$(cl create "${u}after" "$PW")" ok
    grep -q 'went down\|unreachable' "$S2_LOG" || itest_not_ok "$n: no 'went down' line in the log"
    grep -q 'back up' "$S2_LOG" || itest_not_ok "$n: no 'back up' line in the log"
    grep -q ' D ' "$S2_LOG" || itest_not_ok "$n: nothing logged at debug level"
    stop_s2 "$n"
    no_secrets "$n"

    # SIGTERM while slow (interactive-cost) creates are being worked on: all answered, exit 0.
    start_s2 "$n-term" --backend "$url" --backend-password-file "$pwf" --mode "$mode" \
        --workers 2 --hash-cost interactive
    out=$(cl term 8 "$S2_PID" "$PW" "${u}term")
    check_eq "$n: SIGTERM with 8 requests in flight" "$out" "answered 8/8 (8 ok), then closed"
    local rc=0
    wait "$S2_PID" || rc=$?
    check_eq "$n: exit status after draining" "$rc" 0
    grep -q 'requests in flight' "$S2_LOG" || itest_not_ok "$n: no shutdown line in the log"
    no_secrets "$n-term"
}

# ---- flags and start-up errors -------------------------------------------------------------
check_eq "--help exits 0" "$("$S2" --help >/dev/null 2>&1; echo $?)" 0
grep -q -- '--max-inflight' <<<"$("$S2" --help)" || itest_not_ok "--help does not list --max-inflight"
check_eq "--version exits 0" "$("$S2" --version >/dev/null 2>&1; echo $?)" 0
for bad in "--bogus" "--port 99999" "--workers 0" "--mode fork" "--hash-cost max" \
    "--backend" "--batch x" "--backend redis://h extra" "--backend-timeout 50ms" \
    "--backend-timeout 2m"; do
    rc=0
    # shellcheck disable=SC2086 # split the flags on purpose
    out=$("$S2" --backend redis://127.0.0.1:1 --insecure-no-secret $bad 2>&1 >/dev/null) || rc=$?
    check_eq "bad flags '$bad': exit status" "$rc" 2
    check_eq "bad flags '$bad': one line on stderr" "$(printf '%s\n' "$out" | wc -l)" 1
    [[ $out == server2:* ]] || itest_not_ok "bad flags '$bad': message '$out' lacks 'server2:'"
done
rc=0
out=$("$S2" --backend "mysql://auth:$URLPW@h:99x/auth" --insecure-no-secret 2>&1) || rc=$?
check_eq "bad URL: exit status" "$rc" 2
check_eq "bad URL: one line" "$(printf '%s\n' "$out" | wc -l)" 1
check_eq "bad URL: password not echoed" "$(grep -c -F -e "$URLPW" <<<"$out" || true)" 0
for u in "mysql://auth:$URLPW@127.0.0.1/auth" "redis://:$URLPW@127.0.0.1:6379"; do
    rc=0
    out=$("$S2" --backend "$u" 2>&1) || rc=$?
    check_eq "password in the URL refused: exit status" "$rc" 2
    check_eq "password in the URL refused: one line" "$(printf '%s\n' "$out" | wc -l)" 1
    check_eq "password in the URL refused: password not echoed" \
        "$(grep -c -F -e "$URLPW" <<<"$out" || true)" 0
    if ! grep -q -- '--backend-password-file' <<<"$out" || ! grep -q S2_BACKEND_PASSWORD <<<"$out"
    then
        itest_not_ok "password in the URL refused: '$out' does not name both alternatives"
    fi
done
rc=0
out=$("$S2" --backend redis://127.0.0.1:1 --backend-password-file "$ITEST_DIR/nonexistent" 2>&1) ||
    rc=$?
check_eq "missing password file: exit status" "$rc" 2
check_eq "missing password file: one line" "$(printf '%s\n' "$out" | wc -l)" 1

# shellcheck disable=SC2119 # default run dirs
rport=$(itest_redis_start)
# shellcheck disable=SC2119
mport=$(itest_mysql_start)
[[ $rport =~ ^[0-9]+$ && $mport =~ ^[0-9]+$ ]] || itest_fail "backends did not start"
redis_url="redis://127.0.0.1:$rport"
mysql_url="mysql://auth@localhost/auth?socket=$ITEST_DIR/mysql/mysqld.sock"
redis_pw=$ITEST_DIR/redis/password
mysql_pw=$ITEST_DIR/mysql/password
for k in redis mysql; do
    check_eq "$k password file is mode 600" "$(stat -c %a "$ITEST_DIR/$k/password")" 600
done
check_eq "redis refuses a client without the password" \
    "$(redis-cli -h 127.0.0.1 -p "$rport" ping 2>&1 | grep -c NOAUTH || true)" 1
rc=0
mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$mport" -u auth -e 'SELECT 1' auth \
    >/dev/null 2>&1 || rc=$?
check_ok "mariadb refuses user auth without the password" test "$rc" -ne 0

# ---- link authentication ----------------------------------------------------------------------
# the secret is required; a bad secret file stops the start with one line, exit 1
for bad in "" "--secret-file" "--secret-file $SECRET --insecure-no-secret"; do
    rc=0
    # shellcheck disable=SC2086 # split the flags on purpose
    out=$("$S2" --backend "$redis_url" --port 0 $bad 2>&1 >/dev/null) || rc=$?
    check_eq "secret flags '$bad': exit status" "$rc" 2
    check_eq "secret flags '$bad': one line on stderr" "$(printf '%s\n' "$out" | wc -l)" 1
done
head -c 32 /dev/urandom >"$ITEST_DIR/open.secret"
chmod 0644 "$ITEST_DIR/open.secret"
(umask 077 && head -c 31 /dev/urandom >"$ITEST_DIR/short.secret")
for f in open.secret short.secret missing.secret; do
    rc=0
    out=$("$S2" --backend "$redis_url" --port 0 --secret-file "$ITEST_DIR/$f" 2>&1 >/dev/null) ||
        rc=$?
    check_eq "secret file $f refused: exit status" "$rc" 1
    check_eq "secret file $f refused: one line on stderr" "$(printf '%s\n' "$out" | wc -l)" 1
    [[ $out == "server2: secret file $ITEST_DIR/$f: "* ]] ||
        itest_not_ok "secret file $f: unclear message '$out'"
done
grep -q -- '--secret-file' <<<"$("$S2" --help)" || itest_not_ok "--help does not list --secret-file"

start_s2 link --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min
check_eq "link: the right secret is accepted" "$(cl hello)" ok
check_eq "link: a client with another secret sees server2 fail its check" "$(cl_other hello)" \
    auth-failed
check_eq "link: HELLO then a CREATE, no AUTH: closed unanswered" \
    "$(cl unauth noauth linkfree1 "$PW")" closed
check_eq "link: AUTH with another secret and a CREATE: closed unanswered" \
    "$(cl_other unauth forged linkfree2 "$PW")" closed
check_eq "link: the same AUTH with the right secret is served" \
    "$(cl unauth forged linkfree3 "$PW")" ok
# the refused CREATEs were never applied: no such keys in the database
check_eq "link: no account for the client that sent no AUTH" "$(rcli EXISTS user:linkfree1)" 0
check_eq "link: no account for the client with another secret" "$(rcli EXISTS user:linkfree2)" 0
check_eq "link: the accepted CREATE is in the database" "$(rcli EXISTS user:linkfree3)" 1
check_eq "link: the name is still free" "$(cl create linkfree1 "$PW")" ok
check_eq "link: the name is still free (2)" "$(cl create linkfree2 "$PW")" ok
# (a warning a second at most: the count is checked below, in the line at exit)
check_ok "link: a failure is logged with the peer" \
    grep -q 'connection from 127.0.0.1:[0-9]* failed link authentication' "$S2_LOG"
stop_s2 link
grep -q "closed for bad input, 2 of them for failing link authentication" "$S2_LOG" ||
    itest_not_ok "link: no count of 2 failed handshakes at exit"

start_s2 insecure --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min --insecure-no-secret
grep -q 'insecure-no-secret' "$S2_LOG" || itest_not_ok "insecure: no warning at start"
check_eq "insecure: the all-zero key is accepted" \
    "$(python3 "$CLIENT" --port "$S2_PORT" hello)" ok
check_eq "insecure: a client with a secret is not" "$(cl hello)" auth-failed
stop_s2 insecure

# ---- the budget: a request that waits past it is answered EXPIRED, unworked ------------------
# one worker, one job at a time, an interactive-cost hash (tens of ms) in front of a 1 ms budget
start_s2 budget --backend "$redis_url" --backend-password-file "$redis_pw" --workers 1 --batch 1 --hash-cost interactive
check_eq "budget: a VERIFY with 1 ms behind a slow CREATE expires" \
    "$(cl budget budgetuser "$PW")" expired
check_eq "budget: the same VERIFY without a budget succeeds" "$(cl verify budgetuser "$PW")" ok
stop_s2 budget

# ---- a flood of creates at interactive cost ----------------------------------------------------
# 1,000 CREATEs on one connection: argon2 (64 MiB each) runs on the two workers only, 32 wait
# (--max-queue), the rest are answered UNAVAILABLE at once, and a VERIFY the auth cache holds
# overtakes the queue: it waits for a few hashes at most (the ones in progress, and in processes
# mode those the child does between reading the frames ahead of it), where before it waited
# behind all 32 (16 per worker in threads mode).
for mode in threads processes; do
    start_s2 "flood-$mode" --backend "$redis_url" --backend-password-file "$redis_pw" \
        --mode "$mode" --workers 2 --hash-cost interactive --auth-cache 100 --max-queue 32
    check_eq "flood ($mode): the cached user's account" "$(cl create "flood$mode" "$PW")" ok
    out=$(cl flood 1000 "flood$mode-" "$PW" "flood$mode" "$PW")
    log "flood ($mode): $out"
    read -r _ vst vms _ _ hms _ _ creates <<<"$out"
    limit=$((6 * ${hms:-0}))
    ((limit < 400)) && limit=400
    check_eq "flood ($mode): the cached VERIFY succeeds" "$vst" ok
    check_ok "flood ($mode): ... within 6 hashes ($vms ms; a hash: $hms ms), ahead of the queue" \
        test "${vms:-99999}" -lt "$limit"
    nok=$(grep -o 'ok=[0-9]*' <<<"$creates" | cut -d= -f2)
    nun=$(grep -o 'unavailable=[0-9]*' <<<"$creates" | cut -d= -f2)
    check_ok "flood ($mode): at least 32 creates done (ok=${nok:-0})" test "${nok:-0}" -ge 32
    check_ok "flood ($mode): the others UNAVAILABLE at once (${nun:-0})" test "${nun:-0}" -ge 900
    check_eq "flood ($mode): every create answered" "$((${nok:-0} + ${nun:-0}))" 1000
    peak=0
    for pid in "$S2_PID" $(pgrep -P "$S2_PID" || true); do
        kb=$(awk '/^VmHWM:/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        ((kb > peak)) && peak=$kb
    done
    log "flood ($mode): peak RSS of a server2 process: $peak kB"
    check_ok "flood ($mode): peak RSS of a process < 200 MiB ($peak kB): argon2 on 2 workers at most" \
        test "$peak" -lt 204800
    stop_s2 "flood-$mode"
done

# ---- the four backend/mode pairs ------------------------------------------------------------
# (against a sanitizer build, two of them: each backend and each mode once)
suite redis "$redis_url" threads
if [[ ${ITEST_SANITIZED:-0} != 1 ]]; then
    suite redis "$redis_url" processes
    suite mysql "$mysql_url" threads
fi
suite mysql "$mysql_url" processes

# ---- other URL forms ------------------------------------------------------------------------
start_s2 unix --backend "redis://$ITEST_DIR/redis/redis.sock" --backend-password-file "$redis_pw" \
    --hash-cost min
check_eq "redis over its unix socket: verify" "$(cl verify rtalice "$PW")" ok
check_eq "redis over its unix socket: create" "$(cl create runix "$PW")" ok
stop_s2 unix

start_s2 mysql-tcp --backend "mysql://auth@127.0.0.1:$mport/auth" \
    --backend-password-file "$mysql_pw" --hash-cost min
check_eq "mysql over TCP: verify" "$(cl verify mpalice "$PW")" ok
check_eq "mysql over TCP: create" "$(cl create mtcp "$PW")" ok
stop_s2 mysql-tcp

# The database password from the environment works too, and is not on the command line.
S2_BACKEND_PASSWORD=$(<"$redis_pw") start_s2 envpw --backend "redis://127.0.0.1:$rport" \
    --hash-cost min --log-level debug
check_eq "password from S2_BACKEND_PASSWORD: verify" "$(cl verify rtalice "$PW")" ok
for k in redis mysql; do
    check_eq "$k password not in /proc/PID/cmdline of a running server2" \
        "$(tr '\0' ' ' <"/proc/$S2_PID/cmdline" | grep -c -F -e "$(<"$ITEST_DIR/$k/password")" ||
            true)" 0
done
stop_s2 envpw
no_secrets envpw

# A wrong password: AUTH fails, the backend stays unreachable (UNAVAILABLE), nothing leaks.
printf '%s\n' "$URLPW" >"$ITEST_DIR/wrong-password"
start_s2 urlpw --backend "redis://127.0.0.1:$rport" --backend-password-file \
    "$ITEST_DIR/wrong-password" --hash-cost min --log-level debug
check_eq "redis AUTH refused: unavailable" "$(cl verify rtalice "$PW")" unavailable
grep -q 'unreachable' "$S2_LOG" || itest_not_ok "urlpw: no 'unreachable' line in the log"
stop_s2 urlpw
no_secrets urlpw

# ---- limits ----------------------------------------------------------------------------------
start_s2 limits --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min --workers 1 --batch 3 --max-inflight 4 \
    --max-conns 3 --idle-timeout 1s
check_eq "--max-inflight 4: 200 pipelined requests all answered" \
    "$(cl pipeline 200 lim "$PW")" "ok 200"
check_eq "--max-conns 3: of 5 connections, 3 served" "$(cl conns 5)" 3
check_eq "serving again after the refusals" "$(cl ping)" ok
check_eq "--idle-timeout 1s: a silent connection is closed" "$(cl idle 4)" closed
grep -q 'max-conns' "$S2_LOG" || itest_not_ok "limits: no --max-conns warning in the log"
stop_s2 limits

# ---- answers per request, not per batch; unknown users cost a hash ------------------------------
# One worker at interactive cost (~80 ms a hash): 16 pipelined verifies are answered one by
# one as each is hashed, so the first comes long before the last, and every right password
# among many wrong ones is accepted. (A worker that answered its whole batch at once sent all
# 16 together after ~1.3 s.)
for mode in threads processes; do
    start_s2 "spread-$mode" --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost interactive --workers 1 \
        --mode "$mode"
    check_eq "spread-$mode: create" "$(cl create "spread$mode" "$PW")" ok
    out=$(cl spread 12 4 "spread$mode" "$PW")
    log "spread-$mode: $out"
    read -r _ right _ first _ last <<<"$out"
    check_eq "spread-$mode: every right password among wrong ones is ok" "$right" 4/4
    [[ $first =~ ^[0-9]+$ && $last =~ ^[0-9]+$ ]] || itest_fail "spread-$mode: bad output '$out'"
    check_ok "spread-$mode: answers one by one (first $first ms, last $last ms)" \
        test $((first * 4)) -lt "$last"
    if [[ $mode == threads ]]; then
        # An unknown user is checked against a dummy hash of the same cost: no shortcut.
        out=$(cl timing 5 "spread$mode" "$PW")
        log "spread-$mode: timing $out"
        read -r _ wrong _ unknown <<<"$out"
        [[ $wrong =~ ^[0-9.]+$ && $unknown =~ ^[0-9.]+$ ]] || itest_fail "timing: bad output '$out'"
        check_ok "unknown user ($unknown ms) costs at least a quarter of a wrong password ($wrong ms)" \
            awk -v u="$unknown" -v w="$wrong" 'BEGIN { exit !(u * 4 >= w) }'
    fi
    stop_s2 "spread-$mode"
    no_secrets "spread-$mode"
done

# ---- auth cache ------------------------------------------------------------------------------
start_s2 cache --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min --auth-cache 100
check_eq "cache: create" "$(cl create cacheuser "$PW")" ok
for i in 1 2 3; do
    check_eq "cache: verify $i" "$(cl verify cacheuser "$PW")" ok
    check_eq "cache: wrong password $i" "$(cl verify cacheuser "x$PW")" denied
done
stop_s2 cache
hits=$(sed -n 's/.*auth cache: \([0-9]*\) hits.*/\1/p' "$S2_LOG")
check_eq "cache: 2 of 3 right verifications were hits" "$hits" 2
no_secrets cache

# ---- backend unreachable at start: not fatal; serves as soon as it appears -------------------
late=$(free_port)
mkdir -p "$ITEST_DIR/redis-late"
ensure_password "$ITEST_DIR/redis-late/password" # the Redis started below takes this one
start_s2 late --backend "redis://127.0.0.1:$late" \
    --backend-password-file "$ITEST_DIR/redis-late/password" --hash-cost min
check_eq "backend missing at start: unavailable" "$(cl verify x "$PW")" unavailable
grep -q 'unreachable' "$S2_LOG" || itest_not_ok "late: no 'unreachable' warning"
itest_redis_start redis-late "$late" >/dev/null
out=$(cl until ok create lateuser "$PW" 15)
check_eq "backend appears: served" "${out%% *}" ok
stop_s2 late

# ---- --backend-timeout: a database that stops answering costs a request that long ----------
start_s2 btimeout --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min \
    --backend-timeout 200ms
grep -q 'backend-timeout=200ms' "$S2_LOG" || itest_not_ok "btimeout: the config line lacks it"
check_eq "btimeout: create" "$(cl create btuser "$PW")" ok
REDIS_PID=$(cat "$ITEST_DIR/redis/redis.pid")
kill -STOP "$REDIS_PID"
t0=$(now_ms)
out=$(cl verify btuser "$PW")
t1=$(now_ms)
kill -CONT "$REDIS_PID"
check_eq "btimeout: Redis stopped: unavailable" "$out" unavailable
# (a ping of the idle connection, a reconnect and its AUTH may each wait that long)
check_ok "... in a few times 200 ms ($((t1 - t0)) ms; one wait of the default 2 s is longer)" \
    test $((t1 - t0)) -ge 150 -a $((t1 - t0)) -lt 1900
out=$(cl until ok verify btuser "$PW" 10)
check_eq "btimeout: Redis back: ok" "${out%% *}" ok
stop_s2 btimeout

# ---- port in use -----------------------------------------------------------------------------
start_s2 busy --backend "$redis_url" --backend-password-file "$redis_pw" --hash-cost min
rc=0
out=$("$S2" --backend "$redis_url" --backend-password-file "$redis_pw" --port "$S2_PORT" \
    --secret-file "$SECRET" 2>&1 >/dev/null) || rc=$?
check_eq "port in use: exit status" "$rc" 1
check_eq "port in use: one line on stderr" "$(printf '%s\n' "$out" | wc -l)" 1
[[ $out == "server2: cannot bind 127.0.0.1:$S2_PORT: Address already in use" ]] ||
    itest_not_ok "port in use: unclear message '$out'"
stop_s2 busy

itest_summary
