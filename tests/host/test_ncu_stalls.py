#!/usr/bin/env python3
"""scripts/ncu_stalls.py without a GPU, on a made-up `ncu --page source --csv` print: two kernels,
the second printed twice (ncu repeats a kernel's block; it must be read once). The wgmma wait must
lead the first kernel with its share of the samples and its main reason, the reasons and opcodes
must add up over the instructions, --kernel must pick one kernel, and a file without samples, a
missing file or --top 0 must exit 2 with a message.

usage: test_ncu_stalls.py SOURCE_DIR"""
import os
import sys
import tempfile

from checklist import Checklist, run_script

SCRIPT = os.path.join(sys.argv[1], "scripts", "ncu_stalls.py")
HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"stall_barrier","stall_short_sb","stall_selected","stall_barrier (Not Issued)"')


def block(name, rows):
    lines = [f'"Kernel Name","{name}",', HEADER]
    lines += [f'"{a}","{sass}","{sum(r)}","0","{r[0]}","{r[1]}","{r[2]}","0"' for a, sass, r in rows]
    return "\n".join(lines)


DKDV = [("0x10", "      WARPGROUP.DEPBAR.LE gsb0, 0x0", (60, 0, 0)),
        ("0x20", "      MUFU.EX2 R13, R13", (0, 20, 5)),
        ("0x30", "@!P0  BRA 0x40", (0, 10, 5))]
DQ = [("0x50", "      HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24", (0, 0, 7)),
      ("0x60", "      FMUL R14, R14, R27", (0, 3, 0))]


def run(*args):
    return run_script(SCRIPT, *args)


def main():
    checks = Checklist("ncu_stalls")
    expect = checks.expect

    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "source.csv")
        with open(report, "w") as f:
            f.write("\n".join([block("dkdv_kernel<128>", DKDV), block("dq_kernel<128>", DQ),
                               block("dq_kernel<128>", DQ)]) + "\n")
        r = run(report, "--top", "2")
        out = r.stdout
        expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        expect(out.count("## dq_kernel<128>") == 1, "the repeated kernel is read once")
        expect("100 stall samples over 3 instructions" in out, "the first kernel's samples add up to 100")
        expect("| 60.0% | 0x10 | `WARPGROUP.DEPBAR.LE gsb0, 0x0` | barrier 60 |" in out,
               "the wgmma wait leads with 60%")
        expect("| barrier | 60.0% |" in out and "| short_sb | 30.0% |" in out and "| selected | 10.0% |" in out,
               "the reasons over the kernel")
        expect("| WARPGROUP | 60.0% |" in out and "| MUFU | 25.0% |" in out and "| BRA | 15.0% |" in out,
               "the opcodes, predicates dropped")
        expect("0x30" not in out.split("## dq_kernel")[0], "--top 2 lists two instructions")
        r = run(report, "--kernel", "dq_")
        expect(r.returncode == 0 and "dkdv" not in r.stdout and "10 stall samples" in r.stdout, "--kernel picks dq")
        empty = os.path.join(tmp, "empty.csv")
        open(empty, "w").write('"Kernel Name","k",\n' + HEADER + "\n")
        for bad in ([empty], [os.path.join(tmp, "missing.csv")], [report, "--top", "0"], [report, "--kernel", "x"]):
            r = run(*bad)
            expect(r.returncode == 2 and "ncu_stalls.py: error: " in r.stderr, f"{bad}: exit {r.returncode}")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
