#!/usr/bin/env bash
# loadgen drives servers that are not this project's (about 10 s): a throw-away nginx (skipped
# when nginx is not installed) given a --requests file of several paths and methods, one
# missing (404) and one gzipped (a chunked response), checked against nginx's access log; a
# Python server (httprec.py) that records every request, given a URL argument, a POST with a
# --body-file, a Host header, credentials, and chunked and Connection: close responses; bad
# requests files refused with their line; and --watch-comm naming a process of the same comm
# that is not the target's.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init loadgen_any
itest_timeout 90
require_cmd python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
LG=$BIN_DIR/loadgen
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# csv_field FILE ROW COLUMN: the value of a column (by header name) in data row ROW (1-based).
csv_field() {
    python3 - "$@" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(rows[int(sys.argv[2]) - 1][sys.argv[3]])
PY
}

# ---- a recording server: the exact requests ------------------------------------------------
# run as "server1" (a symlink: comm is the name it was started by), for --watch-comm below
mkdir -p "$ITEST_DIR/bin" "$ITEST_DIR/other"
ln -s "$(command -v python3)" "$ITEST_DIR/bin/server1"
"$ITEST_DIR/bin/server1" "$HERE/httprec.py" "$ITEST_DIR/rec.port" "$ITEST_DIR/rec.jsonl" \
    >"$ITEST_DIR/rec.log" 2>&1 &
REC_PID=$!
itest_bg $REC_PID
wait_file "$ITEST_DIR/rec.port" 10 || itest_fail "httprec.py did not start"
REC=127.0.0.1:$(cat "$ITEST_DIR/rec.port")

printf 'name=lg&note=a b' >"$ITEST_DIR/form.txt"
"$LG" -u 1 --requests-per-user 3 --warmup 0 "http://$REC/up/load?x=1&y=2" \
    --body-file "$ITEST_DIR/form.txt" -H 'X-Test: t1' -H 'Host: example.test' \
    --username alice --password 'SECRET-pw-42' -o "$ITEST_DIR/post" \
    >"$ITEST_DIR/post.log" 2>&1 || itest_fail "POST run failed"
check_eq "POST: 3 successes, no errors" \
    "$(csv_field "$ITEST_DIR/post/points.csv" 1 ok)/$(csv_field "$ITEST_DIR/post/points.csv" 1 errors)" \
    "3/0"
# base64("alice:SECRET-pw-42")
auth="Basic $(printf 'alice:SECRET-pw-42' | base64)"
want=$(printf '["POST", "/up/load?x=1&y=2", "t1", "example.test", "%s", "name=lg&note=a b"]' \
    "$auth")
check_eq "POST: the server saw 3 exact requests (method, path, headers, body)" \
    "$(sort -u "$ITEST_DIR/rec.jsonl")|$(wc -l <"$ITEST_DIR/rec.jsonl")" "$want|3"
check_ok "POST: no header value, body or password in the reports or the log" \
    bash -c "! grep -rqE 'SECRET-pw|example.test|note=a' '$ITEST_DIR/post' '$ITEST_DIR/post.log'"
check_ok "POST: run.json says custom, 1 request, 2 headers" python3 -c "
import json, sys
c = json.load(open('$ITEST_DIR/post/run.json'))['config']
sys.exit(not (c['mix'] == 'custom' and c['weight_custom'] == 1 and c['custom']['requests'] == 1
              and c['custom']['method'] == 'POST' and c['custom']['headers'] == 2
              and c['custom']['body_bytes'] == 16))"

: >"$ITEST_DIR/rec.jsonl"
printf '/chunked/a\n/close/b\nDELETE /missing/c\n' >"$ITEST_DIR/reqs-rec.txt"
"$LG" -u 3 --requests-per-user 5 --warmup 0 --requests "$ITEST_DIR/reqs-rec.txt" \
    "http://$REC" -o "$ITEST_DIR/mixed" >"$ITEST_DIR/mixed.log" 2>&1 \
    || itest_fail "chunked/close run failed"
check_eq "chunked and Connection: close responses succeed, the 404s are counted by status" \
    "$(csv_field "$ITEST_DIR/mixed/points.csv" 1 ok)/$(csv_field "$ITEST_DIR/mixed/points.csv" 1 errors_by_kind)" \
    "10/404:5"
check_eq "the server saw 15 requests, 5 of each" \
    "$(python3 -c "
import collections, json
c = collections.Counter(tuple(json.loads(l)[:2]) for l in open('$ITEST_DIR/rec.jsonl'))
print(sorted(c.items()))")" \
    "[(('DELETE', '/missing/c'), 5), (('GET', '/chunked/a'), 5), (('GET', '/close/b'), 5)]"

# ---- bad input: one line naming the file and the line, exit 2 -------------------------------
printf '/ok\n# fine\nGET /a /b /c\n' >"$ITEST_DIR/bad.txt"
rc=0
err=$("$LG" --requests "$ITEST_DIR/bad.txt" "http://$REC" 2>&1 >/dev/null) || rc=$?
check_eq "bad requests file: exit 2, one line naming file:line" \
    "$rc:$(printf '%s\n' "$err" | wc -l):$([[ $err == *"bad.txt:3: more than 3 fields"* ]] && echo y)" \
    "2:1:y"
rc=0
err=$("$LG" --path /x --type get "http://$REC" 2>&1 >/dev/null) || rc=$?
check_eq "a custom request with --type: exit 2" "$rc" 2

# ---- --watch-comm on a shared machine ------------------------------------------------------
# a second "server1" that is not the target (sleep under that name), and two busy loops that
# are not watched: the warning names it, and the CPU is mostly used outside the stack
ln -s "$(command -v sleep)" "$ITEST_DIR/other/server1"
"$ITEST_DIR/other/server1" 120 &
OTHER=$!
itest_bg $OTHER
comm_is() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]; }
wait_until 10 comm_is "$OTHER" server1 || itest_fail "the second server1 did not start"
BUSY=()
for _ in 1 2; do
    python3 -c 'while True: pass' &
    BUSY+=($!)
    itest_bg $!
done
"$LG" -u 1 -d 1 --warmup 0.2 --think 20 --watch-comm server1 "http://$REC/" \
    -o "$ITEST_DIR/shared" >"$ITEST_DIR/shared.out" 2>"$ITEST_DIR/shared.log" \
    || itest_fail "--watch-comm run failed"
check_ok "--watch-comm warns about the other server1 (pid, user, comm, cmdline)" \
    grep -qE "watch-comm server1 matches a process that is not the target's \(it does not hold port [0-9]+'s listening socket\): pid $OTHER, user [a-z0-9_-]+, comm server1, cmdline '.*other/server1 120'" \
    "$ITEST_DIR/shared.log"
# (other server1s on this shared machine may be named too, but never the target)
check_ok "--watch-comm does not name the target" \
    bash -c "! grep -q 'not the target.*: pid $REC_PID,' '$ITEST_DIR/shared.log'"
check_ok "busy loops outside the stack: 'the stack is not the bottleneck'" \
    grep -q "WARNING: at N = 1 the stack is not the bottleneck" "$ITEST_DIR/shared.out"
check_ok "run.json: not_stack, outside CPU share over 0.5" python3 -c "
import json, sys
p = json.load(open('$ITEST_DIR/shared/run.json'))['points'][0]
sys.exit(not (p['not_stack'] is True and p['outside_cpu_share'] > 0.5
              and p['outside_cpu_cores'] > 0.5))"
kill "$OTHER" "${BUSY[@]}" 2>/dev/null || true

# ---- nginx: a requests file, checked against the access log --------------------------------
NGINX=$(command -v nginx || true)
[[ -x $NGINX ]] || NGINX=/usr/sbin/nginx
if [[ -x $NGINX ]]; then
    N=$ITEST_DIR/nginx
    mkdir -p "$N/www/b" "$N/www/gz" "$N/tmp"
    printf 'a\n' >"$N/www/a.txt"
    printf 'c\n' >"$N/www/b/c.txt"
    python3 -c "print('the same line of text, again and again\n' * 2000, end='')" \
        >"$N/www/gz/text.txt"
    chmod -R a+rX "$ITEST_DIR" # nginx workers run as another user when we are root
    PORT=$(free_port)
    cat >"$N/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $N/nginx.pid;
error_log $N/nginx.err warn;
events { worker_connections 256; }
http {
    log_format lg '\$request_method \$request_uri \$http_x_test \$status \$sent_http_transfer_encoding';
    access_log $N/access.log lg;
    client_body_temp_path $N/tmp/body;
    proxy_temp_path $N/tmp/proxy;
    fastcgi_temp_path $N/tmp/fastcgi;
    uwsgi_temp_path $N/tmp/uwsgi;
    scgi_temp_path $N/tmp/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $N/www;
        location /gz/ { gzip on; gzip_types text/plain; default_type text/plain; }
    }
}
CONF
    "$NGINX" -e "$N/nginx.err" -p "$N" -c "$N/nginx.conf" >"$ITEST_DIR/nginx.log" 2>&1 &
    itest_bg $!
    wait_port 127.0.0.1 "$PORT" 10 || itest_fail "nginx did not start"
    printf '# paths of the test\n/a.txt\nGET /b/c.txt\n/missing\nHEAD /a.txt\n/gz/text.txt\n' \
        >"$ITEST_DIR/reqs.txt"
    "$LG" -u 2 --requests-per-user 10 --warmup 0 --requests "$ITEST_DIR/reqs.txt" \
        -H 'X-Test: lg1' -H 'Accept-Encoding: gzip' --url "http://127.0.0.1:$PORT" \
        -o "$ITEST_DIR/nginx-out" >"$ITEST_DIR/nginx-run.log" 2>&1 || itest_fail "nginx run failed"
    check_eq "nginx: 16 successes, 404 x 4" \
        "$(csv_field "$ITEST_DIR/nginx-out/points.csv" 1 ok)/$(csv_field "$ITEST_DIR/nginx-out/points.csv" 1 errors_by_kind)" \
        "16/404:4"
    check_ok "nginx: the console lists the responses by status" \
        grep -q "N=2: responses by status: 200 x 16, 404 x 4" "$ITEST_DIR/nginx-run.log"
    check_ok "nginx: run.json has the successes by status" python3 -c "
import json, sys
p = json.load(open('$ITEST_DIR/nginx-out/run.json'))['points'][0]
sys.exit(not (p['all']['ok_by_status'] == {'200': 16}
              and p['all']['errors_by_kind'] == {'404': 4}
              and p['raw']['custom']['ok_by_status'] == {'200': 16}))"
    check_eq "nginx saw each request 4 times, the gzipped one chunked" \
        "$(sort "$N/access.log" | uniq -c | awk '{$1=$1; print}' | tr '\n' '|')" \
        "4 GET /a.txt lg1 200 -|4 GET /b/c.txt lg1 200 -|4 GET /gz/text.txt lg1 200 chunked|4 GET /missing lg1 404 -|4 HEAD /a.txt lg1 200 -|"
else
    echo "skip: nginx is not installed (apt-get install nginx-light to run its part)"
fi

itest_summary
