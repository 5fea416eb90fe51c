#!/usr/bin/env bash
# The crash harness (tests/crash/crash.py), short version: a mixed load of account creations,
# uploads, deletes and gets while random processes of the stack are SIGKILLed and restarted,
# then a SIGTERM round, then every acknowledged write is checked. Redis with server2 threads
# (4 rounds) and MariaDB with server2 processes (2 rounds, workers are victims too); then the
# checker itself is checked: with two acknowledged files damaged behind the stack's back it
# must report them. The long version is `make crash-test`.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init crash
itest_timeout 170
require_cmd python3

CRASH=$ITEST_ROOT/tests/crash/crash.py

# crash NAME ARGS...: run the harness; its stdout in $ITEST_DIR/NAME.out, stderr in NAME.log;
# sets RC and LINE (the last stdout line).
crash() {
    local name=$1
    shift
    RC=0
    python3 "$CRASH" --bin-dir "$BIN_DIR" --tmpdir "$ITEST_DIR" --seed "$SEED" "$@" \
        >"$ITEST_DIR/$name.out" 2>"$ITEST_DIR/$name.log" || RC=$?
    LINE=$(tail -n 1 "$ITEST_DIR/$name.out")
    log "$name: exit $RC: $LINE"
}

# field LINE NAME: the number before/after NAME in "rounds R, writes acknowledged A, ...".
field() { sed -nE "s/.*$2 ([0-9]+).*/\1/p" <<<"$1"; }

SEED=${CRASH_SEED:-$RANDOM}
log "seed $SEED (CRASH_SEED=$SEED reruns it)"

check_one() {
    local name=$1 rounds=$2 line=$LINE up
    check_eq "$name: harness exit status" "$RC" 0
    check_eq "$name: rounds" "$(field "$line" rounds)" "$rounds"
    check_eq "$name: lost" "$(field "$line" lost)" 0
    check_eq "$name: corrupt" "$(field "$line" corrupt)" 0
    if (($(field "$line" 'writes acknowledged' || echo 0) > 0)); then
        itest_ok "$name: writes were acknowledged"
    else
        itest_not_ok "$name: nothing acknowledged: '$line'"
    fi
    up=$(sed -nE 's/.*acknowledged: [0-9]+ accounts, ([0-9]+) uploads.*/\1/p' "$ITEST_DIR/$name.log")
    if [[ -n $up ]] && ((up > 0)); then
        itest_ok "$name: uploads covered ($up acknowledged)"
    else
        itest_not_ok "$name: no upload acknowledged ($(grep -m1 NOTE "$ITEST_DIR/$name.log" || true))"
    fi
    check_eq "$name: SIGTERM round failures" "$(grep -c 'FAIL: SIGTERM' "$ITEST_DIR/$name.log" || true)" 0
    check_ok "$name: server1 exited 0 on SIGTERM" grep -q 'server1 exited 0 after SIGTERM' "$ITEST_DIR/$name.log"
    check_ok "$name: server2 exited 0 on SIGTERM" grep -q 'server2 exited 0 after SIGTERM' "$ITEST_DIR/$name.log"
}

crash redis-threads --backend redis --mode threads --rounds 4 --time-limit 60 --reserve 25
check_one redis-threads 4

crash mysql-processes --backend mysql --mode processes --rounds 2 --time-limit 50 --reserve 25
check_one mysql-processes 2

crash sabotage --backend redis --rounds 1 --no-sigterm --sabotage --time-limit 30 --reserve 15
check_eq "sabotage: harness exit status" "$RC" 1
if (($(field "$LINE" lost || echo 0) >= 1 && $(field "$LINE" corrupt || echo 0) >= 1)); then
    itest_ok "sabotage: the checker reports the deleted file as lost and the flipped one as corrupt"
else
    itest_not_ok "sabotage: damage not reported: '$LINE'"
fi

# everything the harness started is gone (their command lines name the run dir)
check_eq "processes left running by the harness" "$(pgrep -f -- "$ITEST_DIR/crash-" | wc -l)" 0

left=$(find "$ITEST_DIR" -maxdepth 1 -name 'crash-*' -type d | wc -l)
check_eq "run dirs left behind by successful runs (sabotage keeps none)" "$left" 0
itest_summary
