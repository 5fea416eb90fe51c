#!/usr/bin/env bash
# server1 --pack (docs/pack.md): a pack built by s1pack from a small tree (nested directories,
# names with a space and UTF-8, an empty file, a file over 1 MiB, a name server1 does not serve)
# answers GET, HEAD, Range, If-None-Match and listings with the same bytes and codes as
# server1 --root on the same tree, under --read direct and --read buffered; uploads and
# deletions win over packed names (and a PUT over one is the operator's file's 403 without
# --writable-root, as with --root); s1pack verify passes on the pack and fails on a flipped
# byte; a pack with a damaged index, a truncated one and garbage are refused at start with
# exit 2 and a clear message. Runs against fake_server2.py.
# itest-https: yes
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
# answers PATH CURL-ARGS...: status, body digest and the headers that must agree
answers() {
    local path=$1
    shift
    curl -s -D "$ITEST_DIR/h" -o "$ITEST_DIR/b" "${ALICE[@]}" "$@" "$S1/files/$path" >/dev/null
    [[ " $* " == *" -I "* ]] && : >"$ITEST_DIR/b" # (curl -I writes the head there)
    printf '%s %s ' "$(head -1 "$ITEST_DIR/h" | tr -d '\r' | cut -d' ' -f2)" \
        "$(sha256sum <"$ITEST_DIR/b" | cut -c1-16)"
    tr -d '\r' <"$ITEST_DIR/h" | grep -iE '^(content-length|content-type|content-range|accept-ranges):' |
        tr '[:upper:]' '[:lower:]' | sort | tr '\n' ' '
}
# listing PATH: "d NAME" / "f NAME SIZE MTIME" lines, directories without time
listing() {
    curl -s "${ALICE[@]}" "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for e in d["entries"]:
    print(("d " + e["name"]) if e["type"] == "directory" else
          "f %s %d %s" % (e["name"], e["size"], e.get("mtime")))
print("truncated=%s" % d["truncated"])' 2>/dev/null || echo "no listing (not JSON)"
}
# survey: every answer that must be the same from the tree and from the pack
survey() {
    local n d
    for n in "${NAMES[@]}"; do
        echo "GET $n: $(answers "$n")"
        echo "HEAD $n: $(answers "$n" -I)"
        echo "Range 1-10 $n: $(answers "$n" -r 1-10)"
        echo "Range -3 $n: $(answers "$n" -r -3)"
        echo "Range 2000000- $n: $(answers "$n" -r 2000000-)"
    done
    for n in "${ABSENT[@]}"; do
        echo "GET absent $n: $(answers "$n")"
    done
    echo "GET sub (a directory): $(curl -s -o /dev/null -D - "${ALICE[@]}" "$S1/files/sub" |
        tr -d '\r' | awk 'NR == 1 { s = $2 } tolower($1) == "location:" { l = $2 }
            END { print s, l }')"
    for d in "${DIRS[@]}"; do
        echo "list /files/$d:"
        listing "$S1/files/$d"
    done
    echo "list /files/nope/: $(curl -s -o /dev/null -w '%{http_code}' "${ALICE[@]}" \
        "$S1/files/nope/")"
}

for MODE in direct buffered; do
    ROOT=$ITEST_DIR/root-$MODE
    cp -a "$TREE" "$ROOT"
    start_s1 "s1-root-$MODE" --read "$MODE"
    survey >"$ITEST_DIR/root-$MODE.txt"
    stop_s1 "--root, --read $MODE"

    ROOT=$ITEST_DIR/empty-$MODE # the upload store only
    mkdir -p "$ROOT"
    start_s1 "s1-pack-$MODE" --read "$MODE" --pack "$PACK"
    survey >"$ITEST_DIR/pack-$MODE.txt"
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
    stop_s1 "--pack, --read $MODE"
done

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
