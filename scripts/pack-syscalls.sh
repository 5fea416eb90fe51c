#!/usr/bin/env bash
# scripts/pack-syscalls.sh PACK [N]: the read-side syscalls server1 --pack makes per GET
# (docs/pack.md). Starts fake_server2.py and server1 (one worker, --auth-cache so that after the
# first request no credential check goes to server2) under strace, sends one GET to warm up,
# then N (default 100) GETs of the first N names of the pack over one keep-alive connection,
# in --read buffered and --read direct, and prints how many pread64, read, openat, sendfile and
# stat calls server1 made per GET, by syscall and descriptor (sendfile: the socket's; pread64:
# the pack's; a read is a worker's wake-up eventfd). Needs strace and curl. KEEP=1 keeps the
# run dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/scripts/lib.sh"
pack=$(realpath "${1:?usage: pack-syscalls.sh PACK [N]}")
n=${2:-100}
bin=${BIN_DIR:-$here/build/release}
require_cmd strace curl python3
work=$(mktemp -d "${TMPDIR:-/tmp}/pack-syscalls.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
head -c 32 /dev/urandom >"$work/secret"
chmod 600 "$work/secret"
python3 "$here/tests/integration/fake_server2.py" --port 0 --secret-file "$work/secret" \
    >"$work/fake.log" 2>&1 &
pids+=($!)
wait_until 10 grep -q 'listening on ' "$work/fake.log" || die "fake server2 did not start"
fport=$(grep -m1 -o 'listening on [^ ]*' "$work/fake.log")
fport=${fport##*:}
mapfile -t names < <("$bin/s1pack" ls "$pack" | head -n "$n" | python3 -c '
import sys, urllib.parse
for line in sys.stdin:
    print(urllib.parse.quote(line.rstrip("\n")))')
((${#names[@]} > 0)) || die "no names in $pack"
syscalls=pread64,read,openat,sendfile,fstat,newfstatat,statx
# bodies_after TRACE MARK N: at least N sendfile or pread64 calls in TRACE after line MARK
bodies_after() {
    (($(tail -n +"$(($2 + 1))" "$1" | grep -cE '^[0-9]+ +(sendfile|pread64)\(') >= $3))
}
for mode in buffered direct; do
    mkdir -p "$work/root-$mode"
    strace -f -qq -e trace="$syscalls" -o "$work/strace-$mode" \
        "$bin/server1" --port 0 --threads 1 --root "$work/root-$mode" --read-only \
        --auth "127.0.0.1:$fport" --auth-secret-file "$work/secret" --auth-cache 1000 \
        --pack "$pack" --read "$mode" >"$work/s1-$mode.log" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_until 30 grep -q 'listening on ' "$work/s1-$mode.log" || die "server1 did not start"
    port=$(grep -m1 -o 'listening on [^ ]*' "$work/s1-$mode.log")
    port=${port##*:}
    url=http://127.0.0.1:$port/files
    curl -s -o /dev/null -u alice:secret "$url/${names[0]}"
    # the warm-up's read of the file in the trace before the mark, the N reads after it
    wait_until 20 bodies_after "$work/strace-$mode" 0 1 || die "$mode: the warm-up GET's read is not in the trace"
    mark=$(wc -l <"$work/strace-$mode")
    args=()
    for name in "${names[@]}"; do args+=(-o /dev/null "$url/$name"); done
    curl -s -u alice:secret "${args[@]}"
    wait_until 20 bodies_after "$work/strace-$mode" "$mark" "${#names[@]}" ||
        die "$mode: fewer than ${#names[@]} reads of a body in the trace after the GETs"
    kill "$(pgrep -P "$spid")" # server1, traced: strace exits with it
    wait "$spid" 2>/dev/null || true
    tail -n +"$((mark + 1))" "$work/strace-$mode" | grep -v 'exited with\|killed by' |
        sed -E 's/^[0-9]+ +//; s/^([a-z0-9_]+\([A-Z_0-9]*).*/\1)/' | sort | uniq -c |
        awk -v n="${#names[@]}" -v mode="$mode" '
            { printf "%s: %-10s %6d calls, %.2f per GET\n", mode, $2, $1, $1 / n }'
done
