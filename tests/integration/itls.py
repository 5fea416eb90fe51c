"""itls.py - the integration tests' sockets to server1, plain or TLS as the run asks.

With ITEST_TLS=1 in the environment (tests/integration/lib.sh sets it for a run over HTTPS,
with ITEST_TLS_CA naming the throw-away CA that signed server1's certificate), connect()
returns a TLS socket that has verified server1's certificate; otherwise a plain one. The test
clients (s1client.py, rawput.py, rangecheck.py, revoke.py and the tests' inline Python) open
their connections here, so that none of them stays on plain HTTP when the run is over HTTPS.

  itls.py probe PORT METRICS_PORT
      over TLS (whatever ITEST_TLS says), GET /healthz with Connection: close and read to the
      end (the server has closed the connection when it returns); then, over plain HTTP, GET
      /metrics from the --metrics-listen port METRICS_PORT; print "TLSv1.x handshakes=N"
      (server1_tls_handshakes_total, this one included). Exit 1 if the certificate did not
      verify, no HTTP answer came over TLS or server1 counted no handshake.
"""
import os
import re
import socket
import ssl
import sys

_CTX = None


def enabled():
    """Whether this run speaks TLS to server1."""
    return os.environ.get("ITEST_TLS") == "1"


def context():
    """The client context: the run's CA only, the name checked (127.0.0.1 is in the SAN)."""
    global _CTX
    if _CTX is None:
        ca = os.environ.get("ITEST_TLS_CA")
        if not ca:
            raise SystemExit("itls: ITEST_TLS=1 but ITEST_TLS_CA is not set")
        _CTX = ssl.create_default_context(cafile=ca)
    return _CTX


def wrap(sock, host="127.0.0.1"):
    """sock itself without TLS; else sock after a completed handshake (raises on failure)."""
    if not enabled():
        return sock
    return context().wrap_socket(sock, server_hostname=host)


def connect(port, timeout=10.0, host="127.0.0.1", rcvbuf=None, nodelay=True):
    """A connection to host:port (TLS under ITEST_TLS=1). rcvbuf: SO_RCVBUF, set before the
    connect (so that the kernel does not grow it)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect((host, port))
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        return wrap(s, host)
    except BaseException:
        s.close()
        raise


def recv_within(sock, timeout, n=65536):
    """What sock gives within timeout seconds (0: only what is there now): bytes, b"" at the
    end, None if nothing came; raises OSError on a reset. Not select(): over TLS the kernel
    holds records that carry no data (TLS 1.3 session tickets), which select() takes for an
    answer; recv() takes them in and goes on waiting."""
    old = sock.gettimeout()
    try:
        if timeout <= 0:
            sock.setblocking(False)
        else:
            sock.settimeout(timeout)
        return sock.recv(n)
    except (BlockingIOError, ssl.SSLWantReadError, socket.timeout):
        return None
    finally:
        sock.settimeout(old)


def half_close(sock):
    """Tell the server this side sends no more; reading goes on. Over TLS the TCP write side
    is shut without a close_notify (Python's SSLSocket cannot send one and keep reading)."""
    socket.socket.shutdown(sock, socket.SHUT_WR)


def _get_to_end(s, path):
    s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def probe(port, metrics_port):
    os.environ["ITEST_TLS"] = "1"
    try:
        s = connect(port)
        answer = _get_to_end(s, b"/healthz")
        version = s.version()
        s.close()
    except OSError as e:
        print("no TLS answer: %r" % e)
        return 1
    try:
        m = socket.create_connection(("127.0.0.1", metrics_port), timeout=10)
        data = _get_to_end(m, b"/metrics")
        m.close()
    except OSError as e:
        print("no answer from the metrics port: %r" % e)
        return 1
    m = re.search(rb"^server1_tls_handshakes_total (\d+)", data, re.M)
    n = int(m.group(1)) if m else 0
    print("%s handshakes=%d" % (version, n))
    return 0 if answer.startswith(b"HTTP/1.1 ") and n >= 1 else 1


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "probe":
        sys.exit("usage: itls.py probe PORT METRICS_PORT")
    sys.exit(probe(int(sys.argv[2]), int(sys.argv[3])))
