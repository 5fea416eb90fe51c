#!/usr/bin/env bash
# A throw-away MariaDB Galera cluster of N nodes on 127.0.0.1, everything under DIR (node K in
# DIR/nodeK: its my.cnf, data, socket, log, pid, port).
#   galera.sh start DIR [N]      start N nodes (default 3): node 1 bootstraps the cluster
#                                (made and given the schema first, its data then copied to
#                                the others), the others join it; prints the client ports,
#                                comma-separated, once every node is synced (DIR/ports too)
#   galera.sh stop DIR           stop every node (nothing running: no-op)
#   galera.sh kill DIR K         SIGKILL node K (a crash, for failover tests)
#   galera.sh rejoin DIR K       start node K again after a stop or a kill; it rejoins by an
#                                incremental transfer from another node's write cache (after a
#                                kill, its position is first recovered from InnoDB)
# The account database is made as scripts/mysql.sh makes it (the `auth` user, its password in
# DIR/password, mode 0600); give it to server2 with --backend-password-file DIR/password and
# the URL mysql://auth@127.0.0.1:P1,127.0.0.1:P2,.../auth. Synchronous replication: a commit
# returns once every node has certified it. Never uses the system-wide service.
# Nodes on hosts of their own (scripts/cluster.sh: network namespaces), given to start:
#   GALERA_ADDRS=A1,A2,...     node K listens on AK, with the usual ports (client 3306, Galera
#                              4567, IST 4568, state transfer 4444), instead of 127.0.0.1 and
#                              free ports
#   GALERA_NETNS=NS1,NS2,...   node K runs in network namespace NSK (ip netns exec)
#   GALERA_CLIENT_HOST=PATTERN `auth` may also connect from PATTERN (e.g. 10.201.7.%)
#   GALERA_TLS=CERTDIR         (scripts/tls-certs.sh) clients over TCP must use TLS
#                              (require_secure_transport) and the nodes replicate over TLS
#                              (socket.ssl_*): each node gets a copy of CERTDIR's CA and server
#                              certificate in DIR/nodeK/tls; a state transfer (rsync) goes
#                              through stunnel (ssl-mode VERIFY_CA, from the same settings)
# start keeps them in DIR/nodeK/{addr,netns}, so kill and rejoin need nothing more.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
# Failure detection: a node silent for 1 s is suspected, for 1.5 s dropped, and the others go on
# without it; writes wait meanwhile. (The defaults, 5 s and 15 s, are for hosts across a
# network: on one machine a write would wait longer than server2's --backend-timeout, 2 s by
# default, 3 s in scripts/cluster.sh. With 0.8 s and 1.2 s a busy 2-core machine split the
# cluster: the two nodes left suspected each other.)
EVS="evs.keepalive_period=PT0.25S;evs.suspect_timeout=PT1S;evs.inactive_check_period=PT0.25S"
EVS+=";evs.inactive_timeout=PT1.5S;evs.install_timeout=PT1.5S"
# As root the nodes run as mysql (Debian's mariadb-server makes that user): a joiner's rsync
# daemon, started by root, would drop to nobody and could not write the data dir.
user_opt=()
run_as=""
if ((EUID == 0)); then
    id mysql >/dev/null 2>&1 || die "running as root needs the user mysql (package mariadb-server)"
    user_opt=(--user=mysql)
    run_as=mysql
fi
# own DIR...: the node dirs belong to the user the nodes run as
own() { [[ -z $run_as ]] || chown -R "$run_as:" "$@"; }

usage() { die "usage: ${0##*/} start DIR [N] | stop DIR | kill DIR K | rejoin DIR K"; }

node_dir() { printf '%s/node%s' "$dir" "$1"; }
node_pid() {
    local d pid
    d=$(node_dir "$1")
    pid=$(cat "$d/mysqld.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" || return 1
    grep -q mariadbd "/proc/$pid/cmdline" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}
sql() { mariadb --defaults-file="$(node_dir "$1")/my.cnf" --user="$(id -un)" --batch \
    --skip-column-names "${@:2}"; }
status_of() { sql "$1" -e "SHOW STATUS LIKE '$2'" 2>/dev/null | cut -f2; }
synced() { [[ $(status_of "$1" wsrep_local_state_comment) == Synced ]]; }
cluster_is() { [[ $(status_of "$1" wsrep_cluster_size) == "$2" ]]; }

# node_addr K: the address node K listens on (DIR/nodeK/addr, else 127.0.0.1)
node_addr() {
    local f
    f=$(node_dir "$1")/addr
    if [[ -s $f ]]; then cat "$f"; else echo 127.0.0.1; fi
}

# write_conf K: node K's my.cnf, from the ports in DIR/nodeK/{port,gport,sport,iport} and the
# addresses of DIR/node*/addr
write_conf() {
    local k=$1 d peers="" i a tls_opts=""
    d=$(node_dir "$k")
    a=$(node_addr "$k")
    for ((i = 1; i <= nnodes; i++)); do
        peers+="${peers:+,}$(node_addr "$i"):$(<"$(node_dir "$i")/gport")"
    done
    if [[ -s $d/tls/server.pem ]]; then
        tls_opts=";socket.ssl_cert=$d/tls/server.pem;socket.ssl_key=$d/tls/server.key"
        tls_opts+=";socket.ssl_ca=$d/tls/ca.pem"
    fi
    {
        mariadb_conf "$d" "$(<"$d/port")" "$d/mariadbd.pid" "$a"
        [[ -z $tls_opts ]] || printf '%s\n' "ssl_cert = $d/tls/server.pem" \
            "ssl_key = $d/tls/server.key" "ssl_ca = $d/tls/ca.pem" \
            "require_secure_transport = ON" "tls_version = TLSv1.2,TLSv1.3"
        cat <<CONF
innodb_autoinc_lock_mode = 2
binlog_format = ROW
max_connections = 500
wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = s1-galera
wsrep_cluster_address = gcomm://$peers
wsrep_node_name = node$k
wsrep_node_address = $a:$(<"$d/gport")
wsrep_provider_options = "gmcast.listen_addr=tcp://$a:$(<"$d/gport");ist.recv_addr=$a:$(<"$d/iport");gcache.size=32M;$EVS$tls_opts"
wsrep_sst_method = rsync
wsrep_sst_receive_address = $a:$(<"$d/sport")
CONF
    } >"$d/my.cnf"
}

# launch K [--wsrep-new-cluster]: starts node K in the background (in its network namespace,
# if it has one: `ip netns exec` becomes mariadbd, so $! is the node's pid)
launch() {
    local k=$1 d netns=()
    d=$(node_dir "$k")
    mkdir -p "$d/tmp"
    [[ ! -s $d/netns ]] || netns=(ip netns exec "$(<"$d/netns")")
    nohup "${netns[@]}" mariadbd --defaults-file="$d/my.cnf" "${user_opt[@]}" "${@:2}" \
        </dev/null >>"$d/mysqld.err" 2>&1 &
    printf '%s\n' "$!" >"$d/mysqld.pid"
}

wait_synced() {
    local k=$1 pid
    pid=$(cat "$(node_dir "$k")/mysqld.pid")
    wait_until 90 synced "$k" && pid_alive "$pid" ||
        die "node $k did not reach Synced in 90 s; log: $(node_dir "$k")/mysqld.err"
}

create_schema() {
    ensure_password "$dir/password"
    auth_schema_sql "$(<"$dir/password")" ${GALERA_CLIENT_HOST:+"$GALERA_CLIENT_HOST"} | sql 1
}

# place_nodes: each node's address and namespace from GALERA_ADDRS / GALERA_NETNS (written to
# DIR/nodeK/{addr,netns}, with the usual ports), or loopback and free ports without them
place_nodes() {
    local k d f addrs=() spaces=()
    [[ -z ${GALERA_ADDRS:-} ]] || IFS=, read -ra addrs <<<"$GALERA_ADDRS"
    [[ -z ${GALERA_NETNS:-} ]] || IFS=, read -ra spaces <<<"$GALERA_NETNS"
    ((${#addrs[@]} == 0 || ${#addrs[@]} == nnodes)) ||
        die "GALERA_ADDRS names ${#addrs[@]} addresses for $nnodes nodes"
    ((${#spaces[@]} == 0 || ${#spaces[@]} == nnodes)) ||
        die "GALERA_NETNS names ${#spaces[@]} namespaces for $nnodes nodes"
    for ((k = 1; k <= nnodes; k++)); do
        d=$(node_dir "$k")
        mkdir -p "$d/tmp"
        if ((${#addrs[@]} > 0)); then
            printf '%s\n' "${addrs[k - 1]}" >"$d/addr"
            echo 3306 >"$d/port"
            echo 4567 >"$d/gport"
            echo 4444 >"$d/sport"
            echo 4568 >"$d/iport"
        elif [[ -e $d/addr ]]; then
            rm -f "$d/addr" "$d/port" "$d/gport" "$d/sport" "$d/iport"
        fi
        if ((${#spaces[@]} > 0)); then
            printf '%s\n' "${spaces[k - 1]}" >"$d/netns"
        else
            rm -f "$d/netns"
        fi
        for f in port gport sport iport; do
            [[ -s $d/$f ]] || free_port >"$d/$f"
        done
    done
}

cmd_start() {
    local k d ports=""
    [[ $nnodes =~ ^[0-9]+$ ]] && ((nnodes >= 1 && nnodes <= 9)) || die "N must be 1..9"
    [[ -r $PROVIDER ]] || die "no Galera provider at $PROVIDER (Debian package galera-4)"
    require_cmd rsync
    if node_pid 1 >/dev/null; then
        cat "$dir/ports"
        return 0
    fi
    mkdir -p "$dir"
    printf '%s\n' "$nnodes" >"$dir/nodes"
    place_nodes
    if [[ -n ${GALERA_TLS:-} ]]; then
        for ((k = 1; k <= nnodes; k++)); do
            mkdir -p "$(node_dir "$k")/tls"
            cp "$GALERA_TLS/ca.pem" "$GALERA_TLS/server.pem" "$GALERA_TLS/server.key" \
                "$(node_dir "$k")/tls/"
        done
    fi
    own "$dir"/node*
    [[ -z $run_as ]] || runuser -u "$run_as" -- test -w "$dir/node1" ||
        die "the nodes run as $run_as, who cannot reach $dir: make its parents searchable (o+x)"
    for ((k = 1; k <= nnodes; k++)); do
        write_conf "$k"
    done
    d=$(node_dir 1)
    if [[ ! -e $d/data/mysql_upgrade_info ]]; then
        # node 1 is made and given the schema alone, then stopped, and every node starts from
        # a copy of its data: the same cluster state, so joining needs only an incremental
        # transfer of what happened since, not a copy of everything
        rm -rf "$d/data"
        own "$d"
        mariadb-install-db --defaults-file="$d/my.cnf" "${user_opt[@]}" --datadir="$d/data" \
            --auth-root-authentication-method=socket --auth-root-socket-user="$(id -un)" \
            --skip-test-db --skip-name-resolve >"$d/install-db.log" 2>&1 ||
            die "mariadb-install-db failed for node 1 (log: $d/install-db.log)"
        launch 1 --wsrep-new-cluster
        wait_synced 1
        create_schema
        stop_process mariadbd "$(cat "$d/mysqld.pid")" 30
        for ((k = 2; k <= nnodes; k++)); do
            rm -rf "$(node_dir "$k")/data"
            cp -a "$d/data" "$(node_dir "$k")/data"
            rm -f "$(node_dir "$k")/data/galera.cache" "$(node_dir "$k")/data/gvwstate.dat"
        done
    fi
    for ((k = 1; k <= nnodes; k++)); do
        own "$(node_dir "$k")"
    done
    launch 1 --wsrep-new-cluster
    wait_synced 1
    for ((k = 2; k <= nnodes; k++)); do
        launch "$k"
        wait_synced "$k"
    done
    wait_until 30 cluster_is 1 "$nnodes" || die "the cluster did not reach $nnodes nodes"
    for ((k = 1; k <= nnodes; k++)); do
        ports+="${ports:+,}$(<"$(node_dir "$k")/port")"
    done
    printf '%s\n' "$ports" >"$dir/ports"
    printf '%s\n' "$ports"
}

cmd_stop() {
    local k pid n
    n=$(cat "$dir/nodes" 2>/dev/null) || return 0
    # the last to stop would bootstrap a new cluster from its state; stop the others first
    for ((k = n; k >= 1; k--)); do
        pid=$(node_pid "$k") || continue
        stop_process mariadbd "$pid" 30
        rm -f "$(node_dir "$k")/mysqld.pid"
    done
}

cmd_kill() {
    local pid
    pid=$(node_pid "$1") || die "node $1 is not running"
    kill -KILL "$pid"
    wait_pid_exit "$pid" 10 || die "node $1 survived SIGKILL"
}

# recovered_position K: after a crash node K's grastate.dat does not say how far the node got
# (seqno -1), and a node that does not know asks for a full state transfer, whose rsync blocks
# the donor's writes while it copies. InnoDB knows: print --wsrep-start-position=UUID:SEQNO as
# `mariadbd --wsrep-recover` finds it (what Debian's galera_recovery does), or nothing.
recovered_position() {
    local d pos
    d=$(node_dir "$1")
    grep -q '^seqno: *-1' "$d/data/grastate.dat" 2>/dev/null || return 0
    mariadbd --defaults-file="$d/my.cnf" "${user_opt[@]}" --wsrep-recover --skip-networking \
        --log-error="$d/recover.log" </dev/null >/dev/null 2>&1 ||
        die "node $1: mariadbd --wsrep-recover failed (log: $d/recover.log)"
    pos=$(grep -a -o 'WSREP: Recovered position: *[^ ]*' "$d/recover.log" | tail -n 1) || return 0
    pos=${pos##* }
    [[ ! $pos =~ ^[0-9a-f-]{36}:-?[0-9]+$ ]] || echo "--wsrep-start-position=$pos"
}

cmd_rejoin() {
    local pos
    node_pid "$1" >/dev/null && die "node $1 is running"
    nnodes=$(<"$dir/nodes")
    write_conf "$1"
    pos=$(recovered_position "$1")
    launch "$1" ${pos:+"$pos"}
    wait_synced "$1"
}

(($# >= 2)) || usage
action=$1
dir=$2
[[ -n $dir ]] || usage
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
require_cmd mariadbd mariadb mariadb-install-db
case $action in
start)
    nnodes=${3:-3}
    cmd_start
    ;;
stop) cmd_stop ;;
kill) [[ ${3:-} =~ ^[0-9]+$ ]] || usage; cmd_kill "$3" ;;
rejoin) [[ ${3:-} =~ ^[0-9]+$ ]] || usage; cmd_rejoin "$3" ;;
*) usage ;;
esac
