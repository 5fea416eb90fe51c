#!/usr/bin/env bash
# The flush-by-flush replay (tests/crash/flushreplay.py), short version: server1's upload store
# on ext4 and on XFS over a disk that records every write and flush (tests/crash/flushlog, a
# FUSE file under a loop device), 3 s of uploads, overwrites and deletes from 4 clients, then
# the disk replayed to 20 flush marks spread over the load, each mounted and served by server1:
# every upload acknowledged before a mark is there, whole (lost = 0, corrupt = 0, no mark that
# does not mount or start). Then the checker itself is checked: judging each mark 300 ms later
# than it came, it must report uploads lost. After each run no mount, loop device or process
# of it is left. Under a sanitizer build (its --version's cflags) 8 marks of 2 s on each, to
# keep the sanitizer passes short. The long version, 400 marks of 20 s of
# load: `make flush-replay`. Needs root, FUSE and loop devices: without them it says
# "skipped: ..." and passes.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init flush_replay
itest_timeout 400
require_cmd python3

REPLAY=$ITEST_ROOT/tests/crash/flushreplay.py

# replay NAME ARGS...: run the harness; stdout in $ITEST_DIR/NAME.out, stderr in NAME.log;
# sets RC and LINE (the last stdout line)
replay() {
    local name=$1
    shift
    RC=0
    python3 "$REPLAY" --bin-dir "$BIN_DIR" --workdir "$ITEST_DIR/$name" "$@" \
        >"$ITEST_DIR/$name.out" 2>"$ITEST_DIR/$name.log" || RC=$?
    LINE=$(tail -n 1 "$ITEST_DIR/$name.out")
    log "$name: exit $RC: $LINE"
}

SECS=3 MARKS=20
if "$BIN_DIR/server1" --version | grep -q 'cflags:.*-fsanitize'; then
    SECS=2 MARKS=8
fi

# field NAME: the number after NAME in "fs F, marks M of N checked, writes acknowledged A, ..."
field() { sed -nE "s/.*$1 ([0-9]+).*/\1/p" <<<"$LINE"; }

# nothing of the run left: no mount under its dir, no loop device over its files, no process
left_behind() {
    local d=$ITEST_DIR/$1
    { grep -F " $d" /proc/mounts || true; losetup -a | grep -F "$d" || true
        pgrep -af -- "$d" || true; } | head -n 3
}

replay ext4 --fs ext4 --seconds "$SECS" --marks "$MARKS"
if ((RC == 3)); then
    log "skipped: $(tail -n 1 "$ITEST_DIR/ext4.log")"
    itest_ok "skipped: the machine cannot run the replay (see the line above)"
    itest_summary
fi
for fs in ext4 xfs; do
    if [[ $fs == xfs ]]; then
        replay xfs --fs xfs --seconds "$SECS" --marks "$MARKS"
    fi
    check_eq "$fs: harness exit status" "$RC" 0
    check_eq "$fs: lost" "$(field lost)" 0
    check_eq "$fs: corrupt" "$(field corrupt)" 0
    check_eq "$fs: marks that did not mount or serve" "$(field 'failed marks')" 0
    checked=$(sed -nE 's/.*, marks ([0-9]+) of [0-9]+ checked.*/\1/p' <<<"$LINE")
    if ((${checked:-0} >= MARKS && $(field 'writes acknowledged' || echo 0) > 0)); then
        itest_ok "$fs: $checked marks checked, $(field 'writes acknowledged') writes acknowledged"
    else
        itest_not_ok "$fs: too few marks or nothing acknowledged: '$LINE'"
    fi
    check_eq "$fs: mounts, loop devices, processes left" "$(left_behind "$fs")" ""
done

replay skew --fs ext4 --seconds 2 --marks 5 --skew-ms 300
check_eq "checker: exit status when marks are judged 300 ms late" "$RC" 1
if (($(field lost || echo 0) > 0)); then
    itest_ok "checker: judged 300 ms late, $(field lost) acknowledged uploads are missing"
else
    itest_not_ok "checker: nothing reported lost when judged late: '$LINE'"
fi
check_eq "checker: mounts, loop devices, processes left" "$(left_behind skew)" ""
itest_summary
