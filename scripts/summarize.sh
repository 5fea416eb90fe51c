#!/usr/bin/env bash
# The tables of a reproduction run, computed from loadgen's CSVs only (rerun it any time):
#   RESULTS/points.csv              every point of every configuration and load: config, load,
#                                   then loadgen's columns (the union, in order of appearance)
#   RESULTS/table.csv               one row per configuration and load: N*, R at N*, X max,
#                                   the bottleneck at X max and its U, CPU by process, checks,
#                                   the queueing model's knee and how many points it predicts
#                                   within 10% (per-N demands and N = 1 demands), and the knee:
#                                   saturated (the largest U at X max, hardware or a pool of the
#                                   stack's threads busy / k, is >= 80%), flat (X stopped growing
#                                   before the largest N) or not-reached (X still rising)
#   RESULTS/CONFIG/bottleneck.md    the study's bottleneck table for one configuration
#   RESULTS/summary.md              Findings first (scripts/findings.py: the study's claims
#                                   against this run), then X max per load and configuration next
#                                   to the study's (the put loads, durable uploads, are not in the
#                                   study: measured rows only, left out of the comparison)
#
#   scripts/summarize.sh RESULTS_DIR
#
# Input: RESULTS/CONFIG/LOAD/points.csv (loadgen --out), RESULTS/configs.tsv and
# RESULTS/run.tsv (written by reproduce.sh), results/study-2017.csv (the study's summary).
# shellcheck disable=SC2016  # the backquotes in printf formats are Markdown
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
(($# == 1)) || die "usage: ${0##*/} RESULTS_DIR"
R=$(cd "$1" && pwd)
[[ -f $R/configs.tsv ]] || die "$R/configs.tsv missing: not a reproduce.sh results dir"
STUDY=$TOP/results/study-2017.csv
LOADS=(new get-1KB get-10KB get-100KB get-1MB get-10MB get-100MB put-4KB put-1MB)

mapfile -t CONFIGS < <(awk -F'\t' 'NR > 1 { print $1 }' "$R/configs.tsv")
runinfo() { [[ ! -f $R/run.tsv ]] || awk -F"\t" -v k="$1" '$1 == k { print $2 }' "$R/run.tsv"; }
# One argon2id hash or verify at --hash-cost min, on a 2-vCPU EPYC VM: the run says which
# figure applies (run.tsv hash_us); runs made before it said were libsodium's, about 28 us
# (the design document, "Numbers measured on a machine like yours").
HASH_US=$(runinfo hash_us)
HASH_US=${HASH_US:-28}
# ---- merge the per-load CSVs ---------------------------------------------------------------
files=()
for c in "${CONFIGS[@]}"; do
    for l in "${LOADS[@]}"; do
        [[ ! -s $R/$c/$l/points.csv ]] || files+=("$c/$l/points.csv")
    done
done
((${#files[@]} > 0)) || die "no $R/*/*/points.csv: nothing was measured"
(
    cd "$R"
    # pass 1 collects the union of the headers, pass 2 prints every row under it
    awk -F, '
        pass == 1 && FNR == 1 { for (i = 1; i <= NF; i++) if (!($i in seen)) { seen[$i] = 1; cols[++nc] = $i } }
        pass == 1 { next }
        FNR == 1 {
            if (!header++) { s = "config,load"; for (j = 1; j <= nc; j++) s = s "," cols[j]; print s }
            delete h; for (i = 1; i <= NF; i++) h[$i] = i; split(FILENAME, path, "/"); next
        }
        {
            s = path[1] "," path[2]
            for (j = 1; j <= nc; j++) s = s "," (cols[j] in h ? $(h[cols[j]]) : "")
            print s
        }' pass=1 "${files[@]}" pass=2 "${files[@]}"
) >"$R/points.csv"

# ---- one row per configuration and load ----------------------------------------------------
backends=$(awk -F'\t' 'NR > 1 { printf "%s=%s ", $1, $2 }' "$R/configs.tsv")
cached=$(awk -F'\t' 'NR > 1 && $3 !~ /--auth-cache 0( |$)/ { printf "%s ", $1 }' "$R/configs.tsv")
awk -F, -v hash_us="$HASH_US" -v backends="$backends" -v cached="$cached" '
    function num(v) { return v == "" ? 0 : v + 0 }
    NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    { delete c; for (k in h) c[k] = $(h[k]) }
    c["type"] != "all" { next }
    {
        key = c["config"] SUBSEP c["load"]
        if (!(key in npts)) order[++nkeys] = key
        npts[key]++
        err[key] += num(c["errors"])
        l = c["little_rel_diff"]; l = l < 0 ? -l : l
        if (l > little[key]) { little[key] = l; littlen[key] = c["users"] }
        if (!(key in xmax) || c["x_rps"] + 0 > xmax[key] + 0) { xmax[key] = c["x_rps"]; atmax(key) }
        if (!(key in nlarge) || c["users"] + 0 > nlarge[key] + 0) nlarge[key] = c["users"]
        if (c["is_knee_model"] == 1) kmodel[key] = c["users"]
        if (c["is_knee_model_n1"] == 1) kmodel1[key] = c["users"]
        if (c["err_model"] != "") {
            npm[key]++
            e = c["err_model"] + 0; wpm[key] += (e <= 0.1 && e >= -0.1)
            e = c["err_model_n1"] + 0; wpm1[key] += (e <= 0.1 && e >= -0.1)
        }
        if (c["is_nstar"] == 1) {
            nstar[key] = c["users"]; rnstar[key] = c["r_mean_ms"]; xnstar[key] = c["x_rps"]
            # below 0.1 cores, server2 is idle and its share is noise (/proc counts 10 ms ticks)
            s2 = num(c["cpu_core_pct_server2"]) / 100
            share[key] = s2 >= 0.1 ? 100 * c["x_rps"] * hash_us * 1e-6 / s2 : ""
            s2us[key] = s2 >= 0.1 ? 1e6 * s2 / c["x_rps"] : ""
        }
    }
    # what the point of maximum throughput says about the bottleneck
    function atmax(key,   k, best, name, other) {
        nxmax[key] = c["users"]
        bn[key] = c["bottleneck"]; name = bn[key]; sub(":", "_", name)
        ub[key] = c["u_" name]
        best = ""
        for (k in c) if (k ~ /^u_/ && c[k] != "" && (best == "" || c[k] + 0 > c[best] + 0)) best = k
        best = substr(best, 3)   # back to loadgen'"'"'s resource names: u_cpu_server2 -> cpu:server2
        if (best ~ /^(cpu|disk)_/) sub(/_/, ":", best)
        argmax[key] = best
        lgb[key] = c["lg_bottleneck"]
        other = 100 * num(c["u_cpu"])
        for (k in c) if (k ~ /^cpu_machine_pct_/) other -= num(c[k])
        oth[key] = other
        s1c[key] = num(c["cpu_core_pct_server1"]) / 100
        s2c[key] = num(c["cpu_core_pct_server2"]) / 100
        rdc[key] = num(c["cpu_core_pct_redis-server"]) / 100
        myc[key] = num(c["cpu_core_pct_mariadbd"]) / 100
        lgc[key] = num(c["cpu_core_pct_loadgen"]) / 100
        # the busiest software station (thread samples): the largest share of its threads busy;
        # sw_share: the same without the load generator'"'"'s own lg-*; s2: server2'"'"'s pool
        swn[key] = swb[key] = swk[key] = shn[key] = sh[key] = shk[key] = shbl[key] = ""
        s2n[key] = s2b[key] = s2bl[key] = s2k[key] = ""
        for (k in c) {
            if (k !~ /^sw_busy_/ || c[k] == "") continue
            name = substr(k, 9)
            if (c["sw_threads_" name] + 0 < 1) continue
            if (swn[key] == "" || c[k] / c["sw_threads_" name] > swb[key] / swk[key]) {
                swn[key] = name; swb[key] = c[k]; swk[key] = c["sw_threads_" name]
            }
            if (name !~ /^lg-/ && (shn[key] == "" || c[k] / c["sw_threads_" name] > sh[key])) {
                shn[key] = name; sh[key] = c[k] / c["sw_threads_" name]
                shk[key] = c["sw_threads_" name]
                shbl[key] = ("sw_blocked_" name) in c ? num(c["sw_blocked_" name]) / shk[key] : ""
            }
            if (name ~ /^s2-(wrk|proc)$/ && c["sw_threads_" name] + 0 > s2k[key] + 0) {
                s2n[key] = name; s2b[key] = c[k]; s2bl[key] = ("sw_blocked_" name) in c ? c["sw_blocked_" name] : ""
                s2k[key] = c["sw_threads_" name]
            }
        }
        ucpu[key] = c["u_cpu"]; udisk[key] = ""
        for (k in c) if (k ~ /^u_disk_/ && c[k] != "" && (udisk[key] == "" || c[k] + 0 > udisk[key] + 0)) udisk[key] = c[k]
    }
    # knee KEY: saturated (hardware or software U >= 80% at X max), flat (X stopped growing
    # before the largest N, nothing at 80%) or not-reached (X still rising at the largest N)
    function knee(key,   u) {
        u = num(ub[key]); if (sh[key] != "" && sh[key] + 0 > u) u = sh[key] + 0
        usat[key] = u
        if (u >= 0.80) return "saturated"
        if (nstar[key] != "" && nstar[key] + 0 < nlarge[key] + 0) return "flat"
        return "not-reached"
    }
    END {
        n = split(backends, b, " "); for (i = 1; i <= n; i++) { split(b[i], kv, "="); be[kv[1]] = kv[2] }
        n = split(cached, b, " "); for (i = 1; i <= n; i++) iscached[b[i]] = 1
        print "config,load,points,nstar,r_at_nstar_ms,x_at_nstar_rps,x_max_rps,n_at_x_max," \
              "bottleneck,u_bottleneck,largest_u,loadgen_bound,cores_server1,cores_server2," \
              "cores_db,cores_loadgen,other_cpu_pct,errors,little_max_pct,server2_us_per_req," \
              "hash_share_pct,nstar_model,nstar_model_n1,model_points,model_within10,"\
              "model_n1_within10,sw_busiest,sw_busy,sw_threads,n_largest,sw_share,sw_share_name,"\
              "sw_share_threads,sw_share_blocked,"\
              "u_sat,knee,u_cpu,u_disk,s2_pool,s2_busy,s2_blocked,s2_threads"
        for (i = 1; i <= nkeys; i++) {
            key = order[i]; split(key, kc, SUBSEP)
            db = be[kc[1]] == "redis" ? rdc[key] : myc[key]
            hs = (kc[1] in iscached) && kc[2] != "new" ? "cached" : share[key]
            kn = knee(key)
            printf "%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%.2f,%.2f,%.2f,%.0f,%d,%.1f,%s,%s,%s,%s,%d,%d,%d,%s,%s,%s,",
                kc[1], kc[2], npts[key], nstar[key], rnstar[key], xnstar[key], xmax[key],
                nxmax[key], bn[key], ub[key], argmax[key], lgb[key], s1c[key], s2c[key], db,
                lgc[key], oth[key], err[key], 100 * little[key], s2us[key], hs, kmodel[key],
                kmodel1[key], npm[key], wpm[key], wpm1[key], swn[key], swb[key], swk[key]
            printf "%s,%s,%s,%s,%s,%.4f,%s,%s,%s,%s,%s,%s,%s\n", nlarge[key],
                sh[key] == "" ? "" : sprintf("%.4f", sh[key]), shn[key], shk[key],
                shbl[key] == "" ? "" : sprintf("%.4f", shbl[key]), usat[key], kn,
                ucpu[key], udisk[key], s2n[key], s2b[key], s2bl[key], s2k[key]
        }
    }' "$R/points.csv" >"$R/table.csv"

# ---- markdown ------------------------------------------------------------------------------
label() {
    case $1 in
    new) echo "new account" ;;
    get-*) echo "get ${1#get-}" ;;
    put-*) echo "put ${1#put-}" ;;
    esac
}
size() { [[ $1 == new ]] && echo "–" || echo "${1#*-}"; }
study_name() {
    case $1 in
    mp-noprefetch-mysql) echo "MT-MP, no prefetch, MySQL" ;;
    mt-noprefetch-mysql) echo "MT-MT, no prefetch, MySQL" ;;
    mt-prefetch-mysql) echo "MT-MT, prefetch, MySQL" ;;
    mt-prefetch-redis) echo "MT-MT, prefetch, Redis" ;;
    *-tls) echo "$(study_name "${1%-tls}" | sed 's/^(not in the study)$/ours/'), over HTTPS" ;;
    *) echo "(not in the study)" ;;
    esac
}
# Numbers as the study printed them: 3 significant digits below 1000, integers above.
fmt() { awk -v x="$1" 'BEGIN { if (x == "") print "–"; else if (x >= 1000) printf "%.0f\n", x; else printf "%.3g\n", x }'; }
# field CONFIG LOAD COLUMN: one value of table.csv
field() { csv_get "$R/table.csv" "c[\"config\"] == \"$1\" && c[\"load\"] == \"$2\"" "$3"; }
study() { csv_get "$STUDY" "c[\"load\"] == \"$2\"" "$1"; }
loads_present() {
    local l
    for l in "${LOADS[@]}"; do
        [[ -z $(awk -F, -v l="$l" 'NR > 1 && $2 == l { print; exit }' "$R/table.csv") ]] || echo "$l"
    done
}
mapfile -t PRESENT < <(loads_present)
# the loads measured here that the study has a row for (it has no put)
mapfile -t IN_STUDY < <(for l in "${PRESENT[@]}"; do
    [[ -z $(study load "$l") ]] || echo "$l"
done)
header() {
    local c line="| load |" sep="|---|"
    for c in "${CONFIGS[@]}"; do line+=" $c |"; sep+="---:|"; done
    printf '%s\n%s\n' "$line" "$sep"
}
# pivot FUNC [study]: a table with a row per load and a column per configuration; FUNC CONFIG
# LOAD prints one cell. With "study", only the loads the study measured.
pivot() {
    local l c line rows=("${PRESENT[@]}")
    if [[ ${2:-} == study ]]; then
        rows=("${IN_STUDY[@]}")
        ((${#rows[@]} > 0)) || { echo "(none of this run's loads is in the study)"; return; }
    fi
    header
    for l in "${rows[@]}"; do
        line="| $(label "$l") |"
        for c in "${CONFIGS[@]}"; do line+=" $("$1" "$c" "$l") |"; done
        printf '%s\n' "$line"
    done
}
# what HTTPS costs (reproduce.sh --tls): per load and configuration, X max over HTTPS / plain
mapfile -t TLS_BASES < <(for c in "${CONFIGS[@]}"; do
    [[ $c != *-tls ]] || echo "${c%-tls}"
done)
cell_tls() {
    local x t
    x=$(field "$1" "$2" x_max_rps)
    t=$(field "$1-tls" "$2" x_max_rps)
    [[ -n $x && -n $t ]] || { echo "–"; return; }
    awk -v x="$x" -v t="$t" 'BEGIN { printf "%.2f\n", t / x }'
}
tls_table() {
    local l c line sep
    ((${#TLS_BASES[@]} > 0)) || return 0
    printf '## What HTTPS costs: X max over HTTPS / X max over plain HTTP\n\n'
    printf 'The same server1 (one more port, `--tls-port`: TLS 1.3, an ECDSA P-256 certificate),\n'
    printf 'loadgen over `https://` on kept connections (a handshake per user, not per request).\n\n'
    line="| load |" sep="|---|"
    for c in "${TLS_BASES[@]}"; do line+=" $c |"; sep+="---:|"; done
    printf '%s\n%s\n' "$line" "$sep"
    for l in "${PRESENT[@]}"; do
        line="| $(label "$l") |"
        for c in "${TLS_BASES[@]}"; do line+=" $(cell_tls "$c" "$l") |"; done
        printf '%s\n' "$line"
    done
    echo
}
# knee_mark CONFIG LOAD: "†" when the sweep's knee was not reached, "‡" when X went flat with
# nothing saturated (table.csv's knee), "" otherwise (saturated, or no such sweep)
knee_mark() {
    case $(field "$1" "$2" knee) in
    not-reached) echo "†" ;;
    flat) echo "‡" ;;
    esac
}
# largest_u CONFIG LOAD: the busiest station at X max, hardware or software: "cpu 72%" or
# "threads s1-wrk 69% (1.4 of 2 busy)"
largest_u() {
    local b u sh shn shk
    IFS=$'\t' read -r b u sh shn shk < <(field "$1" "$2" "bottleneck u_bottleneck sw_share sw_share_name sw_share_threads")
    awk -v b="$b" -v u="$u" -v s="$sh" -v n="$shn" -v k="$shk" 'BEGIN {
        if (n != "" && s + 0 > u + 0) printf "threads %s %.0f%% (%.1f of %d busy)\n", n, 100 * s, s * k, k
        else printf "%s %.0f%%\n", b, 100 * u }'
}
# knee_words CONFIG LOAD: the knee column of bottleneck.md
knee_words() {
    local k n nl
    IFS=$'\t' read -r k n nl < <(field "$1" "$2" "knee nstar n_largest")
    case $k in
    saturated) echo "saturated" ;;
    flat) echo "not saturated: X flat from N* = $n on, no resource at 80% (largest U $(largest_u "$1" "$2"))" ;;
    not-reached) echo "knee not reached: not saturated (X still rising at N = $nl, largest U $(largest_u "$1" "$2"))" ;;
    *) echo "–" ;;
    esac
}
# knee_legend: the words for the marks, under each table that carries them
knee_legend() {
    local m
    m=$(cut -d, -f1-2 "$R/table.csv" | tail -n +2 | while IFS=, read -r c l; do knee_mark "$c" "$l"; done | sort -u | tr -d '\n')
    [[ $m != *†* ]] || printf '\n† knee not reached: not saturated (X still rising at the largest N measured, no resource at 80%%).'
    [[ $m != *‡* ]] || printf '\n‡ not saturated: X flat from N* on, no resource at 80%% (largest U: the bottleneck table).'
    [[ -z $m ]] || echo
}
cell_x() { echo "$(fmt "$(field "$1" "$2" x_max_rps)")$(knee_mark "$1" "$2")"; }
cell_study() { local v; v=$(study "$1" "$2" 2>/dev/null); echo "${v:-–}"; }
cell_ratio() {
    local x s
    x=$(field "$1" "$2" x_max_rps)
    s=$(study "$1" "$2" 2>/dev/null)
    [[ -n $x && -n $s ]] || { echo "–"; return; }
    awk -v x="$x" -v s="$s" 'BEGIN { printf "%.2f\n", x / s }'
}
cell_nstar() {
    local n r
    IFS=$'\t' read -r n r < <(field "$1" "$2" "nstar r_at_nstar_ms")
    [[ -n $n ]] && echo "$n / $(fmt "$r") ms$(knee_mark "$1" "$2")" || echo "–"
}
# "model / measured" knee, per-N demands, then the N = 1 demands' in brackets
cell_model() {
    local n k k1
    IFS=$'\t' read -r n k k1 < <(field "$1" "$2" "nstar nstar_model nstar_model_n1")
    [[ -n $n ]] || { echo "–"; return; }
    echo "${k:-–} / $n (${k1:-–})"
}
# How the model did over the whole run: points within 10%, knees within 25% of N*.
model_totals() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    function v(name) { return $(h[name]) }
    function ok(k, n) { return k != "" && n != "" && k / n - 1 <= 0.25 && 1 - k / n <= 0.25 }
    v("model_points") > 0 {
        s++; p += v("model_points"); w += v("model_within10"); w1 += v("model_n1_within10")
        kk += ok(v("nstar_model"), v("nstar")); kk1 += ok(v("nstar_model_n1"), v("nstar"))
    } END {
        if (s == 0) { print "- no sweep has a model (open loop, or no resource samples)"; exit }
        printf "- each point'"'"'s own demands (per-N): X within 10%% of the measured X at %d of %d points; knee within 25%% of N\\* in %d of %d sweeps\n", w, p, kk, s
        printf "- the N = 1 demands for every N: X within 10%% at %d of %d points; knee within 25%% of N\\* in %d of %d sweeps\n", w1, p, kk1, s
    }' "$R/table.csv"
}
# the largest U at X max: a pool of threads when its share busy is larger than any hardware U
# ("threads s2-proc 99% (2.0 of 2 busy); cpu 67% (db 0.55 cores)"), then the knee's mark
cell_bottleneck() {
    local b u sh top
    IFS=$'\t' read -r b u sh < <(field "$1" "$2" "bottleneck u_bottleneck sw_share")
    [[ -n $b ]] || { echo "–"; return; }
    top=$(top_cpu "$1" "$2")
    awk -v b="$b" -v u="$u" -v s="$sh" -v t="$top" -v w="$(largest_u "$1" "$2")" -v m="$(knee_mark "$1" "$2")" \
        'BEGIN { printf "%s%s %.0f%% (%s)%s\n", (s + 0 > u + 0 ? w "; " : ""), b, 100 * u, t, m }'
}
cell_share() {
    local s
    s=$(field "$1" "$2" hash_share_pct)
    case $s in
    "") echo "–" ;;
    cached) echo "cache" ;;
    *) awk -v s="$s" 'BEGIN { printf "%.0f%%\n", s }' ;;
    esac
}
# top_cpu CONFIG LOAD: the stack process using the most CPU at X max
top_cpu() {
    local s1 s2 db
    IFS=$'\t' read -r s1 s2 db < <(field "$1" "$2" "cores_server1 cores_server2 cores_db")
    awk -v a="$s1" -v b="$s2" -v d="$db" 'BEGIN {
        if (a >= b && a >= d) printf "server1 %.2f cores\n", a
        else if (b >= d) printf "server2 %.2f cores\n", b
        else printf "db %.2f cores\n", d }'
}

# flags_of CONFIG COLUMN: a column of configs.tsv ("–" if the run did not record it)
flags_of() {
    awk -F'\t' -v c="$1" -v f="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
        $1 == c { print (f in h) ? $h[f] (f ~ /pct$/ ? "%" : "") : "–" }' "$R/configs.tsv"
}

write_bottleneck_md() {
    local c=$1 l n r x nx b u lb s1 s2 db lg oth swn swb swk line
    {
        printf '# Bottleneck table: %s\n\n' "$c"
        printf '%s. Backend %s; server2 `%s`; server1 `%s`.\n\n' "$(study_name "$c")" \
            "$(flags_of "$c" backend)" "$(flags_of "$c" server2)" "$(flags_of "$c" server1)"
        echo "| load type | file size | N* | mean R at N* (ms) | max throughput (req/s) | bottleneck at X max (U) | CPU cores at X max: server1 / server2 / db / loadgen | CPU outside the stack | busiest threads at X max (busy of k) | knee |"
        echo "|---|---|---:|---:|---:|---|---|---:|---|---|"
        for l in "${PRESENT[@]}"; do
            IFS=$'\t' read -r n r x nx b u lb s1 s2 db lg oth swn swb swk < <(field "$c" "$l" \
                "nstar r_at_nstar_ms x_max_rps n_at_x_max bottleneck u_bottleneck loadgen_bound cores_server1 cores_server2 cores_db cores_loadgen other_cpu_pct sw_busiest sw_busy sw_threads") || true # no row: this load was not measured here
            [[ -n $x ]] || continue
            line="| $(label "$l" | cut -d' ' -f1) | $(size "$l") | $n | $(fmt "$r") | $(fmt "$x") (N=$nx) |"
            line+=" $(awk -v b="$b" -v u="$u" 'BEGIN { printf "%s (%.0f%%)", b, 100 * u }')"
            [[ $lb != 1 ]] || line+=" **loadgen-bound**"
            line+=" | $s1 / $s2 / $db / $lg | $oth% | "
            if [[ -n $swn ]]; then
                line+=$(awk -v n="$swn" -v b="$swb" -v k="$swk" 'BEGIN { printf "%s %.2f/%d", n, b, k }')
            else
                line+="–"
            fi
            line+=" | $(knee_words "$c" "$l") |"
            printf '%s\n' "$line"
        done
        cat <<EOF

N* is the smallest measured N whose throughput is within 5% of the sweep's maximum (loadgen's
\`is_nstar\`); R at N* is the mean response time there; max throughput is the largest X of the
sweep. The bottleneck is the resource with the largest utilization, hence the largest service
demand D = U / X, at the point of maximum throughput: \`cpu\` is the whole machine (all cores),
\`cpu:NAME\` one process group over the cores it can use, \`disk:DEV\` the time the disk had I/O in
flight, \`redis\` the time Redis spent in commands. "CPU outside the stack" is the machine's CPU
minus every watched process (loadgen included), in % of the machine: kernel threads (ksoftirqd
doing deferred loopback TCP work, about 20% with large files; kworkers for disk I/O; under 7%
with small files on an otherwise idle machine) and whatever else ran on this shared machine (see
"machine busy just before" in summary.md). Busiest threads: the software station (a pool of k
worker threads of one program, or a lone thread) with the largest share of its threads busy at X
max: running, waiting for a core, or blocked on anything but new work (see
docs/design/model.md, "Software stations"); runs without thread samples show "–". Knee:
"saturated" when the largest U at X max, hardware or a pool of threads of the stack (busy / k),
is 80% or more; otherwise the sweep is not saturated: X went flat from N* on (N* below the
largest N measured), or X was still rising at the largest N (knee not reached: a larger N may
give more). Per-point figures:
\`points.csv\` of each load.
EOF
    } >"$R/$c/bottleneck.md"
}
for c in "${CONFIGS[@]}"; do [[ -d $R/$c ]] && write_bottleneck_md "$c"; done

# share_check: server2's CPU per get request with the auth cache off and on (same stack
# otherwise): their difference is what one argon2id verify costs server2 here.
share_check() {
    local l off on
    [[ " ${CONFIGS[*]} " == *" mt-prefetch-redis "* && " ${CONFIGS[*]} " == *" ours "* ]] || return 0
    echo
    echo "Cross-check from this run: server2's CPU per request at N* with the auth cache off"
    echo "(mt-prefetch-redis) and on (ours); the difference is roughly one argon2id verify."
    echo
    echo "| load | server2 µs/request, cache off | cache on | difference |"
    echo "|---|---:|---:|---:|"
    for l in "${PRESENT[@]}"; do
        [[ $l != new ]] || continue
        off=$(field mt-prefetch-redis "$l" server2_us_per_req)
        on=$(field ours "$l" server2_us_per_req)
        [[ -n $off && -n $on ]] || continue
        awk -v l="$(label "$l")" -v a="$off" -v b="$on" 'BEGIN { printf "| %s | %.1f | %.1f | %.1f |\n", l, a, b, a - b }'
    done
}

# put_note: a line under the study's table when this run measured loads the study did not
put_note() {
    local l s=""
    for l in "${PRESENT[@]}"; do
        [[ " ${IN_STUDY[*]} " == *" $l "* ]] || s+="${s:+, }$(label "$l")"
    done
    [[ -z $s ]] || printf '\nNot in the study (measured on this machine only): %s.\n' "$s"
}

# Little's law at every closed-loop point of points.csv: the points off by more than 5% (a
# window of 20 (R + Z) holds it to about that: loadgen's window rule), with their windows
little_points() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    function v(name) { return (name in h) ? $(h[name]) : "" }
    v("type") == "all" && v("loop") == "closed" && v("little_rel_diff") != "" {
        n++; l = v("little_rel_diff") + 0
        if (l <= 0.05 && l >= -0.05) next
        cyc = v("r_mean_ms") + v("think_ms"); w = v("window_s") + 0
        list = list sprintf("%s %s/%s N = %s: %+.1f%%, window %.1f s = %.1f (R + Z), %d completions%s",
            k++ ? ";" : "", v("config"), v("load"), v("users"), 100 * l, w,
            cyc > 0 ? 1000 * w / cyc : 0, v("ok") + v("errors"),
            v("window_rule") != "" ? " (" v("window_rule") ")" : "")
    } END {
        if (k == 0) printf "- Little'"'"'s law within 5%% at all %d closed-loop points\n", n
        else printf "- **Little'"'"'s law off by more than 5%% at %d of %d points:**%s. A window holds 20 (R + Z) and 200 completions at least, up to --window-max (`window_rule` in points.csv: met, capped at --window-max, short, off)\n", k, n, list
    }' "$R/points.csv"
}

# Are the numbers what they should be? (the columns are table.csv's, see its header)
checks() {
    local busy
    busy=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
        NR > 1 && ("busy_before_pct" in h) && $h["busy_before_pct"] + 0 >= m { m = $h["busy_before_pct"]; c = $1 }
        END { if (c != "") printf "%d%% (before %s)", m, c }' "$R/configs.tsv")
    awk -F, -v busy="$busy" -v little_list="$(little_points)" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    function v(name) { return $(h[name]) }
    {
        n++; err += v("errors")
        if (v("little_max_pct") + 0 > little) { little = v("little_max_pct"); lw = v("config") "/" v("load") }
        if (v("bottleneck") != v("largest_u"))
            bad = bad sprintf(" %s/%s (%s named, %s largest U)", v("config"), v("load"), v("bottleneck"), v("largest_u"))
        if (v("loadgen_bound") == 1) lgb = lgb " " v("config") "/" v("load")
        if (v("other_cpu_pct") + 0 > other) { other = v("other_cpu_pct"); ow = v("config") "/" v("load") }
        sat += v("knee") == "saturated"; flat += v("knee") == "flat"
        if (v("knee") == "not-reached") nr = nr ", " v("config") "/" v("load") " (N = " v("n_largest") ")"
    } END {
        printf "- %d sweeps; errors in all points together: %d\n", n, err
        printf "- Little'"'"'s law, |X (R + Z) / N - 1|: at most %.1f%% (%s); short points with slow requests at the window'"'"'s edges make it larger\n", little, lw
        print little_list
        if (bad == "") print "- the named bottleneck is the largest utilization (so the largest demand U / X) at X max in every sweep"
        else print "- **bottleneck is not the largest U in:**" bad
        if (lgb != "") print "- **loadgen itself was the bottleneck in:**" lgb
        printf "- CPU not charged to any watched process at X max: at most %d%% of the machine (%s): kernel threads (ksoftirqd: loopback TCP work, more with large files) and other users of the machine\n", other, ow
        if (busy != "") printf "- other work on this machine, sampled for 1 s before each configuration while the stack was idle: at most %s\n", busy
        printf "- knee reached in %d of %d sweeps (saturated %d, flat %d), not reached: %s\n", sat + flat, n, sat, flat, nr == "" ? "none" : substr(nr, 3)
    }' "$R/table.csv"
}

KNEE_LEGEND=$(knee_legend) # (under three tables; one pass over table.csv)
{
    printf '# Reproduction run %s\n\n' "${R##*/}"
    echo "Read in this order: Findings (the study's claims against this run), then each"
    echo "configuration's bottleneck table (\`CONFIG/bottleneck.md\`), then the plots (\`plots/\`)."
    echo "The tables below Findings hold every number it quotes (and table.csv their digits)."
    echo
    printf '%s run, %s. Machine: %s (see machine.md). Wall time %s s from setup to the last point.\n' \
        "$(runinfo mode)" "$(awk -F'|' '/^\| date/ { gsub(/^ +| +$/, "", $3); print $3 }' "$R/machine.md" 2>/dev/null)" \
        "$(awk -F'|' '/^\| CPU \|/ { c = $3 } /^\| cores/ { n = $3 } END { gsub(/^ +| +$/, "", c); gsub(/ /, "", n); print c ", " n " cores" }' "$R/machine.md" 2>/dev/null)" \
        "$(runinfo wall_s)"
    printf 'Command: `%s`.\n\n' "$(runinfo command)"
    python3 "$TOP/scripts/findings.py" --study "$STUDY" "$R"
    echo
    echo "## Configurations"
    echo
    echo "| configuration | the study's name | backend | server2 flags | server1 flags | machine busy just before |"
    echo "|---|---|---|---|---|---:|"
    for c in "${CONFIGS[@]}"; do
        printf '| %s | %s | %s | `%s` | `%s` | %s |\n' "$c" "$(study_name "$c")" "$(flags_of "$c" backend)" \
            "$(flags_of "$c" server2)" "$(flags_of "$c" server1)" "$(flags_of "$c" busy_before_pct || true)"
    done
    cat <<EOF

- **Hash cost \`$(runinfo hash_cost)\`** (argon2id at libsodium's minimum limits, ~${HASH_US} µs per hash
  or verify, a figure measured elsewhere) everywhere, so that the database and the file path are what is measured, as in the study.
- **Auth caches off** (\`--auth-cache 0\`) in the four study configurations: every GET is a verify
  in server2 and a lookup in the database. Only \`ours\` caches verifications: server2
  (\`--auth-cache 100000\`, skips argon2) and server1 (\`--auth-cache 100000 --auth-cache-ttl 60s\`,
  answers a GET it has seen accepted without asking server2; server2 revokes on a change).
- **$(runinfo workers) server2 workers** (threads or processes) = the machine's cores; more only
  contend for the same two cores (measured elsewhere: 8 threads were slower than 2 for MySQL
  account creation).
  server1 runs 2 threads (= cores). Every server2 worker (thread or process) serves whole
  connections, so server1 opens at least one connection per worker (\`--threads 2 --auth-conns K\`,
  2K >= workers; K = 2 in \`threads\` mode).
- Databases: Redis with \`appendfsync always\`, MariaDB with \`innodb_flush_log_at_trx_commit=1\`,
  both started once for the run, on loopback, data on the same disk as the files.

## Maximum throughput X max (requests/s), this machine

$(pivot cell_x)
$KNEE_LEGEND

## The study (2017), max throughput (requests/s)

$(pivot cell_study study)
$(put_note)

## This machine / the study

$(pivot cell_ratio study)

$(tls_table)
## N* / mean response time at N*

$(pivot cell_nstar)
$KNEE_LEGEND

## N* model / measured

The knee of loadgen's queueing model (exact MVA; docs/design/model.md) over the measured
N*, both by the same rule (the smallest measured N whose X is within 5% of the maximum): with each
point's own demands (per-N), and in brackets with the demands measured at N = 1 for every N.

$(pivot cell_model)

$(model_totals)

## Bottleneck at X max: resource (U) and the busiest process of the stack

$(pivot cell_bottleneck)
$KNEE_LEGEND

## Share of server2's CPU spent hashing, at N*

Estimate: X(N*) × ${HASH_US} µs / server2's CPU-seconds per second at N*, one argon2id hash (new)
or verify (get, put) per request. ${HASH_US} µs is a figure measured elsewhere, not by this run, for
\`--hash-cost min\` on a 2-vCPU EPYC VM (argon2id at libsodium's minimum limits, libargon2); the
cross-check below measures a verify here; "cache" = the auth cache answers the verifies.

$(pivot cell_share)
$(share_check)

## Checks

$(checks)

Per configuration: \`CONFIG/bottleneck.md\`; every point: \`points.csv\` (merged) and
\`CONFIG/LOAD/\` (loadgen's own points.csv, run.json, summary.md, log); plots: \`plots/\`.
How to read all this: docs/reproduce.md.
EOF
} >"$R/summary.md"
