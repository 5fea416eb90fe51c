#!/usr/bin/env bash
# server1 as a file server for the clients people use: byte ranges (206, 416, If-Range) and
# conditional requests (304, 412) on every body source - prefetched memory, O_DIRECT reads (whole
# and streamed), the page cache with sendfile, and the upload store (0 bytes, 1 byte, over
# 1 MiB) - checked byte for byte with Python's urllib (tests/integration/rangecheck.py: every
# range edge case, and the headers of every 200 and 206: Content-Type, for a .html file too,
# nosniff, Date, Accept-Ranges, ETag, Last-Modified); If-Range with a date after the file
# changed twice within one second (an upload, an operator's file rewritten in place or renamed
# into place): the whole new version, never its end after the old one's start, while a date that
# names the file still gets 206; then resuming a download with `curl -C -`
# and `wget -c`, `curl -z` (If-Modified-Since) getting 304, and the same ETag for a file whether
# it is prefetched or read per request, and a range of an upload that is replaced while it is
# being read finishing on the version it started with; then the preconditions of PUT and DELETE
# (If-Match, If-None-Match: *, If-Unmodified-Since: 412) with the ETags the uploads get, kept
# across a restart. Runs against fake_server2.py.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init file_http
itest_timeout 300
require_cmd curl wget python3 cmp
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
: >"$ROOT/empty.bin"
printf 'x' >"$ROOT/one.bin"
head -c 4097 /dev/urandom >"$ROOT/f4097.bin"
head -c $((3 * 1048576 + 123)) /dev/urandom >"$ROOT/big.bin"
printf '<!doctype html><title>t</title><p>%04096d</p>\n' 0 >"$ROOT/page.html"
head -c 5000 /dev/urandom >"$ROOT/data.qqq" # an extension no table knows
head -c $((1048576 + 5)) /dev/urandom >"$ITEST_DIR/upload.bin"
: >"$ITEST_DIR/upload0.bin"
printf 'y' >"$ITEST_DIR/upload1.bin"
touch -d '2026-01-02 03:04:05 UTC' "$ROOT"/* # (ctime now: their dates are weak validators)
head -c 3000 /dev/urandom >"$ROOT/fresh.bin"  # modified and in place within one second
made=$(date +%s)
# a Last-Modified is sent once its second is over when the file is read: for --prefetch, at load
# shellcheck disable=SC2317  # called through wait_until
after_second() { (($(date +%s) > $1)); }
wait_until 5 after_second "$made" || itest_fail "the clock did not move on"
AUTH=(-u alice:secret)

# rangecheck NAME FILE [FLAGS]: every case of rangecheck.py, each as one line of this test;
# every 200 and 206 also with the headers of a file's answer (Content-Type: --type TYPE, or
# application/octet-stream). rangecheck NAME - splice [ROOT_FILE]: its If-Range date cases.
rangecheck() {
    local name=$1 file=$2 line args
    shift 2
    args=("$S1/files/$name" alice secret "$file" "$@")
    [[ ${1:-} == splice ]] && args=(splice "$S1/files/$name" alice secret "${@:2}")
    while IFS= read -r line; do
        case $line in
        "ok - "*) itest_ok "$MODE $name: ${line#ok - }" ;;
        "# "*) log "$MODE $name: ${line#\# }" ;;
        *) itest_not_ok "$MODE $name: ${line#FAIL - }" ;;
        esac
    done < <(python3 "$HERE/rangecheck.py" "${args[@]}" 2>&1)
}

declare -A ETAG
start_fake 0
for MODE in prefetch direct buffered; do
    case $MODE in
    prefetch) start_s1 "s1-$MODE" --prefetch ;;
    *) start_s1 "s1-$MODE" --read "$MODE" ;;
    esac
    log "$MODE"
    for f in empty.bin one.bin f4097.bin big.bin data.qqq; do
        rangecheck "$f" "$ROOT/$f" --weak-date
    done
    rangecheck page.html "$ROOT/page.html" --type text/html --weak-date
    rangecheck fresh.bin "$ROOT/fresh.bin"
    # the upload store's edges too: 0 bytes, 1 byte, and over 1 MiB (all put first: each gets
    # its Last-Modified once the second of its version is over)
    for up in upload0 upload1 upload; do
        check_eq "$MODE: PUT $up.bin" "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
            -T "$ITEST_DIR/$up.bin" "$S1/files/$up-$MODE.bin")" 201
    done
    check_eq "$MODE: PUT an HTML upload" "$(curl -s -o /dev/null -w '%{http_code}' \
        "${AUTH[@]}" -T "$ROOT/page.html" "$S1/files/up-$MODE.html")" 201
    for up in upload0 upload1 upload; do
        rangecheck "$up-$MODE.bin" "$ITEST_DIR/$up.bin"
    done
    rangecheck "up-$MODE.html" "$ROOT/page.html" --type text/html
    # If-Range with a date after two versions within one second: of an upload, and (read per
    # request) of an operator's file
    rangecheck "splice-$MODE.bin" "$ITEST_DIR/none" splice
    if [[ $MODE != prefetch ]]; then
        rangecheck "sp-$MODE.bin" "$ITEST_DIR/none" splice "$ROOT/sp-$MODE.bin"
    fi

    # a range of an upload being replaced finishes on the version it started with
    head -c $((8 * 1048576)) /dev/urandom >"$ITEST_DIR/v1.bin"
    head -c $((8 * 1048576)) /dev/urandom >"$ITEST_DIR/v2.bin"
    curl -s -o /dev/null "${AUTH[@]}" -T "$ITEST_DIR/v1.bin" "$S1/files/swap-$MODE.bin"
    rm -f "$ITEST_DIR/started" "$ITEST_DIR/go"
    python3 "$HERE/s1client.py" pausedget "$S1_PORT" alice secret "swap-$MODE.bin" \
        "$ITEST_DIR/slow.out" "$ITEST_DIR/started" "$ITEST_DIR/go" 1000-7000999 \
        >"$ITEST_DIR/slow.status" 2>&1 &
    SLOW=$!
    wait_until 20 test -e "$ITEST_DIR/started" || itest_not_ok "$MODE: the slow range did not start"
    check_eq "$MODE: replaced while a range of it is being read" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -T "$ITEST_DIR/v2.bin" \
            "$S1/files/swap-$MODE.bin")" 204
    touch "$ITEST_DIR/go"
    wait "$SLOW" || true
    check_eq "$MODE: ... the range got 206" "$(cat "$ITEST_DIR/slow.status")" 206
    dd if="$ITEST_DIR/v1.bin" of="$ITEST_DIR/v1.slice" bs=1000 skip=1 count=7000 status=none
    check_ok "$MODE: ... all of it from the version it started with" \
        cmp -s "$ITEST_DIR/slow.out" "$ITEST_DIR/v1.slice"
    check_ok "$MODE: ... and the next GET has the new one" \
        cmp -s <(curl -s "${AUTH[@]}" "$S1/files/swap-$MODE.bin") "$ITEST_DIR/v2.bin"
    ETAG[$MODE]=$(curl -s -D - -o /dev/null "${AUTH[@]}" "$S1/files/big.bin" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="etag"{print $2}')
    # the condition fields kept per request: two lines of a list are one list; at most 1 KiB of
    # values (HV_MAX), beyond which a list is unreadable: never a 304 from it
    et=${ETAG[$MODE]}
    check_eq "$MODE: If-None-Match on two lines, the second with its ETag: 304" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H 'If-None-Match: "a"' \
            -H "If-None-Match: $et" "$S1/files/big.bin")" 304
    tags=$(printf '"%016d", ' $(seq 1 40)) # 40 x 20 bytes
    check_eq "$MODE: If-None-Match of $((${#tags} + ${#et})) bytes with its ETag: 304" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H "If-None-Match: $tags$et" \
            "$S1/files/big.bin")" 304
    tags=$(printf '"%016d", ' $(seq 1 52)) # 52 x 20 bytes: over 1 KiB
    check_eq "$MODE: If-None-Match of $((${#tags} + ${#et})) bytes (over 1 KiB): 200" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H "If-None-Match: $tags$et" \
            "$S1/files/big.bin")" 200
    check_eq "$MODE: If-Match of over 1 KiB: 412" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H "If-Match: $tags$et" \
            "$S1/files/big.bin")" 412
    check_eq "$MODE: Range on two lines: the whole file, 200" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H 'Range: bytes=0-0' \
            -H 'Range: bytes=1-1' "$S1/files/big.bin")" 200

    # resuming: a download cut after 1 MiB, finished by the client
    head -c 1048576 "$ROOT/big.bin" >"$ITEST_DIR/curl-part"
    curl -s "${AUTH[@]}" -C - -o "$ITEST_DIR/curl-part" "$S1/files/big.bin"
    check_ok "$MODE: curl -C - resumes byte-exact" cmp -s "$ITEST_DIR/curl-part" "$ROOT/big.bin"
    head -c 777777 "$ROOT/big.bin" >"$ITEST_DIR/big.bin"
    (cd "$ITEST_DIR" && wget -q -c --user alice --password secret "$S1/files/big.bin")
    check_ok "$MODE: wget -c resumes byte-exact" cmp -s "$ITEST_DIR/big.bin" "$ROOT/big.bin"
    rm -f "$ITEST_DIR/big.bin"
    touch -d '2026-01-02 03:04:05 UTC' "$ITEST_DIR/have.bin"
    check_eq "$MODE: curl -z FILE (as new as the server's): 304" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -z "$ITEST_DIR/have.bin" \
            "$S1/files/big.bin")" 304
    touch -d '2025-01-01 00:00:00 UTC' "$ITEST_DIR/have.bin"
    check_eq "$MODE: curl -z FILE (older): 200" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -z "$ITEST_DIR/have.bin" \
            "$S1/files/big.bin")" 200
    check_eq "$MODE: a Range without credentials: 401" \
        "$(curl -s -o /dev/null -w '%{http_code}' -r 0-0 "$S1/files/big.bin")" 401
    check_eq "$MODE: a Range of a missing file: 404" \
        "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -r 0-0 "$S1/files/nope")" 404
    m=$(python3 "$HERE/s1client.py" metrics "$S1_METRICS_PORT" \
        'server1_requests_total{route="files",status="206"}' \
        'server1_requests_total{route="files",status="304"}')
    check_ok "$MODE: 206 and 304 counted in /metrics" \
        test "$(sed -n 2p <<<"$m")" -gt 0 -a "$(sed -n 3p <<<"$m")" -gt 0
    stop_s1 "$MODE"
done
check_ok "the same ETag prefetched or read per request (${ETAG[prefetch]})" \
    test -n "${ETAG[prefetch]}" -a "${ETAG[prefetch]}" == "${ETAG[direct]}" \
    -a "${ETAG[direct]}" == "${ETAG[buffered]}"

# ---- preconditions of PUT and DELETE (RFC 9110 13.1, 13.2) ----
# put NAME FILE [CURL ARGS]: the status of a PUT, its response's ETag in $ITEST_DIR/put.etag
put() {
    local name=$1 file=$2
    shift 2
    curl -s -o /dev/null -D "$ITEST_DIR/put.head" -w '%{http_code}' "${AUTH[@]}" -T "$file" \
        "$@" "$S1/files/$name"
    tr -d '\r' <"$ITEST_DIR/put.head" | awk -F': ' 'tolower($1)=="etag"{print $2}' \
        >"$ITEST_DIR/put.etag"
}
del() {
    local name=$1
    shift
    curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -X DELETE "$@" "$S1/files/$name"
}
etag_of() {
    curl -s -D - -o /dev/null "${AUTH[@]}" "$S1/files/$1" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="etag"{print $2}'
}
MODE=buffered
start_s1 s1-cond --read buffered --commit-window 20ms
printf 'one' >"$ITEST_DIR/c1"
printf 'two!' >"$ITEST_DIR/c2"
printf 'three' >"$ITEST_DIR/c3"
check_eq "PUT If-None-Match: * of a new name: 201" "$(put c.txt "$ITEST_DIR/c1" \
    -H 'If-None-Match: *')" 201
E1=$(cat "$ITEST_DIR/put.etag")
check_ok "... its answer has the ETag ($E1) a GET then sends" \
    test -n "$E1" -a "$E1" == "$(etag_of c.txt)"
check_eq "PUT If-None-Match: * again: 412" "$(put c.txt "$ITEST_DIR/c2" -H 'If-None-Match: *')" \
    412
check_eq "... and the file is unchanged" "$(curl -s "${AUTH[@]}" "$S1/files/c.txt")" one
check_eq "PUT If-Match: its ETag: 204" "$(put c.txt "$ITEST_DIR/c2" -H "If-Match: $E1")" 204
E2=$(cat "$ITEST_DIR/put.etag")
check_ok "... a new ETag ($E2)" test -n "$E2" -a "$E2" != "$E1" -a "$E2" == "$(etag_of c.txt)"
check_eq "PUT If-Match: the old ETag (a lost update): 412" \
    "$(put c.txt "$ITEST_DIR/c3" -H "If-Match: $E1")" 412
check_eq "... the second version stays" "$(curl -s "${AUTH[@]}" "$S1/files/c.txt")" two!
check_eq "PUT If-Match: * of an existing name: 204" "$(put c.txt "$ITEST_DIR/c2" \
    -H 'If-Match: *')" 204
E2=$(cat "$ITEST_DIR/put.etag")
check_eq "PUT If-Match: * of a missing name: 412" "$(put c-new.txt "$ITEST_DIR/c1" \
    -H 'If-Match: *')" 412
check_eq "... nothing created" "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
    "$S1/files/c-new.txt")" 404
check_eq "PUT If-Unmodified-Since 1994: 412" "$(put c.txt "$ITEST_DIR/c3" \
    -H 'If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT')" 412
check_eq "PUT If-Unmodified-Since 2050: 204" "$(put c.txt "$ITEST_DIR/c3" \
    -H 'If-Unmodified-Since: Sun, 06 Nov 2050 08:49:37 GMT')" 204
E3=$(cat "$ITEST_DIR/put.etag")
check_eq "PUT with a malformed If-Match: 412" "$(put c.txt "$ITEST_DIR/c1" \
    -H 'If-Match: nope')" 412
check_eq "DELETE If-Match: an old ETag: 412" "$(del c.txt -H "If-Match: $E2")" 412
check_eq "... the file stays" "$(curl -s "${AUTH[@]}" "$S1/files/c.txt")" three
# DELETE If-Unmodified-Since (13.1.4): a date before the Last-Modified refuses, at or after lets
printf 'to delete' >"$ITEST_DIR/d1"
check_eq "PUT d.txt: 201" "$(put d.txt "$ITEST_DIR/d1")" 201
lm_of() {
    curl -s -D - -o /dev/null "${AUTH[@]}" "$S1/files/$1" | tr -d '\r' |
        awk -F': ' 'tolower($1)=="last-modified"{print $2}'
}
# (sent once the second it names is over)
# shellcheck disable=SC2317  # called through wait_until
has_lm() { [[ -n $(lm_of "$1") ]]; }
wait_until 5 has_lm d.txt || itest_not_ok "d.txt: no Last-Modified"
LM=$(lm_of d.txt)
BEFORE=$(LC_ALL=C date -u -d "@$(($(date -u -d "$LM" +%s) - 1))" '+%a, %d %b %Y %H:%M:%S GMT')
check_eq "DELETE If-Unmodified-Since 1994: 412" \
    "$(del d.txt -H 'If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT')" 412
check_eq "DELETE If-Unmodified-Since a second before its Last-Modified ($BEFORE): 412" \
    "$(del d.txt -H "If-Unmodified-Since: $BEFORE")" 412
check_eq "... nothing deleted" "$(curl -s "${AUTH[@]}" "$S1/files/d.txt")" "to delete"
check_eq "DELETE If-Unmodified-Since its Last-Modified ($LM): 204" \
    "$(del d.txt -H "If-Unmodified-Since: $LM")" 204
check_eq "... gone" "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
    "$S1/files/d.txt")" 404
check_eq "PUT d.txt again: 201" "$(put d.txt "$ITEST_DIR/d1")" 201
check_eq "DELETE If-Unmodified-Since 2050: 204" \
    "$(del d.txt -H 'If-Unmodified-Since: Sun, 06 Nov 2050 08:49:37 GMT')" 204
check_eq "... gone" "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
    "$S1/files/d.txt")" 404
check_eq "PUT of an operator's file with its own ETag: still 403 (owner first)" \
    "$(put f4097.bin "$ITEST_DIR/c1" -H "If-Match: $(etag_of f4097.bin)")" 403
check_eq "DELETE If-Match of a missing name: 404 (not 412)" \
    "$(del c-none.txt -H 'If-Match: "x"')" 404
# two creators at once (one batch): exactly one wins
racers=()
for i in 1 2; do
    put race.txt "$ITEST_DIR/c$i" -H 'If-None-Match: *' >"$ITEST_DIR/race$i" &
    racers+=($!)
done
wait "${racers[@]}" || true
check_eq "two PUTs If-None-Match: * at once: one 201, one 412" \
    "$(sort "$ITEST_DIR/race1" "$ITEST_DIR/race2" | tr '\n' ' ')" "201 412 "
stop_s1 "precondition server"
start_s1 s1-cond2 --read buffered
check_eq "after a restart an upload keeps its ETag" "$(etag_of c.txt)" "$E3"
check_eq "... If-None-Match with it: 304" "$(curl -s -o /dev/null -w '%{http_code}' \
    "${AUTH[@]}" -H "If-None-Match: $E3" "$S1/files/c.txt")" 304
check_eq "DELETE If-Match: its ETag: 204" "$(del c.txt -H "If-Match: $E3")" 204
check_eq "... gone" "$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
    "$S1/files/c.txt")" 404
stop_s1 "restarted precondition server"
itest_summary
