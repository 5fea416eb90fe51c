#!/usr/bin/env bash
# What server1 checks before and while it reads a PUT body, against fake_server2.py, with raw
# sockets (rawput.py) where curl would send the body regardless:
# - credentials first: no or wrong credentials with Expect: 100-continue get 401 and a closed
#   connection, never 100 Continue; without Expect, the same (the body is never read); the
#   right ones get 100 Continue, then 201;
# - --upload-timeout + size / --min-rate: a body trickled one byte per 0.4 s (each gap well
#   inside --header-timeout) gets 408 at the deadline; a stalled one at --header-timeout;
# - --upload-temp-max: a second body that would not fit next to one being received gets 503 +
#   Retry-After before any byte of it is read; it fits once the first is committed;
# - --upload-user-share: an account's second body over its share of the temp space gets 503
#   while another account's fits; --min-rate over --min-rate-window: bodies trickled one byte
#   every 5 s get 408 after --min-rate-grace and within the grace + a window (not at their
#   deadline, 37 s), so another account's upload that found no room fits again by then;
# - --user-quota and --store-max: 507 before the body is read (no 100 Continue), overwrites that
#   do not grow pass, deletes free room, two uploads that each fit alone but not together get
#   one 201 and one 507 from the committer, the usage is rebuilt from the log on restart, and
#   the metrics count the refusals.
# itest-https: yes
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=s1lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/s1lib.sh"

itest_off_tmpfs
itest_init upload-guards
itest_timeout 240
require_cmd curl python3
: "${BIN_DIR:=$ITEST_ROOT/build/release}"
S1_BIN=$BIN_DIR/server1
HERE=$ITEST_ROOT/tests/integration

ROOT=$ITEST_DIR/root
mkdir -p "$ROOT"
DATA=$ITEST_DIR/data
mkdir -p "$DATA"
for k in 10 30 60 80 90; do head -c $((k * 1024)) /dev/urandom >"$DATA/${k}k"; done

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" || true; }
metric() { curl -s --max-time 10 "$S1_METRICS" | awk -v m="$1" '$1==m{print $2}'; }
ALICE=alice:secret
BOB=bob:hunter22
# rawput ARGS...: rawput.py against server1; its JSON line in RAW.
rawput() { RAW=$(python3 "$HERE/rawput.py" "$S1_PORT" "$@"); }
# raw FIELD: a field of the last rawput's JSON (headers.NAME for a header).
raw() {
    python3 -c 'import json,sys; d=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): d=d.get(k, "") if isinstance(d, dict) else ""
print(str(d).lower() if isinstance(d, bool) else d)' "$RAW" "$1"
}
fake_verifies() { grep -c "^request VERIFY $1\$" "$ITEST_DIR/fake_server2.log" || true; }

start_fake 0 --log-requests

# ---- credentials before the body -------------------------------------------------------------
log "credentials are checked before the body is read"
start_s1 s1-auth --header-timeout 1s --upload-timeout 2s --min-rate 1M --max-upload 1M
check_eq "create bob" "$(code -d 'username=bob&password=hunter22' "$S1/users")" 201

rawput noauth.bin 100000 --expect
check_eq "no credentials, Expect: 401" "$(raw status)" 401
check_eq "  ... without 100 Continue" "$(raw continue)" false
check_eq "  ... and the connection closed" "$(raw closed)" true
check_eq "  ... announced" "$(raw headers.connection)" close

before=$(fake_verifies alice)
rawput wrong.bin 100000 --expect --auth alice:wrong
check_eq "wrong password, Expect: 401" "$(raw status)" 401
check_eq "  ... without 100 Continue" "$(raw continue)" false
check_eq "  ... and the connection closed" "$(raw closed)" true
check_eq "  ... after server2 was asked" "$(($(fake_verifies alice) - before))" 1

rawput wrong2.bin 100000 --auth alice:wrong --body none
check_eq "wrong password, no Expect, no body sent: 401 all the same" "$(raw status)" 401
check_eq "  ... and closed" "$(raw closed)" true

rawput right.bin 100000 --expect --auth "$ALICE"
check_eq "right password, Expect: 100 Continue" "$(raw continue)" true
check_eq "  ... then 201" "$(raw status)" 201
check_eq "  ... kept alive" "$(raw closed)" false
check_eq "  ... stored" "$(code -u "$ALICE" "$S1/files/right.bin")" 200
check_eq "wrong.bin was never stored" "$(code -u "$ALICE" "$S1/files/wrong.bin")" 404
check_eq "curl PUT without credentials: 401" "$(code -T "$DATA/10k" "$S1/files/c.bin")" 401
check_eq "curl PUT with them: 201" "$(code -u "$ALICE" -T "$DATA/10k" "$S1/files/c.bin")" 201

# ---- the upload deadline ---------------------------------------------------------------------
log "--upload-timeout 2s + size / --min-rate; --header-timeout 1s per stall"
rawput slow.bin 100 --auth "$ALICE" --body trickle:0.4 --timeout 30
check_eq "a trickled body: 408" "$(raw status)" 408
el=$(raw elapsed)
check_ok "  ... at the deadline, not at the end of the trickle ($el s)" \
    python3 -c "import sys; sys.exit(not 1.8 <= $el <= 4.0)"
check_ok "  ... after a few bytes only ($(raw sent) of 100)" test "$(raw sent)" -lt 20
check_eq "  ... counted" "$(metric server1_uploads_timed_out_total)" 1
rawput stall.bin 1000 --auth "$ALICE" --body part:10 --timeout 30
check_eq "a stalled body: 408" "$(raw status)" 408
el=$(raw elapsed)
check_ok "  ... after --header-timeout ($el s)" python3 -c "import sys; sys.exit(not 0.8 <= $el <= 2.0)"
check_eq "neither was stored" "$(code -u "$ALICE" "$S1/files/slow.bin")$(code -u "$ALICE" "$S1/files/stall.bin")" 404404
stop_s1 "auth-first server1"

# ---- temp space -------------------------------------------------------------------------------
log "--upload-temp-max 100k (--upload-memory 0: every body in a temp file)"
start_s1 s1-temp --upload-memory 0 --upload-temp-max 100k --max-upload 100k
out=$(python3 - "$S1_PORT" "$HERE" "$ALICE" "$BOB" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
from rawput import Put
port, alice, bob = int(sys.argv[1]), sys.argv[3], sys.argv[4]
a = Put(port, "a.bin", 60000, alice, expect=True)
print("first-continue", a.wait_continue())
a.send(1000)  # a body being received holds 60000 of the 100k
b = Put(port, "b.bin", 60000, bob, expect=True)
print("second-continue", b.wait_continue())
st, hdrs, closed, _ = b.answer()
print("second-status", st, hdrs.get("retry-after", "-"), closed)
a.send(59000)
print("first-status", a.answer(close_wait=0)[0])
c = Put(port, "b.bin", 60000, bob, expect=True)
if c.wait_continue():
    c.send(60000)
print("again-status", c.answer(close_wait=0)[0])
EOF
)
log "$(tr '\n' ';' <<<"$out")"
check_ok "the first upload gets 100 Continue" grep -qx 'first-continue True' <<<"$out"
check_ok "a second that does not fit: no 100 Continue" grep -qx 'second-continue False' <<<"$out"
check_ok "  ... but 503 + Retry-After: 1, closed" grep -qx 'second-status 503 1 True' <<<"$out"
check_ok "the first completes: 201" grep -qx 'first-status 201' <<<"$out"
check_ok "the second fits afterwards: 201" grep -qx 'again-status 201' <<<"$out"
check_eq "server1_uploads_busy_total" "$(metric server1_uploads_busy_total)" 1
stop_s1 "temp-limited server1"

# ---- one account's share of the budgets, and the rate rule -----------------------------------
# Bodies of 2 MiB in temp files only (--upload-memory 1M), 4 MiB of them in all; a body must
# move --min-rate (64k) per --min-rate-window once --min-rate-grace has passed. A trickle (one
# byte every 5 s, never a stall of --header-timeout, far inside --upload-timeout 5s + 2 MiB /
# --min-rate = 37 s) must get 408 after the grace, and no later than the grace and a window
# (the rule's own bound is the first quarter-window step after the grace).
GRACE=2 WINDOW=4
log "--upload-temp-max 4M --upload-user-share 25 --min-rate-grace ${GRACE}s --min-rate-window ${WINDOW}s"
start_s1 s1-share --upload-memory 1M --upload-temp-max 4M --max-upload 4M --upload-timeout 5s \
    --upload-user-share 25 --min-rate-grace "${GRACE}s" --min-rate-window "${WINDOW}s"
CAROL=carol:pw3
check_eq "create carol" "$(code -d 'username=carol&password=pw3' "$S1/users")" 201
out=$(python3 - "$S1_PORT" "$HERE" "$ALICE" "$BOB" "$CAROL" <<'EOF2'
import select, sys, time
sys.path.insert(0, sys.argv[2])
from rawput import Put
port, alice, bob, carol = int(sys.argv[1]), sys.argv[3], sys.argv[4], sys.argv[5]
M2 = 2 << 20

def trickle(puts, others=()):
    """One byte every 5 s to each of puts until each of puts and others has an answer; the
    status and the seconds from its head to its answer, of each of puts, then of others."""
    ready, last = {}, -5.0
    while len(ready) < len(puts) + len(others):
        now = time.monotonic()
        if now - last >= 5:
            for p in puts:
                if p not in ready and not p.readable():
                    p.send(1)
            last = now
        for p in list(puts) + list(others):
            if p not in ready and p.readable():
                ready[p] = now - p.t0
        if now - min(p.t0 for p in puts) > 60:
            break
        time.sleep(0.01)
    return [(p.answer(close_wait=0.2)[0] if p in ready else 0, ready.get(p, 99.0))
            for p in list(puts) + list(others)]

# one account: its second body is over its share, another account's fits
a1 = Put(port, "share1", M2, alice, expect=True)
print("a1-continue", a1.wait_continue())
a2 = Put(port, "share2", M2, alice, expect=True)
print("a2-continue", a2.wait_continue())
st, hdrs, closed, _ = a2.answer()
print("a2-status", st, hdrs.get("retry-after", "-"), closed)
b = Put(port, "share-bob1", M2, bob, expect=True)
if b.wait_continue():
    b.send(M2)
(st, el), (bst, _) = trickle([a1], [b])
print("bob-status", bst)
print("a1-trickle %d %.2f" % (st, el))

# two accounts hold all of it: a third waits for the rate rule, not for their deadlines
a3 = Put(port, "share3", M2, alice, expect=True)
c1 = Put(port, "share4", M2, carol, expect=True)
print("both-continue", a3.wait_continue() and c1.wait_continue())
b2 = Put(port, "share-bob2", M2, bob, expect=True)
print("bob2-continue", b2.wait_continue())
print("bob2-status", b2.answer(close_wait=0)[0])
for name, (st, el) in zip(("a3", "c1"), trickle([a3, c1])):
    print("%s-trickle %d %.2f" % (name, st, el))
b3 = Put(port, "share-bob3", M2, bob, expect=True)
if b3.wait_continue():
    b3.send(M2)
print("bob3-status", b3.answer(close_wait=0.2)[0])
EOF2
)
log "$(tr '\n' ';' <<<"$out")"
# trickle NAME: "STATUS SECONDS" of the trickle NAME in $out
trickle() { awk -v k="$1-trickle" '$1==k{print $2, $3}' <<<"$out"; }
in_bound() { python3 -c "import sys; sys.exit(not $GRACE <= $1 <= $GRACE + $WINDOW)"; }
check_ok "alice's first 2 MiB: 100 Continue" grep -qx 'a1-continue True' <<<"$out"
check_ok "  ... her second (over her 25% of 4 MiB): no 100 Continue" grep -qx 'a2-continue False' <<<"$out"
check_ok "  ... but 503 + Retry-After: 1, closed" grep -qx 'a2-status 503 1 True' <<<"$out"
check_ok "bob's 2 MiB meanwhile: 201" grep -qx 'bob-status 201' <<<"$out"
read -r st el <<<"$(trickle a1)"
check_eq "alice's trickle: 408" "$st" 408
check_ok "  ... after the grace, within the grace + a window ($el s)" in_bound "$el"
check_ok "alice and carol trickle one each: both 100 Continue" grep -qx 'both-continue True' <<<"$out"
check_ok "  ... bob's 2 MiB finds no room: 503" grep -qx 'bob2-status 503' <<<"$out"
for t in a3 c1; do
    read -r st el <<<"$(trickle $t)"
    check_eq "trickle $t: 408" "$st" 408
    check_ok "  ... after the grace, within the grace + a window ($el s)" in_bound "$el"
done
check_ok "then bob's 2 MiB: 201" grep -qx 'bob3-status 201' <<<"$out"
check_eq "the three trickles counted" "$(metric server1_uploads_timed_out_total)" 3
check_eq "the two refusals counted" "$(metric server1_uploads_busy_total)" 2
stop_s1 "share server1"

# ---- quotas -----------------------------------------------------------------------------------
log "--user-quota 100k --store-max 150k"
ROOT=$ITEST_DIR/root-quota # (a store of its own: nothing uploaded yet)
mkdir -p "$ROOT"
start_s1 s1-quota --user-quota 100k --store-max 150k
check_eq "alice 60k: 201" "$(code -u "$ALICE" -T "$DATA/60k" "$S1/files/a1")" 201
rawput a2 $((60 * 1024)) --expect --auth "$ALICE"
check_eq "alice 60k more (120k > 100k): 507" "$(raw status)" 507
check_eq "  ... before the body (no 100 Continue)" "$(raw continue)" false
check_eq "  ... closed" "$(raw closed)" true
check_eq "alice replaces a1 by 90k (grows 30k, fits): 204" "$(code -u "$ALICE" -T "$DATA/90k" "$S1/files/a1")" 204
check_eq "alice replaces a1 by 80k (shrinks): 204" "$(code -u "$ALICE" -T "$DATA/80k" "$S1/files/a1")" 204
check_eq "bob 60k (140k in all): 201" "$(code -u "$BOB" -T "$DATA/60k" "$S1/files/b1")" 201
check_eq "bob 30k more (his 90k fit, but 170k > 150k in all): 507" "$(code -u "$BOB" -T "$DATA/30k" "$S1/files/b2")" 507
check_eq "server1_store_data_bytes" "$(metric server1_store_data_bytes)" $((140 * 1024))
check_eq "refusals by the user quota" "$(metric 'server1_quota_refusals_total{quota="user"}')" 1
check_eq "refusals by --store-max" "$(metric 'server1_quota_refusals_total{quota="store"}')" 1
check_eq "alice deletes a1: 204" "$(code -u "$ALICE" -X DELETE "$S1/files/a1")" 204
check_eq "then bob's 30k fits: 201" "$(code -u "$BOB" -T "$DATA/30k" "$S1/files/b2")" 201
# two uploads that pass the check before their bodies (alice has 0 of 100k) but not together:
# the committer judges them again, in order
out=$(python3 - "$S1_PORT" "$HERE" "$ALICE" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
from rawput import Put
port, alice = int(sys.argv[1]), sys.argv[3]
ps = [Put(port, "race%d" % i, 60 * 1024, alice, expect=True) for i in range(2)]
print("continues", sum(p.wait_continue() for p in ps))
for p in ps:
    p.send(60 * 1024)
print("statuses", " ".join(sorted(str(p.answer(close_wait=0)[0]) for p in ps)))
EOF
)
log "$(tr '\n' ';' <<<"$out")"
check_ok "two 60k uploads of alice at once both get 100 Continue" grep -qx 'continues 2' <<<"$out"
check_ok "  ... then one 201, one 507 from the committer" grep -qx 'statuses 201 507' <<<"$out"
used=$(metric server1_store_data_bytes)
stop_s1 "quota server1"
start_s1 s1-quota2 --user-quota 100k --store-max 150k
check_eq "after a restart, the same usage from the log" "$(metric server1_store_data_bytes)" "$used"
check_eq "  ... and 150k of 150k are still used: bob's 10k more is 507" "$(code -u "$BOB" -T "$DATA/10k" "$S1/files/b3")" 507
check_eq "  ... a DELETE is always allowed: 204" "$(code -u "$BOB" -X DELETE "$S1/files/b2")" 204
stop_s1 "quota server1 after restart"
start_s1 s1-noquota
check_eq "without quotas, bob's 10k: 201" "$(code -u "$BOB" -T "$DATA/10k" "$S1/files/b3")" 201
stop_s1 "server1 without quotas"

itest_summary
