#!/usr/bin/env bash
# Throw-away TLS certificates for tests and local clusters, with OpenSSL: a CA, a server
# certificate and a client certificate it signed, all EC P-256 keys, valid for 30 days.
#   tls-certs.sh DIR [ADDR...]
# DIR gets ca.pem (the CA certificate: what clients and servers trust), ca.key, server.pem +
# server.key (subjectAltName: localhost, 127.0.0.1, ::1 and each ADDR, an IP address or a DNS
# name; it serves as a client certificate too, for replication between servers) and
# client.pem + client.key (for servers that ask clients for a certificate: Redis
# tls-auth-clients, MariaDB REQUIRE X509). Keys are mode 0600. An existing DIR/ca.pem is kept
# (with its key): run it again with more ADDRs to add names to a new server certificate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 1)) || die "usage: ${0##*/} DIR [ADDR...]"
dir=$1
shift
require_cmd openssl
mkdir -p "$dir"
umask 077

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [[ ! -s $dir/ca.pem || ! -s $dir/ca.key ]]; then
    newkey "$dir/ca.key"
    openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 30 -subj "/CN=throw-away test CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$dir/ca.pem" 2>/dev/null || die "cannot make the CA certificate"
fi

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for a in "$@"; do
    if [[ $a =~ ^[0-9.]+$ || $a == *:* ]]; then san+=",IP:$a"; else san+=",DNS:$a"; fi
done
# sign NAME CN EXTENSIONS: NAME.pem and NAME.key, signed by the CA
sign() {
    newkey "$dir/$1.key"
    openssl req -new -key "$dir/$1.key" -subj "/CN=$2" -out "$dir/$1.csr" 2>/dev/null
    printf '%s\n' "$3" >"$dir/$1.ext"
    openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 30 -sha256 -extfile "$dir/$1.ext" -out "$dir/$1.pem" \
        2>/dev/null || die "cannot sign the $1 certificate"
    rm -f "$dir/$1.csr" "$dir/$1.ext"
}
sign server localhost "subjectAltName=$san
extendedKeyUsage=serverAuth,clientAuth"
sign client "test client" "extendedKeyUsage=clientAuth"
chmod 644 "$dir/ca.pem" "$dir/server.pem" "$dir/client.pem"
