#!/usr/bin/env python3
"""check-includes.py - fails on an include circle among the modules of each program.

  scripts/check-includes.py [DIR...]          (default: server1 server2 loadgen common)
  scripts/check-includes.py --graph [DIR...]  (default: server1)
  scripts/check-includes.py --readme FILE     (server1's graph in FILE is the sources')

A module is a .c file and its .h (conn.c + conn.h = conn). Module A depends on module B when
A.c or A.h has #include "B.h" (quoted includes only; a name found in no scanned directory,
such as common's headers seen from server1, is another program's and ends the path). Prints
each circle found as "server1: conn -> handler -> conn" and exits 1; prints the number of
modules and dependencies checked and exits 0 when there is none. It also fails when a module
includes one that FORBIDDEN says it must not (directly: what it reaches through a module it may
include is that module's business), printing "server1: conn includes store (...)".

--graph prints, for each DIR without a circle, who includes whom, top to bottom: a module's
height is 0 when it includes none of its directory's modules, else one more than the highest
it includes; modules are listed by height (highest first), each with what it includes in the
same order, then the modules that include none.

--readme FILE checks that the first ``` block after the line that starts "Who may call whom in
server1" in FILE is server1's graph as --graph prints it (without the "server1:" line and the
two-space indent): exits 1 with a diff when FILE (docs/design/server1.md) has drifted from the
sources.
"""
import difflib
import os
import re
import sys
import textwrap

# Modules that must not include others, with why. server1's conn is the transport: bytes, the
# parser, timers; what a response's body is made of (files, the upload store, response buffers)
# reaches it only through body.h, and the request's meaning only through the handler's table.
TRANSPORT_ONLY = ("the transport sees bodies through body.h and requests through "
                  "struct s1_conn_handler")
# The route modules (and what they share) are called by the handler, which the worker calls: a
# lower layer never includes the layer that called it.
CALLED_BY_HANDLER = "the handler calls it; it reaches its thread through service.h"
FORBIDDEN = {
    "server1": {
        "conn": {m: TRANSPORT_ONLY for m in ("store", "files", "respbuf", "source", "commit",
                                             "listing", "handler", "worker")},
        **{m: {n: CALLED_BY_HANDLER for n in ("handler", "worker")}
           for m in ("route_files", "route_listing", "route_users", "route_admin", "request",
                     "login", "service")},
    },
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def modules_of(d):
    deps = {}
    for f in sorted(os.listdir(d)):
        base, ext = os.path.splitext(f)
        if ext not in (".c", ".h"):
            continue
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            text = fh.read()
        deps.setdefault(base, set()).update(
            os.path.basename(m) for m in INCLUDE.findall(text) if os.path.basename(m) != base)
    # keep edges to modules of this directory only
    return {m: {n for n in ds if n in deps} for m, ds in deps.items()}


def circles(deps):
    """Every elementary circle, each reported once (from its smallest member)."""
    found = []
    for start in sorted(deps):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(deps[node]):
                if nxt == start:
                    found.append(path + [start])
                elif nxt > start and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return found


def forbidden(d, deps):
    """Lines for each include FORBIDDEN[d] refuses."""
    return [f"{d}: {m} includes {n} ({why})"
            for m, rules in sorted(FORBIDDEN.get(d, {}).items())
            for n, why in sorted(rules.items()) if n in deps.get(m, ())]


def heights(deps):
    """Each module's height (see --graph); deps must have no circle."""
    h = {}

    def height(m):
        if m not in h:
            h[m] = 1 + max((height(n) for n in deps[m]), default=-1)
        return h[m]

    for m in deps:
        height(m)
    return h


def graph_lines(deps):
    """--graph's lines for one directory, without its header and indent."""
    h = heights(deps)
    order = sorted(deps, key=lambda m: (-h[m], m))
    width = max(len(m) for m in order)
    out = []
    for m in order:
        if deps[m]:
            ds = ", ".join(sorted(deps[m], key=lambda n: (-h[n], n)))
            out += textwrap.fill(ds, 94, initial_indent=f"{m:<{width}} -> ",
                                 subsequent_indent=" " * (width + 4)).split("\n")
    out += textwrap.fill(" ".join(m for m in order if not deps[m]), 94,
                         initial_indent=f"{'(none)':<{width}}    ",
                         subsequent_indent=" " * (width + 4)).split("\n")
    return out


def print_graph(d, deps):
    print(f"{d}:")
    for line in graph_lines(deps):
        print("  " + line)


def check_readme(path):
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("Who may call whom in server1")),
                 None)
    if start is None:
        print(f"check-includes: {path} has no 'Who may call whom in server1' paragraph",
              file=sys.stderr)
        return 1
    try:
        a = lines.index("```", start) + 1
        b = lines.index("```", a)
    except ValueError:
        print(f"check-includes: {path}: no ``` block after 'Who may call whom'", file=sys.stderr)
        return 1
    deps = modules_of("server1")
    if circles(deps):
        return main(["server1"])
    want = graph_lines(deps)
    if lines[a:b] != want:
        sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
            lines[a:b], want, f"{path} (server1's graph)", "the sources", lineterm=""))
        print(f"check-includes: {path}'s graph of server1 is not the sources' (above)",
              file=sys.stderr)
        return 1
    print(f"check-includes: {path}'s graph of server1 is the sources'")
    return 0


def main(argv):
    if argv[:1] == ["--readme"]:
        if len(argv) != 2:
            print("usage: check-includes.py --readme FILE", file=sys.stderr)
            return 2
        return check_readme(argv[1])
    graph = argv[:1] == ["--graph"]
    if graph:
        argv = argv[1:] or ["server1"]
    dirs = argv or ["server1", "server2", "loadgen", "common"]
    bad = 0
    nmod = nedge = 0
    for d in dirs:
        if not os.path.isdir(d):
            print(f"check-includes: no directory {d}", file=sys.stderr)
            return 2
        deps = modules_of(d)
        nmod += len(deps)
        nedge += sum(len(v) for v in deps.values())
        found = circles(deps)
        for c in found:
            print(f"{d}: {' -> '.join(c)}")
            bad += 1
        for line in forbidden(d, deps):
            print(line)
            bad += 1
        if graph and not found:
            print_graph(d, deps)
    if bad:
        print(f"check-includes: {bad} include circle(s) or forbidden include(s)",
              file=sys.stderr)
        return 1
    if not graph:
        print(f"check-includes: {nmod} modules, {nedge} dependencies, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
