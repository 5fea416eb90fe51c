#!/usr/bin/env bash
# GET /files/ and /files/DIR/: the listing of what a user may read, as JSON (the default) and as
# an HTML page (Accept: text/html), in each read mode (the prefetch table, or the directory on
# disk) with the uploads: an upload stands for an operator's file of its name, a deletion hides
# it, --private-uploads hides other accounts' uploads, --max-list cuts the listing short and
# says so, and its "next" (?after=) pages on through the whole listing; --list-limit answers
# an account's listings beyond it 429 + Retry-After, only once its credentials are accepted;
# credentials as for a GET; names a client cannot ask for (the upload store, a control
# character, a symlink out of the root) are never listed; headless Chromium, with Basic
# credentials in the URL, shows the HTML pages of /files/ and /files/sub/ in the default read
# mode (its DOM dump has the names) and takes a screenshot of /files/ (a PNG). Runs against
# fake_server2.py.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init listing
itest_timeout 300
require_cmd curl python3 chromium
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

# the operator's files, copied afresh for each mode
TEMPLATE=$ITEST_DIR/template
mkdir -p "$TEMPLATE/sub/deep" "$TEMPLATE/empty-dir"
printf 'abc' >"$TEMPLATE/a.txt"
head -c 1000 /dev/zero >"$TEMPLATE/b.bin"
printf 'hello' >"$TEMPLATE/sp ace&<x>.txt"
printf 'c' >"$TEMPLATE/sub/c.txt"
printf 'dd' >"$TEMPLATE/sub/deep/d.txt"
printf 'x' >"$TEMPLATE/ctl"$'\x01'".txt"
ln -s /etc "$TEMPLATE/out"
ln -s sub "$TEMPLATE/in"
touch -h -d '2026-01-02 03:04:05 UTC' "$TEMPLATE"/* "$TEMPLATE"/sub/* "$TEMPLATE"/sub/deep/*
ALICE=(-u alice:secret)
VICTIM=(-u victim:secret)

# ls_json PATH [CURL ARGS]: the listing as lines "d NAME" / "f NAME SIZE", then "truncated=..."
ls_json() {
    local path=$1
    shift
    curl -s "$@" "$S1/files/$path" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for e in d["entries"]:
    print(("d " + e["name"]) if e["type"] == "directory" else "f %s %d" % (e["name"], e["size"]))
print("truncated=%s" % d["truncated"])'
}
lines() { printf '%s\n' "$@"; }
# browse ARGS... URL: headless Chromium with ARGS (--dump-dom, --screenshot=FILE), a fresh
# profile each time and no traffic of its own (updates, sync, QUIC); its stderr in chromium.err
browse() {
    local profile rc=0
    profile=$(mktemp -d "$ITEST_DIR/chromium.XXXXXX")
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        ${ITEST_CHROMIUM_TLS:+"$ITEST_CHROMIUM_TLS"} --user-data-dir="$profile" "$@" \
        2>>"$ITEST_DIR/chromium.err" || rc=$?
    rm -rf "$profile"
    return "$rc"
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# moved CURL-ARGS...: "STATUS LOCATION" (the Location header as sent; empty without one)
moved() {
    curl -s -o /dev/null -D - "$@" | tr -d '\r' |
        awk 'NR == 1 { s = $2 } tolower($1) == "location:" { l = $2 } END { print s, l }'
}
# put TEXT NAME CURL-ARGS...: the status of a PUT of TEXT (from a file: curl sends stdin chunked)
put() {
    local text=$1 name=$2
    shift 2
    printf '%s' "$text" >"$ITEST_DIR/body"
    code "$@" -T "$ITEST_DIR/body" "$S1/files/$name"
}

start_fake 0
for MODE in prefetch direct buffered; do
    ROOT=$ITEST_DIR/root-$MODE
    cp -a "$TEMPLATE" "$ROOT"
    case $MODE in
    prefetch) args=(--prefetch) ;;
    *) args=(--read "$MODE") ;;
    esac
    start_s1 "s1-$MODE" "${args[@]}" --writable-root --private-uploads
    log "$MODE"
    # the prefetch table knows files only: a directory is listed when a file lies beneath it,
    # and it has no symlinked directories; on disk the directories themselves are read
    if [[ $MODE == prefetch ]]; then
        dirs=("d sub")
    else
        dirs=("d empty-dir" "d in" "d sub")
    fi
    check_eq "$MODE: /files/ as JSON: directories first, then files, by name" \
        "$(ls_json "" "${ALICE[@]}")" \
        "$(lines "${dirs[@]}" "f a.txt 3" "f b.bin 1000" "f sp ace&<x>.txt 5" truncated=False)"
    check_eq "$MODE: /files/sub/" "$(ls_json sub/ "${ALICE[@]}")" \
        "$(lines "d deep" "f c.txt 1" truncated=False)"
    check_eq "$MODE: a modification time in RFC 3339" \
        "$(curl -s "${ALICE[@]}" "$S1/files/sub/deep/" | python3 -c '
import json, sys; print(json.load(sys.stdin)["entries"][0]["mtime"])')" 2026-01-02T03:04:05Z
    check_eq "$MODE: href percent-encoded" "$(curl -s "${ALICE[@]}" "$S1/files/" |
        python3 -c '
import json, sys
print([e["href"] for e in json.load(sys.stdin)["entries"] if e["name"].startswith("sp")][0])')" \
        "sp%20ace%26%3Cx%3E.txt"
    check_eq "$MODE: ... which a GET takes" \
        "$(curl -s "${ALICE[@]}" "$S1/files/sp%20ace%26%3Cx%3E.txt")" hello

    # uploads: new names, a new directory, one standing for an operator's file, a deletion
    check_eq "$MODE: PUT sub/up.txt" "$(put 'upload' sub/up.txt "${ALICE[@]}")" 201
    check_eq "$MODE: PUT new/x/y.txt" "$(put 'y' new/x/y.txt "${ALICE[@]}")" 201
    check_eq "$MODE: PUT over the operator's b.bin" "$(put '12345' b.bin "${ALICE[@]}")" 204
    check_eq "$MODE: DELETE the operator's a.txt" \
        "$(code "${ALICE[@]}" -X DELETE "$S1/files/a.txt")" 204
    check_eq "$MODE: victim's upload sub/mine.txt" "$(put 'v' sub/mine.txt "${VICTIM[@]}")" 201
    check_eq "$MODE: victim's upload over the operator's sub/c.txt" \
        "$(put 'vv' sub/c.txt "${VICTIM[@]}")" 204
    check_eq "$MODE: /files/ with the uploads: b.bin once, at its new size; a.txt gone" \
        "$(ls_json "" "${ALICE[@]}")" \
        "$(lines "${dirs[@]:0:$((${#dirs[@]} - 1))}" "d new" "d sub" "f b.bin 5" \
            "f sp ace&<x>.txt 5" truncated=False)"
    check_eq "$MODE: /files/sub/ for alice: not victim's (--private-uploads)" \
        "$(ls_json sub/ "${ALICE[@]}")" "$(lines "d deep" "f up.txt 6" truncated=False)"
    check_eq "$MODE: ... for victim: hers, not alice's" "$(ls_json sub/ "${VICTIM[@]}")" \
        "$(lines "d deep" "f c.txt 2" "f mine.txt 1" truncated=False)"
    check_eq "$MODE: /files/new/ (only uploads beneath it)" "$(ls_json new/ "${ALICE[@]}")" \
        "$(lines "d x" truncated=False)"
    check_eq "$MODE: /files/new/x/ for alice" "$(ls_json new/x/ "${ALICE[@]}")" \
        "$(lines "f y.txt 1" truncated=False)"
    check_eq "$MODE: ... for victim, who sees nothing beneath it: 404, as a GET of y.txt" \
        "$(code "${VICTIM[@]}" "$S1/files/new/x/")" 404

    # a directory's name without its '/': 301 to the listing, as nginx does (Location relative)
    check_eq "$MODE: GET /files/sub: 301 to sub/" "$(moved "${ALICE[@]}" "$S1/files/sub")" \
        "301 sub/"
    check_eq "$MODE: HEAD /files/sub: the same" "$(moved "${ALICE[@]}" -I "$S1/files/sub")" \
        "301 sub/"
    check_eq "$MODE: GET /files/sub/deep: 301 to deep/" \
        "$(moved "${ALICE[@]}" "$S1/files/sub/deep")" "301 deep/"
    if [[ $MODE == prefetch ]]; then # no file beneath it: as its listing, 404
        check_eq "$MODE: GET /files/empty-dir: 404" "$(moved "${ALICE[@]}" "$S1/files/empty-dir")" \
            "404 "
    else
        check_eq "$MODE: GET /files/empty-dir: 301" "$(moved "${ALICE[@]}" "$S1/files/empty-dir")" \
            "301 empty-dir/"
    fi
    check_eq "$MODE: GET /files/new/x (only uploads beneath it): 301 to x/" \
        "$(moved "${ALICE[@]}" "$S1/files/new/x")" "301 x/"
    check_eq "$MODE: ... for victim, who sees nothing beneath it: 404" \
        "$(moved "${VICTIM[@]}" "$S1/files/new/x")" "404 "
    check_eq "$MODE: PUT dir x/z.txt" "$(put 'z' 'dir%20x/z.txt' "${ALICE[@]}")" 201
    check_eq "$MODE: GET /files/dir%20x: the Location percent-encoded" \
        "$(moved "${ALICE[@]}" "$S1/files/dir%20x")" "301 dir%20x/"
    check_eq "$MODE: curl -L /files/sub lands on the listing" \
        "$(curl -s -L "${ALICE[@]}" "$S1/files/sub" | python3 -c '
import json, sys; print(json.load(sys.stdin)["path"])')" /files/sub/
    check_eq "$MODE: no credentials: 401, not 301" "$(code "$S1/files/sub")" 401
    check_eq "$MODE: DELETE dir x/z.txt" "$(code "${ALICE[@]}" -X DELETE "$S1/files/dir%20x/z.txt")" \
        204
    check_eq "$MODE: ... then /files/dir%20x is no directory: 404" \
        "$(moved "${ALICE[@]}" "$S1/files/dir%20x")" "404 "

    # refusals
    check_eq "$MODE: no credentials: 401" "$(code "$S1/files/")" 401
    check_eq "$MODE: a wrong password: 401" "$(code -u alice:wrong "$S1/files/sub/")" 401
    check_eq "$MODE: no such directory: 404" "$(code "${ALICE[@]}" "$S1/files/nope/")" 404
    check_eq "$MODE: a file as a directory: 404" "$(code "${ALICE[@]}" "$S1/files/b.bin/")" 404
    check_eq "$MODE: a symlink out of the root: 404" "$(code "${ALICE[@]}" "$S1/files/out/")" 404
    check_eq "$MODE: the upload store: 404" "$(code "${ALICE[@]}" "$S1/files/.s1store/")" 404
    check_eq "$MODE: an empty segment: 404" "$(code "${ALICE[@]}" "$S1/files/sub//")" 404
    check_eq "$MODE: POST to a listing: 405" "$(code "${ALICE[@]}" -X POST "$S1/files/")" 405

    # HTML for a browser's Accept
    curl -s -D "$ITEST_DIR/h.head" -o "$ITEST_DIR/h.html" "${ALICE[@]}" \
        -H 'Accept: text/html,application/xhtml+xml,*/*;q=0.8' "$S1/files/"
    check_ok "$MODE: Accept: text/html gets text/html" \
        grep -qi '^Content-Type: text/html; charset=utf-8' "$ITEST_DIR/h.head"
    check_ok "$MODE: ... Vary: Accept" grep -qi '^Vary: Accept' "$ITEST_DIR/h.head"
    check_ok "$MODE: ... the names escaped" \
        grep -qF '<a href="sp%20ace%26%3Cx%3E.txt">sp ace&amp;&lt;x&gt;.txt</a>' "$ITEST_DIR/h.html"
    check_eq "$MODE: Accept: application/json, text/html;q=0.5 gets JSON" \
        "$(curl -s -o /dev/null -w '%{content_type}' "${ALICE[@]}" \
            -H 'Accept: application/json, text/html;q=0.5' "$S1/files/")" application/json
    check_eq "$MODE: HEAD: 200, no body" "$(curl -s -I -o /dev/null -w '%{http_code}' \
        "${ALICE[@]}" "$S1/files/")" 200
    # a browser: the page it builds from /files/ and /files/sub/, credentials in the URL; in
    # the default mode only: the HTML is the same in every mode (curl's checks above)
    if [[ $MODE != direct ]]; then
        stop_s1 "$MODE"
        continue
    fi
    base="${S1%%://*}://alice:secret@127.0.0.1:$S1_PORT/files"
    browse --dump-dom "$base/" >"$ITEST_DIR/dom-root.html" || true
    check_ok "$MODE: Chromium shows /files/ with its names" \
        python3 -c '
import sys
dom = open(sys.argv[1]).read()
want = ["Index of /files/", ">new/</a>", ">b.bin</a>",
        "<a href=\"sp%20ace%26%3Cx%3E.txt\">sp ace&amp;&lt;x&gt;.txt</a>"]
want += [">%s/</a>" % d for d in sys.argv[2:]]
missing = [w for w in want if w not in dom]
sys.exit(0 if not missing and ">a.txt</a>" not in dom else "missing: %s" % missing)' \
        "$ITEST_DIR/dom-root.html" "${dirs[@]#d }"
    browse --dump-dom "$base/sub/" >"$ITEST_DIR/dom.html" || true
    check_ok "$MODE: Chromium shows /files/sub/ with its names" \
        python3 -c '
import sys
dom = open(sys.argv[1]).read()
want = [">deep/</a>", ">up.txt</a>", "Index of /files/sub/"]
sys.exit(0 if all(w in dom for w in want) and ">mine.txt</a>" not in dom else 1)' \
        "$ITEST_DIR/dom.html"
    png=$ITEST_DIR/files-$MODE.png
    rm -f "$png"
    browse --window-size=1024,768 --screenshot="$png" "$base/" >/dev/null || true
    check_ok "$MODE: Chromium's screenshot of /files/ is a non-empty PNG" \
        python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
sys.exit(0 if b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) > 1000 else 1)' "$png"
    stop_s1 "$MODE"
done

# --max-list: the first N of the order, and the listing says it was cut
ROOT=$ITEST_DIR/root-buffered
start_s1 s1-max --read buffered --max-list 3
check_eq "--max-list 3: three entries, truncated" "$(ls_json "" "${ALICE[@]}")" \
    "$(lines "d empty-dir" "d in" "d new" truncated=True)"
check_ok "--max-list 3: the HTML page says so, with a link to the next" \
    grep -q 'Only 3 entries are shown: <a href="?after=new%2F">next</a>' \
    <(curl -s "${ALICE[@]}" -H 'Accept: text/html' "$S1/files/")
# the pages, each from the "next" of the one before, make the whole listing
pages=$(python3 - "$S1" <<'EOF'
import base64, json, sys, urllib.request
base, auth = sys.argv[1], base64.b64encode(b"alice:secret").decode()
def get(q):
    req = urllib.request.Request(base + "/files/" + q, headers={"Authorization": "Basic " + auth})
    return json.load(urllib.request.urlopen(req))
seen, q, n = [], "", 0
while n < 20:
    d = get(q)
    n += 1
    seen += [("d " if e["type"] == "directory" else "f ") + e["name"] for e in d["entries"]]
    if not d["truncated"]:
        break
    q = d["next"]
print(n, "|".join(seen))
EOF
)
all=$(ls_json "" "${ALICE[@]}" --max-time 10 -G -d after=zzzzzzzz%2F | tail -n 1)
check_eq "  ... past the last directory: the files only" "$all" truncated=False
check_eq "--max-list 3: pages by \"next\" until the end" "$pages" \
    "2 d empty-dir|d in|d new|d sub|f b.bin|f sp ace&<x>.txt"
check_eq "?after= that cannot be a name: 400" "$(code "${ALICE[@]}" "$S1/files/?after=a%2Fb")" 400
check_eq "without --private-uploads victim sees alice's uploads" \
    "$(ls_json new/x/ "${VICTIM[@]}")" "$(lines "f y.txt 1" truncated=False)"
stop_s1 "--max-list server"

# --list-limit: listings per account, once its credentials are accepted
start_s1 s1-listlimit --read buffered --list-limit 3/1m
for i in 1 2 3; do
    check_eq "--list-limit 3/1m: alice's listing $i: 200" "$(code "${ALICE[@]}" "$S1/files/")" 200
done
hdr=$(curl -s -D - -o /dev/null "${ALICE[@]}" "$S1/files/sub/" | tr -d '\r')
check_eq "  ... her fourth: 429" "$(awk 'NR==1{print $2}' <<<"$hdr")" 429
retry=$(awk -F': ' 'tolower($1)=="retry-after"{print $2}' <<<"$hdr")
check_ok "  ... with Retry-After of about a token's 20 s ($retry)" test "${retry:-0}" -ge 1 -a "${retry:-0}" -le 20
check_eq "  ... a file is still served to her" "$(code "${ALICE[@]}" "$S1/files/b.bin")" 200
check_eq "  ... victim lists: 200" "$(code "${VICTIM[@]}" "$S1/files/")" 200
check_eq "wrong credentials as victim: 401, and nothing taken" \
    "$(code -u victim:wrong "$S1/files/")$(code -u victim:wrong "$S1/files/")$(code -u victim:wrong "$S1/files/")" 401401401
check_eq "  ... victim's second and third: 200" \
    "$(code "${VICTIM[@]}" "$S1/files/")$(code "${VICTIM[@]}" "$S1/files/")" 200200
check_eq "server1_ratelimited_total{kind=\"list\"}" \
    "$(curl -s "$S1_METRICS" | awk '$1=="server1_ratelimited_total{kind=\"list\"}"{print $2}')" 1
stop_s1 "--list-limit server"
check_eq "--max-list 0 is refused" "$("$S1_BIN" --root "$ROOT" --max-list 0 2>&1 >/dev/null |
    grep -c -- '--max-list')" 1
itest_summary
