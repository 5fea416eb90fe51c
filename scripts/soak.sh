#!/usr/bin/env bash
# A long run of the whole system under a mixed load while faults are injected on a schedule;
# it judges what a long run shows and a short test does not: leaks, lost writes, errors of no
# known class.
#
#   scripts/soak.sh [--minutes M] [--bin-dir DIR] [--dir DIR] [--keep]
#
#   --minutes M    length of the load (default 30; `make test` runs 2)
#   --bin-dir DIR  the build to run (default build/release; build/asan for the sanitizer run)
#   --dir DIR      run directory (default a new /tmp/soak.XXXXXX); removed after a pass
#   --keep         keep the run directory after a pass too
#
# Two stacks run side by side, so both databases are in it: "r" = server1 (--prefetch) ->
# server2 (threads) -> Redis, and "m" = server1 (--read direct) -> server2 (processes) ->
# MariaDB, with PUT bodies over 512 KiB in temp files. Both server1s keep their --root on one small filesystem of their own (a loop-mounted
# ext4 image, else a tmpfs) that the disk-full fault fills. scripts/soakload.py makes the load
# (see its help). The faults, one at a time, in turn: SIGSTOP server2 r for 3 s, then SIGCONT;
# restart server2 m; restart Redis; restart MariaDB; fill the filesystem for 10 s, then free it.
# The last fault ends 25 s before the load does.
# Every minute (more often in short runs) it samples each process's RSS, descriptors and
# threads, and server1's connections, store pins, segments and auth-cache entries from
# /metrics (samples.csv).
# After the load: every acknowledged write is read back, both server1s are restarted, and
# read back again.
#
# Pass: no process died, no sanitizer report in any log, lost = 0 both times, no answer
# outside a known class, no wrong password accepted, and RSS and descriptors of the processes
# that are never restarted (both server1s, server2 r) grew less than 5% from the end of the
# warm-up (minute 5, or half the run if shorter) to the end (medians of five samples each;
# printed). These processes are small (a few MB, about 30 descriptors), so a growth counts only
# if it is also at least 1 MiB of RSS or 3 descriptors: one more connection open at the last
# samples is not a leak. RSS is judged only on builds without a sanitizer, whose allocator
# holds freed memory on purpose. Exit status 0 on a pass, 1 otherwise.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

minutes=30 bin_dir=$TOP/build/release dir="" keep=""
while (($# > 0)); do
    case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '6,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done
if ! [[ $minutes =~ ^[0-9]+$ ]] || ((minutes < 1)); then die "--minutes must be a whole number >= 1"; fi
bin_dir=$(cd "$bin_dir" 2>/dev/null && pwd) || die "no build directory '$bin_dir'"
[[ -x $bin_dir/server1 && -x $bin_dir/server2 ]] || die "no server1/server2 in $bin_dir: run make"
require_cmd python3 curl redis-server mariadbd
if [[ -z $dir ]]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX")
else
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
fi
SECONDS_TOTAL=$((minutes * 60))
sanitized=""
if nm -D "$bin_dir/server1" 2>/dev/null | grep -E '__(a|t)san_init' >/dev/null; then
    sanitized=1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
log "run dir $dir; $minutes min; build $bin_dir${sanitized:+ (sanitizer)}"

# ---- cleanup: everything this run started or mounted, and nothing else -----------------------
MOUNTED=""
LOOP_IMG=""
cleanup() {
    local rc=$? p
    trap - EXIT
    set +e
    [[ -z ${SAMPLER:-} ]] || kill "$SAMPLER" 2>/dev/null
    [[ -z ${LOAD:-} ]] || kill "$LOAD" 2>/dev/null
    for p in s1r s1m s2r s2m; do
        [[ -f $dir/$p.pid ]] || continue
        kill -CONT "$(cat "$dir/$p.pid")" 2>/dev/null
        stop_process "$p" "$(cat "$dir/$p.pid")" 20 2>/dev/null
    done
    "$TOP/scripts/redis.sh" stop "$dir/redis" >/dev/null 2>&1
    "$TOP/scripts/mysql.sh" stop "$dir/mysql" >/dev/null 2>&1
    [[ -z $MOUNTED ]] || umount "$MOUNTED" 2>/dev/null || umount -l "$MOUNTED" 2>/dev/null
    if ((rc == 0)) && [[ -z $keep ]]; then
        rm -rf "$dir"
    else
        log "run dir kept: $dir"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the small filesystem under both roots ---------------------------------------------------
disk=$dir/disk
mkdir -p "$disk"
DISK_KIND=none
LOOP_IMG=$dir/disk.img
if truncate -s 768M "$LOOP_IMG" 2>/dev/null && mkfs.ext4 -q -F "$LOOP_IMG" 2>/dev/null &&
    mount -o loop "$LOOP_IMG" "$disk" 2>/dev/null; then
    DISK_KIND="ext4 image, 768 MiB"
    MOUNTED=$disk
else
    rm -f "$LOOP_IMG"
    LOOP_IMG=""
    if mount -t tmpfs -o size=768m,mode=0755 tmpfs "$disk" 2>/dev/null; then
        DISK_KIND="tmpfs, 768 MiB"
        MOUNTED=$disk
    fi
fi
if [[ $DISK_KIND == none ]]; then
    log "cannot mount a small filesystem here (not root?): the disk-full fault is left out"
fi
log "filesystem under the roots: $DISK_KIND"

# the operator's files, every size from empty to 4 MiB, in both roots
for r in r m; do
    mkdir -p "$disk/$r"
    for spec in f0:0 f1:1 f1k:1024 f16k:16384 f100k:102400 f1m:1048576 f4m:4194304; do
        random_file "$disk/$r/${spec%%:*}" "${spec##*:}"
    done
done

# ---- the stacks -------------------------------------------------------------------------------
redis_port=$("$TOP/scripts/redis.sh" start "$dir/redis")
"$TOP/scripts/mysql.sh" start "$dir/mysql" >/dev/null
secret=$dir/link.secret
(umask 077 && head -c 32 /dev/urandom >"$secret")
s2r_port=$(free_port)
s2m_port=$(free_port)
while [[ $s2m_port == "$s2r_port" ]]; do s2m_port=$(free_port); done
# each server1's /metrics (--metrics-listen), on a port kept across its restarts
s1r_mport=$(free_port)
s1m_mport=$(free_port)
while [[ $s1m_mport == "$s1r_mport" ]]; do s1m_mport=$(free_port); done

# start NAME ARGS...: $bin_dir/PROG (s1* = server1, s2* = server2) in the background, its log
# appended to DIR/NAME.log; waits for its "listening on" line; prints the port.
start() {
    local name=$1 prog=server1 log n
    shift
    [[ $name == s2* ]] && prog=server2
    log=$dir/$name.log
    n=$(grep -c 'listening on ' "$log" 2>/dev/null || true)
    setsid "$bin_dir/$prog" "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$dir/$name.pid"
    wait_until 30 _listening "$log" "$((${n:-0} + 1))" || die "$name did not start: $(tail -n 3 "$log")"
    grep 'listening on ' "$log" | tail -n 1 | grep -o '[0-9]*$'
}
_listening() { (($(grep -c 'listening on ' "$1" || true) >= $2)); }

S2R=(--port "$s2r_port" --backend "redis://127.0.0.1:$redis_port"
    --backend-password-file "$dir/redis/password" --mode threads --workers 2 --hash-cost min
    --auth-cache 1000 --login-fail-limit 0 --secret-file "$secret")
S2M=(--port "$s2m_port" --backend "mysql://auth@localhost/auth?socket=$dir/mysql/mysqld.sock"
    --backend-password-file "$dir/mysql/password" --mode processes --workers 2 --hash-cost min
    --auth-cache 1000 --login-fail-limit 0 --secret-file "$secret")
# every client is 127.0.0.1 here, so the per-client limits are off (server2's failed-login
# limit too: 10% of the load are wrong passwords); the rest is tightened so
# that slow clients meet their limits within the run
S1=(--port 0 --auth-secret-file "$secret" --auth-timeout 1s --login-fail-limit 0
    --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 --header-timeout 5s
    --upload-timeout 5s --send-timeout 5s --min-rate 1M --max-upload 8M --threads 2)
# m keeps bodies over 512 KiB in temp files, which need blocks while the disk is full (a
# store that reuses its dead segments mostly does not)
S1M=("${S1[@]}" --root "$disk/m" --auth "127.0.0.1:$s2m_port" --read direct --upload-memory 512k
    --metrics-listen "127.0.0.1:$s1m_mport")
start s2r "${S2R[@]}" >/dev/null
start s2m "${S2M[@]}" >/dev/null
s1r_port=$(start s1r "${S1[@]}" --root "$disk/r" --auth "127.0.0.1:$s2r_port" --prefetch \
    --auth-cache 1000 --auth-cache-ttl 10s --metrics-listen "127.0.0.1:$s1r_mport")
s1m_port=$(start s1m "${S1M[@]}")
log "r: server1 :$s1r_port -> server2 :$s2r_port (threads) -> Redis :$redis_port"
log "m: server1 :$s1m_port -> server2 :$s2m_port (processes) -> MariaDB"

# ---- sampling ---------------------------------------------------------------------------------
sample_every=$((SECONDS_TOTAL / 24))
((sample_every >= 5)) || sample_every=5
((sample_every <= 60)) || sample_every=60
warmup=$((SECONDS_TOTAL / 2))
((warmup <= 300)) || warmup=300

# proc_figures PID: "rss_kB fds threads", summed over the process and its descendants
proc_figures() {
    local rss=0 fds=0 thr=0 p v
    for p in $(tree_pids "$1"); do
        v=$(awk '/^VmRSS:/{r=$2} /^Threads:/{t=$2} END{print r+0, t+0}' "/proc/$p/status" \
            2>/dev/null) || continue
        rss=$((rss + ${v% *}))
        thr=$((thr + ${v#* }))
        fds=$((fds + $(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)))
    done
    echo "$rss $fds $thr"
}
metric() { awk -v m="$1" '$1==m{print $2}' <<<"$2"; }
sampler() {
    local t0 t role pid m
    t0=$(now_ms)
    echo "t_s,role,pid,rss_kb,fds,threads,connections,store_pins,zombie_segments,store_segments,auth_cache_entries" \
        >"$dir/samples.csv"
    while :; do
        t=$((($(now_ms) - t0) / 1000))
        for role in s1r s1m s2r s2m redis mysql; do
            case $role in
            redis) pid=$(cat "$dir/redis/redis.pid" 2>/dev/null) ;;
            mysql) pid=$(cat "$dir/mysql/mysqld.pid" 2>/dev/null) ;;
            *) pid=$(cat "$dir/$role.pid" 2>/dev/null) ;;
            esac
            [[ -n $pid ]] && pid_alive "$pid" || continue
            read -r rss fds thr < <(proc_figures "$pid")
            local extra=",,,,,"
            if [[ $role == s1* ]]; then
                local port=$s1r_mport
                [[ $role == s1r ]] || port=$s1m_mport
                m=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" || true)
                extra=",$(metric server1_connections "$m"),$(metric server1_store_pins "$m")"
                extra+=",$(metric server1_store_zombie_segments "$m"),$(metric server1_store_segments "$m")"
                extra+=",$(metric server1_auth_cache_entries "$m")"
            fi
            echo "$t,$role,$pid,$rss,$fds,$thr$extra" >>"$dir/samples.csv"
        done
        if [[ -n $MOUNTED ]]; then
            echo "$t,$(df -k --output=used "$disk" | tail -n 1 | tr -d ' ')" \
                "$(du -sk "$disk/r/.s1store" "$disk/m/.s1store" 2>/dev/null | awk '{printf ",%s", $1}')" \
                >>"$dir/disk.csv"
        fi
        sleep "$sample_every"
    done
}
sampler &
SAMPLER=$!

# ---- the load ---------------------------------------------------------------------------------
: >"$dir/faults"
python3 "$TOP/scripts/soakload.py" run --out "$dir" --seconds "$SECONDS_TOTAL" \
    --faults "$dir/faults" "r=$s1r_port:$disk/r" "m=$s1m_port:$disk/m" >"$dir/load.out" 2>&1 &
LOAD=$!
load_t0=$(now_ms)

# ---- the faults -------------------------------------------------------------------------------
# fault_record START KIND TARGETS: the window the load's answers are judged against
fault_record() { echo "$1 $(now_ms) $2 $3" >>"$dir/faults"; log "fault: $2 ($((($(now_ms) - $1))) ms)"; }
fault_sigstop() {
    local t pid
    t=$(now_ms)
    pid=$(cat "$dir/s2r.pid")
    kill -STOP "$pid"
    sleep 3
    kill -CONT "$pid"
    fault_record "$t" sigstop-server2 r
}
fault_restart_server2() {
    local t pid
    t=$(now_ms)
    pid=$(cat "$dir/s2m.pid")
    stop_process server2 "$pid" 20
    start s2m "${S2M[@]}" >/dev/null
    fault_record "$t" restart-server2 m
}
fault_restart_redis() {
    local t
    t=$(now_ms)
    "$TOP/scripts/redis.sh" restart "$dir/redis" >/dev/null
    fault_record "$t" restart-redis r
}
fault_restart_mysql() {
    local t
    t=$(now_ms)
    "$TOP/scripts/mysql.sh" restart "$dir/mysql" >/dev/null
    fault_record "$t" restart-mariadb m
}
fault_disk_full() {
    local t
    t=$(now_ms)
    if [[ $DISK_KIND == none ]]; then
        log "fault: disk-full left out (no filesystem of our own)"
        return
    fi
    # everything that is free, so the next segment or temp file cannot be made
    local avail
    avail=$(df -k --output=avail "$disk" | tail -n 1 | tr -d ' ')
    fallocate -l "$((avail * 1024))" "$disk/fill" 2>/dev/null || true
    head -c 1G /dev/zero >>"$disk/fill" 2>/dev/null || true
    sleep 10
    rm -f "$disk/fill"
    fault_record "$t" disk-full r,m
}
FAULTS=(fault_sigstop fault_restart_server2 fault_restart_redis fault_restart_mysql fault_disk_full)
interval=$((SECONDS_TOTAL / 8))
((interval >= 15)) || interval=15
((interval <= 60)) || interval=60
k=0
next=$interval
while ((next + 40 <= SECONDS_TOTAL)); do
    while (($(now_ms) - load_t0 < next * 1000)); do
        pid_alive "$LOAD" || break 2
        sleep 0.2
    done
    "${FAULTS[k % ${#FAULTS[@]}]}"
    k=$((k + 1))
    next=$((next + interval))
done
log "$k faults injected; waiting for the load to end"

fail=0
wait "$LOAD" || fail=1
LOAD=""
cat "$dir/load.out"

# ---- after the load: read back, restart, read back --------------------------------------------
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=""
targets=("r=$s1r_port:$disk/r" "m=$s1m_port:$disk/m")
python3 "$TOP/scripts/soakload.py" verify --out "$dir" --label "live" "${targets[@]}" || fail=1
died=()
for p in s1r s1m s2r s2m; do
    pid_alive "$(cat "$dir/$p.pid")" || died+=("$p")
done
for p in s1r s1m; do
    stop_process "$p" "$(cat "$dir/$p.pid")" 30
done
s1r_port=$(start s1r "${S1[@]}" --root "$disk/r" --auth "127.0.0.1:$s2r_port" --prefetch \
    --metrics-listen "127.0.0.1:$s1r_mport")
s1m_port=$(start s1m "${S1M[@]}")
python3 "$TOP/scripts/soakload.py" verify --out "$dir" --label "after restarting both server1s" \
    "r=$s1r_port:$disk/r" "m=$s1m_port:$disk/m" || fail=1

# everything of ours stops now, so that what a sanitizer reports at exit (LeakSanitizer) is in
# the logs read below
for p in s1r s1m s2r s2m; do
    stop_process "$p" "$(cat "$dir/$p.pid")" 30
done

# ---- the verdict ------------------------------------------------------------------------------
if ((${#died[@]} > 0)); then
    log "FAIL: died during the run: ${died[*]}"
    fail=1
else
    log "no process died"
fi
reports=$(grep -l -E 'Sanitizer|runtime error:' "$dir"/*.log 2>/dev/null || true)
if [[ -n $reports ]]; then
    log "FAIL: sanitizer reports in: $reports"
    grep -h -A 12 -E 'ERROR: .*Sanitizer|WARNING: .*Sanitizer|runtime error:' $reports | head -n 60 >&2
    fail=1
else
    log "no sanitizer report in any log"
fi
# growth of RSS and descriptors: median of the first five samples at or after the warm-up
# against the median of the last five (RSS moves by the uploads in flight at a sample)
growth=$(awk -F, -v warm="$warmup" -v judged="${sanitized:-judge}" '
    NR == 1 { next }
    { n[$2]++; t[$2, n[$2]] = $1; rss[$2, n[$2]] = $4; fds[$2, n[$2]] = $5; thr[$2, n[$2]] = $6;
      pid[$2, n[$2]] = $3 }
    function med5(what, role, i,    v, k, j, x) {
        for (k = 0; k < 5; k++) v[k] = (what == "rss") ? rss[role, i + k] : fds[role, i + k]
        for (k = 1; k < 5; k++) { x = v[k]; for (j = k - 1; j >= 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        return v[2]
    }
    END {
        bad = 0
        split("s1r s1m s2r s2m redis mysql", roles, " ")
        for (r = 1; r <= 6; r++) {
            role = roles[r]; m = n[role]
            f = 0
            for (i = 1; i <= m; i++) if (t[role, i] >= warm) { f = i; break }
            if (f == 0 || m - f + 1 < 10) { printf "  %-6s too few samples after the warm-up\n", role; continue }
            restarted = (pid[role, f] != pid[role, m])
            r0 = med5("rss", role, f); r1 = med5("rss", role, m - 4)
            d0 = med5("fds", role, f); d1 = med5("fds", role, m - 4)
            gr = r0 > 0 ? 100 * (r1 - r0) / r0 : 0
            gd = d0 > 0 ? 100 * (d1 - d0) / d0 : 0
            verdict = "not judged (restarted during the run)"
            if (role ~ /^s1|^s2r/) {
                fd_bad = gd >= 5 && d1 - d0 >= 3
                rss_bad = gr >= 5 && r1 - r0 >= 1024 && judged == "judge"
                if (fd_bad) { verdict = "FAIL: descriptors grew 5% and by 3 or more"; bad = 1 }
                else if (rss_bad) { verdict = "FAIL: RSS grew 5% and by 1 MiB or more"; bad = 1 }
                else if (judged != "judge") verdict = "ok (descriptors; RSS not judged: sanitizer build)"
                else verdict = "ok"
            } else if (!restarted) verdict = "printed only"
            printf "  %-6s RSS %7d -> %7d kB (%+.1f%%)  fds %4d -> %4d (%+.1f%%)  threads %d  %s\n",
                role, r0, r1, gr, d0, d1, gd, thr[role, m], verdict
        }
        exit bad
    }' "$dir/samples.csv") && gst=0 || gst=$?
log "growth from t=${warmup}s to the end (medians of 5 samples):"
printf '%s\n' "$growth" >&2
((gst == 0)) || fail=1
pins=$(awk -F, '$2 ~ /^s1/ && $8 != "" {print $2 " pins " $8 " zombies " $9 " segments " $10}' \
    "$dir/samples.csv" | tail -n 2 | tr '\n' ';')
log "last samples of the store: ${pins%;}"
if ((fail == 0)); then
    log "PASS: $minutes min, $k faults, lost = 0 twice, no unexplained answer"
else
    log "FAIL (see above; samples in $dir/samples.csv, logs in $dir)"
fi
exit "$fail"
