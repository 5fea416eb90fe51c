#!/usr/bin/env bash
# Two loadgen processes against one throw-away nginx, started with the same --start-at, then
# `loadgen merge` (skipped when nginx is not installed; about 15 s): both measure the same
# wall-clock windows; the merged N, successes and X are the sums, the merged histogram is the
# bucket-by-bucket sum and the percentiles come from it, Little's law holds on the merged
# figures. Refused: a start in the past, too far ahead or malformed, --sweep auto with it,
# inputs of another load, of other windows, the same run twice, an input as the output.
# SIGINT ends the wait for the start.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NGINX=$(command -v nginx || true)
[[ -x $NGINX ]] || NGINX=/usr/sbin/nginx
if [[ ! -x $NGINX ]]; then
    echo "skip: nginx is not installed (apt-get install nginx-light to run this test)"
    echo "0 passed, 0 failed"
    exit 0
fi
itest_init loadgen_merge
itest_timeout 60
require_cmd python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
LG=$BIN_DIR/loadgen
OUT=$ITEST_DIR/out

mkdir -p "$ITEST_DIR/www/files" "$ITEST_DIR/tmp"
head -c 1024 /dev/urandom >"$ITEST_DIR/www/files/1k"
chmod -R a+rX "$ITEST_DIR" # nginx workers run as another user when we are root
PORT=$(free_port)
nginx_conf "$ITEST_DIR" "listen 127.0.0.1:$PORT;"
"$NGINX" -e "$ITEST_DIR/nginx.err" -p "$ITEST_DIR" -c "$ITEST_DIR/nginx.conf" \
    >"$ITEST_DIR/nginx.log" 2>&1 &
itest_bg $!
wait_port 127.0.0.1 "$PORT" 10 || itest_fail "nginx did not start"
URL=http://127.0.0.1:$PORT
now_ms() { date +%s%3N; }

# refused RC DESC WANT CMD...: CMD exits RC with one line on stderr that contains WANT.
refused() {
    local want_rc=$1 desc=$2 want=$3 rc=0 err
    shift 3
    err=$("$@" 2>&1 >/dev/null) || rc=$?
    check_eq "$desc: exit $want_rc, one line" "$rc:$(printf '%s\n' "$err" | wc -l)" "$want_rc:1"
    check_ok "$desc: says '$want' ($err)" grep -qF -- "$want" <<<"$err"
}

# ---- --start-at refused -------------------------------------------------------------------
refused 2 "start in the past" "is in the past" \
    "$LG" --url "$URL" --file 1k --start-at $(($(now_ms) - 1000))
refused 2 "start two days ahead" "at most 24 h" \
    "$LG" --url "$URL" --file 1k --start-at $(($(now_ms) + 2 * 86400 * 1000))
refused 2 "malformed start" "--start-at" "$LG" --url "$URL" --file 1k --start-at 12s
refused 2 "start with --sweep auto" "needs a fixed schedule" \
    "$LG" --url "$URL" --file 1k --sweep auto --start-at $(($(now_ms) + 5000))

# ---- SIGINT while waiting for the start -----------------------------------------------------
"$LG" --url "$URL" --file 1k -d 1 --start-at $(($(now_ms) + 30000)) -o "$OUT/int" \
    >"$ITEST_DIR/int.log" 2>&1 &
lgpid=$!
itest_bg "$lgpid"
wait_until 10 grep -q 'starts at' "$ITEST_DIR/int.log" || itest_fail "no 'starts at' line"
kill -INT "$lgpid"
rc=0
wait "$lgpid" || rc=$?
check_eq "SIGINT during the wait: exit 130" "$rc" 130

# ---- two processes, one schedule ------------------------------------------------------------
START=$(($(now_ms) + 1500))
common=(--url "$URL" --file 1k --expect-length 1k -d 1 --warmup 0.3 --watch-comm nginx
    --start-at "$START")
"$LG" "${common[@]}" --sweep 2,4 -o "$OUT/a" >"$ITEST_DIR/a.log" 2>&1 &
pa=$!
"$LG" "${common[@]}" --sweep 1,2 -o "$OUT/b" >"$ITEST_DIR/b.log" 2>&1 &
pb=$!
itest_bg "$pa" "$pb"
rc_a=0
rc_b=0
wait "$pa" || rc_a=$?
wait "$pb" || rc_b=$?
check_eq "both processes ran" "$rc_a:$rc_b" "0:0"
check_ok "the start was printed" grep -q "point 1 (N=2) starts at .*epoch ms $START" \
    "$ITEST_DIR/a.log"

"$LG" merge -o "$OUT/m" "$OUT/a" "$OUT/b" >"$ITEST_DIR/m.log" 2>&1 || itest_fail "merge failed"
check_ok "merged reports written" test -s "$OUT/m/points.csv" -a -s "$OUT/m/run.json" \
    -a -s "$OUT/m/summary.md"
check_ok "summary.md names the inputs" grep -q "$OUT/a" "$OUT/m/summary.md"

# Every property of the merge, read from the three run.json files; one line per failure.
check_ok "merged figures" python3 - "$OUT/a/run.json" "$OUT/b/run.json" "$OUT/m/run.json" <<'EOF'
import json, sys
a, b, m = (json.load(open(f)) for f in sys.argv[1:4])
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)
def pct(h, p):
    # hist_percentile: the bucket of rank ceil(p/100 * count), its middle clamped to [min, max]
    import math
    rank = max(1, math.ceil(p / 100 * h["count"]))
    seen = 0
    for i, c in h["buckets"]:
        seen += c
        if seen >= rank:
            if i < 128:
                lo, hi = i, i
            else:
                octave, sub = divmod(i - 128, 64)
                lo = (64 + sub) << (octave + 1)
                hi = lo + (1 << (octave + 1)) - 1
            return min(max(lo + (hi - lo) // 2, h["min"]), h["max"])
need(len(m["inputs"]) == 2 and m["machine"] is None, "inputs listed")
need([p["users"] for p in m["points"]] == [3, 6], "merged N = 3, 6")
for k, (pa, pb, pm) in enumerate(zip(a["points"], b["points"], m["points"])):
    skew = abs(pa["window_start_ms"] - pb["window_start_ms"])
    need(skew < 50, f"point {k}: windows start {skew:.1f} ms apart")
    need(pm["all"]["ok"] == pa["all"]["ok"] + pb["all"]["ok"], f"point {k}: ok summed")
    need(pa["all"]["ok"] > 50 and pb["all"]["ok"] > 50, f"point {k}: requests measured")
    x = pa["all"]["x_rps"] + pb["all"]["x_rps"]
    need(abs(pm["all"]["x_rps"] - x) <= 0.01 * x, f"point {k}: X {pm['all']['x_rps']} vs {x}")
    need(abs(pm["little"]["rel_diff"]) < 0.05, f"point {k}: Little {pm['little']['rel_diff']}")
    ha, hb, hm = (p["raw"]["get"]["lat_ns"] for p in (pa, pb, pm))
    want = {}
    for h in (ha, hb):
        for i, c in h["buckets"]:
            want[i] = want.get(i, 0) + c
    need(dict((i, c) for i, c in hm["buckets"]) == want, f"point {k}: buckets summed")
    need(hm["count"] == ha["count"] + hb["count"] and hm["min"] == min(ha["min"], hb["min"])
         and hm["max"] == max(ha["max"], hb["max"]), f"point {k}: count/min/max")
    for q, key in ((50, "p50_ms"), (99, "p99_ms"), (99.9, "p999_ms")):
        need(abs(pct(hm, q) / 1e6 - pm["all"][key]) < 1e-6, f"point {k}: {key} from the merge")
    lo, hi = sorted((pa["all"]["p99_ms"], pb["all"]["p99_ms"]))
    need(lo <= pm["all"]["p99_ms"] <= hi, f"point {k}: p99 between the inputs'")
    need(any(r["name"] == "cpu:nginx" for r in pm["resources"]), f"point {k}: nginx sampled")
    lgs = [p for p in pm["monitor"]["processes"] if p["is_loadgen"]]
    need(len(lgs) == 1 and lgs[0]["nproc"] == 2, f"point {k}: one loadgen group of 2 processes")
for e in bad:
    print("merged figures:", e)
sys.exit(1 if bad else 0)
EOF

# ---- inputs that cannot be merged -----------------------------------------------------------
"$LG" --url "$URL" --file 1k -u 1 -d 1 --warmup 0.3 --think 1 -o "$OUT/think" \
    >"$ITEST_DIR/think.log" 2>&1 || itest_fail "think run failed"
"$LG" --url "$URL" --file 1k -u 1 -d 1 --warmup 0.3 -o "$OUT/later" \
    >"$ITEST_DIR/later.log" 2>&1 || itest_fail "later run failed"
"$LG" --url "$URL" --file 1k -u 1 -d 1 --warmup 0.3 -o "$OUT/later2" \
    >"$ITEST_DIR/later2.log" 2>&1 || itest_fail "later2 run failed"
refused 1 "another think time" "inputs differ in think_ms: '$OUT/later' has 0.000, '$OUT/think' has 1.000" \
    "$LG" merge "$OUT/later" "$OUT/think"
refused 1 "another number of points" "inputs differ in points" \
    "$LG" merge "$OUT/a" "$OUT/later"
refused 1 "windows one after the other" "windows overlap 0.0% only" \
    "$LG" merge "$OUT/later" "$OUT/later2"
refused 1 "the same run twice" "'$OUT/b' and '$OUT/b' hold the same run" \
    "$LG" merge "$OUT/a" "$OUT/b" "$OUT/b"
sum_a=$(cat "$OUT"/a/* | md5sum)
refused 2 "an input as the output" "is an input" "$LG" merge -o "$OUT/a" "$OUT/a" "$OUT/b"
check_eq "the input is left as it was" "$(cat "$OUT"/a/* | md5sum)" "$sum_a"
refused 1 "a directory without run.json" "cannot read" "$LG" merge "$OUT/a" "$ITEST_DIR/www"

itest_summary
