#!/usr/bin/env bash
# The plots of a reproduction run, from its merged points.csv only (rerun it any time):
#   RESULTS/plots/LOAD.png         throughput X and mean response time R against N, one line per
#                                  configuration, N* marked, loadgen's asymptotic bounds dashed
#                                  (x_upper_rps = min(N / D, 1 / D_max), r_lower_ms = max(D, N D_max)),
#                                  the queueing model dotted (each point's demands) and dash-dotted
#                                  (the N = 1 demands), its knee marked with a square
#   RESULTS/plots/util-CONFIG.png  utilization of every resource against N, a panel per load
#
#   scripts/plot.sh RESULTS_DIR
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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

# One file per (config, load) with: N X R X_bound R_bound is_nstar X_model X_model_n1 R_model
# R_model_n1 is_knee_model (NaN where a cell is empty), sorted by N; and one per
# (config, load) with N and every u_* column (in %), with a header line for the legend.
awk -F, -v dir="$tmp" '
    NR == 1 {
        for (i = 1; i <= NF; i++) { h[$i] = i; if ($i ~ /^u_/) u[++nu] = i }
        next
    }
    $(h["type"]) != "all" { next }
    {
        cfg = $(h["config"]); load = $(h["load"]); key = cfg "." load
        if (!(key in seen)) {
            seen[key] = 1; print cfg > (dir "/configs." load); print load > (dir "/loads." cfg)
            s = "N"; for (j = 1; j <= nu; j++) if ($(u[j]) != "") s = s " " resource(h_name(u[j]))
            print s > (dir "/u." key)
        }
        print $(h["users"]), $(h["x_rps"]), $(h["r_mean_ms"]), v("x_upper_rps"), \
              v("r_lower_ms"), $(h["is_nstar"]), v("x_model_rps"), v("x_model_n1_rps"), \
              v("r_model_ms"), v("r_model_n1_ms"), v("is_knee_model") > (dir "/xr." key)
        s = $(h["users"]); for (j = 1; j <= nu; j++) if ($(u[j]) != "") s = s " " 100 * $(u[j])
        print s > (dir "/u." key)
    }
    function h_name(i,   k) { for (k in h) if (h[k] == i) return k }
    # a column that may be absent (runs made before the model) or empty: NaN for gnuplot
    function v(name) { return (name in h) && $(h[name]) != "" ? $(h[name]) : "NaN" }
    # back to loadgen'"'"'s resource names: u_cpu_server2 -> cpu:server2
    function resource(col) { col = substr(col, 3); if (col ~ /^(cpu|disk)_/) sub(/_/, ":", col); return col }
' "$CSV"
for f in "$tmp"/xr.*; do sort -n -o "$f" "$f"; done # an auto sweep bisects: N comes unsorted
for f in "$tmp"/u.*; do { head -n1 "$f"; tail -n +2 "$f" | sort -n; } >"$f.s" && mv "$f.s" "$f"; done

LOADS=(new get-1KB get-10KB get-100KB get-1MB get-10MB get-100MB put-4KB put-1MB)
label() {
    case $1 in
    new) echo "new account (POST /users)" ;;
    get-*) echo "GET ${1#get-} file" ;;
    put-*) echo "PUT ${1#put-} durable upload" ;;
    esac
}
common="set terminal $TERM_PNG size 1600,650 font 'sans,11' noenhanced
set logscale x 2
set grid
set key top left box opaque
set xlabel 'N (closed-loop users)'"

for load in "${LOADS[@]}"; do
    [[ -f $tmp/configs.$load ]] || continue
    mapfile -t cfgs < <(awk '!s[$0]++' "$tmp/configs.$load")
    xplot="" rplot=""
    for i in "${!cfgs[@]}"; do
        f="'$tmp/xr.${cfgs[i]}.$load'" lt=$((i + 1))
        xplot+="$f u 1:2 w lp lt $lt lw 2 pt 7 t '${cfgs[i]}', $f u 1:4 w l lt $lt dt 2 notitle, "
        xplot+="$f u 1:(\$6 == 1 ? \$2 : 1/0) w p lt $lt pt 6 ps 3 lw 2 notitle, "
        xplot+="$f u 1:7 w l lt $lt dt 3 lw 2 notitle, $f u 1:8 w l lt $lt dt 4 lw 1 notitle, "
        xplot+="$f u 1:(\$11 == 1 ? \$7 : 1/0) w p lt $lt pt 4 ps 2.5 lw 2 notitle, "
        rplot+="$f u 1:3 w lp lt $lt lw 2 pt 7 t '${cfgs[i]}', $f u 1:5 w l lt $lt dt 2 notitle, "
        rplot+="$f u 1:(\$6 == 1 ? \$3 : 1/0) w p lt $lt pt 6 ps 3 lw 2 notitle, "
        rplot+="$f u 1:9 w l lt $lt dt 3 lw 2 notitle, $f u 1:10 w l lt $lt dt 4 lw 1 notitle, "
    done
    gnuplot <<EOF
$common
set output '$R/plots/$load.png'
set multiplot layout 1,2 title '$(label "$load"): solid = measured, dashed = asymptotic bound, circle = N*; model (exact MVA): dotted = each point''s demands, square = its knee, dash-dot = N = 1 demands'
set ylabel 'throughput X (requests/s)'
set yrange [0:*]
plot ${xplot%, }
set ylabel 'mean response time R (ms)'
set logscale y 10
set yrange [*:*]
plot ${rplot%, }
unset multiplot
EOF
done

for f in "$tmp"/loads.*; do
    cfg=${f##*/loads.}
    mapfile -t lds < <(awk '!s[$0]++' "$f")
    cols=$((${#lds[@]} < 3 ? ${#lds[@]} : 3))
    rows=$(((${#lds[@]} + cols - 1) / cols))
    {
        echo "$common"
        echo "set terminal $TERM_PNG size $((cols * 560)),$((rows * 420 + 40)) font 'sans,10' noenhanced"
        echo "set output '$R/plots/util-$cfg.png'"
        echo "set yrange [0:140]"
        echo "set ytics 0,20,100"
        echo "set ylabel 'utilization U (%)'"
        echo "set key top left horizontal maxrows 3 font ',8' samplen 2"
        echo "set multiplot layout $rows,$cols title '$cfg: utilization of every resource against N (cpu = the whole machine, cpu:NAME = that process over the cores it can use)'"
        for load in "${lds[@]}"; do
            n=$(head -n1 "$tmp/u.$cfg.$load" | wc -w)
            echo "set title '$(label "$load")'"
            echo "plot for [i=2:$n] '$tmp/u.$cfg.$load' u 1:i w lp lw 2 pt 7 t columnheader(i)"
        done
        echo "unset multiplot"
    } | gnuplot
done
log "plots in $R/plots"
