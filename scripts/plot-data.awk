# Splits a reproduction run's points.csv into the small whitespace-separated files plot.sh
# hands to gnuplot (NaN where a cell is empty or its column absent, as in runs made before it).
#
#   awk -F, -v dir=TMP -v backends="CFG=redis CFG=mysql ..." -v cores=N -v study=STUDY_CSV \
#       -f scripts/plot-data.awk STUDY_CSV RESULTS/points.csv
#
# Writes into dir:
#   configs.LOAD     the configurations measured with LOAD, in order of appearance
#   loads.CFG        the loads measured with CFG, in order of appearance
#   xr.CFG.LOAD      N X R X_bound R_bound is_nstar X_model X_model_n1 R_model R_model_n1
#                    is_knee_model, one line per point (unsorted)
#   study-configs    the study's configurations, one a line
#   study.LOAD       CFG X_max, the study's maximum for each of its configurations
#   model            exists when some point has the queueing model's columns filled
#   u.CFG.LOAD       N, then one column per resource of ures.CFG in its order (in %)
#   ures.CFG         column (2, 3, ...), resource name, legend title: the resources that exist
#                    in CFG: the database it does not use left out (backend from configs.tsv:
#                    redis -> no cpu:mariadbd; mysql -> no cpu:redis-server, redis, nor Redis's
#                    thread), and every column empty at all of CFG's points; a software station
#                    "threads NAME" is its share of busy threads, 100 sw_busy_NAME / sw_threads_NAME
FILENAME == study {
    if (FNR == 1) { for (i = 2; i <= NF; i++) print scfg[i] = $i > (dir "/study-configs"); next }
    for (i = 2; i <= NF; i++) if ($i != "") print scfg[i], $i > (dir "/study." $1)
    next
}
FNR == 1 {
    for (i = 1; i <= NF; i++) h[$i] = i
    for (i = 1; i <= NF; i++) if ($i ~ /^u_/) res[++nres] = substr($i, 3)
    for (i = 1; i <= NF; i++)
        if ($i ~ /^sw_busy_/ && ("sw_threads_" substr($i, 9)) in h) res[++nres] = "threads " substr($i, 9)
    n = split(backends, b, " ")
    for (i = 1; i <= n; i++) { split(b[i], kv, "="); be[kv[1]] = kv[2] }
    next
}
$(h["type"]) != "all" { next }
{
    cfg = $(h["config"]); load = $(h["load"]); key = cfg "." load
    if (!((cfg, load) in seen)) {
        seen[cfg, load] = 1
        print cfg > (dir "/configs." load); print load > (dir "/loads." cfg)
    }
    if (!(cfg in cfgseen)) { cfgseen[cfg] = 1; cfgs[++ncfg] = cfg }
    print $(h["users"]), $(h["x_rps"]), $(h["r_mean_ms"]), v("x_upper_rps"), v("r_lower_ms"), \
          v("is_nstar"), v("x_model_rps"), v("x_model_n1_rps"), v("r_model_ms"), \
          v("r_model_n1_ms"), v("is_knee_model") > (dir "/xr." key)
    if (v("x_model_rps") != "NaN") model = 1
    # kept for the END block: the point's utilizations (%), NaN where empty
    np[cfg]++; pkey[cfg, np[cfg]] = key; pn[cfg, np[cfg]] = $(h["users"])
    for (j = 1; j <= nres; j++) {
        u = util(res[j])
        pu[cfg, np[cfg], j] = u
        if (u != "NaN") {
            has[cfg, j] = 1
            if (res[j] ~ /^threads / && $(h["sw_threads_" substr(res[j], 9)]) + 0 > k[cfg, j])
                k[cfg, j] = $(h["sw_threads_" substr(res[j], 9)]) + 0
        }
    }
}
END {
    if (model) printf "" > (dir "/model")
    for (c = 1; c <= ncfg; c++) {
        cfg = cfgs[c]; nk = 0
        for (j = 1; j <= nres; j++) {
            if (!((cfg, j) in has) || unused(be[cfg], res[j])) continue
            keep[++nk] = j
            print nk + 1 "\t" res[j] "\t" title(res[j], k[cfg, j]) > (dir "/ures." cfg)
        }
        for (p = 1; p <= np[cfg]; p++) {
            s = pn[cfg, p]
            for (i = 1; i <= nk; i++) s = s " " pu[cfg, p, keep[i]]
            print s > (dir "/u." pkey[cfg, p])
        }
    }
}
# a column that may be absent (runs made before it) or empty: NaN for gnuplot
function v(name) { return (name in h) && $(h[name]) != "" ? $(h[name]) : "NaN" }
# resource NAME's utilization at this point in %: u_NAME, or a station's share of busy threads
function util(name,   col, t) {
    if (name !~ /^threads /) {
        col = "u_" name
        return $(h[col]) == "" ? "NaN" : 100 * $(h[col])
    }
    t = $(h["sw_threads_" substr(name, 9)])
    if (t == "" || t + 0 <= 0 || $(h["sw_busy_" substr(name, 9)]) == "") return "NaN"
    return 100 * $(h["sw_busy_" substr(name, 9)]) / t
}
# the database a configuration does not use (no backend known: keep everything)
function unused(backend, name) {
    if (backend == "redis") return name == "cpu_mariadbd"
    if (backend == "mysql") return name == "cpu_redis-server" || name == "redis" || name == "threads redis-server"
    return 0
}
# the legend's words for a resource (loadgen's name first: u_cpu_server2 -> cpu:server2)
function title(name, nthreads,   p) {
    if (name ~ /^threads /) {
        p = substr(name, 9)
        return "threads " p ": busy of " nthreads (p == "redis-server" ? " (Redis's thread: within s2-wrk's waits)" : "")
    }
    if (name ~ /^(cpu|disk)_/) sub(/_/, ":", name)
    if (name == "cpu") return "cpu: whole machine (" (cores != "" ? cores " cores" : "all cores") ")"
    if (name == "cpu:server1") return "cpu:server1: server1's process"
    if (name == "cpu:server2") return "cpu:server2: server2's process(es)"
    if (name == "cpu:loadgen") return "cpu:loadgen: the load generator"
    if (name == "cpu:redis-server") return "cpu:redis-server: Redis's process"
    if (name == "cpu:mariadbd") return "cpu:mariadbd: MariaDB's process"
    if (name ~ /^cpu:/) return name ": " substr(name, 5) "'s processes"
    if (name ~ /^disk:/) return name ": time with I/O in flight"
    if (name == "redis") return "redis: time Redis spends in commands"
    return name
}
