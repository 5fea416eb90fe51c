#!/usr/bin/env python3
"""httprec.py PORTFILE LOG: an HTTP/1.1 server on a free loopback port (written to PORTFILE)
that appends each request to LOG as one JSON line [method, path, X-Test, Host, Authorization,
body] and answers: /missing* 404, /chunked* 200 with a chunked body (an extension and a
trailer), /close* 200 with Connection: close, anything else 200 with "ok:" and the body."""
import http.server
import json
import os
import sys
import threading

LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_any(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        rec = [self.command, self.path, self.headers.get("X-Test"), self.headers.get("Host"),
               self.headers.get("Authorization"), body.decode("latin1")]
        with LOCK, open(sys.argv[2], "a") as f:
            f.write(json.dumps(rec) + "\n")
        data = b"ok:" + body
        self.send_response(404 if self.path.startswith("/missing") else 200)
        if self.path.startswith("/chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"3\r\nabc\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
            return
        if self.path.startswith("/close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = do_any

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
