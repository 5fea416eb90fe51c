"""faultlib - the pieces the fault-injection load tests share (Python 3.11 stdlib only).

Profiles on it: tests/crash/crash.py (SIGKILLs in one stack), scripts/soakload.py (the soak's
mixed load under faults), scripts/clusterload.py (load on a cluster under failover); and
tests/integration/s1client.py uses its client.

  faultlib.http    Conn: one keep-alive HTTP/1.1 connection (Basic auth, Expect: 100-continue,
                   timeouts, status + headers + body, the server closing), over HTTPS with
                   tls_context(CAFILE); request_once().
  faultlib.ledger  Ledger: per name, the last acknowledged version and the later writes whose
                   outcome is unknown; judge() a read against it; read_back() from threads;
                   print_lost() prints the "lost = N" line the scripts grep.
  faultlib.faults  which fault window an error belongs to (soak windows; cluster kills).
  faultlib.stack   a throw-away stack (scripts/stack.sh) whose processes are SIGKILLed and
                   restarted.

A profile finds the package from its own place:
    sys.path.insert(0, os.path.join(TOP, "tests"))
    from faultlib.http import Conn, basic
    from faultlib.ledger import Ledger, version_of, read_back, print_lost

Its unit tests: `make faultlib-test` (python3 -m unittest discover -s tests/faultlib).
"""
