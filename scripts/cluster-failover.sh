#!/usr/bin/env bash
# Failover under load, measured: a cluster (scripts/cluster.sh: HAProxy, 2 server1, 2 server2,
# the account database on three hosts) under a steady closed-loop load from lg-1 and lg-2
# through HAProxy, over HTTPS with the cluster's CA (scripts/clusterload.py: new accounts and GETs
# mixed, every request journalled),
# and one fault at a time: SIGKILL a server1, then start it again; the same for a server2; the
# same for the database primary (the Redis primary the Sentinels name, or the Galera node
# server2 writes to). Per fault: failed requests by class, the error window, throughput before,
# while down and after. Then every account whose creation was answered 201 logs in: lost = 0 is
# the pass condition. Needs root (network namespaces).
#
#   scripts/cluster-failover.sh [--backend redis-sentinel|galera] [--short] [--keep]
#                               [--use DIR] [--threads N] [--out DIR]
#
# --short: each fault once, 3 s before, 3 s down, 3 s after (make test); else each fault twice
# (the second time on s1-2 / s2-2), 10 s each (make failover). --use DIR: a cluster already up
# under DIR (left up); otherwise one is brought up and taken down. --keep: keep the run
# directory (journals, cluster logs) even on success. --threads: per load host (default 4).
# --out DIR: also write everything printed to DIR/BACKEND.txt (BACKEND-short.txt with
# --short; an existing one is refused), and DIR/machine.md (scripts/machine-info.sh) unless
# there; the load average is printed at the start and the end.
# Error-window targets: server1 2000 ms (HAProxy checks every 500 ms, down after 2), server2
# 2000 ms, the Redis primary down-after-milliseconds (2000) + 2000 ms, a Galera node 2000 ms.
# Exit status: 0 pass, 1 an account lost or a window over its target or a step failed, 2 usage.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=$TOP/scripts/cluster.sh
LOAD=$TOP/scripts/clusterload.py

TARGET_S1_MS=2000
TARGET_S2_MS=2000
TARGET_REDIS_MS=$((2000 + 2000)) # cluster.sh's Sentinel down-after-milliseconds + 2 s
TARGET_GALERA_MS=2000

usage() { header_usage "${BASH_SOURCE[0]}" 12 24 "${1:-2}"; }

backend=redis-sentinel short="" keep="" use="" threads=4 out="" TEE=""
while (($# > 0)); do
    case $1 in
    --backend | --use | --threads | --out) (($# >= 2)) || usage ;;&
    --backend) backend=$2; shift 2 ;;
    --use) use=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --short) short=1; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
done
[[ $backend == redis-sentinel || $backend == galera ]] ||
    die "--backend must be redis-sentinel or galera, not '$backend'"
[[ $threads =~ ^[0-9]+$ ]] && ((threads >= 1 && threads <= 64)) || die "--threads must be 1..64"
((EUID == 0)) || die "needs root: the cluster's hosts are network namespaces"
require_cmd python3
if [[ -n $out ]]; then
    REPORT=$out/$backend${short:+-short}.txt
    [[ ! -e $REPORT ]] || die "--out $out: $REPORT exists"
    mkdir -p "$out"
    [[ -f $out/machine.md ]] || "$TOP/scripts/machine-info.sh" "${TMPDIR:-/var/tmp}" \
        >"$out/machine.md" || die "--out $out: scripts/machine-info.sh failed"
    exec > >(tee "$REPORT") 2>&1
    TEE=$!
fi
echo "failover: --backend $backend${short:+ --short}, $(nproc) cores, load average at the" \
    "start: $(cut -d' ' -f1-3 /proc/loadavg)"

if [[ -n $short ]]; then
    PERIOD_S=3 DOWN_S=3 ROUNDS=1
else
    PERIOD_S=10 DOWN_S=10 ROUNDS=2
fi

RUN=$(mktemp -d "${TMPDIR:-/var/tmp}/failover.XXXXXX")
chmod 711 "$RUN" # Galera's nodes run as mysql and must reach the cluster's directory
if [[ -n $use ]]; then
    [[ -f $use/cluster.state ]] || die "--use $use: no cluster up there"
    CL=$(cd "$use" && pwd)
    grep -qx "BACKEND=$backend" "$CL/cluster.conf" || die "--use $use: not a $backend cluster"
    grep -qx 'N1=[2-9]' "$CL/cluster.conf" && grep -qx 'N2=[2-9]' "$CL/cluster.conf" ||
        die "--use $use: needs at least 2 server1 and 2 server2 (one of each is killed)"
else
    CL=$RUN/cluster
fi
LOADERS=()
FAILED=""

cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    set +e
    for p in "${LOADERS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${LOADERS[@]}"; do wait_pid_exit "$p" 20 || kill -KILL "$p" 2>/dev/null; done
    [[ -n $use ]] || "$CLUSTER" down "$CL"
    ((rc == 0)) && [[ -z $FAILED ]] || rc=1
    if ((rc != 0)) || [[ -n $keep ]]; then
        log "run directory kept: $RUN"
    else
        rm -rf "$RUN"
    fi
    if [[ -n $TEE ]]; then # the report complete before the exit
        exec >&- 2>&-
        wait_pid_exit "$TEE" 10
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[[ -n $use ]] || "$CLUSTER" up "$CL" --backend "$backend" --server1 2 --server2 2
LB=https://$(awk '$1 == "lb" {print $2}' "$CL/hosts"):8443
CA=$CL/tls/ca.pem
(umask 077 && head -c 32 /dev/urandom >"$RUN/seed")

for lg in lg-1 lg-2; do
    "$CLUSTER" exec "$CL" "$lg" python3 "$LOAD" run --url "$LB" --cacert "$CA" \
        --out "$RUN/$lg.journal" --seed-file "$RUN/seed" --tag "$lg" --threads "$threads" \
        --stop-file "$RUN/stop" --max-seconds 900 >"$RUN/$lg.out" 2>&1 &
    LOADERS+=("$!")
done
_ready() { [[ -f $RUN/lg-1.journal.ready && -f $RUN/lg-2.journal.ready ]]; }
wait_until 60 _ready || die "the load did not start: $(cat "$RUN"/lg-*.out)"
log "load running from lg-1 and lg-2 ($threads users each) through $LB"
sleep "$PERIOD_S"

# fault NAME HOST/PROG TARGET_MS: kill, stay down DOWN_S (a Redis primary: until the Sentinels
# have named another), start again (back in service when cluster.sh start returns), then
# PERIOD_S of load; one line in $RUN/faults
fault() {
    local name=$1 proc=$2 target=$3 t_kill t_restart t_ready old
    old=$("$CLUSTER" primary "$CL" 2>/dev/null || true)
    log "fault: SIGKILL $proc ($name)"
    t_kill=$(now_ms)
    "$CLUSTER" kill "$CL" "$proc"
    sleep "$DOWN_S"
    if [[ $name == redis-primary ]]; then
        _moved() { local p; p=$("$CLUSTER" primary "$CL" 2>/dev/null) && [[ $p != "$old" ]]; }
        wait_until 30 _moved || die "the Sentinels named no new primary within 30 s"
        log "the Sentinels promoted $("$CLUSTER" primary "$CL")"
    fi
    t_restart=$(now_ms)
    "$CLUSTER" start "$CL" "$proc"
    t_ready=$(now_ms)
    log "fault: $proc back after $((t_ready - t_restart)) ms"
    printf '%s %s %s %s %s\n' "$name" "$t_kill" "$t_restart" "$t_ready" "$target" >>"$RUN/faults"
    sleep "$PERIOD_S"
}

: >"$RUN/faults"
for ((round = 1; round <= ROUNDS; round++)); do
    fault server1 "s1-$round/server1" "$TARGET_S1_MS"
    fault server2 "s2-$round/server2" "$TARGET_S2_MS"
    primary=$("$CLUSTER" primary "$CL") || die "no database primary found"
    if [[ $backend == redis-sentinel ]]; then
        fault redis-primary "$primary/redis" "$TARGET_REDIS_MS"
    else
        fault galera-node "$primary/mariadb" "$TARGET_GALERA_MS"
    fi
done

touch "$RUN/stop"
for p in "${LOADERS[@]}"; do
    wait "$p" || FAILED=1
done
LOADERS=()
cat "$RUN"/lg-*.out
JOURNALS=("$RUN/lg-1.journal" "$RUN/lg-2.journal")
python3 "$LOAD" report --faults "$RUN/faults" --period "$((PERIOD_S * 1000))" "${JOURNALS[@]}" ||
    FAILED=1
"$CLUSTER" exec "$CL" lg-1 python3 "$LOAD" verify --url "$LB" --cacert "$CA" \
    --seed-file "$RUN/seed" "${JOURNALS[@]}" || FAILED=1
echo "failover: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $FAILED ]]; then
    echo "failover: FAILED"
    exit 1
fi
echo "failover: passed"
