#!/usr/bin/env bash
# A throw-away MariaDB on 127.0.0.1 with everything under DIR (never /etc/mysql).
#   mysql.sh start DIR [PORT]   start (PORT default: a free port); the first start
#                               creates the data dir and the schema.  Prints the
#                               port, also written to DIR/port.  Already running:
#                               prints its port.
#   mysql.sh stop DIR           stop it (nothing running: no-op)
#   mysql.sh restart DIR        stop, then start on the same port with the same data
# DIR holds my.cnf, data/, tmp/, mysqld.sock, mysqld.pid, mysqld.err (error log).
# Schema: database auth, table auth.users(username, hash); user 'auth' at localhost
# (socket) and 127.0.0.1 (TCP) with the password in DIR/password (mode 0600, made at the
# first start, set again at every start), e.g.
#   MYSQL_PWD=$(<DIR/password) mariadb --defaults-file=DIR/my.cnf -u auth auth   (socket)
#   MYSQL_PWD=$(<DIR/password) mariadb -h 127.0.0.1 -P PORT -u auth auth         (TCP)
# server2 takes it with --backend-password-file DIR/password.
# MYSQL_TLS=CERTDIR (scripts/tls-certs.sh): TCP clients must use TLS (require_secure_transport;
# the server's certificate CERTDIR/server.pem, signed by CERTDIR/ca.pem); the socket stays plain.
# MYSQL_TEMPLATE=PATH: the first start copies a data dir installed once in PATH (made there if
# missing) instead of installing one (install_db, below).
# Admin: mariadb --defaults-file=DIR/my.cnf -u "$(id -un)" (unix_socket auth).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { die "usage: ${0##*/} start DIR [PORT] | stop DIR | restart DIR"; }

# Root must say so explicitly to run mariadbd / mariadb-install-db as root.
user_opt=()
((EUID != 0)) || user_opt=(--user=root)

running_pid() {
    local pid
    pid=$(cat "$dir/mysqld.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" || return 1
    grep -q mariadbd "/proc/$pid/cmdline" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}

# Admin client over DIR's socket, as the OS user (unix_socket authentication).
sql() { mariadb --defaults-file="$dir/my.cnf" --user="$(id -un)" --batch --skip-column-names "$@"; }
ready_or_dead() { sql -e 'SELECT 1' >/dev/null 2>&1 || ! pid_alive "$1"; }

write_conf() {
    {
        mariadb_conf "$dir" "$1" "$dir/mysqld.pid" && echo "max_connections = 1000"
        [[ -z ${MYSQL_TLS:-} ]] || printf '%s\n' "ssl_cert = $MYSQL_TLS/server.pem" \
            "ssl_key = $MYSQL_TLS/server.key" "ssl_ca = $MYSQL_TLS/ca.pem" \
            "require_secure_transport = ON" "tls_version = TLSv1.2,TLSv1.3"
    } >"$dir/my.cnf"
}

# install_into DATADIR: mariadb-install-db's system tables in DATADIR (DIR's my.cnf for the rest)
install_into() {
    mariadb-install-db --defaults-file="$dir/my.cnf" "${user_opt[@]}" \
        --datadir="$1" --auth-root-authentication-method=socket \
        --auth-root-socket-user="$(id -un)" --skip-test-db --skip-name-resolve \
        >"$dir/install-db.log" 2>&1 ||
        { tail -n 20 "$dir/install-db.log" >&2; die "mariadb-install-db failed (log: $dir/install-db.log)"; }
}

# The data dir, made once. With MYSQL_TEMPLATE=PATH (tests/run-integration.sh sets it for a
# run), a copy of the data dir installed once in PATH, which saves mariadb-install-db's 2-3 s
# at each first start: nothing in it depends on DIR or the port, and the schema and the
# password are set at every start. PATH is made whole or not at all (installed beside it, then
# renamed), so that two starts at once cannot copy half of it.
install_db() {
    local tmp
    [[ -e $dir/data/mysql_upgrade_info ]] && return 0
    rm -rf "$dir/data"   # left over from an install that did not finish
    log "creating data dir $dir/data"
    if [[ -z ${MYSQL_TEMPLATE:-} ]]; then
        install_into "$dir/data"
        return 0
    fi
    if [[ ! -e $MYSQL_TEMPLATE/mysql_upgrade_info ]]; then
        tmp=$MYSQL_TEMPLATE.tmp.$$
        rm -rf "$tmp"
        install_into "$tmp"
        mv -T "$tmp" "$MYSQL_TEMPLATE" 2>/dev/null || rm -rf "$tmp" # another start made it
    fi
    cp -a "$MYSQL_TEMPLATE" "$dir/data"
}

# One attempt: 0 = up, 1 = failed (and the process is gone).
try_start() {
    local port=$1 pid
    write_conf "$port"
    mkdir -p "$dir/tmp"
    install_db
    nohup mariadbd --defaults-file="$dir/my.cnf" "${user_opt[@]}" </dev/null >>"$dir/mysqld.err" 2>&1 &
    pid=$!
    printf '%s\n' "$pid" >"$dir/mysqld.pid"
    if ! wait_until 30 ready_or_dead "$pid" || ! pid_alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_pid_exit "$pid" 5 || true
        rm -f "$dir/mysqld.pid"
        return 1
    fi
}

create_schema() {
    ensure_password "$dir/password"
    auth_schema_sql "$(<"$dir/password")" | sql
}

cmd_start() {
    local port=${1:-} pid p attempt flush
    if pid=$(running_pid); then
        p=$(cat "$dir/port")
        [[ -z $port || $port == "$p" ]] || die "already running (pid $pid) on port $p, not $port"
        log "already running (pid $pid) on port $p"
        printf '%s\n' "$p"
        return 0
    fi
    check_sock_path "$dir/mysqld.sock"
    for attempt in 1 2 3; do
        p=${port:-$(free_port)}
        if try_start "$p"; then
            create_schema
            flush=$(sql -e 'SELECT @@innodb_flush_log_at_trx_commit')
            printf '%s: innodb_flush_log_at_trx_commit=%s\n' "${0##*/}" "$flush" >>"$dir/mysqld.err"
            [[ $flush == 1 ]] || die "innodb_flush_log_at_trx_commit is $flush, not 1"
            MYSQL_PWD=$(<"$dir/password") mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$p" -u auth -e 'SELECT 1' auth >/dev/null ||
                die "user auth cannot connect over TCP to 127.0.0.1:$p"
            printf '%s\n' "$p" >"$dir/port"
            printf '%s\n' "$p"
            return 0
        fi
        # A port we picked ourselves may have been taken meanwhile: pick another.
        if [[ -n $port ]] || ! tail -n 20 "$dir/mysqld.err" | grep -q 'Address already in use'; then
            break
        fi
        log "port $p was taken, retrying ($attempt)"
    done
    tail -n 20 "$dir/mysqld.err" >&2 || true
    die "mariadbd failed to start on port $p (it exited, or no answer within 30 s); log: $dir/mysqld.err"
}

cmd_stop() {
    local pid
    pid=$(running_pid) || { rm -f "$dir/mysqld.pid"; return 0; }
    stop_process mariadbd "$pid" 30
    rm -f "$dir/mysqld.pid"
}

(($# >= 2)) || usage
[[ -n $2 ]] || usage
require_cmd mariadbd mariadb mariadb-install-db
server_main "$@"
