#!/usr/bin/env bash
# server1 --pack (docs/pack.md): a pack built by s1pack from a small tree (nested directories,
# names with a space and UTF-8, an empty file, a file over 1 MiB, a name server1 does not serve)
# answers GET, HEAD, Range, If-None-Match and listings with the same bytes and codes as
# server1 --root on the same tree, under --read direct and --read buffered; uploads and
# deletions win over packed names (and a PUT over one is the operator's file's 403 without
# --writable-root, as with --root); s1pack verify passes on the pack and fails on a flipped
# byte; a pack with a damaged index, a truncated one and garbage are refused at start with
# exit 2 and a clear message. Runs against fake_server2.py.
# itest-https: no (a source of bytes like --root; test_file_http sends them over HTTPS)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init pack
itest_timeout 240
require_cmd curl python3 cmp sha256sum
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
S1PACK=$BIN_DIR/s1pack
HERE=$ITEST_ROOT/tests/integration # (s1lib.sh's start_fake)
ALICE=(-u alice:secret)

TREE=$ITEST_DIR/tree
mkdir -p "$TREE/sub/deep" "$TREE/héllo" "$TREE/z-dir"
printf 'abc' >"$TREE/a.txt"
printf 'hello' >"$TREE/sp ace.txt"
: >"$TREE/empty"
head -c 1500000 /dev/urandom >"$TREE/big.bin"
head -c 1000 /dev/urandom >"$TREE/sub/k.bin"
printf 'c' >"$TREE/sub/c.txt"
printf 'dd' >"$TREE/sub/deep/d.txt"
printf 'wörld' >"$TREE/héllo/wörld.txt"
printf 'z' >"$TREE/z-dir/z.txt"
printf 'never' >"$TREE/.s1hidden"
touch -d '2026-01-02 03:04:05 UTC' "$TREE"/* "$TREE"/sub/* "$TREE"/sub/deep/* "$TREE"/héllo/*
NAMES=(a.txt "sp%20ace.txt" empty big.bin sub/k.bin sub/c.txt sub/deep/d.txt
    "h%C3%A9llo/w%C3%B6rld.txt" z-dir/z.txt)
ABSENT=(nope a.txt0 a sub/zz zzz "sub/deep/d.txt/x" ".s1hidden")
DIRS=("" sub/ sub/deep/ "h%C3%A9llo/" z-dir/)

PACK=$ITEST_DIR/tree.pack
out=$("$S1PACK" build "$TREE" "$PACK")
check_eq "s1pack build: 9 files packed, the reserved name skipped" \
    "$(grep -o 'packed [0-9]* files' <<<"$out"; grep -o '[0-9]* names server1 would not serve' <<<"$out")" \
    "$(printf 'packed 9 files\n1 names server1 would not serve')"
check_eq "no PACK.tmp left" "$([[ -e $PACK.tmp ]] && echo left || echo none)" none
check_ok "s1pack verify passes" "$S1PACK" verify "$PACK"
check_eq "s1pack ls sub/" "$("$S1PACK" ls "$PACK" sub/)" \
    "$(printf 'sub/c.txt\nsub/deep/d.txt\nsub/k.bin')"

start_fake 0
# listing URL: "d NAME" / "f NAME SIZE MTIME" lines, directories without time
listing() {
    curl -s "${ALICE[@]}" "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for e in d["entries"]:
    print(("d " + e["name"]) if e["type"] == "directory" else
          "f %s %d %s" % (e["name"], e["size"], e.get("mtime")))
print("truncated=%s" % d["truncated"])' 2>/dev/null || echo "no listing (not JSON)"
}
# survey PORT: every answer that must be the same from the tree and from the pack, one line
# each: for each name, its GET, HEAD and three ranges (status, body digest, the headers that
# must agree); each absent name's GET; a directory's 301; each directory's JSON listing
survey() {
    python3 - "$1" alice:secret "${NAMES[@]}" -- "${ABSENT[@]}" -- "${DIRS[@]}" <<'PY'
import base64, hashlib, http.client, json, sys
port, cred, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
names = rest[:rest.index("--")]
rest = rest[len(names) + 1:]
absent, dirs = rest[:rest.index("--")], rest[rest.index("--") + 1:]
auth = {"Authorization": "Basic " + base64.b64encode(cred.encode()).decode()}
KEEP = ("content-length", "content-type", "content-range", "accept-ranges")
def ask(method, path, extra=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, "/files/" + path, headers=dict(auth, **(extra or {})))
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body
def answers(method, path, extra=None):
    r, body = ask(method, path, extra)
    hdrs = sorted("%s: %s" % (k.lower(), v.lower()) for k, v in r.getheaders()
                  if k.lower() in KEEP)
    return "%d %s %s" % (r.status, hashlib.sha256(body).hexdigest()[:16], " ".join(hdrs))
for n in names:
    print("GET %s: %s" % (n, answers("GET", n)))
    print("HEAD %s: %s" % (n, answers("HEAD", n)))
    for rng in ("1-10", "-3", "2000000-"):
        print("Range %s %s: %s" % (rng, n, answers("GET", n, {"Range": "bytes=" + rng})))
for n in absent:
    print("GET absent %s: %s" % (n, answers("GET", n)))
r, _ = ask("GET", "sub")
print("GET sub (a directory): %d %s" % (r.status, r.getheader("Location")))
for d in dirs:
    print("list /files/%s:" % d)
    r, body = ask("GET", d)
    try:
        doc = json.loads(body)
    except ValueError:
        print("no listing (not JSON)")
        continue
    for e in doc["entries"]:
        print(("d " + e["name"]) if e["type"] == "directory" else
              "f %s %d %s" % (e["name"], e["size"], e.get("mtime")))
    print("truncated=%s" % doc["truncated"])
print("list /files/nope/: %d" % ask("GET", "nope/")[0].status)
PY
}

for MODE in direct buffered; do
    ROOT=$ITEST_DIR/root-$MODE
    cp -a "$TREE" "$ROOT"
    start_s1 "s1-root-$MODE" --read "$MODE"
    survey "$S1_PORT" >"$ITEST_DIR/root-$MODE.txt"
    stop_s1 "--root, --read $MODE"

    ROOT=$ITEST_DIR/empty-$MODE # the upload store only
    mkdir -p "$ROOT"
    start_s1 "s1-pack-$MODE" --read "$MODE" --pack "$PACK"
    survey "$S1_PORT" >"$ITEST_DIR/pack-$MODE.txt"
    if cmp -s "$ITEST_DIR/root-$MODE.txt" "$ITEST_DIR/pack-$MODE.txt"; then
        itest_ok "--read $MODE: the pack answers as --root: $(wc -l <"$ITEST_DIR/pack-$MODE.txt") lines"
    else
        itest_not_ok "--read $MODE: the pack answers otherwise than --root:
$(diff "$ITEST_DIR/root-$MODE.txt" "$ITEST_DIR/pack-$MODE.txt" | head -20)"
    fi
    check_eq "--read $MODE: big.bin whole, byte for byte" \
        "$(curl -s "${ALICE[@]}" "$S1/files/big.bin" | cmp - "$TREE/big.bin" && echo same)" same
    etag=$(curl -s -I "${ALICE[@]}" "$S1/files/sub/c.txt" | tr -d '\r' |
        awk 'tolower($1) == "etag:" { print $2 }')
    check_eq "--read $MODE: If-None-Match with its ETag: 304" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" -H "If-None-Match: $etag" \
            "$S1/files/sub/c.txt")" 304
    check_eq "--read $MODE: Last-Modified is the file's mtime" \
        "$(curl -s -I "${ALICE[@]}" "$S1/files/sub/c.txt" | tr -d '\r' |
            awk -F': ' 'tolower($1) == "last-modified" { print $2 }')" \
        "Fri, 02 Jan 2026 03:04:05 GMT"
    check_eq "--read $MODE: a PUT over a packed file is the operator's: 403" \
        "$(printf 'up' | curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" -T - \
            "$S1/files/a.txt")" 403
    check_eq "--read $MODE: a PUT over a packed directory: 409" \
        "$(printf 'up' | curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" -T - \
            "$S1/files/sub")" 409
    reads=$(curl -s "$S1_METRICS" | awk '$1 == "server1_reads_async_total" { print $2 }')
    if [[ $MODE == direct ]]; then
        # the survey's GETs and 206s of the 8 files with bytes (24), but big.bin's GET (more
        # than a response buffer: streamed in chunks) and the 416s of two 1-byte files
        check_eq "--read direct: the pack's files read without stopping a thread" "$reads" 21
    else
        check_eq "--read buffered: no O_DIRECT reads" "$reads" 0
    fi
    stop_s1 "--pack, --read $MODE"
done

# --read-depth 0: each read stops its thread; the same answers
ROOT=$ITEST_DIR/empty-direct
start_s1 s1-pack-depth0 --read direct --read-depth 0 --pack "$PACK"
survey "$S1_PORT" >"$ITEST_DIR/pack-depth0.txt"
check_ok "--read-depth 0: the same answers" cmp -s "$ITEST_DIR/pack-direct.txt" \
    "$ITEST_DIR/pack-depth0.txt"
check_eq "--read-depth 0: none read asynchronously" \
    "$(curl -s "$S1_METRICS" | awk '$1 == "server1_reads_async_total" { print $2 }')" 0
check_ok "--read-depth 0: in the config line" grep -q 'read-depth=0' "$ITEST_DIR/s1-pack-depth0.log"
stop_s1 "--read-depth 0"
out=$(timeout 10 "$S1_BIN" --root "$ROOT" --pack "$PACK" --read-depth 4097 2>&1) && rc=0 || rc=$?
check_ok "--read-depth 4097 refused (exit $rc)" test "$rc" -eq 2
check_ok "  ... naming the flag and its bound" grep -q -- '--read-depth.*0\.\.4096' <<<"$out"

ROOT=$ITEST_DIR/empty-w
mkdir -p "$ROOT"
start_s1 s1-pack-w --pack "$PACK" --writable-root
check_eq "--writable-root: PUT over the packed a.txt: 204" \
    "$(printf 'uploaded' | curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" -T - \
        "$S1/files/a.txt")" 204
check_eq "... and the upload wins" "$(curl -s "${ALICE[@]}" "$S1/files/a.txt")" uploaded
check_eq "DELETE the packed sub/c.txt: 204" \
    "$(curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" -X DELETE "$S1/files/sub/c.txt")" 204
check_eq "... then GET: 404" \
    "$(curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" "$S1/files/sub/c.txt")" 404
check_eq "... and the listing shows the upload, not the deleted file" \
    "$(listing "$S1/files/" | grep a.txt; listing "$S1/files/sub/" | grep -c c.txt || true)" \
    "$(printf 'f a.txt 8 %s\n0' "$(curl -s "${ALICE[@]}" "$S1/files/" | python3 -c '
import json, sys
print([e["mtime"] for e in json.load(sys.stdin)["entries"] if e["name"] == "a.txt"][0])')")"
stop_s1 "--pack --writable-root"

# damage: a flipped data byte (verify), a flipped index byte, a cut, garbage (start refused)
BAD=$ITEST_DIR/bad.pack
flip() { # flip FILE OFFSET: one byte inverted
    python3 -c '
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}
cp "$PACK" "$BAD"
flip "$BAD" $((4096 + 1)) # a.txt's second byte (the first file in path order)
rc=0
"$S1PACK" verify "$BAD" >"$ITEST_DIR/verify.out" 2>&1 || rc=$?
check_eq "s1pack verify: a flipped data byte: exit 1" "$rc" 1
check_eq "... naming the file" "$(grep -c "'a.txt' is damaged: CRC-32" "$ITEST_DIR/verify.out")" 1

# refused PACK WANT: server1 --pack PACK exits 2 with a message that has WANT
refused() {
    local desc=$1 pack=$2 want=$3 rc=0
    ROOT=$ITEST_DIR/empty-bad
    mkdir -p "$ROOT"
    timeout 20 "$S1_BIN" --port 0 --root "$ROOT" --auth "127.0.0.1:$FAKE_PORT" \
        --auth-secret-file "$LINK_SECRET" --pack "$pack" >"$ITEST_DIR/refused.log" 2>&1 || rc=$?
    check_eq "$desc: exit 2" "$rc" 2
    check_eq "$desc: says '$want'" "$(grep -c -- "$want" "$ITEST_DIR/refused.log")" 1
}
size=$(stat -c %s "$PACK")
cp "$PACK" "$BAD"
flip "$BAD" $((size - 3))
refused "a flipped index byte" "$BAD" "damaged pack index: its checksum does not match"
cp "$PACK" "$BAD"
truncate -s $((size - 100)) "$BAD"
refused "a truncated pack" "$BAD" "truncated or grown"
head -c 100000 /dev/urandom >"$BAD"
refused "garbage" "$BAD" "not a pack"
cp "$PACK" "$BAD"
flip "$BAD" 8
refused "another version" "$BAD" "pack version"
refused "no such file" "$ITEST_DIR/none.pack" "cannot open pack"
rc=0
"$S1_BIN" --root "$TREE" --auth 127.0.0.1:1 --insecure-no-secret --pack "$PACK" --prefetch \
    >/dev/null 2>&1 || rc=$?
check_eq "--pack with --prefetch: exit 2" "$rc" 2

itest_summary
