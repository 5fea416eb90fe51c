#!/usr/bin/env bash
# server1 over HTTPS (--tls-port) against fake_server2.py, with a throw-away CA and server
# certificate (127.0.0.1 and localhost) made with `openssl req` in the test's directory: the HTTP
# API the same as over plain HTTP (a 3 MiB file byte-exact in both read modes, HEAD, a Range, a
# listing, an upload with Expect: 100-continue read back byte-exact, an account created and used),
# Python's urllib, openssl s_client (TLS 1.3 and 1.2 accepted, 1.1 refused, ALPN http/1.1 selected
# and an h2-only client served without ALPN, a session resumed over 1.3 (again with the ticket a
# resumption gave) and over 1.2), the plain port answering beside it, clients sending garbage or
# nothing closed while the server goes on, the TLS metrics, the start refused (exit 2, the file
# named) without --tls-key, with a key of another certificate, with an expired certificate, and
# headless Chromium showing a listing (skipped when it is not installed); SIGHUP: a new certificate
# served to new connections while one opened before it goes on, tickets issued before it still
# resumed, a broken key refused with the old certificate kept, ignored without HTTPS; the
# session-ticket keys rotated every second (--tls-ticket-rotate 1s): a session resumed across one
# rotation, not beyond the ring (a full handshake). About 30 s.
# itest-https: no (it gives server1 its own certificates and tests both ports itself)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init tls
itest_timeout 120
require_cmd curl python3 cmp openssl
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration
PKI=$ITEST_DIR/pki

# ---- a CA, the server's certificate, another one and an expired one --------------------------
mkdir -p "$PKI/ca"
# csr NAME: a new key and a request for CN=NAME
csr() {
    openssl req -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" \
        -subj "/CN=$1" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.pem" -days 2 \
    -subj "/CN=server1 test CA" 2>/dev/null || itest_fail "openssl req could not make a CA"
for name in srv other old; do
    csr "$name" || itest_fail "openssl req could not make the $name key"
done
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$PKI/san.ext"
for name in srv other; do
    openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
        -CAcreateserial -days 2 -extfile "$PKI/san.ext" -out "$PKI/$name.pem" 2>/dev/null ||
        itest_fail "cannot sign the $name certificate"
done
# openssl x509 (3.0) cannot date a certificate in the past: `openssl ca` can
: >"$PKI/ca/index.txt"
echo 01 >"$PKI/ca/serial"
cat >"$PKI/ca.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $PKI/ca/index.txt
new_certs_dir = $PKI/ca
serial = $PKI/ca/serial
default_md = sha256
policy = p
[p]
commonName = supplied
EOF
openssl ca -batch -config "$PKI/ca.cnf" -cert "$PKI/ca.pem" -keyfile "$PKI/ca.key" \
    -in "$PKI/old.csr" -out "$PKI/old.pem" -startdate 20200101000000Z -enddate 20200102000000Z \
    >/dev/null 2>&1 || itest_fail "openssl ca could not make the expired certificate"
# the server's certificate followed by the CA (a chain, leaf first)
cat "$PKI/srv.pem" "$PKI/ca.pem" >"$PKI/chain.pem"

# ---- fixtures -------------------------------------------------------------------------------
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT/sub"
head -c $((3 * 1024 * 1024 + 17)) /dev/urandom >"$ROOT/big"
echo "hello over tls" >"$ROOT/hello.txt"
echo "nested" >"$ROOT/sub/n.txt"
head -c $((2 * 1024 * 1024 + 5)) /dev/urandom >"$ITEST_DIR/upload"
# more than loopback's largest send buffer (tcp_wmem: 4 MiB), for the slow reader
head -c $((12 * 1024 * 1024 + 3)) /dev/urandom >"$ROOT/huge"
ALICE=(-u alice:secret)

# ---- refused at start -----------------------------------------------------------------------
# refused DESC WANT_IN_MESSAGE ARGS...: server1 must exit 2 at once, its message naming WANT
refused() {
    local desc=$1 want=$2 rc=0 out
    shift 2
    out=$(timeout 20 "$S1_BIN" --port 0 --root "$ROOT" --insecure-no-secret "$@" 2>&1) || rc=$?
    check_eq "$desc: exit status" "$rc" 2
    if [[ $out == *"$want"* && $out != *"PRIVATE KEY"* ]]; then
        itest_ok "$desc: the message names $want"
    else
        itest_not_ok "$desc: message '$out' does not name $want"
    fi
}
refused "no --tls-key" "--tls-key" --tls-port 0 --tls-cert "$PKI/srv.pem"
refused "no --tls-port" "--tls-port" --tls-cert "$PKI/srv.pem" --tls-key "$PKI/srv.key"
refused "a key of another certificate" "$PKI/other.key" --tls-port 0 \
    --tls-cert "$PKI/srv.pem" --tls-key "$PKI/other.key"
refused "an expired certificate" "$PKI/old.pem" --tls-port 0 \
    --tls-cert "$PKI/old.pem" --tls-key "$PKI/old.key"
refused "a missing certificate file" "$PKI/nothere.pem" --tls-port 0 \
    --tls-cert "$PKI/nothere.pem" --tls-key "$PKI/srv.key"
refused "a key file that is not a key" "$PKI/srv.csr" --tls-port 0 \
    --tls-cert "$PKI/srv.pem" --tls-key "$PKI/srv.csr"

# ---- server1 with HTTPS ---------------------------------------------------------------------
start_fake 0
TLS_FLAGS=(--tls-port 0 --tls-cert "$PKI/chain.pem" --tls-key "$PKI/srv.key"
    --header-timeout 2s)
start_s1 s1 --read buffered "${TLS_FLAGS[@]}"
wait_until 10 grep -q 'listening for https on ' "$S1_LOG" || itest_fail "no https port logged"
TLS_PORT=$(grep -m1 -o 'listening for https on [^ ]*' "$S1_LOG")
TLS_PORT=${TLS_PORT##*:}
S1S=https://localhost:$TLS_PORT
CURL=(curl -s --cacert "$PKI/ca.pem" --max-time 30)

# got_file DESC URL FILE [CURL ARGS...]: status 200 and the body byte-exact as FILE
got_file() {
    local desc=$1 url=$2 file=$3 status
    shift 3
    status=$("${CURL[@]}" -o "$ITEST_DIR/got" -w '%{http_code}' "$@" "$url" || true)
    check_eq "$desc: status" "$status" 200
    if cmp -s "$ITEST_DIR/got" "$file"; then
        itest_ok "$desc: byte-exact"
    else
        itest_not_ok "$desc: body differs ($(stat -c %s "$ITEST_DIR/got") bytes)"
    fi
}

got_file "GET of a 3 MiB file over https (--read buffered)" "$S1S/files/big" "$ROOT/big" \
    "${ALICE[@]}"
check_eq "HEAD over https: Content-Length" \
    "$("${CURL[@]}" -I "${ALICE[@]}" "$S1S/files/big" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="content-length"{print $2}')" "$((3 * 1024 * 1024 + 17))"
dd if="$ROOT/big" of="$ITEST_DIR/slice" bs=1 skip=1000000 count=2100000 2>/dev/null
check_eq "Range over https: status" "$("${CURL[@]}" -o "$ITEST_DIR/got" -w '%{http_code}' \
    "${ALICE[@]}" -r 1000000-3099999 "$S1S/files/big")" 206
check_ok "Range over https: the bytes asked for" cmp -s "$ITEST_DIR/got" "$ITEST_DIR/slice"
listing=$("${CURL[@]}" "${ALICE[@]}" "$S1S/files/")
if [[ $listing == *big* && $listing == *hello.txt* && $listing == *sub/* ]]; then
    itest_ok "a listing over https"
else
    itest_not_ok "a listing over https: '${listing:0:200}'"
fi
check_eq "PUT over https with Expect: 100-continue" "$("${CURL[@]}" -o /dev/null \
    -w '%{http_code}' "${ALICE[@]}" -H 'Expect: 100-continue' -T "$ITEST_DIR/upload" \
    "$S1S/files/up.bin")" 201
got_file "the upload read back over https" "$S1S/files/up.bin" "$ITEST_DIR/upload" "${ALICE[@]}"
check_eq "an account created over https" "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
    -d 'username=carol&password=hunter22x' "$S1S/users")" 201
check_eq "... and used" "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -u carol:hunter22x \
    "$S1S/files/hello.txt")" 200
check_eq "a wrong password over https" "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
    -u alice:wrong "$S1S/files/hello.txt")" 401
check_eq "the plain port answers plain HTTP meanwhile" "$(curl -s --max-time 10 "$S1/healthz")" ok
check_eq "plain HTTP sent to the TLS port gets no HTTP answer" \
    "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$TLS_PORT/healthz" ||
        true)" 000

py_get=$(python3 - "$PKI/ca.pem" "$S1S/files/hello.txt" <<'EOF'
import base64, ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
req = urllib.request.Request(sys.argv[2], headers={
    "Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()})
with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
    print(r.status, r.read().decode().strip())
EOF
) || true
check_eq "Python urllib with the CA: a GET" "$py_get" "200 hello over tls"

# a client with a small receive buffer that pauses, then reads slowly: server1's writes stop
# half-way (WANT_WRITE: 16 of 808 writes in a trial) and resume with the same bytes; and three
# requests sent in one TLS record
py_slow=$(python3 - "$PKI/ca.pem" "$TLS_PORT" "$ROOT/huge" <<'EOF'
import base64, hashlib, socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
raw = socket.socket()
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
raw.settimeout(30)
raw.connect(("127.0.0.1", int(sys.argv[2])))
s = ctx.wrap_socket(raw, server_hostname="localhost")
auth = base64.b64encode(b"alice:secret").decode()
s.sendall(("GET /files/huge HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode())
data = b""
while b"\r\n\r\n" not in data:
    data += s.recv(65536)
head, body = data.split(b"\r\n\r\n", 1)
time.sleep(0.3)
want = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
body = bytearray(body)  # appends in place: 12 MiB of bytes += would copy it quadratically
reads = 0
while len(body) < want:
    chunk = s.recv(16384)
    if not chunk:
        break
    body += chunk
    reads += 1
    if reads % 16 == 0:
        time.sleep(0.002)
exact = hashlib.sha256(body).digest() == hashlib.sha256(open(sys.argv[3], "rb").read()).digest()
print("slow reader", "exact" if exact else "differs (%d bytes)" % len(body))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
data = b""
while data.count(b"\r\n\r\nok") < 3:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print("pipelined", data.count(b"HTTP/1.1 200"))
EOF
) || true
check_eq "a slow reader with a small receive buffer: 12 MiB byte-exact" \
    "$(head -1 <<<"$py_slow")" "slow reader exact"
check_eq "three pipelined requests in one TLS record: three answers" \
    "$(tail -1 <<<"$py_slow")" "pipelined 3"

# three requests in three TLS records sent in one segment: server1 reads ahead, so one read(2)
# takes all three records off the socket and no readiness tells of the two left in OpenSSL
py_records=$(python3 - "$PKI/ca.pem" "$TLS_PORT" <<'EOF'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
sock = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10)
def more():
    d = sock.recv(65536)
    if not d:
        raise SystemExit("closed")
    inc.write(d)
while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        sock.sendall(out.read())
        more()
sock.sendall(out.read())
for _ in range(3):
    tls.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
sock.sendall(out.read())  # three records, one send
got = b""
try:
    while got.count(b"HTTP/1.1 200") < 3:
        try:
            got += tls.read(65536)
        except ssl.SSLWantReadError:
            more()
except (socket.timeout, SystemExit):
    pass
print("records", got.count(b"HTTP/1.1 200"))
EOF
) || true
check_eq "three requests in three TLS records in one segment: three answers" "$py_records" \
    "records 3"

# small answers, one request at a time and none read until the last: each head and body go in
# one record; once the client's window is full a write is refused and offered again whole
# (from the output buffer, made contiguous); every answer arrives byte-exact and in order
head -c 12288 /dev/urandom >"$ROOT/twelve"
py_small=$(python3 - "$PKI/ca.pem" "$TLS_PORT" "$ROOT/twelve" <<'EOF'
import base64, socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
raw = socket.socket()
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
raw.settimeout(30)
raw.connect(("127.0.0.1", int(sys.argv[2])))
s = ctx.wrap_socket(raw, server_hostname="localhost")
auth = base64.b64encode(b"alice:secret").decode()
req = ("GET /files/twelve HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode()
N = 400
for i in range(N):
    s.sendall(req)
    time.sleep(0.002)  # one at a time: each answered on its own, not batched with the next
want = open(sys.argv[3], "rb").read()
data, good = b"", 0
while good < N:
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    if b"\r\n\r\n" not in data:
        break
    head, data = data.split(b"\r\n\r\n", 1)
    while len(data) < len(want):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    if not head.startswith(b"HTTP/1.1 200") or data[:len(want)] != want:
        break
    data = data[len(want):]
    good += 1
print("small answers", good)
EOF
) || true
check_eq "400 small answers written while the client read none: all byte-exact, in order" \
    "$py_small" "small answers 400"

# ---- the handshake: versions, ALPN, resumption ----------------------------------------------
# sclient ARGS...: openssl s_client to the TLS port sending a GET /healthz; its output
sclient() {
    printf 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' |
        timeout 20 openssl s_client -connect "127.0.0.1:$TLS_PORT" -servername localhost \
            -CAfile "$PKI/ca.pem" -verify_return_error -ign_eof "$@" 2>&1 || true
}
out=$(sclient -tls1_3)
if [[ $out == *"TLSv1.3"* && $out == *"Verify return code: 0 (ok)"* && $out == *$'\nok'* ]]; then
    itest_ok "s_client -tls1_3: handshake and GET"
else
    itest_not_ok "s_client -tls1_3: $out"
fi
out=$(sclient -tls1_2)
if [[ $out == *"Protocol  : TLSv1.2"* && $out == *ECDHE* && $out == *$'\nok'* ]]; then
    itest_ok "s_client -tls1_2: handshake (ECDHE) and GET"
else
    itest_not_ok "s_client -tls1_2: $out"
fi
out=$(sclient -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0')
if [[ $out == *"alert protocol version"* && $out == *"Cipher is (NONE)"* && $out != *$'\nok'* ]]; then
    itest_ok "s_client -tls1_1: refused"
else
    itest_not_ok "s_client -tls1_1 was not refused: $out"
fi
out=$(sclient -alpn http/1.1)
if [[ $out == *"ALPN protocol: http/1.1"* ]]; then
    itest_ok "ALPN: http/1.1 selected"
else
    itest_not_ok "ALPN http/1.1: $out"
fi
out=$(sclient -alpn h2)
if [[ $out == *"No ALPN negotiated"* && $out == *$'\nok'* ]]; then
    itest_ok "ALPN: an h2-only client is served without ALPN"
else
    itest_not_ok "ALPN h2: $out"
fi
for v in tls1_3 tls1_2; do
    sclient "-$v" -sess_out "$ITEST_DIR/sess.$v" >/dev/null
    out=$(sclient "-$v" -sess_in "$ITEST_DIR/sess.$v")
    if [[ $out == *"Reused, TLSv1."* && $out == *$'\nok'* ]]; then
        itest_ok "-$v: the session resumed"
    else
        itest_not_ok "-$v: the session was not resumed: $out"
    fi
done
# a 1.3 ticket is used once: a resumed handshake must give a new one, which resumes in turn
sclient -tls1_3 -sess_in "$ITEST_DIR/sess.tls1_3" -sess_out "$ITEST_DIR/sess.again" >/dev/null
out=$(sclient -tls1_3 -sess_in "$ITEST_DIR/sess.again")
if [[ $out == *"Reused, TLSv1.3"* && $out == *$'\nok'* ]]; then
    itest_ok "-tls1_3: the ticket got in a resumed handshake resumes too"
else
    itest_not_ok "-tls1_3: the ticket got in a resumed handshake: $out"
fi

# ---- clients that speak no TLS --------------------------------------------------------------
garbage=$(python3 - "$TLS_PORT" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 4)
try:
    data = s.recv(4096)
    while data and b"HTTP/1.1" not in data:
        data = s.recv(4096)
    print("answered" if data else "closed")
except ConnectionResetError:
    print("closed")
t0 = time.monotonic()
s2 = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    s2.recv(1)
    print("silent closed after %.0f s" % (time.monotonic() - t0))
except ConnectionResetError:
    print("silent closed after %.0f s" % (time.monotonic() - t0))
except socket.timeout:
    print("silent still open after 10 s")
EOF
) || true
check_eq "garbage on the TLS port: closed, no HTTP answer" "$(head -1 <<<"$garbage")" closed
case $(tail -1 <<<"$garbage") in
"silent closed after "[1-9]" s") itest_ok "a silent client is closed by --header-timeout (2s)" ;;
*) itest_not_ok "a silent client: $(tail -1 <<<"$garbage")" ;;
esac
check_eq "the server goes on serving https" "$("${CURL[@]}" "$S1S/healthz")" ok

metrics=$(curl -s --max-time 30 "$S1_METRICS")
metric() { awk -v n="$1" '$1==n{print $2}' <<<"$metrics"; }
if (($(metric server1_tls_handshakes_total) >= 15)); then
    itest_ok "server1_tls_handshakes_total counts them ($(metric server1_tls_handshakes_total))"
else
    itest_not_ok "server1_tls_handshakes_total is $(metric server1_tls_handshakes_total)"
fi
if (($(metric server1_tls_resumed_total) >= 2)); then
    itest_ok "server1_tls_resumed_total >= 2"
else
    itest_not_ok "server1_tls_resumed_total is $(metric server1_tls_resumed_total)"
fi
if (($(metric server1_tls_handshakes_failed_total) >= 3)); then
    itest_ok "server1_tls_handshakes_failed_total >= 3 (1.1, garbage, silent)"
else
    itest_not_ok "server1_tls_handshakes_failed_total is $(metric server1_tls_handshakes_failed_total)"
fi
if [[ -n $(metric server1_tls_ktls_send_total) ]]; then
    itest_ok "server1_tls_ktls_send_total is there"
else
    itest_not_ok "no server1_tls_ktls_send_total"
fi
# kTLS asked for only where the kernel has its tls ULP (after server1's probe, which loads the
# module where it can): the log says which, as the kernel's list does
want="not available"
! grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null || want=available
if grep -q "tls: kTLS $want" "$S1_LOG"; then
    itest_ok "kTLS $want, as tcp_available_ulp says"
else
    itest_not_ok "the log does not say 'kTLS $want': $(grep -m1 'kTLS' "$S1_LOG")"
fi

# ---- headless Chromium ----------------------------------------------------------------------
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $CHROMIUM ]]; then
    echo "skip: chromium is not installed (the browser check)"
else
    mkdir -p "$ITEST_DIR/chrome"
    dom=$(timeout 40 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
        --user-data-dir="$ITEST_DIR/chrome" --ignore-certificate-errors --dump-dom \
        "https://alice:secret@127.0.0.1:$TLS_PORT/files/" 2>/dev/null) || true
    rm -rf "$ITEST_DIR/chrome" # (its own logs are not ours to print)
    if [[ $dom == *hello.txt* ]]; then
        itest_ok "headless Chromium shows a listing over https"
    else
        itest_not_ok "headless Chromium: '${dom:0:300}'"
    fi
fi
stop_s1 "server1 with https"

# ---- the other read mode --------------------------------------------------------------------
start_s1 s1direct --read direct "${TLS_FLAGS[@]}" --max-conns-per-ip 2
wait_until 10 grep -q 'listening for https on ' "$S1_LOG" || itest_fail "no https port logged"
TLS_PORT=$(grep -m1 -o 'listening for https on [^ ]*' "$S1_LOG")
S1S=https://localhost:${TLS_PORT##*:}
got_file "GET of a 3 MiB file over https (--read direct)" "$S1S/files/big" "$ROOT/big" \
    "${ALICE[@]}"
check_eq "Range over https (--read direct): status" "$("${CURL[@]}" -o "$ITEST_DIR/got" \
    -w '%{http_code}' "${ALICE[@]}" -r 1000000-3099999 "$S1S/files/big")" 206
check_ok "Range over https (--read direct): the bytes asked for" \
    cmp -s "$ITEST_DIR/got" "$ITEST_DIR/slice"
over=$(python3 - "${TLS_PORT##*:}" <<'EOF'
import socket, sys
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) for _ in range(2)]
third = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    print("closed, %d bytes" % len(third.recv(4096)))
except ConnectionResetError:
    print("closed, 0 bytes")
except socket.timeout:
    print("still open")
EOF
) || true
check_eq "over --max-conns-per-ip, a TLS connection is closed without a byte" "$over" \
    "closed, 0 bytes"
stop_s1 "server1 with https (--read direct)"

# ---- SIGHUP: the certificate and key read again ---------------------------------------------
LIVE=$ITEST_DIR/live
mkdir -p "$LIVE"
cp "$PKI/chain.pem" "$LIVE/cert.pem"
cp "$PKI/srv.key" "$LIVE/key.pem"
start_s1 s1reload --tls-port 0 --tls-cert "$LIVE/cert.pem" --tls-key "$LIVE/key.pem"
wait_until 10 grep -q 'listening for https on ' "$S1_LOG" || itest_fail "no https port logged"
TLS_PORT=$(grep -m1 -o 'listening for https on [^ ]*' "$S1_LOG")
TLS_PORT=${TLS_PORT##*:}
S1S=https://localhost:$TLS_PORT
out=$(sclient -tls1_2)
check_ok "before SIGHUP: the first certificate (CN=srv)" grep -q 'subject=CN = srv' <<<"$out"
sclient -tls1_2 -sess_out "$ITEST_DIR/sess.hup" >/dev/null
# a keep-alive connection: one request now, one more on the same socket once told to
python3 - "$TLS_PORT" "$PKI/ca.pem" "$ITEST_DIR/ka.go" >"$ITEST_DIR/ka.out" 2>&1 <<'EOF' &
import http.client, os, ssl, sys, time
port, ca, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPSConnection("localhost", port, timeout=20,
                                context=ssl.create_default_context(cafile=ca))
def get():
    c.request("GET", "/healthz")
    r = c.getresponse()
    return r.status, r.read().strip().decode()
print("first", *get(), flush=True)
sock = c.sock
t0 = time.monotonic()
while not os.path.exists(go) and time.monotonic() - t0 < 30:
    time.sleep(0.05)
st, body = get()
cn = dict(x[0] for x in c.sock.getpeercert()["subject"])["commonName"]
print("second", st, body, "same socket" if c.sock is sock else "another socket", cn, flush=True)
EOF
KA_PID=$!
wait_until 20 grep -q '^first' "$ITEST_DIR/ka.out" ||
    itest_not_ok "keep-alive: $(cat "$ITEST_DIR/ka.out")"
cat "$PKI/other.pem" "$PKI/ca.pem" >"$LIVE/cert.pem"
cp "$PKI/other.key" "$LIVE/key.pem"
kill -HUP "$S1_PID"
wait_until 10 grep -q 'certificate reloaded: ' "$S1_LOG" || itest_not_ok "no reload logged"
check_ok "SIGHUP: 'certificate reloaded: SUBJECT, not after DATE' logged" \
    grep -q 'certificate reloaded: CN=other, not after .* GMT' "$S1_LOG"
out=$(sclient -tls1_2)
if [[ $out == *"subject=CN = other"* && $out == *$'\nok'* ]]; then
    itest_ok "after SIGHUP: a new connection gets the new certificate (CN=other)"
else
    itest_not_ok "after SIGHUP: $out"
fi
touch "$ITEST_DIR/ka.go"
wait "$KA_PID" || true
check_eq "a keep-alive connection opened before SIGHUP: served after it, its certificate kept" \
    "$(grep '^second' "$ITEST_DIR/ka.out" || cat "$ITEST_DIR/ka.out")" \
    "second 200 ok same socket srv"
out=$(sclient -tls1_2 -sess_in "$ITEST_DIR/sess.hup")
if [[ $out == *"Reused, TLSv1.2"* && $out == *$'\nok'* ]]; then
    itest_ok "a ticket issued before SIGHUP resumes after it (the ticket keys kept)"
else
    itest_not_ok "a ticket issued before SIGHUP: not resumed: $out"
fi
printf 'not a key\n' >"$LIVE/key.pem"
kill -HUP "$S1_PID"
wait_until 10 grep -q 'certificate not reloaded' "$S1_LOG" || true
check_ok "SIGHUP with a broken key: refused, the file named in the log" \
    grep -q "certificate not reloaded, the one in use kept: --tls-key '$LIVE/key.pem'" "$S1_LOG"
out=$(sclient -tls1_2)
if [[ $out == *"subject=CN = other"* && $out == *$'\nok'* ]]; then
    itest_ok "after a failed reload: the certificate in use still served"
else
    itest_not_ok "after a failed reload: $out"
fi
metrics=$(curl -s --max-time 30 "$S1_METRICS")
check_eq "server1_tls_reloads_total" "$(metric server1_tls_reloads_total)" 1
check_eq "server1_tls_reloads_failed_total" "$(metric server1_tls_reloads_failed_total)" 1
stop_s1 "server1 after SIGHUPs"

start_s1 s1plain
kill -HUP "$S1_PID"
wait_until 10 grep -q 'SIGHUP: no --tls-cert to reload, ignored' "$S1_LOG" ||
    itest_not_ok "without HTTPS: no line for SIGHUP"
check_eq "without HTTPS: SIGHUP leaves server1 serving" \
    "$(curl -s --max-time 10 "$S1/healthz" || true)" ok
stop_s1 "server1 without https, after SIGHUP"

# ---- session-ticket keys rotated ------------------------------------------------------------
start_s1 s1rotate --tls-port 0 --tls-cert "$PKI/chain.pem" --tls-key "$PKI/srv.key" \
    --tls-ticket-rotate 1s
wait_until 10 grep -q 'listening for https on ' "$S1_LOG" || itest_fail "no https port logged"
TLS_PORT=$(grep -m1 -o 'listening for https on [^ ]*' "$S1_LOG")
TLS_PORT=${TLS_PORT##*:}
S1S=https://localhost:$TLS_PORT
rotations() {
    curl -s --max-time 30 "$S1_METRICS" | awk '$1=="server1_tls_ticket_key_rotations_total"{print $2}'
}
# (a function: wait_until must read the count anew each time)
# shellcheck disable=SC2317 # called through wait_until
rotated_since() { (($(rotations) >= $1)); }
# resumed_after N: a new TLS 1.2 session, then N rotations later (waited for on the count):
# Reused or New, or why the request failed
resumed_after() {
    local r0 out
    sclient -tls1_2 -sess_out "$ITEST_DIR/sess.rot" >/dev/null
    r0=$(rotations)
    wait_until 30 rotated_since $((r0 + $1)) || echo "no $1 rotations in 30 s: "
    out=$(sclient -tls1_2 -sess_in "$ITEST_DIR/sess.rot")
    if [[ $out != *$'\nok'* ]]; then
        echo "failed: $out"
    elif [[ $out == *"Reused, TLSv1.2"* ]]; then
        echo Reused
    elif [[ $out == *"New, TLSv1.2"* ]]; then
        echo New
    else
        echo "neither: $out"
    fi
}
check_eq "a TLS 1.2 ticket resumes at once" "$(resumed_after 0)" Reused
# (the key that made it stays in the ring for 2 more rotations, >= 2 s: the check is faster)
check_eq "a TLS 1.2 ticket resumes after one rotation (an older key in the ring)" \
    "$(resumed_after 1)" Reused
check_eq "a TLS 1.2 ticket after 3 rotations (beyond the ring): a full handshake, served" \
    "$(resumed_after 3)" New
stop_s1 "server1 with --tls-ticket-rotate 1s"

itest_summary
