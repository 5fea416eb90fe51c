#!/usr/bin/env bash
# The quick start: install what is missing, build, start the whole stack (Redis or MariaDB,
# server2, server1) in a temporary directory, then show with curl what a client sees: an account
# created, a file fetched, bad credentials refused, the metrics. Stops everything at the end,
# also on Ctrl-C or failure.
#
#   scripts/demo.sh [--backend redis|mysql]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
backend=redis
[[ ${1:-} != --backend ]] || backend=${2:?--backend needs redis or mysql}

bash scripts/setup.sh
make --no-print-directory -s
dir=$(mktemp -d "${TMPDIR:-/tmp}/demo.XXXXXX")
trap 'scripts/stack.sh stop "$dir"; rm -rf "$dir"' EXIT
mkdir -p "$dir/files"
echo "hello from server1" >"$dir/files/hello.txt"
head -c 1048576 /dev/urandom >"$dir/files/1MB"
url=$(scripts/stack.sh start "$dir" --backend "$backend" --port 0 --root "$dir/files" -- --prefetch)

run() {
    printf '\n$ %s\n' "$*"
    "$@" || true
}
user=demo-$$
run curl -s -i -X POST --data "username=$user&password=s3cret" "$url/users"
run curl -s -i -X POST --data "username=$user&password=s3cret" "$url/users"
run curl -s -i -u "$user:s3cret" "$url/files/hello.txt"
run curl -s -o /dev/null -w '%{http_code} %{size_download} bytes\n' -u "$user:s3cret" "$url/files/1MB"
run curl -s -i -u "$user:wrong" "$url/files/hello.txt"
run curl -s -i -u "$user:s3cret" "$url/files/missing"
run curl -s "$url/healthz"
printf '\n$ curl -s %s/metrics | grep -v "^#" | head -n 20\n' "$url"
curl -s "$url/metrics" | grep -v '^#' | head -n 20
printf '\nlogs were in %s (removed at exit)\n' "$dir"
