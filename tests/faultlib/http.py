"""faultlib.http - the one HTTP/1.1 client of the fault-injection tests.

A Conn is one keep-alive connection: requests one at a time, Basic auth, Expect: 100-continue,
a timeout on every socket operation; an answer is a Resp (status, headers with lower-case
names, body). Over HTTPS when given an ssl.SSLContext (tls_context(CAFILE): TLS 1.2 or later,
the server's certificate verified against CAFILE and its name or address checked, ALPN
http/1.1). The server may close the connection at any time: a read that finds it closed
raises HttpError("closed by the server"), a failed connect or TLS handshake raises
ConnectFailed (an OSError: nothing of the request was sent), and the next request opens a new
connection. request_once() is one request on a fresh
connection that turns every failure into None ("no answer": the outcome is unknown).

Not thread-safe: one Conn per thread.
"""
import base64
import socket
import ssl
from typing import NamedTuple


class HttpError(Exception):
    """The answer is malformed or cut short (the server closed the connection)."""


class ConnectFailed(OSError):
    """The TCP connection could not be made (refused, unreachable, timed out)."""


class Resp(NamedTuple):
    status: int
    headers: dict   # lower-case name -> value (the last one if repeated)
    body: bytes


def basic(user, pw):
    """The value of an Authorization header for Basic USER:PW."""
    return "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def tls_context(cafile):
    """A client context for HTTPS: TLS 1.2 or later, the server's certificate must chain to
    the CAs of cafile (PEM) and name the host connected to, ALPN http/1.1."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)     # verifies, and checks the host name
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class Conn:
    """One keep-alive HTTP/1.1 connection to host:port (default 127.0.0.1); HTTPS if tls (an
    ssl.SSLContext, e.g. tls_context(CAFILE)) is given, the certificate checked for host."""

    HEAD_MAX = 65536    # a response head longer than this is malformed

    def __init__(self, port, timeout=20, host="127.0.0.1", host_header="soak", tls=None):
        self.host, self.port, self.timeout = host, port, timeout
        self.host_header = host_header
        self.tls = tls
        self.sock, self.buf = None, b""

    @classmethod
    def adopt(cls, sock):
        """A Conn over an already connected socket (its timeout is kept)."""
        c = cls(sock.getpeername()[1], sock.gettimeout(), sock.getpeername()[0])
        c.sock = sock
        return c

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock, self.buf = None, b""

    def open(self):
        """The socket, connected if it was not; raises ConnectFailed."""
        if self.sock is None:
            try:
                s = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except OSError as e:
                raise ConnectFailed(e) from e
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                try:    # the handshake (and the certificate's check) happens here
                    s = self.tls.wrap_socket(s, server_hostname=self.host)
                except OSError as e:    # ssl.SSLError and a refused certificate among them
                    s.close()
                    raise ConnectFailed(e) from e
            self.sock, self.buf = s, b""
        return self.sock

    def _fill(self):
        chunk = self.sock.recv(262144)
        if not chunk:
            raise HttpError("closed by the server")
        self.buf += chunk

    def _take(self, n):
        """The next n bytes; received in pieces, never copied whole more than once."""
        got = bytearray()
        while len(got) < n:
            if not self.buf:
                self._fill()
            take = self.buf[: n - len(got)]
            self.buf = self.buf[len(take):]
            got += take
        return bytes(got)

    def _line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > self.HEAD_MAX:
                raise HttpError("response line too long")
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_head(self):
        """(status, headers) of the next response; raises OSError / HttpError."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > self.HEAD_MAX:
                raise HttpError("response head too long")
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise HttpError("bad status line %r" % lines[0][:60])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return int(parts[1]), hdrs

    def read_body(self, hdrs, head_only=False, hasher=None, limit=None, status=200):
        """The body that hdrs announce: chunked, Content-Length, or up to the close when the
        server says Connection: close and gives no length; none for a HEAD (head_only), a 1xx,
        204 or 304. limit: read at most that many bytes of a Content-Length body, then stop.
        hasher: also fed the body."""
        if head_only or status < 200 or status in (204, 304):
            got = b""
        elif "chunked" in hdrs.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int(self._line().split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while self._line():  # trailer fields, up to the empty line
                        pass
                    break
                parts.append(self._take(size))
                self._take(2)
            got = b"".join(parts)
        elif "content-length" in hdrs:
            n = int(hdrs["content-length"])
            got = self._take(n if limit is None else min(n, limit))
        elif hdrs.get("connection", "").lower() == "close":
            while True:
                try:
                    self._fill()
                except HttpError:
                    break
            got, self.buf = self.buf, b""
        else:
            got = b""
        if hasher is not None:
            hasher.update(got)
        return got

    def read_response(self, head_only=False):
        """The next response on the connection, as a Resp."""
        st, hd = self.read_head()
        return Resp(st, hd, self.read_body(hd, head_only=head_only, status=st))

    def request(self, method, path, headers=(), body=b"", head_only=False, expect=False):
        """Sends one request (headers: "Name: value" strings), returns a Resp. expect: send
        the body only after 100 Continue. Raises OSError (ConnectFailed when the connection
        could not be made) / HttpError when the connection fails; closes it when the server
        says Connection: close."""
        s = self.open()
        h = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % self.host_header]
        h += list(headers)
        if body or method in ("PUT", "POST"):
            h.append("Content-Length: %d" % len(body))
        if expect and body:
            h.append("Expect: 100-continue")
        s.sendall(("\r\n".join(h) + "\r\n\r\n").encode())
        if body and not expect:
            s.sendall(body)
        st, hd = self.read_head()
        if st == 100:
            s.sendall(body)
            st, hd = self.read_head()
        elif expect and body:
            # refused before the body: the server closes this connection
            data = self.read_body(hd, head_only=head_only, status=st)
            self.close()
            return Resp(st, hd, data)
        data = self.read_body(hd, head_only=head_only or method == "HEAD", status=st)
        if hd.get("connection", "").lower() == "close":
            self.close()
        return Resp(st, hd, data)


def request_once(port, method, path, body=None, auth=None, ctype=None, timeout=20.0,
                 host="127.0.0.1", tls=None):
    """One request on a fresh connection (Connection: close). auth: (user, password) for Basic;
    tls: an ssl.SSLContext for HTTPS. Returns a Resp, or None when the connection failed or
    timed out (outcome unknown)."""
    headers = ["Connection: close"]
    if auth is not None:
        headers.append("Authorization: " + basic(*auth))
    if ctype is not None:
        headers.append("Content-Type: " + ctype)
    c = Conn(port, timeout, host, host_header="%s:%d" % (host, port), tls=tls)
    try:
        return c.request(method, path, headers, body or b"")
    except (OSError, HttpError):
        return None
    finally:
        c.close()
