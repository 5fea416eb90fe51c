#!/usr/bin/env python3
"""The "## Findings" section of a reproduction run's summary.md, in Markdown on stdout.

One paragraph per claim of the 2017 study, in its order: multi-process -> multi-threaded
server2, prefetching files, MySQL -> Redis, and the trend with file size; then a line on
`ours`. Each says what the study saw (its ratio, from results/study-2017.csv), what this run
shows (X max before -> after and the ratio), the bottleneck at X max before and after, and the
measured demands that explain it (CPU per request of each process = its cores / X max, the
disk's U, server2's pool of workers busy and blocked). Every figure comes from the run's
table.csv and configs.tsv, or is the study's and says so.

DESIGN: table.csv (scripts/summarize.sh) is the only source of this run's figures, so that every
number here can be checked against it; its `knee` column says whether a sweep saturated. A
comparison "cannot tell" when either sweep's knee was not reached, when the machine was busy
(busy_before_pct >= 15% before either configuration, or other_cpu_pct >= 30% at X max), and a
claim whose configurations or loads are absent is skipped with one line. Standard library only.

    scripts/findings.py [--study CSV] RESULTS_DIR
"""

import argparse
import csv
import os
import sys
import textwrap

BUSY_BEFORE_PCT = 15  # busy_before_pct from which a configuration's figures are suspect
OTHER_CPU_PCT = 30  # other_cpu_pct at X max from which a sweep's figures are suspect
GAIN = 1.15  # a ratio from 1.15 up is a gain, down to 1 / 1.15 a loss, between them "no change"
PLATEAU = 0.7  # bytes/s within 70% of the largest from some size on: they have levelled off
WIDTH = 100

SIZES = {"get-1KB": 1 << 10, "get-10KB": 10 << 10, "get-100KB": 100 << 10,
         "get-1MB": 1 << 20, "get-10MB": 10 << 20, "get-100MB": 100 << 20}
GETS = list(SIZES)
CLAIMS = [
    ("Multi-process → multi-threaded server2", "mp-noprefetch-mysql", "mt-noprefetch-mysql",
     ["new", "get-1KB", "get-10KB"]),
    ("Prefetching files into memory", "mt-noprefetch-mysql", "mt-prefetch-mysql", GETS),
    ("MySQL → Redis", "mt-prefetch-mysql", "mt-prefetch-redis", ["new", "get-1KB", "get-10KB"]),
]


def num(row, col):
    """The float in row[col], or None when the column is absent or empty."""
    v = row.get(col, "") if row else ""
    try:
        return float(v)
    except ValueError:
        return None


def fx(x):
    """X as the summary prints it: integers from 1000 up, 3 significant digits below."""
    return "–" if x is None else f"{x:.0f}" if x >= 1000 else f"{x:.3g}"


def pct(u):
    return f"{100 * u:.0f}%"


def label(load):
    return "new account" if load == "new" else load.replace("-", " ")


def read_csv(path, delim=","):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter=delim))


def short(row):
    """The busiest station at X max, hardware or software, with its U: "cpu 72%" or
    "s2-proc 99% busy (2.0 of 2)"."""
    u, sh = num(row, "u_bottleneck") or 0, num(row, "sw_share")
    if sh is not None and sh > u and row.get("sw_share_name"):
        k = num(row, "sw_share_threads") or 1
        return f"{row['sw_share_name']} {pct(sh)} busy ({sh * k:.1f} of {k:.0f})"
    return f"{row['bottleneck']} {pct(u)}"


def kind(row):
    """The name alone of the busiest station: "cpu", "disk:vda", "s1-wrk"."""
    return short(row).split(" ")[0]


def us_per_req(row, col):
    c, x = num(row, col), num(row, "x_max_rps")
    return None if c is None or not x else 1e6 * c / x


PROCS = [("server1", "cores_server1"), ("server2", "cores_server2"), ("the database", "cores_db")]


def cpu_change(a, b):
    """The process whose CPU per request changed most between rows a and b, in words."""
    best = None
    for name, col in PROCS:
        ua, ub = us_per_req(a, col), us_per_req(b, col)
        if ua is not None and ub is not None and (best is None or abs(ub - ua) > abs(best[2] - best[1])):
            best = (name, ua, ub)
    return "" if best is None else f"{best[0]}'s {best[1]:.0f} → {best[2]:.0f} µs"


def share(row, col):
    """A pool's column (busy, blocked) over its threads, or None."""
    v, k = num(row, col), num(row, "s2_threads")
    return None if v is None or not k else v / k


def classify(r):
    r = round(r, 2)  # as printed
    return "up" if r >= GAIN else "down" if r <= 1 / GAIN else "same"


def verdict(r, s):
    cr, cs = classify(r), classify(s)
    if cr == cs == "up" and round(r, 2) * 1.5 < s:
        return "a gain, smaller than the study's"
    if cr == cs:
        return "as in the study"
    if {cr, cs} == {"up", "down"}:
        return "the opposite of the study"
    if cs == "up":
        return "no gain, where the study saw one"
    return "a change where the study saw none"


class Run:
    def __init__(self, rdir, study_path):
        self.rows = {(r["config"], r["load"]): r for r in read_csv(os.path.join(rdir, "table.csv"))}
        self.configs = {r["config"]: r for r in read_csv(os.path.join(rdir, "configs.tsv"), "\t")}
        self.study = {r["load"]: r for r in read_csv(study_path)} if os.path.exists(study_path) else {}

    def study_x(self, cfg, load):
        v = self.study.get(load, {}).get(cfg, "")
        return float(v) if v else None

    def busy(self, cfgs):
        """Why the machine was too busy before any of cfgs to tell, or ""."""
        why = []
        for c in cfgs:
            b = num(self.configs.get(c), "busy_before_pct")
            if b is not None and b >= BUSY_BEFORE_PCT:
                why.append(f"the machine was {b:.0f}% busy just before {c} ran")
        return " and ".join(why)

    def cannot_tell(self, a, b, load):
        """Why this sweep pair cannot tell (knee not reached, CPU outside the stack), or ""."""
        why = []
        nr = [c for c in (a, b) if self.rows[(c, load)].get("knee") == "not-reached"]
        if nr:
            n = self.rows[(nr[0], load)]["n_largest"]
            why.append(f"knee not reached in {' and '.join(nr)}: X still rising at N = {n}")
        for c in (a, b):
            o = num(self.rows[(c, load)], "other_cpu_pct")
            if o is not None and o >= OTHER_CPU_PCT:
                why.append(f"{o:.0f}% of the CPU outside the stack in {c}")
        return "; ".join(why)


def why_sentence(n, run, a, b, pairs):
    """The claim's reason, from the demands of the loads it can tell (pairs of rows)."""
    if not pairs:
        return ""
    if n == 1:
        sat = [(share(ra, "s2_busy"), share(rb, "s2_busy"), share(ra, "s2_blocked"),
                share(rb, "s2_blocked")) for ra, rb in pairs]
        sat = [t for t in sat if None not in t and min(t[0], t[1]) >= 0.8]
        if all(share(ra, "s2_busy") is None for ra, _ in pairs):
            return ("This run has no thread samples: whether server2's workers are the bound "
                    "cannot be told from it.")
        if sat:
            t = sat[0]
            return (f"Where server2's pool is the bottleneck, its 2 workers are busy {pct(t[0])} "
                    f"before and {pct(t[1])} after, blocked {pct(t[2])} and {pct(t[3])} of the "
                    "time: each holds its worker through the MySQL round trip, and threads in "
                    "place of processes add no worker, so the bound stays.")
    if n == 2:
        d = [(num(ra, "u_disk"), num(rb, "u_disk")) for ra, rb in pairs]
        d = [t for t in d if None not in t]
        if d:
            return (f"Prefetching takes the file reads off the disk (its U at X max "
                    f"{span([t[0] for t in d], pct)} before, {span([t[1] for t in d], pct)} after) "
                    "and off server1's CPU: what is left is the CPU per request of the stack.")
    if n == 3:
        db = [(us_per_req(ra, "cores_db"), us_per_req(rb, "cores_db")) for ra, rb in pairs]
        db = [t for t in db if None not in t]
        if db:
            s = (f"Redis cuts the database's CPU per request ({span([t[0] for t in db], us)} → "
                 f"{span([t[1] for t in db], us)} µs)")
            top = [max(PROCS, key=lambda p: num(rb, p[1]) or 0) for _, rb in pairs]
            if len({t[0] for t in top}) == 1:
                c = [num(rb, top[0][1]) for _, rb in pairs]
                s += (f"; after it, the stack's largest CPU user at X max is {top[0][0]} "
                      f"({span(c, lambda v: f'{v:.2f}')} cores)")
            return s + "."
    return ""


def us(v):
    return f"{v:.0f}"


def claim(run, n, title, a, b, loads):
    have = [l for l in loads if (a, l) in run.rows and (b, l) in run.rows]
    head = f"**{n}. {title}** ({a} → {b})."
    if not have:
        return [head + " Cannot tell: this run did not measure both configurations for "
                f"{', '.join(label(l) for l in loads)}."]
    study = [f"{run.study_x(b, l) / run.study_x(a, l):.2f}× for {label(l)}" for l in have
             if run.study_x(a, l) and run.study_x(b, l)]
    out = head + (" The study: " + ", ".join(study) + "." if study else "")
    busy = run.busy((a, b))
    here, bott, dem, told, pairs = [], [], [], {}, []
    for l in have:
        ra, rb = run.rows[(a, l)], run.rows[(b, l)]
        xa, xb = num(ra, "x_max_rps"), num(rb, "x_max_rps")
        r = xb / xa if xa else 0
        why = run.cannot_tell(a, b, l)
        sa, sb = run.study_x(a, l), run.study_x(b, l)
        if why:
            v = f"cannot tell: {why}"
        elif busy:
            v = "cannot tell"
        elif sa and sb:
            v = told[l] = verdict(r, sb / sa)
            pairs.append((ra, rb))
        else:
            v = ""
        here.append(f"{label(l)} {fx(xa)} → {fx(xb)} req/s ({r:.2f}×{', ' + v if v else ''})")
        bott.append(f"{short(ra)} → {short(rb)} ({label(l)})")
        c = cpu_change(ra, rb)
        if c:
            dem.append(f"{c} ({label(l)})")
    out += " This run: " + "; ".join(here) + "."
    if busy:
        out += f" **Cannot tell** for any of them: {busy}."
    out += " Bottleneck at X max, before → after: " + "; ".join(bott) + "."
    if dem:
        out += " The CPU per request that changed most: " + "; ".join(dem) + "."
    out += (" " + why_sentence(n, run, a, b, pairs)).rstrip()
    miss = [label(l) for l in loads if l not in have]
    if miss:
        out += f" Not measured here: {', '.join(miss)}."
    return [out]


def plateau(xs):
    """xs: [(load, bytes/s)] by size. The index from which bytes/s stay within PLATEAU of their
    largest, or None when only the largest size reaches it (still growing)."""
    top = max(b for _, b in xs)
    i = len(xs)
    while i > 0 and xs[i - 1][1] >= PLATEAU * top:
        i -= 1
    return None if i >= len(xs) - 1 else i


def span(vals, f):
    lo, hi = f(min(vals)), f(max(vals))
    return lo if lo == hi else f"{lo}–{hi}"


def rate_span(vals):
    if min(vals) >= 1e9:
        return span([v / 1e9 for v in vals], lambda v: f"{v:.2f}") + " GB/s"
    return span([v / 1e6 for v in vals], lambda v: f"{v:.0f}") + " MB/s"


def trend(run, n, cfgs):
    out = [f"**{n}. The file-size trend.** X falls with the file size in every configuration; the "
           "bytes per second (X max × size, 1 MB = 10^6 bytes) level off from some size on "
           f"(all larger sizes within {PLATEAU:.0%} of the largest):"]
    for c in cfgs:
        xs = [(l, num(run.rows[(c, l)], "x_max_rps") * SIZES[l]) for l in GETS if (c, l) in run.rows]
        if len(xs) < 3:
            continue
        i = plateau(xs)
        if i is None:
            s = f"- {c}: still growing at {xs[-1][0][4:]} ({rate_span([xs[-1][1]])})"
        else:
            tail = xs[i:]
            rows = [run.rows[(c, l)] for l, _ in tail]
            bound = {}
            for r in rows:
                u = num(r, "sw_share") if kind(r) == r.get("sw_share_name") else num(r, "u_bottleneck")
                bound.setdefault(kind(r), []).append(u)
            s = (f"- {c}: from {xs[i][0][4:]} on, {rate_span([b for _, b in tail])}, bound by "
                 + ", ".join(f"{k} {span(v, pct)}" for k, v in bound.items()))
            if "disk:" not in s:
                d = [num(r, "u_disk") for r in rows if num(r, "u_disk") is not None]
                if d:
                    s += f" (disk U {span(d, pct)})"
            mb = [1e6 * num(r, "cores_server1") / (b / 1e6) for (l, b), r in zip(tail, rows)
                  if num(r, "cores_server1")]
            if mb:
                s += f"; server1 spends {span(mb, lambda v: f'{v:.0f}')} µs of CPU per MB sent"
            nr = [l[4:] for l, _ in tail if run.rows[(c, l)].get("knee") == "not-reached"]
            if nr:
                s += f"; knee not reached at {', '.join(nr)}: cannot tell the ceiling there"
        sx = [(l, run.study_x(c, l) * SIZES[l]) for l in GETS if run.study_x(c, l)]
        if len(sx) >= 3:
            j = plateau(sx)
            s += ("; the study: " + (f"from {sx[j][0][4:]} on, {rate_span([b for _, b in sx[j:]])}"
                                     if j is not None else "still growing at 100MB"))
        busy = run.busy([c])
        if busy:
            s += f" (cannot tell: {busy})"
        out.append(s + ".")
    if len(out) == 1:
        return [f"**{n}. The file-size trend**: cannot tell, no configuration has three get loads "
                "in this run."]
    out.append("The study's table has no utilizations, so what bounded its plateaus is not known "
               "here. Without prefetch a file is read from the disk for every request, with "
               "prefetch server1 only copies it from memory to the socket.")
    return out


def ours(run):
    ref = "mt-prefetch-redis"
    for l in GETS:
        if ("ours", l) in run.rows and (ref, l) in run.rows:
            o, r = run.rows[("ours", l)], run.rows[(ref, l)]
            xo, xr = num(o, "x_max_rps"), num(r, "x_max_rps")
            return (f"`ours` (auth caches on, otherwise {ref}): {label(l)} {fx(xo)} req/s against "
                    f"{fx(xr)} ({xo / xr:.2f}×); at X max server2 used {num(o, 'cores_server2'):.2f} "
                    f"cores and the database {num(o, 'cores_db'):.2f} (in {ref}: "
                    f"{num(r, 'cores_server2'):.2f} and {num(r, 'cores_db'):.2f}): the cache "
                    "removes the verify and the lookup from a repeated GET, and what is left is "
                    f"{short(o)}.")
    if any(c == "ours" for c, _ in run.rows):
        return f"`ours`: no get load measured in both ours and {ref}: cannot compare."
    return ""


def findings(run):
    out = ["## Findings", ""]
    for n, (title, a, b, loads) in enumerate(CLAIMS, 1):
        out += claim(run, n, title, a, b, loads) + [""]
    cfgs = [c for c in run.configs if c != "ours" and not c.endswith("-tls")]
    out += trend(run, 4, cfgs) + [""]
    o = ours(run)
    if o:
        out += [o, ""]
    out.append(f"A ratio from {GAIN} up counts as a gain, below 1/{GAIN} as a loss. Cannot tell: "
               f"a knee not reached, the machine busy (>= {BUSY_BEFORE_PCT}% before a "
               f"configuration, or >= {OTHER_CPU_PCT}% of its CPU outside the stack at X max). "
               "Bottlenecks: loadgen's resources (cpu = both cores, disk:DEV) or a pool of "
               "threads busy / k (s1-wrk server1's workers, s2-wrk and s2-proc server2's worker "
               "threads and processes, s1-commit server1's upload committer).")
    return "\n".join(wrap(out))


def wrap(lines):
    for line in lines:
        ind = "  " if line.startswith("- ") else ""
        yield "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=ind, break_long_words=False,
                                      break_on_hyphens=False)) if line else ""


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description="Print the Findings section of a run's summary.md.")
    ap.add_argument("--study", default=os.path.join(top, "results", "study-2017.csv"),
                    help="the study's maxima (default: results/study-2017.csv)")
    ap.add_argument("results_dir")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.results_dir, "table.csv")):
        sys.exit(f"findings.py: error: {args.results_dir}/table.csv missing "
                 "(scripts/summarize.sh writes it)")
    print(findings(Run(args.results_dir, args.study)))


if __name__ == "__main__":
    main()
