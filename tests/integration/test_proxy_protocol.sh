#!/usr/bin/env bash
# server1 behind a load balancer that sends the PROXY protocol (--trusted-proxy), against
# tests/integration/fake_server2.py: a connection from a trusted address must begin with a
# PROXY header (version 1 or 2; LOCAL for the balancer's own checks), and the client it names
# is the address every per-client limit counts: connections per address (a third from one
# client 503, from another 200), failed logins per address, sign-ups per address. A trusted
# connection without a header, or with a broken one, is closed without an answer; an untrusted
# one sending a header gets 400 (a PROXY line is no HTTP). HAProxy with send-proxy-v2 in front
# (its checks too): curl through it gets its files, the checks keep the server up. Bad
# --trusted-proxy values are refused at start.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init proxy_protocol
itest_timeout 180
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
echo "the operator's file" >"$ROOT/pub.txt"
send() { python3 "$HERE/proxysend.py" "$S1_PORT" "$@"; }

# ---- refusals at start
for bad in "10.0.0.256" "10.0.0.0/33" "lb.example" ""; do
    rc=0
    out=$("$S1_BIN" --port 0 --root "$ROOT" --insecure-no-secret --auth 127.0.0.1:1 \
        --trusted-proxy "$bad" 2>&1) || rc=$?
    check_eq "--trusted-proxy '$bad': exit 2" "$rc" 2
    check_ok "... saying why" grep -q -- "--trusted-proxy" <<<"$out"
done

start_fake 0 --slow-delay 0
start_s1 trusted --trusted-proxy 127.0.0.1,::1 --max-conns-per-ip 2 \
    --login-fail-addr-limit 3/60m --signup-limit 2/60m
check_ok "the configuration line names the trusted proxies" \
    grep -q 'trusted-proxy=127.0.0.1,::1' "$S1_LOG"

# ---- headers
check_eq "a v1 header, IPv4 client: 200" "$(send v1:192.0.2.1)" 200
check_eq "a v1 header, IPv6 client: 200" "$(send v1:2001:db8::7)" 200
check_eq "a v2 header, IPv4 client: 200" "$(send v2:192.0.2.1)" 200
check_eq "a v2 header, IPv6 client: 200" "$(send v2:2001:db8::7)" 200
check_eq "a v2 LOCAL header (the balancer's check): 200" "$(send v2local)" 200
check_eq "a trusted connection without a header: closed" "$(send none)" closed
check_eq "a broken v1 header: closed" "$(send hex:50524f58592054435034203139322e302e322e31)" closed
check_eq "a v2 header of UDP: closed" \
    "$(send hex:0d0a0d0a000d0a515549540a21120000)" closed
check_eq "... and the server goes on: 200" "$(send v1:192.0.2.1)" 200
# a header in three pieces is gathered; one cut short by the balancer's close ends at once
pieces=$(python3 - "$S1_PORT" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
for part in (b"PROXY TCP4 192.0", b".2.77 10.0.0.1 5100", b"0 443\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"):
    s.sendall(part)
    time.sleep(0.2)
print(s.recv(4096).split(b" ")[1].decode())
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"PROXY TCP4 192.0.2.78 10.0")
t = time.time()
s.shutdown(socket.SHUT_WR)
print("closed" if s.recv(4096) == b"" else "answered", "%.1f" % (time.time() - t))
EOF
)
check_eq "a header in three pieces: 200" "$(head -1 <<<"$pieces")" 200
read -r what secs < <(tail -1 <<<"$pieces")
check_eq "a header cut short by the balancer's close: closed" "$what" closed
check_ok "... at once, not at --header-timeout ($secs s)" awk -v s="$secs" 'BEGIN { exit !(s < 3) }'

# ---- the client's address is the one the limits count
send v1:192.0.2.50 --hold 30 >"$ITEST_DIR/hold1" &
H1=$!
send v1:192.0.2.50 --hold 30 >"$ITEST_DIR/hold2" &
H2=$!
both() { [[ $(cat "$ITEST_DIR/hold1" "$ITEST_DIR/hold2" 2>/dev/null) == $'200\n200' ]]; }
wait_until 20 both || itest_fail "the two held connections were not answered"
check_eq "a third connection of client 192.0.2.50 (--max-conns-per-ip 2): 503" \
    "$(send v1:192.0.2.50)" 503
check_eq "... one of client 192.0.2.51 at the same time: 200" "$(send v1:192.0.2.51)" 200
check_eq "... and one of the balancer's own (LOCAL): 200" "$(send v2local)" 200
kill "$H1" "$H2" 2>/dev/null || true
wait "$H1" "$H2" 2>/dev/null || true

codes=""
for i in 1 2 3 4; do
    codes+="$(send v2:198.51.100.9 --path /files/pub.txt --user "u$i:wrong") "
done
check_eq "failed logins of client 198.51.100.9 (--login-fail-addr-limit 3): 401 401 401 429" \
    "$codes" "401 401 401 429 "
check_eq "... of client 198.51.100.10: 401, not limited" \
    "$(send v2:198.51.100.10 --path /files/pub.txt --user u9:wrong)" 401
codes=""
for i in 1 2 3; do codes+="$(send v1:203.0.113.4 --signup "pp$i") "; done
check_eq "sign-ups of client 203.0.113.4 (--signup-limit 2): 201 201 429" "$codes" "201 201 429 "
check_eq "... of client 203.0.113.5: 201" "$(send v1:203.0.113.5 --signup pp9)" 201

# ---- an untrusted balancer's header is not believed
start_s1 untrusted --trusted-proxy 10.9.9.9 --max-conns-per-ip 2
check_eq "a PROXY line from an untrusted address: 400" "$(send v1:192.0.2.1)" 400
check_eq "... a plain request from it: 200" "$(send none)" 200

# ---- HAProxy in front, with send-proxy-v2
if command -v haproxy >/dev/null 2>&1; then
    # HAProxy connects from 127.0.0.2, the one address trusted; this test's own requests
    # (/metrics, on its own port) come from 127.0.0.1 without a header
    start_s1 behind --trusted-proxy 127.0.0.2
    HP=$(free_port)
    cat >"$ITEST_DIR/haproxy.cfg" <<EOF
global
    maxconn 100
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:$HP
    default_backend s1
backend s1
    option httpchk GET /healthz
    server s1 127.0.0.1:$S1_PORT source 127.0.0.2 send-proxy-v2 check check-send-proxy inter 200ms
EOF
    haproxy -f "$ITEST_DIR/haproxy.cfg" -db >"$ITEST_DIR/haproxy.log" 2>&1 &
    itest_bg $!
    wait_port 127.0.0.1 "$HP" 10 || itest_fail "haproxy did not start"
    via_hp() { curl -s -u alice:secret "$@" "http://127.0.0.1:$HP/files/pub.txt"; }
    check_eq "through HAProxy (send-proxy-v2): GET 200" "$(via_hp -o /dev/null -w '%{http_code}')" \
        200
    check_eq "... byte-exact" "$(via_hp)" "the operator's file"
    # HAProxy's checks (GET /healthz behind a PROXY header) keep the server up: after 5 of
    # them answered 200, a request through it is still served
    checks() {
        curl -s "$S1_METRICS" | awk '/^server1_requests_total\{route="healthz",status="200"\}/ {
            n = $2 } END { exit !(n >= 5) }'
    }
    check_ok "... HAProxy's health checks answered 200" wait_until 20 checks
    check_eq "... and a GET through it after them: 200" "$(via_hp -o /dev/null -w '%{http_code}')" \
        200
else
    log "haproxy not installed: the HAProxy part is skipped"
fi
itest_summary
