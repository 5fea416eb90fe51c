#!/usr/bin/env python3
"""rangecheck.py - Range and conditional GETs of one file with Python's urllib, against the
local copy of its bytes; every 200 and 206 must also carry the headers of a file's answer
(Content-Type TYPE, X-Content-Type-Options: nosniff, a current Date, Accept-Ranges: bytes, and
the ETag and Last-Modified of the first answer).

  rangecheck.py URL USER PASS FILE [--type TYPE]   (TYPE: application/octet-stream)

Prints one line per case ("ok - ..." or "FAIL - ...") and exits 1 if any failed.
"""
import base64
import email.utils
import sys
import time
import urllib.error
import urllib.request


def fetch(url, auth, headers=None, method="GET"):
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}))
    req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def main():
    url, user, pw, path = sys.argv[1:5]
    ctype = "application/octet-stream"
    if sys.argv[5:6] == ["--type"] and len(sys.argv) == 7:
        ctype = sys.argv[6]
    elif len(sys.argv) != 5:
        sys.exit(__doc__)
    auth = "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()
    data = open(path, "rb").read()
    n = len(data)
    fails = 0

    def check(desc, cond, detail=""):
        nonlocal fails
        if cond:
            print(f"ok - {desc}")
        else:
            fails += 1
            print(f"FAIL - {desc} {detail}")

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

    st, h, body = fetch(url, auth)
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
        check("If-Range: its Last-Modified -> 206", st == 206 and body == data[1:2],
              str(st))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
