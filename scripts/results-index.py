#!/usr/bin/env python3
"""results/INDEX.md: what each kept run is and which document cites it; and the rules of results/.

    scripts/results-index.py           write results/INDEX.md
    scripts/results-index.py --check   exit 1, naming each problem, when INDEX.md is stale or a
                                       rule below is broken (make unit runs this)

A run folder is named DATE-TIME-KIND-HOST[-COMMIT] (20261126-1539-quick-vm) and keeps only what a
reader or a script needs; the rest of what the run wrote stays on the machine that made it
(results/.gitignore keeps it out of git). The files a kind may keep:

    quick, full   (scripts/reproduce.sh) summary.md table.csv points.csv machine.md run.tsv
                  configs.tsv CONFIG/bottleneck.md, sweeps.json.gz (the sweeps' run.json files in
                  one, for scripts/model-check.sh: `model-check.sh --pack`), plots/*.png that a
                  document shows
    hotpath       (scripts/bench-hotpath.sh) report.md medians.tsv raw.tsv machine.md configs/*.conf
                  and a README.md or *.txt note; *.raw.tsv of runs made in pairs by hand
    scale         (scripts/bench-scale.sh) report.md raw.tsv meta.tsv machine.md
    writes        (scripts/bench-writes.sh --out) medians.csv raw.csv meta.txt machine.md
    failover      (scripts/cluster-failover.sh --out) BACKEND[-short].txt machine.md
    fs            (scripts/bench-fs.sh) report.md medians.tsv raw.tsv mounts.tsv machine.md *.png
    smallfiles    (scripts/bench-smallfiles.sh) report.md medians.tsv raw.tsv machine.md

Every run must be cited by a document (a .md file outside the run, INDEX.md aside), and all of
results/ that git tracks must stay under LIMIT_BYTES. Outside a git checkout every file counts.
"""
import fnmatch
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(TOP, "results")
INDEX = os.path.join(RESULTS, "INDEX.md")
LIMIT_BYTES = 5 * 1024 * 1024
NAME = re.compile(r"^(\d{8})-(\d{4})-(quick|full|hotpath|scale|writes|failover|fs|smallfiles)-([a-z0-9-]+)$")
REPRO = ["summary.md", "table.csv", "points.csv", "machine.md", "run.tsv", "configs.tsv",
         "*/bottleneck.md", "sweeps.json.gz"]
ALLOWED = {
    "quick": REPRO,
    "full": REPRO,
    "hotpath": ["report.md", "medians.tsv", "raw.tsv", "machine.md", "configs/*.conf",
                "README.md", "*.txt", "*.raw.tsv"],
    "scale": ["report.md", "raw.tsv", "meta.tsv", "machine.md"],
    "writes": ["medians.csv", "raw.csv", "meta.txt", "machine.md"],
    "failover": ["*.txt", "machine.md"],
    "fs": ["report.md", "medians.tsv", "raw.tsv", "mounts.tsv", "machine.md", "*.png"],
    "smallfiles": ["report.md", "medians.tsv", "raw.tsv", "machine.md"],
}
TOP_LEVEL = ["README.md", "INDEX.md", "study-2017.csv", ".gitignore"]
WHAT = {
    "quick": "scripts/reproduce.sh --quick",
    "full": "scripts/reproduce.sh",
    "hotpath": "scripts/bench-hotpath.sh",
    "scale": "scripts/bench-scale.sh",
    "writes": "scripts/bench-writes.sh",
    "failover": "scripts/cluster-failover.sh",
    "fs": "scripts/bench-fs.sh",
    "smallfiles": "scripts/bench-smallfiles.sh",
}


def tracked_files():
    """Paths under results/ relative to it that git tracks (a run made here and not added to git
    is the user's own business)."""
    try:
        out = subprocess.run(["git", "-C", TOP, "ls-files", "--", "results"],
                             capture_output=True, text=True, check=True).stdout
        return sorted({p[len("results/"):] for p in out.splitlines()
                       if os.path.exists(os.path.join(TOP, p))})
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for root, _, names in os.walk(RESULTS):
            for n in names:
                paths.append(os.path.relpath(os.path.join(root, n), RESULTS))
        return sorted(paths)


def documents():
    """Every .md of the project, but build/ and INDEX.md: (path relative to TOP, text)."""
    docs = []
    for root, dirs, names in os.walk(TOP):
        dirs[:] = [d for d in dirs if d not in (".git", "build") and not d.startswith(".")]
        for n in names:
            p = os.path.join(root, n)
            if n.endswith(".md") and p != INDEX:
                with open(p, encoding="utf-8", errors="replace") as f:
                    docs.append((os.path.relpath(p, TOP), f.read()))
    return sorted(docs)


def first_line(path, prefix=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith(prefix) and line:
                    return line[len(prefix):].strip()
    except OSError:
        pass
    return ""


def tsv(path):
    kv = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                kv[k] = v
    except OSError:
        pass
    return kv


def describe(run, kind):
    d = os.path.join(RESULTS, run)
    if kind not in WHAT:
        return "(not a run of a known kind)"
    if kind in ("quick", "full"):
        kv = tsv(os.path.join(d, "run.tsv"))
        s = "`%s`" % kv.get("command", WHAT[kind]).strip()
        if kv.get("wall_s"):
            s += ", %s s" % kv["wall_s"]
        if kv.get("commit"):
            s += ", commit %s" % kv["commit"]
        return s
    for note in ("README.md", "report.md"):
        title = first_line(os.path.join(d, note), "# ")
        if title:
            return "%s (%s)" % (title, WHAT[kind])
    if kind == "writes":
        return "`%s`" % first_line(os.path.join(d, "meta.txt"), "command:")
    return WHAT[kind]


def index_text(runs, cites):
    lines = ["# Kept runs",
             "",
             "Written by `scripts/results-index.py` (make unit checks that it is current): each",
             "run kept under results/, what made it, and the documents that cite it. What a run",
             "folder keeps, and why, is in that script's header.",
             "",
             "| run | kind | what | cited by |",
             "|---|---|---|---|"]
    for run in runs:
        m = NAME.match(run)
        kind = m.group(3) if m else "?"
        by = ", ".join("[%s](%s)" % (c, os.path.relpath(os.path.join(TOP, c), RESULTS))
                       for c in cites.get(run, []))
        what = describe(run, kind).replace("|", "\\|")
        lines.append("| [%s](%s/) | %s | %s | %s |" % (run, run, kind, what, by or "—"))
    return "\n".join(lines) + "\n"


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    files = tracked_files()
    runs = sorted({p.split("/")[0] for p in files if "/" in p})
    cites = {}
    for path, text in documents():
        for run in runs:
            if run in text and not path.startswith("results/%s/" % run):
                cites.setdefault(run, []).append(path)
    problems = []
    total = 0
    for p in files:
        total += os.path.getsize(os.path.join(RESULTS, p))
        if "/" not in p:
            if p not in TOP_LEVEL:
                problems.append("results/%s: not a file results/ keeps at its top" % p)
            continue
        run, rel = p.split("/", 1)
        m = NAME.match(run)
        if not m:
            continue
        kind = m.group(3)
        ok = any(fnmatch.fnmatchcase(rel, pat) and rel.count("/") == pat.count("/")
                 for pat in ALLOWED[kind])
        if rel.startswith("plots/") and rel.endswith(".png"):
            ok = any(p in t or "%s/%s" % (run, rel) in t for _, t in documents())
        if not ok:
            problems.append("results/%s: a %s run keeps no such file" % (p, kind))
    for run in runs:
        if not NAME.match(run):
            problems.append("results/%s: not named DATE-TIME-KIND-HOST[-COMMIT] (KIND one of %s)"
                            % (run, " ".join(ALLOWED)))
        if run not in cites:
            problems.append("results/%s: no document cites it (remove it, or cite it)" % run)
    if total > LIMIT_BYTES:
        problems.append("results/: %d bytes, more than the %d allowed" % (total, LIMIT_BYTES))
    text = index_text(runs, cites)
    if check:
        try:
            with open(INDEX, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            problems.append("results/INDEX.md is stale: run scripts/results-index.py")
        for msg in problems:
            print("results-index: " + msg, file=sys.stderr)
        if not problems:
            print("results-index: %d runs, %d files, %d bytes: ok" % (len(runs), len(files), total))
        return 1 if problems else 0
    with open(INDEX, "w", encoding="utf-8") as f:
        f.write(text)
    for msg in problems:
        print("results-index: " + msg, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
