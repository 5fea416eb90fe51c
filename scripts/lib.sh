#!/usr/bin/env bash
# Shared helpers for scripts/*.sh and tests/integration/*.sh.  Source it; don't run it.
#   die MSG...            print "<prog>: error: MSG" to stderr, exit 1
#   log MSG...            print "<prog>: MSG" to stderr
#   require_cmd CMD...    die unless every CMD is on PATH
#   now_ms                milliseconds since the epoch
#   wait_until TIMEOUT_S CMD...   run CMD every 50 ms until it succeeds (0) or time runs out (1)
#   wait_port HOST PORT TIMEOUT_S wait until a TCP connect to HOST:PORT succeeds
#   wait_file PATH TIMEOUT_S      wait until PATH exists
#   wait_pid_exit PID TIMEOUT_S   wait until process PID is gone (or a zombie)
#   pid_alive PID         true if PID exists and is not a zombie (false for anything but digits)
#   free_port             print a TCP port on 127.0.0.1 that nobody is using right now
#   check_sock_path PATH  die if PATH is too long for a unix socket (sun_path is 108 bytes)
#   child_pids PID        print the pids of PID's direct children, one a line
#   server_main ACTION DIR [PORT]  the start|stop|restart command line of redis.sh and mysql.sh
#   stop_process NAME PID SECS        SIGTERM, and SIGKILL if PID is still there SECS later
#   random_file PATH BYTES        make PATH BYTES random bytes long, unless it already is
#   ensure_password FILE  make FILE (mode 0600) hold a random 32-character password, unless it
#                         exists; print nothing (read it with $(<FILE), never put it in argv)
#   csv_get FILE COND COL...      print columns COL (by header name) of the rows where the awk
#                                 expression COND over c[NAME] holds, tab-separated

# The system's python3 (Debian's, which setup.sh installs) ahead of any other on PATH: a
# version manager's shim (pyenv's) costs about 0.5 s per start, where python3 itself takes
# 0.07 s, and the tests start it hundreds of times. The scripts use the standard library only.
if [[ -x /usr/bin/python3 && $(command -v python3 2>/dev/null) != /usr/bin/python3 ]]; then
    PATH=/usr/bin:$PATH
fi

die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }

require_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || die "missing command '$c' (run scripts/setup.sh)"
    done
}

# $EPOCHREALTIME is "sec.usec" with a locale-dependent separator: keep the digits.
now_ms() {
    local us=${EPOCHREALTIME//[!0-9]/}
    printf '%s\n' "$((10#$us / 1000))"
}

wait_until() {
    local timeout_s=$1; shift
    local deadline=$(($(now_ms) + timeout_s * 1000))
    until "$@"; do
        (($(now_ms) < deadline)) || return 1
        sleep 0.05
    done
}

# Connect with bash's /dev/tcp in a child (bounded by `timeout`, so a black-holed
# host cannot hang us); the child's exit closes the connection.
# shellcheck disable=SC2016  # expanded by the inner bash
_port_open() { timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }
_file_exists() { [[ -e $1 ]]; }
_pid_gone() { ! pid_alive "$1"; }

# True if process PID exists and is not a zombie (kill -0 succeeds on zombies,
# e.g. on a child that died but was not yet reaped).
pid_alive() {
    local stat
    [[ $1 =~ ^[0-9]+$ ]] || return 1 # ("" would read /proc//stat, the machine's)
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

wait_port() { wait_until "$3" _port_open "$1" "$2"; }
wait_file() { wait_until "$2" _file_exists "$1"; }
wait_pid_exit() { wait_until "$2" _pid_gone "$1"; }

# Ask the kernel (bind to port 0) when python3 works; otherwise probe random
# ports in 20000-60000 until one refuses connections.  Either way another process
# may take the port before our caller binds it: callers that pick the port
# themselves retry on "address in use".
free_port() {
    local port
    if port=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null) && [[ $port =~ ^[0-9]+$ ]]; then
        printf '%s\n' "$port"
        return 0
    fi
    local tries
    for ((tries = 0; tries < 100; tries++)); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40001))
        if ! _port_open 127.0.0.1 "$port"; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    die "free_port: no free port found in 100 tries"
}

# nginx_conf DIR SERVER...: writes DIR/nginx.conf for an nginx run in the foreground from DIR
# (2 workers, no access log, pid/error log/temp files under DIR) serving DIR/www; each SERVER is
# what goes in one server block besides the root, e.g. "listen 127.0.0.1:8080;".
# NGINX_ROOT=DIR2: serve DIR2 instead; NGINX_MAIN="...;": directives of the main context (e.g.
# worker_rlimit_nofile).
nginx_conf() {
    local dir=$1 srv root=${NGINX_ROOT:-$1/www}
    shift
    mkdir -p "$dir/tmp" "$dir/www"
    {
        cat <<EOF
daemon off;
worker_processes 2;${NGINX_MAIN:+
$NGINX_MAIN}
pid $dir/nginx.pid;
error_log $dir/nginx.err warn;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
EOF
        for srv in "$@"; do
            echo "    server { $srv root $root; }"
        done
        echo "}"
    } >"$dir/nginx.conf"
}

check_sock_path() {
    ((${#1} < 108)) || die "socket path too long (${#1} bytes, max 107): $1 -- use a shorter directory"
}

child_pids() {
    local f line ppid
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null <"$f" || continue
        ppid=${line##*) }        # "STATE PPID ..." (comm may hold spaces and parens)
        ppid=${ppid#* }
        [[ ${ppid%% *} == "$1" ]] && printf '%s\n' "${line%% *}"
    done
    return 0
}

# tree_pids PID...: each PID, then all its descendants
tree_pids() {
    local p c
    for p in "$@"; do
        echo "$p"
        for c in $(child_pids "$p"); do tree_pids "$c"; done
    done
}

# header_usage FILE FIRST LAST [CODE]: lines FIRST..LAST of FILE's header comment without their
# "# ", to stdout when CODE is 0 (--help), else to stderr; then exit CODE (default 2).
header_usage() {
    local code=${4:-2}
    if ((code == 0)); then
        sed -n "$2,$3p" "$1" | sed 's/^# \{0,1\}//'
    else
        sed -n "$2,$3p" "$1" | sed 's/^# \{0,1\}//' >&2
    fi
    exit "$code"
}

random_file() {
    local path=$1 bytes=$2
    [[ -f $path && $(stat -c %s "$path") == "$bytes" ]] && return 0
    head -c "$bytes" /dev/urandom >"$path.tmp" && mv "$path.tmp" "$path"
}

# csv_get FILE COND COL...: e.g. csv_get points.csv 'c["is_nstar"] == 1' users r_mean_ms.
# COND is an awk expression over c[NAME] (the row's fields by header name); a missing
# column prints as empty.
csv_get() {
    local file=$1 cond=$2
    shift 2
    awk -F, -v cols="$*" '
        NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; n = split(cols, want, " "); next }
        { delete c; for (i = 1; i <= NF; i++) c[h[i]] = $i }
        '"$cond"' { s = ""; for (i = 1; i <= n; i++) s = s (i > 1 ? "\t" : "") c[want[i]]; print s }
    ' "$file"
}

# stop_process NAME PID SECS [SIG]: SIG (default TERM; nginx's graceful stop is QUIT); if it is
# still there SECS later, SIGKILL (and die if even that fails within 5 s). NAME only goes into
# the messages.
stop_process() {
    local name=$1 pid=$2 secs=$3 sig=${4:-TERM}
    kill "-$sig" "$pid" 2>/dev/null || return 0
    wait_pid_exit "$pid" "$secs" && return 0
    log "$name (pid $pid) still running $secs s after SIG$sig, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait_pid_exit "$pid" 5 || die "$name (pid $pid) does not die"
}

# mariadb_conf DIR PORT PIDFILE [ADDR]: the my.cnf lines every throw-away MariaDB of the project
# starts with (scripts/mysql.sh, scripts/galera.sh), for one under DIR listening on ADDR
# (default 127.0.0.1); [mysqld] lines of its own may follow.
mariadb_conf() {
    cat <<CONF
[client]
socket = $1/mysqld.sock
port = $2

[mysqld]
datadir = $1/data
socket = $1/mysqld.sock
pid-file = $3
log-error = $1/mysqld.err
tmpdir = $1/tmp
bind-address = ${4:-127.0.0.1}
port = $2
skip-name-resolve
default-storage-engine = InnoDB
innodb_buffer_pool_size = 64M
innodb_flush_log_at_trx_commit = 1
CONF
}

# auth_schema_sql PASSWORD [HOST...]: the SQL that makes the account database (the accounts, and
# the account changes every server2 follows: docs/operate.md, "Running against your own Redis or
# MySQL") and the user `auth`
# with PASSWORD (letters and digits: ensure_password's), for mariadb on stdin, never in argv.
# `auth` may connect from localhost and 127.0.0.1, and from each HOST (a MariaDB host name or
# pattern such as 10.201.7.%).
auth_schema_sql() {
    local h hosts=("localhost" "127.0.0.1" "${@:2}")
    cat <<SQL
CREATE DATABASE IF NOT EXISTS auth;
CREATE TABLE IF NOT EXISTS auth.users (
    username VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    hash VARCHAR(255) CHARACTER SET ascii NOT NULL
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS auth.account_seq (
    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
    seq BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB;
INSERT IGNORE INTO auth.account_seq (id, seq) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS auth.account_changes (
    seq BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    username VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS auth.server2_peers (
    id CHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
    applied BIGINT UNSIGNED NOT NULL,
    expires DATETIME(3) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS auth.login_failures (
    username VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    tat DATETIME(3) NOT NULL
) ENGINE=InnoDB;
SQL
    for h in "${hosts[@]}"; do
        cat <<SQL
CREATE USER IF NOT EXISTS 'auth'@'$h' IDENTIFIED BY '$1';
ALTER USER 'auth'@'$h' IDENTIFIED BY '$1';
GRANT SELECT, INSERT, UPDATE, DELETE ON auth.* TO 'auth'@'$h';
SQL
    done
}

ensure_password() {
    local f=$1 pw
    [[ -s $f ]] && { chmod 600 "$f"; return 0; }
    # letters and digits only: safe in a config file, in SQL quotes and in a URL
    pw=$(LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32) || true
    ((${#pw} == 32)) || die "cannot make a random password"
    (umask 077 && printf '%s\n' "$pw" >"$f.tmp") && mv -f "$f.tmp" "$f"
}

# server_main ACTION DIR [PORT]: the command line shared by redis.sh and mysql.sh. Sets the global
# dir (absolute) and calls the script's cmd_start [PORT] / cmd_stop; restart reuses DIR/port.
server_main() {
    local action=$1
    [[ $action == stop && ! -d $2 ]] && exit 0
    mkdir -p "$2"
    dir=$(cd "$2" && pwd)
    case $action in
    start)
        (($# <= 3)) || usage
        [[ -z ${3:-} || ${3:-} =~ ^[0-9]+$ ]] || die "bad port: $3"
        cmd_start "${3:-}"
        ;;
    stop) (($# == 2)) || usage; cmd_stop ;;
    restart)
        (($# == 2)) || usage
        [[ -s $dir/port ]] || die "$dir/port missing: never started here"
        cmd_stop
        cmd_start "$(cat "$dir/port")"
        ;;
    *) usage ;;
    esac
}
