#!/usr/bin/env bash
# server1's access log (--access-log, --access-log-format) against a real server2 on Redis:
# one line per response with the status and the body bytes the client received (GET 200, a
# Range 206, 404, 401, a PUT, a HEAD, sign-ups, a password change, a deletion), the verified
# user or "-", the client's address in full (::1 over IPv6; behind a --trusted-proxy, the client
# its PROXY header names), X-Request-Id echoing the line's id, audit events (login_failed with
# the name as given, signup, password_changed, account_deleted), and no password anywhere in
# the file, not even one sent in a malformed Authorization header. The three formats parse
# (JSON with python's json). Three pipelined requests get three lines. A client that drops
# mid-download logs the bytes sent so far (fewer than the file's); one gone before its answer
# (server2 stopped meanwhile) logs 499. logrotate's way: mv, then
# SIGUSR1 while 400 requests run in parallel: a new file appears, and the two files together
# hold every request exactly once. Lines buffered at SIGTERM are written before exit. A file
# that cannot be opened stops the start (exit 2); a write that fails (/dev/full) is counted in
# /metrics and logged once, and serving goes on.
# itest-https: no (the log's fields do not depend on the transport; this test reads them over plain HTTP)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init access_log
itest_timeout 240
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"

PASS=pw-horse-$$-secret # must never appear in the access log
NEWPASS=pw-battery-$$-secret
BADPASS=pw-wrong-$$-secret
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
head -c 1024 /dev/urandom >"$ROOT/f1k"
head -c $((32 << 20)) /dev/urandom >"$ROOT/big"
head -c 300 /dev/urandom >"$ITEST_DIR/up.bin"
SECRET=$ITEST_DIR/link.secret
(umask 077 && head -c 32 /dev/urandom >"$SECRET")
ALOG=$ITEST_DIR/access.log
CHECK=$ITEST_DIR/check.py

redis_port=$(itest_redis_start)
itest_start server2 server2 --port 0 --backend "redis://127.0.0.1:$redis_port" \
    --backend-password-file "$ITEST_DIR/redis/password" --workers 2 --hash-cost min \
    --login-fail-limit 0 --secret-file "$SECRET" || itest_fail "server2 did not start"
S2_PORT=$ITEST_PORT
S2_PID=$ITEST_PID_LAST

# s1 NAME FLAGS...: a server1 on every address (IPv4 and IPv6) of a free port; sets URL, URL6,
# PORT, PID and METRICS (its metrics listener's /metrics URL).
s1() {
    local name=$1
    shift
    itest_start "$name" server1 --listen :: --port 0 --threads 2 --root "$ROOT" \
        --auth "127.0.0.1:$S2_PORT" --auth-secret-file "$SECRET" "${S1_NO_CLIENT_LIMITS[@]}" \
        "$@" || itest_fail "$name: server1 did not start"
    PORT=$ITEST_PORT
    URL=http://127.0.0.1:$PORT
    URL6="http://[::1]:$PORT"
    PID=$ITEST_PID_LAST
    METRICS=$ITEST_METRICS_URL
}
stop_pid() {
    local rc=0
    kill -TERM "$2"
    wait "$2" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
}
metric() { curl -s --max-time 5 "$METRICS" | awk -v m="$1" '$1 == m { print $2 }'; }
errors_at_least() { test "$(metric server1_access_log_write_errors_total)" -ge "$1"; }
# req TAG CURL_ARGS...: one request; appends "TAG STATUS BYTES_RECEIVED REQUEST_ID" to
# $ITEST_DIR/expect (what the log must say of the line whose target carries tag=TAG)
req() {
    local tag=$1
    shift
    curl -s -o /dev/null -D "$ITEST_DIR/h.$tag" --max-time 20 \
        -w "$tag %{http_code} %{size_download}" "$@" >>"$ITEST_DIR/expect"
    printf ' %s\n' "$(tr -d '\r' <"$ITEST_DIR/h.$tag" | sed -n 's/^X-Request-Id: //p')" \
        >>"$ITEST_DIR/expect"
}
lines_in() { cat "$@" 2>/dev/null | wc -l; }
# has MIN PATTERN FILE...: true when at least MIN lines of FILE... match PATTERN (for wait_until)
has() { test "$(cat "${@:3}" 2>/dev/null | grep -c -- "$2")" -ge "$1"; }

cat >"$CHECK" <<'EOF'
"""check.py FORMAT LOG [EXPECT]: parses every line of LOG in FORMAT (common, combined, json);
prints one line per finding, "ok ..." or "bad ...". With EXPECT (lines "TAG STATUS BYTES ID"),
the request line whose target has tag=TAG must say that status, bytes and id."""
import json
import re
import sys

fmt, path = sys.argv[1], sys.argv[2]
clf = (r'^(?P<addr>\S+) - (?P<user>\S+) \[(?P<time>\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] '
       r'"(?P<req>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+)')
if fmt == "combined":
    clf += r' "(?P<referer>[^"]*)" "(?P<ua>[^"]*)"'
clf += r' (?P<ms>\d+\.\d{3}) (?P<id>[0-9a-f]{8}-\d+-\d+)$'
audit = (r'^(?P<addr>\S+) - (?P<user>\S+) \[[^]]+\] "AUDIT (?P<event>\w+)" (?P<detail>\S+) '
         r'(?P<id>[0-9a-f]{8}-\d+-\d+)$')
recs = []
bad = 0
with open(path, encoding="utf-8") as f:
    for line in f:
        line = line.rstrip("\n")
        if fmt == "json":
            try:
                d = json.loads(line)
            except ValueError as e:
                print("bad json line:", e, line)
                bad += 1
                continue
            if "event" in d:
                recs.append(("event", d))
                continue
            if not re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$', d["time"]):
                print("bad json time:", line)
                bad += 1
            recs.append(("req", d))
            continue
        m = re.match(audit, line)
        if m:
            recs.append(("event", m.groupdict()))
            continue
        m = re.match(clf, line)
        if not m:
            print("bad line:", line)
            bad += 1
            continue
        d = m.groupdict()
        parts = d["req"].split(" ")
        d["method"], d["path"] = (parts[0], parts[1]) if len(parts) == 3 else ("-", "-")
        d["request_id"] = d["id"]
        d["user"] = None if d["user"] == "-" else d["user"]
        recs.append(("req", d))
print("ok parsed %d lines," % len(recs) if bad == 0 else "bad: %d lines of %d" % (bad, len(recs)))
for kind, d in recs:
    if kind == "event":
        print("event", d["event"], d.get("user"), d.get("addr"), d.get("detail"),
              d.get("request_id", d.get("id")))
    else:
        tag = re.search(r'[?&]tag=([\w.-]+)', d["path"] or "")
        print("req", tag.group(1) if tag else "-", d["status"], d["bytes"], d["user"],
              d["addr"], d["method"], d["request_id"])
if len(sys.argv) > 3:
    got = {}
    for kind, d in recs:
        tag = re.search(r'[?&]tag=([\w.-]+)', (d.get("path") or "")) if kind == "req" else None
        if tag:
            got.setdefault(tag.group(1), []).append(d)
    for want in open(sys.argv[3]):
        tag, status, nbytes, rid = (want.split() + [""])[:4]
        ds = got.get(tag, [])
        if len(ds) != 1:
            print("bad", tag, "lines:", len(ds))
            continue
        d = ds[0]
        ok = (str(d["status"]) == status and str(d["bytes"]) == nbytes
              and d["request_id"] == rid)
        print("ok" if ok else "bad", tag, "status", d["status"], "want", status, "bytes",
              d["bytes"], "want", nbytes, "id", d["request_id"], "want", rid)
EOF

# ---- combined (the default): every field of every kind of request ----------------------------
s1 combined --access-log "$ALOG"
check_ok "the configuration line names the log" grep -q "access-log=$ALOG access-log-format=combined" \
    "$ITEST_DIR/combined.log"
: >"$ITEST_DIR/expect"
req signup -d "username=logu&password=$PASS" "$URL/users?tag=signup"
req get -u "logu:$PASS" -A 'agent "007"' -e 'http://ref/x' "$URL6/files/f1k?tag=get"
req range -u "logu:$PASS" -r 0-99 "$URL/files/f1k?tag=range"
req missing -u "logu:$PASS" "$URL/files/nothing?tag=missing"
req wrong -u "logu:$BADPASS" "$URL/files/f1k?tag=wrong"
req malformed -H "Authorization: Basic $PASS" "$URL/files/f1k?tag=malformed"
req put -u "logu:$PASS" -T "$ITEST_DIR/up.bin" "$URL/files/up.bin?tag=put"
req head -u "logu:$PASS" -I "$URL/files/f1k?tag=head"
req chpass -u "logu:$PASS" -X PUT -d "password=$NEWPASS" "$URL/users/logu?tag=chpass"
req newpass -u "logu:$NEWPASS" "$URL/files/up.bin?tag=newpass"
req delsignup -d "username=delu&password=$PASS" "$URL/users?tag=delsignup"
req delete -u "delu:$PASS" -X DELETE "$URL/users/delu?tag=delete"
check_eq "the statuses curl saw" "$(awk '{printf "%s ", $2}' "$ITEST_DIR/expect")" \
    "201 200 206 404 401 401 201 200 204 200 201 204 "
check_ok "every response carried an X-Request-Id" test \
    "$(awk 'NF == 4' "$ITEST_DIR/expect" | wc -l)" -eq 12
wait_until 5 has 17 '' "$ALOG" || itest_not_ok "17 lines within 5 s: $(lines_in "$ALOG")"
python3 "$CHECK" combined "$ALOG" "$ITEST_DIR/expect" >"$ITEST_DIR/combined.out"
check_ok "every line parses as combined" grep -q '^ok parsed 17 lines,$' "$ITEST_DIR/combined.out"
check_eq "each request's line: its status, the body bytes received, its X-Request-Id" \
    "$(grep -c '^ok [a-z]* status' "$ITEST_DIR/combined.out")" 12
grep '^bad' "$ITEST_DIR/combined.out" || true
# (the threads' buffers reach the file in any order: lines are compared sorted)
sorted() { LC_ALL=C sort | tr '\n' ' '; }
check_eq "the users of the lines (verified, else -)" \
    "$(awk '$1 == "req" { print $2 "=" $5 }' "$ITEST_DIR/combined.out" | sorted)" \
    "chpass=logu delete=delu delsignup=None get=logu head=logu malformed=None missing=logu newpass=logu put=logu range=logu signup=None wrong=None "
check_eq "the addresses: ::1 over IPv6, 127.0.0.1 over IPv4" \
    "$(awk '$1 == "req" && ($2 == "get" || $2 == "range") { print $2 "=" $6 }' "$ITEST_DIR/combined.out" | sorted)" \
    "get=::1 range=127.0.0.1 "
check_eq "the audit events: a failed login (the name as given), sign-ups, password change, deletion" \
    "$(awk '$1 == "event" { print $2 "/" $3 }' "$ITEST_DIR/combined.out" | sorted)" \
    "account_deleted/delu login_failed/logu password_changed/logu signup/delu signup/logu "
check_ok "the failed login's event carries its request's id" test \
    "$(awk '$1 == "event" && $2 == "login_failed" { print $6 }' "$ITEST_DIR/combined.out")" = \
    "$(awk '$1 == "wrong" { print $4 }' "$ITEST_DIR/expect")"
check_ok "Referer and User-Agent, escaped as nginx does" \
    grep -qF '"http://ref/x" "agent \x22007\x22"' "$ALOG"
check_eq "no password in the access log (nor in the malformed header)" \
    "$(grep -cE "$PASS|$NEWPASS|$BADPASS|$(printf 'logu:%s' "$PASS" | base64)" "$ALOG" || true)" 0

# a client that reads 64 KiB of a 32 MiB file and resets the connection
python3 - "$PORT" "$PASS" "$NEWPASS" <<'EOF'
import base64, socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
auth = base64.b64encode(b"logu:" + sys.argv[3].encode()).decode()
s.sendall(("GET /files/big?tag=dropped HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
           % auth).encode())
got = 0
while got < 65536:
    b = s.recv(65536)
    if not b:
        break
    got += len(b)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
wait_until 20 grep -q 'tag=dropped' "$ALOG" || itest_not_ok "no line for the dropped download"
dropped=$(grep 'tag=dropped' "$ALOG" | awk '{ print $9, $10 }')
read -r dst dbytes <<<"$dropped"
check_eq "the dropped download's line: status 200" "$dst" 200
check_ok "... and the bytes sent before the reset (${dbytes:-none}), fewer than 32 MiB" \
    test "${dbytes:-0}" -gt 0 -a "${dbytes:-0}" -lt $((32 << 20))

# a client gone before its answer: the request waits on server2 (stopped), the client resets
# the connection, server2 goes on: 499 and no bytes, as nginx logs it
kill -STOP "$S2_PID"
python3 - "$PORT" "$BADPASS" "$METRICS" <<'EOF' || itest_not_ok "the request was never held"
import base64, socket, struct, sys, time, urllib.request
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
auth = base64.b64encode(b"logu:" + sys.argv[2].encode()).decode()
s.sendall(("GET /files/f1k?tag=gone HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
           % auth).encode())
deadline = time.monotonic() + 20
while time.monotonic() < deadline:  # until server1 holds it, waiting for server2
    body = urllib.request.urlopen(sys.argv[3], timeout=5).read().decode()
    n = [l.split()[1] for l in body.splitlines() if l.startswith("server1_inflight_requests ")]
    if n and float(n[0]) >= 1:
        break
    time.sleep(0.02)
else:
    sys.exit(1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
kill -CONT "$S2_PID"
wait_until 20 grep -q 'tag=gone' "$ALOG" || itest_not_ok "no line for the request whose client went"
read -r gst gbytes gusr <<<"$(grep 'tag=gone' "$ALOG" | awk '{ print $9, $10, $3 }')"
check_eq "a client gone before its answer: status 499, 0 bytes, no user" \
    "${gst:-} ${gbytes:-} ${gusr:-}" "499 0 -"

# ---- logrotate: mv, SIGUSR1 while 400 requests run ---------------------------------------------
: >"$ALOG.load"
python3 - "$PORT" "$NEWPASS" 400 >"$ITEST_DIR/load.out" 2>&1 <<'EOF' &
import base64, http.client, sys, threading
port, pw, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
auth = "Basic " + base64.b64encode(("logu:" + pw).encode()).decode()
todo = list(range(n))
lock = threading.Lock()
codes = {}
def run():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    while True:
        with lock:
            if not todo:
                break
            i = todo.pop(0)
        c.request("GET", "/files/f1k?tag=load-%d" % i, headers={"Authorization": auth})
        r = c.getresponse()
        r.read()
        with lock:
            codes[r.status] = codes.get(r.status, 0) + 1
ts = [threading.Thread(target=run) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(" ".join("%d:%d" % kv for kv in sorted(codes.items())))
EOF
LOAD=$!
wait_until 20 has 40 'tag=load-' "$ALOG" || itest_not_ok "no load lines in the log"
mv "$ALOG" "$ALOG.1"
kill -USR1 "$PID"
wait_until 5 test -e "$ALOG" || itest_not_ok "SIGUSR1 did not create a new $ALOG"
wait "$LOAD" || itest_not_ok "the load failed: $(cat "$ITEST_DIR/load.out")"
check_eq "the load's answers" "$(cat "$ITEST_DIR/load.out")" "200:400"
for i in 1 2 3; do req after$i -u "logu:$NEWPASS" "$URL/files/f1k?tag=after$i"; done
wait_until 5 has 400 'tag=load-' "$ALOG.1" "$ALOG" || true
check_eq "every request of the load in the two files exactly once" \
    "$(cat "$ALOG.1" "$ALOG" | grep -o 'tag=load-[0-9]*' | sort | uniq -c | awk '$1 == 1' | wc -l)" 400
check_eq "... and no line twice" "$(cat "$ALOG.1" "$ALOG" | grep -o 'tag=load-[0-9]*' | wc -l)" 400
wait_until 5 grep -q 'tag=after3' "$ALOG" || true
check_ok "requests after the signal are in the new file" grep -q 'tag=after3' "$ALOG"
check_eq "... both parse as combined, line by line" \
    "$(cat "$ALOG.1" "$ALOG" >"$ITEST_DIR/both.log"; python3 "$CHECK" combined "$ITEST_DIR/both.log" | grep -c '^bad' || true)" 0
check_ok "the reopen is logged" grep -q 'SIGUSR1: access log reopened' "$ITEST_DIR/combined.log"
stop_pid "combined" "$PID"

# ---- json and common: they parse; lines buffered at SIGTERM are written -----------------------
for fmt in json common; do
    log=$ITEST_DIR/access.$fmt
    s1 "$fmt" --access-log "$log" --access-log-format "$fmt"
    : >"$ITEST_DIR/expect"
    req "$fmt-get" -u "logu:$NEWPASS" -A 'ua "é"' "$URL6/files/f1k?tag=$fmt-get"
    req "$fmt-wrong" -u "nobody:$BADPASS" "$URL/files/f1k?tag=$fmt-wrong"
    req "$fmt-404" "$URL/nothing?tag=$fmt-404"
    stop_pid "$fmt" "$PID"
    python3 "$CHECK" "$fmt" "$log" "$ITEST_DIR/expect" >"$ITEST_DIR/$fmt.out"
    check_ok "$fmt: every line parses" grep -q '^ok parsed 4 lines,$' "$ITEST_DIR/$fmt.out"
    check_eq "$fmt: status, bytes and id of each request (all written by exit)" \
        "$(grep -c '^ok [a-z0-9-]* status' "$ITEST_DIR/$fmt.out")" 3
    check_eq "$fmt: user and address of the GET" \
        "$(awk '$1 == "req" && $2 ~ /get$/ { print $5, $6 }' "$ITEST_DIR/$fmt.out")" "logu ::1"
    check_eq "$fmt: the failed login of an unknown user, as given" \
        "$(awk '$1 == "event" { print $2, $3 }' "$ITEST_DIR/$fmt.out")" "login_failed nobody"
    check_eq "$fmt: no password" "$(grep -cE "$NEWPASS|$BADPASS" "$log" || true)" 0
done
check_ok "json: the User-Agent's bytes >= 0x7f as \\u00HH" grep -qF '"user_agent":"ua \"\u00c3\u00a9\""' \
    "$ITEST_DIR/access.json"

# ---- behind a --trusted-proxy: the address its PROXY header names, IPv6 in full ----------------
s1 proxy --access-log "$ITEST_DIR/access.proxy" --trusted-proxy 127.0.0.1,::1
python3 - "$PORT" <<'EOF'
import socket, sys
for src, tag in (("TCP4 203.0.113.7 127.0.0.1", "p4"), ("TCP6 2001:db8:1:2:3:4:5:6 ::1", "p6")):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(("PROXY %s 5555 80\r\nGET /nothing?tag=%s HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n" % (src, tag)).encode())
    while s.recv(4096):
        pass
    s.close()
# three requests pipelined in one write: three lines, each with its own response's bytes
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"PROXY TCP4 198.51.100.9 127.0.0.1 5555 80\r\n" + b"".join(
    b"GET /nothing?tag=pipe%d HTTP/1.1\r\nHost: x\r\n%s\r\n"
    % (i, b"Connection: close\r\n" if i == 3 else b"") for i in (1, 2, 3)))
while s.recv(4096):
    pass
s.close()
EOF
stop_pid "proxy" "$PID"
check_eq "three pipelined requests: three lines, each its status and bytes" \
    "$(grep 'tag=pipe' "$ITEST_DIR/access.proxy" | awk '{ print $1, $7, $9, $10 }' | sorted)" \
    "198.51.100.9 /nothing?tag=pipe1 404 10 198.51.100.9 /nothing?tag=pipe2 404 10 198.51.100.9 /nothing?tag=pipe3 404 10 "
check_eq "the client a PROXY header names, IPv4 and IPv6 in full (not its /64)" \
    "$(grep -v 'tag=pipe' "$ITEST_DIR/access.proxy" | awk '{ print $1, $7 }' | sorted)" \
    "2001:db8:1:2:3:4:5:6 /nothing?tag=p6 203.0.113.7 /nothing?tag=p4 "

# ---- a file that cannot be opened; a write that fails ------------------------------------------
rc=0
out=$("$BIN_DIR/server1" --port 0 --root "$ROOT" --insecure-no-secret \
    --access-log "$ITEST_DIR/no/such/dir/access.log" 2>&1) || rc=$?
check_eq "--access-log in a missing directory: exit 2" "$rc" 2
check_ok "... saying why ($out)" grep -q "cannot open '$ITEST_DIR/no/such/dir/access.log'" <<<"$out"
if [[ -w /dev/full ]]; then
    s1 full --access-log /dev/full --access-log-format json
    for i in 1 2 3; do req "full$i" -u "logu:$NEWPASS" "$URL/files/f1k?tag=full$i"; done
    wait_until 5 errors_at_least 1 ||
        itest_not_ok "no write error counted"
    req full4 -u "logu:$NEWPASS" "$URL/files/f1k?tag=full4"
    check_eq "/dev/full: the requests are served all the same" \
        "$(awk '{printf "%s ", $2}' "$ITEST_DIR/expect" | tail -c 16)" "200 200 200 200 "
    wait_until 5 errors_at_least 2 || true
    check_ok "... the failed writes are counted ($(metric server1_access_log_write_errors_total))" \
        test "$(metric server1_access_log_write_errors_total)" -ge 2
    check_eq "... and logged once" "$(grep -c 'access log: write failed' "$ITEST_DIR/full.log")" 1
    stop_pid "full" "$PID"
else
    log "no writable /dev/full: the failed-write check is skipped"
fi

itest_summary
