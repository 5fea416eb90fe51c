#!/usr/bin/env bash
# scripts/reproduce.sh end to end on a tiny subset (one configuration on Redis, loads new,
# get 1KB and the durable uploads put 4KB and put 1MB, N in {1,2}, half-second points; about
# 25 s), then checks that what it wrote is complete and consistent: every point has its numbers
# and no errors, Little's law holds, the summary's maximum throughput is the maximum of the
# points, the put rows are in the tables but not in the comparison with the study, bottleneck.md
# names a resource of the CSV with its utilization there, the plots exist, the uploads went to
# the run's own server1 root (nothing written into build/files, the get file untouched), and
# the queueing model's columns, table and --predict-only are there, the software stations
# (thread samples) are in points.csv and run.json and make the model the layered one, and
# nothing it started is still running. Then --tls on one load: over HTTPS (TLS 1.3) beside
# plain HTTP, and the summary's table of what HTTPS costs.
# itest-sanitizers: no (a measurement run; the programs it drives are tested elsewhere)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init reproduce
itest_timeout 90
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
export BIN_DIR
OUT=$ITEST_DIR/results
CFG=mt-prefetch-redis
FILES=$ITEST_ROOT/build/files # reproduce.sh's test files (hard-linked into server1's --root)
sum_1kb() { [[ ! -f $FILES/1KB ]] || cksum <"$FILES/1KB"; }
before_1kb=$(sum_1kb)
mkdir -p "$FILES"
touch "$ITEST_DIR/before-run"

rc=0
"$ITEST_ROOT/scripts/reproduce.sh" --no-build --configs "$CFG" --loads new,1KB,put-4KB,put-1MB \
    --points 1,2 --duration 0.5 --warmup 0.2 --out "$OUT" >"$ITEST_DIR/reproduce.log" 2>&1 || rc=$?
check_eq "reproduce.sh exits 0" "$rc" 0
((rc == 0)) || itest_fail "reproduce.sh failed: $(tail -n 5 "$ITEST_DIR/reproduce.log")"

for f in points.csv table.csv summary.md machine.md "$CFG/bottleneck.md" "$CFG/new/run.json" \
    "$CFG/get-1KB/points.csv" "$CFG/put-4KB/points.csv" "$CFG/put-1MB/points.csv" plots/new.png \
    plots/get-1KB.png plots/put-4KB.png plots/put-1MB.png "plots/util-$CFG.png" \
    plots/throughput.png plots/model-new.png plots/model-get-1KB.png; do
    check_ok "$f written" test -s "$OUT/$f"
done

# col NAME...: those columns of the merged points.csv, one row a line (type "all" rows only)
col() { csv_get "$OUT/points.csv" 'c["type"] == "all"' "$@"; }
check_eq "one row per load and N" "$(col load users | tr '\t\n' ': ')" \
    "new:1 new:2 get-1KB:1 get-1KB:2 put-4KB:1 put-4KB:2 put-1MB:1 put-1MB:2 "

number='^-?[0-9]+(\.[0-9]+)?$'
bad=0
while IFS=$'\t' read -r n x r u ok err; do
    for v in "$n" "$x" "$r" "$u" "$ok" "$err"; do [[ $v =~ $number ]] || bad=$((bad + 1)); done
done < <(col users x_rps r_mean_ms u_cpu ok errors)
check_eq "every point has numbers (users, X, R, U, ok, errors)" "$bad" 0
# The scripts' Redis requires a password; loadgen's INFO sampling authenticates (REDISCLI_AUTH).
check_eq "Redis ops sampled at every 'new' point (loadgen authenticated to Redis)" \
    "$(col load redis_ops_ps | awk '$1 == "new" && $2 ~ /^[0-9.]+$/ && $2 > 0' | wc -l)" 2
check_eq "no errors, every point ok > 0" \
    "$(col ok errors | awk '$1 <= 0 || $2 != 0' | wc -l)" 0
check_eq "put points: ok > 0 and no errors (every PUT answered 201 or 204)" \
    "$(col load ok errors | awk '$1 ~ /^put-/ && $2 > 0 && $3 == 0' | wc -l)" 4
check_eq "table.csv: put rows with 0 errors" \
    "$(csv_get "$OUT/table.csv" 'c["load"] ~ /^put-/ && c["errors"] == 0' load | tr '\n' ' ')" \
    "put-4KB put-1MB "
# Little's law over windows of 0.5 s (up to 1 s, twice --duration, where the window rule grows
# them): X R = N within 20% at every point, except that at one point X R may fall short by up to
# 0.3 s of one user's time: a request in flight across the end of the window took window time
# that no completed request's R holds (a 240 ms disk flush there once left X R / N = 0.52 at
# N = 1 under ASan).
little() { col users x_rps r_mean_ms window_s | awk -v s="$1" '{ l = $2 * $3 / 1000 / $1
    if (l > 1.2 || (l < 0.8 && (s == "strict" || ($1 - l * $1) * $4 > 0.3))) print }' | wc -l; }
check_ok "X R = N within 20% at every point but one ($(little strict) off)" \
    test "$(little strict)" -le 1
check_eq "... and that one short by at most 0.3 s of a user's time" "$(little relaxed)" 0
check_eq "every window sized by the rule (window_rule met, capped or short; 0.5 to 1 s)" \
    "$(col window_rule window_s | awk '$1 !~ /^(met|capped|short)$/ || $2 < 0.499 || $2 > 1.001' |
        wc -l)" 0
check_ok "summary.md lists the points off Little's law by more than 5%, or says none is" \
    grep -qE "Little's law (within 5% at all|off by more than 5% at)" "$OUT/summary.md"

# The summary's "Maximum throughput" table against the points (the summary prints integers
# from 1000 up, three significant digits below).
summary_x() {
    awk -F'|' -v row="$1" '/^## Maximum throughput/ { t = 1 } /^## The study/ { t = 0 }
        t && $2 ~ row { gsub(/ |†|‡/, "", $3); print $3 }' "$OUT/summary.md"
}
for l in new:"new account" get-1KB:"get 1KB" put-4KB:"put 4KB" put-1MB:"put 1MB"; do
    load=${l%%:*}
    max=$(col load x_rps | awk -v l="$load" '$1 == l && $2 > m { m = $2 }
        END { if (m >= 1000) printf "%.0f\n", m; else printf "%.3g\n", m }')
    check_eq "summary: X max of $load is the max of its points" "$(summary_x "${l#*:}")" "$max"
done

# The queueing model (exact MVA) beside every point: X and R predicted from each point's own
# demands and from the N = 1 demands, a relative error, a knee flag; N* model / measured in
# table.csv and the summary; loadgen --predict-only reads a run.json back.
bad=0
while IFS=$'\t' read -r x r e x1 r1 e1; do
    for v in "$x" "$r" "$e" "$x1" "$r1" "$e1"; do [[ $v =~ $number ]] || bad=$((bad + 1)); done
done < <(col x_model_rps r_model_ms err_model x_model_n1_rps r_model_n1_ms err_model_n1)
check_eq "every point has the model's X, R and error (both demand sets)" "$bad" 0
check_eq "one model knee per sweep" "$(col is_knee_model | awk '$1 == 1' | wc -l)" 4
check_eq "the model at N = 1 is R(1) itself: |error| <= 5% wherever no disk overlaps the CPU" \
    "$(col load users err_model | awk '$1 ~ /^get-/ && $2 == 1 && ($3 > 0.05 || $3 < -0.05)' | wc -l)" 0
check_eq "table.csv: a model knee for every sweep" \
    "$(csv_get "$OUT/table.csv" 'c["nstar_model"] ~ /^[0-9]+$/' load | wc -l)" 4
check_ok "summary.md has the N* model / measured table" grep -q '^## N\* model / measured$' "$OUT/summary.md"
check_eq "... with a 'model / measured (n1)' cell for get 1KB" \
    "$(awk -F'|' '/^## N\* model/ { t = 1 } t && $2 ~ /get 1KB/ { gsub(/ /, "", $3); print $3 ~ /^[0-9]+\/[0-9]+\([0-9]+\)$/; exit }' "$OUT/summary.md")" 1
pred=$("$BIN_DIR/loadgen" --predict-only "$OUT/$CFG/get-1KB/run.json" --max-users 8 2>&1) && rc=0 || rc=$?
check_eq "loadgen --predict-only on the get-1KB run.json exits 0" "$rc" 0
check_eq "... prints X and R for N = 1..8" \
    "$(awk '/X fit/ { t = 1; next } /^predicted knee/ { t = 0 } t && $1 ~ /^[1-8]$/' <<<"$pred" | wc -l)" 8
check_ok "... and checks its 2 points" grep -q '^check: points 2 ' <<<"$pred"
"$BIN_DIR/loadgen" --predict-only "$OUT/$CFG/get-1KB/points.csv" >/dev/null 2>"$ITEST_DIR/pred.err" && rc=0 || rc=$?
check_eq "--predict-only on a CSV: exit 2" "$rc" 2
check_eq "... with one line saying why" "$(grep -c 'not JSON' "$ITEST_DIR/pred.err")" 1

# Software stations: the stack's worker threads sampled at every point; server2's pool of two
# and server1's threads busy at every point, the committer busy only when there are uploads;
# the model of a sampled run is the layered one (--hardware-model: the one without them)
bad=0
num='^[0-9.]+$'
while IFS=$'\t' read -r hz cost k2 b2 b1 r2 bl2; do
    [[ $hz =~ ^[0-9]+$ && $cost =~ $num && $k2 == 2 && $b2 =~ $num && $b1 =~ $num &&
        $r2 =~ $num && $bl2 =~ $num ]] || bad=$((bad + 1))
    awk -v b="$b2" -v r="$r2" -v l="$bl2" \
        'BEGIN { d = r + l - b; exit !(b > 0 && b <= 2 && d < 0.002 && d > -0.002) }' ||
        bad=$((bad + 1))
done < <(col thread_hz thread_sampler_pct sw_threads_s2-wrk sw_busy_s2-wrk sw_busy_s1-wrk \
    sw_run_s2-wrk sw_blocked_s2-wrk)
check_eq "every point: sample rate, sampler cost, server2's 2 workers busy = run + blocked" "$bad" 0
check_eq "the committer is busy at put points only" \
    "$(col load sw_busy_s1-commit | awk '($1 ~ /^put-/) != ($2 > 0)' | wc -l)" 0
nested_ok() {
    python3 -c 'import json, sys
st = [s for p in json.load(open(sys.argv[1]))["points"]
      for s in p["monitor"]["threads"]["stations"]]
print(len(st) > 0 and all(s["nested"] == (s["name"] == "redis-server") for s in st))' "$1"
}
check_eq "run.json: Redis's main thread is a nested station" \
    "$(nested_ok "$OUT/$CFG/get-1KB/run.json")" True
check_ok "--predict-only: the layered model" grep -q '^layered model of run ' <<<"$pred"
hwpred=$("$BIN_DIR/loadgen" --predict-only "$OUT/$CFG/get-1KB/run.json" --hardware-model 2>&1)
check_ok "--predict-only --hardware-model: the CPU, disks and Redis" \
    grep -q '^model of run .*CPU = 2 cores' <<<"$hwpred"
check_ok "bottleneck.md: the busiest threads of get 1KB, busy of k" \
    grep -qE '^\| get \| 1KB \|.*\| (lg-wrk|s1-wrk|s2-wrk|redis-server) [0-9.]+/[12] \| [^|]+ \|$' \
    "$OUT/$CFG/bottleneck.md"

# The study has no put: its table and the ratios leave the put rows out (no made-up numbers)
study_rows() {
    awk -F'|' '/^## The study/ || /^## This machine \// { t = 1; next } /^## / { t = 0 }
        t && $2 ~ /put/' "$OUT/summary.md" | wc -l
}
check_eq "no put rows in the comparison with the study" "$(study_rows)" 0
check_ok "summary says the put loads are not in the study" \
    grep -q '^Not in the study (measured on this machine only): put 4KB, put 1MB\.$' "$OUT/summary.md"
for l in 4KB 1MB; do
    check_ok "bottleneck.md has the put $l row" grep -q "^| put | $l | " "$OUT/$CFG/bottleneck.md"
done

# The uploads went to the run's own root (removed with the run dir, checked below): nothing in
# build/files was written (but 1KB itself, if this run made it), and the get file is unchanged
check_eq "entries of $FILES written during the run" \
    "$(find "$FILES" -mindepth 1 -newer "$ITEST_DIR/before-run" ! -path "$FILES/1KB" | wc -l)" 0
[[ -z $before_1kb ]] || check_eq "get file 1KB unchanged" "$(sum_1kb)" "$before_1kb"

# bottleneck.md: the resource named for get 1KB is a column of the CSV, with that U at X max
row=$(grep '^| get | 1KB |' "$OUT/$CFG/bottleneck.md" || true)
res=$(awk -F'|' '{ split($7, a, " "); print a[1] }' <<<"$row")
pct=$(awk -F'|' '{ if (match($7, /\(([0-9]+)%\)/)) print substr($7, RSTART + 1, RLENGTH - 3) }' <<<"$row")
ucol=u_${res/:/_}
check_ok "bottleneck '$res' is a column ($ucol) of points.csv" grep -q ",$ucol," <(head -n1 "$OUT/points.csv")
u=$(csv_get "$OUT/points.csv" 'c["type"] == "all" && c["load"] == "get-1KB"' x_rps "$ucol" |
    sort -g -r | head -n1 | awk '{ printf "%.0f", 100 * $2 }')
check_eq "bottleneck.md's U is the CSV's at X max" "$pct" "$u"
nstar=$(col load users is_nstar | awk '$1 == "get-1KB" && $3 == 1 { print $2 }')
check_eq "bottleneck.md's N* is loadgen's" "$(awk -F'|' '{ gsub(/ /, "", $4); print $4 }' <<<"$row")" "$nstar"

# The knee of every sweep (table.csv) and the Findings (summary.md): on this run, then the
# knee rule on a hand-written run of five sweeps, one of each kind
check_eq "table.csv: knee, n_largest and u_sat valid in every sweep" \
    "$(csv_get "$OUT/table.csv" 1 knee n_largest u_sat | awk -F'\t' '$1 ~ /^(saturated|flat|not-reached)$/ &&
        $2 == 2 && $3 ~ /^[0-9.]+$/ && $3 <= 1.5' | wc -l)" 4
check_eq "summary.md: Findings is the first section" \
    "$(grep -m1 '^## ' "$OUT/summary.md")" "## Findings"
# paragraphs: the Markdown with each paragraph on one line
paragraphs() { awk '/^$/ { if (p != "") print p; p = ""; next } { p = p (p == "" ? "" : " ") $0 }
    END { if (p != "") print p }' "$1"; }
check_eq "... the three design changes: cannot tell, their configurations were not measured" \
    "$(paragraphs "$OUT/summary.md" |
        grep -c '^\*\*[123]\. .*Cannot tell: this run did not measure both configurations')" 3
check_ok "... the file-size trend: cannot tell with one get load" \
    grep -q '^\*\*4\. The file-size trend\*\*: cannot tell' "$OUT/summary.md"
check_ok "Checks: knees reached, counted" \
    grep -qE '^- knee reached in [0-4] of 4 sweeps \(saturated [0-4], flat [0-4]\), not reached: ' \
    "$OUT/summary.md"
check_ok "bottleneck.md: a knee column" grep -q '| knee |$' "$OUT/$CFG/bottleneck.md"

# A run by hand: N = 1, 2, 4; X rising with nothing at 80% (not-reached, even with loadgen's
# own threads all busy), X flat from N = 2 (flat), the CPU at 90% or server2's pool 95% busy
# (saturated); all the CPU charged to server1; mt-prefetch-redis absent
K=$ITEST_DIR/knee
mkdir -p "$K"
printf 'config\tbackend\tserver2\tserver1\tbusy_before_pct\n' >"$K/configs.tsv"
for c in mp-noprefetch-mysql mt-noprefetch-mysql mt-prefetch-mysql; do
    printf '%s\tmysql\t-\t-\t0\n' "$c" >>"$K/configs.tsv"
done
sweep() { # CONFIG LOAD "X1 X2 X4" U_CPU S2_BUSY LG_BUSY
    local n x xs max
    mkdir -p "$K/$1/$2"
    read -ra xs <<<"$3"
    max=$(printf '%s\n' "${xs[@]}" | sort -g | tail -n1)
    {
        echo "type,users,x_rps,r_mean_ms,is_nstar,errors,bottleneck,u_cpu,cpu_core_pct_server1,cpu_core_pct_server2,cpu_core_pct_mariadbd,sw_threads_s2-wrk,sw_busy_s2-wrk,sw_threads_lg-wrk,sw_busy_lg-wrk,sw_threads_s1-wrk,sw_busy_s1-wrk,cpu_machine_pct_server1"
        local i=0 star=0 is
        for n in 1 2 4; do
            x=${xs[i++]}
            is=$(awk -v x="$x" -v m="$max" -v s="$star" 'BEGIN { print (s == 0 && x >= 0.95 * m) }')
            ((is == 0)) || star=1
            echo "all,$n,$x,$(awk -v n="$n" -v x="$x" 'BEGIN { print 1000 * n / x }'),$is,0,cpu,$4,50,40,30,2,$5,2,$6,2,0.6,$(awk -v u="$4" 'BEGIN { print 100 * u }')"
        done
    } >"$K/$1/$2/points.csv"
}
sweep mp-noprefetch-mysql new "100 200 400" 0.3 0.4 0.2
sweep mt-noprefetch-mysql new "100 200 201" 0.5 0.4 0.2
sweep mt-noprefetch-mysql get-1KB "100 200 210" 0.9 0.4 0.2
sweep mt-prefetch-mysql get-1KB "100 200 300" 0.5 1.9 0.2
sweep mt-prefetch-mysql get-10KB "100 200 400" 0.4 0.4 2.0
"$ITEST_ROOT/scripts/summarize.sh" "$K" >"$ITEST_DIR/knee.log" 2>&1 && rc=0 || rc=$?
check_eq "summarize.sh on the hand-written run exits 0" "$rc" 0
check_eq "knee rule: not-reached, flat, saturated (CPU), saturated (pool), not-reached (lg-wrk)" \
    "$(csv_get "$K/table.csv" 1 knee n_largest sw_share_name u_sat | tr '\t\n' ': ')" \
    "not-reached:4:s1-wrk:0.3000 flat:4:s1-wrk:0.5000 saturated:4:s1-wrk:0.9000 saturated:4:s2-wrk:0.9500 not-reached:4:s1-wrk:0.4000 "
check_eq "summary marks: † on the not-reached X max, ‡ on the flat one" \
    "$(awk -F'|' '/^## Maximum throughput/ { t = 1 } t && $2 ~ /new account/ { gsub(/ /, ""); print $3 $4; exit }' "$K/summary.md")" \
    "400†201‡"
check_ok "... and the words under the table" grep -q '^† knee not reached: not saturated' "$K/summary.md"
check_ok "the pool named in the bottleneck cell" \
    grep -qF 'threads s2-wrk 95% (1.9 of 2 busy); cpu 50%' "$K/summary.md"
check_ok "Checks: knee reached in 3 of 5" grep -qF -e \
    '- knee reached in 3 of 5 sweeps (saturated 2, flat 1), not reached: mp-noprefetch-mysql/new (N = 4), mt-prefetch-mysql/get-10KB (N = 4)' \
    "$K/summary.md"
check_ok "Findings 1: cannot tell, knee not reached" \
    grep -q 'new account 400 → 201 req/s (0.50×, cannot tell: knee not reached in mp-noprefetch-mysql' \
    <(paragraphs "$K/summary.md")
check_ok "Findings 2: the saturated get 1KB told against the study" \
    grep -q 'get 1KB 210 → 300 req/s (1.43×, a gain, smaller than the study' \
    <(paragraphs "$K/summary.md")
check_ok "Findings 3: skipped, mt-prefetch-redis absent" \
    grep -q '^\*\*3\. MySQL → Redis\*\* (mt-prefetch-mysql → mt-prefetch-redis)\. Cannot tell' \
    <(paragraphs "$K/summary.md")
check_eq "bottleneck.md: the knee in words" \
    "$(grep -c 'knee not reached: not saturated (X still rising at N = 4' "$K/mt-prefetch-mysql/bottleneck.md")" 1

# nothing left running: the ports of the run's Redis, server2 and server1 are closed again,
# and its run directory (databases' data) is gone
ports=$(grep -o 'redis on :[0-9]*' "$ITEST_DIR/reproduce.log" | grep -o '[0-9]*$' || true)
ports+=" $(grep -o 'server[12] :[0-9]*' "$OUT/$CFG/stack.log" | grep -o '[0-9]*$' | tr '\n' ' ' || true)"
check_eq "Redis, server2 and server1 ports found in the logs" "$(wc -w <<<"$ports")" 3
open=0
for p in $ports; do ! _port_open 127.0.0.1 "$p" || open=$((open + 1)); done
check_eq "ports left open after the run" "$open" 0
run=$(sed -n "s/.*databases' data under //p" "$ITEST_DIR/reproduce.log")
check_ok "run dir '$run' removed" test -n "$run" -a ! -e "$run"

# --tls: each load over plain HTTP and over HTTPS, on the same server1, and the table of what
# HTTPS costs
rc=0
"$ITEST_ROOT/scripts/reproduce.sh" --no-build --tls --configs "$CFG" --loads 1KB --points 1 \
    --duration 0.5 --warmup 0.2 --out "$ITEST_DIR/tls" >"$ITEST_DIR/reproduce-tls.log" 2>&1 ||
    rc=$?
check_eq "reproduce.sh --tls exits 0" "$rc" 0
check_ok "... the HTTPS run spoke TLS 1.3" \
    grep -q '"version": "TLSv1.3"' "$ITEST_DIR/tls/$CFG-tls/get-1KB/run.json"
check_ok "... and the plain one no TLS" \
    grep -q '"tls": null' "$ITEST_DIR/tls/$CFG/get-1KB/run.json"
check_ok "... the summary's table of what HTTPS costs has a ratio for get 1KB" \
    grep -qE '^\| get 1KB \| [0-9]+\.[0-9]{2} \|$' "$ITEST_DIR/tls/summary.md"

itest_summary
