#!/usr/bin/env bash
# Several hosts on one machine (scripts/cluster.sh): its refusals (bad sizes, a backend or subnet
# it cannot use, a DIR already up), an `up` that fails half-way taking down all it made, then a
# cluster (HAProxy, 2 server1, 2 server2, Redis + Sentinel on three hosts, speaking only TLS
# between hosts; the Sentinels answer NOAUTH to a host without their password): HTTPS through
# HAProxy end to end (sign up, upload, download), no plain port on it, a server1's plain port
# refusing credentials (403); the short failover run over HTTPS (scripts/cluster-failover.sh
# --short: a server1, a server2 and the Redis primary SIGKILLed and started again under load
# from two hosts): exit 0, lost = 0, every fault's error window printed within its target; the
# server1s' per-client limit counting the load host HAProxy names (lg-2 over
# --login-fail-addr-limit gets 429, lg-1 on the same server1 is still served); HAProxy keeping
# down a server1 whose certificate is of another CA; after `down`, no namespace, link or
# process of the test's is left. Needs root and network
# namespaces: without them it says "skipped: no netns" and passes.
# itest-sanitizers: no (several hosts in namespaces; their programs are tested one by one elsewhere)
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
S1=$(awk '$1 == "s1-1" {print $2}' "$CL/hosts")
CA=$CL/tls/ca.pem
# lbcurl HOST ARGS...: curl on HOST over HTTPS with the cluster's CA
lbcurl() { "$CLUSTER" exec "$CL" "$1" curl -s --cacert "$CA" -m 10 "${@:2}"; }
check_eq "HAProxy answers from lg-1 over HTTPS" \
    "$(lbcurl lg-1 -o /dev/null -w '%{http_code}' "https://$LB:8443/healthz")" 200
check_eq "... and has no plain port for clients (connection refused)" \
    "$("$CLUSTER" exec "$CL" lg-1 curl -s -m 10 -o /dev/null -w '%{http_code}' \
        "http://$LB:8080/healthz")" 000
check_ok "HAProxy verifies each server1's certificate (a config haproxy -c passed)" grep -q -E \
    '^ *default-server ssl verify required ca-file [^ ]+ verifyhost server1 send-proxy-v2' \
    "$CL/lb/haproxy.cfg"
# end to end over HTTPS: sign up, upload, download, byte-exact
random_file "$ITEST_DIR/up.bin" 3000
check_eq "HTTPS through HAProxy: sign up: 201" \
    "$(lbcurl lg-2 -o /dev/null -w '%{http_code}' -X POST \
        --data 'username=tls1&password=tls-pw-1' "https://$LB:8443/users")" 201
check_eq "... upload: 201" "$(lbcurl lg-2 -o /dev/null -w '%{http_code}' -u tls1:tls-pw-1 \
    -T "$ITEST_DIR/up.bin" "https://$LB:8443/files/tls-up")" 201
lbcurl lg-2 -u tls1:tls-pw-1 -o "$ITEST_DIR/down.bin" "https://$LB:8443/files/tls-up" || true
check_ok "... download: byte-exact" cmp "$ITEST_DIR/up.bin" "$ITEST_DIR/down.bin"
# a server1's plain port: no credentials from the cluster's network
check_eq "plain HTTP to a server1 with credentials: 403" \
    "$("$CLUSTER" exec "$CL" lg-1 curl -s -m 10 -o /dev/null -w '%{http_code}' \
        -u tls1:tls-pw-1 "http://$S1:8080/files/f1k-00")" 403
check_eq "... a sign-up: 403" \
    "$("$CLUSTER" exec "$CL" lg-1 curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST \
        --data 'username=tls2&password=tls-pw-2' "http://$S1:8080/users")" 403
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

# the per-client limits count the load host HAProxy's PROXY header names: failed logins from lg-2
# (each a username of its own, all to the server1 /files/f1k-00 hashes to) go over
# --login-fail-addr-limit (100/1m): 429; lg-1, on the same server1 at the same time, is not
failed_logins() { # failed_logins HOST N: the statuses of N failed logins from HOST, counted
    "$CLUSTER" exec "$CL" "$1" python3 - "$ITEST_ROOT/tests" "$LB" "$CA" "$2" "$1" <<'EOF'
import collections, sys
sys.path.insert(0, sys.argv[1])
from faultlib.http import Conn, basic, tls_context
c, n = Conn(8443, 10, sys.argv[2], tls=tls_context(sys.argv[3])), collections.Counter()
for i in range(int(sys.argv[4])):
    auth = ["Authorization: " + basic("nobody-%s-%d" % (sys.argv[5], i), "wrong")]
    n[c.request("GET", "/files/f1k-00", auth).status] += 1
print(" ".join("%d:%d" % kv for kv in sorted(n.items())))
EOF
}
out=$(failed_logins lg-2 115)
check_ok "115 failed logins from lg-2: 100 or more 401, then 429 ($out)" \
    grep -q -E '^401:1[01][0-9] 429:[1-9][0-9]*$' <<<"$out"
check_eq "... while lg-1's failed login on the same server1 gets 401" "$(failed_logins lg-1 1)" \
    401:1
check_eq "... and its good one 200" "$(lbcurl lg-1 -o /dev/null -w '%{http_code}' \
    -u tls1:tls-pw-1 "https://$LB:8443/files/f1k-00")" 200

# HAProxy keeps down a server1 whose certificate is not from the cluster's CA: s1-2's server1
# started again as before, but with a certificate (naming server1) of a CA of its own
"$ITEST_ROOT/scripts/tls-certs.sh" "$ITEST_DIR/rogue" server1 >/dev/null
s1pid=$(awk '$1 == "pid" && $2 == "s1-2/server1" {p = $3} END {print p}' "$CL/cluster.state")
mapfile -d '' s1cmd <"/proc/$s1pid/cmdline"
for ((i = 0; i < ${#s1cmd[@]}; i++)); do
    case ${s1cmd[i]} in
    --tls-cert) s1cmd[i + 1]=$ITEST_DIR/rogue/server.pem ;;
    --tls-key) s1cmd[i + 1]=$ITEST_DIR/rogue/server.key ;;
    esac
done
"$CLUSTER" kill "$CL" s1-2/server1
"$CLUSTER" exec "$CL" s1-2 "${s1cmd[@]}" >"$CL/s1-2/rogue.log" 2>&1 &
rogue=$!
# shellcheck disable=SC2317 # called through wait_until
_rogue_up() { grep -q 'listening for https on' "$CL/s1-2/rogue.log" || ! pid_alive "$rogue"; }
wait_until 20 _rogue_up
check_ok "a server1 with another CA's certificate runs" pid_alive "$rogue"
# HAProxy's checks (every 500 ms, up after 2 good ones) reach it and break off the handshake:
# the rogue counts failed handshakes and completes none, and HAProxy keeps it down
S1_2=$(awk '$1 == "s1-2" {print $2}' "$CL/hosts")
rogue_metric() { # rogue_metric NAME: its value on the rogue server1's /metrics (--metrics-listen)
    "$CLUSTER" exec "$CL" lg-1 curl -s -m 10 "http://$S1_2:9101/metrics" |
        awk -v n="$1" '$1 == n {print $2}'
}
# shellcheck disable=SC2317 # called through wait_until
_handshakes_failed() {
    local n
    n=$(rogue_metric server1_tls_handshakes_failed_total)
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 4))
}
check_ok "... HAProxy's checks break off their handshakes" wait_until 20 _handshakes_failed
check_eq "... none completed" "$(rogue_metric server1_tls_handshakes_total)" 0
"$CLUSTER" status "$CL" >"$ITEST_DIR/status.out"
grep -E '^  (files|rest) +s1-2 ' "$ITEST_DIR/status.out"
check_eq "... and HAProxy keeps it down in both backends" \
    "$(grep -c -E '^  (files|rest) +s1-2 +DOWN ' "$ITEST_DIR/status.out")" 2
if pid_alive "$rogue"; then
    itest_ok "... and the rogue server1 still runs"
    kill -TERM "$rogue"
    wait_pid_exit "$rogue" 10 || kill -KILL "$rogue" 2>/dev/null
else
    itest_not_ok "... and the rogue server1 still runs: it exited; its log's end:"
    tail -n 20 "$CL/s1-2/rogue.log" >&2
fi

"$CLUSTER" down "$CL"
check_eq "after down: no namespace, link or process of the test's left" "$(ours_left)" ""
check_ok "a second down is a no-op" "$CLUSTER" down "$CL"
itest_summary
