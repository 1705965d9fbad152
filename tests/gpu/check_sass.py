#!/usr/bin/env python3
"""Checks in the sm_90a SASS that each timed probe kernel really contains the instruction it
claims to time, unrolled as written (ptxas deletes or hoists repeated non-volatile shared loads;
a probe whose loop lost them would time an empty loop). Exit 77 (skipped) without cuobjdump."""
import re
import shutil
import subprocess
import sys

UNROLL = 16  # kUnroll in probes/smem_*_kernels.hpp

# (substring of the mangled kernel name, opcode, least count, kernels expected)
EXPECTED = [
    ("chase_kernel", "LDS", 2 * UNROLL, 2),  # warm-up and timed chase, precomputed and indexed
    ("strided_kernelILi4E", "LDS", UNROLL, 1),
    ("strided_kernelILi8E", "LDS.64", UNROLL, 1),
    ("strided_kernelILi16E", "LDS.128", UNROLL, 1),
    ("ldmatrix_kernel", "LDSM.16.M88.4", UNROLL, 2),
]


def functions(sass, arch):
    """Maps each function compiled for `arch` to its instructions, as (opcode, text) pairs."""
    out, name, current_arch = {}, None, None
    for line in sass.splitlines():
        m = re.match(r"\s*arch = (\w+)", line)
        if m:
            current_arch, name = m.group(1), None
            continue
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1) if current_arch == arch else None
            if name:
                out[name] = []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*)", line)
        if name and m:
            out[name].append((m.group(1), m.group(2)))
    return out


def opcode_base(op):
    """LDS.U.128 -> LDS.128: drop the modifiers that do not change what is loaded."""
    return ".".join(p for p in op.split(".") if p not in ("U", "S", "E"))


def main():
    if not shutil.which("cuobjdump"):
        print("skipped: cuobjdump not found (it ships with the CUDA toolkit on the GPU machine)")
        return 77
    sass = subprocess.run(["cuobjdump", "--dump-sass", sys.argv[1]], check=True, capture_output=True, text=True).stdout
    funcs = functions(sass, "sm_90a")
    failures = 0
    for needle, opcode, least, kernels in EXPECTED:
        matched = {n: ops for n, ops in funcs.items() if needle in n}
        if len(matched) != kernels:
            print(f"FAIL {needle}: expected {kernels} kernel(s), found {len(matched)}")
            failures += 1
            continue
        for name, instructions in matched.items():
            count = sum(opcode_base(op) == opcode for op, _ in instructions)
            clock_reads = sum("SR_CLOCKLO" in text for _, text in instructions)
            ok = count >= least and clock_reads >= 2  # the timed region's start and end
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {needle}: {count} x {opcode} (need >= {least}), "
                  f"{clock_reads} clock64 reads (need >= 2)")
    print(f"{len(EXPECTED) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
