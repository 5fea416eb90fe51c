#!/usr/bin/env bash
# Uploads that a browser would run as the site: erin uploads an HTML page (and an SVG) whose
# script lists /files/ with the credentials carol's browser holds for the server, and marks the
# page if that worked. Headless Chromium, as carol (credentials in the URL, as test_listing.sh
# does), opens a page of the operator's that frames the operator's own copy of the script: the
# mark shows, so the script runs and its request is authorized; then one that frames erin's
# upload: no mark. (Framed, because an upload opened as the page is a download, after which
# headless Chromium often never exits; a frame has the origin the page would have.) With curl,
# every upload of an active type (HTML, SVG, XML, XHTML, XSLT, JavaScript, an +xml type, HTC)
# is served with Content-Disposition: attachment and Content-Security-Policy: sandbox, in a
# 200, a 206 and a HEAD; a passive one (.txt, .png, .pdf, .json, .css) and the operator's own
# files are served as before, unless --sandbox-root (then the operator's are too, prefetched or
# read per request); the HTML listing carries a CSP that forbids scripts, the JSON one none.
# Against fake_server2.py.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init active_uploads
itest_timeout 240
require_cmd curl python3 chromium
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"

# the types served, fixed here whatever /etc/mime.types says
TYPES=$ITEST_DIR/mime.types
cat >"$TYPES" <<'EOF'
text/html html htm
image/svg+xml svg
application/xml xml
application/xhtml+xml xhtml
application/xslt+xml xsl
text/javascript js mjs
application/rss+xml rss
text/x-component htc
text/plain txt
image/png png
application/pdf pdf
application/json json
text/css css
EOF
ACTIVE=(html htm svg xml xhtml xsl js mjs rss htc)
PASSIVE=(txt png pdf json css)

# the page: a synchronous request for /files/ (its answer is in before the DOM is dumped); the
# mark is an element only the script can add, in the page that frames it (which --dump-dom
# shows) when it may reach it - the same origin - else in its own document
cat >"$ITEST_DIR/steal.html" <<'EOF'
<!DOCTYPE html><html><head><title>photos</title></head><body><p>nice photos</p><script>
var x = new XMLHttpRequest();
x.open('GET', '/files/', false);
try { x.send(); } catch (e) {}
if (x.status === 200) {
  var d = document;
  try { d = window.parent.document; } catch (e) {}
  var p = d.createElement('p');
  p.id = 'stolen';
  p.textContent = 'listed ' + x.status;
  d.body.appendChild(p);
}
</script></body></html>
EOF
cat >"$ITEST_DIR/steal.svg" <<'EOF'
<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>
var x = new XMLHttpRequest();
x.open('GET', '/files/', false);
try { x.send(); } catch (e) {}
if (x.status === 200) {
  var d = window.parent.document;
  var p = d.createElement('p');
  p.id = 'stolen';
  p.textContent = 'listed ' + x.status;
  d.body.appendChild(p);
}
</script></svg>
EOF
cp "$ITEST_DIR/steal.html" "$ROOT/own.html"
cp "$ITEST_DIR/steal.svg" "$ROOT/own.svg"
printf 'plain\n' >"$ROOT/own.txt"
for f in own.html own.svg up.html up.svg; do
    printf '<!DOCTYPE html><html><body><p>frame</p><iframe src="%s"></iframe></body></html>\n' \
        "$f" >"$ROOT/frame-$f.html"
done
printf 'body\n' >"$ITEST_DIR/body"

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# head_of NAME [CURL ARGS]: carol's answer's header lines, names lowercased, no CR
head_of() {
    local name=$1
    shift
    curl -s -D - -o /dev/null -u carol:pw "$@" "$S1/files/$name" | tr -d '\r' |
        awk -F': ' 'NR > 1 && NF > 1 {print tolower($1) ": " $2}'
}
# shellcheck disable=SC2317  # these are called through check_ok
# guarded NAME [CURL ARGS]: 0 if the answer has both lines of the sandbox, 1 if it has neither
# (and no CSP at all), 2 otherwise
guarded() {
    local h disp csp
    h=$(head_of "$@")
    disp=$(grep -c '^content-disposition: attachment$' <<<"$h" || true)
    csp=$(grep -c "^content-security-policy: sandbox; default-src 'none'$" <<<"$h" || true)
    if ((disp == 1 && csp == 1)); then return 0; fi
    if ((disp == 0)) && ! grep -q '^content-security-policy' <<<"$h"; then return 1; fi
    return 2
}
# shellcheck disable=SC2317
is_guarded() { guarded "$@"; }
# shellcheck disable=SC2317
not_guarded() {
    local rc=0
    guarded "$@" || rc=$?
    ((rc == 1))
}
# browse URL: headless Chromium's DOM of URL, as in test_listing.sh (fresh profile, no traffic
# of its own); downloads are refused (the profile's download_restrictions: after a download
# headless Chromium often never exits), and HOME is the profile, should one start anyway
browse() {
    local profile rc=0
    profile=$(mktemp -d "$ITEST_DIR/chromium.XXXXXX")
    mkdir "$profile/Default"
    printf '{"download_restrictions": 3}\n' >"$profile/Default/Preferences"
    HOME=$profile timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync ${ITEST_CHROMIUM_TLS:+"$ITEST_CHROMIUM_TLS"} --user-data-dir="$profile" \
        --dump-dom "$1" \
        2>>"$ITEST_DIR/chromium.err" || rc=$?
    rm -rf "$profile"
    return "$rc"
}
# shellcheck disable=SC2317  # called through check_ok
# stolen FILE: the dumped DOM has the script's mark (not just the script's text)
stolen() { grep -q '<p id="stolen">listed 200</p>' "$1"; }
# shellcheck disable=SC2317
not_stolen() { ! grep -q 'id="stolen"' "$1"; }

start_fake 0
start_s1 s1-buffered --read buffered --mime-types "$TYPES"
for u in erin carol; do
    check_eq "sign up $u" "$(code -d "username=$u&password=pw" "$S1/users")" 201
done
for ext in "${ACTIVE[@]}" "${PASSIVE[@]}"; do
    cp "$ITEST_DIR/body" "$ITEST_DIR/up.$ext"
done
cp "$ITEST_DIR/steal.html" "$ITEST_DIR/up.html"
cp "$ITEST_DIR/steal.svg" "$ITEST_DIR/up.svg"
for ext in "${ACTIVE[@]}" "${PASSIVE[@]}"; do
    check_eq "erin uploads up.$ext" "$(code -u erin:pw -T "$ITEST_DIR/up.$ext" \
        "$S1/files/up.$ext")" 201
done

# the browser: the operator's page runs and lists /files/ as carol; erin's upload does not
base="${S1%%://*}://carol:pw@127.0.0.1:$S1_PORT/files"
for ext in html svg; do
    browse "$base/frame-own.$ext.html" >"$ITEST_DIR/own-$ext.dom" || true
    check_ok "Chromium: the operator's own.$ext runs its script, which lists /files/ as carol" \
        stolen "$ITEST_DIR/own-$ext.dom"
    browse "$base/frame-up.$ext.html" >"$ITEST_DIR/up-$ext.dom" || true
    check_ok "Chromium: erin's up.$ext, opened by carol, runs nothing as the site" \
        not_stolen "$ITEST_DIR/up-$ext.dom"
    check_ok "Chromium: ... in the page that frames it, which was shown" \
        grep -q '<p>frame</p>' "$ITEST_DIR/up-$ext.dom"
done

# the headers, type by type
for ext in "${ACTIVE[@]}"; do
    check_ok "up.$ext ($(grep " $ext\b" "$TYPES" | cut -d' ' -f1)): attachment, CSP sandbox" \
        is_guarded "up.$ext"
done
check_ok "... in a 206 too" is_guarded up.html -r 0-1
check_ok "... and a HEAD" is_guarded up.svg -I
check_eq "... the type and the bytes as uploaded" \
    "$(curl -s -w ' %{content_type}' -u carol:pw "$S1/files/up.xml")" "body
 application/xml"
for ext in "${PASSIVE[@]}"; do
    check_ok "up.$ext: as before (no Content-Disposition, no CSP)" not_guarded "up.$ext"
done
check_eq "up.txt: text/plain, the bytes as uploaded" \
    "$(curl -s -w ' %{content_type}' -u carol:pw "$S1/files/up.txt")" "body
 text/plain"
for f in own.html own.svg own.txt; do
    check_ok "the operator's $f: as before" not_guarded "$f"
done

# the listing, server1's own page: no script may run in it
listing_csp="content-security-policy: default-src 'none'; base-uri 'none'; form-action 'none';"
listing_csp+=" frame-ancestors 'none'"
check_ok "the HTML listing: a CSP without script" \
    grep -qxF "$listing_csp" <(head_of "" -H 'Accept: text/html')
# shellcheck disable=SC2016  # expanded by the inner bash
check_ok "the JSON listing: no CSP" bash -c '! grep -q "^content-security-policy" "$1"' _ \
    <(head_of "")
stop_s1 "buffered server"

# --sandbox-root: the operator's own active files too, from memory and per request
for mode in prefetch direct; do
    case $mode in
    prefetch) args=(--prefetch) ;;
    *) args=(--read "$mode") ;;
    esac
    start_s1 "s1-$mode" "${args[@]}" --sandbox-root --mime-types "$TYPES"
    check_ok "$mode --sandbox-root: the operator's own.html: attachment, CSP sandbox" \
        is_guarded own.html
    check_ok "$mode --sandbox-root: ... own.svg too, in a 206" is_guarded own.svg -r 0-1
    check_ok "$mode --sandbox-root: ... own.txt as before" not_guarded own.txt
    check_ok "$mode --sandbox-root: erin's up.html still" is_guarded up.html
    stop_s1 "$mode server"
done
itest_summary
