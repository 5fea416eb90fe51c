#!/usr/bin/env bash
# loadgen --names against server1 (on fake_server2.py) over a generated tree of 2 x 5 x 10
# files (about 10 s): a pattern drawn by Zipf(1.0) through the file server's GET, and a names
# file (one name that needs %XX) drawn uniformly through a URL argument's {name}. Every request
# is answered 200, server1's access log holds exactly the names asked for, spread as the law
# says (the hottest name's share, the top 10's, a chi-square for uniform), and run.json says
# the source, N and the law. A bad pattern and a bad names file are refused (exit 2) naming
# what is wrong.
# itest-https: no (which names are drawn does not depend on the transport)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init loadgen_names
itest_timeout 120
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
LG=$BIN_DIR/loadgen
HERE=$ITEST_ROOT/tests/integration
ROOT=$ITEST_DIR/root
ALOG=$ITEST_DIR/access.log

for a in 0 1; do
    for b in 00 01 02 03 04; do
        mkdir -p "$ROOT/d$a/d$b"
        for c in 00 01 02 03 04 05 06 07 08 09; do
            printf 'file d%s/d%s/f%s\n' "$a" "$b" "$c" >"$ROOT/d$a/d$b/f$c"
        done
    done
done
printf 'hash\n' >"$ROOT/x#1"

start_fake 0
start_s1 s1 --access-log "$ALOG"

# counts: "NAME COUNT" per requested path of the access log (without /files/), and the statuses
counts() {
    awk '{ sub("^/files/", "", $7); print $7 }' "$ALOG" | sort | uniq -c | awk '{ print $2, $1 }'
}
lines_at_least() { test "$(wc -l <"$ALOG")" -ge "$1"; }

# ---- a pattern, Zipf(1.0), the file server's GET ------------------------------------------
"$LG" --url "$S1" --names 'd{0..1}/d{00..04}/f{00..09}' --pick zipf:1.0 --username alice \
    --password secret -u 4 --requests-per-user 500 --warmup 0 --seed 7 -o "$ITEST_DIR/zipf" \
    >"$ITEST_DIR/zipf.log" 2>&1 ||
    itest_fail "zipf run failed: $(tail -n 3 "$ITEST_DIR/zipf.log")"
wait_until 15 lines_at_least 2000 ||
    itest_not_ok "the access log has $(wc -l <"$ALOG") lines, not 2000"
check_eq "zipf: 2000 requests, all 200" \
    "$(wc -l <"$ALOG") $(awk '$9 != 200' "$ALOG" | wc -l)" "2000 0"
counts >"$ITEST_DIR/zipf.counts"
# Zipf(1) over 100 ranks: rank 1 has 1/H(100) = 19.3% (386 of 2000, sd 18), ranks 1-10 56.5%
# (1129, sd 22): both within 4.5 sd
check_ok "zipf: the spread of the names drawn is Zipf(1.0) over the pattern's order" \
    python3 - "$ITEST_DIR/zipf.counts" <<'EOF_PY'
import sys
c = {k: int(v) for k, v in (l.split() for l in open(sys.argv[1]))}
names = ["d%d/d%02d/f%02d" % (i // 50, i // 10 % 5, i % 10) for i in range(100)]
assert set(c) <= set(names), sorted(set(c) - set(names))
h = sum(1 / k for k in range(1, 101))
top1, top10 = c.get(names[0], 0), sum(c.get(n, 0) for n in names[:10])
print("rank 1: %d (theory %.0f), ranks 1-10: %d (theory %.0f), distinct %d"
      % (top1, 2000 / h, top10, 2000 * sum(1 / k for k in range(1, 11)) / h, len(c)))
assert abs(top1 - 2000 / h) < 80, top1
assert abs(top10 - 2000 * sum(1 / k for k in range(1, 11)) / h) < 100, top10
assert max(c, key=c.get) == names[0]
EOF_PY
check_ok "zipf: run.json names the pattern, N = 100, zipf 1.0" python3 -c "
import json, sys
n = json.load(open('$ITEST_DIR/zipf/run.json'))['config']['names']
sys.exit(not (n == {'source': 'd{0..1}/d{00..04}/f{00..09}', 'kind': 'pattern', 'n': 100,
                    'pick': 'zipf', 'zipf_s': 1.0, 'spread': False}))"
check_ok "zipf: the summary's load line says the names and the law" \
    grep -q 'names: d{0..1}/d{00..04}/f{00..09} (pattern, 100, zipf 1)' "$ITEST_DIR/zipf.log"

# ---- a names file, uniform, a URL argument's {name} ----------------------------------------
: >"$ALOG"
{
    printf '# ten names, one with a byte to encode\r\n\n'
    for i in 0 1 2 3 4 5 6 7 8; do printf 'd1/d04/f0%d\n' "$i"; done
    printf 'x#1\n'
} >"$ITEST_DIR/names.txt"
"$LG" "$S1/files/{name}" --names "$ITEST_DIR/names.txt" --username alice --password secret \
    -u 2 --requests-per-user 1000 --warmup 0 -o "$ITEST_DIR/uni" >"$ITEST_DIR/uni.log" 2>&1 ||
    itest_fail "uniform run failed: $(tail -n 3 "$ITEST_DIR/uni.log")"
wait_until 15 lines_at_least 2000 ||
    itest_not_ok "the access log has $(wc -l <"$ALOG") lines, not 2000"
check_eq "uniform: 2000 requests, all 200" \
    "$(wc -l <"$ALOG") $(awk '$9 != 200' "$ALOG" | wc -l)" "2000 0"
counts >"$ITEST_DIR/uni.counts"
# 10 names, 200 each: the chi-square of 9 degrees of freedom under 33 (p = 0.0001)
check_ok "uniform: the 10 names of the file, each about 200 times (x#1 sent as x%231)" \
    python3 - "$ITEST_DIR/uni.counts" <<'EOF_PY'
import sys
c = {k: int(v) for k, v in (l.split() for l in open(sys.argv[1]))}
want = ["d1/d04/f0%d" % i for i in range(9)] + ["x%231"]
assert sorted(c) == sorted(want), sorted(c)
chi = sum((v - 200) ** 2 / 200 for v in c.values())
print("counts %s, chi-square %.1f" % (sorted(c.values()), chi))
assert chi < 33, chi
EOF_PY
check_ok "uniform: run.json names the file, N = 10, uniform" python3 -c "
import json, sys
n = json.load(open('$ITEST_DIR/uni/run.json'))['config']['names']
sys.exit(not (n['source'] == '$ITEST_DIR/names.txt' and n['kind'] == 'file' and n['n'] == 10
              and n['pick'] == 'uniform' and n['zipf_s'] is None))"

# ---- bad input: exit 2, one line naming what is wrong --------------------------------------
rc=0
err=$("$LG" --url "$S1" --names 'd{0..1}/f{9..0}' 2>&1 >/dev/null) || rc=$?
check_eq "a backwards field: exit 2 and why" \
    "$rc/$(grep -c 'field .{9..0}. runs backwards' <<<"$err")" "2/1"
printf 'ok\nbad name\n' >"$ITEST_DIR/bad.txt"
rc=0
err=$("$LG" --url "$S1" --names "$ITEST_DIR/bad.txt" 2>&1 >/dev/null) || rc=$?
check_eq "a names file with a blank in a name: exit 2, file and line" \
    "$rc/$(grep -c "bad.txt:2: byte 0x20 in the name" <<<"$err")" "2/1"

stop_s1 "server1"
itest_summary
