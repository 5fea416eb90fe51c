"""faultlib.ledger - what the clients were told was written, and the read-back that checks it.

The Ledger keeps, per name (a file, an account), the last acknowledged version and the
versions attempted after it whose outcome is unknown (no answer, or an answer that does not
say): the server may hold any of them. A version is a Version (sha256, size, serial) or
ABSENT (the name does not exist: never written, deleted). One name is written by one client
thread only, so its order is known; the ledger itself is not locked.

read_back() asks every item from a few threads and judge() says what an answer means against
a name's entry; the caller counts and prints (its last line "lost = N", or its own summary).
"""
import hashlib
import threading
import time
from typing import NamedTuple

ABSENT = None   # the version of a name that does not exist


class Version(NamedTuple):
    sha: str        # sha256 hex of the bytes
    size: int       # bytes
    serial: int     # the writer's number for it (0: none)


def version_of(data, serial=0):
    return Version(hashlib.sha256(data).hexdigest(), len(data), serial)


def short(v):
    """A version in a log line: the first 12 hex digits of its sha256, or DELETED."""
    return "DELETED" if v is ABSENT else v.sha[:12]


class Entry:
    __slots__ = ("owner", "acked", "maybe", "history")

    def __init__(self, owner=None):
        self.owner = owner      # credentials to read the name back with
        self.acked = ABSENT     # the last acknowledged version (never written == absent)
        self.maybe = []         # versions attempted since, outcome unknown (in order)
        self.history = set()    # sha256 (or ABSENT) of every version ever attempted

    def acceptable(self):
        """The versions the server may hold: the acknowledged one first."""
        return [self.acked] + self.maybe

    def allows(self, sha):
        """Whether a body of this sha256 (ABSENT: a 404) is one the server may hold."""
        return any((v is ABSENT) if sha is ABSENT else (v is not ABSENT and v.sha == sha)
                   for v in self.acceptable())


class Ledger:
    def __init__(self):
        self.entries = {}   # name -> Entry

    def entry(self, name, owner=None):
        """name's entry, made (never written) if it has none."""
        e = self.entries.get(name)
        if e is None:
            e = self.entries[name] = Entry(owner)
        return e

    def attempt(self, name, version):
        """A write of version (ABSENT: a delete) is about to be sent: until its answer it may
        or may not land. Returns what to hand to refused()."""
        e = self.entries[name]
        before = list(e.maybe)
        e.history.add(ABSENT if version is ABSENT else version.sha)
        e.maybe.append(version)
        return before

    def acknowledged(self, name, version):
        """The write of version was acknowledged (or the name was seen in that state)."""
        e = self.entries[name]
        e.acked, e.maybe = version, []

    def refused(self, name, before):
        """The write whose attempt() returned before was definitely not done."""
        self.entries[name].maybe = before

    def judge(self, name, status, body):
        """ok / lost / corrupt / other, for a GET answer against name's entry: a 404 or bytes
        the ledger does not allow are lost when that state was once written (an older
        version), corrupt when never (bytes nobody sent); other for any other status."""
        e = self.entries[name]
        if status == 404:
            return "ok" if e.allows(ABSENT) else "lost"
        if status != 200:
            return "other"
        sha = hashlib.sha256(body).hexdigest()
        if e.allows(sha):
            return "ok"
        return "lost" if sha in e.history else "corrupt"

    # the journal on disk: name -> {"owner", "pw", "allowed": [[serial, size, sha] or null],
    # "acked": bool}; "allowed" lists the acknowledged version first
    def to_json(self):
        out = {}
        for name, e in self.entries.items():
            out[name] = {"owner": e.owner[0], "pw": e.owner[1], "acked": not e.maybe,
                         "allowed": [None if v is ABSENT else [v.serial, v.size, v.sha]
                                     for v in e.acceptable()]}
        return out

    @classmethod
    def from_json(cls, obj):
        led = cls()
        for name, j in obj.items():
            e = led.entry(name, (j["owner"], j["pw"]))
            vs = [ABSENT if s is None else Version(s[2], s[1], s[0]) for s in j["allowed"]]
            e.acked, e.maybe = vs[0], vs[1:]
            e.history = {ABSENT if v is ABSENT else v.sha for v in vs}
        return led


def ask(fn, final, step, deadline_s=None, tries=None):
    """fn() again (after step s) until final(result), for at most deadline_s seconds or tries
    times; returns the last result."""
    deadline = None if deadline_s is None else time.time() + deadline_s
    n = 0
    while True:
        r = fn()
        n += 1
        if final(r) or (tries is not None and n >= tries) or \
                (deadline is not None and time.time() > deadline):
            return r
        time.sleep(step)


def read_back(items, check, threads=4, join_timeout=None, done=None):
    """check(item) for every item, from `threads` threads taking the next item as they are
    free; returns the results in the order of items (None for an item not checked when the
    threads were given up on after join_timeout s each). done(), if given, runs in each
    thread at its end (to close its connections)."""
    results = [None] * len(items)
    idx = iter(range(len(items)))
    lock = threading.Lock()

    def worker():
        try:
            while True:
                with lock:
                    i = next(idx, None)
                if i is None:
                    return
                results[i] = check(items[i])
        finally:
            if done is not None:
                done()
    ts = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(join_timeout)
    return results


def print_lost(n):
    """The line the scripts and tests grep for."""
    print("lost = %d" % n)
