#!/usr/bin/env bash
# The upload store on a full disk: server1 on a 6 MiB tmpfs with 1 MiB segments. The disk fills
# up just when a new segment is due, so its creation fails (507); once there is room again,
# overwrites of one 900 KB name must go on working: segments roll again, compaction reclaims
# the dead ones, and the store's size on disk stays near what is live. (A segment whose
# creation failed once used to block every later roll and compaction until a restart.)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_init store_full
itest_timeout 120
require_cmd curl python3 cmp mount
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/small
if ! itest_mount_tmpfs "$ROOT" 6m; then
    log "store_full: cannot mount a tmpfs here (not root?): skipped"
    itest_ok "skipped: no tmpfs mount allowed"
    itest_summary
fi
head -c 921600 /dev/urandom >"$ITEST_DIR/v900k"
head -c 921600 /dev/urandom >"$ITEST_DIR/w900k"

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@" || true; }
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }
ALICE=(-u alice:secret)

start_fake 0
S1_TEST_STORE_SEGMENT_BYTES=1048576 start_s1 s1 --read buffered

# two versions of one name fill the first 1 MiB segment: the next batch starts a new one
for i in 1 2; do
    st=$(code "${ALICE[@]}" -T "$ITEST_DIR/v900k" "$S1/files/hot")
    [[ $st == 201 || $st == 204 ]] || itest_not_ok "PUT hot #$i: status $st"
done
# the disk fills up (an operator's file, outside the store) just as that segment is due
head -c 8M /dev/zero >"$ROOT/pad" 2>/dev/null || true
check_eq "PUT while the disk is full: 507" \
    "$(code "${ALICE[@]}" -T "$ITEST_DIR/w900k" "$S1/files/hot")" 507
rm -f "$ROOT/pad"

# now overwrite one name: every one must be stored, and the log must shrink to fit
ok=0
for i in $(seq 1 8); do
    src=$ITEST_DIR/v900k
    ((i % 2 == 0)) || src=$ITEST_DIR/w900k
    st=$(code "${ALICE[@]}" -T "$src" "$S1/files/hot")
    [[ $st == 201 || $st == 204 ]] && ok=$((ok + 1))
done
check_eq "8 overwrites of a 900 KB name once the disk has room again" "$ok" 8
curl -s --max-time 30 "${ALICE[@]}" -o "$ITEST_DIR/got" "$S1/files/hot" || true
if cmp -s "$ITEST_DIR/got" "$ITEST_DIR/v900k"; then itest_ok "the last version is served"; else
    itest_not_ok "GET hot does not return the last version"; fi
comp=$(metric server1_store_compactions_total)
[[ ${comp:-0} -gt 0 ]] && itest_ok "compactions ran ($comp)" ||
    itest_not_ok "no compaction after the disk was full (server1_store_compactions_total=${comp:-none})"
bytes=$(metric server1_store_bytes)
live=$(metric server1_store_live_bytes)
# one live 900 KB file; sealed segments are compacted once they hold over twice their live
# bytes, so a log that works stays within a few segments of 1 MiB
if [[ -n $bytes && $bytes -le 4194304 ]]; then itest_ok "store on disk: $bytes bytes for $live live"; else
    itest_not_ok "store on disk: ${bytes:-?} bytes for ${live:-?} live (compaction stalled)"; fi

# the disk fills up again while the store keeps a dead segment as a spare for reuse: its blocks
# go back to the filesystem, and the upload that met the full disk is stored after all (it
# used to get 507 while the spare held megabytes). Deleting "hot" makes the segment that holds
# it dead: it becomes the spare, and a 2.5 MB upload outgrows the active segment's blocks.
check_eq "DELETE hot" "$(code "${ALICE[@]}" -X DELETE "$S1/files/hot")" 204
head -c 2500k /dev/urandom >"$ITEST_DIR/v2500k"
head -c 8M /dev/zero >"$ROOT/pad" 2>/dev/null || true
check_eq "PUT on a full disk while a spare segment holds blocks: stored" \
    "$(code "${ALICE[@]}" -T "$ITEST_DIR/v2500k" "$S1/files/big")" 201
if grep -q 'the disk is full: removed [0-9]* spare segment' "$ITEST_DIR/s1.log"; then
    itest_ok "the spare was given back ($(grep -o 'removed [0-9]* spare segments*' \
        "$ITEST_DIR/s1.log" | tail -n 1))"
else
    itest_not_ok "no spare segment was given back ($(ls "$ROOT/.s1store" | tr '\n' ' '))"
fi
curl -s --max-time 30 "${ALICE[@]}" -o "$ITEST_DIR/got" "$S1/files/big" || true
if cmp -s "$ITEST_DIR/got" "$ITEST_DIR/v2500k"; then itest_ok "... and it is served"; else
    itest_not_ok "GET big does not return what was stored"; fi
rm -f "$ROOT/pad"
stop_s1 "server1"
itest_summary
