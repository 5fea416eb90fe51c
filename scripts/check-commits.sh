#!/usr/bin/env bash
# The rules a commit message follows: a subject `area: what changed` of at most 72 characters
# that names one change (no ';' joining two), then a blank line and the body (why, and the
# figures). Exit 1, naming each commit and the rule it breaks.
#
#   scripts/check-commits.sh [RANGE]   the commits of RANGE (default: those after FIRST, the
#                                      commit from which on the rules hold; older ones stay as
#                                      they were published); merges are skipped
#   scripts/check-commits.sh MSGFILE   one message: as a hook,
#                                      ln -s ../../scripts/check-commits.sh .git/hooks/commit-msg
#
# Outside a git checkout, or in a shallow clone without FIRST, there is nothing to check: it says
# so and exits 0.
set -euo pipefail
FIRST=5548c847b2ca388c87b94c6ce93b04bf21b25905
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# check_message NAME: the message on stdin; prints what is wrong, returns 1 if anything is.
check_message() {
    local name=$1 subject second bad=0
    IFS= read -r subject || subject=""
    IFS= read -r second || second=""
    if ((${#subject} > 72)); then
        echo "$name: subject is ${#subject} characters (at most 72): $subject"
        bad=1
    fi
    # area: one or two words, or a list of them ("store, listing: ..."); then what changed
    local word='[A-Za-z0-9_./{}-]+( [A-Za-z0-9_./{}-]+)?'
    if [[ ! $subject =~ ^$word(,\ $word)*:\ [^\ ] ]]; then
        echo "$name: subject is not 'area: what changed': $subject"
        bad=1
    fi
    if [[ $subject == *';'* ]]; then
        echo "$name: subject joins two changes with ';' (one change per commit): $subject"
        bad=1
    fi
    if [[ -n $second ]]; then
        echo "$name: the line after the subject is not blank"
        bad=1
    fi
    return $bad
}

if (($# == 1)) && [[ -f $1 ]]; then
    # a merge's own message ("Merge branch 'x'") is git's, as merges are skipped below
    if [[ -f $(git rev-parse --git-dir 2>/dev/null)/MERGE_HEAD ]]; then
        exit 0
    fi
    grep -v '^#' "$1" | check_message "commit message"
    exit
fi
if ! git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
    echo "check-commits: not a git checkout: nothing to check"
    exit 0
fi
range=${1:-$FIRST..HEAD}
if [[ -z ${1:-} ]] && ! git -C "$TOP" cat-file -e "$FIRST^{commit}" 2>/dev/null; then
    echo "check-commits: ${FIRST:0:7} is not in this clone (shallow?): nothing to check"
    exit 0
fi
n=0 bad=0
while read -r c; do
    n=$((n + 1))
    git -C "$TOP" log -1 --format=%B "$c" | check_message "${c:0:7}" || bad=$((bad + 1))
done < <(git -C "$TOP" rev-list --no-merges "$range")
if ((bad > 0)); then
    echo "check-commits: $bad of $n commits in $range break the rules above" >&2
    exit 1
fi
echo "check-commits: $n commits in $range: ok"
