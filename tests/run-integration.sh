#!/usr/bin/env bash
# Runs every tests/integration/test_*.sh (each with a hard timeout); prints one closing line.
# BIN_DIR names the build whose programs are tested (default build/release).
# Then, unless ITEST_HTTPS=0, the tests that carry the line "# itest-https: yes" run again with
# ITEST_TLS=1: server1 over HTTPS, every client with it (tests/integration/lib.sh); each is
# counted in the closing line, its lines marked "(https)". ITEST_HTTPS=only: that pass alone.
# Against a sanitizer build (server1 --version names -fsanitize), the tests that carry the line
# "# itest-sanitizers: no (why)" do not run: several hosts, a Ceph cluster, the soak and the
# reproduction, whose own code paths the plain pass and the other tests already cover, and
# whose minutes would double under a sanitizer. The closing line names them. Tests see
# ITEST_SANITIZED=1 then, and may run fewer repeats of one path (test_server2: each backend and
# each process model once, not each pair).
set -euo pipefail
cd "$(dirname "$0")/.."
export BIN_DIR=${BIN_DIR:-build/release}
BIN_DIR=$(cd "$BIN_DIR" && pwd)
# one MariaDB data dir installed for the whole run, copied by each test's first start
# (scripts/mysql.sh, MYSQL_TEMPLATE)
template_dir=$(mktemp -d "${TMPDIR:-/tmp}/itest-mysql-template.XXXXXX")
trap 'rm -rf "$template_dir"' EXIT
export MYSQL_TEMPLATE=$template_dir/data
pass=0
fail=0
failed=()
https=()
skipped=()
sanitized=0
! "$BIN_DIR/server1" --version | grep -q 'cflags:.*-fsanitize' || sanitized=1
export ITEST_SANITIZED=$sanitized
# run TEST TAG [ENV...]: one test under its timeout, counted
run() {
    local t=$1 tag=$2 start
    shift 2
    echo "== $t$tag"
    start=$(date +%s)
    if env "$@" timeout -k 10 "${ITEST_TIMEOUT:-600}" bash "$t"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("$t$tag")
    fi
    echo "== $t$tag: $(($(date +%s) - start)) s"
}
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    [ "${ITEST_HTTPS:-1}" != only ] || break
    [ -z "${ITEST_ONLY:-}" ] || [[ "$t" == *"$ITEST_ONLY"* ]] || continue
    if [ "$sanitized" = 1 ] && grep -q '^# itest-sanitizers: no' "$t"; then
        echo "== $t: not in a sanitizer pass"
        skipped+=("${t##*/}")
        continue
    fi
    run "$t" "" ITEST_TLS=0
done
if [ "${ITEST_HTTPS:-1}" != 0 ]; then
    for t in tests/integration/test_*.sh; do
        [ -f "$t" ] || continue
        [ -z "${ITEST_ONLY:-}" ] || [[ "$t" == *"$ITEST_ONLY"* ]] || continue
        grep -q '^# itest-https: yes' "$t" || continue
        run "$t" " (https)" ITEST_TLS=1
        https+=("${t##*/}")
    done
fi
[ "$fail" -eq 0 ] || echo "integration: failed: ${failed[*]}" >&2
echo "integration: over HTTPS too: ${https[*]:-none}"
[ "$sanitized" = 0 ] || echo "integration: not run under the sanitizer: ${skipped[*]:-none}"
echo "integration: $pass passed, $fail failed (${#https[@]} of them over HTTPS)"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
