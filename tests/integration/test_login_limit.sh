#!/usr/bin/env bash
# One user's password guesses spread over two server1s (as HAProxy's balance uri does), each on
# its own server2, both server2s on one database: server2's --login-fail-limit is counted in the
# database, so the two server1s together let no more guesses through than one would. guess.py
# sends wrong passwords to the two in turn for 6 s; with 5/50s a guess more every 2 s after a
# burst of 5, at most 5 + 6 / 2 = 8 are checked (401), whichever server1 they reach, the rest
# get 429 with Retry-After; the right password is refused too while the limit holds, and taken
# once it has passed. Then the same with the limit in server1 only (server2's off): each server1
# lets its own 8 through, twice as many. Redis, then MariaDB.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init login-limit
itest_timeout 240
require_cmd curl python3

PASS=right-horse-$$ # must never appear in any log
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/f1k"
SECRET=$ITEST_DIR/link.secret
(umask 077 && head -c 32 /dev/urandom >"$SECRET")
GUESS=$ITEST_ROOT/tests/integration/guess.py
SECONDS_RUN=6
BOUND=$((5 + SECONDS_RUN / 10 + 1)) # the burst, one more every DUR/N = 10 s, one step

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
status_is() {
    local want=$1
    shift
    [[ $(code "$@") == "$want" ]]
}
retry_after() {
    curl -s -D - -o /dev/null --max-time 20 "$@" | tr -d '\r' |
        awk -F': ' 'tolower($1) == "retry-after" { print $2 }'
}
# start_s2 NAME URL PASSWORD_FILE MODE LIMIT: prints the port.
start_s2() {
    itest_start "$1" server2 --port 0 --backend "$2" --backend-password-file "$3" \
        --mode "$4" --workers 2 --hash-cost min --secret-file "$SECRET" \
        --login-fail-limit "$5" || itest_fail "$1: server2 did not start"
    echo "$ITEST_PORT"
}
# start_s1 NAME S2PORT: server1 with its own limits at 5/50s; prints host:port.
start_s1() {
    itest_start "$1" server1 --port 0 --threads 2 --root "$ROOT" --read-only \
        --auth "127.0.0.1:$2" --auth-secret-file "$SECRET" --login-fail-limit 5/50s \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 ||
        itest_fail "$1: server1 did not start"
    wait_until 10 status_is 200 "http://127.0.0.1:$ITEST_PORT/healthz" ||
        itest_fail "$1: not healthy"
    echo "127.0.0.1:$ITEST_PORT"
}
# attack LABEL USER A B: guess.py against A and B; sets DENIED
attack() {
    local out
    out=$(python3 "$GUESS" --target "$3" --target "$4" --user "$2" --file f1k \
        --seconds "$SECONDS_RUN")
    log "$1: $out"
    DENIED=$(sed -n 's/.*denied=\([0-9]*\).*/\1/p' <<<"$out")
    RETRY_MIN=$(sed -n 's/.*retry-after-min=\(-*[0-9]*\).*/\1/p' <<<"$out")
    OTHER=$(sed -n 's/.* other=\([0-9]*\).*/\1/p' <<<"$out")
}

# two_stacks NAME URL PASSWORD_FILE S2LIMIT USER: two server2s (threads, processes) on the
# database, a server1 on each (A, B: host:port), and USER created through A
two_stacks() {
    local p q
    p=$(start_s2 "$1-s2a" "$2" "$3" threads "$4")
    q=$(start_s2 "$1-s2b" "$2" "$3" processes "$4")
    A=$(start_s1 "$1-s1a" "$p")
    B=$(start_s1 "$1-s1b" "$q")
    check_eq "$1: create $5" "$(code -d "username=$5&password=$PASS" "http://$A/users")" 201
}

shared_limit() {
    local b=$1 u=mallory-$1 a b1 r
    two_stacks "$b-shared" "$2" "$3" 5/50s "$u"
    a=$A b1=$B
    attack "$b: guesses through two server1s, server2's limit 5/50s shared" "$u" "$a" "$b1"
    check_ok "$b: at most $BOUND guesses checked in ${SECONDS_RUN} s (got $DENIED)" \
        test "${DENIED:-99}" -le "$BOUND"
    check_ok "$b: ... and at least the burst of 5 (got $DENIED)" test "${DENIED:-0}" -ge 5
    check_eq "$b: nothing but 401 and 429" "$OTHER" 0
    check_ok "$b: every 429 said when to retry (at least $RETRY_MIN s)" test "${RETRY_MIN:--1}" -ge 1
    check_eq "$b: the right password through A while limited" "$(code -u "$u:$PASS" "http://$a/files/f1k")" 429
    check_eq "$b: ... and through B" "$(code -u "$u:$PASS" "http://$b1/files/f1k")" 429
    r=$(retry_after -u "$u:$PASS" "http://$b1/files/f1k")
    check_ok "$b: ... with a Retry-After ($r s) of at most DUR/N" test "${r:-0}" -ge 1 -a "${r:-99}" -le 10
    check_ok "$b: the right password is taken once the limit has passed" \
        wait_until 15 status_is 200 -u "$u:$PASS" "http://$a/files/f1k"
    SHARED=$DENIED
}

per_server1_limit() {
    local b=$1 u=trudy-$1
    two_stacks "$b-per-s1" "$2" "$3" 0 "$u"
    attack "$b: guesses through two server1s, limits in server1 only (5/50s each)" "$u" "$A" "$B"
    check_ok "$b: each server1 let its own through: $DENIED > the shared $SHARED" \
        test "${DENIED:-0}" -gt "$SHARED"
}

redis_port=$(itest_redis_start)
shared_limit redis "redis://127.0.0.1:$redis_port" "$ITEST_DIR/redis/password"
per_server1_limit redis "redis://127.0.0.1:$redis_port" "$ITEST_DIR/redis/password"
mysql_port=$(itest_mysql_start)
shared_limit mysql "mysql://auth@127.0.0.1:$mysql_port/auth" "$ITEST_DIR/mysql/password"

check_eq "no password in any log" "$(cat "$ITEST_DIR"/*.log | grep -c -F "$PASS" || true)" 0
itest_summary
