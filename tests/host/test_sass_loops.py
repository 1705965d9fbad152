#!/usr/bin/env python3
"""scripts/sass_loops.py without a GPU or cuobjdump, on made-up SASS text in cuobjdump's format: a
consumer-like loop (a conditional branch back) holding wgmma issue, a wgmma wait and a run of
MUFU.EX2; an out-of-line mbarrier retry after it whose unconditional branch back is no loop; the same
kernel compiled for sm_80, which must not be read; a second kernel the --kernel pattern leaves out.
The loop must be found with its length and mix and its events in order, runs folded, and the same
from a lone cubin's SASS (its arch named once) and from ncu's source page of the kernel loaded at an
address in memory, where a second kernel of the same name is kept apart; a kernel that matches nothing,
or holds no loop of --min instructions, exits 1; a bad --min, a missing input, or a binary with no
cuobjdump to read it exits 2 with a message.

usage: test_sass_loops.py SOURCE_DIR"""
import os
import re
import sys
import tempfile

from checklist import Checklist, run_script

SCRIPT = os.path.join(sys.argv[1], "scripts", "sass_loops.py")


def function(name, body):
    lines = [f"\t\tFunction : {name}"]
    lines += [f"        /*{address:04x}*/                   {text} ;" for address, text in body]
    return "\n".join(lines)


LOOP = [(0x00, "MOV R1, c[0x0][0x28]"),
        (0x10, "S2R R0, SR_TID.X"),
        (0x20, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R11+UR13+0x38020], R10"),  # loop start
        (0x30, "@!P0 BRA 0xa0"),
        (0x40, "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR20], RZ, !UPT"),
        (0x50, "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR24], R88, gsb0"),
        (0x60, "WARPGROUP.DEPBAR.LE gsb0, 0x0"),
        (0x70, "MUFU.EX2 R88, R88"),
        (0x80, "MUFU.EX2 R89, R89"),
        (0x90, "@!P1 BRA 0x20"),  # the loop's branch back
        (0xa0, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R11+UR13+0x38020], R10"),  # the retry, out of line
        (0xb0, "@!P0 BRA 0xa0"),
        (0xc0, "BRA 0x40"),  # back into the loop: not a loop itself
        (0xd0, "EXIT")]
OTHER = [(0x10, "FADD R1, R2, R3"), (0x20, "@P0 BRA 0x10"), (0x30, "EXIT")]
SASS = "\n".join(["\tcode for sm_80", "\t\tarch = sm_80", function("_Z6kernelv", OTHER),
                  "\tcode for sm_90a", "\t\tarch = sm_90a", function("_Z6kernelv", LOOP),
                  function("_Z5otherv", OTHER)]) + "\n"


def ncu_page(name, body, base):
    """ncu's source page (--page source --csv) of one kernel loaded at `base`."""
    lines = [f'"Kernel Name","{name}",', '"Address","Source","Warp Stall Sampling (All Samples)"']
    for address, text in body:
        text = re.sub(r"BRA 0x([0-9a-f]+)", lambda m: f"BRA {int(m.group(1), 16) + base:#x}", text)
        lines.append(f'"{address + base:#x}","      {text}","1"')
    return "\n".join(lines) + "\n"


def run(*args):
    return run_script(SCRIPT, *args)


def main():
    checks = Checklist("sass_loops")
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        sass = os.path.join(tmp, "kernel.sass")
        with open(sass, "w") as f:
            f.write(SASS)
        r = run(sass, "--kernel", "kernel", "--min", "4")
        out = r.stdout.splitlines()
        expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        expect(out[:1] == ["_Z6kernelv"] and "_Z5otherv" not in r.stdout, "only the matching kernel")
        loops = [line for line in out if line.startswith("loop ")]
        expect(loops == ["loop 0x0020-0x0090: 8 instructions"], f"one loop, the retry's branch back none: {loops}")
        expect("  mix: BRA 2, HGMMA 2, MUFU 2, SYNCS 1, WARPGROUP 1" in out,
               f"its mix, most frequent first, ties by name: {[line for line in out if 'mix' in line]}")
        expect(out[3:] == ["  0x0020 SYNCS.PHASECHK.TRANS64.TRYWAIT", "  0x0030 @!P0 BRA",
                           "  0x0040 HGMMA.64x128x16.F32.BF16 x2", "  0x0060 WARPGROUP.DEPBAR.LE gsb0, 0x0",
                           "  0x0070 MUFU.EX2 x2", "  0x0090 @!P1 BRA"], f"the events in order, runs folded: {out[3:]}")
        expect("FADD" not in r.stdout, "the sm_80 copy is not read")
        page = os.path.join(tmp, "source.csv")
        with open(page, "w") as f:
            f.write(ncu_page("void kernel()", LOOP, 0x7F8D897A9E00))
        r = run(page, "--kernel", "kernel", "--min", "4")
        head = r.stdout.splitlines()[:2]
        expect(r.returncode == 0 and head == ["void kernel()", "loop 0x0020-0x0090: 8 instructions"],
               f"ncu's page: the same loop, at addresses from the kernel's start ({r.stdout[:80]!r} {r.stderr})")
        cubin = os.path.join(tmp, "cubin.sass")
        with open(cubin, "w") as f:
            f.write("\n".join(["\tcode for sm_90a", "\t.target\tsm_90a", function("_Z6kernelv", LOOP)]) + "\n")
        r = run(cubin, "--kernel", "kernel", "--min", "4")
        expect(r.returncode == 0 and "loop 0x0020-0x0090: 8 instructions" in r.stdout,
               f"a lone cubin's SASS: the same loop ({r.stdout[:80]!r} {r.stderr})")
        with open(page, "a") as f:
            f.write(ncu_page("void kernel()", LOOP, 0x7F8D897B0000))
        r = run(page, "--kernel", "kernel", "--min", "4")
        names = [line for line in r.stdout.splitlines() if not line.startswith(" ") and not line.startswith("loop")]
        expect(r.returncode == 0 and names == ["void kernel()", "void kernel() #2"],
               f"two kernels of one name on ncu's page: both, apart ({names} {r.stderr})")
        r = run(sass, "--kernel", "kernel")
        expect(r.returncode == 1 and "no loop of 64 or more" in r.stderr, f"--min 64: no loop, exit 1 ({r.stderr})")
        r = run(sass, "--kernel", "nothing")
        expect(r.returncode == 1 and "no function (sm_90a, from cuobjdump) matches" in r.stderr, "no match: exit 1")
        r = run(sass, "--kernel", "kernel", "--min", "0")
        expect(r.returncode == 2 and "--min 0" in r.stderr, "--min 0: usage error")
        r = run(os.path.join(tmp, "missing.sass"), "--kernel", "kernel")
        expect(r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr,
               f"a missing input: a message, exit 2 ({r.stderr})")
        r = run(SCRIPT, "--kernel", "kernel", "--cuobjdump", os.path.join(tmp, "no-cuobjdump"))
        expect(r.returncode == 2 and "cuobjdump not found" in r.stderr,
               f"a binary without cuobjdump: exit 2 ({r.stderr})")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
