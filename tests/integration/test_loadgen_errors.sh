#!/usr/bin/env bash
# loadgen's errors by kind and its console (about 10 s), against a throw-away Python server on
# a free loopback port whose files answer 200, 404, 503 or never: the errors by status and
# the timeouts on the console after the point, in points.csv (errors_by_kind, the last column)
# and in run.json, each equal to its class's count; a single N prints no N*, knee or model; no
# -o says nothing was written; the progress line drawn on a terminal (under script(1)), about
# once a second and erased before the point's result, and never when stderr is a file.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init loadgen_errors
itest_timeout 60
require_cmd python3
require_cmd script
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
LG=$BIN_DIR/loadgen
OUT=$ITEST_DIR/out

# ---- the server: /files/ok 200, /files/gone 404, /files/busy 503, /files/slow no answer ------
PORT=$(free_port)
cat >"$ITEST_DIR/server.py" <<'EOF'
import http.server, sys, time

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as loadgen's users expect

    def do_GET(self):
        status = {"/files/ok": 200, "/files/gone": 404, "/files/busy": 503}.get(self.path)
        if status is None:
            time.sleep(30)  # /files/slow: past loadgen's --timeout
            return
        body = b"hello\n"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

s = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
s.daemon_threads = True
s.serve_forever()
EOF
python3 "$ITEST_DIR/server.py" "$PORT" >"$ITEST_DIR/server.log" 2>&1 &
itest_bg $!
wait_port 127.0.0.1 "$PORT" 10 || itest_fail "the Python server did not start"
URL=http://127.0.0.1:$PORT

# csv_field FILE COLUMN: the value of a column (by header name) in the first data row.
csv_field() {
    python3 - "$@" <<'EOF'
import csv, sys
print(next(csv.DictReader(open(sys.argv[1])))[sys.argv[2]])
EOF
}

# ---- errors by kind: one user on each file; stderr to a file ----------------------------------
"$LG" --url "$URL" --file ok,gone,busy,slow -u 4 -d 1 --warmup 0.3 --window-max 0 \
    --timeout 300ms -o "$OUT/a" >"$ITEST_DIR/a.out" 2>"$ITEST_DIR/a.err" ||
    itest_fail "loadgen failed: $(tail -n 3 "$ITEST_DIR/a.err")"
csv=$OUT/a/points.csv
n404=$(csv_field "$csv" err_status_4xx)
n503=$(csv_field "$csv" err_status_5xx)
nto=$(csv_field "$csv" err_timeout)
check_ok "404s, 503s and timeouts counted ($n404, $n503, $nto)" \
    test "$n404" -gt 0 -a "$n503" -gt 0 -a "$nto" -gt 0
kinds=$(csv_field "$csv" errors_by_kind)
# every kind is counted: a connect refused while the server is busy is one too, so the sum
check_eq "points.csv: errors_by_kind, each kind its class's count ($kinds)" "$(python3 -c "
import sys
d = {k: int(v) for k, v in (e.split(':') for e in sys.argv[1].split(';'))}
print(d.get('404'), d.get('503'), d.get('timeout'), sum(d.values()))" "$kinds")" \
    "$n404 $n503 $nto $(csv_field "$csv" errors)"
check_eq "points.csv: errors_by_kind is the last column" \
    "$(head -n1 "$csv" | awk -F, '{ print $NF }')" errors_by_kind
check_eq "run.json: errors_by_kind" "$(python3 -c "import json, sys
p = json.load(open(sys.argv[1]))['points'][0]
print(';'.join('%s:%d' % kv for kv in p['all']['errors_by_kind'].items()))" \
    "$OUT/a/run.json")" "$kinds"
console=$(sed 's/:/ x /g; s/;/, /g' <<<"$kinds")
check_ok "console: 'N=4: errors: $console'" grep -qF "N=4: errors: $console" "$ITEST_DIR/a.err"
check_ok "stdout: the errors by kind in the point's warning" \
    grep -qF "requests failed: errors: $console" "$ITEST_DIR/a.out"
check_eq "one N: no N*, knee or model on stdout" \
    "$(grep -cE 'N\*|knee|^model' "$ITEST_DIR/a.out")" 0
check_ok "stdout: the files written named" grep -qF "results: $OUT/a/" "$ITEST_DIR/a.out"
check_eq "stderr a file: no progress line (no carriage return)" \
    "$(tr -cd '\r' <"$ITEST_DIR/a.err" | wc -c)" 0

# ---- on a terminal, without -o ------------------------------------------------------------
# script(1) gives loadgen a pty; its transcript is stdout and stderr as the terminal saw them
# shellcheck disable=SC2016 # expanded by the inner shell
LG="$LG" URL="$URL" script -q -e -c '"$LG" --url "$URL" --file ok -u 2 -d 2 --warmup 0 \
    --window-max 0' /dev/null </dev/null >"$ITEST_DIR/tty.out" 2>&1 ||
    itest_fail "loadgen under script failed: $(tail -n 3 "$ITEST_DIR/tty.out")"
draws=$(grep -o $'\r  N=2  [0-9.]*/[0-9.]* s  [0-9]* requests  [0-9]* req/s  [0-9]* errors' \
    "$ITEST_DIR/tty.out" | wc -l)
check_ok "terminal: progress drawn with elapsed, requests, rate, errors ($draws times)" \
    test "$draws" -ge 1
# drawn about once a second: in a 2 s window (and the start), at most 4 times (every 250 ms
# would be 8)
check_ok "terminal: progress redrawn about once a second, not more ($draws)" test "$draws" -le 4
check_ok "terminal: progress erased before the point's result" \
    grep -qaE $'\r\e\\[K[^\r]*N=2: X=' "$ITEST_DIR/tty.out"
check_ok "no -o: says nothing was written" grep -qF "WARNING: no -o DIR: nothing was written" \
    "$ITEST_DIR/tty.out"
check_eq "no -o: no file named as written" "$(grep -c 'results: ' "$ITEST_DIR/tty.out")" 0

itest_summary
