#!/usr/bin/env bash
# server2 on MariaDB runs a statement again when it is rolled back as a deadlock. InnoDB's
# three-insert deadlock, made on purpose: a transaction holds a new row for NAME, two server2
# workers send the same creation of NAME (one creation token, as server1 does when it sends a
# creation again) and wait for that row's lock; the transaction rolls back, both are granted a
# shared lock, both want it exclusive, and InnoDB rolls one back as a deadlock (1213). Run
# again, that one finds the row the other stored as its own creation: both answered ok, none
# unavailable.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

itest_init mysql_deadlock
itest_timeout 120
require_cmd mariadbd mariadb python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
HERE=$ITEST_ROOT/tests/integration
M=$ITEST_DIR/mysql

itest_mysql_start >/dev/null
S2=$(itest_server2 s2 "mysql://auth@localhost/auth?socket=$M/mysqld.sock" "$M/password" \
    --workers 2)
admin() { mariadb --defaults-file="$M/my.cnf" --user="$(id -un)" --batch --skip-column-names \
    "$@"; }
as_auth() { MYSQL_PWD=$(<"$M/password") mariadb --defaults-file="$M/my.cnf" -u auth auth "$@"; }
waiting() { # waiting N: N transactions wait for a lock
    [[ $(admin -e "SELECT COUNT(*) FROM information_schema.innodb_trx
        WHERE trx_state = 'LOCK WAIT'") == "$1" ]]
}
holder_id() {
    admin -e "SELECT trx_mysql_thread_id FROM information_schema.innodb_trx
        WHERE trx_state = 'RUNNING' LIMIT 1"
}
holding() { [[ -n $(holder_id) ]]; } # (asked again at each try of wait_until)

ROUNDS=3
oks=0
for ((i = 1; i <= ROUNDS; i++)); do
    name=dl$i
    token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    as_auth -e "BEGIN; INSERT INTO users (username, hash) VALUES ('$name', 'held');
        SELECT SLEEP(60); ROLLBACK" >/dev/null 2>&1 &
    holder=$!
    wait_until 10 holding || itest_fail "the holding transaction did not start"
    senders=()
    for k in 1 2; do
        python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" \
            create "$name" pw12345 "$token" >"$ITEST_DIR/$name.$k" 2>&1 &
        senders+=("$!")
    done
    wait_until 10 waiting 2 || itest_fail "server2's two INSERTs did not wait for the lock"
    admin -e "KILL QUERY $(holder_id)" # SLEEP ends, the holder rolls back
    wait "$holder" || true
    wait "${senders[@]}" || true
    got="$(cat "$ITEST_DIR/$name.1") $(cat "$ITEST_DIR/$name.2")"
    log "round $i: $got"
    [[ $got != "ok ok" ]] || oks=$((oks + 1))
done
deadlocks=$(grep -c 'rolled back as a deadlock: running it again' "$ITEST_DIR/s2.log" || true)
check_ok "InnoDB rolled back one of the two as a deadlock ($deadlocks times in $ROUNDS rounds)" \
    test "$deadlocks" -ge 1
check_eq "both sendings of the creation answered ok in every round" "$oks" "$ROUNDS"
check_eq "... and the account is stored once" \
    "$(as_auth --batch --skip-column-names -e "SELECT COUNT(*) FROM users WHERE username
        LIKE 'dl%'")" "$ROUNDS"
itest_summary
