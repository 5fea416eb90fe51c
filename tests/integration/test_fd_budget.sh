#!/usr/bin/env bash
# server1's descriptor budget: each connection may need two descriptors (its socket and the file
# or upload it is working on), so under an open-file limit of 256 server1 lowers --max-conns 200
# to what the limit holds, and says so. 120 clients that start a GET of a large file and never
# read hold their descriptors; a new request then gets a clear answer (503 over --max-conns, or
# 200) at once instead of hanging in an accept that fails with EMFILE, and once the clients go,
# everything is served again. A limit too small for any work stops the start with one line.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_init fd_budget
itest_timeout 120
require_cmd curl python3 prlimit
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 33554432 /dev/zero >"$ROOT/big.bin"
echo hello >"$ROOT/small.txt"

# server1 under a given open-file limit (the wrapper execs, so the pid is server1's)
limited() {
    printf '#!/bin/sh\nexec prlimit --nofile=%s:%s %s "$@"\n' "$1" "$1" "$BIN_DIR/server1" \
        >"$ITEST_DIR/server1-nofile$1"
    chmod +x "$ITEST_DIR/server1-nofile$1"
    S1_BIN=$ITEST_DIR/server1-nofile$1
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }

start_fake 0

# a limit that holds no real work: one clear line, exit 1
limited 64
rc=0
link_secret
timeout 10 "$S1_BIN" --root "$ROOT" --port 0 --auth "127.0.0.1:$FAKE_PORT" --auth-secret-file "$LINK_SECRET" \
    >/dev/null 2>"$ITEST_DIR/tiny.err" || rc=$?
check_eq "open-file limit 64: exit 1" "$rc" 1
check_ok "  ... with one line saying so" grep -q '^server1: the open-file limit (64) is too low' \
    "$ITEST_DIR/tiny.err"
check_eq "  ... and nothing else" "$(wc -l <"$ITEST_DIR/tiny.err")" 1

limited 256
start_s1 s1 --read buffered --max-conns 200
check_ok "--max-conns lowered to what 256 descriptors hold, with a warning" \
    grep -q 'open-file limit (256) holds .* connections at 2 descriptors each: --max-conns lowered from 200' "$S1_LOG"
check_eq "a GET works" "$(code -u alice:secret "$S1/files/small.txt")" 200

# 120 clients each start a GET of 32 MiB and never read: each holds its socket and the file
python3 - "$S1_PORT" 120 >"$ITEST_DIR/holders.log" 2>&1 <<'EOF' &
import base64, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
auth = base64.b64encode(b"alice:secret").decode()
req = ("GET /files/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode()
socks = []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(req)
    except OSError as e:
        print("connect %d: %s" % (i, e))
    socks.append(s)
print("holding %d" % len(socks), flush=True)
time.sleep(20)
EOF
HOLDERS=$!
itest_bg "$HOLDERS"
wait_until 15 grep -q '^holding' "$ITEST_DIR/holders.log" || itest_not_ok "the holders did not start"
sleep 1
st=$(code -u alice:secret "$S1/files/small.txt")
if [[ $st == 503 || $st == 200 ]]; then itest_ok "a new request while they hold: answered ($st) at once"; else
    itest_not_ok "a new request while they hold: status '$st' (000 = no answer in 5 s)"; fi
check_eq "no accept ran out of descriptors" "$(grep -c 'Too many open files' "$S1_LOG" || true)" 0
kill "$HOLDERS" 2>/dev/null || true
wait "$HOLDERS" 2>/dev/null || true
ok=0
for _ in $(seq 1 50); do
    [[ $(code -u alice:secret "$S1/files/small.txt") == 200 ]] && { ok=1; break; }
    sleep 0.2
done
check_eq "once they are gone, GET is served again" "$ok" 1
stop_s1 "server1"
itest_summary
