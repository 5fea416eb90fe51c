#!/usr/bin/env python3
"""rangecheck.py - Range and conditional GETs of one file with Python's urllib, against the
local copy of its bytes; every 200 and 206 must also carry the headers of a file's answer
(Content-Type TYPE, X-Content-Type-Options: nosniff, a current Date, Accept-Ranges: bytes, and
the ETag and Last-Modified of the first answer). The first answer is asked for again until it
has a Last-Modified (sent once the second it names is over: RFC 9110 8.8.2.2), for at most 10 s.

  rangecheck.py URL USER PASS FILE [--type TYPE] [--weak-date]
      TYPE: application/octet-stream. --weak-date: an If-Range with the file's Last-Modified
      gets the whole file (its ctime is after the second of its mtime: touch -d).
  rangecheck.py splice URL USER PASS [ROOT_FILE]
      a download resumed with If-Range: <date> after the file changed twice within one
      second: of an upload (PUT to URL), or of an operator's file (ROOT_FILE, served as URL)
      rewritten in place, and renamed into place after that second; the client must get the
      whole new version, never the end of it after the start of the old one. A date that
      names the file still gets 206.

Prints one line per case ("ok - ..." or "FAIL - ...") and exits 1 if any failed. An https
URL is fetched trusting only the run's CA (itls.py).
"""
import base64
import email.utils
import os
import sys
import time
import urllib.error
import urllib.request

import itls


def fetch(url, auth, headers=None, method="GET", data=None):
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}), data=data)
    req.add_header("Authorization", auth)
    try:
        ctx = itls.context() if url.startswith("https:") else None
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


FAILS = 0


def check(desc, cond, detail=""):
    global FAILS
    if cond:
        print(f"ok - {desc}")
    else:
        FAILS += 1
        print(f"FAIL - {desc} {detail}")


def basic(user, pw):
    return "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()


def fetch_dated(url, auth, timeout=10.0):
    """The first GET that carries a Last-Modified (asked for again for at most timeout s)."""
    deadline = time.monotonic() + timeout
    while True:
        st, h, body = fetch(url, auth)
        if h.get("Last-Modified") is not None or time.monotonic() > deadline:
            return st, h, body
        time.sleep(0.05)


def http_date(secs):
    return email.utils.formatdate(secs, usegmt=True)


def date_secs(value):
    return int(email.utils.parsedate_to_datetime(value).timestamp())


def main():
    if sys.argv[1:2] == ["splice"]:
        return splice(sys.argv[2:])
    url, user, pw, path = sys.argv[1:5]
    ctype = "application/octet-stream"
    weak_date = False
    rest = sys.argv[5:]
    while rest:
        if rest[0] == "--type" and len(rest) > 1:
            ctype, rest = rest[1], rest[2:]
        elif rest[0] == "--weak-date":
            weak_date, rest = True, rest[1:]
        else:
            sys.exit(__doc__)
    auth = basic(user, pw)
    data = open(path, "rb").read()
    n = len(data)

    def date_ok(v):
        try:
            return abs(email.utils.parsedate_to_datetime(v).timestamp() - time.time()) < 60
        except (TypeError, ValueError):
            return False

    def wrong_headers(h):
        """The headers of a 200 or 206 that are missing or wrong, as "name=value" strings."""
        want = {"Content-Type": ctype, "X-Content-Type-Options": "nosniff",
                "Accept-Ranges": "bytes", "ETag": etag, "Last-Modified": lm}
        bad = [f"{k}={h.get(k)!r}" for k, v in want.items() if h.get(k) != v]
        if not date_ok(h.get("Date")):
            bad.append(f"Date={h.get('Date')!r}")
        return bad

    st, h, body = fetch_dated(url, auth)
    check("200 whole", st == 200 and body == data, f"status {st}, {len(body)} bytes")
    etag, lm = h.get("ETag"), h.get("Last-Modified")
    check("a strong ETag", etag is not None and etag.startswith('"'), repr(etag))
    check("Last-Modified", lm is not None and email.utils.parsedate_to_datetime(lm), repr(lm))
    bad = wrong_headers(h)
    check(f"the 200's headers (Content-Type: {ctype}, nosniff, Date, Accept-Ranges, ETag, "
          "Last-Modified)", not bad, " ".join(bad))

    def rng(spec, want_status, want=None, cr=None):
        st, h, body = fetch(url, auth, {"Range": spec})
        desc = f"Range {spec} -> {want_status}"
        bad = []
        if want_status == 206:
            a, b = want
            bad = wrong_headers(h)
            ok = st == 206 and body == data[a:b + 1] and \
                h.get("Content-Range") == f"bytes {a}-{b}/{n}" and \
                h.get("Content-Length") == str(b - a + 1) and not bad
        elif want_status == 416:
            ok = st == 416 and h.get("Content-Range") == f"bytes */{n}"
        else:
            bad = wrong_headers(h)
            ok = st == 200 and body == data and h.get("Content-Range") is None and not bad
        check(desc, ok, f"got {st} {h.get('Content-Range')} {len(body)} bytes {' '.join(bad)}")

    if n == 0:
        rng("bytes=0-0", 200)
        rng("bytes=-5", 200)
    else:
        rng("bytes=0-0", 206, (0, 0))
        rng(f"bytes={n - 1}-{n - 1}", 206, (n - 1, n - 1))
        rng("bytes=-1", 206, (n - 1, n - 1))
        rng("bytes=0-", 206, (0, n - 1))
        rng(f"bytes=-{n + 10}", 206, (0, n - 1))
        rng(f"bytes=0-{n + 100}", 206, (0, n - 1))
        rng(f"bytes={n}-", 416)
        rng(f"bytes={n + 5}-{n + 10}", 416)
        rng("bytes=-0", 416)
        rng("bytes=5-4", 200)
        rng("items=0-1", 200)
        rng("bytes=0-1,3-4", 200 if n > 4 else 206, (0, n - 1) if n <= 4 else None)
        rng("bytes=0-1, 2-3", 206, (0, min(3, n - 1)))
        if n > 8192:
            rng("bytes=4095-4096", 206, (4095, 4096))
            rng("bytes=4096-8191", 206, (4096, 8191))
            rng(f"bytes=1000-{n - 1000}", 206, (1000, n - 1000))
            rng("bytes=1-300000" if n > 300001 else "bytes=1-", 206,
                (1, min(300000, n - 1)))
    st, h, body = fetch(url, auth, {"Range": "bytes=0-0"}, method="HEAD")
    bad = wrong_headers(h)
    check("HEAD with a Range: 200, no body, the 200's headers",
          st == 200 and body == b"" and h.get("Content-Length") == str(n) and not bad,
          f"{st} {h.get('Content-Length')} {' '.join(bad)}")

    st, h, body = fetch(url, auth, {"If-None-Match": etag})
    check("If-None-Match: its ETag -> 304 without a body",
          st == 304 and body == b"" and h.get("ETag") == etag, f"{st} {len(body)}")
    st, _, body = fetch(url, auth, {"If-None-Match": '"other", ' + etag})
    check("If-None-Match: a list with its ETag -> 304", st == 304, str(st))
    st, _, body = fetch(url, auth, {"If-None-Match": "W/" + etag})
    check("If-None-Match: its weak ETag -> 304 (weak comparison)", st == 304, str(st))
    st, _, body = fetch(url, auth, {"If-None-Match": '"other"'})
    check("If-None-Match: another tag -> 200", st == 200 and body == data, str(st))
    st, _, body = fetch(url, auth, {"If-Modified-Since": lm})
    check("If-Modified-Since: its Last-Modified -> 304", st == 304 and body == b"", str(st))
    st, _, body = fetch(url, auth, {"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
    check("If-Modified-Since: an older date -> 200", st == 200 and body == data, str(st))
    st, _, body = fetch(url, auth, {"If-None-Match": '"other"', "If-Modified-Since": lm})
    check("If-None-Match beats If-Modified-Since -> 200", st == 200, str(st))
    st, _, _ = fetch(url, auth, {"If-Match": '"other"'})
    check("If-Match: another tag -> 412", st == 412, str(st))
    st, _, body = fetch(url, auth, {"If-Match": etag})
    check("If-Match: its ETag -> 200", st == 200 and body == data, str(st))
    st, _, _ = fetch(url, auth, {"If-Unmodified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
    check("If-Unmodified-Since: an older date -> 412", st == 412, str(st))
    if n > 1:
        rng_h = {"Range": "bytes=1-1"}
        st, _, body = fetch(url, auth, dict(rng_h, **{"If-Range": etag}))
        check("If-Range: its ETag -> 206", st == 206 and body == data[1:2], str(st))
        st, _, body = fetch(url, auth, dict(rng_h, **{"If-Range": '"stale"'}))
        check("If-Range: another ETag -> 200 whole", st == 200 and body == data, str(st))
        st, _, body = fetch(url, auth, dict(rng_h, **{"If-Range": "W/" + etag}))
        check("If-Range: a weak ETag -> 200 whole", st == 200 and body == data, str(st))
        st, _, body = fetch(url, auth, dict(rng_h, **{"If-Range": lm}))
        if weak_date:
            check("If-Range: its Last-Modified, a weak date (ctime after it) -> 200 whole",
                  st == 200 and body == data, str(st))
        else:
            check("If-Range: its Last-Modified -> 206", st == 206 and body == data[1:2],
                  str(st))
    return 1 if FAILS else 0


def put(url, auth, data):
    st, h, _ = fetch(url, auth, method="PUT", data=data)
    return st, h


def upload_version_ns(etag):
    """An upload's version from its ETag ("0-<size hex>-<version hex>": server1/files.h)."""
    return int(etag.strip('"').split("-")[2], 16)


def write_file(path, data):
    with open(path, "r+b" if os.path.exists(path) else "wb") as f:
        f.truncate(0)
        f.write(data)
    return os.stat(path).st_mtime_ns


def resumed(kind, url, auth, old, new, sent_lm, old_s, new_s):
    """The resumed download after old (its first half fetched) became new: 200 with all of new,
    or, only when the client holds a date naming new, a 206 of new."""
    half = len(old) // 2
    # the client sends back the date it was given; given none, the date old had (as the
    # server sent before it kept dates weak), which it must not have been able to use
    date = sent_lm if sent_lm is not None else http_date(old_s)
    st, h, body = fetch(url, auth, {"Range": f"bytes={half}-", "If-Range": date})
    mixed = st == 206 and body == new[half:]
    answered_s = date_secs(h["Date"]) if h.get("Date") else None
    if sent_lm is not None:
        check(f"{kind}: If-Range with the old version's Last-Modified ({sent_lm}) -> 200 with "
              "the whole new version",
              st == 200 and body == new, f"got {st}, {len(body)} bytes" +
              (" (the end of the new version after the start of the old one)" if mixed else ""))
    elif answered_s == new_s:
        check(f"{kind}: no Last-Modified within its second; If-Range with that second "
              "-> 200 with the whole new version", st == 200 and body == new,
              f"got {st}, {len(body)} bytes" + (" (spliced)" if mixed else ""))
    else:
        print(f"# {kind}: answered after the second (no date was sent to use)")


def splice(args):
    """See the module's help: rangecheck.py splice URL USER PASS [ROOT_FILE]."""
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    url, user, pw = args[:3]
    root_file = args[3] if len(args) == 4 else None
    auth = basic(user, pw)
    a, b = b"A" * 1000, b"B" * 1000
    kind = "operator's file rewritten in place" if root_file else "upload"
    for attempt in range(20):
        # A then B within one second: the client fetched the first half of A in between
        if root_file:
            a_ns = write_file(root_file, a)
        else:
            st, h = put(url, auth, a)
            check(f"{kind}: PUT A", st in (201, 204), str(st))
            a_ns = upload_version_ns(h["ETag"])
        st, h, body = fetch(url, auth, {"Range": "bytes=0-499"})
        first = st == 206 and body == a[:500]
        sent_lm = h.get("Last-Modified")
        if root_file:
            b_ns = write_file(root_file, b)
        else:
            st, h = put(url, auth, b)
            b_ns = upload_version_ns(h["ETag"])
        if a_ns // 10**9 == b_ns // 10**9:
            break
    else:
        check(f"{kind}: two versions within one second in 20 tries", False)
        return 1
    check(f"{kind}: the first half of A (206), try {attempt + 1}", first, str(st))
    resumed(kind, url, auth, a, b, sent_lm, a_ns // 10**9, b_ns // 10**9)

    # a date that names the version still resumes
    st, h, body = fetch_dated(url, auth)
    lm = h.get("Last-Modified")
    check(f"{kind}: B gets a Last-Modified once its second is over ({lm})",
          st == 200 and body == b and lm is not None and date_secs(lm) == b_ns // 10**9, str(st))
    st, h, body = fetch(url, auth, {"Range": "bytes=500-", "If-Range": lm or "x"})
    check(f"{kind}: If-Range with B's Last-Modified -> 206 of B", st == 206 and body == b[500:],
          f"got {st}, {len(body)} bytes")

    if root_file:
        # B written within A's second but renamed into place after it, as rsync, editors and
        # deploy tools do: A's date, sent after its second, must not name B
        kind = "operator's file renamed into place"
        tmp = root_file + ".new"
        for attempt in range(20):
            a_ns = write_file(root_file, a)
            b_ns = write_file(tmp, b)
            if a_ns // 10**9 == b_ns // 10**9:
                break
            os.unlink(tmp)
        else:
            check(f"{kind}: two versions within one second in 20 tries", False)
            return 1
        st, h, body = fetch_dated(url, auth)
        sent_lm = h.get("Last-Modified")
        check(f"{kind}: A has its Last-Modified after its second ({sent_lm})",
              st == 200 and body == a and sent_lm is not None, str(st))
        os.rename(tmp, root_file)
        resumed(kind, url, auth, a, b, sent_lm, a_ns // 10**9, b_ns // 10**9)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
