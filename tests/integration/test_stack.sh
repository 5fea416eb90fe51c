#!/usr/bin/env bash
# The whole request path, end to end: curl -> server1 -> server2 -> real Redis and real MariaDB.
# For each backend, server2 runs in both process models and server1 in each of its read modes;
# every configuration creates accounts, fetches files byte-exact (alone and 32 at once) and sees
# the right status for bad credentials. Then the failure cases: the database killed and
# restarted, server2 killed and restarted, each under load, and nothing ever logs a password.
# The link is authenticated by a secret file given to both; a server1 with another secret is
# refused (503, a line in server1's log).
# itest-https: no (what is behind server1 does not see its transport)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init stack
itest_timeout 540
require_cmd curl

PASS=correct-horse-$$ # must never appear in any log
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
for size in 0 1 4095 4096 4097 1048576 10485760; do
    head -c "$size" /dev/urandom >"$ROOT/f$size"
done
echo "outside the root" >"$ITEST_DIR/secret"
SECRET=$ITEST_DIR/link.secret # the link secret, shared by server1 and server2
(umask 077 && head -c 32 /dev/urandom >"$SECRET" && head -c 32 /dev/urandom >"$ITEST_DIR/other.secret")

redis_port=$(itest_redis_start)
mysql_port=$(itest_mysql_start)
REDIS_URL=redis://127.0.0.1:$redis_port
MYSQL_URL="mysql://auth@localhost/auth?socket=$ITEST_DIR/mysql/mysqld.sock"
log "redis on $redis_port, mariadb on $mysql_port"

# http_code ARGS...: the status code curl saw.
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
# status_is CODE ARGS...: true if a request made now gets CODE (for wait_until, which re-runs it).
status_is() {
    local want=$1
    shift
    [[ $(http_code "$@") == "$want" ]]
}

# The password file of the database a URL names (scripts/redis.sh and mysql.sh make them).
pwfile() { [[ $1 == redis* ]] && echo "$ITEST_DIR/redis/password" || echo "$ITEST_DIR/mysql/password"; }

# start_stack NAME BACKEND_URL MODE S1_FLAGS...: sets S1 (url), S2_PORT, S1_PID, S2_PID.
start_stack() {
    local name=$1 url=$2 mode=$3
    shift 3
    itest_start "$name-server2" server2 --port 0 --backend "$url" \
        --backend-password-file "$(pwfile "$url")" --mode "$mode" \
        --workers 2 --hash-cost min --log-level debug --secret-file "$SECRET"
    S2_PORT=$ITEST_PORT
    S2_PID=$ITEST_PID_LAST
    itest_start "$name-server1" server1 --port 0 --threads 2 --root "$ROOT" \
        --auth "127.0.0.1:$S2_PORT" --auth-secret-file "$SECRET" --log-level debug "$@"
    S1_PID=$ITEST_PID_LAST
    S1=$ITEST_URL
    wait_until 10 status_is 200 "$S1/healthz" ||
        itest_not_ok "$name: /healthz did not become 200"
}

# stop_pid DESC PID: SIGTERM, and the process must exit 0 within 15 s.
stop_pid() {
    local desc=$1 pid=$2 rc=0
    kill -TERM "$pid"
    wait_pid_exit "$pid" 15 || itest_not_ok "$desc did not exit within 15 s of SIGTERM"
    wait "$pid" 2>/dev/null || rc=$?
    check_eq "$desc exits 0 on SIGTERM" "$rc" 0
}

# exercise NAME: accounts, files, bad credentials, concurrency against the running stack.
exercise() {
    local name=$1 user=u-$1 f
    check_eq "$name: create account" \
        "$(http_code -X POST --data-urlencode "username=$user" --data-urlencode "password=$PASS" "$S1/users")" 201
    check_eq "$name: create it again" \
        "$(http_code -X POST --data-urlencode "username=$user" --data-urlencode "password=other" "$S1/users")" 409
    check_eq "$name: invalid username" \
        "$(http_code -X POST --data "username=bad%20name&password=x" "$S1/users")" 400
    for f in f0 f1 f4095 f4096 f4097 f1048576 f10485760; do
        rm -f "$ITEST_DIR/got"
        local code
        code=$(curl -s -o "$ITEST_DIR/got" -w '%{http_code}' --max-time 20 -u "$user:$PASS" \
            "$S1/files/$f" || true)
        if [[ $code == 200 ]] && cmp -s "$ITEST_DIR/got" "$ROOT/$f"; then
            itest_ok "$name: GET $f byte-exact"
        else
            itest_not_ok "$name: GET $f: status $code or bytes differ"
        fi
    done
    local len
    len=$(curl -s -I -u "$user:$PASS" "$S1/files/f4097" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="content-length"{print $2}')
    check_eq "$name: HEAD Content-Length" "$len" 4097
    check_eq "$name: wrong password" "$(http_code -u "$user:nope" "$S1/files/f1")" 401
    check_eq "$name: unknown user" "$(http_code -u "nobody-$name:$PASS" "$S1/files/f1")" 401
    check_eq "$name: no credentials" "$(http_code "$S1/files/f1")" 401
    check_eq "$name: missing file" "$(http_code -u "$user:$PASS" "$S1/files/nope")" 404
    check_eq "$name: traversal" "$(http_code --path-as-is -u "$user:$PASS" "$S1/files/../secret")" 404
    check_eq "$name: encoded traversal" \
        "$(http_code --path-as-is -u "$user:$PASS" "$S1/files/%2e%2e/secret")" 404
    local www
    www=$(curl -s -D - -o /dev/null "$S1/files/f1" | tr -d '\r' | grep -ci '^www-authenticate: basic' || true)
    check_eq "$name: 401 carries WWW-Authenticate" "$www" 1

    # 32 clients at once, each fetching the 1 MiB file and checking its bytes
    local i pids=() bad=0
    for i in $(seq 1 32); do
        (curl -s -u "$user:$PASS" --max-time 60 "$S1/files/f1048576" | cmp -s - "$ROOT/f1048576") &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || bad=$((bad + 1)); done
    check_eq "$name: 32 concurrent GETs byte-exact (failures)" "$bad" 0
}

# outage NAME KIND: kill the database (redis|mysql), expect 503 + Retry-After, restart it,
# expect service back within 10 s.
outage() {
    local name=$1 kind=$2 user=u-$1 hdrs codes
    load_start "$name" "$user"
    sleep 0.5
    kill -9 "$(cat "$ITEST_DIR/$kind/$( [[ $kind == redis ]] && echo redis.pid || echo mysqld.pid)")"
    wait_until 10 status_is 503 -u "$user:$PASS" "$S1/files/f1" ||
        itest_not_ok "$name: no 503 after $kind was killed"
    hdrs=$(curl -s -D - -o /dev/null -u "$user:$PASS" "$S1/files/f1" | tr -d '\r')
    check_eq "$name: 503 while $kind is down" "$(head -n1 <<<"$hdrs" | cut -d' ' -f2)" 503
    check_eq "$name: 503 carries Retry-After" "$(grep -ci '^retry-after:' <<<"$hdrs")" 1
    "$ITEST_ROOT/scripts/$kind.sh" restart "$ITEST_DIR/$kind" >/dev/null
    if wait_until 10 status_is 200 -u "$user:$PASS" "$S1/files/f1"; then
        itest_ok "$name: service back within 10 s of $kind restart"
    else
        itest_not_ok "$name: service not back 10 s after $kind restart"
    fi
    check_eq "$name: account survived the kill" "$(http_code -u "$user:$PASS" "$S1/files/f1")" 200
    codes=$(load_stop)
    log "$name: statuses under load across the outage: $(tr '\n' ' ' <<<"$codes")"
    check_eq "$name: under load only 200 and 503 were answered" \
        "$(grep -cvE '^ *[0-9]+ (200|503)$' <<<"$codes" || true)" 0
    check_eq "$name: under load some requests got 503" "$(grep -cE ' 503$' <<<"$codes" || true)" 1
}

# load_start NAME USER: 4 clients in a loop of GETs (bounded: 60 s or the stop file), statuses
# appended to $ITEST_DIR/load.codes. load_stop prints "count status" lines.
load_start() {
    local user=$2 i
    rm -f "$ITEST_DIR/load.stop" "$ITEST_DIR/load.codes"
    LOAD_PIDS=()
    for i in 1 2 3 4; do
        (
            end=$((SECONDS + 60))
            while [[ ! -f $ITEST_DIR/load.stop ]] && ((SECONDS < end)); do
                curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 -u "$user:$PASS" \
                    "$S1/files/f4096" >>"$ITEST_DIR/load.codes.$i" || true
            done
        ) &
        LOAD_PIDS+=($!)
    done
}
load_stop() {
    touch "$ITEST_DIR/load.stop"
    wait "${LOAD_PIDS[@]}" || true
    cat "$ITEST_DIR"/load.codes.* | sort | uniq -c
    rm -f "$ITEST_DIR"/load.codes.*
}

port_closed() { ! _port_open 127.0.0.1 "$1"; }
# server2_outage NAME URL MODE: kill server2, expect 503, start it on the same port, expect 200.
server2_outage() {
    local name=$1 url=$2 mode=$3 user=u-$1
    kill -9 "$S2_PID"
    wait_until 10 status_is 503 -u "$user:$PASS" "$S1/files/f1" ||
        itest_not_ok "$name: no 503 after server2 was killed"
    check_eq "$name: /healthz 503 without server2" "$(http_code "$S1/healthz")" 503
    # (in processes mode the killed parent's workers drain and leave before the port is free)
    wait_until 10 port_closed "$S2_PORT" || itest_not_ok "$name: port $S2_PORT still taken"
    itest_start "$name-server2b" server2 --port "$S2_PORT" --backend "$url" \
        --backend-password-file "$(pwfile "$url")" --mode "$mode" \
        --workers 2 --hash-cost min --secret-file "$SECRET"
    S2_PID=$ITEST_PID_LAST
    if wait_until 10 status_is 200 -u "$user:$PASS" "$S1/files/f1"; then
        itest_ok "$name: service back within 10 s of server2 restart"
    else
        itest_not_ok "$name: service not back 10 s after server2 restart"
    fi
}

# name backend-url mode server1-flags
run_config() {
    local name=$1 url=$2 mode=$3 kind=$4
    shift 4
    log "== $name"
    start_stack "$name" "$url" "$mode" "$@"
    exercise "$name"
    outage "$name" "$kind"
    server2_outage "$name" "$url" "$mode"
    stop_pid "$name: server1" "$S1_PID"
    stop_pid "$name: server2" "$S2_PID"
}

# a server1 with another secret: it finds server2's proof wrong and sends it nothing
log "== wrong link secret"
itest_start wrong-server2 server2 --port 0 --backend "$REDIS_URL" --hash-cost min \
    --secret-file "$SECRET"
S2_PORT=$ITEST_PORT
S2_PID=$ITEST_PID_LAST
itest_start wrong-server1 server1 --port 0 --threads 1 --root "$ROOT" \
    --auth "127.0.0.1:$S2_PORT" --auth-secret-file "$ITEST_DIR/other.secret"
S1_PID=$ITEST_PID_LAST
S1=$ITEST_URL
check_ok "wrong secret: server1 logs that server2 failed link authentication" \
    wait_until 10 grep -q "server2 at 127.0.0.1:$S2_PORT failed link authentication" \
    "$ITEST_DIR/wrong-server1.log"
check_eq "wrong secret: 503" \
    "$(http_code -d "username=wrongsecret&password=$PASS" "$S1/users")" 503
stop_pid "wrong secret: server1" "$S1_PID"
stop_pid "wrong secret: server2" "$S2_PID"

run_config redis-threads-prefetch "$REDIS_URL" threads redis --prefetch
run_config redis-processes-direct "$REDIS_URL" processes redis --read direct
run_config mysql-threads-buffered "$MYSQL_URL" threads mysql --read buffered
run_config mysql-processes-prefetch "$MYSQL_URL" processes mysql --prefetch

if grep -rl -- "$PASS" "$ITEST_DIR"/*.log >/dev/null 2>&1; then
    itest_not_ok "a password appears in a log: $(grep -rl -- "$PASS" "$ITEST_DIR"/*.log)"
else
    itest_ok "no password in any log (debug level)"
fi
itest_summary
