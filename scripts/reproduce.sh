#!/usr/bin/env bash
# The reproduction run: the 2017 study's bottleneck tables, measured on this machine with one
# command. Installs what is missing, builds, makes the test files, starts its own Redis and
# MariaDB, and for each configuration starts server2 + server1 on them and sweeps the number of
# closed-loop users N with loadgen for every load type (account creation, GETs of each file
# size, durable 4 KB and 1 MB uploads). Writes results/DATE-TIME-{quick,full}-HOST/:
# loadgen's raw output per configuration and load, bottleneck.md per configuration,
# summary.md, machine.md, the merged points.csv and the plots. Stops everything it started,
# also on Ctrl-C or failure.
#
#   scripts/reproduce.sh [--quick] [--out DIR] [--configs LIST] [--loads LIST]
#                        [--points LIST] [--duration S] [--warmup S] [--window-max S]
#                        [--workers N] [--tls] [--no-build]
#
#   --quick        N = 1, 4, 16, ... up to 256 (64 for 10MB and put 1MB, 16 for 100MB) until
#                  X stops growing, 1 s points (2 s for 100MB): about 5.5 minutes
#                  (default: --sweep auto up to N=256 (16 for 100MB), 5 s points: about 40 min)
#   --configs      comma list of: mp-noprefetch-mysql mt-noprefetch-mysql mt-prefetch-mysql
#                  mt-prefetch-redis ours (default all)
#   --loads        comma list of: new get-1KB get-10KB get-100KB get-1MB get-10MB get-100MB
#                  put-4KB put-1MB ("1KB" is short for "get-1KB"; default all)
#   --points       N values for every load, e.g. 1,2 (overrides the sweep)
#   --duration / --warmup   seconds measured / discarded per point
#   --window-max   the longest a point's window may grow to hold 20 x (R + Z) and 200
#                  completions (loadgen --window-max; default twice --duration)
#   --workers      server2 workers (threads or processes), default 2 (= cores)
#   --tls          every load of every configuration measured twice, over plain HTTP and over
#                  HTTPS (server1 --tls-port, a throw-away ECDSA P-256 certificate, loadgen
#                  https:// on kept connections): CONFIG-tls in the tables, and a table of
#                  what HTTPS costs (X max over HTTPS / plain); twice the time
#   --no-build     skip scripts/setup.sh and make (use the programs in $BIN_DIR as they are)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
export BIN_DIR=${BIN_DIR:-$TOP/build/release}

ALL_CONFIGS=(mp-noprefetch-mysql mt-noprefetch-mysql mt-prefetch-mysql mt-prefetch-redis ours)
ALL_LOADS=(new get-1KB get-10KB get-100KB get-1MB get-10MB get-100MB put-4KB put-1MB)
declare -A FILE_BYTES=([1KB]=1024 [10KB]=10240 [100KB]=102400 [1MB]=1048576
    [10MB]=10485760 [100MB]=104857600)
declare -A PUT_BYTES=([4KB]=4096 [1MB]=1048576) # put-SIZE: body of each durable upload
FILES=$TOP/build/files # on the disk, not tmpfs: server1 reads with O_DIRECT
HASH_COST=min

usage() { sed -n '11,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0; }

ARGS=$*
quick="" out="" points="" duration="" warmup="" window_max="" workers=2 build=1 tls=""
configs=("${ALL_CONFIGS[@]}") loads=("${ALL_LOADS[@]}")
while (($# > 0)); do
    case $1 in
    --quick) quick=1; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --configs) IFS=, read -ra configs <<<"${2:?--configs needs a list}"; shift 2 ;;
    --loads) IFS=, read -ra loads <<<"${2:?--loads needs a list}"; shift 2 ;;
    --points) points=${2:?--points needs a list}; shift 2 ;;
    --duration) duration=${2:?}; shift 2 ;;
    --warmup) warmup=${2:?}; shift 2 ;;
    --window-max) window_max=${2:?}; shift 2 ;;
    --workers) workers=${2:?}; shift 2 ;;
    --no-build) build=""; shift ;;
    --tls) tls=1; shift ;;
    -h | --help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
for i in "${!loads[@]}"; do
    [[ ${loads[i]} == new || ${loads[i]} == get-* || ${loads[i]} == put-* ]] || loads[i]=get-${loads[i]}
    case ${loads[i]} in
    new) ;;
    get-*) [[ -n ${FILE_BYTES[${loads[i]#get-}]:-} ]] ;;
    put-*) [[ -n ${PUT_BYTES[${loads[i]#put-}]:-} ]] ;;
    esac || die "unknown load '${loads[i]}' (one of: ${ALL_LOADS[*]})"
done
for c in "${configs[@]}"; do
    [[ " ${ALL_CONFIGS[*]} " == *" $c "* ]] || die "unknown config '$c' (one of: ${ALL_CONFIGS[*]})"
done
[[ $workers =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive number"
[[ -z $points || $points =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--points must be like 1,4,16"

# config NAME: sets BACKEND MODE CACHE S1FLAGS for one configuration of the study (or ours).
config() {
    local files
    CACHE=0
    case $1 in
    mp-noprefetch-mysql) BACKEND=mysql MODE=processes files=(--read direct) ;;
    mt-noprefetch-mysql) BACKEND=mysql MODE=threads files=(--read direct) ;;
    mt-prefetch-mysql) BACKEND=mysql MODE=threads files=(--prefetch) ;;
    mt-prefetch-redis) BACKEND=redis MODE=threads files=(--prefetch) ;;
    ours) BACKEND=redis MODE=threads CACHE=100000 files=(--prefetch) ;;
    esac
    # each server2 worker (thread or process) serves whole connections, spread evenly, so
    # server1 opens at least one per worker (2 threads x conns); threads mode keeps 2 per
    # server1 thread, as the study's runs before this had
    local conns=$(((workers + 1) / 2))
    [[ $MODE != threads ]] || ((conns >= 2)) || conns=2
    # --max-upload: room for the put-1MB bodies (and never --read-only: put needs PUT);
    # the per-client limits off: every user of the load comes from 127.0.0.1 and creates its
    # account at tens of thousands per second (the study measures the server, not a limiter)
    S1FLAGS=(--threads 2 --auth-conns "$conns" "${files[@]}" --max-upload 2m
        --login-fail-limit 0 --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0)
    # ours: server1 also answers a GET it has seen server2 accept (server2 revokes on change)
    [[ $CACHE == 0 ]] || S1FLAGS+=(--auth-cache "$CACHE" --auth-cache-ttl 60s)
    # --tls: an HTTPS port beside the plain one, on the same server1
    [[ -z $tls ]] || S1FLAGS+=(--tls-cert "$RUN/certs/server.pem"
        --tls-key "$RUN/certs/server.key" --tls-port 0)
}

# The quick run's sweep: N = 1, 4, 16, 64, ... until one step raises X by 5% or less (one step
# past the knee), no bisection: N* within a factor of 4, in 3 to 5 points.
QUICK_PLAN=(--sweep-step 4 --sweep-stalls 1 --sweep-refine 0)
# sweep_args LOAD: sets SWEEP, the loadgen flags for which N and how long each point lasts.
# 100MB responses take 0.03-0.2 s each: fewer users, longer points; a quick run's 1 s points
# hold no 10 MB response or 1 MB upload at 256 users (R of seconds without prefetch).
sweep_args() {
    local d w
    if [[ -n $quick && $1 == get-100MB ]]; then
        SWEEP=(--sweep auto "${QUICK_PLAN[@]}" --max-users 16) d=2 w=0.3
    elif [[ -n $quick && ($1 == get-10MB || $1 == put-1MB) ]]; then
        SWEEP=(--sweep auto "${QUICK_PLAN[@]}" --max-users 64) d=1 w=0.2
    elif [[ -n $quick ]]; then
        SWEEP=(--sweep auto "${QUICK_PLAN[@]}" --max-users 256) d=1 w=0.2
    elif [[ $1 == get-100MB ]]; then
        SWEEP=(--sweep auto --max-users 16) d=8 w=1
    else
        SWEEP=(--sweep auto --max-users 256) d=5 w=1
    fi
    [[ -z $points ]] || SWEEP=(--sweep "$points")
    SWEEP+=(--duration "${duration:-$d}" --warmup "${warmup:-$w}" --timeout 60)
    [[ -z $window_max ]] || SWEEP+=(--window-max "$window_max")
}

# ---- build, files, results dir -----------------------------------------------------------
T0=$(now_ms)
if [[ -n $build ]]; then
    bash scripts/setup.sh >&2
    make --no-print-directory -s >&2
fi
for p in server1 server2 loadgen; do
    [[ -x $BIN_DIR/$p ]] || die "$BIN_DIR/$p missing: run make (or drop --no-build)"
done
require_cmd awk gnuplot
mkdir -p "$FILES"
[[ $(stat -f -c %T "$FILES") != tmpfs ]] || die "$FILES is on tmpfs: O_DIRECT needs a disk"
for l in "${loads[@]}"; do
    [[ $l != get-* ]] || random_file "$FILES/${l#get-}" "${FILE_BYTES[${l#get-}]}"
done

if [[ -z $out ]]; then
    kind=full
    [[ -z $quick ]] || kind=quick
    out=results/$(date +%Y%m%d-%H%M)-$kind-$(hostname -s)
    [[ ! -e $out ]] || die "$out exists (a run in the same minute?): use --out DIR"
fi
mkdir -p "$out"
OUT=$(cd "$out" && pwd)

RUN=$(mktemp -d "$TOP/build/reproduce.XXXXXX") # databases' data and the servers' logs
# make_root DIR: server1's --root for one configuration: hard links to the get files (same
# inodes, same disk: build/ is one filesystem), and whatever the put loads upload is stored by
# server1 under DIR (its .s1* directories), so every configuration starts with no uploads of
# an earlier one (which --prefetch or the store's replay would load at start), two runs never
# share server1's upload storage, and nothing piles up in build/files: DIR goes with $RUN.
make_root() {
    local l
    mkdir -p "$1"
    for l in "${loads[@]}"; do
        [[ $l != get-* || -e $1/${l#get-} ]] || ln "$FILES/${l#get-}" "$1/${l#get-}" ||
            die "cannot hard-link $FILES/${l#get-} into $1"
    done
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    scripts/stack.sh stop "$RUN/stack" || true
    if ((rc == 0 || rc == 130)); then
        rm -rf "$RUN"
        ((rc == 0)) || log "interrupted; results so far in $OUT"
    else
        log "FAILED (exit $rc); results so far in $OUT; databases' data and logs kept in $RUN"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# busy_pct: how busy the machine is (% of all cores over 1 s) while our stack is idle: the
# machine is shared, and other work there disturbs the measurements.
busy_pct() {
    local a b
    read -ra a < <(head -n1 /proc/stat)
    sleep 1
    read -ra b < <(head -n1 /proc/stat)
    local busy=$(((b[1] + b[2] + b[3] + b[6] + b[7] + b[8]) - (a[1] + a[2] + a[3] + a[6] + a[7] + a[8])))
    local total=$((busy + b[4] + b[5] - a[4] - a[5]))
    echo $((100 * busy / (total > 0 ? total : 1)))
}
[[ -z $tls ]] || scripts/tls-certs.sh "$RUN/certs"
{
    BIN_DIR=$BIN_DIR scripts/machine-info.sh "$FILES"
    echo "| machine CPU busy before the run | $(busy_pct)% (1 s sample, nothing of ours running) |"
} >"$OUT/machine.md"

mkdir -p "$RUN/stack"
# One Redis and one MariaDB for the whole run (only those the configurations use); each
# configuration's stack reuses them (scripts/stack.sh start finds them running under its DIR).
need_redis="" need_mysql=""
for cfg in "${configs[@]}"; do
    config "$cfg"
    if [[ $BACKEND == redis ]]; then need_redis=1; else need_mysql=1; fi
done
declare -A DB_WATCH=() # backend -> loadgen's --watch of its database (only that one is watched)
if [[ -n $need_redis ]]; then
    redis_port=$(scripts/redis.sh start "$RUN/stack/redis")
    # loadgen's INFO sampling authenticates with it (the variable redis-cli reads; not argv)
    REDISCLI_AUTH=$(<"$RUN/stack/redis/password")
    export REDISCLI_AUTH
    DB_WATCH[redis]="redis-server=$(cat "$RUN/stack/redis/redis.pid")"
    log "redis on :$redis_port"
fi
if [[ -n $need_mysql ]]; then
    log "mariadb on :$(scripts/mysql.sh start "$RUN/stack/mysql")"
    DB_WATCH[mysql]="mariadbd=$(cat "$RUN/stack/mysql/mysqld.pid")"
fi
log "databases' data under $RUN"

has_children() { (($(child_pids "$1" | wc -l) >= $2)); }

# ---- the runs ----------------------------------------------------------------------------
printf 'config\tbackend\tserver2\tserver1\tbusy_before_pct\n' >"$OUT/configs.tsv"
declare -A LG_FLAGS=() # load -> loadgen's flags (besides --url, --watch, --redis-port, --out)
variants=(plain) # and tls with --tls; a configuration's results dir gets -tls for the latter
[[ -z $tls ]] || variants+=(tls)
suffix() { [[ $1 == plain ]] || echo "-$1"; }
total=$((${#configs[@]} * ${#loads[@]} * ${#variants[@]}))
done_n=0
for cfg in "${configs[@]}"; do
    config "$cfg"
    # (server2's failed-login limit off too: the study's server2 reads no more than the account)
    s2flags=(--mode "$MODE" --workers "$workers" --hash-cost "$HASH_COST" --auth-cache "$CACHE"
        --login-fail-limit 0)
    busy=$(busy_pct)
    for v in "${variants[@]}"; do
        printf '%s\t%s\t%s\t%s\t%s\n' "$cfg$(suffix "$v")" "$BACKEND" "${s2flags[*]}" \
            "${S1FLAGS[*]}" "$busy" >>"$OUT/configs.tsv"
        mkdir -p "$OUT/$cfg$(suffix "$v")"
    done
    root=$RUN/root-$cfg
    make_root "$root"
    url=$(scripts/stack.sh start "$RUN/stack" --backend "$BACKEND" "${s2flags[@]}" --root "$root" \
        --port 0 -- "${S1FLAGS[@]}" 2>>"$OUT/$cfg/stack.log") ||
        die "$cfg: the stack did not start (see $OUT/$cfg/stack.log and $RUN/stack/*.log)"
    declare -A URL_OF=([plain]=$url)
    if [[ -n $tls ]]; then # the port server1 logged for https, the same server1
        p=$(grep -m1 -o 'listening for https on [^ ]*' "$RUN/stack/server1.log") ||
            die "$cfg: server1 did not log its https port"
        URL_OF[tls]=https://127.0.0.1:${p##*:}
    fi

    # Watch our own processes by pid: --watch-comm would also count other stacks running on
    # this machine, and misses server2's worker processes, which rename themselves s2-proc-N.
    s2=$(cat "$RUN/stack/server2.pid")
    [[ $MODE == threads ]] || wait_until 10 has_children "$s2" "$workers" ||
        die "$cfg: server2 did not fork $workers workers"
    watch=(--watch "server1=$(cat "$RUN/stack/server1.pid"),server2=$s2"
        --watch "${DB_WATCH[$BACKEND]}")
    for c in $(child_pids "$s2"); do watch+=(--watch "server2=$c"); done
    [[ $BACKEND == mysql ]] || watch+=(--redis-port "$redis_port")

    for load in "${loads[@]}"; do
        sweep_args "$load"
        case $load in
        new) what=(--type new) ;;
        get-*)
            f=${load#get-}
            what=(--type get --file "$f" --expect-length "${FILE_BYTES[$f]}" --prepare-users 64)
            ;;
        put-*) what=(--type put --size "${PUT_BYTES[${load#put-}]}" --prepare-users 64) ;;
        esac
        LG_FLAGS[$load]="${what[*]} ${SWEEP[*]}"
        for v in "${variants[@]}"; do
            cafile=()
            [[ $v == plain ]] || cafile=(--cacert "$RUN/certs/ca.pem")
            dir=$OUT/$cfg$(suffix "$v")/$load
            mkdir -p "$dir"
            t=$(now_ms)
            rc=0
            "$BIN_DIR/loadgen" --url "${URL_OF[$v]}" "${cafile[@]}" "${what[@]}" "${SWEEP[@]}" \
                "${watch[@]}" --out "$dir" >"$dir/loadgen.log" 2>&1 || rc=$?
            ((rc != 130)) || exit 130
            ((rc == 0)) || { tail -n 5 "$dir/loadgen.log" >&2; die "$cfg$(suffix "$v") $load: loadgen exited $rc (see $dir/loadgen.log)"; }
            done_n=$((done_n + 1))
            log "[$done_n/$total] $cfg$(suffix "$v") $load: $(grep -m1 '^N\* =' "$dir/loadgen.log") ($((($(now_ms) - t) / 1000)) s)"
        done
    done
    scripts/stack.sh stop "$RUN/stack" --servers
    rm -rf "$root" # the uploads of this configuration (the get files stay in $FILES)
    cp "$RUN/stack/server1.log" "$RUN/stack/server2.log" "$OUT/$cfg/"
    unset URL_OF
done
scripts/stack.sh stop "$RUN/stack"
cp "$RUN/stack/redis/redis.log" "$RUN/stack/mysql/mysqld.err" "$OUT/" 2>/dev/null || true

{
    printf '\n## Flags of this run\n\n| configuration | backend | server2 | server1 |\n|---|---|---|---|\n'
    awk -F'\t' 'NR > 1 { printf "| %s | %s | `%s` | `%s` |\n", $1, $2, $3, $4 }' "$OUT/configs.tsv"
    printf '\nloadgen, for every configuration: `--url SERVER1 --watch server1=PID,server2=PID[,...]'
    printf ' --watch redis-server=PID|mariadbd=PID (its database) [--redis-port P] --out DIR` and\n\n'
    # shellcheck disable=SC2016  # Markdown backquotes
    for load in "${loads[@]}"; do printf -- '- %s: `%s`\n' "$load" "${LG_FLAGS[$load]}"; done
} >>"$OUT/machine.md"

# ---- tables and plots --------------------------------------------------------------------
mode=full
[[ -z $quick ]] || mode=quick
[[ -z $points$duration$warmup$window_max ]] || mode="$mode (custom points)"
{
    printf 'key\tvalue\n'
    printf 'mode\t%s\n' "$mode"
    printf 'command\t%s\n' "scripts/reproduce.sh $ARGS"
    printf 'commit\t%s\n' "$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)"
    printf 'hash_cost\t%s\n' "$HASH_COST"
    printf 'tls\t%s\n' "${tls:+on}${tls:-off}"
    # what one hash or verify at that cost costs here (server2/pwhash.c; libargon2 at min)
    printf 'hash_us\t%s\n' 15
    printf 'workers\t%s\n' "$workers"
    printf 'wall_s\t%s\n' "$((($(now_ms) - T0) / 1000))"
} >"$OUT/run.tsv"
scripts/summarize.sh "$OUT"
scripts/plot.sh "$OUT"
log "results in ${OUT#"$TOP"/}; wall time $((($(now_ms) - T0) / 1000)) s"
echo
awk '/^## Maximum throughput/ || /^## This machine/ { p = 1 } /^## (The study|N\*)/ { p = 0 } p' "$OUT/summary.md"
