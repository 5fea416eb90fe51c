#!/usr/bin/env bash
# The soak test, short: scripts/soak.sh for SOAK_TEST_MINUTES (default 2) against the build
# under test. Both stacks (Redis and MariaDB) under the mixed load, every fault injected once
# or more, every acknowledged write read back before and after restarting both server1s.
# What passes is soak.sh's verdict; the lines it judges are checked here one by one, so that a
# failure says which (but its search for sanitizer reports, which only the build of `make soak
# VARIANT=asan` can give). `make soak` runs the long version (30 min).
# itest-sanitizers: no (the soak; `make soak VARIANT=asan` runs it under ASan)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init soak
minutes=${SOAK_TEST_MINUTES:-2}
itest_timeout $((minutes * 60 + 420))
require_cmd curl python3 redis-server mariadbd
: "${BIN_DIR:=$ITEST_ROOT/build/release}"

out=$ITEST_DIR/soak.out
if bash "$ITEST_ROOT/scripts/soak.sh" --minutes "$minutes" --bin-dir "$BIN_DIR" \
    --dir "$ITEST_DIR/run" --keep >"$out" 2>&1; then
    itest_ok "soak.sh: $(grep -o 'PASS: .*' "$out")"
else
    itest_not_ok "soak.sh failed: $(grep -o 'FAIL.*' "$out" | head -n 3 | tr '\n' ' ')"
fi
sed 's/^/    /' "$out"
# the verdict's parts
n=$(grep -c 'lost = 0$' "$out" || true)
check_eq "lost = 0 in both read-backs" "$n" 2
figure() { grep -o "soakload: $1: [0-9]*" "$out" | grep -o '[0-9]*$' || echo "?"; }
check_eq "answers outside every known class" "$(figure 'answers outside every known class')" 0
check_eq "wrong passwords accepted" "$(figure 'wrong passwords accepted')" 0
check_eq "bodies not what was written" "$(figure 'bodies that are not what was written')" 0
n=$(grep -o '[0-9]* faults injected' "$out" | grep -o '^[0-9]*' || echo 0)
if ((n >= 5)); then itest_ok "$n faults injected (every kind)"; else
    itest_not_ok "only ${n:-0} faults injected"; fi
if grep -q 'no process died' "$out"; then itest_ok "no process died"; else
    itest_not_ok "a process died"; fi
# soak.sh keeps its run dir (the disk image is unmounted by then): not needed after a pass
((ITEST_FAIL > 0)) || rm -rf "$ITEST_DIR/run"
itest_summary
