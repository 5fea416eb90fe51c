#!/usr/bin/env bash
# loadgen over https:// against a throw-away nginx (skipped when nginx or openssl is missing;
# installs nothing; about 10 s): a CA and server certificates made with `openssl req` in the
# test's directory; verification with --cacert (requests counted, body lengths right, 1 MB
# bodies over many TLS records), without it and with a certificate for another host (clear
# error, exit 1), a --cacert holding no certificate, --insecure (works, said in the log and
# run.json), session resumption on and off with --new-conn-per-request over TLS 1.3 and 1.2
# (resumed handshakes only with it on), and plain http with and without
# --new-conn-per-request (in both worker models).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NGINX=$(command -v nginx || true)
[[ -x $NGINX ]] || NGINX=/usr/sbin/nginx
if [[ ! -x $NGINX ]] || ! command -v openssl >/dev/null; then
    echo "skip: nginx or openssl is not installed (apt-get install nginx-light openssl)"
    echo "0 passed, 0 failed"
    exit 0
fi
itest_init loadgen_tls
itest_timeout 90
require_cmd python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
LG=$BIN_DIR/loadgen
OUT=$ITEST_DIR/out
PKI=$ITEST_DIR/pki

# ---- a CA and two server certificates -------------------------------------------------------
mkdir -p "$PKI"
# mkcert NAME SAN: a key and a certificate for SAN, signed by the test CA
mkcert() {
    openssl req -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" \
        -subj "/CN=$1" 2>/dev/null
    printf 'subjectAltName=%s\n' "$2" >"$PKI/$1.ext"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
        -CAcreateserial -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.pem" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.pem" -days 2 \
    -subj "/CN=loadgen test CA" 2>/dev/null || itest_fail "openssl req could not make a CA"
mkcert srv "DNS:localhost,IP:127.0.0.1" || itest_fail "cannot make the server certificate"
mkcert other "DNS:other.example" || itest_fail "cannot make the second certificate"

# ---- nginx: TLS 1.3, TLS 1.2 only, a certificate for another host, plain http ----------------
mkdir -p "$ITEST_DIR/www/files" "$ITEST_DIR/tmp"
head -c 1024 /dev/urandom >"$ITEST_DIR/www/files/1k"
head -c 1048576 /dev/urandom >"$ITEST_DIR/www/files/1m"
chmod -R a+rX "$ITEST_DIR" # nginx workers run as another user when we are root
ports=()
while ((${#ports[@]} < 4)); do
    p=$(free_port)
    [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
done
P13=${ports[0]} P12=${ports[1]} POTHER=${ports[2]} PHTTP=${ports[3]}
cert() { echo "ssl_certificate $PKI/$1.pem; ssl_certificate_key $PKI/$1.key;"; }
nginx_conf "$ITEST_DIR" \
    "listen 127.0.0.1:$P13 ssl; $(cert srv) ssl_protocols TLSv1.2 TLSv1.3;" \
    "listen 127.0.0.1:$P12 ssl; $(cert srv) ssl_protocols TLSv1.2;" \
    "listen 127.0.0.1:$POTHER ssl; $(cert other) ssl_protocols TLSv1.2 TLSv1.3;" \
    "listen 127.0.0.1:$PHTTP;"
"$NGINX" -e "$ITEST_DIR/nginx.err" -p "$ITEST_DIR" -c "$ITEST_DIR/nginx.conf" \
    >"$ITEST_DIR/nginx.log" 2>&1 &
itest_bg $!
for p in "${ports[@]}"; do
    wait_port 127.0.0.1 "$p" 10 || itest_fail "nginx did not start (port $p)"
done

# jq_run DIR EXPR: a Python expression over d = DIR/run.json, printed
jq_run() {
    python3 - "$1/run.json" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["points"][0]
print(eval(sys.argv[2]))
EOF
}
# lg NAME ARGS...: one loadgen run into $OUT/NAME, log in $ITEST_DIR/NAME.log; prints its status
lg() {
    local name=$1 rc=0
    shift
    "$LG" --warmup 0 --file 1k --expect-length 1k -o "$OUT/$name" "$@" \
        >"$ITEST_DIR/$name.log" 2>&1 || rc=$?
    echo "$rc"
}

# ---- verified with --cacert -----------------------------------------------------------------
check_eq "--cacert: exit 0" "$(lg ok -u 4 -t 2 --requests-per-user 50 \
    --url "https://127.0.0.1:$P13" --cacert "$PKI/ca.pem")" 0
check_eq "--cacert: 200 ok of the right length, no errors" \
    "$(jq_run "$OUT/ok" "(p['all']['ok'], p['all']['errors']['total'])")" "(200, 0)"
check_eq "--cacert: TLS 1.3, verified, 4 connections" \
    "$(jq_run "$OUT/ok" "(p['tls']['version'], d['config']['tls']['verify'], p['all']['connects'])")" \
    "('TLSv1.3', True, 4)"
check_ok "--cacert: summary names the protocol" grep -q 'TLS at N = 4: TLSv1.3' \
    "$OUT/ok/summary.md"
check_eq "1 MB bodies over TLS, discarded and copied" "$(lg big -u 2 --requests-per-user 5 \
    --url "https://127.0.0.1:$P13" --cacert "$PKI/ca.pem" --file 1m --expect-length 1M):$(
    lg bigcopy -u 2 --requests-per-user 5 --url "https://127.0.0.1:$P13" \
        --cacert "$PKI/ca.pem" --file 1m --expect-length 1M --copy-body)" "0:0"
check_eq "1 MB bodies: 10 ok each" \
    "$(jq_run "$OUT/big" "p['all']['ok']") $(jq_run "$OUT/bigcopy" "p['all']['ok']")" "10 10"

# ---- verification failures ------------------------------------------------------------------
check_eq "no --cacert (system store): exit 1" "$(lg nocafile -u 1 --requests-per-user 3 \
    --url "https://127.0.0.1:$P13")" 1
check_ok "no --cacert: the reason is logged" \
    grep -q "TLS handshake with '127.0.0.1' failed: certificate verification failed" \
    "$ITEST_DIR/nocafile.log"
check_eq "no --cacert: counted as connect errors, no throughput" \
    "$(jq_run "$OUT/nocafile" "(p['all']['ok'], p['all']['errors']['connect'], p['tls']['failed'])")" \
    "(0, 3, 3)"
check_eq "no --cacert: errors by kind: tls_handshake" \
    "$(jq_run "$OUT/nocafile" "p['all']['errors_by_kind']")" "{'tls_handshake': 3}"
check_eq "certificate for another host: exit 1" "$(lg otherhost -u 1 --requests-per-user 2 \
    --url "https://127.0.0.1:$POTHER" --cacert "$PKI/ca.pem")" 1
check_ok "certificate for another host: the reason is logged" \
    grep -q "certificate verification failed: IP address mismatch" "$ITEST_DIR/otherhost.log"

check_eq "--cacert without a certificate in it: exit 1" "$(lg nopem -u 1 --requests-per-user 1 \
    --url "https://127.0.0.1:$P13" --cacert "$PKI/srv.ext")" 1
check_ok "--cacert without a certificate in it: said" grep -q "no PEM certificate could be read" \
    "$ITEST_DIR/nopem.log"

# ---- --insecure -----------------------------------------------------------------------------
check_eq "--insecure: exit 0" "$(lg insecure -u 2 --requests-per-user 20 \
    --url "https://127.0.0.1:$POTHER" --insecure)" 0
check_eq "--insecure: 40 ok, run.json says so" \
    "$(jq_run "$OUT/insecure" "(p['all']['ok'], d['config']['tls']['insecure'], d['config']['tls']['verify'])")" \
    "(40, True, False)"
check_ok "--insecure: said in the log" grep -q "W --insecure: the server's certificate is not" \
    "$ITEST_DIR/insecure.log"

# ---- resumption with a new connection per request -------------------------------------------
for v in 13 12; do
    port=P$v
    for resume in on off; do
        name=resume$v$resume
        check_eq "TLS 1.${v#1}, --tls-resume $resume, new connection per request: exit 0" \
            "$(lg "$name" -u 2 --requests-per-user 20 --url "https://127.0.0.1:${!port}" \
                --cacert "$PKI/ca.pem" --tls-resume "$resume" --new-conn-per-request)" 0
    done
    check_eq "TLS 1.${v#1}: resume on: 40 ok on 40 connections, 38 resumed + 2 full" \
        "$(jq_run "$OUT/resume${v}on" "(p['all']['ok'], p['all']['connects'], p['tls']['resumed'], p['tls']['full'])")" \
        "(40, 40, 38, 2)"
    check_eq "TLS 1.${v#1}: resume off: 40 full handshakes, none resumed" \
        "$(jq_run "$OUT/resume${v}off" "(p['all']['ok'], p['tls']['full'], p['tls']['resumed'], p['tls']['version'])")" \
        "(40, 40, 0, 'TLSv1.${v#1}')"
done
check_ok "handshake times recorded" python3 -c "
import json, sys
t = json.load(open('$OUT/resume13off/run.json'))['points'][0]['tls']['handshake_ms']
sys.exit(not 0 < t['p50'] <= t['max'])"
check_eq "keep-alive: one handshake per connection" \
    "$(jq_run "$OUT/ok" "p['tls']['full'] + p['tls']['resumed']")" 4

# ---- plain http -----------------------------------------------------------------------------
check_eq "plain http: exit 0" "$(lg plain -u 2 --requests-per-user 20 \
    --url "http://127.0.0.1:$PHTTP")" 0
check_eq "plain http: 40 ok on 2 connections, no tls" \
    "$(jq_run "$OUT/plain" "(p['all']['ok'], p['all']['connects'], p['tls'])")" "(40, 2, None)"
check_eq "plain http, new connection per request: 40 ok on 40 connections" \
    "$(lg plainnew -u 2 --requests-per-user 20 --url "http://127.0.0.1:$PHTTP" \
        --new-conn-per-request):$(jq_run "$OUT/plainnew" "(p['all']['ok'], p['all']['connects'])")" \
    "0:(40, 40)"
check_eq "plain http, --model threads, new connection per request: 20 ok on 20 connections" \
    "$(lg plainthr -u 2 --requests-per-user 10 --url "http://127.0.0.1:$PHTTP" --model threads \
        --new-conn-per-request):$(jq_run "$OUT/plainthr" "(p['all']['ok'], p['all']['connects'])")" \
    "0:(20, 20)"
rc=0
err=$("$LG" --url "http://127.0.0.1:$PHTTP" --insecure 2>&1 >/dev/null) || rc=$?
check_eq "--insecure with http://: exit 2, one line" \
    "$rc:$(printf '%s\n' "$err" | wc -l):$([[ $err == *"need an https://"* ]] && echo y)" "2:1:y"

itest_summary
