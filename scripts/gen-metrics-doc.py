#!/usr/bin/env python3
"""gen-metrics-doc.py - the reference of server1's /metrics, made from the sources.

  scripts/gen-metrics-doc.py                 print the reference table (Markdown)
  scripts/gen-metrics-doc.py --write FILE    replace the marked block in FILE with it
  scripts/gen-metrics-doc.py --check FILE    exit 1 with a diff when FILE's block is not current

Reads server1/*.c (comments stripped, adjacent string literals joined as the compiler joins
them) and finds every metric family the exposition writes: a "# HELP NAME TEXT" line with its
"# TYPE NAME TYPE" line in a literal, or a put_counter/put_gauge(out, "NAME", "TEXT", ...) call.
Labels are the names inside NAME{...} in the format strings (a histogram's le is left out); a
label's value is listed when the source writes it literally. The block in FILE lies between
the lines "<!-- metrics: begin -->" and "<!-- metrics: end -->". A family found twice, one
without a type, or no family at all exits 1: the parser no longer matches the sources.
"""
import difflib
import glob
import re
import sys

BEGIN = "<!-- metrics: begin (scripts/gen-metrics-doc.py --write; do not edit) -->"
END = "<!-- metrics: end -->"
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def strip_comments(text):
    """The C text with /* */ and // comments blanked, string and char literals kept."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " * (j - i))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unescape(s):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), s)


def join_literals(code):
    """Replaces each run of adjacent string literals by @S<k>@; returns (code, strings)."""
    strings = []
    run = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*')

    def repl(m):
        strings.append("".join(unescape(x) for x in LITERAL.findall(m.group(0))))
        return f"@S{len(strings) - 1}@"
    return run.sub(repl, code), strings


def families(paths):
    fams = {}      # name -> {"type", "help", "labels": {label: set of values}}
    order = []
    errors = []

    def add(name, typ, help_, where):
        if name in fams:
            errors.append(f"{where}: {name} found twice")
            return
        fams[name] = {"type": typ, "help": help_.strip(), "labels": {}}
        order.append(name)

    all_strings = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            code, strings = join_literals(strip_comments(fh.read()))
        arrays = {m.group(1): [strings[int(k)] for k in re.findall(r"@S(\d+)@", m.group(2))]
                  for m in re.finditer(r"static\s+const\s+char\s*\*\s*const\s+(\w+)\s*\[[^]]*\]"
                                       r"\s*=\s*\{([^}]*)\}", code)}
        for k, s in enumerate(strings):
            # the values of each %-conversion's argument, when it is ARRAY[...] of literals
            m = re.search(rf"@S{k}@\s*,([^;]*)", code)
            argv = [a.strip() for a in m.group(1).split(",")] if m else []
            vals = []
            for i, _ in enumerate(re.findall(r"%[-+ #0-9.]*[a-z]+", s)):
                a = re.match(r"(\w+)\s*\[", argv[i]) if i < len(argv) else None
                vals.append(arrays.get(a.group(1), ()) if a else ())
            all_strings.append((s, vals))
        for s in strings:
            helps = re.findall(r"^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$", s, re.M)
            types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", s, re.M))
            for name, text in helps:
                if name not in types:
                    errors.append(f"{path}: {name} has a HELP line but no TYPE line")
                    continue
                add(name, types[name], text, path)
        for m in re.finditer(r"\bput_(counter|gauge)\s*\(\s*\w+\s*,\s*@S(\d+)@\s*,\s*@S(\d+)@",
                             code):
            add(strings[int(m.group(2))], m.group(1), strings[int(m.group(3))], path)

    # labels: NAME{a="v",b="%s"} in any literal; NAME_bucket etc. belong to NAME. A "%s"
    # whose argument is ARRAY[i] of a static array of literals takes that array's values.
    for s, args in all_strings:
        for name, body in re.findall(r"\b(server1_\w+)\{([^}]*)\}", s):
            fam = name if name in fams else re.sub(r"_(bucket|sum|count)$", "", name)
            if fam not in fams:
                errors.append(f"labels of {name}: no such family")
                continue
            specs = iter(args)
            for label, value in re.findall(r'(\w+)="([^"]*)"', body):
                if label == "le" and fams[fam]["type"] == "histogram":
                    continue
                vals = fams[fam]["labels"].setdefault(label, set())
                if "%" not in value:
                    vals.add(value)
                else:
                    vals.update(next(specs, ()) or ("…",))
    if not fams:
        errors.append("no metric family found in " + " ".join(paths))
    return [(n, fams[n]) for n in sorted(order)], errors


def table(fams):
    lines = [BEGIN,
             "",
             f"{len(fams)} families, from `server1/*.c`.",
             "",
             "| name | type | labels | help |",
             "|---|---|---|---|"]
    for name, f in fams:
        labels = []
        for label in sorted(f["labels"]):
            vals = [f"`{v}`" for v in sorted(f["labels"][label]) if v != "…"]
            if vals and "…" in f["labels"][label]:
                vals.insert(0, "a number")    # a value formatted at run time, e.g. a status
            labels.append(f"`{label}`" + (" (" + ", ".join(vals) + ")" if vals else ""))
        help_ = f["help"].replace("|", "\\|")
        lines.append(f"| `{name}` | {f['type']} | {', '.join(labels) or '–'} | {help_} |")
    lines += ["", END]
    return lines


def block_of(path):
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    try:
        a = lines.index(BEGIN)
        b = lines.index(END, a)
    except ValueError:
        return lines, None, None
    return lines, a, b


def main(argv):
    fams, errors = families(sorted(glob.glob("server1/*.c")))
    for e in errors:
        print(f"gen-metrics-doc: {e}", file=sys.stderr)
    if errors:
        return 1
    want = table(fams)
    if not argv:
        print("\n".join(want))
        return 0
    if len(argv) != 2 or argv[0] not in ("--write", "--check"):
        print("usage: gen-metrics-doc.py [--write FILE | --check FILE]", file=sys.stderr)
        return 2
    path = argv[1]
    lines, a, b = block_of(path)
    if a is None:
        print(f"gen-metrics-doc: {path} has no '{BEGIN}' ... '{END}' block", file=sys.stderr)
        return 1
    have = lines[a:b + 1]
    if argv[0] == "--write":
        if have != want:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines[:a] + want + lines[b + 1:]))
        print(f"gen-metrics-doc: {path}: {len(fams)} families")
        return 0
    if have != want:
        sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
            have, want, f"{path} (metrics block)", "the sources", lineterm=""))
        print(f"gen-metrics-doc: {path} is not the sources' metrics (above); run "
              f"scripts/gen-metrics-doc.py --write {path}", file=sys.stderr)
        return 1
    print(f"gen-metrics-doc: {path} lists the {len(fams)} metric families of the sources")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
