#!/usr/bin/env bash
# Chunked uploads (PUT /files/{name} with Transfer-Encoding: chunked) on server1 against
# tests/integration/fake_server2.py: curl -T - from stdin, http.client's chunks of odd sizes and
# raw bodies sent a few bytes at a time (extensions, trailers, Expect: 100-continue, the next
# request on the same connection), all read back byte-exact; over --max-upload (413), malformed
# (400), over --user-quota (507) and a failed If-None-Match (412) store nothing; Content-Length
# with Transfer-Encoding (400), another coding (501) and HTTP/1.0 (400); a chunked body that
# outgrows the temp space left (503) and one trickled below --min-rate (408).
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init chunked
itest_timeout 120
require_cmd curl python3 cmp
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
DATA=$ITEST_DIR/data
mkdir -p "$DATA"
head -c 0 /dev/urandom >"$DATA/zero"
head -c 1000 /dev/urandom >"$DATA/small"
head -c 2097152 /dev/urandom >"$DATA/two"
head -c 5242880 /dev/urandom >"$DATA/five"

ALICE=(-u alice:secret)
CP=(python3 "$HERE/chunkput.py")
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@" || true; }
# put_stdin FILE NAME [CURL-ARGS...]: the status of curl -T - (chunked) with FILE on stdin.
put_stdin() {
    local file=$1 name=$2
    shift 2
    code "${ALICE[@]}" "$@" -T - "$S1/files/$name" <"$file"
}
# check_get DESC NAME FILE: GET /files/NAME is 200 with exactly the bytes of FILE.
check_get() {
    local desc=$1 name=$2 file=$3 got=$ITEST_DIR/got status
    rm -f "$got"
    status=$(curl -s -o "$got" -w '%{http_code}' --max-time 30 "${ALICE[@]}" "$S1/files/$name" || true)
    if [[ $status == 200 ]] && cmp -s "$got" "$file"; then
        itest_ok "$desc"
    else
        itest_not_ok "$desc: status $status, bytes $(stat -c %s "$got" 2>/dev/null || echo none)"
    fi
}
absent() { check_eq "$1" "$(code "${ALICE[@]}" "$S1/files/$2")" 404; }
# raw_put NAME [ARGS...] < BODY: chunkput.py raw's "STATUS [STATUS] closed|open".
raw_put() {
    local name=$1
    shift
    "${CP[@]}" raw "$S1_PORT" "$name" --auth alice:secret "$@"
}
# raw_head HEAD: the first status line server1 answers to the bytes HEAD, and whether it closed.
raw_head() {
    PYTHONPATH=$HERE python3 - "$S1_PORT" "$1" <<'EOF'
import sys, time
import itls
s = itls.connect(int(sys.argv[1]), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
buf, closed, end = b"", False, time.monotonic() + 10
while not closed and time.monotonic() < end:
    try:
        d = itls.recv_within(s, end - time.monotonic())
    except OSError:
        d = b""
    if d is not None:
        closed = d == b""
        buf += d
print(buf.split(b"\r\n", 1)[0].decode("latin-1"), "closed" if closed else "open")
EOF
}

start_fake 0
start_s1 s1 --max-upload 4M --user-quota 7M

log "chunked uploads stored byte-exact"
check_eq "curl -T - (stdin, chunked): 201" "$(put_stdin "$DATA/small" small)" 201
check_get "  ... byte-exact" small "$DATA/small"
check_eq "curl -T - of 2 MiB: 201" "$(put_stdin "$DATA/two" two)" 201
check_get "  ... byte-exact" two "$DATA/two"
check_eq "curl -T - of nothing: 201" "$(put_stdin "$DATA/zero" zero)" 201
check_get "  ... empty" zero "$DATA/zero"
check_eq "curl -T - replacing a file: 204" "$(put_stdin "$DATA/two" small)" 204
check_get "  ... the new bytes" small "$DATA/two"
check_eq "http.client, chunks of odd sizes, 2 MiB: 201" \
    "$("${CP[@]}" client "$S1_PORT" odd "$DATA/two" --auth alice:secret)" 201
check_get "  ... byte-exact" odd "$DATA/two"
check_eq "curl -T - with Expect: 100-continue: 201" \
    "$(put_stdin "$DATA/small" expect -H 'Expect: 100-continue')" 201
check_get "  ... byte-exact" expect "$DATA/small"
check_eq "raw, with extensions and trailers, then a GET on the connection: 201 200 open" \
    "$(printf '5;a=b\r\nhello\r\n1 ; x\r\n,\r\nA\r\n world\r\n\r\n\r\n0;end\r\nX-Sum: 12\r\n\r\n' |
        raw_put ext --then-get ext)" "201 200 open"
printf 'hello, world\r\n\r\n' >"$ITEST_DIR/ext.want"
check_get "  ... the data only" ext "$ITEST_DIR/ext.want"
check_eq "raw, waiting for 100 Continue first: 201" \
    "$(printf '3\r\nabc\r\n0\r\n\r\n' | raw_put cont --expect)" "201 open"

log "chunked uploads refused store nothing"
check_eq "over --max-upload (5 MiB of 4): 413" "$(put_stdin "$DATA/five" big)" 413
absent "  ... nothing stored" big
check_eq "raw, a chunk announcing more than --max-upload: 413, closed" \
    "$(printf '3\r\nabc\r\n400000\r\nabc' | raw_put big2)" "413 closed"
absent "  ... nothing stored" big2
check_eq "bad hex digit: 400, closed" "$(printf '3\r\nabc\r\nzz\r\nab\r\n0\r\n\r\n' | raw_put bad1)" \
    "400 closed"
absent "  ... nothing stored" bad1
check_eq "data without its CRLF: 400, closed" "$(printf '3\r\nabcd\r\n0\r\n\r\n' | raw_put bad2)" \
    "400 closed"
absent "  ... nothing stored" bad2
check_eq "size over 64 bits: 400, closed" \
    "$(printf '3\r\nabc\r\n10000000000000000\r\n' | raw_put bad3)" "400 closed"
absent "  ... nothing stored" bad3
check_eq "a bare LF after the size: 400, closed" "$(printf '3\nabc\r\n0\r\n\r\n' | raw_put bad4)" \
    "400 closed"
absent "  ... nothing stored" bad4
{
    printf '3\r\nabc\r\n0\r\nX-Big: '
    head -c 9000 /dev/zero | tr '\0' a
    printf '\r\n\r\n'
} >"$ITEST_DIR/bigtrailer"
check_eq "trailers over --max-header-bytes: 400, closed" \
    "$(raw_put bad5 <"$ITEST_DIR/bigtrailer")" "400 closed"
absent "  ... nothing stored" bad5
check_eq "over --user-quota (7 MiB; 6 MiB held): 507" "$(put_stdin "$DATA/two" quota)" 507
absent "  ... nothing stored" quota
check_eq "If-None-Match: * on a taken name: 412" \
    "$(put_stdin "$DATA/zero" two -H 'If-None-Match: *')" 412
check_get "  ... the file unchanged" two "$DATA/two"

log "framing refused"
check_eq "Content-Length and Transfer-Encoding: 400, closed" \
    "$(raw_head 'PUT /files/cl HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n')" \
    "HTTP/1.1 400 Bad Request closed"
check_eq "gzip, chunked: 501, closed" \
    "$(raw_head 'PUT /files/gz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n')" \
    "HTTP/1.1 501 Not Implemented closed"
check_eq "HTTP/1.0 with Transfer-Encoding: 400, closed" \
    "$(raw_head 'PUT /files/h10 HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')" \
    "HTTP/1.1 400 Bad Request closed"
check_eq "a chunked account form: 411, closed" \
    "$(raw_head 'POST /users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')" \
    "HTTP/1.1 411 Length Required closed"
stop_s1 "server1"

log "temp space"
# (--min-rate-grace 60s: alice's body waits, paused by her client, for as long as bob's upload
# and the checks take, however busy the machine; the rate rule is tested below)
start_s1 s1b --max-upload 1M --upload-temp-max 1M --min-rate 64k --min-rate-grace 60s \
    --upload-timeout 10m
check_eq "create user bob" "$(code -d 'username=bob&password=hunter22' "$S1/users")" 201
head -c 655360 /dev/urandom >"$DATA/held"
{
    printf 'a0000\r\n'
    cat "$DATA/held"
    printf '\r\n0\r\n\r\n'
} >"$ITEST_DIR/held.body"
raw_put held --pause-at $((7 + 655360)) --go "$ITEST_DIR/go" <"$ITEST_DIR/held.body" \
    >"$ITEST_DIR/held.out" &
HELD_PID=$!
# shellcheck disable=SC2317  # called through wait_until
held_in() { # server1 holds a temp file with all 640 KiB of alice's body
    local f
    for f in /proc/"$S1_PID"/fd/*; do
        [[ $(stat -L -c %s "$f" 2>/dev/null) == 655360 ]] && return 0
    done
    return 1
}
check_ok "alice's chunked body holds 640 KiB of the 1 MiB of temp space" wait_until 20 held_in
check_eq "bob's chunked 1000 KiB meanwhile: 503 once it outgrows the rest" \
    "$(code -u bob:hunter22 -T - "$S1/files/bob" < <(head -c 1024000 /dev/urandom))" 503
touch "$ITEST_DIR/go"
wait "$HELD_PID" || true
check_eq "alice's, finished: 201" "$(cat "$ITEST_DIR/held.out")" "201 open"
check_get "  ... byte-exact" held "$DATA/held"
absent "  ... bob's not stored" bob
stop_s1 "server1 (temp space)"

log "the rate rule"
# (--upload-timeout 10m: a 408 within the test's life can only be the rate rule's)
start_s1 s1c --max-upload 1M --min-rate 64k --min-rate-grace 1s --min-rate-window 1s \
    --upload-timeout 10m
check_eq "a chunked body trickled one byte every 0.3 s: 408 (--min-rate after the grace)" \
    "$(printf '400\r\n%01024d\r\n0\r\n\r\n' 0 | raw_put slow --trickle 0.3)" "408 closed"
absent "  ... nothing stored" slow
stop_s1 "server1 (rate rule)"
itest_summary
