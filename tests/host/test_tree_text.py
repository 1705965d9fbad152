#!/usr/bin/env python3
"""The tree's text says what the project is, not how its work was carried out, and its markdown stays
reference-sized. Fails on: numbered or relative rounds of work (an ordinal or "this", "last" before
the word for one), calls or minutes on a GPU machine, scripts kept outside the tree (a dot-dev
folder), paths outside the repository (../shared), the removed journal (NOTES.md); a markdown file over
MAX_MARKDOWN_FILE bytes, or all of it over MAX_MARKDOWN_TOTAL; a markdown link, or a path of the tree
in backticks, naming a file that is not there. Usage: test_tree_text.py ROOT"""
import os
import re
import subprocess
import sys

from checklist import Checklist

ROOT = sys.argv[1]
MAX_MARKDOWN_FILE = 20_000
MAX_MARKDOWN_TOTAL = 150_000
ORDINAL = (r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
           r"fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|twenty-[a-z]+|thirtieth|"
           r"\d+(st|nd|rd|th))")
WORK = r"(sessions?|rounds? of work)"
DIARY = [
    (re.compile(rf"\b{ORDINAL}(( and |-| or ){ORDINAL})?\s+{WORK}", re.I), "a numbered round of work"),
    (re.compile(rf"\b(this|last|next|previous|earlier|each|every|one|two|both) {WORK}", re.I), "a round of work"),
    (re.compile(r"\b(device|GPU)[- ](calls?|minutes?|seconds? left|time left)\b", re.I), "GPU-machine time"),
    (re.compile(r"(^|[\s(`'\"])[.]dev[/]"), "a script outside the tree"),
    (re.compile(r"\.\./shared|shared/data"), "a path outside the repository"),
    (re.compile(r"\bNOTES\.md\b"), "the removed journal"),
]
THIS_FILE = "tests/host/test_tree_text.py"
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)]*)?\)")
TREE_PATH = re.compile(r"`((?:bench|cmake|docs|kernels|probes|python|results|scripts|src|tests)/[\w./-]+)`")


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]


def missing_paths(path, text):
    """The markdown links (relative to the file) and backticked tree paths (from the root) that name nothing."""
    here = os.path.dirname(os.path.join(ROOT, path))
    links = [m.group(1) for m in LINK.finditer(text) if "://" not in m.group(1)]
    out = [link for link in links if not os.path.exists(os.path.normpath(os.path.join(here, link)))]
    return out + [m.group(1) for m in TREE_PATH.finditer(text) if not os.path.exists(os.path.join(ROOT, m.group(1)))]


def text_of(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None  # binary (plots, compressed reports): no prose


checks = Checklist("tree_text")
files = tracked_files()
markdown_total = 0
for path in files:
    text = text_of(path)
    if text is None:
        continue
    if path.endswith(".md"):
        size = len(text.encode())
        markdown_total += size
        checks.expect(size <= MAX_MARKDOWN_FILE, f"{path}: {size} bytes of markdown, over {MAX_MARKDOWN_FILE} "
                      "(reference in the README, design in a DESIGN.md beside it, history in git)")
        missing = missing_paths(path, text)
        checks.expect(not missing, f"{path}: names what is not in the tree: {', '.join(missing)}")
    if path == THIS_FILE:
        continue
    hits = [f"{path}:{line_no}: {what} ({m.group(0)!r} in {line.strip()[:100]!r})"
            for line_no, line in enumerate(text.splitlines(), 1) for pattern, what in DIARY
            for m in [pattern.search(line)] if m]
    checks.expect(not hits, "\n".join(hits))
checks.expect(markdown_total <= MAX_MARKDOWN_TOTAL,
              f"all markdown together is {markdown_total} bytes, over {MAX_MARKDOWN_TOTAL}")
sys.exit(checks.exit_code())
