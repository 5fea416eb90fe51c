#!/usr/bin/env python3
"""check-links.py - every relative link in the repository's Markdown files resolves.

  scripts/check-links.py [FILE.md...]   (default: every .md git knows or would add)

For each link [text](target), ![alt](target) and [label]: target outside code blocks and code
spans: a target with a scheme (https:, mailto:) is left alone; any other names a file or
directory relative to the linking file (or to the repository's top with a leading /), which
must exist; a #fragment must be a heading of the target .md file, made into an anchor as
GitHub does (lower case, punctuation but - and _ dropped, spaces to -, -1, -2 for repeats).
Prints "FILE:LINE: broken link TARGET (why)" for each broken one and exits 1; else prints the
number of links checked and exits 0.
"""
import os
import re
import subprocess
import sys
import unicodedata

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def md_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", "*.md"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(f for f in out.split("\n") if f and os.path.exists(f))


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading)           # inline HTML
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)   # a link keeps its text
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchors = {}


def anchors_of(path):
    if path not in _anchors:
        seen = {}
        found = set()
        fence = None
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                m = FENCE.match(line)
                if m:
                    fence = None if fence == m.group(1) else (fence or m.group(1))
                    continue
                if fence:
                    continue
                h = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not h:
                    continue
                s = slug(h.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', open(path, encoding="utf-8").read()):
            found.add(m.group(1))
        _anchors[path] = found
    return _anchors[path]


def links_of(path):
    """(line number, target) of every link outside code."""
    fence = None
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            m = FENCE.match(line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence or line.startswith("    ") and not line.lstrip().startswith(("-", "*", "|")):
                continue
            text = re.sub(r"(`+).*?\1", "", line)      # code spans
            for m in LINK.finditer(text):
                yield no, m.group(1)
            m = REFDEF.match(text)
            if m:
                yield no, m.group(1)


def check(path, target):
    """None when TARGET, linked from PATH, resolves; else why not."""
    if not target or SCHEME.match(target):
        return None
    file_part, _, frag = target.partition("#")
    if file_part:
        file_part = re.sub(r"\?.*$", "", file_part)
        if file_part.startswith("/"):
            dest = os.path.normpath(file_part.lstrip("/"))
        else:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        if dest.startswith(".."):
            return "outside the repository"
        if not os.path.exists(dest):
            return "no such file"
    else:
        dest = path
    if frag:
        if not dest.endswith(".md") or os.path.isdir(dest):
            return None
        if frag not in anchors_of(dest):
            return f"no heading #{frag} in {dest}"
    return None


def main(argv):
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                         text=True, check=True).stdout.strip()
    os.chdir(top)
    files = argv or md_files()
    bad = 0
    total = 0
    for path in files:
        for no, target in links_of(path):
            total += 1
            why = check(path, target)
            if why:
                print(f"{path}:{no}: broken link {target} ({why})")
                bad += 1
    if bad:
        print(f"check-links: {bad} broken link(s) of {total}", file=sys.stderr)
        return 1
    print(f"check-links: {total} links in {len(files)} Markdown files, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
