#!/usr/bin/env bash
# scripts/demo.sh as a newcomer runs it (about 5 s): it ends with 0 and leaves no process behind;
# each step answers what the demo says it shows (201 then 409, the upload's 201, its listing, a
# 301 to the directory, a 206 that resumes to the whole file, 401 with the old password and 200
# with the new one, 204 for the deletions, 401 for the deleted account); and every command it
# prints reads back, as bash parses the printed line, as the very words it ran.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init demo
itest_timeout 240
require_cmd curl python3
OUT=$ITEST_DIR/demo.out
ARGV=$ITEST_DIR/argv

rc=0
TMPDIR=$ITEST_DIR DEMO_ARGV_LOG=$ARGV bash "$ITEST_ROOT/scripts/demo.sh" >"$OUT" 2>&1 || rc=$?
check_eq "demo.sh exits 0" "$rc" 0
left=$(pgrep -f "$ITEST_DIR/demo\." | wc -l) || true
check_eq "no process of the demo's stack is left" "$left" 0

# after_cmd PATTERN: the first line of output after the command line matching PATTERN
# (a 100 Continue and blank lines skipped)
after_cmd() {
    tr -d '\r' <"$OUT" |
        awk -v p="$1" 'f && !/^HTTP\/1.1 100 / && NF { print; exit } /^\$ / && index($0, p) { f = 1 }'
}
check_eq "sign-up: 201" "$(after_cmd 'POST --data')" "HTTP/1.1 201 Created"
check_eq "the same name again: 409" "$(grep -m1 -x 409 "$OUT")" 409
check_eq "the upload: 201" "$(after_cmd '-T notes.txt')" "HTTP/1.1 201 Created"
check_eq "its listing names it" "$(grep -c '"name":"notes.txt"' "$OUT")" 1
check_eq "/files/docs: 301 to the listing" "$(grep -m1 '^301 ' "$OUT")" "301 docs/"
check_eq "the resumed download: 206 and the rest of the file" \
    "$(grep -m1 'bytes more$' "$OUT")" "206 946176 bytes more"
check_eq "... to the same bytes" "$(grep -A2 '^\$ sha256sum' "$OUT" | awk 'NR > 1 { print $1 }' |
    uniq | wc -l)" 1
check_eq "the old password after the change: 401" "$(grep -c '^401 with the old password$' "$OUT")" 1
check_eq "the new one: 200" "$(grep -c '^200 with the new one$' "$OUT")" 1
check_eq "the upload deleted, then gone" "$(grep -c '^404 after its deletion$' "$OUT")" 1
check_eq "the deleted account: 401" "$(grep -c '^401 for the deleted account$' "$OUT")" 1
check_ok "the metrics shown (from server1's --metrics-listen)" grep -q '^server1_[a-z_]* ' "$OUT"

# the printed commands against the words run: bash reads each printed line back
python3 - "$OUT" "$ARGV" >"$ITEST_DIR/readback" <<'PY'
import subprocess, sys
printed = [l[2:] for l in open(sys.argv[1], encoding="utf-8") if l.startswith("$ ")]
ran = [l.rstrip("\n").split("\0")[:-1] for l in open(sys.argv[2], encoding="utf-8")]
# the metrics pipe is printed by hand, not run by run()
printed = [p for p in printed if "| grep" not in p]
bad = 0
for line, words in zip(printed, ran):
    cmd = "set -f; for w in " + line.rstrip("\n") + '; do printf "%s\\0" "$w"; done'
    got = subprocess.run(["bash", "-c", cmd],
                         capture_output=True, text=True).stdout.split("\0")[:-1]
    if got != words:
        bad += 1
        print("differs:", line.strip(), file=sys.stderr)
print(len(printed), len(ran), bad)
PY
read -r n_printed n_ran n_bad <"$ITEST_DIR/readback"
check_eq "as many commands printed as run" "$n_printed" "$n_ran"
check_ok "at least 20 commands" test "$n_ran" -ge 20
check_eq "every printed command reads back as the words it ran" "$n_bad" 0
itest_summary
