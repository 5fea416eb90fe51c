#!/usr/bin/env bash
# Durable uploads (PUT/DELETE /files/{name}) on server1 against tests/integration/fake_server2.py:
# 201/204, byte-exact reads of 0 B .. 10 MiB, ownership (403) and --writable-root, limits
# (411/413/501; chunked bodies: test_chunked.sh), traversal and reserved names, 32 concurrent
# uploads sharing group commits, concurrent PUTs to one name, --prefetch readers finishing on
# the old bytes, restarts (versions and owners kept), recovery of a torn end of the log and
# refusal of a damaged one, segments rolling and compaction, SIGKILL right after a 201, SIGTERM
# draining an upload in flight, --group-commit off, deletes of operator files (whiteouts), and
# --read-only.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init uploads
itest_timeout 300
require_cmd curl python3 cmp
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT/sub"
echo "operator's file" >"$ROOT/op.txt"
cp "$ROOT/op.txt" "$ITEST_DIR/op.orig"
DATA=$ITEST_DIR/data
mkdir -p "$DATA"
head -c 0 /dev/urandom >"$DATA/zero"
head -c 1000 /dev/urandom >"$DATA/small1"
head -c 5000 /dev/urandom >"$DATA/small2"
head -c 10485760 /dev/urandom >"$DATA/ten"
head -c 2097152 /dev/urandom >"$DATA/two"

# ---- helpers --------------------------------------------------------------------------------
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@" || true; }
ALICE=(-u alice:secret)
BOB=(-u bob:hunter22)
# put USER... FILE NAME: the status of PUT /files/NAME with FILE as the body.
put() {
    local file=${*: -2:1} name=${*: -1}
    code "${@:1:$#-2}" -T "$file" "$S1/files/$name"
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
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }

start_fake 0

# ---- start-up ---------------------------------------------------------------------------------
log "start-up checks"
rc=0
mkdir -p "$ROOT/.s1store"
echo junk >"$ROOT/.s1store/junk.txt"
timeout 10 "$S1_BIN" --auth-secret-file "$LINK_SECRET" --root "$ROOT" --port 0 --auth "127.0.0.1:$FAKE_PORT" \
    >/dev/null 2>"$ITEST_DIR/junk.err" || rc=$?
check_eq "a foreign file in the store: exit 1" "$rc" 1
check_ok "  ... with one clear line naming it" grep -q '^server1: .*junk.txt.*move it away' "$ITEST_DIR/junk.err"
check_eq "  ... and nothing else on stderr" "$(wc -l <"$ITEST_DIR/junk.err")" 1
check_ok "  ... and the file left alone" test -e "$ROOT/.s1store/junk.txt"
rm -rf "$ROOT/.s1store"
rc=0
timeout 10 "$S1_BIN" --auth-secret-file "$LINK_SECRET" --root "$ROOT" --group-commit maybe >/dev/null 2>&1 || rc=$?
check_eq "bad --group-commit: exit 2" "$rc" 2
rc=0
timeout 10 "$S1_BIN" --auth-secret-file "$LINK_SECRET" --root "$ROOT" --max-upload 5x >/dev/null 2>&1 || rc=$?
check_eq "bad --max-upload: exit 2" "$rc" 2

start_s1 s1-ro --read-only
check_eq "--read-only: PUT is 405" "$(put "${ALICE[@]}" "$DATA/small1" ro.txt)" 405
check_eq "--read-only: the PUT's 405 says what is allowed" \
    "$(curl -s -D - -o /dev/null "${ALICE[@]}" -T "$DATA/small1" "$S1/files/ro.txt" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="allow"{print $2}')" "GET, HEAD"
check_eq "--read-only: DELETE is 405 too" "$(code "${ALICE[@]}" -X DELETE "$S1/files/op.txt")" 405
check_eq "--read-only: GET still works" "$(code "${ALICE[@]}" "$S1/files/op.txt")" 200
check_ok "--read-only: no store dir" test ! -e "$ROOT/.s1store"
stop_s1 "read-only"

# ---- basic PUT/GET/DELETE ---------------------------------------------------------------------
log "PUT, GET, DELETE"
# a commit window long enough that the 32 concurrent uploads below surely share flushes
start_s1 s1-main --max-upload 4M --commit-window 20ms
check_eq "create user bob" "$(code -d 'username=bob&password=hunter22' "$S1/users")" 201
check_eq "PUT new: 201" "$(put "${ALICE[@]}" "$DATA/small1" a.txt)" 201
check_get "GET returns the uploaded bytes" a.txt "$DATA/small1"
check_eq "PUT again: 204" "$(put "${ALICE[@]}" "$DATA/small2" a.txt)" 204
check_get "GET returns the new bytes" a.txt "$DATA/small2"
check_eq "PUT into a subdirectory: 201" "$(put "${ALICE[@]}" "$DATA/small1" sub/b.txt)" 201
check_get "  ... readable" sub/b.txt "$DATA/small1"
check_eq "PUT under a directory name that does not exist: 201" "$(put "${ALICE[@]}" "$DATA/small1" nodir/b.txt)" 201
check_get "  ... readable" nodir/b.txt "$DATA/small1"
check_eq "0-byte upload: 201" "$(put "${ALICE[@]}" "$DATA/zero" empty)" 201
check_get "0-byte file reads back empty" empty "$DATA/zero"
check_eq "2 MiB upload: 201" "$(put "${ALICE[@]}" "$DATA/two" two)" 201
check_get "2 MiB upload byte-exact" two "$DATA/two"
check_eq "PUT without credentials: 401" "$(put "$DATA/small1" noauth)" 401
# a symlink into the store, made by whoever can write under --root, never serves a segment
ln -s .s1store "$ROOT/st"
ln -s .s1store/00000000.seg "$ROOT/x.seg"
for name in st/00000000.seg x.seg; do
    rm -f "$ITEST_DIR/seg.got"
    st=$(curl -s -o "$ITEST_DIR/seg.got" -w '%{http_code}' --max-time 10 "${ALICE[@]}" "$S1/files/$name" || true)
    check_eq "GET $name (a symlink into the store): 404" "$st" 404
    check_ok "  ... and no byte of the segment" bash -c "! grep -q 'hunter\|[^[:print:]]' '$ITEST_DIR/seg.got'"
    check_eq "PUT $name: not stored through the link (403)" "$(put "${ALICE[@]}" "$DATA/small1" "$name")" 403
done
rm -f "$ROOT/st" "$ROOT/x.seg"
check_eq "PUT with a wrong password: 401" "$(put -u alice:wrong "$DATA/small1" noauth)" 401
check_eq "  ... nothing stored" "$(code "${ALICE[@]}" "$S1/files/noauth")" 404

log "ownership"
check_eq "another user's PUT: 403" "$(put "${BOB[@]}" "$DATA/small1" a.txt)" 403
check_eq "another user's DELETE: 403" "$(code "${BOB[@]}" -X DELETE "$S1/files/a.txt")" 403
check_get "  ... the file is unchanged" a.txt "$DATA/small2"
check_eq "operator file PUT: 403" "$(put "${ALICE[@]}" "$DATA/small1" op.txt)" 403
check_eq "operator file DELETE: 403" "$(code "${ALICE[@]}" -X DELETE "$S1/files/op.txt")" 403
check_ok "  ... unchanged on disk" cmp -s "$ROOT/op.txt" "$ITEST_DIR/op.orig"
check_eq "bob's own file: 201" "$(put "${BOB[@]}" "$DATA/small1" bob.txt)" 201
check_eq "alice cannot replace bob's file: 403" "$(put "${ALICE[@]}" "$DATA/small2" bob.txt)" 403

log "limits and bad requests"
check_eq "over --max-upload: 413" "$(put "${ALICE[@]}" "$DATA/ten" big)" 413
check_eq "  ... nothing stored" "$(code "${ALICE[@]}" "$S1/files/big")" 404
check_eq "PUT without Content-Length: 411" "$(code "${ALICE[@]}" -X PUT "$S1/files/nolen")" 411
check_eq "PUT with a transfer coding other than chunked: 501" \
    "$(code "${ALICE[@]}" -X PUT -H 'Transfer-Encoding: gzip' "$S1/files/te")" 501
for name in '../escape' '%2e%2e/escape' 'sub/../../escape' '.s1store/x' '.s1store' 'sub/.s1x' \
    '%2fescape' 'a%00b'; do
    check_eq "PUT traversal/reserved '$name': 404" \
        "$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "${ALICE[@]}" -T "$DATA/small1" "$S1/files/$name")" 404
    check_eq "DELETE traversal/reserved '$name': 404" \
        "$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "${ALICE[@]}" -X DELETE "$S1/files/$name")" 404
done
check_ok "nothing written outside the root" test ! -e "$ITEST_DIR/escape"
check_ok "  ... nor as a reserved name" test ! -e "$ROOT/sub/.s1x"
check_eq "GET of the store dir: 404" "$(code --path-as-is "${ALICE[@]}" "$S1/files/.s1store")" 404
check_eq "GET of a store segment: 404" \
    "$(code --path-as-is "${ALICE[@]}" "$S1/files/.s1store/00000000.seg")" 404
check_eq "DELETE: 204" "$(code "${ALICE[@]}" -X DELETE "$S1/files/sub/b.txt")" 204
check_eq "  ... then GET: 404" "$(code "${ALICE[@]}" "$S1/files/sub/b.txt")" 404
check_eq "  ... DELETE again: 404" "$(code "${ALICE[@]}" -X DELETE "$S1/files/sub/b.txt")" 404
check_eq "requests_total counts PUT 201" \
    "$(curl -s "$S1_METRICS" | grep -c 'route="files",status="201"')" 1

log "32 concurrent uploads to distinct names"
b0=$(metric server1_commit_batches_total)
j0=$(metric server1_commit_batch_size_sum)
for i in $(seq 1 32); do
    head -c $((65536 + i * 1000)) /dev/urandom >"$DATA/c$i"
done
pids=()
for i in $(seq 1 32); do
    curl -s -o /dev/null -w '%{http_code}\n' "${ALICE[@]}" -T "$DATA/c$i" "$S1/files/c$i" \
        >"$ITEST_DIR/c$i.code" &
    pids+=($!)
done
wait "${pids[@]}"
bad=0
for i in $(seq 1 32); do
    [[ $(cat "$ITEST_DIR/c$i.code") == 201 ]] &&
        curl -s "${ALICE[@]}" "$S1/files/c$i" | cmp -s - "$DATA/c$i" || bad=$((bad + 1))
done
check_eq "all 32 answered 201 and read back byte-exact" "$bad" 0
b1=$(metric server1_commit_batches_total)
j1=$(metric server1_commit_batch_size_sum)
log "32 uploads took $((b1 - b0)) commit batches"
check_eq "  ... every upload counted in a batch" "$((j1 - j0))" 32
check_ok "  ... some batch held more than one upload ($((b1 - b0)) batches)" test $((b1 - b0)) -lt 32

log "concurrent PUTs to one name"
pids=()
for i in $(seq 1 12); do
    curl -s -o /dev/null -w '%{http_code}\n' "${ALICE[@]}" -T "$DATA/c$i" "$S1/files/same" \
        >"$ITEST_DIR/same$i.code" &
    pids+=($!)
done
wait "${pids[@]}"
ok=0
for i in $(seq 1 12); do
    [[ $(cat "$ITEST_DIR/same$i.code") =~ ^20[14]$ ]] && ok=$((ok + 1))
done
check_eq "all 12 acknowledged" "$ok" 12
match=""
curl -s "${ALICE[@]}" -o "$ITEST_DIR/same.got" "$S1/files/same"
for i in $(seq 1 12); do
    cmp -s "$ITEST_DIR/same.got" "$DATA/c$i" && match=$i
done
check_ok "final content is one acknowledged body, whole" test -n "$match"
check_eq "a later PUT wins" "$(put "${ALICE[@]}" "$DATA/small1" same)" 204
check_get "  ... and is what GET returns" same "$DATA/small1"

log "SIGKILL right after a 201, then restart"
check_eq "PUT: 201" "$(put "${ALICE[@]}" "$DATA/small2" survivor)" 201
kill -KILL "$S1_PID"
wait "$S1_PID" 2>/dev/null || true
start_s1 s1-after-kill --max-upload 16M
check_get "the acknowledged file survived SIGKILL" survivor "$DATA/small2"
check_eq "10 MiB upload: 201" "$(put "${ALICE[@]}" "$DATA/ten" ten)" 201
check_get "10 MiB upload byte-exact" ten "$DATA/ten"
kill -KILL "$S1_PID"
wait "$S1_PID" 2>/dev/null || true

log "restart serves the last acknowledged versions, owners kept; an unfinished batch is dropped"
SEG=$(find "$ROOT/.s1store" -name '*.seg' | sort | tail -n 1)
# the start of a batch that never finished: its header's first bytes (with the segment's salt,
# bytes 12-15 of the segment header), then nothing
python3 - "$SEG" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    salt = f.read(16)[12:16]
    f.seek(0, 2)
    f.write(b"S1BT" + b"\0" * 4 + salt + b"half-written" + b"\0" * 4)
EOF
start_s1 s1-restart
check_ok "recovery is logged with the unfinished batch" \
    grep -q 'recovery: upload store: .* 28 bytes of an unfinished batch dropped' "$S1_LOG"
check_ok "  ... no checkpoint (only SIGKILLs so far): the whole log replayed" \
    grep -q 'store: no checkpoint used (there is none): replayed the whole log' "$S1_LOG"
check_get "a.txt: last version" a.txt "$DATA/small2"
check_get "ten: byte-exact" ten "$DATA/ten"
check_get "same: last version" same "$DATA/small1"
check_eq "deleted file stays deleted" "$(code "${ALICE[@]}" "$S1/files/sub/b.txt")" 404
check_eq "ownership survives the restart (bob: 403)" "$(put "${BOB[@]}" "$DATA/small1" a.txt)" 403
check_eq "  ... (alice: 204)" "$(put "${ALICE[@]}" "$DATA/small1" a.txt)" 204
stop_s1 "restart"

log "--writable-root"
start_s1 s1-writable --writable-root
check_ok "after a clean stop: its checkpoint loaded, nothing replayed" \
    grep -q 'store: checkpoint of [1-9][0-9]* entries .* loaded, replayed 0 records' "$S1_LOG"
check_ok "  ... its entries on /metrics" test "$(metric server1_store_checkpoint_entries)" -gt 0
check_eq "operator file PUT: 204" "$(put "${ALICE[@]}" "$DATA/small1" op.txt)" 204
check_get "  ... new bytes" op.txt "$DATA/small1"
check_eq "  ... now alice's: bob gets 403" "$(put "${BOB[@]}" "$DATA/small2" op.txt)" 403
check_eq "other users' files stay theirs" "$(put "${ALICE[@]}" "$DATA/small2" bob.txt)" 403
check_eq "PUT over a directory: 409" "$(put "${ALICE[@]}" "$DATA/small1" sub)" 409
echo "another operator file" >"$ROOT/op2.txt"
check_eq "operator file DELETE: 204" "$(code "${ALICE[@]}" -X DELETE "$S1/files/op2.txt")" 204
check_eq "  ... then GET: 404" "$(code "${ALICE[@]}" "$S1/files/op2.txt")" 404
check_ok "  ... the operator's copy is left on disk" test -s "$ROOT/op2.txt"
stop_s1 "writable-root"
start_s1 s1-writable2
check_eq "the delete survives a restart: 404" "$(code "${ALICE[@]}" "$S1/files/op2.txt")" 404
check_get "the replaced operator file keeps the upload" op.txt "$DATA/small1"
stop_s1 "writable-root restart"

log "--prefetch: readers finish on the old bytes"
start_s1 s1-prefetch --prefetch --max-upload 16M
check_get "prefetched upload served" ten "$DATA/ten"
python3 "$HERE/s1client.py" pausedget "$S1_PORT" alice secret ten "$ITEST_DIR/slow.out" \
    "$ITEST_DIR/slow.started" "$ITEST_DIR/slow.go" >/dev/null &
READER=$!
wait_until 10 test -e "$ITEST_DIR/slow.started" || itest_not_ok "slow reader did not start"
check_eq "PUT replaces the file being read: 204" "$(put "${ALICE[@]}" "$DATA/two" ten)" 204
check_get "a new GET sees the new bytes" ten "$DATA/two"
touch "$ITEST_DIR/slow.go"
wait "$READER" || true
check_ok "the slow reader got the old bytes, whole" cmp -s "$ITEST_DIR/slow.out" "$DATA/ten"
check_eq "DELETE under --prefetch: 204" "$(code "${ALICE[@]}" -X DELETE "$S1/files/ten")" 204
check_eq "  ... then 404" "$(code "${ALICE[@]}" "$S1/files/ten")" 404
check_eq "new file under --prefetch: 201" "$(put "${ALICE[@]}" "$DATA/small2" pf-new)" 201
check_get "  ... served" pf-new "$DATA/small2"
stop_s1 "prefetch"
# uploads are served from the store's segments with --prefetch too: server1's memory does not
# grow with what users upload (it held every upload in memory, and read them all back at
# start). Bodies go to temp files (--upload-memory 0), so that no allocator's keeping of freed
# receive buffers (ASan's quarantine) is taken for uploads held.
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$S1_PID/status"; }
start_s1 s1-prefetch-mem --prefetch --max-upload 16M --upload-memory 0
rss0=$(rss_kb)
for i in $(seq 1 12); do
    st=$(put "${ALICE[@]}" "$DATA/ten" "mem$i")
    [[ $st == 201 ]] || itest_not_ok "PUT mem$i under --prefetch: $st"
done
rss1=$(rss_kb)
if ((rss1 - rss0 < 40960)); then itest_ok "12 x 10 MiB uploads under --prefetch: RSS $rss0 -> $rss1 kB"; else
    itest_not_ok "12 x 10 MiB uploads under --prefetch: RSS grew from $rss0 to $rss1 kB"; fi
check_get "  ... and they are served" mem12 "$DATA/ten"
stop_s1 "prefetch, uploads to temp files"
echo "prefetched at start" >"$ROOT/op-pf.txt"
start_s1 s1-prefetch-again --prefetch --max-upload 16M --upload-memory 0
rss2=$(rss_kb)
if ((rss2 < rss0 + 40960)); then itest_ok "restarted with --prefetch: uploads not loaded (RSS $rss2 kB)"; else
    itest_not_ok "restarted with --prefetch: RSS $rss2 kB (uploads loaded into memory?)"; fi
check_get "  ... served after the restart" mem7 "$DATA/ten"
check_get "  ... a prefetched operator file too" op-pf.txt "$ROOT/op-pf.txt"
stop_s1 "prefetch again"

log "--read buffered and --read direct serve uploads from the store"
start_s1 s1-buffered --read buffered
check_eq "PUT: 204" "$(put "${ALICE[@]}" "$DATA/small2" pf-new)" 204
check_get "  ... the next GET sees the new version" pf-new "$DATA/small2"
check_eq "  ... HEAD: 200" "$(code "${ALICE[@]}" -I "$S1/files/pf-new")" 200
check_eq "  ... Content-Length of HEAD" \
    "$(curl -s -I "${ALICE[@]}" "$S1/files/pf-new" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-length"{print $2}')" \
    "$(stat -c %s "$DATA/small2")"
stop_s1 "buffered"
echo "a third operator file" >"$ROOT/op3.txt"
start_s1 s1-direct --read direct
check_get "--read direct: an upload" pf-new "$DATA/small2"
check_get "--read direct: an operator file" op3.txt "$ROOT/op3.txt"
stop_s1 "direct"

log "segments roll and compaction keeps the store small"
S1_TEST_STORE_SEGMENT_BYTES=65536 start_s1 s1-compact
for r in $(seq 1 12); do
    for i in 1 2 3 4; do
        put "${ALICE[@]}" "$DATA/c$(((r + i) % 16 + 1))" "churn$i" >/dev/null
    done
done
check_ok "compactions happened ($(metric server1_store_compactions_total))" \
    test "$(metric server1_store_compactions_total)" -gt 0
check_ok "  ... the store holds few segments ($(metric server1_store_segments))" \
    test "$(metric server1_store_segments)" -le 8
# check_churn DESC: each churn name reads back the body of its last PUT (round 12).
check_churn() {
    local bad=0 i
    for i in 1 2 3 4; do
        curl -s "${ALICE[@]}" "$S1/files/churn$i" | cmp -s - "$DATA/c$(((12 + i) % 16 + 1))" ||
            bad=$((bad + 1))
    done
    check_eq "$1" "$bad" 0
}
check_churn "  ... every name reads its last version"
check_get "  ... older uploads are still there" a.txt "$DATA/small1"
stop_s1 "compaction"
S1_TEST_STORE_SEGMENT_BYTES=65536 start_s1 s1-compact2
check_churn "  ... and after a restart"
check_get "  ... a.txt too" a.txt "$DATA/small1"
stop_s1 "compaction restart"

log "--upload-memory: bodies beyond it go to temp files"
start_s1 s1-lowmem --upload-memory 1m --max-upload 16M
check_eq "2 MiB upload with 1 MiB of upload memory: 201" "$(put "${ALICE[@]}" "$DATA/two" viafile)" 201
check_get "  ... byte-exact" viafile "$DATA/two"
check_eq "10 MiB upload: 201" "$(put "${ALICE[@]}" "$DATA/ten" viafile10)" 201
check_get "  ... byte-exact" viafile10 "$DATA/ten"
check_eq "a small one still from memory: 201" "$(put "${ALICE[@]}" "$DATA/small1" viamem)" 201
check_get "  ... byte-exact" viamem "$DATA/small1"
stop_s1 "upload-memory"
start_s1 s1-bigbody --max-upload 32M
head -c $((17 << 20)) /dev/urandom >"$DATA/seventeen"
check_eq "17 MiB upload (over the 16 MiB a body may hold in memory): 201" \
    "$(put "${ALICE[@]}" "$DATA/seventeen" big17)" 201
check_get "  ... byte-exact" big17 "$DATA/seventeen"
stop_s1 "big body"
rc=0
timeout 10 "$S1_BIN" --auth-secret-file "$LINK_SECRET" --root "$ROOT" --upload-memory lots >/dev/null 2>&1 || rc=$?
check_eq "bad --upload-memory: exit 2" "$rc" 2

log "--group-commit off"
start_s1 s1-nogroup --group-commit off
pids=()
for i in $(seq 1 16); do
    curl -s -o /dev/null "${ALICE[@]}" -T "$DATA/c$i" "$S1/files/ng$i" &
    pids+=($!)
done
wait "${pids[@]}"
check_eq "16 uploads, 16 batches of one" \
    "$(metric server1_commit_batches_total)/$(metric server1_commit_batch_size_sum)" "16/16"
bad=0
for i in $(seq 1 16); do
    curl -s "${ALICE[@]}" "$S1/files/ng$i" | cmp -s - "$DATA/c$i" || bad=$((bad + 1))
done
check_eq "  ... all byte-exact" "$bad" 0
stop_s1 "group-commit off"

log "SIGTERM drains an upload in flight"
start_s1 s1-drain
cat >"$ITEST_DIR/slow_writer.py" <<'EOF'
import base64, itls, os, sys, time
port, body_file, started, go = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
body = open(body_file, "rb").read()
s = itls.connect(port, timeout=None, nodelay=False)
auth = base64.b64encode(b"alice:secret").decode()
s.sendall(f"PUT /files/drained HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {auth}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
s.sendall(body[: len(body) // 2])
open(started, "w").close()
while not os.path.exists(go):
    time.sleep(0.02)
s.sendall(body[len(body) // 2:])
resp = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    resp += b
print(resp.split(b"\r\n")[0].decode())
EOF
PYTHONPATH=$HERE python3 "$ITEST_DIR/slow_writer.py" "$S1_PORT" "$DATA/small2" \
    "$ITEST_DIR/w.started" "$ITEST_DIR/w.go" >"$ITEST_DIR/w.out" &
WRITER=$!
wait_until 10 test -e "$ITEST_DIR/w.started" || itest_not_ok "slow writer did not start"
sleep 0.2
kill -TERM "$S1_PID"
sleep 0.3
touch "$ITEST_DIR/w.go"
wait "$WRITER" || true
check_eq "the upload in flight is answered 201" "$(cat "$ITEST_DIR/w.out")" "HTTP/1.1 201 Created"
rc=0
wait_pid_exit "$S1_PID" 15 || itest_not_ok "drain: still running"
wait "$S1_PID" 2>/dev/null || rc=$?
check_eq "  ... and server1 exits 0" "$rc" 0
start_s1 s1-after-drain
check_get "  ... and the upload is there after a restart" drained "$DATA/small2"

log "damage in the middle of the log stops the start"
stop_s1 "after drain"
# (a replay of the whole log: the log before a checkpoint's position is not read at start)
rm -f "$ROOT/.s1store/index.ckpt"
SEG=$(find "$ROOT/.s1store" -name '*.seg' | sort | tail -n 1)
seg_size=$(stat -c %s "$SEG")
# flip the first byte of the first record's name (covered by its CRC) in the first batch
# (segment header 32 bytes, batch header 32, record header 24); whole batches follow it
python3 - "$SEG" <<'EOF'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(32)
    magic, crc, salt, nrec, blen, _ = struct.unpack("<IIIIQQ", f.read(32))
    size = f.seek(0, 2)
    assert magic == 0x54423153 and 64 + blen < size, "the last segment holds only one batch"
    f.seek(88)
    b = f.read(1)
    f.seek(88)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
rc=0
timeout 10 "$S1_BIN" --auth-secret-file "$LINK_SECRET" --root "$ROOT" --port 0 --auth "127.0.0.1:$FAKE_PORT" \
    >/dev/null 2>"$ITEST_DIR/damaged.err" || rc=$?
check_eq "a damaged record with valid ones after it: exit 1" "$rc" 1
check_ok "  ... saying why" grep -q '^server1: .*damaged.*whole batches follow.*refusing' "$ITEST_DIR/damaged.err"
check_eq "  ... and nothing cut off" "$(stat -c %s "$SEG")" "$seg_size"

itest_summary
