#!/usr/bin/env bash
# make install and the systemd units (about 10 s): `make install DESTDIR=... PREFIX=/usr`
# puts exactly the expected files, whose programs answer --version and --help; a config file
# the administrator changed is kept by install and uninstall, which removes everything else.
# Installed to a temporary PREFIX, the units pass `systemd-analyze verify` and rate "OK" or
# better in `systemd-analyze security` (both skipped, saying so, without systemd-analyze).
# Then each server runs with its unit's own ExecStart line (%d: a credentials directory made
# here, as systemd's LoadCredential= would) and the installed config file, under a stand-in
# for systemd's notification socket (notify_sink.py): READY=1 comes first, once the port
# answers; an account is made through both (the credentials work) and a file uploaded into
# the root, a symlink as systemd's StateDirectory= makes it; server1 answers SIGHUP
# with RELOADING=1 (MONOTONIC_USEC) then READY=1; server2, which reloads nothing, logs
# SIGHUP and keeps running, in threads and in processes mode; SIGTERM: STOPPING=1, exit 0.
# No unit is ever started: no systemctl, no systemd-run.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init systemd
itest_timeout 120
require_cmd redis-server curl python3 make
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
D=$ITEST_DIR
SINK=$ITEST_ROOT/tests/integration/notify_sink.py

# `make install` builds (nothing, when up to date) and installs build/VARIANT: BIN_DIR's.
VARIANT=$(basename "$BIN_DIR")
[[ $BIN_DIR -ef $ITEST_ROOT/build/$VARIANT ]] ||
    itest_fail "BIN_DIR ($BIN_DIR) is not a build/VARIANT of $ITEST_ROOT: make install needs one"
mk() { env -u MAKEFLAGS -u MAKELEVEL make -s -C "$ITEST_ROOT" VARIANT="$VARIANT" "$@"; }

# --- make install / uninstall into a staging tree ---
stage=$D/stage
mk install DESTDIR="$stage" PREFIX=/usr >"$D/install.log" 2>&1 ||
    itest_fail "make install failed: $(tail -3 "$D/install.log")"
want="./etc/server1/server1.conf
./etc/server2/server2.conf
./usr/bin/loadgen
./usr/bin/s1pack
./usr/lib/systemd/system/server1.service
./usr/lib/systemd/system/server2.service
./usr/sbin/server1
./usr/sbin/server2
./usr/share/doc/fileserver/examples/server1.conf
./usr/share/doc/fileserver/examples/server2.conf
./usr/share/man/man1/loadgen.1
./usr/share/man/man1/s1pack.1
./usr/share/man/man1/server1.1
./usr/share/man/man1/server2.1"
check_eq "install: exactly the expected files" "$(cd "$stage" && find . ! -type d | sort)" "$want"
check_ok "install: server1 is the build's" cmp -s "$BIN_DIR/server1" "$stage/usr/sbin/server1"
# shellcheck disable=SC2317  # called through check_ok
quiet() { "$@" >/dev/null; }
for p in usr/sbin/server1 usr/sbin/server2 usr/bin/loadgen; do
    check_ok "install: $p --version" quiet "$stage/$p" --version
    check_ok "install: $p --help" quiet "$stage/$p" --help
done
check_ok "install: the unit runs the installed server1 with /etc's config" \
    grep -qx 'ExecStart=/usr/sbin/server1 --config /etc/server1/server1.conf .*' \
    "$stage/usr/lib/systemd/system/server1.service"
echo "# changed by the administrator" >>"$stage/etc/server1/server1.conf"
mk install DESTDIR="$stage" PREFIX=/usr >"$D/install2.log" 2>&1 ||
    itest_fail "make install (again) failed"
check_ok "install again: a changed config file is kept" \
    grep -q '^# changed by the administrator' "$stage/etc/server1/server1.conf"
mk uninstall DESTDIR="$stage" PREFIX=/usr >"$D/uninstall.log" 2>&1 ||
    itest_fail "make uninstall failed"
check_eq "uninstall: only the changed config file is left" \
    "$(cd "$stage" && find . ! -type d | sort)" "./etc/server1/server1.conf"

# --- installed for real under a temporary PREFIX: the units' paths exist ---
mk install PREFIX="$D/usr" SYSCONFDIR="$D/etc" >"$D/install3.log" 2>&1 ||
    itest_fail "make install PREFIX=$D/usr failed"
units=$D/usr/lib/systemd/system
if command -v systemd-analyze >/dev/null; then
    check_ok "systemd-analyze verify: both units" \
        env MANPATH="$D/usr/share/man" systemd-analyze verify "$units/server1.service" \
        "$units/server2.service"
    for s in server1 server2; do
        systemd-analyze security --offline=true --no-pager "$units/$s.service" \
            >"$D/$s.security" 2>&1 || true
        level=$(sed -n "s/.*Overall exposure level for $s.service: \([0-9.]*\).*/\1/p" \
            "$D/$s.security")
        log "systemd-analyze security $s.service: exposure ${level:-?} (0 best, 10 worst)"
        check_ok "$s.service: exposure ${level:-?} is at most 2.0 (OK)" \
            awk -v l="${level:-99}" 'BEGIN { exit !(l <= 2.0) }'
    done
else
    log "systemd-analyze is absent: the units' verify and security checks are skipped"
fi

# exec_start UNIT CREDDIR: the unit's ExecStart words, %d replaced by CREDDIR, into CMD.
exec_start() {
    local line
    line=$(sed -n 's/^ExecStart=//p' "$1")
    read -ra CMD <<<"${line//%d/$2}"
    [[ ${CMD[*]} != *%* ]] || itest_fail "$1: a specifier other than %d in ExecStart: $line"
}
# start_unit NAME: NAME's ExecStart under a notification sink $D/NAME.notify; PID and the
# sink's log $D/NAME.msgs; waits for READY=1.
start_unit() {
    local name=$1 unit=$units/${1%%-*}.service
    rm -f "$D/$name.sock" "$D/$name.msgs"
    python3 "$SINK" "$D/$name.sock" "$D/$name.msgs" &
    itest_bg $!
    wait_file "$D/$name.msgs" 10 || itest_fail "$name: the notification sink did not start"
    exec_start "$unit" "$D/creds/${1%%-*}"
    NOTIFY_SOCKET=$D/$name.sock "${CMD[@]}" >"$D/$name.log" 2>&1 &
    PID=$!
    itest_bg "$PID"
    wait_until 20 grep -q 'READY=1' "$D/$name.msgs" || itest_fail "$name: no READY=1"
}
# msg NAME N: the Nth message (1-based) NAME sent, newlines as '|'.
msg() {
    python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
print(r[n - 1]["msg"].replace("\n", "|") if len(r) >= n else "")' "$D/$1.msgs" "$2"
}
nmsgs() { wc -l <"$D/$1.msgs"; }
# has_msgs NAME N: true once NAME sent N messages or more.
# shellcheck disable=SC2317  # called through wait_until
has_msgs() { (($(nmsgs "$1") >= $2)); }
# first_ready NAME: checks the first message is READY=1 from a port that answered; port in PORT.
first_ready() {
    local first
    first=$(msg "$1" 1)
    check_ok "$1: the first message is READY=1 (got '$first')" grep -q '^READY=1|' <<<"$first"
    check_ok "$1: its port answered when READY=1 came" \
        grep -q '"port_answers": true' <(head -n1 "$D/$1.msgs")
    PORT=$(sed -n 's/.*STATUS=listening on [^|]*:\([0-9]*\).*/\1/p' <<<"$first")
}
# stop_unit NAME PID: SIGTERM; STOPPING=1 is the last message and the exit status 0.
stop_unit() {
    local rc=0
    kill -TERM "$2"
    wait "$2" || rc=$?
    check_eq "$1: exit status after SIGTERM" "$rc" 0
    check_eq "$1: the last message after SIGTERM" "$(msg "$1" "$(nmsgs "$1")")" "STOPPING=1"
}

itest_redis_shared r
R=$(itest_redis_start r)
mkdir -p "$D/creds/server1" "$D/creds/server2" "$D/private/server1"
ln -s private/server1 "$D/root" # the state directory of a DynamicUser= service is a symlink
head -c 32 /dev/urandom >"$D/creds/server1/link.secret"
cp "$D/creds/server1/link.secret" "$D/creds/server2/link.secret"
cp "$D/r/password" "$D/creds/server2/db.password"
chmod 400 "$D/creds/server1/"* "$D/creds/server2/"* # as systemd leaves credentials
# the administrator's settings, in the installed config files
sed -i -e "s|^backend = .*|backend = redis://127.0.0.1:$R|" -e 's|^port = .*|port = 0|' \
    -e 's|^hash-cost = .*|hash-cost = min|' "$D/etc/server2/server2.conf"
echo "workers = 2" >>"$D/etc/server2/server2.conf"

start_unit server2
S2PID=$PID
first_ready server2
sed -i -e "s|^root = .*|root = $D/root|" -e 's|^port = .*|port = 0|' \
    -e "s|^auth = .*|auth = 127.0.0.1:$PORT|" -e 's|^metrics-listen = .*|metrics-listen = 127.0.0.1:0|' \
    "$D/etc/server1/server1.conf"
echo "threads = 2" >>"$D/etc/server1/server1.conf"

start_unit server1
S1PID=$PID
first_ready server1
check_eq "an account through both (the credentials work)" \
    "$(curl -s -o /dev/null -w '%{http_code}' --data 'username=unit&password=s3cret-pw' \
        "http://127.0.0.1:$PORT/users")" 201
echo "an upload" >"$D/upload.txt"
check_eq "an upload into the root, a symlink as systemd makes it" \
    "$(curl -s -o /dev/null -w '%{http_code}' -u unit:s3cret-pw -T "$D/upload.txt" \
        "http://127.0.0.1:$PORT/files/up.txt")" 201
check_eq "the upload read back" \
    "$(curl -s -u unit:s3cret-pw "http://127.0.0.1:$PORT/files/up.txt")" "an upload"
MPORT=$(sed -n 's|.*serving /metrics on 127.0.0.1:\([0-9]*\).*|\1|p' "$D/server1.log")
check_ok "the example config's metrics listener serves /metrics" \
    grep -q '^server1_requests_total' <<<"$(curl -s "http://127.0.0.1:${MPORT:-0}/metrics")"

n=$(nmsgs server1)
kill -HUP "$S1PID"
wait_until 10 has_msgs server1 $((n + 2)) || itest_fail "server1: no RELOADING/READY after SIGHUP"
check_ok "server1: SIGHUP: RELOADING=1 with MONOTONIC_USEC" \
    grep -Eq '^RELOADING=1\|MONOTONIC_USEC=[0-9]+$' <<<"$(msg server1 $((n + 1)))"
check_eq "server1: SIGHUP: then READY=1" "$(msg server1 $((n + 2)))" "READY=1"

n=$(nmsgs server2)
kill -HUP "$S2PID"
wait_until 10 grep -q 'SIGHUP: nothing to reload' "$D/server2.log" ||
    itest_fail "server2: SIGHUP not logged"
check_ok "server2: running after SIGHUP" pid_alive "$S2PID"
check_eq "server2: no message for a SIGHUP that reloads nothing" "$(nmsgs server2)" "$n"

stop_unit server1 "$S1PID"
stop_unit server2 "$S2PID"

# server2 in processes mode: the parent notifies, a SIGHUP leaves it and its children be
echo "mode = processes" >>"$D/etc/server2/server2.conf"
start_unit server2-processes
S2PID=$PID
first_ready server2-processes
nkids=$(pgrep -c -P "$S2PID" || true)
check_ok "server2 (processes): $nkids children" test "$nkids" -ge 1
kill -HUP "$S2PID"
wait_until 10 grep -q 'SIGHUP: nothing to reload' "$D/server2-processes.log" ||
    itest_fail "server2 (processes): SIGHUP not logged"
check_eq "server2 (processes): its children still there after SIGHUP" \
    "$(pgrep -c -P "$S2PID" || true)" "$nkids"
check_eq "server2 (processes): the messages: READY=1 alone" "$(nmsgs server2-processes)" 1
stop_unit server2-processes "$S2PID"

itest_summary
