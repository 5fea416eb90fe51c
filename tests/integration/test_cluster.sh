#!/usr/bin/env bash
# Several hosts on one machine (scripts/cluster.sh): its refusals (bad sizes, a backend or subnet
# it cannot use, a DIR already up), an `up` that fails half-way taking down all it made, then a
# cluster (HAProxy, 2 server1, 2 server2, Redis + Sentinel on three hosts, speaking only TLS
# between hosts; the Sentinels answer NOAUTH to a host without their password) under the short
# failover run (scripts/cluster-failover.sh --short: a server1, a server2 and the Redis primary
# SIGKILLed and started again under load from two hosts): exit 0, lost = 0, every fault's error
# window printed within its target; after `down`, no namespace, link or process of the test's
# is left and no sanitizer report is in any log. Needs root and network namespaces: without
# them it says "skipped: no netns" and passes.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

netns_usable() {
    local probe=fsc-probe-$$
    ((EUID == 0)) && command -v ip >/dev/null 2>&1 || return 1
    ip netns add "$probe" 2>/dev/null || return 1
    ip netns del "$probe"
}
if ! netns_usable; then
    echo "skipped: no netns (needs root and ip netns)"
    echo "0 passed, 0 failed"
    exit 0
fi

itest_off_tmpfs # server1 --prefetch reads with O_DIRECT
itest_init cluster
itest_timeout 300 # about 80 s on an idle machine, 120-130 s under ASan or TSan
require_cmd haproxy redis-server redis-cli python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
export BIN_DIR
chmod o+x "$ITEST_DIR"
CLUSTER=$ITEST_ROOT/scripts/cluster.sh
CL=$ITEST_DIR/cl

netns_names() { ip netns list | awk '{print $1}' | sort; }
link_names() { ip -o link | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort; }
# ours: a pattern of the tags cluster.sh gives the test's clusters (from each directory under
# the run directory), so that another cluster up on the machine meanwhile is not counted
ours() {
    local d tags=""
    for d in "$ITEST_DIR"/*/; do
        tags+="${tags:+|}$(printf '%s' "$(cd "$d" && pwd)" | sha1sum | cut -c1-5)"
    done
    printf '^fsc-?(%s)\n' "${tags:-none}"
}
# ours_left: the test's namespaces and links that were not there at the start, processes whose
# command line names the run directory
ours_left() {
    comm -13 "$ITEST_DIR/netns.before" <(netns_names) | grep -E "$(ours)" | sed 's/^/netns /'
    comm -13 "$ITEST_DIR/links.before" <(link_names) | grep -E "$(ours)" | sed 's/^/link /'
    python3 -c '
import glob, os
d, me = os.environ["ITEST_DIR"].encode(), os.getpid()
for p in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        c = open(p, "rb").read()
    except OSError:
        continue
    if d in c and int(p.split("/")[2]) != me:
        print("process", p.split("/")[2], c.replace(b"\0", b" ")[:100].decode("ascii", "replace"))
'
}
netns_names >"$ITEST_DIR/netns.before"
link_names >"$ITEST_DIR/links.before"

# refusals: one line, exit 1, nothing made
refused() { # refused DESC WANT ARGS...: cluster.sh ARGS fails with WANT in its message
    local desc=$1 want=$2 out rc=0
    shift 2
    out=$("$CLUSTER" "$@" 2>&1) || rc=$?
    if ((rc != 0)) && [[ $out == *"$want"* ]]; then
        itest_ok "refused: $desc"
    else
        itest_not_ok "refused: $desc: exit $rc, '$out'"
    fi
}
refused "--server1 0" "--server1 must be 1..8" up "$CL" --server1 0
refused "--server1 9" "--server1 must be 1..8" up "$CL" --server1 9
refused "--server1 x" "--server1 must be 1..8" up "$CL" --server1 x
refused "--server2 9" "--server2 must be 1..8" up "$CL" --server2 9
refused "--backend nosuch" "--backend must be" up "$CL" --backend nosuch
refused "a public --subnet" "private /24" up "$CL" --subnet 8.8.8
refused "a --subnet a route of this machine has" "overlaps a route" up "$CL" --subnet 127.0.0
refused "an unknown argument" "unknown argument" up "$CL" --nosuch
check_ok "the refusals of up made nothing, not even DIR" test ! -e "$CL"
mkdir "$CL"
refused "kill in a DIR with no cluster" "no cluster here" kill "$CL" s1-1/server1
refused "kill of no such process" "expected HOST/PROG" kill "$CL" server1
check_eq "the refusals made nothing" "$(ours_left)" ""

# an up that fails half-way (server2 exits at once, after the database is up): all taken down
mkdir -p "$ITEST_DIR/badbin"
printf '#!/bin/sh\necho "bad binary" >&2\nexit 1\n' >"$ITEST_DIR/badbin/server2"
cp "$ITEST_DIR/badbin/server2" "$ITEST_DIR/badbin/server1"
chmod +x "$ITEST_DIR/badbin/"*
itest_cluster_down "$ITEST_DIR/half"
rc=0
BIN_DIR=$ITEST_DIR/badbin "$CLUSTER" up "$ITEST_DIR/half" >"$ITEST_DIR/half.out" 2>&1 || rc=$?
check_eq "an up whose server2 does not start fails" "$rc" 1
check_ok "... saying so" grep -q 'server2.log: the process exited: bad binary' "$ITEST_DIR/half.out"
check_ok "... after the database was up" grep -q 'Sentinel ID is' "$ITEST_DIR/half/db-3/sentinel/sentinel.log"
check_eq "... and leaves no namespace, link or process" "$(ours_left)" ""
check_ok "... nor its record" test ! -e "$ITEST_DIR/half/cluster.state"

# a cluster up; a second up of the same DIR is refused and harms nothing
itest_cluster_down "$CL"
"$CLUSTER" up "$CL" --server1 2 --server2 2
refused "a DIR already up" "is already up" up "$CL"
"$CLUSTER" status "$CL" >"$ITEST_DIR/status.out"
check_eq "status: HAProxy sees both server1s up in both backends" \
    "$(grep -c -E '^  (files|rest) +s1-[12] +UP ' "$ITEST_DIR/status.out")" 4
check_eq "status: every process alive" "$(grep -c DEAD "$ITEST_DIR/status.out")" 0
LB=$(awk '$1 == "lb" {print $2}' "$CL/hosts")
check_eq "HAProxy answers from lg-1" \
    "$("$CLUSTER" exec "$CL" lg-1 curl -s -o /dev/null -w '%{http_code}' "http://$LB:8080/healthz")" 200
# the Sentinels take no command from a host without their password (SENTINEL MONITOR could
# name another primary, which server2 would give the database password)
DB1=$(awk '$1 == "db-1" {print $2}' "$CL/hosts")
# the database speaks only TLS between hosts: a client with the certificate...
TLS=(--tls --cacert "$CL/tls/ca.pem" --cert "$CL/tls/client.pem" --key "$CL/tls/client.key")
for cmd in "sentinel masters" "sentinel monitor rogue $LB 6379 2"; do
    # shellcheck disable=SC2086  # the command's words, split on purpose
    check_ok "'$cmd' from lg-1 without the Sentinels' password: NOAUTH" grep -q NOAUTH \
        <<<"$("$CLUSTER" exec "$CL" lg-1 redis-cli "${TLS[@]}" -h "$DB1" -p 26379 $cmd 2>&1)"
done
check_eq "... and with it, the Sentinels name the primary" \
    "$(REDISCLI_AUTH=$(<"$CL/db-1/sentinel/password") "$CLUSTER" exec "$CL" lg-1 \
        redis-cli "${TLS[@]}" -h "$DB1" -p 26379 sentinel get-master-addr-by-name mymaster |
        head -n 1)" "$DB1"
# ... and one in clear gets no answer from a Sentinel or a Redis
for port in 26379 6379; do
    check_ok "a client in clear to db-1:$port gets no answer" \
        test -z "$(REDISCLI_AUTH=$(<"$CL/db-1/sentinel/password") "$CLUSTER" exec "$CL" lg-1 \
            timeout 5 redis-cli -h "$DB1" -p "$port" ping 2>/dev/null)"
done
check_ok "server2 names its backend rediss-sentinel://" \
    grep -q "backend=rediss-sentinel://" "$CL/s2-1/server2.log"

# the short failover run
rc=0
TMPDIR=$ITEST_DIR "$ITEST_ROOT/scripts/cluster-failover.sh" --short --use "$CL" \
    >"$ITEST_DIR/failover.out" 2>&1 || rc=$?
cat "$ITEST_DIR/failover.out"
check_eq "cluster-failover.sh --short exits 0" "$rc" 0
check_eq "lost = 0" "$(grep -x 'lost = [0-9]*' "$ITEST_DIR/failover.out")" "lost = 0"
for f in server1 server2 redis-primary; do
    check_ok "the error window of $f is printed" \
        grep -q -E "^$f error window = [0-9]+ ms \(restart [0-9]+ ms; target [0-9]+ ms\)$" \
        "$ITEST_DIR/failover.out"
done
check_ok "creations were acknowledged and checked" \
    grep -q -E '^verify: [1-9][0-9]* acknowledged accounts' "$ITEST_DIR/failover.out"

"$CLUSTER" down "$CL"
check_eq "after down: no namespace, link or process of the test's left" "$(ours_left)" ""
check_ok "a second down is a no-op" "$CLUSTER" down "$CL"
check_eq "no sanitizer report in any log" \
    "$(grep -l -r -E 'ERROR: (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime error:' \
        "$CL" --include='*.log' || true)" ""
itest_summary
