#!/usr/bin/env bash
# Several hosts on one machine: network namespaces joined by veth pairs on a private bridge, one
# namespace per host, each running its part: HAProxy (lb), server1s (s1-K), server2s (s2-K), the
# account database on three hosts (db-1..3: Redis + Sentinel, or a Galera cluster) and two load
# hosts (lg-1, lg-2, where the load generators run). Clients speak HTTPS to HAProxy (lb :8443),
# which speaks HTTPS to the server1s (the PROXY protocol naming the client first), all with the
# cluster's CA, DIR/tls/ca.pem. Needs root (ip netns); docs/cluster.md.
#
#   scripts/cluster.sh up DIR [--server1 N] [--server2 N] [--backend redis-sentinel|galera]
#                             [--subnet A.B.C]
#   scripts/cluster.sh down DIR                  stop and remove everything up made
#   scripts/cluster.sh status DIR                hosts, addresses, processes, HAProxy's view
#   scripts/cluster.sh exec DIR HOST CMD...      run CMD on HOST (in its namespace)
#   scripts/cluster.sh kill DIR HOST/PROG [SIG]  signal a process up started (default KILL)
#   scripts/cluster.sh start DIR HOST/PROG       start it again as up did
#   scripts/cluster.sh primary DIR               the db host that takes the writes now
#
# --server1 N: 1..8 (default 2); --server2 N: 1..8 (default 2; a server1 takes at most 8);
# --backend: redis-sentinel (default) or galera; --subnet: the /24 to use (A.B.C.0/24, private),
# default the first 10.201.X.0/24 that no route of the machine touches.
# PROG is haproxy (lb), server1 (s1-K), server2 (s2-K), redis, sentinel or mariadb (db-K).
# Everything lives under DIR: cluster.conf, hosts, cluster.state (what up made, which down undoes,
# and nothing else), one directory per host with its logs. BIN_DIR: the programs (build/release).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}
BIN_DIR=$(cd "$BIN_DIR" 2>/dev/null && pwd) || die "BIN_DIR $BIN_DIR: no such directory"

MAX_SERVER1=8
MAX_SERVER2=8       # server1 --auth takes at most 8 server2s
HTTPS_PORT=8443     # HAProxy on lb (its only port for clients), server1 on s1-K
HTTP_PORT=8080      # server1's plain port on s1-K: --plain-http no-credentials; nothing on lb
STATS_PORT=8404     # HAProxy's statistics page on lb
METRICS_PORT=9101   # server1's /metrics (--metrics-listen) on s1-K's own address
S2_PORT=7001
REDIS_PORT=6379
SENTINEL_PORT=26379
MASTER=mymaster
# Sentinel: a primary silent this long is down. Twice the ping period, as in
# tests/integration/test_sentinel.sh: at 1000 ms a Redis stalled in an fsync on a busy machine
# was voted down while it ran, and the failover this test did not ask for overran its window.
DOWN_AFTER_MS=2000
CHECK_INTER=500ms   # HAProxy's health checks: every 500 ms; down after 2 failures, up after 2
CHECK_FALL=2
CHECK_RISE=2
FILES=16            # the operator's files every server1 serves: f1k-00 .. f1k-15, 1 KiB each
# server1's per-client limits. Behind HAProxy (--trusted-proxy lb, which sends a PROXY v2 header)
# each counts the client HAProxy names: a load host, on each server1 apart. Sized so that the
# cluster's own load from one load host fits even when all of it lands on one server1 (the
# other down), with room to spare:
# - sign-ups: cluster-failover.sh's load (clusterload.py, 4 users a host, 30% new accounts)
#   makes about 300 a second per host; bench-scale.sh's new-account load up to 3,300 a second
#   per host (16 users, server1 direct: docs/bench/scale.md): a burst of 10000, then 10000 a
#   second, three times the most measured
# - failed logins: the load fails none (a 401 is a lost account), but a login waiting for
#   server2 holds a token of the limit: in flight from one host at most 64 users
#   (cluster-failover.sh --threads) + 8 (clusterload.py verify's threads), or bench-scale's
#   loadgen users (16 a host by default): 100 a minute, server1's default
# - connections: one per user (HAProxy's connection to a server1 carries one client's PROXY
#   header and is that client's alone; its checks' LOCAL ones count for nobody): the 72 above,
#   or 16 loadgen users: 256, server1's default (bench-scale.sh --users above 512 needs more)
SIGNUP_LIMIT=10000/1s
LOGIN_FAIL_ADDR_LIMIT=100/1m
MAX_CONNS_PER_IP=256
NET_LOCK=/run/lock/fsc-cluster.lock # two ups never pick one /24 at once
[[ -d /run/lock ]] || NET_LOCK=/tmp/fsc-cluster.lock

usage() { header_usage "${BASH_SOURCE[0]}" 9 23 "${1:-2}"; }

# ---- the layout: hosts, names, addresses ----

# host_octet HOST: the last byte of HOST's address
host_octet() {
    case $1 in
    lb) echo 2 ;;
    s1-[1-9]) echo $((10 + ${1#s1-})) ;;
    s2-[1-9]) echo $((20 + ${1#s2-})) ;;
    db-[1-3]) echo $((30 + ${1#db-})) ;;
    lg-[1-2]) echo $((40 + ${1#lg-})) ;;
    *) return 1 ;;
    esac
}
all_hosts() {
    local k
    echo lb
    for ((k = 1; k <= N1; k++)); do echo "s1-$k"; done
    for ((k = 1; k <= N2; k++)); do echo "s2-$k"; done
    echo db-1 db-2 db-3 lg-1 lg-2 | tr ' ' '\n'
}
is_host() {
    local h
    for h in $(all_hosts); do [[ $h != "$1" ]] || return 0; done
    return 1
}
ns_of() { printf 'fsc-%s-%s\n' "$TAG" "$1"; }
addr_of() { printf '%s.%s\n' "$SUBNET" "$(host_octet "$1")"; }
# interface names are at most 15 bytes: fsc + 5-hex tag + br / v + octet
bridge_name() { printf 'fsc%sbr\n' "$TAG"; }
veth_name() { printf 'fsc%sv%s\n' "$TAG" "$(host_octet "$1")"; }

# load_conf: N1, N2, BACKEND, SUBNET, TAG from DIR/cluster.conf (each value checked)
load_conf() {
    local k v
    [[ -s $dir/cluster.conf ]] || die "$dir: no cluster here (no cluster.conf)"
    while IFS='=' read -r k v; do
        case $k in
        N1 | N2) [[ $v =~ ^[1-9]$ ]] || die "cluster.conf: bad $k" ;;
        BACKEND) [[ $v == redis-sentinel || $v == galera ]] || die "cluster.conf: bad $k" ;;
        SUBNET) [[ $v =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "cluster.conf: bad $k" ;;
        TAG) [[ $v =~ ^[0-9a-f]{5}$ ]] || die "cluster.conf: bad $k" ;;
        *) die "cluster.conf: unknown key '$k'" ;;
        esac
        printf -v "$k" '%s' "$v"
    done <"$dir/cluster.conf"
}

# ---- what up made: DIR/cluster.state, one record a line ----
#   bridge NAME | netns NAME | link NAME | galera DIR     written before the thing is made
#   pid HOST/PROG PID STARTTIME                          written as soon as the process exists
# A process that up started but could not record (its starter failed first) is still found by
# down: it runs in one of the cluster's namespaces.

record() { printf '%s\n' "$*" >>"$dir/cluster.state"; }

# start_time PID: the process's start time in clock ticks since boot (tells a reused pid apart)
start_time() {
    local line
    read -r line 2>/dev/null <"/proc/$1/stat" || return 1
    line=${line##*) }
    # shellcheck disable=SC2086  # split the fields on purpose
    set -- $line
    printf '%s\n' "${20}"
}
record_pid() {
    local st
    st=$(start_time "$2") || die "$1: the process (pid $2) is already gone; see its log"
    record pid "$1" "$2" "$st"
}
# proc_pid HOST/PROG: the pid of the newest record of HOST/PROG if that process is alive
proc_pid() {
    local pid st
    [[ -f $dir/cluster.state ]] || return 1
    read -r _ _ pid st < <(awk -v n="$1" '$1 == "pid" && $2 == n' "$dir/cluster.state" |
        tail -n 1) || return 1
    [[ -n ${pid:-} ]] && pid_alive "$pid" && [[ $(start_time "$pid") == "$st" ]] || return 1
    printf '%s\n' "$pid"
}

# ---- the network ----

# subnet_pick [A.B.C]: the /24 to use, A.B.C.0/24 if it is private and overlaps no route of the
# machine (in any table; the default route is no overlap, a /24 being more specific), else the
# first 10.201.X.0/24 that overlaps none; prints A.B.C, or (status 1) why not
subnet_pick() {
    ip -4 -o route show table all | python3 -c '
import ipaddress, sys
want = sys.argv[1]
kinds = {"unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit",
         "blackhole", "nat", "anycast"}
routes = []
for line in sys.stdin:
    f = line.split()
    if f and f[0] in kinds:
        f = f[1:]
    if not f or f[0] == "default":
        continue
    try:
        routes.append((ipaddress.ip_network(f[0], strict=False), line.strip()))
    except ValueError:
        continue

def clash(prefix):
    net = ipaddress.ip_network(prefix + ".0/24")
    return next((text for route, text in routes if route.overlaps(net)), None)

if want:
    try:
        private = ipaddress.ip_network(want + ".0/24").is_private
    except ValueError:
        private = False
    if not private:
        sys.exit("--subnet must be the first three bytes of a private /24, e.g. 10.201.7, "
                 "not %r" % want)
    if clash(want):
        sys.exit("subnet %s.0/24 overlaps a route of this machine: %s; choose another"
                 % (want, clash(want)))
    print(want)
    sys.exit(0)
for x in range(256):
    if not clash("10.201.%d" % x):
        print("10.201.%d" % x)
        sys.exit(0)
sys.exit("every 10.201.X.0/24 overlaps a route of this machine: give --subnet")
' "${1:-}" 2>&1
}

# make_network: the bridge (host side .1), then per host a namespace and a veth pair whose inner
# end is the host's eth0. Runs under NET_LOCK, so two clusters never pick the same /24.
make_network() {
    local host ns veth br
    SUBNET=$(subnet_pick "$1") || die "$SUBNET"
    br=$(bridge_name)
    record bridge "$br"
    ip link add "$br" type bridge
    ip addr add "$SUBNET.1/24" dev "$br"
    ip link set "$br" up
    while read -r host; do
        ns=$(ns_of "$host")
        veth=$(veth_name "$host")
        record netns "$ns"
        ip netns add "$ns" || die "ip netns add $ns failed (no network namespaces here?)"
        record link "$veth"
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        ip link set "$veth" master "$br" up
        ip -n "$ns" addr add "$(addr_of "$host")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done < <(all_hosts)
}

# ---- processes ----

# spawn HOST PROG LOG CMD...: CMD in HOST's namespace, in the background, in a session of its own
# (ip netns exec and setsid both exec, so $! is CMD's pid); recorded as HOST/PROG
spawn() {
    local host=$1 prog=$2 log=$3
    shift 3
    setsid ip netns exec "$(ns_of "$host")" "$@" </dev/null >>"$log" 2>&1 8>&- &
    record_pid "$host/$prog" "$!"
}

# wait_log LOG OFFSET TEXT SECS PID: TEXT appears in LOG after byte OFFSET within SECS and PID
# lives; else die with the log's tail
wait_log() {
    local log=$1 off=$2 text=$3 secs=$4 pid=$5
    _logged() { grep -q -- "$text" < <(tail -c +"$((off + 1))" "$log") || ! pid_alive "$pid"; }
    local name
    name=$(basename "$(dirname "$log")")/${log##*/}
    wait_until "$secs" _logged || die "$name: no '$text' within $secs s: $(tail -n 3 "$log")"
    pid_alive "$pid" || die "$name: the process exited: $(tail -n 3 "$log")"
}
log_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# in_ns HOST CMD...: CMD in HOST's namespace (without the lock on DIR: CMD may leave daemons)
in_ns() {
    local host=$1
    shift
    ip netns exec "$(ns_of "$host")" "$@" 8>&-
}

# The database speaks TLS between hosts (tls-certs.sh under DIR/tls: the db hosts' addresses
# in the server certificate); its clients offer the client certificate. HTTPS has a server
# certificate of its own from the same CA (make_www_certs).
tls_cli() { printf '%s\n' --tls --cacert "$dir/tls/ca.pem" --cert "$dir/tls/client.pem" \
    --key "$dir/tls/client.key"; }
rcli() { # rcli HOST ARGS...: redis-cli to HOST's Redis (as the account database's clients do)
    local tls
    mapfile -t tls < <(tls_cli)
    REDISCLI_AUTH=$(<"$dir/db-1/redis/password") \
        redis-cli "${tls[@]}" -h "$(addr_of "$1")" -p "$REDIS_PORT" "${@:2}"
}
scli() { # scli HOST ARGS...: redis-cli to HOST's Sentinel, with the Sentinels' password
    local tls
    mapfile -t tls < <(tls_cli)
    REDISCLI_AUTH=$(<"$dir/db-1/sentinel/password") \
        redis-cli "${tls[@]}" -h "$(addr_of "$1")" -p "$SENTINEL_PORT" "${@:2}"
}

# sentinel_master: the address of the primary the Sentinels name (the first that answers)
sentinel_master() {
    local k a
    for k in 1 2 3; do
        a=$(scli "db-$k" sentinel get-master-addr-by-name "$MASTER" 2>/dev/null | head -n 1) ||
            continue
        [[ $a =~ ^[0-9.]+$ ]] && { echo "$a"; return 0; }
    done
    return 1
}
host_of_addr() {
    local h
    for h in $(all_hosts); do
        [[ $(addr_of "$h") == "$1" ]] && { echo "$h"; return 0; }
    done
    return 1
}

start_redis() {
    local k=$1 d=$dir/db-$1/redis master
    mkdir -p "$d"
    [[ -s $d/password ]] || cp "$dir/db-1/redis/password" "$d/password"
    chmod 600 "$d/password"
    in_ns "db-$k" env REDIS_BIND="$(addr_of "db-$k")" REDIS_TLS="$dir/tls" \
        "$TOP/scripts/redis.sh" start "$d" \
        "$REDIS_PORT" >/dev/null
    record_pid "db-$k/redis" "$(cat "$d/redis.pid")"
    # a primary sends a full copy to a replica at once, not 5 s later (the default waits for
    # more replicas to share one transfer)
    rcli "db-$k" config set repl-diskless-sync-delay 0 >/dev/null
    # a replica of the primary of the moment: db-1 at the start; later, the one the Sentinels name
    # (a restarted node comes up as a primary of its own until told otherwise)
    if proc_pid db-1/sentinel >/dev/null || proc_pid db-2/sentinel >/dev/null ||
        proc_pid db-3/sentinel >/dev/null; then
        master=$(sentinel_master) || die "no Sentinel names a primary"
    else
        master=$(addr_of db-1)
    fi
    if [[ $master != "$(addr_of "db-$k")" ]]; then
        rcli "db-$k" replicaof "$master" "$REDIS_PORT" >/dev/null
        _linked() { [[ $(rcli "db-$k" info replication) == *master_link_status:up* ]]; }
        wait_until 30 _linked || die "db-$k did not link to the primary $master"
    fi
}

start_sentinel() {
    local k=$1 d=$dir/db-$1/sentinel off
    mkdir -p "$d"
    if [[ ! -s $d/sentinel.conf ]]; then # Sentinel rewrites its file with what it learns
        (umask 077 && cat >"$d/sentinel.conf") <<EOF
port 0
tls-port $SENTINEL_PORT
tls-cert-file $dir/tls/server.pem
tls-key-file $dir/tls/server.key
tls-ca-cert-file $dir/tls/ca.pem
tls-replication yes
bind $(addr_of "db-$k")
daemonize no
dir $d
sentinel resolve-hostnames no
sentinel monitor $MASTER $(addr_of db-1) $REDIS_PORT 2
sentinel auth-pass $MASTER $(<"$dir/db-1/redis/password")
requirepass $(<"$dir/db-1/sentinel/password")
sentinel down-after-milliseconds $MASTER $DOWN_AFTER_MS
sentinel failover-timeout $MASTER 10000
EOF
    fi
    off=$(log_size "$d/sentinel.log")
    spawn "db-$k" sentinel "$d/sentinel.log" redis-server "$d/sentinel.conf" --sentinel
    wait_log "$d/sentinel.log" "$off" 'Sentinel ID is' 10 "$(proc_pid "db-$k/sentinel")"
}

start_redis_sentinel() {
    local k
    mkdir -p "$dir/db-1/redis"
    ensure_password "$dir/db-1/redis/password"
    for k in 1 2 3; do start_redis "$k"; done
    # the Sentinels' own password (requirepass; also how they log in to each other), one for
    # the three, apart from the data nodes'
    mkdir -p "$dir/db-1/sentinel"
    ensure_password "$dir/db-1/sentinel/password"
    # what the Sentinels learnt in an earlier life of DIR (other addresses, perhaps) is forgotten
    rm -f "$dir"/db-[123]/sentinel/sentinel.conf
    for k in 1 2 3; do start_sentinel "$k"; done
    _sentinels_ready() {
        local k
        for k in 1 2 3; do
            scli "db-$k" sentinel master "$MASTER" 2>/dev/null | grep -A1 -x num-other-sentinels |
                tail -n 1 | grep -qx 2 || return 1
            scli "db-$k" sentinel master "$MASTER" 2>/dev/null | grep -A1 -x num-slaves |
                tail -n 1 | grep -qx 2 || return 1
        done
    }
    wait_until 30 _sentinels_ready || die "the Sentinels did not find each other and the replicas"
}

start_galera() {
    local k addrs="" spaces=""
    chmod o+x "$dir" # the nodes run as mysql when this runs as root
    for k in 1 2 3; do
        addrs+="${addrs:+,}$(addr_of "db-$k")"
        spaces+="${spaces:+,}$(ns_of "db-$k")"
    done
    # recorded before they exist: a start that fails half-way is stopped by down
    record galera "$dir/galera"
    GALERA_ADDRS=$addrs GALERA_NETNS=$spaces GALERA_CLIENT_HOST="$SUBNET.%" GALERA_TLS=$dir/tls \
        "$TOP/scripts/galera.sh" start "$dir/galera" 3 >/dev/null 8>&-
    for k in 1 2 3; do
        record_pid "db-$k/mariadb" "$(cat "$dir/galera/node$k/mysqld.pid")"
    done
}

start_mariadb() { # a node again, after a kill: it rejoins the others
    "$TOP/scripts/galera.sh" rejoin "$dir/galera" "$1" 8>&-
    record_pid "db-$1/mariadb" "$(cat "$dir/galera/node$1/mysqld.pid")"
}

backend_url() {
    if [[ $BACKEND == redis-sentinel ]]; then
        printf 'rediss-sentinel://%s:%s,%s:%s,%s:%s/%s\n' "$(addr_of db-1)" "$SENTINEL_PORT" \
            "$(addr_of db-2)" "$SENTINEL_PORT" "$(addr_of db-3)" "$SENTINEL_PORT" "$MASTER"
    else
        printf 'mysql://auth@%s:3306,%s:3306,%s:3306/auth?tls=on\n' "$(addr_of db-1)" \
            "$(addr_of db-2)" "$(addr_of db-3)"
    fi
}
backend_password_file() {
    if [[ $BACKEND == redis-sentinel ]]; then echo "$dir/db-1/redis/password"; else
        echo "$dir/galera/password"; fi
}

# With Galera, a write waits for a dead node to be evicted (galera.sh: evs.inactive_timeout
# 1.5 s): --backend-timeout 3s lets it complete rather than fail at the default 2 s, and stays
# below server1's --auth-timeout (5 s).
start_server2() {
    local k=$1 d=$dir/s2-$1 off timeout=() spw=()
    mkdir -p "$d"
    off=$(log_size "$d/server2.log")
    [[ $BACKEND != galera ]] || timeout=(--backend-timeout 3s)
    [[ $BACKEND != redis-sentinel ]] ||
        spw=(--sentinel-password-file "$dir/db-1/sentinel/password")
    spawn "s2-$k" server2 "$d/server2.log" "$BIN_DIR/server2" --listen "$(addr_of "s2-$k")" \
        --port "$S2_PORT" --backend "$(backend_url)" \
        --backend-password-file "$(backend_password_file)" --secret-file "$dir/link.secret" \
        --hash-cost min --workers 2 "${timeout[@]}" "${spw[@]}" \
        --backend-tls-ca "$dir/tls/ca.pem" --backend-tls-cert "$dir/tls/client.pem" \
        --backend-tls-key "$dir/tls/client.key"
    wait_log "$d/server2.log" "$off" 'listening on ' 20 "$(proc_pid "s2-$k/server2")"
}

# make_www_certs: the HTTPS certificate of HAProxy's frontend and of the server1s, from the
# cluster's CA but apart from the database's key (DIR/tls/www): the lb's and every server1's
# address (what clients connect to) and the name server1 (what HAProxy's verifyhost checks);
# lb.pem is it with its key, as HAProxy's crt takes them
make_www_certs() {
    local w=$dir/tls/www k addrs
    mkdir -p "$w"
    cp -p "$dir/tls/ca.pem" "$dir/tls/ca.key" "$w/"
    addrs=("$(addr_of lb)")
    for ((k = 1; k <= N1; k++)); do addrs+=("$(addr_of "s1-$k")"); done
    "$TOP/scripts/tls-certs.sh" "$w" "${addrs[@]}" server1
    rm -f "$w/ca.key" "$w/ca.srl" "$w/client.pem" "$w/client.key" # only the CA signs
    (umask 077 && cat "$w/server.pem" "$w/server.key" >"$w/lb.pem")
}

# server1: HTTPS for HAProxy, whose PROXY header names the client every per-client limit
# counts; its plain port refuses credentials (403), so that no password crosses the cluster's
# network in clear to it
start_server1() {
    local k=$1 d=$dir/s1-$1 off auth="" j
    mkdir -p "$d/root"
    for ((j = 1; j <= N2; j++)); do auth+="${auth:+,}$(addr_of "s2-$j"):$S2_PORT"; done
    [[ -f $d/root/f1k-00 ]] || cp -p "$dir/files/"* "$d/root/"
    off=$(log_size "$d/server1.log")
    spawn "s1-$k" server1 "$d/server1.log" "$BIN_DIR/server1" --listen "$(addr_of "s1-$k")" \
        --port "$HTTP_PORT" --tls-port "$HTTPS_PORT" --tls-cert "$dir/tls/www/server.pem" \
        --tls-key "$dir/tls/www/server.key" --plain-http no-credentials \
        --trusted-proxy "$(addr_of lb)" --root "$d/root" --prefetch --threads 2 --auth "$auth" \
        --auth-secret-file "$dir/link.secret" --signup-limit "$SIGNUP_LIMIT" \
        --login-fail-addr-limit "$LOGIN_FAIL_ADDR_LIMIT" --max-conns-per-ip "$MAX_CONNS_PER_IP" \
        --metrics-listen "$(addr_of "s1-$k"):$METRICS_PORT"
    wait_log "$d/server1.log" "$off" 'listening for https on ' 20 "$(proc_pid "s1-$k/server1")"
}

haproxy_conf() {
    local k servers=""
    for ((k = 1; k <= N1; k++)); do
        servers+="    server s1-$k $(addr_of "s1-$k"):$HTTPS_PORT"$'\n'
    done
    awk -v servers="${servers%$'\n'}" -v sock="$dir/lb/haproxy.sock" -v addr="$(addr_of lb)" \
        -v port="$HTTPS_PORT" -v sport="$STATS_PORT" -v inter="$CHECK_INTER" \
        -v fall="$CHECK_FALL" -v rise="$CHECK_RISE" -v crt="$dir/tls/www/lb.pem" \
        -v ca="$dir/tls/ca.pem" '
        /^ *@SERVERS@ *$/ { print servers; next }
        {
            gsub(/@SOCK@/, sock); gsub(/@ADDR@/, addr); gsub(/@PORT@/, port)
            gsub(/@STATSPORT@/, sport); gsub(/@CRT@/, crt); gsub(/@CA@/, ca)
            gsub(/@INTER@/, inter); gsub(/@FALL@/, fall); gsub(/@RISE@/, rise)
            print
        }' "$TOP/scripts/haproxy.cfg.in"
}

start_haproxy() {
    local d=$dir/lb
    mkdir -p "$d"
    haproxy_conf >"$d/haproxy.cfg"
    haproxy -c -q -f "$d/haproxy.cfg" >"$d/haproxy-check.log" 2>&1 ||
        die "HAProxy refuses $d/haproxy.cfg: $(tail -n 3 "$d/haproxy-check.log")"
    spawn lb haproxy "$d/haproxy.log" haproxy -db -f "$d/haproxy.cfg"
    _stats_up() { curl -s -m 1 -o /dev/null "http://$(addr_of lb):$STATS_PORT/stats;csv"; }
    wait_until 10 _stats_up || die "HAProxy did not start: $(tail -n 3 "$d/haproxy.log")"
}

# haproxy_servers: "BACKEND SERVER STATUS CHECK" per server1 in each backend
haproxy_servers() {
    curl -s -m 2 "http://$(addr_of lb):$STATS_PORT/stats;csv" | awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $2 != "FRONTEND" && $2 != "BACKEND" && NF > 2 {
            print $1, $2, $c["status"], $c["check_status"] }'
}
# haproxy_all_up [HOST]: HAProxy sees every server1 (or HOST) UP in both backends
haproxy_all_up() {
    local out
    out=$(haproxy_servers 2>/dev/null) || return 1
    [[ -n $out ]] || return 1
    if [[ -n ${1:-} ]]; then
        (($(awk -v h="$1" '$2 == h && $3 == "UP"' <<<"$out" | wc -l) == 2))
    elif [[ -n $(awk '$3 != "UP"' <<<"$out") ]]; then
        return 1
    fi
}

make_files() {
    local i
    mkdir -p "$dir/files"
    for ((i = 0; i < FILES; i++)); do
        random_file "$dir/files/$(printf 'f1k-%02d' "$i")" 1024
    done
}

# ---- commands ----

# parse_up ARGS...: up's flags into N1, N2, BACKEND, WANT_SUBNET, each checked (before anything
# is made)
parse_up() {
    local msg
    ((EUID == 0)) || die "needs root: network namespaces (ip netns) are made by root only"
    N1=2 N2=2 BACKEND=redis-sentinel WANT_SUBNET=""
    while (($# > 0)); do
        case $1 in
        --server1 | --server2 | --backend | --subnet) (($# >= 2)) || die "$1 needs a value" ;;&
        --server1) N1=$2; shift 2 ;;
        --server2) N2=$2; shift 2 ;;
        --backend) BACKEND=$2; shift 2 ;;
        --subnet) WANT_SUBNET=$2; shift 2 ;;
        *) die "up: unknown argument '$1'" ;;
        esac
    done
    [[ $N1 =~ ^[0-9]+$ ]] && ((N1 >= 1 && N1 <= MAX_SERVER1)) ||
        die "--server1 must be 1..$MAX_SERVER1, not '$N1'"
    [[ $N2 =~ ^[0-9]+$ ]] && ((N2 >= 1 && N2 <= MAX_SERVER2)) ||
        die "--server2 must be 1..$MAX_SERVER2 (server1 --auth takes at most 8), not '$N2'"
    N1=$((10#$N1)) N2=$((10#$N2))
    [[ $BACKEND == redis-sentinel || $BACKEND == galera ]] ||
        die "--backend must be redis-sentinel or galera, not '$BACKEND'"
    if [[ -n $WANT_SUBNET ]]; then
        [[ $WANT_SUBNET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
            die "--subnet must be the first three bytes of a private /24, e.g. 10.201.7, not '$WANT_SUBNET'"
        msg=$(subnet_pick "$WANT_SUBNET") || die "$msg"
    fi
}

cmd_up() {
    local h
    require_cmd ip python3 haproxy setsid flock curl
    if [[ $BACKEND == redis-sentinel ]]; then require_cmd redis-server redis-cli; else
        require_cmd mariadbd mariadb rsync; fi
    [[ -x $BIN_DIR/server1 && -x $BIN_DIR/server2 ]] || die "no server1/server2 in $BIN_DIR: run make"
    [[ -f $dir/cluster.state ]] &&
        die "$dir is already up (or was not taken down): run '${0##*/} down $dir' first"
    TAG=$(printf '%s' "$dir" | sha1sum | cut -c1-5)
    for h in $(all_hosts); do
        [[ ! -e /run/netns/$(ns_of "$h") ]] ||
            die "namespace $(ns_of "$h") exists already: another cluster with the same tag?"
    done
    ! ip link show "$(bridge_name)" >/dev/null 2>&1 ||
        die "link $(bridge_name) exists already: another cluster with the same tag?"

    : >"$dir/cluster.state"
    UP_OK=""
    trap '[[ -n $UP_OK ]] || { log "up failed: taking down what it made"; down_all; }' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    (
        flock -w 30 9 || die "another cluster.sh holds $NET_LOCK for 30 s"
        make_network "$WANT_SUBNET"
        printf 'N1=%s\nN2=%s\nBACKEND=%s\nSUBNET=%s\nTAG=%s\n' "$N1" "$N2" "$BACKEND" \
            "$SUBNET" "$TAG" >"$dir/cluster.conf"
    ) 9>"$NET_LOCK"
    load_conf
    for h in $(all_hosts); do
        printf '%-6s %-15s %s\n' "$h" "$(addr_of "$h")" "$(ns_of "$h")"
        mkdir -p "$dir/$h"
    done >"$dir/hosts"
    if [[ ! -s $dir/link.secret ]]; then
        (umask 077 && head -c 32 /dev/urandom >"$dir/link.secret")
    fi
    make_files
    "$TOP/scripts/tls-certs.sh" "$dir/tls" "$(addr_of db-1)" "$(addr_of db-2)" "$(addr_of db-3)"
    make_www_certs
    local k
    log "network up ($SUBNET.0/24); starting the database ($BACKEND)"
    if [[ $BACKEND == redis-sentinel ]]; then start_redis_sentinel; else start_galera; fi
    log "starting $N2 server2, $N1 server1, HAProxy"
    for ((k = 1; k <= N2; k++)); do start_server2 "$k"; done
    for ((k = 1; k <= N1; k++)); do start_server1 "$k"; done
    start_haproxy
    wait_until 20 haproxy_all_up || die "HAProxy does not see every server1 up: $(haproxy_servers)"
    UP_OK=1
    log "up: $N1 server1, $N2 server2, $BACKEND, $SUBNET.0/24; HAProxy at" \
        "https://$(addr_of lb):$HTTPS_PORT (CA: $dir/tls/ca.pem)"
    log "to take it down: ${0##*/} down $dir"
}

# stop_pids PID...: SIGTERM all, wait up to 15 s, SIGKILL what is left
stop_pids() {
    local p deadline
    (($# > 0)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    deadline=$(($(now_ms) + 15000))
    for p in "$@"; do
        while pid_alive "$p" && (($(now_ms) < deadline)); do sleep 0.05; done
        if pid_alive "$p"; then
            log "pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) still there 15 s after SIGTERM: SIGKILL"
            kill -KILL "$p" 2>/dev/null || true
            wait_pid_exit "$p" 5 || log "pid $p does not die"
        fi
    done
}

# down_all: undo every record of DIR/cluster.state, newest first; what is already gone is skipped
down_all() {
    local kind a b c pids=() leftover gal=()
    [[ -f $dir/cluster.state ]] || return 0
    set +e
    while read -r kind a b c; do
        case $kind in
        galera) gal+=("$a") ;;
        pid)
            pid_alive "$b" && [[ $(start_time "$b") == "$c" ]] && pids+=("$b")
            ;;
        esac
    done < <(tac "$dir/cluster.state")
    # Galera's nodes in order (the last to stop would bootstrap a new cluster from its state)
    for a in "${gal[@]}"; do "$TOP/scripts/galera.sh" stop "$a" </dev/null; done
    stop_pids "${pids[@]}"
    while read -r kind a b c; do
        case $kind in
        netns)
            [[ -e /run/netns/$a ]] || continue
            # anything still in the namespace was started there by us (e.g. a load generator,
            # a state transfer's rsync)
            leftover=$(ip netns pids "$a" 2>/dev/null | tr '\n' ' ')
            if [[ -n ${leftover// /} ]]; then
                log "namespace $a: stopping what is still there: pids $leftover"
                # shellcheck disable=SC2086  # a list of pids
                stop_pids $leftover
            fi
            ip netns del "$a" || log "cannot remove namespace $a"
            ;;
        link | bridge)
            if ip link show "$a" >/dev/null 2>&1; then ip link del "$a" 2>/dev/null; fi
            ;;
        esac
    done < <(tac "$dir/cluster.state")
    # a namespace's removal takes its end of a pair with it, the other end a moment later
    _links_gone() {
        local k n
        while read -r k n _; do
            [[ $k == link || $k == bridge ]] || continue
            ! ip link show "$n" >/dev/null 2>&1 || return 1
        done <"$dir/cluster.state"
    }
    wait_until 10 _links_gone || log "some links of $dir are still there: $(ip -o link | grep "fsc$TAG")"
    rm -f "$dir/cluster.state"
    set -e
}

cmd_down() {
    [[ -d $dir && -f $dir/cluster.state ]] || { log "$dir: nothing up"; return 0; }
    ((EUID == 0)) || die "needs root: network namespaces (ip netns) are removed by root only"
    TAG=$(printf '%s' "$dir" | sha1sum | cut -c1-5)
    [[ ! -s $dir/cluster.conf ]] || load_conf
    down_all
    log "down: $dir"
}

cmd_status() {
    local h p prog pid st primary
    load_conf
    [[ -f $dir/cluster.state ]] || { echo "cluster $dir: down"; return 0; }
    echo "cluster $dir: $N1 server1, $N2 server2, $BACKEND, $SUBNET.0/24 (tag $TAG)"
    printf '%-6s %-15s %-20s %s\n' host address namespace processes
    for h in $(all_hosts); do
        p=""
        for prog in haproxy server1 server2 redis sentinel mariadb; do
            grep -q " $h/$prog " "$dir/cluster.state" || continue
            if pid=$(proc_pid "$h/$prog"); then st="$prog $pid"; else st="$prog DEAD"; fi
            p+="${p:+, }$st"
        done
        [[ -e /run/netns/$(ns_of "$h") ]] || p="(no namespace) $p"
        printf '%-6s %-15s %-20s %s\n' "$h" "$(addr_of "$h")" "$(ns_of "$h")" "${p:--}"
    done
    echo "HAProxy ($CHECK_INTER checks, down after $CHECK_FALL failures, up after $CHECK_RISE):"
    haproxy_servers 2>/dev/null | awk '{printf "  %-6s %-5s %-6s %s\n", $1, $2, $3, $4}' ||
        echo "  (no answer from http://$(addr_of lb):$STATS_PORT/stats)"
    primary=$(db_primary 2>/dev/null) || primary="(none found)"
    echo "database writes go to: $primary"
}

# db_primary: the db host that takes the writes: the primary the Sentinels name, or the Galera
# node most of server2's connections are on
db_primary() {
    local k n best=0 host=""
    if [[ $BACKEND == redis-sentinel ]]; then
        host_of_addr "$(sentinel_master)"
        return
    fi
    for k in 1 2 3; do
        n=$(mariadb --defaults-file="$dir/galera/node$k/my.cnf" --user="$(id -un)" --batch \
            --skip-column-names -e \
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'auth'" \
            2>/dev/null) || continue
        if ((n > best)); then best=$n host=db-$k; fi
    done
    [[ -n $host ]] && echo "$host"
}

# check_proc HOST/PROG: a process this cluster has; sets H, PROG (and loads DIR/cluster.conf)
check_proc() {
    [[ $1 =~ ^([a-z0-9-]+)/([a-z0-9]+)$ ]] || die "expected HOST/PROG, e.g. s1-1/server1, not '$1'"
    H=${BASH_REMATCH[1]} PROG=${BASH_REMATCH[2]}
    load_conf
    is_host "$H" || die "no host '$H' in this cluster"
    grep -q " $H/$PROG " "$dir/cluster.state" 2>/dev/null || die "no process $1 in this cluster"
}

cmd_kill() {
    local sig=${2:-KILL} pid
    [[ $sig =~ ^[A-Z0-9]+$ ]] || die "bad signal '$sig'"
    check_proc "$1"
    pid=$(proc_pid "$1") || die "$1 is not running"
    kill -"$sig" "$pid"
    [[ $sig != KILL ]] || wait_pid_exit "$pid" 10 || die "$1 (pid $pid) survived SIGKILL"
}

cmd_start() {
    local k
    check_proc "$1"
    ! proc_pid "$1" >/dev/null || die "$1 is running"
    k=${H#*-}
    case $PROG in
    haproxy) start_haproxy ;;
    server1) start_server1 "$k"; wait_until 20 haproxy_all_up "$H" || die "HAProxy does not see $H up" ;;
    server2) start_server2 "$k" ;;
    redis) start_redis "$k" ;;
    sentinel) start_sentinel "$k" ;;
    mariadb) start_mariadb "$k" ;;
    *) die "cannot start '$PROG'" ;;
    esac
}

main() {
    local cmd=${1:-}
    case $cmd in
    -h | --help) usage 0 ;;
    up | down | status | exec | kill | start | primary) ;;
    *) usage ;;
    esac
    (($# >= 2)) || usage
    [[ -n $2 ]] || usage
    if [[ $cmd == up ]]; then
        parse_up "${@:3}"
        mkdir -p "$2"
    else
        [[ -d $2 ]] || die "$2: no such directory"
    fi
    dir=$(cd "$2" && pwd)
    check_sock_path "$dir/galera/node1/mysqld.sock" # the longest socket path under DIR
    shift 2
    # one command at a time per DIR
    exec 8>>"$dir/.lock"
    flock -w 60 8 || die "another cluster.sh is working on $dir"
    case $cmd in
    up) cmd_up ;;
    down) (($# == 0)) || usage; cmd_down ;;
    status) (($# == 0)) || usage; cmd_status ;;
    exec)
        (($# >= 2)) || usage
        load_conf
        is_host "$1" || die "no host '$1' in this cluster"
        exec 8>&- # (so CMD's pid is this script's)
        exec ip netns exec "$(ns_of "$1")" "${@:2}"
        ;;
    kill) (($# == 1 || $# == 2)) || usage; cmd_kill "$@" ;;
    start) (($# == 1)) || usage; cmd_start "$1" ;;
    primary) (($# == 0)) || usage; load_conf; db_primary || die "no database primary found" ;;
    esac
}

main "$@"
