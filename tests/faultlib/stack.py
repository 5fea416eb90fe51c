"""faultlib.stack - a throw-away stack (scripts/stack.sh) whose processes are SIGKILLed and
started again: server1, server2 (the whole process group, or one pre-forked worker), the
Redis or MariaDB server.

DESIGN: the caller (tests/crash/crash.py) makes its process a child subreaper
(PR_SET_CHILD_SUBREAPER), so the servers stack.sh started become its children when the
script's shell exits, and their exit status can be read (wait_exit). Stack is used from the
caller's main thread only; reap_all() reaps children nobody else waits for, between
subprocess calls. Every wait is bounded; Fatal means the stack could not be (re)started.
"""
import os
import random
import re
import signal
import subprocess
import time

from faultlib.http import request_once

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Fatal(Exception):
    """The stack could not be (re)started."""


def proc_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def children_of(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(d))
    return kids


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def wait_until(timeout, pred, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


class Stack:
    """The stack under dir: started by scripts/stack.sh; server1/server2 restarted by us (same
    argv, same port). This process is a child subreaper, so the servers stack.sh started become
    our children when its shell exits, and their exit status can be read."""

    def __init__(self, args, root_dir, log):
        """args: bin_dir, backend, mode, server1_flag (a list or None); log(msg) says what
        happens (stderr)."""
        self.args = args
        self.log = log
        self.dir = root_dir
        self.popens = {}          # pid -> Popen of the servers we (re)started
        self.exit_status = {}     # pid -> status reaped by us
        self.generation = {"server1": 0, "server2": 0}
        self.port = None

    # -- start / stop --
    def start(self):
        flags = list(self.args.server1_flag or [])
        help_text = subprocess.run([os.path.join(self.args.bin_dir, "server1"), "--help"],
                                   capture_output=True, text=True, timeout=10).stdout
        if "--max-upload" in help_text and not any(f.startswith("--max-upload") for f in flags):
            flags += ["--max-upload", "4m"]
        # the load creates accounts from 127.0.0.1 far faster than the per-client limits allow:
        # they are off here (tests/integration/test_limits.sh tests them); later flags win
        if "--signup-limit" in help_text:
            flags = ["--login-fail-limit", "0", "--login-fail-addr-limit", "0",
                     "--signup-limit", "0", "--max-conns-per-ip", "0"] + flags
        cmd = [os.path.join(TOP, "scripts", "stack.sh"), "start", self.dir, "--backend",
               self.args.backend, "--mode", self.args.mode, "--hash-cost", "min", "--port", "0",
               "--"] + flags
        self.log("starting: %s" % " ".join(cmd))
        env = dict(os.environ, BIN_DIR=self.args.bin_dir)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        if r.returncode != 0:
            raise Fatal("stack.sh start failed: %s" % r.stderr.strip()[-600:])
        url = r.stdout.strip().splitlines()[-1]
        self.port = int(url.rsplit(":", 1)[1])
        self.log("stack up: %s (%s, %s); server1 flags: %s" % (
            url, self.args.backend, self.args.mode, " ".join(flags) or "-"))

    def stop(self):
        env = dict(os.environ, BIN_DIR=self.args.bin_dir)
        try:
            subprocess.run([os.path.join(TOP, "scripts", "stack.sh"), "stop", self.dir],
                           capture_output=True, timeout=120, env=env)
        except (OSError, subprocess.SubprocessError) as e:
            self.log("stack.sh stop: %s" % e)
        for pid, p in list(self.popens.items()):
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        self.reap_all()

    def reap_all(self):
        """Reap exited children nobody waits for (the servers stack.sh started, dead
        databases). Only called from the main thread between subprocess calls."""
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.exit_status[pid] = st
            if pid in self.popens:
                self.popens[pid].returncode = os.waitstatus_to_exitcode(st)

    # -- pids --
    def pid(self, name):
        return read_pid(os.path.join(self.dir, name + ".pid"))

    def db_pid(self):
        if self.args.backend == "redis":
            return read_pid(os.path.join(self.dir, "redis", "redis.pid"))
        return read_pid(os.path.join(self.dir, "mysql", "mysqld.pid"))

    def wait_exit(self, pid, timeout):
        """Wait for pid to exit; return its exit code (negative: signal), or None if it did
        not exit in time or its status cannot be read (not our child)."""
        p = self.popens.get(pid)
        if p is not None:
            try:
                return p.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pid in self.exit_status:
                return os.waitstatus_to_exitcode(self.exit_status[pid])
            try:
                got, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                if not proc_alive(pid):
                    return None
                got = 0
            if got == pid:
                self.exit_status[pid] = st
                return os.waitstatus_to_exitcode(st)
            time.sleep(0.05)
        return None

    # -- kill and restart --
    def _argv(self, pid):
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]

    def _log_port(self, name):
        """The port of the newest 'listening on' line in name's logs."""
        port = None
        for lf in self._logs(name):
            with open(lf, errors="replace") as f:
                for line in f:
                    m = re.search(r"listening on \S*:(\d+)", line)
                    if m:
                        port = int(m.group(1))
        return port

    def _logs(self, name):
        out = [os.path.join(self.dir, name + ".log")]
        out += [os.path.join(self.dir, "%s.%d.log" % (name, g))
                for g in range(1, self.generation[name] + 1)]
        return [p for p in out if os.path.exists(p)]

    def capture(self, name):
        """What it takes to start name again: argv with the bound port fixed."""
        pid = self.pid(name)
        if pid is None or not proc_alive(pid):
            raise Fatal("%s is not running (pid file %s)" % (name, pid))
        argv = self._argv(pid)
        port = self._log_port(name)
        if port is None:
            raise Fatal("%s: no 'listening on' line in its log" % name)
        if "--port" in argv:
            argv[argv.index("--port") + 1] = str(port)
        else:
            argv += ["--port", str(port)]
        return pid, argv

    def start_server(self, name, argv):
        self.generation[name] += 1
        logf = os.path.join(self.dir, "%s.%d.log" % (name, self.generation[name]))
        for attempt in range(20):
            with open(logf, "ab") as lf:
                p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
            self.popens[p.pid] = p
            with open(os.path.join(self.dir, name + ".pid"), "w") as f:
                f.write("%d\n" % p.pid)

            def up():
                with open(logf, errors="replace") as f:
                    return "listening on " in f.read() or p.poll() is not None
            wait_until(15, up)
            if p.poll() is None:
                return p.pid
            # most likely the port is still held by the dying process: try again shortly
            time.sleep(0.25)
        raise Fatal("%s did not restart; see %s" % (name, logf))

    def kill_server(self, name):
        """SIGKILL name's whole process group (server2's pre-forked workers too); returns the
        argv to start it again."""
        pid, argv = self.capture(name)
        try:
            os.killpg(pid, signal.SIGKILL)  # started with setsid: the group is the server
        except ProcessLookupError:
            os.kill(pid, signal.SIGKILL)    # not a group leader after all
        self.wait_exit(pid, 10)
        # pre-forked children get SIGTERM from the kernel (PDEATHSIG): let them go
        wait_until(10, lambda: not any(proc_alive(k) for k in children_of(pid)))
        return argv

    def kill_and_restart(self, victim):
        if victim in ("server1", "server2"):
            argv = self.kill_server(victim)
            self.start_server(victim, argv)
        elif victim == "server2-worker":
            parent = self.pid("server2")
            kids = [k for k in children_of(parent) if proc_alive(k)] if parent else []
            if not kids:
                raise Fatal("server2 has no worker process to kill")
            os.kill(random.choice(kids), signal.SIGKILL)
            # the parent forks a replacement (after at most its restart delay)
        elif victim == "db":
            pid = self.db_pid()
            if pid is None or not proc_alive(pid):
                raise Fatal("the %s server is not running" % self.args.backend)
            os.kill(pid, signal.SIGKILL)
            self.wait_exit(pid, 10)
            wait_until(10, lambda: not proc_alive(pid))
            kind = self.args.backend
            sub = os.path.join(self.dir, kind)
            r = subprocess.run([os.path.join(TOP, "scripts", kind + ".sh"), "restart", sub],
                               capture_output=True, text=True, timeout=120)
            self.reap_all()
            if r.returncode != 0:
                raise Fatal("%s.sh restart failed: %s" % (kind, r.stderr.strip()[-400:]))
        else:
            raise ValueError(victim)

    def healthy(self, account, timeout):
        """/healthz 200 and an authenticated GET answered (not 503) within timeout s."""
        def ok():
            r = request_once(self.port, "GET", "/healthz", timeout=2)
            if r is None or r.status != 200:
                return False
            if account is None:
                return True
            r = request_once(self.port, "GET", "/files/hello.txt", auth=account, timeout=5)
            return r is not None and r.status == 200
        return wait_until(timeout, ok, step=0.1)

