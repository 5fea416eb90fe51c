#!/usr/bin/env bash
# server2 on a three-node MariaDB Galera cluster (scripts/galera.sh, on loopback) through one URL
# naming every node (mysql://auth@N1,N2,N3/auth): accounts are created one after another while
# the node server2 uses is SIGKILLed; server2 moves to the next node. Every account whose CREATE
# was answered ok must verify afterwards (lost = 0: a Galera commit is certified by every node
# before it returns), and the killed node, started again, rejoins with every account. The
# window in which creations failed is the cluster's failure detection (scripts/galera.sh: 1 s
# to suspect, 1.5 s to drop a node) plus server2's reconnect: it must stay within 2.5 s.
# Around that failover, password changes go through server2 B (node 1 first, then node 3)
# while server1 X caches and server1 Z verifies through server2 A on node 2: no request sent
# after a 204 gets 200 (from X's cache through the change feed and leases, from A's node
# through wsrep_sync_wait), before node 1 dies and after B moved to node 3.
# itest-sanitizers: no (a three-node database cluster; server2 on MariaDB is tested elsewhere)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init galera
itest_timeout 300
require_cmd mariadbd mariadb rsync python3
[[ -r /usr/lib/galera/libgalera_smm.so ]] || itest_fail "no Galera provider (package galera-4)"
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
chmod o+x "$ITEST_DIR" # the nodes run as mysql when this runs as root
G=$ITEST_DIR/galera

PORTS=$(itest_galera_start galera 3)
IFS=, read -r P1 P2 P3 <<<"$PORTS"
URL="mysql://auth@127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3/auth"
S2=$(itest_server2 server2 "$URL" "$G/password" --workers 2)
s2() { python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" "$@"; }
node_sql() {
    mariadb --defaults-file="$G/node$1/my.cnf" --user="$(id -un)" --batch --skip-column-names \
        "${@:2}"
}
check_eq "a CREATE on the cluster" "$(s2 create first pw12345)" ok
check_eq "... replicated to node 3" \
    "$(node_sql 3 -e "SELECT COUNT(*) FROM auth.users WHERE username = 'first'")" 1

PASS=old-pw-$$
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
# metric URL NAME: NAME's value in the /metrics at URL (a server1's --metrics-listen)
metric() { curl -s --max-time 5 "$1" | awk -v m="$2" '$1 == m { print $2 }'; }
leased() {
    local v
    v=$(metric "$1" server1_auth_leases_total)
    [[ ${v:-0} -ge 1 ]]
}
mkdir -p "$ITEST_DIR/root"
head -c 1024 /dev/urandom >"$ITEST_DIR/root/f1k"
# (the old password hammered: failed logins, so server2's limit is off)
SA=$(itest_server2 s2a "mysql://auth@127.0.0.1:$P2/auth" "$G/password" --workers 2 \
    --login-fail-limit 0)
SB=$(itest_server2 s2b "$URL" "$G/password" --workers 2 --login-fail-limit 0)
s1() {
    local name=$1
    shift
    itest_start "$name" server1 --port 0 --threads 2 --root "$ITEST_DIR/root" --read-only \
        --auth-secret-file "$ITEST_DIR/link.secret" --login-fail-limit 0 \
        --login-fail-addr-limit 0 --signup-limit 0 --max-conns-per-ip 0 "$@" ||
        itest_fail "$name: server1 did not start"
    echo "$ITEST_METRICS_URL" >"$ITEST_DIR/$name.metrics"
    echo "127.0.0.1:$ITEST_PORT"
}
X=$(s1 x --auth "127.0.0.1:$SA" --auth-cache 1000 --auth-cache-ttl 60s)
Z=$(s1 z --auth "127.0.0.1:$SA")
Y=$(s1 y --auth "127.0.0.1:$SB")
check_ok "X holds a lease from A" wait_until 10 leased "$(cat "$ITEST_DIR/x.metrics")"
check_eq "create erin through B" "$(code -d "username=erin&password=${PASS}0" "http://$Y/users")" 201
# change_round N: erin's password N-1 -> N through B while X and Z are hammered
change_round() {
    local out st sent okafter
    out=$(python3 "$HERE/revoke.py" --watch "$X" --watch "$Z" --changer "$Y" --user erin \
        --old "$PASS$(($1 - 1))" --new "$PASS$1" --file f1k)
    log "change $1: through B, X and Z hammered through A: $out"
    read -r st sent okafter _ <<<"$out"
    check_eq "change $1: 204" "$st" 204
    check_eq "change $1: no 200 for the old password after the 204 (${sent#*=} sent)" \
        "$okafter" ok-after=0
    check_eq "change $1: the new password through Z" \
        "$(code -u "erin:$PASS$1" "http://$Z/files/f1k")" 200
}
change_round 1

# which node server2 writes to: the first of the URL that answered
s2 churn 10 acct pw12345 "$ITEST_DIR/churn.txt" >"$ITEST_DIR/churn.out" &
CHURN=$!
churning() { test "$(grep -c ' ok ' "$ITEST_DIR/churn.txt" 2>/dev/null)" -ge 100; }
wait_until 10 churning || itest_fail "the creations did not get going"
"$ITEST_ROOT/scripts/galera.sh" kill "$G" 1
wait "$CHURN" || true
log "churn: $(cat "$ITEST_DIR/churn.out")"
read -r first_err last_err nerr < <(awk '$2 != "ok" {if (!n) f = $1; l = $1; n++}
    END {print (n ? f : 0), (n ? l : 0), n + 0}' "$ITEST_DIR/churn.txt")
window=$((last_err - first_err))
log "failed creations: $nerr, from $first_err to $last_err ms"
check_ok "creations went on after node 1 died ($(cat "$ITEST_DIR/churn.out"))" \
    test "$(awk -v t="$last_err" '$1 > t && $2 == "ok"' "$ITEST_DIR/churn.txt" | wc -l)" -gt 0
check_ok "error window ${window} ms <= 2500" test "$window" -le 2500
check_eq "every acknowledged account verifies" \
    "$(s2 verifyall "$ITEST_DIR/churn.txt" pw12345 | cut -d' ' -f1,2)" "lost 0"
check_ok "B answers from node 3" \
    wait_until 20 test "$(code -u "erin:${PASS}1" "http://$Y/files/f1k")" = 200
change_round 2
"$ITEST_ROOT/scripts/galera.sh" rejoin "$G" 1
n2=$(node_sql 2 -e 'SELECT COUNT(*) FROM auth.users')
check_eq "node 1 rejoined with every account ($n2)" \
    "$(node_sql 1 -e 'SELECT COUNT(*) FROM auth.users')" "$n2"
itest_summary
