"""Unit tests of faultlib.ledger and faultlib.faults: what a read-back of acknowledged writes
reports, a deliberately lost write among them; which fault an error is counted against."""
import contextlib
import io
import json
import os
import tempfile
import unittest

from faultlib import test_http
from faultlib.faults import Windows, attribute, window
from faultlib.http import Conn, basic, request_once
from faultlib.ledger import ABSENT, Ledger, ask, print_lost, read_back, version_of

OWNER = ("ann", "pw:1")


class LedgerTest(unittest.TestCase):
    def setUp(self):
        self.led = Ledger()
        self.led.entry("f", OWNER)
        self.v1, self.v2 = version_of(b"one", 1), version_of(b"two", 2)

    def test_states(self):
        led, v1, v2 = self.led, self.v1, self.v2
        self.assertEqual(led.judge("f", 404, b""), "ok", "never written: absent")
        led.attempt("f", v1)
        led.acknowledged("f", v1)
        self.assertEqual(led.judge("f", 200, b"one"), "ok")
        self.assertEqual(led.judge("f", 404, b""), "lost")
        before = led.attempt("f", v2)          # no answer: either may be there
        self.assertEqual(led.judge("f", 200, b"one"), "ok")
        self.assertEqual(led.judge("f", 200, b"two"), "ok")
        led.refused("f", before)                # a definite no: only v1
        self.assertEqual(led.judge("f", 200, b"two"), "lost", "written once, not now")
        self.assertEqual(led.judge("f", 200, b"never sent"), "corrupt")
        self.assertEqual(led.judge("f", 503, b""), "other")
        led.attempt("f", ABSENT)
        led.acknowledged("f", ABSENT)
        self.assertEqual(led.judge("f", 404, b""), "ok")
        self.assertEqual(led.judge("f", 200, b"one"), "lost")

    def test_json_round_trip(self):
        self.led.attempt("f", self.v1)
        self.led.acknowledged("f", self.v1)
        self.led.attempt("f", self.v2)
        j = json.loads(json.dumps(self.led.to_json()))
        self.assertEqual(j["f"], {"owner": "ann", "pw": "pw:1", "acked": False,
                                  "allowed": [[1, 3, self.v1.sha], [2, 3, self.v2.sha]]})
        back = Ledger.from_json(j)
        self.assertEqual(back.entries["f"].acceptable(), [self.v1, self.v2])
        self.assertEqual(back.entries["f"].owner, OWNER)

    def test_ask_bounded(self):
        calls = []
        r = ask(lambda: calls.append(1) or len(calls), lambda n: n == 99, 0, tries=3)
        self.assertEqual((r, len(calls)), (3, 3))
        self.assertEqual(ask(lambda: 7, lambda n: n == 7, 0, deadline_s=5), 7)


class ReadBackTest(unittest.TestCase):
    """Writes acknowledged by a real HTTP server, one deleted behind the client's back: the
    read-back counts exactly that one as lost."""

    def setUp(self):
        self.srv = test_http.start_server()
        self.port = self.srv.server_address[1]

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()

    def test_lost_write_counted(self):
        led = Ledger()
        c = Conn(self.port, timeout=5)
        auth = ["Authorization: " + basic(*OWNER)]
        for i in range(6):
            name = "n%d" % i
            led.entry(name, OWNER)
            data = os.urandom(100 * i)
            v = version_of(data, 1)
            before = led.attempt(name, v)
            st = c.request("PUT", "/files/" + name, auth, data).status
            if st in (201, 204):
                led.acknowledged(name, v)
            else:
                led.refused(name, before)
        c.close()
        with test_http.STORE_LOCK:
            del test_http.STORE["n3"]           # the server loses an acknowledged write

        def check(name):
            return request_once(self.port, "GET", "/files/" + name, auth=OWNER, timeout=5)
        names = sorted(led.entries)
        results = read_back(names, check, threads=3)
        verdicts = [led.judge(n, r.status, r.body) for n, r in zip(names, results)]
        self.assertEqual(verdicts.count("ok"), 5)
        self.assertEqual([n for n, v in zip(names, verdicts) if v == "lost"], ["n3"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            print_lost(verdicts.count("lost"))
        self.assertEqual(out.getvalue(), "lost = 1\n")


class FaultsTest(unittest.TestCase):
    def test_windows(self):
        with tempfile.NamedTemporaryFile("w", suffix=".faults") as f:
            f.write("10000 20000 restart-redis r\n30000 40000 disk-full m,r\n")
            f.flush()
            w = Windows(f.name)
        self.assertEqual(w.explains(15000, "r", 503, True), "restart-redis")
        self.assertIsNone(w.explains(15000, "r", 503, False), "503 without Retry-After")
        self.assertIsNone(w.explains(15000, "m", 503, True), "another target")
        self.assertEqual(w.explains(9000, "r", 503, True), "restart-redis", "slack before")
        self.assertIsNone(w.explains(8000, "r", 503, True), "before the slack")
        self.assertEqual(w.explains(35000, "m", 507, False), "disk-full")
        self.assertIsNone(w.explains(35000, "m", 0, False), "a failed connection")
        self.assertEqual(Windows("/nonexistent/faults").windows, [])

    def test_attribute(self):
        faults = [("server1", 10000.0, 13000.0, 13100.0, 2000)]
        fails = [(5000.0, 5010.0), (9990.0, 10050.0), (12990.0, 13200.0)]
        before, periods = attribute(faults, fails)
        self.assertEqual(before, [(5000.0, 5010.0)])
        self.assertEqual(periods[0], ([(9990.0, 10050.0)], [(12990.0, 13200.0)]))
        self.assertEqual(window(periods[0][0], 10000.0), 50, "in flight at the kill")
        self.assertEqual(window([], 10000.0), 0)


if __name__ == "__main__":
    unittest.main()
