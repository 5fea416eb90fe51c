#!/usr/bin/env bash
# Print a Markdown description of this machine and of the software under test: CPU, cores,
# memory, kernel, the disk and filesystem under a given directory, the versions of Redis,
# MariaDB, libevent and friends, and the project's own version.
#
#   scripts/machine-info.sh [DIR]      (DIR: where the served files live; default .)
set -euo pipefail
dir=${1:-.}
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$TOP/build/release}

cpu=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)
mem=$(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)
fs=$(df -PT "$dir" | awk 'NR==2{print $2" on "$1", "$3/1048576" GiB"}')
dev=$(df -P "$dir" | awk 'NR==2{print $1}')
dev=${dev#/dev/}
rot=$(cat "/sys/block/${dev%%[0-9]*}/queue/rotational" 2>/dev/null || echo "?")
sched=$(cat "/sys/block/${dev%%[0-9]*}/queue/scheduler" 2>/dev/null || echo "?")
if grep -qi '^flags.* hypervisor' /proc/cpuinfo; then virt="yes (hypervisor flag)"; else virt="none detected"; fi
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }

cat <<EOF
# Machine

| what | value |
|---|---|
| date | $(date -u '+%Y-%m-%d %H:%M UTC') |
| host | $(hostname) |
| CPU | $cpu |
| cores (online) | $(nproc) |
| memory | $mem |
| kernel | $(uname -srm) |
| virtualisation | $virt |
| OS | $(. /etc/os-release && echo "$PRETTY_NAME") |
| files' filesystem | $fs |
| disk | /dev/$dev (rotational: $rot, scheduler: $sched) |
| redis-server | $(redis-server --version 2>/dev/null | awk '{print $3}' | sed 's/v=//') |
| mariadb | $(pkgver mariadb-server) |
| libevent | $(pkgver libevent-2.1-7) |
| hiredis | $(pkgver libhiredis0.14) |
| MariaDB Connector/C | $(pkgver libmariadb3) |
| libsodium | $(pkgver libsodium23) |
| compiler | $(cc --version | head -n1) |
| project | $("$BIN_DIR/server1" --version 2>/dev/null | head -n1 || echo "?") |
EOF
