"""faultlib.faults - which fault an error belongs to.

Two ways, one per kind of fault log:
  Windows    lines "START_MS END_MS KIND TARGET,TARGET" (scripts/soak.sh): an error on a target
             inside a window (with slack) is explained when it is what that fault causes:
             507 while the disk is full, 503 with Retry-After during any other fault.
  attribute  lines "NAME KILL_MS RESTART_MS READY_MS TARGET_MS" (scripts/cluster-failover.sh):
             a failed request belongs to the last kill or restart at or before its end, so one
             in flight at a kill that fails after it counts toward that kill; window() is the
             error window it makes.
"""


class Windows:
    """Fault windows written by soak.sh; which statuses each one explains."""

    SLACK_BEFORE_MS, SLACK_AFTER_MS = 1000, 15000

    def __init__(self, path):
        self.windows = []   # (start_ms, end_ms, kind, {target})
        try:
            with open(path) as f:
                for line in f:
                    p = line.split()
                    if len(p) >= 4:
                        self.windows.append((int(p[0]), int(p[1]), p[2], set(p[3].split(","))))
        except FileNotFoundError:
            pass

    def explains(self, t, target, status, retry_after):
        """The kind of the fault that explains status (at t ms, on target), or None."""
        for start, end, kind, targets in self.windows:
            if target not in targets:
                continue
            if not start - self.SLACK_BEFORE_MS <= t <= end + self.SLACK_AFTER_MS:
                continue
            if kind == "disk-full" and status in (507,):
                return kind
            if kind != "disk-full" and status == 503 and retry_after:
                return kind
        return None


def read_kills(path):
    """The faults of a cluster fault file: [(name, kill_ms, restart_ms, ready_ms, target_ms)]."""
    faults = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                faults.append((p[0], float(p[1]), float(p[2]), float(p[3]), int(p[4])))
    return faults


def attribute(faults, fails):
    """(failures before the first kill, [(after the kill, after the restart)] per fault): each
    failure (a row whose [1] is its end, ms) goes to the last kill or restart at or before
    its end."""
    before = []
    periods = [([], []) for _ in faults]
    for r in fails:
        end = r[1]
        for i in range(len(faults) - 1, -1, -1):
            kill, restart = faults[i][1], faults[i][2]
            if end >= restart:
                periods[i][1].append(r)
                break
            if end >= kill:
                periods[i][0].append(r)
                break
        else:
            before.append(r)
    return before, periods


def window(fails, t_event):
    """ms from the first failed request's start (t_event if it started before) to the last one's
    end (0: none failed); rows are (start_ms, end_ms, ...)."""
    if not fails:
        return 0
    return int(round(max(r[1] for r in fails) - max(t_event, min(r[0] for r in fails))))
