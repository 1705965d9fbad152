#!/usr/bin/env python3
"""Confirms the bank model with the hardware's own counters: for every kernel that
smem_banks_ncu_target launches, ncu's shared-load wavefronts per instruction must equal the
wavefronts the model predicts. Exit 77 (skipped) without ncu or a GPU."""
import csv
import io
import json
import shutil
import subprocess
import sys

METRICS = {
    "ld": ("smsp__inst_executed_op_shared_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    "ldsm": ("smsp__sass_inst_executed_op_ldsm.sum", "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"),
}


def number(text):
    return float(text.replace(",", ""))


def main():
    target = sys.argv[1]
    plain = subprocess.run([target], capture_output=True, text=True)
    if plain.returncode == 77 or not shutil.which("ncu"):
        print("skipped: " + ("no CUDA device" if plain.returncode == 77 else "ncu not found"))
        return 77
    plain.check_returncode()
    expected = [json.loads(line) for line in plain.stdout.splitlines() if line.startswith("{")]
    names = sorted({m for pair in METRICS.values() for m in pair})
    prof = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--page", "raw", "--metrics", ",".join(names),
                           target], capture_output=True, text=True)
    if prof.returncode != 0:
        print(prof.stdout[-3000:], prof.stderr[-3000:])
        return 1
    lines = [l for l in prof.stdout.splitlines() if l.startswith('"')]
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines))) if r.get("ID", "").isdigit()]
    if len(rows) != len(expected):
        print(f"FAIL: ncu profiled {len(rows)} kernels, the target launched {len(expected)}")
        return 1
    failures = 0
    for exp, row in zip(expected, rows):
        inst_metric, wave_metric = METRICS[exp["op"]]
        inst, waves = number(row[inst_metric]), number(row[wave_metric])
        per_inst = waves / inst if inst else float("nan")
        ok = inst > 0 and abs(per_inst - exp["wavefronts"]) <= 0.02 * exp["wavefronts"]
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {exp['case']}: ncu {per_inst:.2f} wavefronts/instruction "
              f"({waves:.0f} / {inst:.0f}), model {exp['wavefronts']}")
    print(f"{len(expected) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
