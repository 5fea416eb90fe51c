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
# --backend-timeout: server2's two INSERTs wait for the holder's lock until the test has seen
# both waiting and ended the holder; with the default 2 s that wait would be a race against
# this machine's speed (s2client.py waits 10 s for its answer, innodb_lock_wait_timeout 50 s)
S2=$(itest_server2 s2 "mysql://auth@localhost/auth?socket=$M/mysqld.sock" "$M/password" \
    --workers 2 --backend-timeout 30s)
admin() { mariadb --defaults-file="$M/my.cnf" --user="$(id -un)" --batch --skip-column-names \
    "$@"; }
as_auth() { MYSQL_PWD=$(<"$M/password") mariadb --defaults-file="$M/my.cnf" -u auth auth "$@"; }
# Both conditions are read live. information_schema.innodb_trx is not: InnoDB refreshes that
# table's cache only when nobody has read it for 100 ms, so polled every 50 ms (wait_until)
# by a client that starts quickly it never changes, and the test waited on a stale view.
waiting() { # waiting N: N row-lock waits in InnoDB now
    [[ $(admin -e "SELECT VARIABLE_VALUE FROM information_schema.global_status
        WHERE VARIABLE_NAME = 'INNODB_ROW_LOCK_CURRENT_WAITS'") == "$1" ]]
}
holder_id() { # holder_id NAME: the connection of round NAME's holder once it holds the row
    admin -e "SELECT ID FROM information_schema.processlist WHERE INFO = 'SELECT SLEEP(60) AS $1'"
}
holding() { [[ -n $(holder_id "$1") ]]; } # (asked again at each try of wait_until)

ROUNDS=3
oks=0
for ((i = 1; i <= ROUNDS; i++)); do
    name=dl$i
    token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    # its SLEEP runs once its INSERT is done: from then on it holds the row's lock
    as_auth -e "BEGIN; INSERT INTO users (username, hash) VALUES ('$name', 'held');
        SELECT SLEEP(60) AS $name; ROLLBACK" >/dev/null 2>&1 &
    holder=$!
    wait_until 10 holding "$name" || itest_fail "the holding transaction did not start"
    senders=()
    for k in 1 2; do
        python3 "$HERE/s2client.py" --port "$S2" --secret-file "$ITEST_DIR/link.secret" \
            create "$name" pw12345 "$token" >"$ITEST_DIR/$name.$k" 2>&1 &
        senders+=("$!")
    done
    wait_until 10 waiting 2 || itest_fail "server2's two INSERTs did not wait for the lock"
    admin -e "KILL QUERY $(holder_id "$name")" # SLEEP ends, the holder rolls back
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
