#!/usr/bin/env bash
# server1's per-client limits and upload privacy, against tests/integration/fake_server2.py
# (which logs every CREATE/VERIFY it receives): the flags, --help and bad values; failed logins
# per username (21st wrong password -> 429 + Retry-After, the right one too, another user not,
# server2 never asked) and per client address (127.0.0.2 is another address); the lockout ends
# once Retry-After has passed; 30 wrong passwords sent at once on 30 connections, for one user
# and from one address, reach server2 only 3 times with a limit of 3 (the rest 429 with
# Retry-After), after right, cached and unanswered (503) logins that cost no token;
# sign-ups per address (11th -> 429, no CREATE sent);
# --max-conns-per-ip 3 (4th connection 503 with Retry-After and a Date, and closed; the 3 others
# work, a new one is accepted once one closes); --private-uploads on and off, with and without
# --prefetch.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init limits
itest_timeout 240
require_cmd curl python3 cmp
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
echo "the operator's file, for every account" >"$ROOT/pub.txt"
DATA=$ITEST_DIR/data
mkdir -p "$DATA"
head -c 3000 /dev/urandom >"$DATA/alice.bin"

# code ARGS...: the status code curl saw ("000" if none).
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
# header NAME ARGS...: the value of response header NAME (case-insensitive).
header() {
    local name=$1
    shift
    curl -s -D - -o /dev/null --max-time 20 "$@" | tr -d '\r' |
        awk -F': ' -v n="$(tr '[:upper:]' '[:lower:]' <<<"$name")" 'tolower($1)==n{print $2; exit}'
}
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }
# fake_seen KIND USER: how many KIND (CREATE|VERIFY) requests for USER the fake server2 got.
fake_seen() { grep -c "^request $1 $2\$" "$ITEST_DIR/fake_server2.log" || true; }

run_s1() {
    RUN_RC=0
    timeout 10 "$S1_BIN" "$@" >"$ITEST_DIR/run.out" 2>"$ITEST_DIR/run.err" || RUN_RC=$?
    RUN_ERR=$(cat "$ITEST_DIR/run.err")
}
check_bad_flag() {
    local desc=$1 pattern=$2
    shift 2
    run_s1 "$@" --root "$ROOT"
    check_eq "$desc: exit status" "$RUN_RC" 2
    if [[ $(wc -l <"$ITEST_DIR/run.err") -eq 1 && $RUN_ERR =~ $pattern ]]; then
        itest_ok "$desc: one clear line"
    else
        itest_not_ok "$desc: stderr was: $RUN_ERR"
    fi
}

# ---- flags --------------------------------------------------------------------------------
log "flags"
run_s1 --help
check_eq "--help exits 0" "$RUN_RC" 0
missing=""
for flag in --login-fail-limit --login-fail-addr-limit --signup-limit --ratelimit-entries \
    --max-conns-per-ip --private-uploads; do
    grep -q -- "$flag" "$ITEST_DIR/run.out" || missing+=" $flag"
done
check_eq "--help lists the per-client flags" "$missing" ""
check_ok "--help: default --login-fail-limit 20/1m" \
    grep -q 'default 20/1m)' "$ITEST_DIR/run.out"
check_ok "--help: default --signup-limit 10/1m" \
    grep -qE -- '--signup-limit .*default 10/1m' "$ITEST_DIR/run.out"
check_ok "--help: default --max-conns-per-ip 256" grep -q 'default 256)' "$ITEST_DIR/run.out"
check_bad_flag "--login-fail-limit without a duration" '^server1: --login-fail-limit' \
    --login-fail-limit 20
check_bad_flag "--signup-limit with a bad count" '^server1: --signup-limit' --signup-limit x/1m
check_bad_flag "--login-fail-addr-limit with a bad duration" '^server1: --login-fail-addr-limit' \
    --login-fail-addr-limit 5/1y
check_bad_flag "--max-conns-per-ip negative" '^server1: --max-conns-per-ip' --max-conns-per-ip -1
check_bad_flag "--ratelimit-entries too small" '^server1: --ratelimit-entries' \
    --ratelimit-entries 1

start_fake 0 --log-requests --slow-delay 0

# ---- failed logins per username, and sign-ups per address ------------------------------------
# The counts are the defaults (20 failures per user, 10 sign-ups per address); the periods are
# an hour so that no token returns while the test runs, however slow the machine.
log "failed logins per username"
start_s1 logins --read buffered --login-fail-limit 20/60m --login-fail-addr-limit 1000/60m \
    --signup-limit 10/60m
check_ok "config line shows the limits" \
    grep -q 'login-fail-limit=20/60m login-fail-addr-limit=1000/60m signup-limit=10/60m' "$S1_LOG"
codes=""
for i in $(seq 1 20); do
    codes+="$(code -u "alice:wrong$i" "$S1/files/pub.txt") "
done
check_eq "20 wrong passwords: 401 each" "$codes" "$(printf '401 %.0s' $(seq 1 20))"
check_eq "the 21st wrong password: 429" "$(code -u alice:wrong21 "$S1/files/pub.txt")" 429
retry=$(header Retry-After -u alice:wrong22 "$S1/files/pub.txt")
if [[ $retry =~ ^[0-9]+$ ]] && ((retry >= 1 && retry <= 180)); then
    itest_ok "429 carries Retry-After ($retry s: one token returns every 180 s)"
else
    itest_not_ok "Retry-After was '$retry'"
fi
check_eq "the right password while locked out: 429" \
    "$(code -u alice:secret "$S1/files/pub.txt")" 429
check_eq "PUT while locked out: 429" \
    "$(code -u alice:secret -T "$DATA/alice.bin" "$S1/files/locked.bin")" 429
check_eq "server2 saw the 20 failures and nothing after them" "$(fake_seen VERIFY alice)" 20
check_eq "another user is not affected" "$(code -u slowpoke:secret "$S1/files/pub.txt")" 200
check_eq "metrics: 4 answered 429 for the user" \
    "$(metric 'server1_ratelimited_total{kind="login_user"}')" 4
check_eq "metrics: 429 in server1_requests_total" \
    "$(metric 'server1_requests_total{route="files",status="429"}')" 4

log "sign-ups per address"
codes=""
for i in $(seq 1 10); do
    codes+="$(code -d "username=new$i&password=pw$i" "$S1/users") "
done
check_eq "10 sign-ups from one address: 201 each" "$codes" "$(printf '201 %.0s' $(seq 1 10))"
check_eq "the 11th sign-up: 429" "$(code -d 'username=new11&password=pw' "$S1/users")" 429
retry=$(header Retry-After -d 'username=new12&password=pw' "$S1/users")
check_ok "  ... with Retry-After ($retry)" test -n "$retry"
check_eq "server2 got no CREATE for the refused sign-ups" \
    "$(($(fake_seen CREATE new11) + $(fake_seen CREATE new12)))" 0
check_eq "server2 got a CREATE for each accepted one" "$(fake_seen CREATE new10)" 1
check_eq "sign-ups from another address (127.0.0.2) go on" \
    "$(code --interface 127.0.0.2 -d 'username=other1&password=pw' "$S1/users")" 201
check_eq "the new accounts work (logins are not sign-ups)" \
    "$(code -u new1:pw1 "$S1/files/pub.txt")" 200
check_eq "metrics: signup" "$(metric 'server1_ratelimited_total{kind="signup"}')" 2
stop_s1 "logins"

# ---- failed logins per address ------------------------------------------------------------------
log "failed logins per address"
start_s1 addr --read buffered --login-fail-limit 0 --login-fail-addr-limit 5/60m
codes=""
for i in 1 2 3 4 5; do
    codes+="$(code -u "guess$i:pw" "$S1/files/pub.txt") "
done
check_eq "5 failures for 5 names from one address: 401 each" "$codes" "401 401 401 401 401 "
check_eq "then even a right password from that address: 429" \
    "$(code -u alice:secret "$S1/files/pub.txt")" 429
check_eq "a sixth name from that address: 429" "$(code -u guess6:pw "$S1/files/pub.txt")" 429
check_eq "  ... not sent to server2" "$(fake_seen VERIFY guess6)" 0
check_eq "the same account from another address (127.0.0.2): 200" \
    "$(code --interface 127.0.0.2 -u alice:secret "$S1/files/pub.txt")" 200
check_eq "metrics: login_addr" "$(metric 'server1_ratelimited_total{kind="login_addr"}')" 2
stop_s1 "addr"

# ---- the lockout ends ---------------------------------------------------------------------------
log "the lockout ends once Retry-After has passed"
start_s1 window --read buffered --login-fail-limit 2/2s
code -u sloth2:x "$S1/files/pub.txt" >/dev/null
code -u sloth2:y "$S1/files/pub.txt" >/dev/null
code -d 'username=sloth2&password=right' "$S1/users" >/dev/null # (limits count failures only)
retry=$(header Retry-After -u sloth2:right "$S1/files/pub.txt")
check_ok "locked out after 2 failures (Retry-After '$retry')" test -n "$retry"
sleep "${retry:-1}"
check_eq "after Retry-After seconds the right password works" \
    "$(code -u sloth2:right "$S1/files/pub.txt")" 200
stop_s1 "window"

# ---- guesses sent at once ----------------------------------------------------------------------
# A login sent to server2 holds a token of the username and of the address until it is answered:
# 30 wrong passwords on 30 connections at once (each VERIFY answered 1 s late, so all would be in
# flight together) reach server2 only as often as there are tokens. A right password, a cached
# one and an answer that is not about the password (503) leave the tokens where they were.
log "guesses sent at once"
start_fake 0 --log-requests --verify-delay 1 --unavailable-file "$ITEST_DIR/unavailable" \
    --deny-file "$ITEST_DIR/deny"
start_s1 burst-user --read buffered --login-fail-limit 3/60m --login-fail-addr-limit 0 \
    --auth-cache 100
check_eq "a right password (sent to server2)" "$(code -u alice:secret "$S1/files/pub.txt")" 200
codes=""
for i in $(seq 1 10); do
    codes+="$(code -u alice:secret "$S1/files/pub.txt") "
done
check_eq "  ... then 10 more" "$codes" "$(printf '200 %.0s' $(seq 1 10))"
right=$(fake_seen VERIFY alice)
check_ok "  ... answered from the credential cache (server2 asked $right times: once per thread)" \
    test "$right" -ge 1 -a "$right" -le 2
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 30 alice wrong)
check_eq "then 30 wrong passwords for that user at once (--login-fail-limit 3/60m)" \
    "$(head -1 <<<"$out")" "401=3 429=27"
check_eq "  ... each 429 with Retry-After" "$(sed -n 2p <<<"$out")" "retry-after=27"
check_eq "  ... server2 asked 3 times for the guesses" "$(($(fake_seen VERIFY alice) - right))" 3
touch "$ITEST_DIR/unavailable"
codes=""
for i in 1 2 3 4 5; do
    codes+="$(code -u ghost:wrong "$S1/files/pub.txt") "
done
rm "$ITEST_DIR/unavailable"
check_eq "5 logins while server2 is unavailable: 503 each" "$codes" "503 503 503 503 503 "
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 30 ghost wrong)
check_eq "  ... then 30 wrong passwords at once: still 3 tokens" "$(head -1 <<<"$out")" \
    "401=3 429=27"
check_eq "metrics: 54 answered 429 for the user" \
    "$(metric 'server1_ratelimited_total{kind="login_user"}')" 54
stop_s1 "burst-user"
# Credentials server2 accepted lately are no guess: many requests at once with the right
# password take no token (no credential cache here: each asks server2, 1 s late), wrong ones still
# do; a known password found wrong (it changed since) is charged then, after the fact.
start_s1 burst-known --read buffered --login-fail-limit 3/60m --login-fail-addr-limit 100/60m
check_eq "a right password, through server2" "$(code -u alice:secret "$S1/files/pub.txt")" 200
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 30 alice secret)
check_eq "  ... then 30 requests at once with it (--login-fail-limit 3/60m): all 200" \
    "$(head -1 <<<"$out")" "200=30"
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 30 alice wrong)
check_eq "  ... while 30 wrong passwords at once still reach server2 3 times" \
    "$(head -1 <<<"$out")" "401=3 429=27"
check_eq "another user's right password" "$(code -u victim:secret "$S1/files/pub.txt")" 200
touch "$ITEST_DIR/deny"
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 4 victim secret)
check_eq "  ... 4 at once of another user's known password after it changed: 401 each" \
    "$(head -1 <<<"$out")" "401=4"
check_eq "  ... which charged the failures after the fact: that user is locked out" \
    "$(code -u victim:secret "$S1/files/pub.txt")" 429
rm "$ITEST_DIR/deny"
stop_s1 "burst-known"
start_s1 burst-addr --read buffered --login-fail-limit 0 --login-fail-addr-limit 3/60m
out=$(python3 "$HERE/s1client.py" burst "$S1_PORT" 30 'many{i}' wrong)
check_eq "30 wrong passwords for 30 names from one address at once (3/60m)" \
    "$(head -1 <<<"$out")" "401=3 429=27"
check_eq "  ... each 429 with Retry-After" "$(sed -n 2p <<<"$out")" "retry-after=27"
check_eq "  ... server2 asked 3 times" \
    "$(grep -c '^request VERIFY many[0-9]*$' "$ITEST_DIR/fake_server2.log" || true)" 3
stop_s1 "burst-addr"

# ---- connections per address ---------------------------------------------------------------------
log "--max-conns-per-ip 3"
start_s1 conns --read buffered --max-conns-per-ip 3
CONNS_OUT=$ITEST_DIR/conns.out
python3 - "$S1_PORT" >"$CONNS_OUT" 2>&1 <<'EOF' || true
import email.utils, socket, sys, time
port = int(sys.argv[1])
REQ = b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"

def status(s):
    """Sends a keep-alive request; returns the status (or 'closed')."""
    try:
        s.sendall(REQ)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return "closed"
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(rest) < n:
            rest += s.recv(4096)
        return data.split(b" ")[1].decode()
    except OSError as e:
        return "error:%s" % e.__class__.__name__

def conn(src="127.0.0.1"):
    s = socket.socket()
    s.settimeout(10)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s

first = [conn() for _ in range(3)]
print("first three:", " ".join(status(s) for s in first))
fourth = conn()
try:
    data = fourth.recv(4096)  # answered at accept, before any request
    date = [l[6:] for l in data.split(b"\r\n\r\n")[0].decode().split("\r\n")
            if l.lower().startswith("date: ")]
    try:
        dated = abs(email.utils.parsedate_to_datetime(date[0]).timestamp() - time.time()) < 60
    except (IndexError, TypeError, ValueError):
        dated = False
    print("fourth:", data.split(b" ")[1].decode() if data else "closed",
          "retry-after" if b"Retry-After: " in data else "no-retry-after",
          "date" if dated else "no-date")
    rest = fourth.recv(4096)
    print("fourth then:", "closed" if not rest else "open")
except OSError as e:
    print("fourth: error", e.__class__.__name__)
print("first three again:", " ".join(status(s) for s in first))
other = conn("127.0.0.2")
print("another address:", status(other))
first[0].close()
# the server notices the close on its own time: a new connection is accepted once it has
got = "none"
deadline = time.time() + 10
while time.time() < deadline:
    s = conn()
    got = status(s)
    if got == "404":
        break
    s.close()
    time.sleep(0.05)
print("after one closed:", got)
EOF
log "$(tr '\n' ';' <"$CONNS_OUT")"
check_ok "the first 3 connections work" grep -qx 'first three: 404 404 404' "$CONNS_OUT"
check_ok "the 4th is answered 503 with Retry-After and a current Date" \
    grep -qx 'fourth: 503 retry-after date' "$CONNS_OUT"
check_ok "  ... and closed" grep -qx 'fourth then: closed' "$CONNS_OUT"
check_ok "the first 3 still work after that" grep -qx 'first three again: 404 404 404' "$CONNS_OUT"
check_ok "another address is not counted with them" grep -qx 'another address: 404' "$CONNS_OUT"
check_ok "after one closes, a new connection is accepted" \
    grep -qx 'after one closed: 404' "$CONNS_OUT"
rejected=$(metric server1_connections_rejected_per_ip_total)
check_ok "metrics: refused connections counted ($rejected)" test "${rejected:-0}" -ge 1
stop_s1 "conns"

# ---- upload privacy ---------------------------------------------------------------------------
# private_mode DESC FLAGS...: alice uploads; who may read it.
upload_privacy() {
    local desc=$1 got=$ITEST_DIR/got
    shift
    start_s1 "priv-$desc" "$@"
    code -d 'username=bob&password=pw' "$S1/users" >/dev/null || true
    check_eq "$desc: alice uploads" \
        "$(code -u alice:secret -T "$DATA/alice.bin" "$S1/files/alice-$desc.bin")" 201
    rm -f "$got"
    check_eq "$desc: alice reads her upload" \
        "$(curl -s -o "$got" -w '%{http_code}' -u alice:secret "$S1/files/alice-$desc.bin")" 200
    check_ok "$desc: ... the same bytes" cmp -s "$got" "$DATA/alice.bin"
    check_eq "$desc: the operator's file is for everyone" \
        "$(code -u bob:pw "$S1/files/pub.txt")" 200
}

log "uploads shared (the default)"
upload_privacy shared --read buffered
check_eq "shared: bob reads alice's upload" "$(code -u bob:pw "$S1/files/alice-shared.bin")" 200
stop_s1 "shared"

for mode in buffered prefetch; do
    log "--private-uploads ($mode)"
    if [[ $mode == prefetch ]]; then
        upload_privacy "private-$mode" --prefetch --private-uploads
    else
        upload_privacy "private-$mode" --read buffered --private-uploads
    fi
    name=alice-private-$mode.bin
    check_eq "private ($mode): GET by bob: 404" "$(code -u bob:pw "$S1/files/$name")" 404
    check_eq "private ($mode): HEAD by bob: 404" "$(code -I -u bob:pw "$S1/files/$name")" 404
    check_eq "private ($mode): the same answer as a name that does not exist" \
        "$(curl -s -u bob:pw "$S1/files/$name")" "$(curl -s -u bob:pw "$S1/files/nothing.bin")"
    check_eq "private ($mode): a wrong password still gets 401, not 404" \
        "$(code -u bob:wrong "$S1/files/$name")" 401
    check_eq "private ($mode): alice still reads it" "$(code -u alice:secret "$S1/files/$name")" 200
    stop_s1 "private-$mode"
done

itest_summary
