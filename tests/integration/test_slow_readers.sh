#!/usr/bin/env bash
# Responses to clients that read slowly or never, against fake_server2.py:
# - --read direct sends big files in bounded chunks: byte-exact at sizes around the chunk
#   (0, 1, 256 KiB - 1, 256 KiB, 256 KiB + 1, 3 MiB + 3, 50 MiB), two pipelined big GETs on
#   one connection each get their own bytes, HEAD has the size and no body;
# - 10 clients that ask for the 50 MiB file and never read: server1's RSS grows by a few MiB
#   (it held the whole file per response before), server1_response_buffer_bytes <= 10 chunks;
# - --response-memory 1M: with 4 chunks held by readers that stall, the next direct GET gets
#   503 + Retry-After (counted), and a GET succeeds again once they are gone;
# - --send-timeout 2s (with --min-rate high enough to add nothing): a reader that takes a bit
#   every 0.3 s (never stalled for --idle-timeout) is reset at about 2 s, short of the body,
#   in --read direct and --read buffered (sendfile) alike; counted in
#   server1_sends_timed_out_total;
# - --min-rate over --min-rate-window: a reader that takes about 60 KiB/s of a 50 MiB file is
#   reset within the grace + a window (and a step) once the socket buffers' first burst has slid
#   out of the window, in both modes, and its response buffer is given back.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init slow-readers
itest_timeout 240
require_cmd curl python3 cmp
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
K=262144 # RESPBUF_CHUNK
for n in 0 1 $((K - 1)) $K $((K + 1)) $((3 * 1048576 + 3)); do
    head -c "$n" /dev/urandom >"$ROOT/f$n"
done
head -c $((50 * 1048576)) /dev/urandom >"$ROOT/big"
ALICE=alice:secret
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$S1_PID/status"; }

# stallers N NAME SECONDS: N connections that each GET /files/NAME with a tiny receive buffer
# and read nothing for SECONDS, in the background (their pid in STALL_PID); "connected N" is in
# $ITEST_DIR/stall.out once all have sent their request.
stallers() {
    PYTHONPATH=$HERE python3 - "$S1_PORT" "$1" "$2" "$3" >"$ITEST_DIR/stall.out" 2>&1 <<'EOF' &
import base64, itls, sys, time
port, n, name, secs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
auth = base64.b64encode(b"alice:secret").decode()
socks = []
for _ in range(n):
    s = itls.connect(port, rcvbuf=4096, nodelay=False)
    s.sendall(("GET /files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
               % (name, auth)).encode())
    socks.append(s)
print("connected", n, flush=True)
time.sleep(secs)
EOF
    STALL_PID=$!
    itest_bg "$STALL_PID"
    wait_until 10 grep -q "^connected" "$ITEST_DIR/stall.out" || itest_fail "stallers did not connect"
}

start_fake 0

# ---- byte-exact chunked direct reads ----------------------------------------------------------
log "--read direct: big files in chunks, byte-exact"
start_s1 s1-direct --read direct
for f in "$ROOT"/f* "$ROOT/big"; do
    name=$(basename "$f")
    rm -f "$ITEST_DIR/got"
    st=$(curl -s -o "$ITEST_DIR/got" -w '%{http_code}' --max-time 60 -u "$ALICE" "$S1/files/$name" || true)
    if [[ $st == 200 ]] && cmp -s "$ITEST_DIR/got" "$f"; then
        itest_ok "GET $name ($(stat -c %s "$f") bytes): byte-exact"
    else
        itest_not_ok "GET $name: status $st, $(stat -c %s "$ITEST_DIR/got" 2>/dev/null || echo no) bytes"
    fi
done
len=$(curl -s -I --max-time 10 -u "$ALICE" "$S1/files/big" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-length"{print $2}')
check_eq "HEAD big: Content-Length" "$len" $((50 * 1048576))
out=$(PYTHONPATH=$HERE python3 - "$S1_PORT" "$ROOT" <<'EOF'
import base64, itls, sys
port, root = int(sys.argv[1]), sys.argv[2]
auth = base64.b64encode(b"alice:secret").decode()
s = itls.connect(port, timeout=60, nodelay=False)
req = "GET /files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + auth + "\r\n\r\n"
s.sendall(((req % "f3145731") + (req % "f262145")).encode())
buf = b""
for name in ("f3145731", "f262145"):
    while b"\r\n\r\n" not in buf:
        buf += s.recv(1 << 20)
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(buf) < n:
        buf += s.recv(1 << 20)
    body, buf = buf[:n], buf[n:]
    want = open(root + "/" + name, "rb").read()
    print(name, "same" if body == want else "DIFFERENT")
EOF
)
check_eq "two pipelined big GETs on one connection" "$(tr '\n' ' ' <<<"$out")" "f3145731 same f262145 same "

log "10 readers that never read the 50 MiB file"
before=$(rss_kb)
stallers 10 big 4
sleep 1.5
grown=$(($(rss_kb) - before))
held=$(metric server1_response_buffer_bytes)
log "RSS grew by $grown kB; response buffers hold $held bytes"
check_ok "RSS grew by less than 20 MiB ($grown kB)" test "$grown" -lt 20480
check_ok "response buffers: at most 10 chunks ($held bytes)" test "$held" -le $((10 * K))
check_eq "a GET of it meanwhile is served" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -u "$ALICE" "$S1/files/f3145731")" 200
kill "$STALL_PID" 2>/dev/null || true
wait "$STALL_PID" 2>/dev/null || true
buffers_free() { test "$(metric server1_response_buffer_bytes)" = 0; } # read anew each time
wait_until 10 buffers_free ||
    itest_not_ok "response buffers not given back: $(metric server1_response_buffer_bytes)"
check_eq "all response buffers given back" "$(metric server1_response_buffer_bytes)" 0
stop_s1 "direct server1"

# ---- --response-memory --------------------------------------------------------------------
log "--response-memory 1M (4 chunks) per worker, one worker"
start_s1 s1-respmem --read direct --threads 1 --response-memory 1M
stallers 4 big 30
sleep 0.5
hdr=$(curl -s -D - -o /dev/null --max-time 10 -u "$ALICE" "$S1/files/f3145731" | tr -d '\r')
check_eq "a fifth big GET: 503" "$(awk 'NR==1{print $2}' <<<"$hdr")" 503
check_eq "  ... with Retry-After: 1" "$(awk -F': ' 'tolower($1)=="retry-after"{print $2}' <<<"$hdr")" 1
check_eq "  ... counted" "$(metric server1_responses_busy_total)" 1
check_eq "  ... HEAD needs no buffer: 200" "$(curl -s -o /dev/null -I -w '%{http_code}' --max-time 10 -u "$ALICE" "$S1/files/big")" 200
kill "$STALL_PID" 2>/dev/null || true
wait "$STALL_PID" 2>/dev/null || true
wait_until 10 buffers_free || true
check_eq "once they are gone, a big GET: 200" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -u "$ALICE" "$S1/files/f3145731")" 200
stop_s1 "response-memory server1"

# ---- --send-timeout ---------------------------------------------------------------------------
# sip PORT SECONDS PAUSE: GETs /files/big with a 4 KiB receive buffer and reads 16 KiB every
# PAUSE seconds for at most SECONDS; prints the seconds until the server closed or reset, and
# the bytes taken.
sip() {
    PYTHONPATH=$HERE python3 - "$@" <<'EOF'
import base64, itls, sys, time
port, limit, pause = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
auth = base64.b64encode(b"alice:secret").decode()
s = itls.connect(port, timeout=None, rcvbuf=4096, nodelay=False)
t0 = time.monotonic()
s.sendall(("GET /files/big HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode())
got = 0
while time.monotonic() - t0 < limit:
    try:
        d = s.recv(16384)
    except OSError:  # reset (over TLS also: a record cut short)
        break
    if not d:
        break
    got += len(d)
    time.sleep(pause)
print("%.2f %d" % (time.monotonic() - t0, got))
EOF
}

for mode in direct buffered; do
    log "--send-timeout 2s, --read $mode: a reader that sips"
    start_s1 "s1-send-$mode" --read "$mode" --send-timeout 2s --min-rate 1G
    out=$(sip "$S1_PORT" 20 0.3)
    read -r secs got <<<"$out"
    log "closed after $secs s with $got bytes"
    check_ok "--read $mode: closed at the deadline ($secs s)" python3 -c "import sys; sys.exit(not 1.5 <= $secs <= 5)"
    check_ok "  ... short of the 50 MiB ($got bytes)" test "$got" -lt $((50 * 1048576))
    check_eq "  ... counted" "$(metric server1_sends_timed_out_total)" 1
    check_eq "  ... a reader that keeps up gets all of it" \
        "$(curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 60 -u "$ALICE" "$S1/files/big")" "200 $((50 * 1048576))"
    stop_s1 "send-timeout server1 ($mode)"
done

# ---- the rate rule on responses ---------------------------------------------------------------
# A reader with a small receive buffer that takes what it holds every 0.1 s (about 60 KiB/s:
# never a stall of --idle-timeout, and far inside --send-timeout 60s + 50 MiB / --min-rate =
# 260 s) is below --min-rate 256k. The kernel's socket buffers take a few MiB at the start (on
# loopback: 2 MiB at once, 0.9 MiB more at the first judgement), which count as moved; once
# they have slid out of the window the reader is reset: within the grace, a window and two
# steps (a quarter window each: the last fill at the first judgement, and the judgement's own
# step) of its request, plus the reader's 0.1 s between reads.
GRACE=1 WINDOW=2
for mode in direct buffered; do
    log "--min-rate 256k --min-rate-grace ${GRACE}s --min-rate-window ${WINDOW}s, --read $mode: a reader that sips"
    start_s1 "s1-rate-$mode" --read "$mode" --min-rate 256k --min-rate-grace "${GRACE}s" \
        --min-rate-window "${WINDOW}s"
    out=$(sip "$S1_PORT" 30 0.1)
    read -r secs got <<<"$out"
    log "reset after $secs s with $got bytes"
    check_ok "--read $mode: reset after the grace, within grace + window + 2 steps ($secs s)" \
        python3 -c "import sys; sys.exit(not $GRACE <= $secs <= $GRACE + $WINDOW * 1.5 + 0.1)"
    check_ok "  ... short of the 50 MiB ($got bytes)" test "$got" -lt $((50 * 1048576))
    check_eq "  ... counted" "$(metric server1_sends_timed_out_total)" 1
    check_eq "  ... its buffer given back" "$(metric server1_response_buffer_bytes)" 0
    check_eq "  ... a reader that keeps up gets all of it" \
        "$(curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 60 -u "$ALICE" "$S1/files/big")" "200 $((50 * 1048576))"
    stop_s1 "rate server1 ($mode)"
done

itest_summary
