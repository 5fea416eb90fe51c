#!/usr/bin/env bash
# server1's plain port once it has an HTTPS one (--plain-http), against fake_server2.py:
#   redirect: a GET gets 308 to the same path and query on the HTTPS port (curl follows it and
#   gets the file), a PUT too (its body never read), an IPv6 Host keeps its brackets, /healthz
#   is still served, a request without a usable Host gets 400; HTTPS answers as ever;
#   no-credentials: credentials or an account request from a non-loopback client (named by a
#   PROXY header from a trusted address) get 403 and never reach server2; without credentials
#   a request goes on (401 for a file), and from loopback everything works; open: as before.
# --hsts: HTTPS answers carry Strict-Transport-Security, plain ones do not.
# --plain-http other than open without --tls-port is refused at start.
# itest-https: no (it tests the plain port beside the HTTPS one; both, on purpose)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init plain_http
itest_timeout 120
require_cmd curl python3 openssl
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
echo "the operator's file" >"$ROOT/pub.txt"
CERTS=$ITEST_DIR/certs
"$ITEST_ROOT/scripts/tls-certs.sh" "$CERTS"
TLS=(--tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key" --tls-port 0)

rc=0
out=$("$S1_BIN" --port 0 --root "$ROOT" --insecure-no-secret --auth 127.0.0.1:1 \
    --plain-http redirect 2>&1) || rc=$?
check_eq "--plain-http redirect without --tls-port: exit 2" "$rc" 2
check_ok "... saying why" grep -q -- "--plain-http other than open needs --tls-port" <<<"$out"

start_fake 0 --slow-delay 0 --log-requests
https_port() { grep -m1 -o 'listening for https on [^ ]*' "$S1_LOG" | sed 's/.*://'; }

# ---- redirect
start_s1 redirect "${TLS[@]}" --plain-http redirect
HP=$(https_port)
check_ok "the configuration line says plain-http=redirect" grep -q 'plain-http=redirect' "$S1_LOG"
check_eq "GET on the plain port: 308 to the same target over HTTPS" \
    "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -u alice:secret \
        "$S1/files/pub.txt?x=1")" "308 https://127.0.0.1:$HP/files/pub.txt?x=1"
check_eq "a PUT on the plain port: 308" \
    "$(curl -s -o /dev/null -w '%{http_code}' -u alice:secret -T "$ROOT/pub.txt" \
        "$S1/files/up.txt")" 308
check_eq "... the credentials of neither reached server2" \
    "$(grep -c 'request VERIFY' "$ITEST_DIR/fake_server2.log" || true)" 0
check_eq "curl follows the redirect and gets the file" \
    "$(curl -s -L --location-trusted --cacert "$CERTS/ca.pem" -u alice:secret \
        "$S1/files/pub.txt")" "the operator's file"
check_eq "an IPv6 Host keeps its brackets" \
    "$(curl -s -o /dev/null -w '%{redirect_url}' -H 'Host: [::1]:8080' "$S1/files/")" \
    "https://[::1]:$HP/files/"
long=/files/$(printf 'a%.0s' $(seq 1 1000))
check_eq "a 1,007-byte target: 308 with all of it in Location" \
    "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$S1$long")" \
    "308 https://127.0.0.1:$HP$long"
check_eq "a 2,007-byte target: 400, not a 308 whose Location did not fit" \
    "$(curl -s -o /dev/null -w '%{http_code}' "$S1$long$(printf 'b%.0s' $(seq 1 1000))")" 400
check_eq "a Host of 300 bytes (no name is that long): 400, no redirect" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: $(printf 'h%.0s' $(seq 1 300))" \
        "$S1/files/")" 400
check_eq "/healthz on the plain port: 200" \
    "$(curl -s -o /dev/null -w '%{http_code}' "$S1/healthz")" 200
raw() { # raw REQUEST: the status code server1 answers to these bytes on the plain port
    python3 - "$S1_PORT" "$1" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
print(s.recv(4096).split(b"\r\n", 1)[0].split()[1].decode())
EOF
}
check_eq "an HTTP/1.0 request without Host: 400" "$(raw 'GET /files/pub.txt HTTP/1.0\r\n\r\n')" 400
check_eq "HTTPS answers as ever: 200" \
    "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERTS/ca.pem" -u alice:secret \
        "https://127.0.0.1:$HP/files/pub.txt")" 200

# ---- no-credentials; the non-loopback client is named by a PROXY header from a trusted address
start_s1 nocred "${TLS[@]}" --plain-http no-credentials --trusted-proxy 127.0.0.1
send() { python3 "$HERE/proxysend.py" "$S1_PORT" "$@"; }
before=$(grep -c 'request ' "$ITEST_DIR/fake_server2.log" || true)
check_eq "credentials on the plain port from 192.0.2.7: 403" \
    "$(send v1:192.0.2.7 --path /files/pub.txt --user alice:secret)" 403
check_eq "a sign-up from 192.0.2.7: 403" "$(send v1:192.0.2.7 --signup plainuser)" 403
check_eq "... neither reached server2" \
    "$(grep -c 'request ' "$ITEST_DIR/fake_server2.log" || true)" "$before"
check_eq "a GET without credentials from 192.0.2.7 goes on: 401" \
    "$(send v1:192.0.2.7 --path /files/pub.txt)" 401
check_eq "/healthz from 192.0.2.7: 200" "$(send v1:192.0.2.7)" 200
check_eq "credentials from 127.0.0.1 (loopback): 200" \
    "$(send v1:127.0.0.1 --path /files/pub.txt --user alice:secret)" 200

# ---- open: as before; and --hsts
start_s1 open "${TLS[@]}" --hsts 86400s
check_eq "--plain-http open (the default): credentials on the plain port: 200" \
    "$(curl -s -o /dev/null -w '%{http_code}' -u alice:secret "$S1/files/pub.txt")" 200
hsts() {
    curl -s -D - -o /dev/null "$@" | tr -d '\r' | grep -i '^strict-transport-security:' || true
}
check_eq "--hsts 86400s: an HTTPS answer carries Strict-Transport-Security" \
    "$(hsts --cacert "$CERTS/ca.pem" "https://127.0.0.1:$(https_port)/healthz")" \
    "Strict-Transport-Security: max-age=86400"
check_eq "... a plain one does not" "$(hsts "$S1/healthz")" ""
rc=0
out=$("$S1_BIN" --port 0 --root "$ROOT" --insecure-no-secret --auth 127.0.0.1:1 \
    --hsts 86400s 2>&1) || rc=$?
check_eq "--hsts without --tls-port: exit 2" "$rc" 2
itest_summary
