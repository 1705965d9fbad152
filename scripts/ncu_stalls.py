#!/usr/bin/env python3
"""Where a kernel's warps wait, from ncu's warp-state sampling: the instructions that hold the most
stall samples, the stall reasons over the whole kernel, and the samples by opcode. It reads what
`ncu -i REPORT --page source --csv --print-source sass` prints (one block per profiled kernel: a
"Kernel Name" line, a header, a row per SASS instruction); the report must hold the source
counters (`--set full`, or `--section SourceCounters`).

This is the question a kernel change starts from: the tensor pipe is 70% busy,
so where are the other 30%? A sample sits on the instruction a warp cannot issue yet: a wgmma
wait (`WARPGROUP.DEPBAR`) on top says the consumers wait on their own products; the instruction
after a named barrier (`BAR.SYNC`), reason barrier, that they wait on each other; a try-wait loop's
branch (`BRA`, long_sb) that they wait on the producer's copies or it on theirs.

usage: scripts/ncu_stalls.py SOURCE_CSV [--top N] [--kernel TEXT]
exit: 0, 2 (argparse's usage error) bad usage or a file that holds no kernel with samples."""
import argparse
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
REASON_PREFIX = "stall_"


def kernels(text):
    """[(name, header, rows)] per "Kernel Name" block, a block that repeats an earlier one dropped."""
    blocks, seen = [], set()
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('"Kernel Name"')]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        name = next(csv.reader([lines[start]]))[1]
        table = list(csv.reader(lines[start + 1:end]))
        if not table or SAMPLES not in table[0]:
            continue
        header, rows = table[0], [r for r in table[1:] if len(r) == len(table[0])]
        key = (name, tuple(tuple(r) for r in rows))
        if key not in seen:
            seen.add(key)
            blocks.append((name, header, rows))
    return blocks


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def opcode(sass):
    """The instruction's opcode without its predicate and modifiers: `@!P0 BRA 0x..` -> BRA."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def summary(name, header, rows, top):
    col = {h: i for i, h in enumerate(header)}
    reasons = [h for h in header if h.startswith(REASON_PREFIX) and "(Not Issued)" not in h]
    total = sum(number(r[col[SAMPLES]]) for r in rows)
    if total == 0:
        return None
    out = [f"## {name}", "", f"{int(total)} stall samples over {len(rows)} instructions", ""]
    by_reason = collections.Counter()
    by_opcode = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h[len(REASON_PREFIX):]] += number(r[col[h]])
        by_opcode[opcode(r[col["Source"]])] += number(r[col[SAMPLES]])
    out += ["| reason | share |", "|---|---:|"]
    out += [f"| {k} | {100 * v / total:.1f}% |" for k, v in by_reason.most_common(8) if v > 0]
    out += ["", "| opcode | share |", "|---|---:|"]
    out += [f"| {k} | {100 * v / total:.1f}% |" for k, v in by_opcode.most_common(8) if v > 0]
    out += ["", "| share | address | instruction | main reasons |", "|---:|---|---|---|"]
    for r in sorted(rows, key=lambda r: -number(r[col[SAMPLES]]))[:top]:
        mine = sorted(((number(r[col[h]]), h[len(REASON_PREFIX):]) for h in reasons), reverse=True)[:2]
        why = ", ".join(f"{k} {int(v)}" for v, k in mine if v > 0)
        share = 100 * number(r[col[SAMPLES]]) / total
        out.append(f"| {share:.1f}% | {r[col['Address']]} | `{r[col['Source']].strip()}` | {why} |")
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(prog="ncu_stalls.py", description=__doc__.split("\n\n")[0])
    p.add_argument("csv", help="ncu -i REPORT --page source --csv --print-source sass > SOURCE_CSV")
    p.add_argument("--top", type=int, default=12, help="instructions listed per kernel (default 12)")
    p.add_argument("--kernel", default="", help="only kernels whose name holds TEXT")
    a = p.parse_args(argv)
    if a.top < 1:
        p.error(f"--top {a.top}: give 1 or more")
    try:
        text = open(a.csv, encoding="utf-8").read()
    except OSError as e:
        p.error(f"{a.csv}: {e.strerror}")
    found = [s for n, h, r in kernels(text) if a.kernel in n for s in [summary(n, h, r, a.top)] if s]
    if not found:
        p.error(f"{a.csv}: no kernel{' matching ' + repr(a.kernel) if a.kernel else ''} with stall samples "
                    "(give ncu's --page source --csv output of a report with source counters)")
    print("\n".join(found), end="")


if __name__ == "__main__":
    main(sys.argv[1:])
