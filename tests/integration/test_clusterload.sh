#!/usr/bin/env bash
# scripts/clusterload.py report on made-up journals (no servers): a failed request belongs to
# the last kill or restart before its end, so one in flight at a kill that fails after it counts
# toward that kill, not toward the period before; a window starts at the first failed request's
# start, or at the kill or restart if that request was already in flight; a window over its
# target makes the report exit 1. And `run`/`verify` refuse an https:// URL without --cacert,
# --cacert without one, a CA file with no certificate, and a scheme other than http and https.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init clusterload
itest_timeout 30
require_cmd python3
LOAD=$ITEST_ROOT/scripts/clusterload.py
J=$ITEST_DIR/lg.journal

# faults: server1 killed at 10 s, started at 13 s; server2 killed at 20 s, started at 23 s
cat >"$ITEST_DIR/faults" <<EOF
server1 10000 13000 13100 2000
server2 20000 23000 23100 2000
EOF
# journal: START END KIND RESULT USER; one answered request every 100 ms from 0 to 30 s
python3 -c '
for t in range(0, 30000, 100):
    print("%d.0 %d.0 get 200 -" % (t, t + 5))
' >"$J.ok"
report() { # report FAILURES...: the report's output over the answered requests plus these
    { cat "$J.ok"; printf '%s\n' "$@"; } | sort -n >"$J"
    python3 "$LOAD" report --faults "$ITEST_DIR/faults" "$J"
}
line() { grep -F "$1" <<<"$out" || true; }

out=$(report "5000.0 5010.0 get reset -" \
    "9990.0 10050.0 new reset u1" \
    "10100.0 11500.0 new 503 u2" \
    "12990.0 13200.0 get timeout -" \
    "19950.0 20100.0 new reset u3") && rc=0 || rc=$?
printf '%s\n' "$out"
check_eq "the report passes" "$rc" 0
check_eq "before the first fault: the failure that ended before the kill" \
    "$(line 'before the first fault')" \
    "load: 305 requests from 1 journals, 5 failed; before the first fault: 1 failed (get reset x1)"
check_eq "server1: in flight at the kill and failed after it, counted toward the kill" \
    "$(line 'server1 error window')" \
    "server1 error window = 1500 ms (restart 200 ms; target 2000 ms)"
check_eq "... with the failure that ended after the restart in the restart's period" \
    "$(grep -A2 '^fault 1' <<<"$out" | tail -2)" \
    "  failed after the kill:    2 (new 503 x1, new reset x1)
  failed after the restart: 1 (get timeout x1)"
check_eq "server2: the request in flight at its kill counts toward it, not server1's restart" \
    "$(line 'server2 error window')" \
    "server2 error window = 100 ms (restart 0 ms; target 2000 ms)"

out=$(report "19990.0 22500.0 new timeout u4") && rc=0 || rc=$?
check_eq "a window over its target: exit 1" "$rc" 1
check_eq "... the window measured from the kill" "$(line 'server2 error window')" \
    "server2 error window = 2500 ms (restart 0 ms; target 2000 ms)"

# the URL and its CA, refused before anything starts
refusal() { # refusal ARGS...: clusterload.py verify ARGS fails, printing its one line
    local out rc=0
    out=$(python3 "$LOAD" verify --seed-file "$J" "$@" "$J" 2>&1) || rc=$?
    printf '%s (exit %s)' "$out" "$rc"
}
check_eq "an https:// URL without --cacert: refused" "$(refusal --url https://127.0.0.1:1)" \
    "clusterload: an https:// --url needs --cacert (exit 1)"
check_eq "--cacert with an http:// URL: refused" \
    "$(refusal --url http://127.0.0.1:1 --cacert "$J")" \
    "clusterload: --cacert goes with an https:// --url (exit 1)"
check_ok "a --cacert that holds no certificate: refused, naming it" \
    grep -q "^clusterload: --cacert $J: " <<<"$(refusal --url https://127.0.0.1:1 --cacert "$J")"
check_eq "another scheme: refused" "$(refusal --url ftp://127.0.0.1:1)" \
    "clusterload: --url must be http[s]://HOST:PORT, not 'ftp://127.0.0.1:1' (exit 1)"
itest_summary
