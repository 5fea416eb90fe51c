#!/usr/bin/env bash
# server1's limits under pressure, against fake_server2.py, with loadgen as the other clients:
# - 10,000 idle connections (the open-file limit raised to the hard limit; server1 budgets two
#   descriptors per connection, so under a hard limit below about 20,500 the test holds what
#   fits, and says how many): server1 holds them all and keeps serving 4 other users with p99
#   under 10 ms; they are all released afterwards;
# - a client that pipelines 10,000 GETs of a 16 KiB file and reads nothing for 3 s: server1
#   stops reading it once its output is at the high-water mark (RSS grows by less than 16 MiB), 4 other users
#   keep p99 under 10 ms, and once the client reads it gets all 10,000 answers, in order.
# Each loadgen run's p99 is printed next to the one measured without the pressure; a window
# over 10 ms is measured again, 3 windows at most (a busy machine's noise only adds).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init pressure
itest_timeout 300
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
LG=$BIN_DIR/loadgen
HERE=$ITEST_ROOT/tests/integration

ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" || itest_fail "cannot raise the open-file limit to $(ulimit -Hn)"
IDLE=$((($(ulimit -n) - 400) / 2 - 100)) # what server1's descriptor budget fits, with room
((IDLE > 10000)) && IDLE=10000
((IDLE >= 1000)) || itest_fail "an open-file limit of $(ulimit -n) holds too few connections"

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/f1k"
head -c 16384 /dev/urandom >"$ROOT/f16k"
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$S1_PID/status"; }
# p99 NAME: 4 users GET f1k for 3 s; prints loadgen's p99 in ms (its output in NAME.lg).
p99() {
    "$LG" --url "$S1" --type get --file f1k --username alice --password secret --users 4 \
        --duration 3 --warmup 1 >"$ITEST_DIR/$1.lg" 2>&1 || true
    grep -o 'p99=[0-9.]*' "$ITEST_DIR/$1.lg" | head -1 | cut -d= -f2
}
under_10ms() { python3 -c "import sys; sys.exit(not (sys.argv[1] != '' and float(sys.argv[1]) < 10))" "$1"; }
# p99_try NAME: p99 NAME, again (NAME2, NAME3) while it is not under 10 ms, 3 windows at most;
# prints the last. Other work on a busy machine can only push a window's p99 up: server1
# keeping others waiting fails all three.
p99_try() {
    local v k
    for k in 1 2 3; do
        v=$(p99 "$1${k#1}")
        under_10ms "$v" && break
        log "$1: window $k: p99 $v ms"
    done
    echo "$v"
}

start_fake 0
# the idle connections send nothing: --header-timeout must outlast the test
# (an ASan build keeps freed memory in quarantine, which would count as growth below)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0"
# (the pipelining client stops reading for longer than --min-rate-grace: the rule that cuts such
# readers is test_slow_readers'; here the output high-water mark is what is tested)
start_s1 s1-pressure --max-conns $((IDLE + 500)) --header-timeout 120s --read buffered \
    --min-rate-window 0
base=$(p99_try base)
log "p99 with no pressure: $base ms"
check_ok "4 users without pressure: p99 $base ms < 10 ms" under_10ms "$base"

# ---- 10,000 idle connections ----------------------------------------------------------------
log "$IDLE idle connections"
python3 - "$S1_PORT" "$IDLE" "$ITEST_DIR/idle.go" >"$ITEST_DIR/idle.out" 2>&1 <<'EOF' &
import os, socket, sys, time
port, n, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    socks.append(s)
print("connected", len(socks), flush=True)
end = time.monotonic() + 120
while not os.path.exists(go) and time.monotonic() < end:
    time.sleep(0.1)
alive = 0
for s in socks:  # still open on the server side: nothing to read, no EOF
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print("alive", alive, flush=True)
EOF
IDLE_PID=$!
itest_bg "$IDLE_PID"
wait_until 90 grep -q '^connected' "$ITEST_DIR/idle.out" || itest_fail "the idle connections were not made: $(cat "$ITEST_DIR/idle.out")"
# (functions: wait_until must read the metric anew each time)
conns_at_least() { test "$(metric server1_connections)" -ge "$1"; }
conns_at_most() { test "$(metric server1_connections)" -le "$1"; }
wait_until 20 conns_at_least "$IDLE" || true
check_ok "server1 holds them all ($(metric server1_connections) connections)" test "$(metric server1_connections)" -ge "$IDLE"
busy=$(p99_try idle)
log "p99 with $IDLE idle connections: $busy ms (without: $base ms)"
check_ok "4 other users meanwhile: p99 $busy ms < 10 ms" under_10ms "$busy"
touch "$ITEST_DIR/idle.go"
wait "$IDLE_PID" || true
check_eq "all $IDLE still open when the test let go" "$(awk '$1=="alive"{print $2}' "$ITEST_DIR/idle.out")" "$IDLE"
wait_until 20 conns_at_most 5 || true
check_ok "all released afterwards ($(metric server1_connections) left)" test "$(metric server1_connections)" -le 5

# ---- a client that pipelines and does not read --------------------------------------------------
log "a client pipelining 10,000 requests without reading"
rss0=$(rss_kb)
before200=$(metric 'server1_requests_total{route="files",status="200"}')
python3 - "$S1_PORT" "$ITEST_DIR/pipe.go" >"$ITEST_DIR/pipe.out" 2>&1 <<'EOF' &
import base64, os, socket, sys, threading, time
port, go = int(sys.argv[1]), sys.argv[2]
n = 10000
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little for it
s.settimeout(30)
s.connect(("127.0.0.1", port))
auth = base64.b64encode(b"alice:secret")
# 10,000 x 16 KiB of answers: far more than the kernel's socket buffers hold
reqs = b"".join(b"GET /files/f16k?%d HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
                % (i, auth) for i in range(n))
t = threading.Thread(target=s.sendall, args=(reqs,), daemon=True)
t.start()
print("sending", len(reqs), flush=True)
end = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < end:
    time.sleep(0.1)
buf = b""
count = 0
in_order = True
t0 = time.monotonic()
while count < n and time.monotonic() - t0 < 30:
    d = s.recv(1 << 20)
    if not d:
        break
    buf += d
    while True:
        i = buf.find(b"\r\n\r\n")
        if i < 0:
            break
        head = buf[:i].decode("latin-1")
        clen = int([l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length")][0])
        if len(buf) < i + 4 + clen:
            break
        in_order &= head.startswith("HTTP/1.1 200") and clen == 16384
        buf = buf[i + 4 + clen:]
        count += 1
t.join(5)
print("answers", count, "in_order", in_order, flush=True)
EOF
PIPE_PID=$!
itest_bg "$PIPE_PID"
wait_until 10 grep -q '^sending' "$ITEST_DIR/pipe.out" || itest_fail "the pipelining client did not start"
answered() { echo $(($(metric 'server1_requests_total{route="files",status="200"}') - before200)); }
sleep 2
a1=$(answered)
sleep 1
a2=$(answered)
log "answered to the client that does not read: $a1 after 2 s, $a2 after 3 s"
check_ok "server1 stopped answering it ($a2 of 10000 answered)" test "$a2" -lt 10000
check_eq "  ... and stays stopped" "$a2" "$a1"
busy=$(p99_try pipe)
grown=$(($(rss_kb) - rss0))
log "p99 beside the pipelining client: $busy ms (without: $base ms); server1 RSS grew by $grown kB"
check_ok "4 other users meanwhile: p99 $busy ms < 10 ms" under_10ms "$busy"
check_ok "server1 RSS grew by less than 16 MiB ($grown kB)" test "$grown" -lt 16384
touch "$ITEST_DIR/pipe.go"
wait "$PIPE_PID" || true
check_eq "once it reads, all 10,000 answers, in order" "$(awk '$1=="answers"{print $2, $4}' "$ITEST_DIR/pipe.out")" "10000 True"
stop_s1 "pressure server1" 30

itest_summary
