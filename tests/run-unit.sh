#!/usr/bin/env bash
# Runs every unit test binary in the given build directory (BUILD_DIR/tests/PROGRAM/test_MODULE,
# from tests/unit/PROGRAM/test_MODULE.c); prints one closing line.
set -euo pipefail
dir=${1:?usage: run-unit.sh BUILD_DIR}
pass=0
fail=0
failed=()
for t in "$dir"/tests/*/test_*; do
    [ -x "$t" ] || continue
    if "$t"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("${t#"$dir"/tests/}")
    fi
done
[ "$fail" -eq 0 ] || echo "unit: failed: ${failed[*]}" >&2
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
