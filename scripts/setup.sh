#!/usr/bin/env bash
# Install the Debian 12 packages this project needs.  Idempotent: when all are
# present it only says so.  Needs root (uses sudo when not root and sudo exists).
# It never starts, stops or enables services; on a machine whose policy-rc.d
# forbids it, the packaged redis/mariadb services simply are not started.  The
# project's own instances (scripts/redis.sh, scripts/mysql.sh) never use them.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

packages=(
    build-essential pkg-config
    libevent-dev libhiredis-dev libmariadb-dev libcmocka-dev libsodium-dev libargon2-dev zlib1g-dev libisal-dev libjansson-dev
    libssl-dev openssl
    redis-server mariadb-server galera-4 rsync stunnel4
    haproxy iproute2 tcpdump
    gnuplot-nox curl wget python3 media-types
    nginx-light wrk h2o
    chromium
    clang libfuzzer-14-dev
    stress-ng
    fuse3 libfuse3-dev xfsprogs btrfs-progs fio
    ceph-mon ceph-osd ceph-mgr
)

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
    echo "setup: all ${#packages[@]} packages present"
    exit 0
fi

sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: run as root to install: ${missing[*]}"
    sudo=(sudo)
fi

log "installing ${#missing[@]} missing packages: ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
