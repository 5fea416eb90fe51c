#!/usr/bin/env bash
# test_link_seal.sh - the server1 <-> server2 link is encrypted (docs/protocol.md, "Sealed
# frames"): tcpdump captures the link on loopback while a server1 creates an account, serves
# GETs with its password (every GET asks server2: no --auth-cache) and refuses a wrong one;
# neither the password nor the username appears in the capture. The same with
# --insecure-no-secret on both sides: the password does appear, so the check can fail.
# server2 closes a connection whose sealed record was altered or replayed, or that sends a
# frame in clear after AUTH, and logs why (never the secret); a HELLO of version 5 gets
# BAD_VERSION and a log line naming both versions, and a server1 facing a server2 of version 5
# (fake_server2.py --protocol-version 5) logs that it was refused. BIN_DIR selects the build.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init link-seal
itest_timeout 180
require_cmd python3 curl tcpdump
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration

PW_FILE=$ITEST_DIR/redis/password
RPORT=$(itest_redis_start redis)
URL=redis://127.0.0.1:$RPORT
mkdir -p "$ITEST_DIR/root"
head -c 1024 /dev/urandom >"$ITEST_DIR/root/f1k"
USER_NAME=sealuser$RANDOM
PASSWORD=Pw-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')

# stack NAME SECRET_ARGS...: server2 and server1 with these link flags (--secret-file F and
# --auth-secret-file F, or --insecure-no-secret for both); sets S2 (port), S1 (URL), S1_PID
stack() {
    local name=$1 s2args s1args
    shift
    if [[ $1 == insecure ]]; then
        s2args=(--insecure-no-secret)
        s1args=(--insecure-no-secret)
    else
        s2args=(--secret-file "$ITEST_DIR/link.secret")
        s1args=(--auth-secret-file "$ITEST_DIR/link.secret")
    fi
    "$BIN_DIR/server2" --port 0 --backend "$URL" --backend-password-file "$PW_FILE" \
        --hash-cost min "${s2args[@]}" >"$ITEST_DIR/$name-s2.log" 2>&1 &
    S2_PID=$!
    itest_bg "$S2_PID"
    wait_until 15 grep -q 'listening on ' "$ITEST_DIR/$name-s2.log" ||
        itest_fail "$name: server2 did not start"
    S2=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/$name-s2.log")
    S2=${S2##*:}
    itest_start "$name-s1" server1 --port 0 --threads 1 --root "$ITEST_DIR/root" \
        --read buffered --auth "127.0.0.1:$S2" "${s1args[@]}" --login-fail-limit 0 \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 ||
        itest_fail "$name: server1 did not start"
    S1=http://127.0.0.1:$ITEST_PORT
    S1_PID=$ITEST_PID_LAST
    wait_until 10 test "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$S1/healthz")" = 200 ||
        itest_fail "$name: server1 did not reach server2"
}

# capture NAME USER: the link captured while USER is created with $PASSWORD and used
capture() {
    local name=$1 user=$2 pcap=$ITEST_DIR/$1.pcap i
    tcpdump -i lo -U --immediate-mode -n -s 0 -w "$pcap" "tcp port $S2" \
        2>"$ITEST_DIR/$name-tcpdump.err" &
    TD=$!
    itest_bg "$TD"
    wait_until 10 grep -q 'listening on' "$ITEST_DIR/$name-tcpdump.err" ||
        itest_fail "$name: tcpdump did not start: $(cat "$ITEST_DIR/$name-tcpdump.err")"
    check_eq "$name: account created" "$(curl -s -o /dev/null -m 10 -w '%{http_code}' \
        --data "username=$user&password=$PASSWORD" "$S1/users")" 201
    for i in 1 2 3; do
        check_eq "$name: GET $i with the password" "$(curl -s -o /dev/null -m 10 \
            -w '%{http_code}' -u "$user:$PASSWORD" "$S1/files/f1k")" 200
    done
    check_eq "$name: GET with a wrong password" "$(curl -s -o /dev/null -m 10 \
        -w '%{http_code}' -u "$user:x$PASSWORD" "$S1/files/f1k")" 401
    kill -INT "$TD"
    wait "$TD" || true
    # the requests crossed the link: the capture holds more than the handshakes
    PACKETS=$(tcpdump -r "$pcap" -n 2>/dev/null | grep -c 'length [1-9]' || true)
}

log "---- a link with a secret"
(umask 077 && head -c 32 /dev/urandom >"$ITEST_DIR/link.secret")
stack sealed secret
capture sealed "$USER_NAME"
check_ok "sealed: the capture holds the link's data packets ($PACKETS)" test "$PACKETS" -ge 10
check_eq "sealed: the password is nowhere in the capture" \
    "$(grep -c -a -F -- "$PASSWORD" "$ITEST_DIR/sealed.pcap" || true)" 0
check_eq "sealed: nor the username" \
    "$(grep -c -a -F -- "$USER_NAME" "$ITEST_DIR/sealed.pcap" || true)" 0

s2() { python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" "$@"; }
check_eq "an altered sealed record closes the connection" "$(s2 bad sealflip)" "closed other-ok"
check_eq "a replayed sealed record closes it" "$(s2 bad sealreplay)" "closed other-ok"
check_eq "a frame in clear after AUTH closes it" "$(s2 bad sealclear)" "closed other-ok"
check_eq "a HELLO of version 5 gets BAD_VERSION and is closed" "$(s2 bad v5)" \
    "bad-version closed other-ok"
check_ok "server2 logs the record that does not open" grep -q \
    'failed link authentication: a sealed record does not open' "$ITEST_DIR/sealed-s2.log"
check_ok "server2 logs the version 5 it does not speak" grep -q \
    'protocol version 5 not supported (want 6)' "$ITEST_DIR/sealed-s2.log"
check_eq "neither log holds the password" "$(cat "$ITEST_DIR"/sealed-s1.log \
    "$ITEST_DIR"/sealed-s2.log | grep -c -F -- "$PASSWORD" || true)" 0
kill -TERM "$S1_PID" "$S2_PID"
wait "$S1_PID" "$S2_PID" || true

log "---- a server1 and a server2 of version 5"
python3 "$HERE/fake_server2.py" --port 0 --secret-file "$ITEST_DIR/link.secret" \
    --protocol-version 5 >"$ITEST_DIR/fake5.log" 2>&1 &
itest_bg $!
wait_until 15 grep -q "listening on " "$ITEST_DIR/fake5.log" ||
    itest_fail "fake server2 did not start"
F5=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/fake5.log")
itest_start v5-s1 server1 --port 0 --threads 1 --root "$ITEST_DIR/root" --read buffered \
    --auth "127.0.0.1:${F5##*:}" --auth-secret-file "$ITEST_DIR/link.secret" ||
    itest_fail "server1 did not start"
check_ok "server1 logs that the server2 of version 5 refused version 6" wait_until 10 grep -q \
    "server2 at 127.0.0.1:${F5##*:} refused protocol version 6" "$ITEST_DIR/v5-s1.log"
check_ok "... and that server2 logged it" grep -q 'protocol version 6 not supported (want 5)' \
    "$ITEST_DIR/fake5.log"
kill -TERM "$ITEST_PID_LAST"
wait "$ITEST_PID_LAST" || true

log "---- --insecure-no-secret: the link stays in clear"
stack clear insecure
capture clear "${USER_NAME}c"
check_ok "clear: the password is in the capture (the check above can fail)" \
    grep -q -a -F -- "$PASSWORD" "$ITEST_DIR/clear.pcap"
kill -TERM "$S1_PID" "$S2_PID"
wait "$S1_PID" "$S2_PID" || true
itest_summary
