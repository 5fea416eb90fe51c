#!/usr/bin/env bash
# --config FILE for server1 and server2 (about 3 s): a throw-away Redis, server2 with its
# backend, secret and workers from a file, server1 with its port, root, threads and link from a
# file and one flag on the command line that overrides the file's; an account made and a file
# fetched through them; the settings each logs at start are the file's (and the flag's); a file
# with an unknown key, or a setting without its value, stops the start with exit 2 and one line
# naming FILE:LINE.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init config
itest_timeout 60
require_cmd redis-server curl
: "${BIN_DIR:=$ITEST_ROOT/build/release}"

itest_redis_shared r
R=$(itest_redis_start r)
head -c 32 /dev/urandom >"$ITEST_DIR/link.secret"
chmod 600 "$ITEST_DIR/link.secret"
mkdir -p "$ITEST_DIR/root"
echo "from the root" >"$ITEST_DIR/root/a.txt"

cat >"$ITEST_DIR/s2.conf" <<CONF
# server2, as a service would run it
port = 0
backend = redis://127.0.0.1:$R
backend-password-file = $ITEST_DIR/r/password
secret-file   $ITEST_DIR/link.secret
workers 1
hash-cost min
CONF
"$BIN_DIR/server2" --config "$ITEST_DIR/s2.conf" >"$ITEST_DIR/s2.log" 2>&1 &
itest_bg $!
wait_until 15 grep -q 'listening on ' "$ITEST_DIR/s2.log" || itest_fail "server2 did not start"
S2=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/s2.log")
check_ok "server2: the file's workers" grep -q ' workers=1\b' "$ITEST_DIR/s2.log"

cat >"$ITEST_DIR/s1.conf" <<CONF
port 0
root = $ITEST_DIR/root
auth = 127.0.0.1:${S2##*:}
auth-secret-file = $ITEST_DIR/link.secret
threads = 3
prefetch
signup-limit 0
CONF
"$BIN_DIR/server1" --config "$ITEST_DIR/s1.conf" --threads 1 >"$ITEST_DIR/s1.log" 2>&1 &
itest_bg $!
wait_until 15 grep -q 'listening on ' "$ITEST_DIR/s1.log" || itest_fail "server1 did not start"
S1=$(grep -m1 -o 'listening on [^ ]*' "$ITEST_DIR/s1.log")
S1=http://${S1#listening on }
check_ok "server1: the file's read mode" grep -q ' files=prefetch ' "$ITEST_DIR/s1.log"
check_ok "server1: --threads 1 on the command line overrides the file's 3" \
    grep -q ' threads=1 ' "$ITEST_DIR/s1.log"
check_eq "an account through both" \
    "$(curl -s -o /dev/null -w '%{http_code}' --data 'username=conf&password=s3cret-pw' "$S1/users")" 201
check_eq "a file with it" "$(curl -s -u conf:s3cret-pw "$S1/files/a.txt")" "from the root"

printf 'port 0\nthreds 2\n' >"$ITEST_DIR/bad.conf"
rc=0
"$BIN_DIR/server1" --config "$ITEST_DIR/bad.conf" >"$ITEST_DIR/bad.log" 2>&1 || rc=$?
check_eq "an unknown key: exit 2" "$rc" 2
check_eq "... and one line naming the file and line" "$(cat "$ITEST_DIR/bad.log")" \
    "server1: --config $ITEST_DIR/bad.conf:2: unknown key 'threds'"
printf 'backend\n' >"$ITEST_DIR/bad.conf"
rc=0
"$BIN_DIR/server2" --config "$ITEST_DIR/bad.conf" >"$ITEST_DIR/bad.log" 2>&1 || rc=$?
check_eq "server2, a setting without its value: exit 2" "$rc" 2
check_ok "... said" grep -q "bad.conf:1: backend needs a value" "$ITEST_DIR/bad.log"
itest_summary
