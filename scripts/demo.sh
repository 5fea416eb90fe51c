#!/usr/bin/env bash
# The quick start, and the whole life of a file service as a client sees it: installs what is
# missing, builds, starts the stack (Redis or MariaDB, server2, server1) in a temporary
# directory, then with curl: an account created (and the same name refused), a file uploaded,
# listed, downloaded, a download cut short and resumed, the password changed (the old one
# refused at once), the upload deleted, the account deleted; bad credentials and the metrics.
# Every command is printed before it runs, quoted so that it can be pasted back into a shell
# while the stack is up (with --keep the stack stays up until Enter). Stops everything at the
# end, also on Ctrl-C or failure.
#
#   scripts/demo.sh [--backend redis|mysql] [--keep]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
backend=redis keep=""
while (($# > 0)); do
    case $1 in
    --backend) backend=${2:?--backend needs redis or mysql}; shift 2 ;;
    --keep) keep=1; shift ;;
    *) die "usage: scripts/demo.sh [--backend redis|mysql] [--keep]" ;;
    esac
done

bash scripts/setup.sh
make --no-print-directory -s
dir=$(mktemp -d "${TMPDIR:-/tmp}/demo.XXXXXX")
trap '"$TOP/scripts/stack.sh" stop "$dir"; rm -rf "$dir"' EXIT
mkdir -p "$dir/files" "$dir/client"
echo "hello from server1" >"$dir/files/hello.txt"
head -c 1048576 /dev/urandom >"$dir/files/1MB"
url=$(scripts/stack.sh start "$dir" --backend "$backend" --port 0 --root "$dir/files")
cd "$dir/client"

# quote WORD: WORD as a shell reads it back (in single quotes unless it needs none)
quote() {
    if [[ $1 =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
        printf '%s' "$1"
    else
        printf "'%s'" "${1//\'/\'\\\'\'}"
    fi
}
# run CMD...: prints the command, quoted so that it can be pasted back, then runs it
run() {
    local w
    printf '\n$'
    for w in "$@"; do printf ' %s' "$(quote "$w")"; done
    printf '\n'
    # for tests/integration/test_demo.sh: the words themselves, NUL after each, a line per command
    [[ -z ${DEMO_ARGV_LOG:-} ]] || { printf '%s\0' "$@"; printf '\n'; } >>"$DEMO_ARGV_LOG"
    "$@" || true
}
# say TEXT: what the next commands show
say() { printf '\n# %s\n' "$*"; }

user=demo-$$ pw=s3cret-$$ pw2=n3w-s3cret-$$
say "an account, then the same name again (409)"
run curl -s -i -X POST --data "username=$user&password=$pw" "$url/users"
run curl -s -o /dev/null -w '%{http_code}\n' -X POST --data "username=$user&password=$pw" "$url/users"

say "the operator's file, with the account's credentials"
run curl -s -u "$user:$pw" "$url/files/hello.txt"

say "an upload (the 201 comes once it is on disk), a listing, a download"
echo "notes of $user" >notes.txt
run curl -s -i -u "$user:$pw" -T notes.txt "$url/files/docs/notes.txt"
run curl -s -u "$user:$pw" "$url/files/docs/"
run curl -s -o /dev/null -w '%{http_code} %header{location}\n' -u "$user:$pw" "$url/files/docs"
run curl -s -u "$user:$pw" "$url/files/docs/notes.txt"

say "a download cut short after 100 KB, then resumed where it stopped (206)"
run curl -s -u "$user:$pw" -r 0-102399 -o 1MB "$url/files/1MB"
run ls -l 1MB
run curl -s -u "$user:$pw" -C - -o 1MB -w '%{http_code} %{size_download} bytes more\n' "$url/files/1MB"
run sha256sum 1MB "$dir/files/1MB"

say "a new password: the old one is refused from the moment the 204 is sent"
run curl -s -i -u "$user:$pw" -X PUT --data "password=$pw2" "$url/users/$user"
run curl -s -o /dev/null -w '%{http_code} with the old password\n' -u "$user:$pw" "$url/files/hello.txt"
run curl -s -o /dev/null -w '%{http_code} with the new one\n' -u "$user:$pw2" "$url/files/hello.txt"

say "refusals: a wrong password (401), a missing file (404)"
run curl -s -i -u "$user:wrong" "$url/files/hello.txt"
run curl -s -o /dev/null -w '%{http_code}\n' -u "$user:$pw2" "$url/files/missing"

say "the upload deleted, then the account"
run curl -s -o /dev/null -w '%{http_code}\n' -u "$user:$pw2" -X DELETE "$url/files/docs/notes.txt"
run curl -s -o /dev/null -w '%{http_code} after its deletion\n' -u "$user:$pw2" "$url/files/docs/notes.txt"
run curl -s -o /dev/null -w '%{http_code}\n' -u "$user:$pw2" -X DELETE "$url/users/$user"
run curl -s -o /dev/null -w '%{http_code} for the deleted account\n' -u "$user:$pw2" "$url/files/hello.txt"

say "health and metrics"
run curl -s "$url/healthz"
murl=$(cat "$dir/metrics-url") # (server1's --metrics-listen: /metrics is not on its public port)
printf '\n$ curl -s %s | grep -v %s | head -n 12\n' "$(quote "$murl")" "$(quote '^#')"
curl -s "$murl" | grep -v '^#' | head -n 12 || true # (head stops reading: SIGPIPE)
if [[ -n $keep && -t 0 ]]; then
    printf '\nThe stack is up at %s (logs in %s): paste the commands above; Enter stops it. ' \
        "$url" "$dir"
    read -r _
fi
printf '\nlogs were in %s (removed at exit)\n' "$dir"
