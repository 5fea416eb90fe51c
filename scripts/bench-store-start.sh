#!/usr/bin/env bash
# bench-store-start.sh - how long server1 takes to start on a big upload store (to its
# "listening on" line), with and without the index checkpoint, and after a crash; and the
# memory (RSS) of the index. No server2 is needed: server1 listens before it asks one.
#
#   scripts/bench-store-start.sh [--files N] [--max-size B] [--after N] [--dir DIR]
#                                [--bin-dir DIR] [--keep]
#
#     --files N      uploads in the store (default 1000000), written directly by
#                    scripts/mkstore.py, of 0..B bytes (--max-size, default 64)
#     --after N      records in the log after the checkpoint for the crash case (default
#                    250000: what STORE_CKPT_RECORDS lets a crash leave, at most, besides the
#                    log written while the next checkpoint is written)
#     --dir DIR      where the store goes (default: a new dir under /var/tmp); needs about
#                    (100 + 60) bytes per upload of free space
#
# Runs: (1) the first start, no checkpoint: the whole log is replayed; SIGTERM: the stop writes
# the checkpoint (timed); (2) a start from the checkpoint, nothing after it; SIGKILL; (3) --after
# more records appended to the log (as a crash leaves them after the last checkpoint), a start
# from the checkpoint that replays them; (4) the checkpoint removed: the whole log again.
# Prints one line per start: wall ms to "listening on", CPU s, RSS MiB, the store's log line.
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FILES=1000000
MAX_SIZE=64
AFTER=250000
DIR=
BIN_DIR=$TOP/build/release
KEEP=0
while (($# > 0)); do
    case $1 in
    --files) FILES=$2; shift 2 ;;
    --max-size) MAX_SIZE=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-store-start: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [[ ! -x $BIN_DIR/server1 ]]; then
    echo "bench-store-start: no $BIN_DIR/server1 (make build)" >&2
    exit 2
fi
if [[ -z $DIR ]]; then
    DIR=$(mktemp -d /var/tmp/bench-store-start.XXXXXX)
else
    mkdir -p "$DIR"
fi
ROOT=$DIR/root
S1_PID=
log() { echo "bench-store-start: $*" >&2; }
now_ms() { date +%s%3N; }
cleanup() {
    if [[ -n $S1_PID ]]; then kill -9 "$S1_PID" 2>/dev/null || true; fi
    if ((KEEP)); then log "kept $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME: starts server1 on ROOT, waits (at most 600 s) for "listening on"; prints a line
start() {
    local name=$1 t0 ms rss cpu
    t0=$(now_ms)
    "$BIN_DIR/server1" -r "$ROOT" -p 0 --auth 127.0.0.1:9 --insecure-no-secret \
        2>"$DIR/$name.log" &
    S1_PID=$!
    while ! grep -q 'listening on' "$DIR/$name.log"; do
        kill -0 "$S1_PID" 2>/dev/null || { cat "$DIR/$name.log" >&2; exit 1; }
        (($(now_ms) - t0 < 600000)) || { log "$name: not listening after 600 s"; exit 1; }
        sleep 0.05
    done
    ms=$(($(now_ms) - t0))
    rss=$(awk '/^VmRSS:/{printf "%.1f", $2 / 1024}' "/proc/$S1_PID/status")
    cpu=$(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$S1_PID/stat")
    printf '%-22s start %6d ms  cpu %6s s  rss %7s MiB  | %s\n' "$name" "$ms" "$cpu" "$rss" \
        "$(grep -m1 -o 'store: .*' "$DIR/$name.log")"
}

# stop SIG: stops server1 with SIG, waits for it; prints how long it took
stop() {
    local t0
    t0=$(now_ms)
    kill -"$1" "$S1_PID"
    wait "$S1_PID" 2>/dev/null || true
    S1_PID=
    echo "  stopped by SIG$1 in $(($(now_ms) - t0)) ms"
}

log "$DIR: writing $FILES uploads of 0..$MAX_SIZE bytes"
t0=$(now_ms)
python3 "$TOP/scripts/mkstore.py" "$ROOT" --files "$FILES" --max-size "$MAX_SIZE" >&2
log "written in $((($(now_ms) - t0) / 1000)) s: $(du -sh "$ROOT/.s1store" | cut -f1)"
echo "== $FILES uploads ($("$BIN_DIR/server1" --version | head -1)); $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
start "1-no-checkpoint"
stop TERM
grep -m1 -o 'store: checkpoint of .* written .*' "$DIR/1-no-checkpoint.log" || true
echo "  checkpoint: $(du -h "$ROOT/.s1store/index.ckpt" | cut -f1)"
start "2-checkpoint"
stop KILL
python3 "$TOP/scripts/mkstore.py" "$ROOT" --files "$AFTER" --max-size "$MAX_SIZE" --append >&2
start "3-crash-$AFTER-after"
stop KILL
rm "$ROOT/.s1store/index.ckpt"
start "4-no-checkpoint"
stop KILL
