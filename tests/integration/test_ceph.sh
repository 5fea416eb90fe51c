#!/usr/bin/env bash
# scripts/ceph.sh: a throw-away Ceph cluster (one monitor, one manager, three OSDs on BlueStore
# files) that comes up with the pool s1 (3 copies, min_size 2) and a key for it alone; an
# object written with that key reads back whole, also after an OSD is killed (2 copies left:
# writes go on) and after the whole cluster is stopped and started again on its data; the key
# cannot write another pool or change the cluster; scripts/bench-rados.sh measures it (one
# short round) and leaves no object; and stop leaves no daemon, whatever CEPH_OSDS says. Bad
# counts, a bad port, another OSD count on the cluster's data, a taken monitor port and a
# foreign directory are refused with the reason, leaving nothing running.
# itest-sanitizers: no (none of the project's programs take part)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init ceph
itest_timeout 420
require_cmd ceph ceph-mon ceph-osd ceph-mgr rados python3
CEPH=$ITEST_ROOT/scripts/ceph.sh
D=$ITEST_DIR/ceph
CONF=$D/ceph.conf

t0=$(now_ms)
addr=$(itest_ceph_start ceph) || itest_fail "ceph.sh start failed"
secs=$((($(now_ms) - t0) / 1000))
log "the cluster came up in $secs s"
check_ok "start prints the monitor's address ($addr)" \
    grep -q -E '^v2:127\.0\.0\.1:[0-9]+$' <<<"$addr"
check_ok "... within the 120 s it allows itself" test "$secs" -le 120
check_eq "... again: the same address, nothing new started" "$("$CEPH" start "$D" 2>/dev/null)" \
    "$addr"
check_eq "the client keyring is the owner's alone" "$(stat -c %a "$D/ceph.client.s1.keyring")" 600
check_eq "... and so is the admin's" "$(stat -c %a "$D/ceph.client.admin.keyring")" 600
admin() { timeout 60 ceph -c "$CONF" "$@"; }
check_eq "pool s1: size 3" "$(admin osd pool get s1 size)" "size: 3"
check_eq "... min_size 2" "$(admin osd pool get s1 min_size)" "min_size: 2"
check_eq "... three OSDs up and in" \
    "$(admin osd stat -f json | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["num_up_osds"], d["num_in_osds"])')" \
    "3 3"

# as server1 would: client.s1, its keyring found through the conf
s1() { timeout 60 rados -c "$CONF" --id s1 "$@"; }
head -c $((1 << 20)) /dev/urandom >"$ITEST_DIR/obj"
check_ok "client.s1 writes an object of 1 MiB to s1" s1 -p s1 put obj1 "$ITEST_DIR/obj"
s1 -p s1 get obj1 "$ITEST_DIR/obj.back" || true
check_ok "... and reads it back byte-exact" cmp -s "$ITEST_DIR/obj" "$ITEST_DIR/obj.back"
check_eq "... on 3 OSDs" \
    "$(admin osd map s1 obj1 -f json |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)["acting"]))')" 3
admin osd pool create other 8 8 replicated >/dev/null 2>&1
out=$(s1 -p other put x "$ITEST_DIR/obj" 2>&1) && rc=0 || rc=$?
check_ok "client.s1 cannot write another pool (exit $rc)" test "$rc" -ne 0
check_ok "... refused as not permitted" grep -q -i 'not permitted' <<<"$out"
out=$(timeout 60 ceph -c "$CONF" --id s1 osd pool create third 8 2>&1) && rc=0 || rc=$?
check_ok "... nor change the cluster (exit $rc)" test "$rc" -ne 0
check_ok "... refused for its capabilities" grep -q -i 'denied\|not permitted' <<<"$out"

# one OSD gone: 2 copies left, at min_size, so writes go on
"$CEPH" kill "$D" osd.2
check_ok "osd.2 killed: a write still succeeds" s1 -p s1 put obj2 "$ITEST_DIR/obj"
check_ok "... and the first object still reads" s1 -p s1 get obj1 "$ITEST_DIR/obj.back"
check_ok "osd.2 back: every placement group active+clean again" "$CEPH" revive "$D" osd.2

# scripts/bench-rados.sh on this cluster, one short round: a line per point, nothing left behind
BR=$ITEST_ROOT/scripts/bench-rados.sh
bash "$BR" --ceph-dir "$D" --rounds 1 --seconds 1 --sizes 4096 --conc "1 4" \
    --out "$ITEST_DIR/br" >"$ITEST_DIR/br.out" 2>&1 && rc=0 || rc=$?
check_eq "bench-rados.sh: exit status" "$rc" 0
check_eq "... a line per kind and in-flight count" \
    "$(tail -n +2 "$ITEST_DIR/br/medians.tsv" 2>/dev/null | cut -f1,3 | tr '\t\n' '  ')" \
    "write 1 rand 1 write 4 rand 4 "
# shellcheck disable=SC2016 # awk's fields
check_ok "... each with operations done and a latency" \
    awk -F'\t' 'NR > 1 && !($5 > 0 && $7 > 0) { bad = 1 } END { exit bad || NR != 5 }' \
    "$ITEST_DIR/br/medians.tsv"
check_ok "... and a report" grep -q '^| write | 4096 | 4 |' "$ITEST_DIR/br/report.md"
check_eq "... its objects removed" "$(s1 -p s1 ls | sort | tr '\n' ' ')" "obj1 obj2 "
out=$(bash "$BR" --rounds 0 2>&1) && rc=0 || rc=$?
check_ok "... --rounds 0 refused with the reason (exit $rc)" grep -q -- '--rounds' <<<"$out"
out=$(bash "$BR" --ceph-dir "$ITEST_DIR/none" 2>&1) && rc=0 || rc=$?
check_ok "... a --ceph-dir without a cluster refused (exit $rc)" grep -q 'no ceph.conf' <<<"$out"

"$CEPH" stop "$D"
check_eq "stop: no daemon of the cluster left" "$(pgrep -f -- "-c $CONF" || true)" ""
check_ok "a second stop is a no-op" "$CEPH" stop "$D"
check_eq "start again on its data: the same address" "$("$CEPH" start "$D" 2>/dev/null)" "$addr"
check_eq "... and when it returns, every placement group is active+clean (none stale)" \
    "$(admin pg stat -f json | python3 -c 'import json, sys
m = json.load(sys.stdin)
m = m.get("pg_summary", m)
print(" ".join(sorted({s["name"] for s in m["num_pg_by_state"]})))')" "active+clean"
rm -f "$ITEST_DIR/obj.back"
s1 -p s1 get obj2 "$ITEST_DIR/obj.back" || true
check_ok "... and the object written with an OSD down reads back byte-exact" \
    cmp -s "$ITEST_DIR/obj" "$ITEST_DIR/obj.back"

# the limits and the errors of a start, each refused at once with nothing started
refused() { # refused DESC WANT CMD...: CMD exits 1 saying WANT
    local desc=$1 want=$2 out rc
    shift 2
    out=$("$@" 2>&1) && rc=0 || rc=$?
    check_ok "$desc: exit 1 (${out##*$'\n'})" test "$rc" -eq 1
    check_ok "... saying why" grep -q -F -- "$want" <<<"$out"
}
refused "CEPH_OSDS=2" "3 or more" env CEPH_OSDS=2 "$CEPH" start "$ITEST_DIR/two"
refused "CEPH_OSD_GIB=0" "take counts" env CEPH_OSD_GIB=0 "$CEPH" start "$ITEST_DIR/zero"
refused "a port that is not a number" "bad port" "$CEPH" start "$ITEST_DIR/badport" 12x
refused "the running cluster asked for another port" "already running" \
    "$CEPH" start "$D" "$(($(cat "$D/port") + 1))"
# a monitor port someone else holds: the start fails on its own, says so, and stops the rest
python3 -c 'import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(300)' >"$ITEST_DIR/taken.port" &
holder=$!
itest_bg "$holder"
wait_until 10 test -s "$ITEST_DIR/taken.port" || itest_fail "no port taken to test with"
refused "a monitor port that is taken" "the monitor does not answer" \
    "$CEPH" start "$ITEST_DIR/taken" "$(<"$ITEST_DIR/taken.port")"
check_eq "... and nothing of it left running" \
    "$(pgrep -f -- "$ITEST_DIR/taken/ceph.conf" || true)" ""
kill "$holder"

refused "kill of a daemon it has not" "no daemon 'osd.9'" "$CEPH" kill "$D" osd.9
mkdir -p "$ITEST_DIR/notceph" && touch "$ITEST_DIR/notceph/x"
refused "start in a directory holding something else" "holds no cluster" \
    "$CEPH" start "$ITEST_DIR/notceph"
check_eq "... and nothing started there" "$(pgrep -f -- "$ITEST_DIR/notceph" || true)" ""
refused "another OSD count asked of the cluster's data" "holds a cluster of 3 OSDs" \
    env CEPH_OSDS=4 "$CEPH" start "$D"
# a stop goes by the count the cluster was made with, whatever CEPH_OSDS says
CEPH_OSDS=2 "$CEPH" stop "$D"
check_eq "a stop with CEPH_OSDS=2 leaves no daemon of the 3-OSD cluster" \
    "$(pgrep -f -- "-c $CONF" || true)" ""
itest_summary
