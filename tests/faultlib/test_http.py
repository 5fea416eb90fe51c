"""Unit tests of faultlib.http: the client against a tiny local http.server, in clear and over
TLS (certificates from scripts/tls-certs.sh)."""
import hashlib
import http.server
import os
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest

from faultlib.http import Conn, ConnectFailed, HttpError, basic, request_once, tls_context

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

STORE = {}                  # name -> bytes: what the test server holds
STORE_LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, and 100 Continue for Expect
    connections = 0

    def setup(self):
        if getattr(self.server, "tls", None) is not None:   # the handshake, in this thread
            self.request = self.server.tls.wrap_socket(self.request, server_side=True)
        super().setup()
        with STORE_LOCK:
            Handler.connections += 1

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", close=False, length=True):
        self.send_response(status)
        if length:
            self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        if self.headers.get("Authorization") == basic("ann", "pw:1"):
            return True
        self.reply(401, b"who?")
        return False

    def do_GET(self):
        name = self.path.rsplit("/", 1)[-1]
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n")
        elif self.path == "/until-close":
            self.reply(200, b"all of it", close=True, length=False)
        elif self.path == "/hang-up":
            self.close_connection = True   # no answer at all
        elif self.path == "/slow":
            self.server.release.wait(5)
            self.reply(200, b"late")
        elif self.authorized():
            with STORE_LOCK:
                data = STORE.get(name)
            self.reply(404) if data is None else self.reply(200, data)

    def do_PUT(self):
        if not self.authorized():
            return
        data = self.rfile.read(int(self.headers["Content-Length"]))
        name = self.path.rsplit("/", 1)[-1]
        with STORE_LOCK:
            existed = name in STORE
            STORE[name] = data
        if existed:
            self.reply(204)
        else:
            self.reply(201, hashlib.sha256(data).hexdigest().encode())

    def do_DELETE(self):
        if not self.authorized():
            return
        with STORE_LOCK:
            gone = STORE.pop(self.path.rsplit("/", 1)[-1], None)
        self.reply(404 if gone is None else 204)


def start_server(tls=None):
    """A ThreadingHTTPServer on a free loopback port, served from a daemon thread; over TLS
    if tls (a server-side ssl.SSLContext) is given."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.tls = tls
    srv.daemon_threads = True
    srv.handle_error = lambda *args: None   # a client that gave up: nothing to report
    srv.release = threading.Event()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = start_server()
        cls.port = cls.srv.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.srv.release.set()
        cls.srv.shutdown()
        cls.srv.server_close()

    def setUp(self):
        with STORE_LOCK:
            STORE.clear()
            Handler.connections = 0
        self.auth = ["Authorization: " + basic("ann", "pw:1")]
        self.c = Conn(self.port, timeout=5)

    def tearDown(self):
        self.c.close()

    def test_keepalive_put_get_delete(self):
        r = self.c.request("PUT", "/files/a", self.auth, b"abc" * 1000, expect=True)
        self.assertEqual(r.status, 201)
        self.assertEqual(r.body, hashlib.sha256(b"abc" * 1000).hexdigest().encode())
        r = self.c.request("PUT", "/files/a", self.auth, b"")   # empty body, no Expect
        self.assertEqual(r.status, 204)
        r = self.c.request("PUT", "/files/a", self.auth, b"x" * (1 << 20))
        self.assertEqual(r.status, 204)
        r = self.c.request("GET", "/files/a", self.auth)
        self.assertEqual((r.status, len(r.body)), (200, 1 << 20))
        self.assertEqual(r.headers["content-length"], str(1 << 20))
        self.assertEqual(self.c.request("DELETE", "/files/a", self.auth).status, 204)
        self.assertEqual(self.c.request("GET", "/files/a", self.auth).status, 404)
        self.assertEqual(Handler.connections, 1, "every request on one connection")

    def test_wrong_password(self):
        r = self.c.request("GET", "/files/a", ["Authorization: " + basic("ann", "pw:2")])
        self.assertEqual((r.status, r.body), (401, b"who?"))

    def test_chunked_and_read_to_close(self):
        self.assertEqual(self.c.request("GET", "/chunked").body, b"hello, world")
        r = self.c.request("GET", "/until-close")
        self.assertEqual((r.status, r.body), (200, b"all of it"))
        self.assertIsNone(self.c.sock, "closed after Connection: close")
        self.assertEqual(self.c.request("GET", "/files/none", self.auth).status, 404)

    def test_server_closes(self):
        with self.assertRaisesRegex(HttpError, "closed by the server"):
            self.c.request("GET", "/hang-up")
        self.c.close()
        self.assertEqual(self.c.request("GET", "/files/none", self.auth).status, 404)
        self.assertIsNone(request_once(self.port, "GET", "/hang-up"))

    def test_timeout(self):
        c = Conn(self.port, timeout=0.2)
        with self.assertRaises(socket.timeout):
            c.request("GET", "/slow")
        c.close()
        self.assertIsNone(request_once(self.port, "GET", "/slow", timeout=0.2))

    def test_connect_failed(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()   # nothing listens there now
        with self.assertRaises(ConnectFailed):
            Conn(port, timeout=2).request("GET", "/")
        self.assertIsNone(request_once(port, "GET", "/", timeout=2))

    def test_request_once_and_adopt(self):
        r = request_once(self.port, "PUT", "/files/b", b"bee", auth=("ann", "pw:1"))
        self.assertEqual(r.status, 201)
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"GET /files/b HTTP/1.1\r\nHost: t\r\nAuthorization: " +
                  basic("ann", "pw:1").encode() + b"\r\n\r\n")
        self.assertEqual(Conn.adopt(s).read_response().body, b"bee")
        s.close()


def make_certs(d):
    """scripts/tls-certs.sh D: a throw-away CA and a server certificate for 127.0.0.1."""
    subprocess.run(["bash", os.path.join(TOP, "scripts", "tls-certs.sh"), d], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(d, "ca.pem")


class TlsTest(unittest.TestCase):
    """Conn over HTTPS: kept alive, the certificate checked against the CA given."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.ca = make_certs(os.path.join(cls.tmp.name, "good"))
        cls.other_ca = make_certs(os.path.join(cls.tmp.name, "other"))
        srv_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        srv_ctx.load_cert_chain(os.path.join(cls.tmp.name, "good", "server.pem"),
                                os.path.join(cls.tmp.name, "good", "server.key"))
        cls.srv = start_server(srv_ctx)
        cls.port = cls.srv.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.srv.release.set()
        cls.srv.shutdown()
        cls.srv.server_close()
        cls.tmp.cleanup()

    def setUp(self):
        with STORE_LOCK:
            STORE.clear()
            Handler.connections = 0
        self.auth = ["Authorization: " + basic("ann", "pw:1")]

    def test_keepalive_over_tls(self):
        c = Conn(self.port, timeout=5, tls=tls_context(self.ca))
        try:
            r = c.request("PUT", "/files/t", self.auth, b"tls" * 1000, expect=True)
            self.assertEqual(r.status, 201)
            r = c.request("GET", "/files/t", self.auth)
            self.assertEqual((r.status, r.body), (200, b"tls" * 1000))
            self.assertEqual(c.request("GET", "/chunked").body, b"hello, world")
            self.assertIsInstance(c.sock, ssl.SSLSocket)
            self.assertGreaterEqual(c.sock.version(), "TLSv1.2")
            self.assertEqual(Handler.connections, 1, "every request on one connection")
            with self.assertRaisesRegex(HttpError, "closed by the server"):
                c.request("GET", "/hang-up")
            c.close()
            self.assertEqual(c.request("GET", "/files/t", self.auth).status, 200)
        finally:
            c.close()
        r = request_once(self.port, "GET", "/files/t", auth=("ann", "pw:1"),
                         tls=tls_context(self.ca))
        self.assertEqual((r.status, r.body), (200, b"tls" * 1000))

    def test_certificate_of_another_ca_refused(self):
        c = Conn(self.port, timeout=5, tls=tls_context(self.other_ca))
        with self.assertRaisesRegex(ConnectFailed, "CERTIFICATE_VERIFY_FAILED"):
            c.request("GET", "/chunked")
        self.assertIsNone(c.sock)
        self.assertIsNone(request_once(self.port, "GET", "/chunked",
                                       tls=tls_context(self.other_ca)))

    def test_context_checks_the_name(self):
        ctx = tls_context(self.ca)
        self.assertEqual(ctx.verify_mode, ssl.CERT_REQUIRED)
        self.assertTrue(ctx.check_hostname)
        self.assertEqual(ctx.minimum_version, ssl.TLSVersion.TLSv1_2)

    def test_plain_client_to_tls_server_fails(self):
        c = Conn(self.port, timeout=5)
        with self.assertRaises((OSError, HttpError)):
            c.request("GET", "/chunked")
        c.close()


if __name__ == "__main__":
    unittest.main()
