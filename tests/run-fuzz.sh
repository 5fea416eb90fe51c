#!/usr/bin/env bash
# tests/run-fuzz.sh BIN_DIR SECONDS: runs every libFuzzer target in BIN_DIR (fuzz_*) for SECONDS
# each, starting from its committed seeds (tests/fuzz/corpus/NAME) plus what earlier runs found
# (build/fuzz/corpus/NAME, not committed). Prints executions and executions per second per
# target and one closing line; a crash, leak or sanitizer report fails the target, and the
# input that caused it is kept as build/fuzz/crash-NAME-* (commit it to the seeds once fixed).
# FUZZ_ONLY=NAME runs only the targets whose name holds NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=${1:?usage: run-fuzz.sh BIN_DIR SECONDS}
secs=${2:?usage: run-fuzz.sh BIN_DIR SECONDS}
pass=0
fail=0
failed=()
for bin in "$bin_dir"/fuzz_*; do
    [[ -x $bin ]] || continue
    name=$(basename "$bin")
    name=${name#fuzz_}
    [[ -z ${FUZZ_ONLY:-} || $name == *"$FUZZ_ONLY"* ]] || continue
    seeds=tests/fuzz/corpus/$name
    work=build/fuzz/corpus/$name
    log=build/fuzz/$name.log
    mkdir -p "$work" "$seeds"
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/crash-$name-" "$work" "$seeds" >"$log" 2>&1; then
        pass=$((pass + 1))
        verdict=ok
    else
        fail=$((fail + 1))
        failed+=("$name")
        verdict=FAILED
    fi
    execs=$(awk '/stat::number_of_executed_units:/{print $2}' "$log")
    rate=$(awk '/stat::average_exec_per_sec:/{print $2}' "$log")
    printf 'fuzz %-14s %s: %s executions in %s s, %s/s, corpus %s inputs\n' "$name" "$verdict" \
        "${execs:-?}" "$secs" "${rate:-?}" "$(find "$work" -type f | wc -l)"
    if [[ $verdict == FAILED ]]; then
        grep -m1 -A12 -E '^==[0-9]+==ERROR|runtime error|deadly signal' "$log" >&2 || tail -20 "$log" >&2
    fi
done
[[ $fail -eq 0 ]] || echo "fuzz: failed: ${failed[*]}" >&2
echo "fuzz: $pass passed, $fail failed"
[[ $fail -eq 0 && $pass -gt 0 ]]
