#!/usr/bin/env python3
"""Checks in the sm_90a SASS that each timed probe kernel really contains the instruction it
claims to time (LDS, LDG, LDSM, HGMMA/QGMMA/IGMMA, HMMA/IMMA, UTMALDG, LDGSTS, STS), unrolled as written
(ptxas deletes or hoists repeated non-volatile shared loads; a probe whose loop lost them would time
an empty loop). It needs no GPU: cuobjdump on PATH, or the one given after the binary (scripts/setup.sh
unpacks NVIDIA's into build/tools/bin where the toolkit has none). Exit 77 (skipped) without one.

usage: check_sass.py TKPROBE [CUOBJDUMP]"""
import os
import re
import shutil
import subprocess
import sys
from collections import namedtuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from sass_loops import functions  # noqa: E402  (the SASS reader scripts/sass_loops.py shares)

UNROLL = 16  # kUnroll in probes/smem-latency/smem_latency_kernels.hpp, probes/timed_kernels/smem_banks_kernels.hpp
MEM_UNROLL = 8  # kUnroll in probes/timed_kernels/global_chase.hpp
PAIR_UNROLL = 4  # kPairUnroll in probes/timed_kernels/wgmma_kernels.hpp: the first pass + 4 unrolled pairs of passes
WGMMA_PER_PASS = 4  # kKSlices
WARP_LOADS_IN_FLIGHT = 8  # kWarpLoadsInFlight in probes/copy-engines/copy_engines_kernels.hpp
CP_ASYNC_UNROLL = 4  # kCpAsyncUnroll in probes/copy-engines/copy_engines_kernels.cu
QUADRANT_FMAS = 16 * 8  # kUnroll x kChains in probes/quadrants/quadrants_kernels.hpp
CHASE_UNROLL = 16  # kChaseUnroll in probes/cluster/cluster_kernels.hpp
STREAM_UNROLL = 4  # kStreamUnroll, likewise
L2_LINE_LOADS = 1 + 8 + 16  # probes/l2/l2_kernels.hpp: the untimed load, kShortChase and kLongChase

# A kernel family: pattern in the mangled name, opcode pattern, least count, kernels expected, and
# whether it is timed (then it must read the clock at the start and end of its timed region).
Expect = namedtuple("Expect", "needle opcode least kernels timed", defaults=(True,))
EXPECTED = [
    Expect("smem_latency.*chase_kernel", r"LDS", 2 * UNROLL, 2),  # warm-up and timed chase, both addressings
    # global_chase (mem-latency, l2): the warm lap and the timed chase, through L1 (.ca) and L2 only (.cg)
    Expect("12global_chase.*chase_kernel", r"LDG\.64(\.\w+)*", 2 * MEM_UNROLL, 2),
    Expect("strided_kernelILi4E", r"LDS", UNROLL, 1),
    Expect("strided_kernelILi8E", r"LDS\.64", UNROLL, 1),
    Expect("strided_kernelILi16E", r"LDS\.128", UNROLL, 1),
    Expect("ldmatrix_kernel", r"LDSM\.16\.M88\.4", UNROLL, 2),
    Expect("quadrants.*fma_kernel_impl", r"FFMA", QUADRANT_FMAS, 1),  # kUnroll x kChains independent FFMA
    # cluster: ld.shared::cluster is a generic LD (LD.E) through the shared window (SR_SWINHI as the
    # high word in the H200's SASS): the warm-up and the timed chase, then the stream.
    Expect("7cluster.*chase_kernel", r"LD", 2 * CHASE_UNROLL, 1),
    Expect("7cluster.*stream_kernel", r"LD\.128", STREAM_UNROLL, 1),
    # The multicast test (timed by CUDA events): its two bulk tensor copies, the multicast one and each
    # block's own (whatever modifiers the SASS gives the multicast form).
    Expect("7cluster.*multicast_kernel", r"UTMALDG\.2D(\.\w+)*", 2, 1, timed=False),
    # l2: every load of a line's chases (ld.global.cg, whatever modifiers the SASS gives it), and the
    # stream's 16-byte load (timed by CUDA events).
    Expect("2l2.*map_kernel", r"LDG(\.\w+)*", L2_LINE_LOADS, 1),
    Expect("2l2.*stream_kernel", r"LDG(\.\w+)*\.128(\.\w+)*", 1, 1, timed=False),  # LDG.E.128.STRONG.GPU on the H200
    Expect("load_box_kernel", r"UTMALDG\.2D", 1, 1, timed=False),  # tma-swizzle's bulk tensor load
    # copy-engines (timed by CUDA events): one bulk tensor copy issued per box; cp.async.cg as LDGSTS
    # (.BYPASS: L2 only), unrolled 4x; the fallback's kWarpLoadsInFlight loads, then as many stores.
    Expect("copy_engines.*tma_copy_kernel", r"UTMALDG\.2D", 1, 1, timed=False),
    Expect("copy_engines.*cp_async_copy_kernel", r"LDGSTS\.BYPASS\.128", CP_ASYNC_UNROLL, 1, timed=False),
    Expect("copy_engines.*warp_copy_kernel", r"LDG\.128", WARP_LOADS_IN_FLIGHT, 1, timed=False),
    Expect("copy_engines.*warp_copy_kernel", r"STS\.128", WARP_LOADS_IN_FLIGHT, 1, timed=False),
]
# The e4m3 attention forward (kernels/attention/hopper/config_fp8.cuh, not timed here): its 32 wgmma
# of m64n128k32 with e4m3 inputs (S = Q K^T and P V, 4 each, in the kernel's 8 places that issue
# them) are the fp8 tensor-core instruction, as in the wgmma probe's e4m3 kernels, not a
# conversion to 16-bit ones.
EXPECTED.append(Expect("forward_kernelINS0_9Fp8Config", r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3", 32, 1, timed=False))
# wgmma: every N for both A sources. HGMMA for 16-bit and tf32 inputs, QGMMA for fp8, IGMMA for s8.
WGMMA_LEAST = WGMMA_PER_PASS * (1 + 2 * PAIR_UNROLL)
for tag, opcode, kernels in [
    ("8bf16_f32", r"HGMMA\.64x\d+x16\.F32\.BF16", 64),
    ("7f16_f32", r"HGMMA\.64x\d+x16\.F32", 64),
    ("7f16_f16", r"HGMMA\.64x\d+x16\.F16", 64),
    ("8tf32_f32", r"HGMMA\.64x\d+x8\.F32\.TF32", 64),
    ("8e4m3_f32", r"QGMMA\.64x\d+x32\.F32\.E4M3\.E4M3", 64),
    ("8e4m3_f16", r"QGMMA\.64x\d+x32\.F16\.E4M3\.E4M3", 64),
    ("8e5m2_f32", r"QGMMA\.64x\d+x32\.F32\.E5M2\.E5M2", 64),
    ("8e5m2_f16", r"QGMMA\.64x\d+x32\.F16\.E5M2\.E5M2", 64),
    ("6s8_s32", r"IGMMA\.64x\d+x32\.S8\.S8", 36),
]:
    EXPECTED.append(Expect(f"wgmma_kernelIN2tk4arch{tag}E.*FillerE0ELi0E", opcode, WGMMA_LEAST, kernels))
# overlap: the bf16 64x256 kernel with K filler instructions after every wgmma, for each K it sweeps
# (probes/overlap/overlap_kernels.hpp kCounts): the wgmma and every filler instruction still there.
OVERLAP_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128]
for filler, opcode in [(1, r"FFMA"), (2, r"MUFU\.EX2")]:
    for count in OVERLAP_COUNTS:
        needle = f"wgmma_kernelIN2tk4arch8bf16_f32ELi256E.*FillerE{filler}ELi{count}EEEv"
        EXPECTED.append(Expect(needle, r"HGMMA\.64x256x16\.F32\.BF16", WGMMA_LEAST, 1))
        EXPECTED.append(Expect(needle, opcode, count * WGMMA_LEAST, 1))
# mma.sync at each ILP: at least one pass of ILP instructions in the loop and the final pass.
# e4m3 has no mma.sync unit on sm_90: ptxas lowers each to two f16 HMMA.16816 after converting.
for tag, opcode, per_mma in [
    ("8bf16_f32", r"HMMA\.16816\.F32\.BF16", 1),
    ("7f16_f32", r"HMMA\.16816\.F32", 1),
    ("8tf32_f32", r"HMMA\.1688\.F32\.TF32", 1),
    ("8e4m3_f32", r"HMMA\.16816\.F32", 2),
    ("6s8_s32", r"IMMA\.16832\.S8\.S8", 1),
]:
    for ilp in range(1, 9):
        EXPECTED.append(Expect(f"mma_sync_kernelIN2tk4arch{tag}ELi{ilp}E", opcode, 3 * ilp * per_mma, 1))


def opcode_base(op):
    """LDS.U.128 -> LDS.128: drop the modifiers that do not change what is loaded."""
    return ".".join(p for p in op.split(".") if p not in ("U", "S", "E"))


def find_cuobjdump():
    given = sys.argv[2] if len(sys.argv) > 2 else ""
    return shutil.which("cuobjdump") or (given if os.access(given, os.X_OK) else None)


def main():
    cuobjdump = find_cuobjdump()
    if not cuobjdump:
        print("skipped: cuobjdump not found (the CUDA toolkit's, or scripts/setup.sh's in build/tools/bin)")
        return 77
    sass = subprocess.run([cuobjdump, "--dump-sass", sys.argv[1]], check=True, capture_output=True, text=True).stdout
    funcs = functions(sass, "sm_90a")
    failures = 0
    for needle, opcode, least, kernels, timed in EXPECTED:
        matched = {n: ops for n, ops in funcs.items() if re.search(needle, n)}
        if len(matched) != kernels:
            print(f"FAIL {needle}: expected {kernels} kernel(s), found {len(matched)}")
            failures += 1
            continue
        counts, clocks = [], []
        for name, instructions in matched.items():
            counts.append(sum(re.fullmatch(opcode, opcode_base(ins.opcode)) is not None for ins in instructions))
            clocks.append(sum("SR_CLOCKLO" in ins.operands for ins in instructions))
        ok = min(counts) >= least and (min(clocks) >= 2 or not timed)
        failures += not ok
        clock_text = f", least {min(clocks)} clock64 reads (need >= 2)" if timed else ""
        print(f"{'ok  ' if ok else 'FAIL'} {needle} ({kernels} kernel(s)): least {min(counts)} x {opcode} "
              f"(need >= {least}){clock_text}")
    print(f"{len(EXPECTED) - failures} passed, {failures} failed")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
