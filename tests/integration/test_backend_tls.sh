#!/usr/bin/env bash
# server2's databases over TLS, on loopback, with throw-away certificates (scripts/tls-certs.sh):
#   - rediss:// to a Redis that speaks only TLS on TCP and asks clients for a certificate
#     (tls-auth-clients yes): creations and verifications work with --backend-tls-ca/-cert/-key;
#     a capture of the port (tcpdump, when there) shows neither the database password nor a
#     username; without the client certificate, or with another CA, server2 answers unavailable
#     and logs why; plain redis:// to that port gets nothing;
#   - rediss-sentinel:// to a Sentinel over TLS that names that Redis, with a replica over TLS:
#     creations (on the replica when answered), verifications;
#   - mysql://...?tls=on to a MariaDB with require_secure_transport: creations and
#     verifications; the session is encrypted (Ssl_cipher); another CA is refused;
#   - refusals at start: --backend-tls-* with a plain URL, a certificate without its key, a CA
#     file that is not one.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init backend_tls
itest_timeout 180
require_cmd redis-server redis-cli openssl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
CERTS=$ITEST_DIR/certs
"$ITEST_ROOT/scripts/tls-certs.sh" "$CERTS"
"$ITEST_ROOT/scripts/tls-certs.sh" "$ITEST_DIR/other" # another CA, same names
s2c() { python3 "$HERE/s2client.py" --port "$1" --secret-file "$ITEST_DIR/link.secret" "${@:2}"; }

# ---- Redis
itest_redis_shared redis replica
RPORT=$(REDIS_TLS=$CERTS itest_redis_start redis)
RPW=$(<"$ITEST_DIR/redis/password")
tlscli_at() {
    REDISCLI_AUTH=$RPW redis-cli --tls --cacert "$CERTS/ca.pem" --cert "$CERTS/client.pem" \
        --key "$CERTS/client.key" -h 127.0.0.1 -p "$1" "${@:2}"
}
tlscli() { tlscli_at "$RPORT" "$@"; }
check_eq "the Redis answers redis-cli over TLS" "$(tlscli ping)" PONG
TLS_ARGS=(--backend-tls-ca "$CERTS/ca.pem" --backend-tls-cert "$CERTS/client.pem"
    --backend-tls-key "$CERTS/client.key")

CAPTURE=$ITEST_DIR/redis.pcap
if command -v tcpdump >/dev/null 2>&1; then
    tcpdump -i lo -U -w "$CAPTURE" "tcp port $RPORT" >"$ITEST_DIR/tcpdump.log" 2>&1 &
    itest_bg $!
    listening() { grep -q "listening on" "$ITEST_DIR/tcpdump.log"; }
    wait_until 10 listening || itest_fail "tcpdump did not start"
fi
S2=$(itest_server2 server2 "rediss://127.0.0.1:$RPORT" "$ITEST_DIR/redis/password" \
    --workers 1 "${TLS_ARGS[@]}")
check_eq "rediss://: a creation" "$(s2c "$S2" create tlsuser0042 pw12345-secret)" ok
check_eq "... its verification" "$(s2c "$S2" verify tlsuser0042 pw12345-secret)" ok
check_eq "... a wrong password" "$(s2c "$S2" verify tlsuser0042 wrong-pass)" denied
check_eq "... the account is in the Redis" "$(tlscli exists user:tlsuser0042)" 1
check_ok "... the log names the URL as rediss://" \
    grep -q "rediss://:\*\*\*@127.0.0.1:$RPORT" "$ITEST_DIR/server2.log"
if [[ -f $CAPTURE ]]; then
    kill -INT "$(pgrep -f "tcpdump -i lo -U -w $CAPTURE")" 2>/dev/null || true
    captured() { [[ -s $CAPTURE ]] && grep -q "packets captured" "$ITEST_DIR/tcpdump.log"; }
    wait_until 10 captured || true
    check_ok "the capture of the Redis port holds packets" test -s "$CAPTURE"
    check_eq "... and neither the database password nor the username in clear" \
        "$(grep -c -a -e "$RPW" -e tlsuser0042 "$CAPTURE" || true)" 0
else
    log "tcpdump not installed: the capture checks are skipped"
fi

P=$(itest_server2 server2-nocert "rediss://127.0.0.1:$RPORT" "$ITEST_DIR/redis/password" \
    --workers 1 --backend-tls-ca "$CERTS/ca.pem")
check_eq "without the client certificate Redis asks for: unavailable" \
    "$(s2c "$P" create nocert pw12345)" unavailable
check_ok "... and the log says a client certificate is wanted" \
    wait_until 5 grep -q -E "alert certificate required|does the server want one" \
    "$ITEST_DIR/server2-nocert.log"
P=$(itest_server2 server2-otherca "rediss://127.0.0.1:$RPORT" "$ITEST_DIR/redis/password" \
    --workers 1 --backend-tls-ca "$ITEST_DIR/other/ca.pem" \
    --backend-tls-cert "$CERTS/client.pem" --backend-tls-key "$CERTS/client.key")
check_eq "a Redis certificate another CA signed: unavailable" \
    "$(s2c "$P" create otherca pw12345)" unavailable
check_ok "... and the log says the certificate does not verify" \
    wait_until 5 grep -q "TLS: the server's certificate: self-signed certificate in certificate" \
    "$ITEST_DIR/server2-otherca.log"
P=$(itest_server2 server2-plain "redis://127.0.0.1:$RPORT" "$ITEST_DIR/redis/password" \
    --workers 1 --backend-timeout 1s)
check_eq "plain redis:// to the TLS port: unavailable" "$(s2c "$P" create plain pw12345)" \
    unavailable
check_eq "... and no account was made by any refused server2" \
    "$(tlscli exists user:nocert user:otherca user:plain)" 0

# a replica over TLS (tls-replication) and a Sentinel over TLS that watches them:
# rediss-sentinel:// asks the Sentinel over TLS, then the node, and WAITs for the replica
REPLICA=$(REDIS_TLS=$CERTS itest_redis_start replica)
tlscli_at "$REPLICA" replicaof 127.0.0.1 "$RPORT" >/dev/null
online() { tlscli info replication | grep -q '^slave0:.*,state=online,'; }
wait_until 20 online || itest_fail "the replica did not come online over TLS"
SPORT=$(free_port)
mkdir -p "$ITEST_DIR/sentinel"
cat >"$ITEST_DIR/sentinel/sentinel.conf" <<EOF
port 0
tls-port $SPORT
tls-cert-file $CERTS/server.pem
tls-key-file $CERTS/server.key
tls-ca-cert-file $CERTS/ca.pem
tls-replication yes
bind 127.0.0.1
daemonize no
dir $ITEST_DIR/sentinel
logfile $ITEST_DIR/sentinel/sentinel.log
sentinel resolve-hostnames no
sentinel monitor mymaster 127.0.0.1 $RPORT 1
sentinel auth-pass mymaster $RPW
sentinel down-after-milliseconds mymaster 60000
EOF
chmod 600 "$ITEST_DIR/sentinel/sentinel.conf"
redis-server "$ITEST_DIR/sentinel/sentinel.conf" --sentinel >"$ITEST_DIR/sentinel/stdout.log" 2>&1 &
itest_bg $!
watching() {
    redis-cli --tls --cacert "$CERTS/ca.pem" --cert "$CERTS/client.pem" \
        --key "$CERTS/client.key" -h 127.0.0.1 -p "$SPORT" sentinel get-master-addr-by-name \
        mymaster 2>/dev/null | grep -q -x "$RPORT"
}
wait_until 20 watching || itest_fail "the Sentinel over TLS does not name the Redis"
P=$(itest_server2 server2-sentinel "rediss-sentinel://127.0.0.1:$SPORT/mymaster" \
    "$ITEST_DIR/redis/password" --workers 1 "${TLS_ARGS[@]}")
check_eq "rediss-sentinel://: a creation through the primary a Sentinel over TLS names" \
    "$(s2c "$P" create viasentinel pw12345)" ok
check_eq "... its verification" "$(s2c "$P" verify viasentinel pw12345)" ok
check_eq "... on the replica when answered (WAIT over TLS replication)" \
    "$(tlscli_at "$REPLICA" exists user:viasentinel)" 1

# ---- refusals at start
refused() { # refused NAME WANT ARGS...: exit 2 and WANT in the message
    local out rc=0
    out=$("$BIN_DIR/server2" --secret-file "$ITEST_DIR/link.secret" \
        --backend-password-file "$ITEST_DIR/redis/password" "${@:3}" 2>&1) || rc=$?
    check_eq "$1: exit 2" "$rc" 2
    check_ok "... saying '$2'" grep -q -F "$2" <<<"$out"
}
refused "--backend-tls-ca with redis://" "apply to a TLS backend only" \
    --backend "redis://127.0.0.1:$RPORT" --backend-tls-ca "$CERTS/ca.pem"
refused "--backend-tls-cert without its key" "go together" \
    --backend "rediss://127.0.0.1:$RPORT" --backend-tls-cert "$CERTS/client.pem"
refused "a CA file that is not one" "cannot load the CA certificates from" \
    --backend "rediss://127.0.0.1:$RPORT" --backend-tls-ca "$ITEST_DIR/redis/password"
refused "a key that is not the certificate's" "does not match" \
    --backend "rediss://127.0.0.1:$RPORT" --backend-tls-cert "$CERTS/client.pem" \
    --backend-tls-key "$CERTS/server.key"

# ---- MariaDB
if ! command -v mariadbd >/dev/null 2>&1; then
    log "mariadbd not installed: the MariaDB part is skipped"
    itest_summary
fi
MPORT=$(MYSQL_TLS=$CERTS itest_mysql_start mysql)
M=$(itest_server2 server2-mysql "mysql://auth@127.0.0.1:$MPORT/auth?tls=on" \
    "$ITEST_DIR/mysql/password" --workers 1 --backend-tls-ca "$CERTS/ca.pem")
check_eq "mysql ?tls=on: a creation" "$(s2c "$M" create mytls pw12345)" ok
check_eq "... its verification" "$(s2c "$M" verify mytls pw12345)" ok
cipher=$(MYSQL_PWD=$(<"$ITEST_DIR/mysql/password") mariadb -h 127.0.0.1 -P "$MPORT" -u auth \
    --ssl --ssl-ca "$CERTS/ca.pem" --batch --skip-column-names \
    -e "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS
        WHERE VARIABLE_NAME = 'Ssl_cipher'" auth 2>&1)
check_ok "... the server speaks TLS on TCP ($cipher)" test -n "$cipher"
P=$(itest_server2 server2-mysql-plain "mysql://auth@127.0.0.1:$MPORT/auth" \
    "$ITEST_DIR/mysql/password" --workers 1)
check_eq "mysql without tls=on to a server that requires it: unavailable" \
    "$(s2c "$P" create myplain pw12345)" unavailable
P=$(itest_server2 server2-mysql-otherca "mysql://auth@127.0.0.1:$MPORT/auth?tls=on" \
    "$ITEST_DIR/mysql/password" --workers 1 --backend-tls-ca "$ITEST_DIR/other/ca.pem")
check_eq "mysql ?tls=on, a certificate another CA signed: unavailable" \
    "$(s2c "$P" create myother pw12345)" unavailable
itest_summary
