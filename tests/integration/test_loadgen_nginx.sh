#!/usr/bin/env bash
# loadgen against a throw-away nginx on a free loopback port (skipped when nginx is not
# installed; installs nothing; about 15 s): closed loop in both models, a sweep, the open loop,
# large bodies and --expect-length, errors by class and kind (refused, wrong length),
# Connection-close reconnects, flag errors, the reports and their contents, the password kept
# out of every output, and SIGINT keeping a partial report.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NGINX=$(command -v nginx || true)
[[ -x $NGINX ]] || NGINX=/usr/sbin/nginx
if [[ ! -x $NGINX ]]; then
    echo "skip: nginx is not installed (apt-get install nginx-light to run this test)"
    echo "0 passed, 0 failed"
    exit 0
fi
itest_init loadgen_nginx
itest_timeout 60
require_cmd python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
LG=$BIN_DIR/loadgen
OUT=$ITEST_DIR/out

# ---- nginx ----------------------------------------------------------------------------------
mkdir -p "$ITEST_DIR/www/files" "$ITEST_DIR/tmp"
head -c 1024 /dev/urandom >"$ITEST_DIR/www/files/1k"
head -c 1048576 /dev/urandom >"$ITEST_DIR/www/files/1m"
chmod -R a+rX "$ITEST_DIR" # nginx workers run as another user when we are root
PORT=$(free_port)
CLOSE_PORT=$(free_port)
while [[ $CLOSE_PORT == "$PORT" ]]; do CLOSE_PORT=$(free_port); done
nginx_conf "$ITEST_DIR" "listen 127.0.0.1:$PORT;" \
    "listen 127.0.0.1:$CLOSE_PORT; keepalive_timeout 0;"
"$NGINX" -e "$ITEST_DIR/nginx.err" -p "$ITEST_DIR" -c "$ITEST_DIR/nginx.conf" \
    >"$ITEST_DIR/nginx.log" 2>&1 &
itest_bg $!
wait_port 127.0.0.1 "$PORT" 10 || itest_fail "nginx did not start"
URL=http://127.0.0.1:$PORT

# csv_field FILE ROW COLUMN: the value of a column (by header name) in data row ROW (1-based).
csv_field() {
    python3 - "$@" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(rows[int(sys.argv[2]) - 1][sys.argv[3]])
EOF
}

# ---- flags ----------------------------------------------------------------------------------
rc=0
err=$("$LG" --users 0 2>&1 >/dev/null) || rc=$?
check_eq "bad flag: exit 2" "$rc" 2
check_eq "bad flag: one line 'loadgen: ...'" "$(printf '%s\n' "$err" | wc -l):${err:0:9}" "1:loadgen: "
rc=0
err=$("$LG" --url http://192.0.2.1:80 --file 1k 2>&1 >/dev/null) || rc=$?
check_eq "non-loopback host refused" "$rc:$([[ $err == *"not a loopback"* ]] && echo y)" "2:y"
rc=0
err=$("$LG" --url "$URL" --file 1k --sweep 1,4 --sweep-step 4 2>&1 >/dev/null) || rc=$?
check_eq "--sweep-step without --sweep auto: exit 2, one line" \
    "$rc:$(printf '%s\n' "$err" | wc -l):$([[ $err == *"need --sweep auto"* ]] && echo y)" "2:1:y"
rc=0
"$LG" --url "$URL" --file 1k --sweep auto --sweep-step 1 >/dev/null 2>&1 || rc=$?
check_eq "--sweep-step 1: exit 2" "$rc" 2
check_ok "--help lists --sweep and N*" bash -c "'$LG' --help | grep -q -- '--sweep' && '$LG' --help | grep -q 'N\\*'"

# ---- closed loop, events model, reports -----------------------------------------------------
"$LG" --url "$URL" --file 1k --expect-length 1k -u 8 -d 2 --warmup 0.5 --watch-comm nginx \
    --password 'SECRET-pw-42' -o "$OUT/closed" >"$ITEST_DIR/closed.log" 2>&1 \
    || itest_fail "closed-loop run failed"
check_ok "reports written" test -s "$OUT/closed/points.csv" -a -s "$OUT/closed/run.json" \
    -a -s "$OUT/closed/summary.md"
ok=$(csv_field "$OUT/closed/points.csv" 1 ok)
check_ok "closed loop: requests succeeded ($ok)" test "$ok" -gt 100
check_eq "closed loop: no errors" "$(csv_field "$OUT/closed/points.csv" 1 errors)" 0
little=$(csv_field "$OUT/closed/points.csv" 1 little_rel_diff)
check_ok "Little's law holds within 5% ($little)" \
    python3 -c "import sys; sys.exit(abs(float('$little')) > 0.05)"
check_ok "nginx is sampled" grep -q '"name": "nginx"' "$OUT/closed/run.json"
check_ok "run.json parses, has machine and summary" python3 -c "
import json, sys
d = json.load(open('$OUT/closed/run.json'))
sys.exit(not (d['machine']['ncpu'] >= 1 and d['summary']['nstar'] == 8 and len(d['points']) == 1))"
check_ok "summary.md has the table" grep -q '^| 8 | ' "$OUT/closed/summary.md"
check_eq "summary.md of one N: no N*, knee or model" \
    "$(grep -cE '^- .*(N\\\*|knee|model)|\(N\\\*\)' "$OUT/closed/summary.md")" 0
check_eq "password in no output" \
    "$(grep -rl 'SECRET-pw-42' "$OUT/closed" "$ITEST_DIR/closed.log" | wc -l)" 0

# ---- threads model, sweep -------------------------------------------------------------------
"$LG" --url "$URL" --file 1k --model threads --sweep 1,3 -d 1 --warmup 0.2 -o "$OUT/threads" \
    >"$ITEST_DIR/threads.log" 2>&1 || itest_fail "threads-model sweep failed"
check_eq "threads sweep: 2 points" "$(($(wc -l <"$OUT/threads/points.csv") - 1))" 2
check_eq "threads sweep: one thread per user" "$(csv_field "$OUT/threads/points.csv" 2 threads)" 3
check_eq "threads sweep: D = R(1)" "$(csv_field "$OUT/threads/points.csv" 2 d_source)" "R(1)"
# N* at the largest N measured (3) says the knee may lie beyond; N* = 1 does not
nstar=$(python3 -c "import json; print(json.load(open('$OUT/threads/run.json'))['summary']['nstar'])")
said=$(grep -c 'N\\\* is the largest N measured' "$OUT/threads/summary.md" || true)
check_eq "threads sweep: 'N* is the largest N measured' said exactly when N* = 3 (N* = $nstar)" \
    "$said" "$([[ $nstar == 3 ]] && echo 1 || echo 0)"

# ---- auto sweep, step 4, one stall, no bisection: N = 1, 4, 16, ... until X stops growing ---
"$LG" --url "$URL" --file 1k --sweep auto --sweep-step 4 --sweep-stalls 1 --sweep-refine 0 \
    --max-users 64 -d 0.5 --warmup 0.1 -o "$OUT/auto4" >"$ITEST_DIR/auto4.log" 2>&1 ||
    itest_fail "auto sweep (step 4) failed"
ns=$(python3 -c "
import csv
print(' '.join(r['users'] for r in csv.DictReader(open('$OUT/auto4/points.csv')) if r['type'] == 'all'))")
check_ok "auto sweep step 4: N in 1 4 16 64, in order, stopping one step after X stops ($ns)" \
    python3 -c "
import csv, sys
rows = [r for r in csv.DictReader(open('$OUT/auto4/points.csv')) if r['type'] == 'all']
ns = [int(r['users']) for r in rows]; xs = [float(r['x_rps']) for r in rows]
ok = ns == [1, 4, 16, 64][:len(ns)] and len(ns) >= 2
best = xs[0]
for i in range(1, len(ns)):
    grew = xs[i] > 1.05 * best
    best = max(best, xs[i])
    # every step but the last grew; the last did not, or hit --max-users
    ok = ok and (grew if i < len(ns) - 1 else (not grew or ns[i] == 64))
sys.exit(not ok)"

# ---- open loop ------------------------------------------------------------------------------
"$LG" --url "$URL" --file 1k --rate 2000 --arrivals poisson -u 8 -d 2 --warmup 0.3 \
    -o "$OUT/open" >"$ITEST_DIR/open.log" 2>&1 || itest_fail "open-loop run failed"
x=$(csv_field "$OUT/open/points.csv" 1 x_rps)
check_ok "open loop: X near the rate ($x)" python3 -c "import sys; sys.exit(abs($x - 2000) > 200)"

# ---- large bodies, length checks, reconnects, errors ----------------------------------------
"$LG" --url "$URL" --file 1m --expect-length 1M -u 2 --requests-per-user 20 --warmup 0 \
    -o "$OUT/big" >"$ITEST_DIR/big.log" 2>&1 || itest_fail "1 MB run failed"
check_eq "1 MB bodies: 40 ok" "$(csv_field "$OUT/big/points.csv" 1 ok)" 40
"$LG" --url "$URL" --file 1k --expect-length 1000 -u 1 --requests-per-user 5 --warmup 0 \
    -o "$OUT/badlen" >"$ITEST_DIR/badlen.log" 2>&1 || itest_fail "wrong-length run failed"
check_eq "wrong length counted invalid" "$(csv_field "$OUT/badlen/points.csv" 1 err_invalid)" 5
check_eq "wrong length: kind length" "$(csv_field "$OUT/badlen/points.csv" 1 errors_by_kind)" \
    "length:5"
"$LG" --url "http://127.0.0.1:$CLOSE_PORT" --file 1k -u 2 --requests-per-user 50 --warmup 0 \
    -o "$OUT/close" >"$ITEST_DIR/close.log" 2>&1 || itest_fail "Connection: close run failed"
check_eq "Connection: close: reconnect, no errors" \
    "$(csv_field "$OUT/close/points.csv" 1 ok)/$(csv_field "$OUT/close/points.csv" 1 errors)" "100/0"
DEAD=$(free_port)
"$LG" --url "http://127.0.0.1:$DEAD" --file 1k -u 2 -d 0.5 --warmup 0 -o "$OUT/refused" \
    >"$ITEST_DIR/refused.log" 2>&1 || itest_fail "refused run failed"
check_ok "refused connections counted as connect errors" \
    test "$(csv_field "$OUT/refused/points.csv" 1 err_connect)" -gt 0
check_eq "refused: no throughput" "$(csv_field "$OUT/refused/points.csv" 1 ok)" 0
check_eq "refused: errors_by_kind says refused, as many as connect errors" \
    "$(csv_field "$OUT/refused/points.csv" 1 errors_by_kind)" \
    "refused:$(csv_field "$OUT/refused/points.csv" 1 err_connect)"

# ---- SIGINT keeps a partial report ----------------------------------------------------------
"$LG" --url "$URL" --file 1k -u 2 -d 20 --warmup 0 -o "$OUT/int" >"$ITEST_DIR/int.log" 2>&1 &
lgpid=$!
itest_bg "$lgpid"
wait_until 10 grep -q 'url=' "$ITEST_DIR/int.log" || itest_fail "loadgen did not start"
kill -INT "$lgpid"
rc=0
wait "$lgpid" || rc=$?
check_eq "SIGINT: exit 130" "$rc" 130
check_ok "SIGINT: partial report written" grep -q '"interrupted": true' "$OUT/int/run.json"

itest_summary
