#!/usr/bin/env bash
# Runs every tests/integration/test_*.sh (each with a hard timeout); prints one closing line.
# BIN_DIR names the build whose programs are tested (default build/release).
set -euo pipefail
cd "$(dirname "$0")/.."
export BIN_DIR=${BIN_DIR:-build/release}
BIN_DIR=$(cd "$BIN_DIR" && pwd)
pass=0
fail=0
failed=()
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    [ -z "${ITEST_ONLY:-}" ] || [[ "$t" == *"$ITEST_ONLY"* ]] || continue
    echo "== $t"
    start=$(date +%s)
    if timeout -k 10 "${ITEST_TIMEOUT:-600}" bash "$t"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("$t")
    fi
    echo "== $t: $(($(date +%s) - start)) s"
done
[ "$fail" -eq 0 ] || echo "integration: failed: ${failed[*]}" >&2
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
