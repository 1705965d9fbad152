#!/usr/bin/env python3
"""The loops of a kernel as ptxas scheduled them, read from its sm_90a SASS: for each loop (a
conditional branch back to an earlier address) of every function whose name matches --kernel, its
length in instructions, its instruction mix, and the order of the instructions that decide how a
pipelined kernel overlaps its work: wgmma issue (HGMMA, QGMMA), wgmma waits (WARPGROUP.DEPBAR),
named barriers (BAR), mbarrier waits and arrives (SYNCS), MUFU and the loop's branches, runs of one
opcode folded into one line ("MUFU.EX2 x66").

It answers, with no GPU, what a reading of cuobjdump's SASS by hand answers: ptxas may place an
instruction far from where the source wrote it (it placed the attention forward's wait for P V before
its softmax's exponentials: docs/decisions/016-forward-masked-tiles-loop.md), and a change's cost in
instructions a tile shows here before it is timed. A loop's count includes every path through it (a
masked tile's code too).

A kernel compiled elsewhere (FlashAttention-4's, which its CuTe DSL compiles at run time) is read
from an ncu report's source page instead: `ncu -i REPORT --page source --csv --print-source sass >
F.csv` (the report taken with `--set full` or `--section SourceCounters`).

usage: scripts/sass_loops.py INPUT --kernel REGEX [--cuobjdump PATH] [--min N]
  INPUT       an executable or object file (read with cuobjdump --dump-sass), cuobjdump's SASS text
              (.sass, .txt), or ncu's source page (.csv)
  --kernel    a regular expression on the function's name (mangled from cuobjdump, as ncu prints it)
  --min N     only loops of at least N instructions (default 64)
exit: 0, 1 no function matched or none has such a loop, 2 bad usage, a missing input, or no cuobjdump for
a binary."""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_stalls  # noqa: E402  (its reader of ncu's source page)

Instr = collections.namedtuple("Instr", "address guard opcode operands")
ADDRESS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/(.*)")
BODY = re.compile(r"\s*(@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)([^;]*)")
BRANCH_TARGET = re.compile(r"0x([0-9a-f]+)")
EVENTS = re.compile(r"HGMMA|QGMMA|IGMMA|WARPGROUP|BAR|SYNCS|MUFU|BRA")


def functions(sass, arch):
    """Each function compiled for `arch` in cuobjdump's SASS text, as its list of Instr. A binary's
    text names each cubin's arch twice (`arch = sm_90a`, then `code for sm_90a`); a lone cubin's
    names it once, by the second."""
    out, name, current_arch = {}, None, None
    for line in sass.splitlines():
        m = re.match(r"\s*(?:arch =|code for) (\w+)", line)
        if m:
            current_arch, name = m.group(1), None
            continue
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1) if current_arch == arch else None
            if name:
                out[name] = []
            continue
        m = ADDRESS.match(line)
        ins = m and instruction(int(m.group(1), 16), m.group(2))
        if name and ins:
            out[name].append(ins)
    return out


def instruction(address, text):
    """The Instr that SASS text (`@!P0 BRA 0x4c0`) at `address` holds, or None."""
    m = BODY.match(text)
    return Instr(address, (m.group(1) or "").strip(), m.group(2), m.group(3).strip()) if m else None


def ncu_functions(text):
    """Each kernel of ncu's source page (`ncu -i REPORT --page source --csv --print-source sass`, the
    report holding the source counters) as its list of Instr, at its addresses in memory. ncu names
    a kernel without its template arguments: a second kernel of the same name is `NAME #2`."""
    out = {}
    for name, header, rows in ncu_stalls.kernels(text):
        col = {h: i for i, h in enumerate(header)}
        found = (instruction(int(r[col["Address"]], 16), r[col["Source"]]) for r in rows)
        key, n = name, 1
        while key in out:
            n += 1
            key = f"{name} #{n}"
        out[key] = [ins for ins in found if ins]
    return out


def loops(instructions, least):
    """(first, last) indices of each loop of at least `least` instructions: a conditional branch at
    `last` back to the instruction at `first` (ptxas tests its loops at the bottom; an unconditional
    branch back is an out-of-line slow path, an mbarrier's retry, returning). Outermost first."""
    index = {ins.address: i for i, ins in enumerate(instructions)}
    found = []
    for last, ins in enumerate(instructions):
        if ins.opcode != "BRA" or not ins.guard:
            continue
        m = BRANCH_TARGET.search(ins.operands)
        first = index.get(int(m.group(1), 16)) if m else None
        if first is not None and first <= last and last - first + 1 >= least:
            found.append((first, last))
    return sorted(found, key=lambda loop: (loop[0], -loop[1]))


def mix(body):
    """Opcode counts (the opcode's first word), most frequent first, ties by name."""
    counts = collections.Counter(ins.opcode.split(".")[0] for ins in body)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def events(body, base):
    """The ordering instructions of a loop body, runs of one opcode and operand shape folded."""
    out = []
    for ins in body:
        if not EVENTS.match(ins.opcode):
            continue
        text = f"{ins.guard + ' ' if ins.guard else ''}{ins.opcode}"
        if ins.opcode.startswith("WARPGROUP.DEPBAR"):
            text += " " + ins.operands  # which wait: gsb0, 0x0 or 0x1
        if out and out[-1][1] == text:
            out[-1][2] += 1
        else:
            out.append([ins.address - base, text, 1])
    return [f"{address:#06x} {text}" + (f" x{n}" if n > 1 else "") for address, text, n in out]


def report(name, instructions, least):
    """Lines describing every loop of one function (none: an empty list), at addresses from the
    function's start (ncu's are in memory)."""
    lines, base = [], instructions[0].address if instructions else 0
    for first, last in loops(instructions, least):
        body = instructions[first:last + 1]
        lines.append(f"loop {body[0].address - base:#06x}-{body[-1].address - base:#06x}: {len(body)} instructions")
        lines.append("  mix: " + ", ".join(f"{op} {n}" for op, n in mix(body)))
        lines += ["  " + event for event in events(body, base)]
    return [name] + lines if lines else []


def read_functions(path, cuobjdump):
    """{name: [Instr]} from a binary, a SASS text or ncu's source page."""
    if not os.path.isfile(path):
        print(f"sass_loops.py: {path}: no such file (give a binary, a .sass/.txt SASS text or an ncu .csv page)",
              file=sys.stderr)
        sys.exit(2)
    if path.endswith((".sass", ".txt", ".csv")):
        with open(path) as f:
            text = f.read()
        return ncu_functions(text) if path.endswith(".csv") else functions(text, "sm_90a")
    tool = cuobjdump or shutil.which("cuobjdump")
    if not tool or not os.access(tool, os.X_OK):
        print("sass_loops.py: cuobjdump not found: put the CUDA toolkit's on PATH or give --cuobjdump "
              "(scripts/setup.sh unpacks one into build/tools/bin)", file=sys.stderr)
        sys.exit(2)
    sass = subprocess.run([tool, "--dump-sass", path], check=True, capture_output=True, text=True).stdout
    return functions(sass, "sm_90a")


def main(argv):
    p = argparse.ArgumentParser(prog="sass_loops.py", description=__doc__.split("\n\n")[0])
    p.add_argument("input", help="a binary, cuobjdump's SASS text (.sass, .txt) or ncu's source page (.csv)")
    p.add_argument("--kernel", required=True, help="regular expression on the function's name")
    p.add_argument("--cuobjdump", help="cuobjdump to read a binary with (default: the one on PATH)")
    p.add_argument("--min", type=int, default=64, help="least instructions in a loop reported (default 64)")
    args = p.parse_args(argv)
    if args.min < 1:
        p.error(f"--min {args.min}: give 1 or more")
    funcs = {n: ins for n, ins in read_functions(args.input, args.cuobjdump).items() if re.search(args.kernel, n)}
    if not funcs:
        print(f"sass_loops.py: no function (sm_90a, from cuobjdump) matches '{args.kernel}'", file=sys.stderr)
        return 1
    lines = [line for name in sorted(funcs) for line in report(name, funcs[name], args.min)]
    if not lines:
        print(f"sass_loops.py: no loop of {args.min} or more instructions in {len(funcs)} function(s)", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
