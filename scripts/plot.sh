#!/usr/bin/env bash
# The plots of a reproduction run, from its points.csv, configs.tsv and machine.md and from
# results/study-2017.csv only (rerun it any time; runs with or without thread samples):
#   RESULTS/plots/throughput.png   the one-glance figure: X against N, a small panel per load,
#                                  the study's four configurations, the study's maxima dashed
#   RESULTS/plots/LOAD.png         one per load: X against N of the study's configurations (N*
#                                  circled, the study's maximum dashed near the right edge with its
#                                  value), X of the others (ours) on a panel of their own, and
#                                  the mean response time R of all of them
#   RESULTS/plots/model-LOAD.png   one per load, a column per configuration: measured X and R
#                                  next to loadgen's asymptotic bounds (x_upper_rps = min(N / D,
#                                  1 / D_max), r_lower_ms = max(D, N D_max)) and its queueing
#                                  model (exact MVA: each point's demands, and the N = 1 demands),
#                                  the model's knee and the measured N*
#   RESULTS/plots/util-CONFIG.png  utilization against N of the resources that CONFIG has, and
#                                  the share of busy threads of each software station, a panel
#                                  per load, 80% marked
#
#   scripts/plot.sh RESULTS_DIR
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
(($# == 1)) || die "usage: ${0##*/} RESULTS_DIR"
R=$(cd "$1" && pwd)
CSV=$R/points.csv
[[ -s $CSV ]] || die "$CSV missing (scripts/summarize.sh $R makes it)"
require_cmd gnuplot
TERM_PNG=pngcairo
gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo || TERM_PNG=png

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$R/plots"

STUDY=$TOP/results/study-2017.csv
[[ -f $STUDY ]] || { log "$STUDY missing: no study marks"; STUDY=$tmp/no-study.csv; : >"$STUDY"; }
# configs.tsv's backend column (CONFIG=redis|mysql), machine.md's cores; either may be missing
backends=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
    NR > 1 && ("backend" in h) { printf "%s=%s ", $1, $h["backend"] }' "$R/configs.tsv" 2>/dev/null || true)
cores=$(awk -F'|' '$2 ~ /^ *cores/ { gsub(/ /, "", $3); print $3; exit }' "$R/machine.md" 2>/dev/null || true)
awk -F, -v dir="$tmp" -v backends="$backends" -v cores="$cores" -v study="$STUDY" \
    -f "$TOP/scripts/plot-data.awk" "$STUDY" "$CSV"
for f in "$tmp"/xr.* "$tmp"/u.*; do sort -g -o "$f" "$f"; done # an auto sweep bisects: N unsorted

LOADS=(new get-1KB get-10KB get-100KB get-1MB get-10MB get-100MB put-4KB put-1MB)
mapfile -t PRESENT < <(for l in "${LOADS[@]}"; do [[ ! -f $tmp/configs.$l ]] || echo "$l"; done)
((${#PRESENT[@]} > 0)) || die "no point of type 'all' in $CSV"
label() {
    case $1 in
    new) echo "new account (POST /users)" ;;
    get-*) echo "GET ${1#get-} file" ;;
    put-*) echo "PUT ${1#put-} durable upload" ;;
    *) echo "$1" ;;
    esac
}
is_study() { grep -qxF "$1" "$tmp/study-configs" 2>/dev/null; }
# every configuration of the run, in configs.tsv's order (points.csv's for runs without it)
mapfile -t ALL < <(awk '!s[$0]++' "$tmp"/configs.*)
mapfile -t STUDY_CFGS < <(for c in "${ALL[@]}"; do ! is_study "$c" || echo "$c"; done)

# The same colour and point type for a configuration in every figure; the study's four first.
cfg_colour() {
    case $1 in
    mp-noprefetch-mysql) echo "#9400d3" ;;
    mt-noprefetch-mysql) echo "#009e73" ;;
    mt-prefetch-mysql) echo "#0072b2" ;;
    mt-prefetch-redis) echo "#e69f00" ;;
    ours) echo "#d55e00" ;;
    *) echo "#555555" ;;
    esac
}
cfg_style() {
    local pt
    case $1 in
    mp-noprefetch-mysql) pt=7 ;;
    mt-noprefetch-mysql) pt=5 ;;
    mt-prefetch-mysql) pt=9 ;;
    mt-prefetch-redis) pt=13 ;;
    ours) pt=11 ;;
    *) pt=15 ;;
    esac
    echo "lc rgb '$(cfg_colour "$1")' pt $pt"
}
# A resource's line in util-CONFIG.png: a process's CPU solid, its threads dashed, same colour.
res_style() {
    case $1 in
    cpu) echo "lc rgb '#000000' pt 7 dt 1" ;;
    cpu_loadgen) echo "lc rgb '#999999' pt 9 dt 1" ;;
    cpu_server1) echo "lc rgb '#0072b2' pt 5 dt 1" ;;
    cpu_server2) echo "lc rgb '#e69f00' pt 13 dt 1" ;;
    cpu_redis-server) echo "lc rgb '#d55e00' pt 11 dt 1" ;;
    cpu_mariadbd) echo "lc rgb '#8b4513' pt 14 dt 1" ;;
    disk_*) echo "lc rgb '#009e73' pt 15 dt 1" ;;
    redis) echo "lc rgb '#cc79a7' pt 3 dt 1" ;;
    "threads s1-wrk") echo "lc rgb '#0072b2' pt 4 dt 2" ;;
    "threads s1-commit") echo "lc rgb '#56b4e9' pt 6 dt 2" ;;
    "threads s2-wrk" | "threads s2-proc") echo "lc rgb '#e69f00' pt 12 dt 2" ;;
    "threads redis-server") echo "lc rgb '#d55e00' pt 10 dt 2" ;;
    "threads lg-wrk") echo "lc rgb '#999999' pt 8 dt 2" ;;
    threads*) echo "lc rgb '#555555' pt 1 dt 2" ;;
    *) echo "lc rgb '#555555' pt 2 dt 1" ;;
    esac
}

common="set logscale x 2
set grid
set xlabel 'N (closed-loop users)'
set offsets graph 0.03, graph 0.03, 0, 0
set lmargin 10
set rmargin 3
unset key"
NSTAR_KEY="NaN w p pt 6 ps 2.5 lw 2 lc rgb 'black' t 'circle: N* (the smallest N with X within 5% of the maximum)'"
DASH="dt (8,5) lw 2.5"
STUDY_KEY="NaN w l $DASH lc rgb 'black' t 'dashed, near the right edge: the study''s maximum (2017)'"

# A figure is a grid of panels under its title (TOP pixels) above one legend (KEY pixels) that
# spans the whole width: a key inside a panel covers data, and one per panel repeats itself.
# start FILE WIDTH HEIGHT FONTSIZE TITLE: the figure's first gnuplot commands (1100 pixels
# wide at least, for the legend's sake)
start() {
    echo "set terminal $TERM_PNG size $(($2 < 1100 ? 1100 : $2)),$3 font 'sans,$4' noenhanced"
    echo "set output '$1'"
    echo "$common"
    echo "set multiplot title '${5//\'/\'\'}'"
}
# panel I COLS ROWS TOP KEY HEIGHT: put the next plot in cell I (0-based, row by row)
panel() {
    awk -v i="$1" -v c="$2" -v r="$3" -v t="$4" -v k="$5" -v H="$6" 'BEGIN {
        h = (H - t - k) / H / r
        printf "set origin %.4f,%.4f\nset size %.4f,%.4f\n", (i % c) / c, k / H + (r - 1 - int(i / c)) * h, 1 / c, h }'
}
# legend KEY HEIGHT COLS: the next plot draws only its key, in COLS columns, in the bottom strip
legend() {
    awk -v k="$1" -v H="$2" 'BEGIN { printf "set origin 0,0\nset size 1,%.4f\n", k / H }'
    echo "unset title; unset xlabel; unset ylabel; unset tics; unset border; unset grid"
    echo "unset arrow; unset label; unset logscale; unset offsets"
    echo "set xrange [0:1]; set yrange [0:1]"
    echo "set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0"
    echo "set key inside center center horizontal maxcols $3 Left reverse samplen 4 width 2"
}

# ymax LOAD CFG...: the top of the throughput axis: the largest X or study maximum, plus 10%
ymax() {
    local load=$1 c files=()
    shift
    for c in "$@"; do [[ ! -f $tmp/xr.$c.$load ]] || files+=("$tmp/xr.$c.$load"); done
    ((${#files[@]} > 0)) || { echo 1; return; }
    { awk '{ print $2 }' "${files[@]}"; awk -v l=" $* " 'index(l, " " $1 " ") { print $2 }' \
        "$tmp/study.$load" 2>/dev/null || true; } | awk '$1 > m { m = $1 } END { print (m > 0 ? 1.1 * m : 1) }'
}
# study_marks LOAD YMAX LABELS CFG...: gnuplot commands marking each CFG's study maximum for
# LOAD: a short dashed line near the right edge in its colour, with "study VALUE" in the right
# margin if LABELS is 1 (labels closer than 5% of the axis pushed apart upwards)
study_marks() {
    local load=$1 top=$2 labels=$3 c v x pos prev=""
    shift 3
    [[ -f $tmp/study.$load ]] || return 0
    while read -r v c; do
        # side by side (the study's column order), so that equal maxima stay visible
        x=$(awk -v j="$(grep -nxF "$c" "$tmp/study-configs" | cut -d: -f1)" 'BEGIN { printf "%.2f", 0.68 + 0.08 * (j - 1) }')
        echo "set arrow from graph $x, first $v to graph $x + 0.08, first $v nohead $DASH lc rgb '$(cfg_colour "$c")' front"
        ((labels == 1)) || continue
        pos=$(awk -v v="$v" -v p="$prev" -v d="$top" 'BEGIN { d *= 0.05; print (p != "" && v - p < d) ? p + d : v }')
        echo "set label 'study $v' at graph 1.02, first $pos left tc rgb '$(cfg_colour "$c")'"
        prev=$pos
    done < <(for c in "$@"; do awk -v c="$c" '$1 == c { print $2, $1 }' "$tmp/study.$load"; done | sort -g)
}
# x_terms LOAD COLUMN CFG...: plot terms for COLUMN (2 = X, 3 = R) against N, N* circled
x_terms() {
    local load=$1 col=$2 c f out=""
    shift 2
    for c in "$@"; do
        [[ -f $tmp/xr.$c.$load ]] || continue
        f="'$tmp/xr.$c.$load'"
        out+="$f u 1:$col w lp lw 2 ps 1.2 $(cfg_style "$c") notitle, "
        out+="$f u 1:(\$6 == 1 ? \$$col : 1/0) w p pt 6 ps 3 lw 2 lc rgb '$(cfg_colour "$c")' notitle, "
    done
    echo "${out:-NaN notitle, }"
}
# key_terms CFG...: legend entries, one per configuration
key_terms() {
    local c out=""
    for c in "$@"; do out+="NaN w lp lw 2 $(cfg_style "$c") t '$c', "; done
    echo "$out"
}
# rows_of N COLS: the rows a grid of N cells in COLS columns needs
rows_of() { echo $((($1 + $2 - 1) / $2)); }

# ---- LOAD.png: X of the study's configurations, X of the others, R of all ----------------
for load in "${PRESENT[@]}"; do
    mapfile -t cfgs < <(awk '!s[$0]++' "$tmp/configs.$load")
    st=() other=()
    for c in "${cfgs[@]}"; do if is_study "$c"; then st+=("$c"); else other+=("$c"); fi; done
    np=$((1 + (${#st[@]} > 0) + (${#other[@]} > 0)))
    marks=""
    [[ ! -f $tmp/study.$load || ${#st[@]} == 0 ]] || marks=1
    title="$(label "$load"): throughput X and mean response time R against the number of users N"
    [[ -n $marks || ${#st[@]} == 0 ]] || title+=" (a load the study did not measure)"
    H=700 TOP=40 KEY=$((30 + 20 * ($(rows_of $((${#cfgs[@]} + 2)) 4))))
    {
        start "$R/plots/$load.png" $((np * 620)) $H 11 "$title"
        i=0
        if ((${#st[@]} > 0)); then
            top=$(ymax "$load" "${st[@]}")
            panel $i "$np" 1 $TOP "$KEY" $H
            echo "set title 'X: the study''s configurations, on this machine'"
            echo "set ylabel 'throughput X (requests/s)'"
            echo "set yrange [0:$top]"
            echo "set rmargin 14"
            study_marks "$load" "$top" 1 "${st[@]}"
            t=$(x_terms "$load" 2 "${st[@]}")
            echo "plot ${t%, }"
            echo "unset arrow; unset label; set rmargin 3"
            i=$((i + 1))
        fi
        if ((${#other[@]} > 0)); then
            panel $i "$np" 1 $TOP "$KEY" $H
            echo "set title 'X: $(IFS=,; echo "${other[*]}") (its own scale)'"
            echo "set ylabel 'throughput X (requests/s)'"
            echo "set yrange [0:*]"
            t=$(x_terms "$load" 2 "${other[@]}")
            echo "plot ${t%, }"
            i=$((i + 1))
        fi
        panel $i "$np" 1 $TOP "$KEY" $H
        echo "set title 'R: every configuration (log scale)'"
        echo "set ylabel 'mean response time R (ms)'"
        echo "set logscale y 10"
        echo "set yrange [*:*]"
        t=$(x_terms "$load" 3 "${cfgs[@]}")
        echo "plot ${t%, }"
        legend "$KEY" $H 4
        t="$(key_terms "${cfgs[@]}")$NSTAR_KEY, "
        [[ -z $marks ]] || t+="$STUDY_KEY, "
        echo "plot ${t%, }"
        echo "unset multiplot"
    } | gnuplot
done

# ---- throughput.png: the study's configurations, a small panel per load ---------------------
if ((${#STUDY_CFGS[@]} > 0)); then
    n=${#PRESENT[@]}
    cols=$((n < 3 ? n : 3))
    rows=$(rows_of "$n" $cols)
    TOP=50 KEY=$((30 + 20 * $(rows_of $((${#STUDY_CFGS[@]} + 2)) 4))) H=$((rows * 330 + 50 + KEY))
    {
        start "$R/plots/throughput.png" $((cols * 520)) $H 10 "Throughput X (requests/s) against the number of users N, per load: the study's four configurations measured on this machine; dashed near the right edge: the study's maximum (2017)"
        echo "set xlabel 'N'"
        echo "set ylabel 'X (requests/s)'"
        for i in "${!PRESENT[@]}"; do
            load=${PRESENT[i]}
            top=$(ymax "$load" "${STUDY_CFGS[@]}")
            panel "$i" $cols "$rows" $TOP "$KEY" $H
            echo "set title '$(label "$load")'"
            echo "set yrange [0:$top]"
            study_marks "$load" "$top" 0 "${STUDY_CFGS[@]}"
            t=$(x_terms "$load" 2 "${STUDY_CFGS[@]}")
            echo "plot ${t%, }"
            echo "unset arrow"
        done
        legend "$KEY" $H 4
        t="$(key_terms "${STUDY_CFGS[@]}")$NSTAR_KEY, $STUDY_KEY"
        echo "plot $t"
        echo "unset multiplot"
    } | gnuplot
fi

# ---- model-LOAD.png: measured against the bounds and the model, a column per configuration -
[[ -f $tmp/model ]] && model=1 || model=""
BOUND="dt 2 lw 2 lc rgb '#777777'"
MODEL="dt 3 lw 2 pt 2 lc rgb '#0072b2'"
MODEL1="dt 4 lw 2 pt 3 lc rgb '#009e73'"
KNEE="pt 4 ps 2.5 lw 2 lc rgb '#d55e00'"
MEASURED="lw 2 pt 7 lc rgb 'black'"
# model_plot FILE MEASURED BOUND MODEL MODEL_N1 [knee]: one panel's plot command, by the
# columns of an xr file (X: 2 4 7 8, R: 3 5 9 10); "knee" marks the model's knee (col 11) on MODEL.
model_plot() {
    local f=$1 m=$2 b=$3 p=$4 p1=$5 knee=$6 t
    t="$f u 1:$b w l $BOUND notitle, "
    if [[ -n $model ]]; then
        t+="$f u 1:$p w lp $MODEL notitle, $f u 1:$p1 w lp $MODEL1 notitle, "
        [[ -z $knee ]] || t+="$f u 1:(\$11 == 1 ? \$$p : 1/0) w p $KNEE notitle, "
    fi
    t+="$f u 1:$m w lp $MEASURED notitle, "
    t+="$f u 1:(\$6 == 1 ? \$$m : 1/0) w p pt 6 ps 3 lw 2 lc rgb 'black' notitle"
    echo "plot $t"
}
for load in "${PRESENT[@]}"; do
    mapfile -t cfgs < <(awk '!s[$0]++' "$tmp/configs.$load")
    n=${#cfgs[@]}
    title="$(label "$load"): measured against loadgen's asymptotic bounds"
    [[ -z $model ]] || title+=" and its queueing model (exact MVA)"
    TOP=40 KEY=90 H=$((2 * 380 + 40 + 90))
    {
        start "$R/plots/model-$load.png" $((n * 400)) $H 10 "$title"
        for i in "${!cfgs[@]}"; do
            f="'$tmp/xr.${cfgs[i]}.$load'"
            panel "$i" "$n" 2 $TOP $KEY $H
            echo "set title '${cfgs[i]}'"
            echo "set ylabel 'throughput X (requests/s)'"
            echo "unset logscale y; set yrange [0:*]"
            model_plot "$f" 2 4 7 8 knee
            panel $((i + n)) "$n" 2 $TOP $KEY $H
            echo "unset title"
            echo "set ylabel 'mean response time R (ms)'"
            echo "set logscale y 10; set yrange [*:*]"
            model_plot "$f" 3 5 9 10 ""
        done
        legend $KEY $H 3
        t="NaN w lp $MEASURED t 'measured', $NSTAR_KEY, "
        t+="NaN w l $BOUND t 'dashed: asymptotic bounds, X <= min(N / D, 1 / D_max), R >= max(D, N D_max)', "
        [[ -z $model ]] || t+="NaN w lp $MODEL t 'dotted: model with each point''s demands', NaN w lp $MODEL1 t 'dash-dot: model with the N = 1 demands', NaN w p $KNEE t 'square: the model''s knee (its N*)', "
        echo "plot ${t%, }"
        echo "unset multiplot"
    } | gnuplot
done

# ---- util-CONFIG.png: the resources CONFIG has, a panel per load ----------------------------
LINE80="dt (10,6) lw 2 lc rgb '#ff0000'"
for f in "$tmp"/loads.*; do
    cfg=${f##*/loads.}
    mapfile -t lds < <(for l in "${LOADS[@]}"; do ! grep -qxF "$l" "$f" || echo "$l"; done)
    [[ -s $tmp/ures.$cfg ]] || continue
    n=${#lds[@]}
    cols=$((n < 3 ? n : 3))
    rows=$(rows_of "$n" $cols)
    TOP=50 KEY=$((30 + 20 * $(rows_of $(($(wc -l <"$tmp/ures.$cfg") + 1)) 2))) # the 80% line too
    H=$((rows * 340 + TOP + KEY))
    {
        start "$R/plots/util-$cfg.png" $((cols * 560)) $H 10 "$cfg: utilization U against N. Solid: a resource (cpu:NAME = that process over the cores it can use); dashed: a pool of threads, its share of threads busy (running, waiting for a core, or blocked on anything but new work)"
        echo "set yrange [0:105]"
        echo "set ytics 0,20,100"
        echo "set ylabel 'U (%)'"
        echo "set xlabel 'N'"
        echo "set arrow from graph 0, first 80 to graph 1, first 80 nohead $LINE80 back"
        for i in "${!lds[@]}"; do
            load=${lds[i]}
            panel "$i" $cols "$rows" $TOP "$KEY" $H
            echo "set title '$(label "$load")'"
            t=""
            while IFS=$'\t' read -r col name _; do
                t+="'$tmp/u.$cfg.$load' u 1:$col w lp lw 2 ps 1.1 $(res_style "$name") notitle, "
            done <"$tmp/ures.$cfg"
            echo "plot ${t%, }"
        done
        legend "$KEY" $H 2
        t=""
        while IFS=$'\t' read -r col name title; do
            t+="NaN w lp lw 2 $(res_style "$name") t '${title//\'/\'\'}', "
        done <"$tmp/ures.$cfg"
        echo "plot ${t}NaN w l $LINE80 t '80%: past it, queues and R grow fast'"
        echo "unset multiplot"
    } | gnuplot
done
log "plots in $R/plots"
