#!/usr/bin/env python3
"""`tkprobe roofline` on this GPU, against ceilings measured in the same run.

    test_roofline.py TKPROBE ROOFLINE_TARGET [TORCH_PYTHON] [--keep DIR]

1. roofline_target's kernels land where the probes predict: each of its printed lines names the
   kernel, the ceiling that must bind and the band its share must fall in, and the work it must
   count exactly (2MNK for the GEMM: ncu's tensor ops are FLOPs; the shared loads' conflict degree).
2. The attention forward's and backward's launches are placed with a binding ceiling, the
   forward's tensor work equal to its 4 B H N^2 D FLOPs.
3. With torch, one transformer block's forward (scripts/roofline_model.py: cuBLAS's GEMMs, cuDNN's
   or FlashAttention's SDPA) is placed kernel by kernel, each with a binding ceiling.
--keep DIR keeps every report: the JSON, ncu's .ncu-rep and its raw CSV (the host tests' fixtures
come from these). Exit 77 (skipped) without ncu or a GPU."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ATTENTION = ["--batch", "2", "--heads", "16", "--seq", "4096", "--head-dim", "128", "--kernel", "wgmma", "--quick"]
ATTENTION_FWD_FLOP = 4 * 2 * 16 * 4096 ** 2 * 128
EXACT_TOLERANCE = 0.01  # counted work against the known figure
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def rows_of(path):
    """The report's rows as {params..., metrics...} dicts (tkprobe's compact rows expanded)."""
    report = json.load(open(path))
    out = []
    for r in report["results"]:
        kind = report["kinds"][r["probe"]][r["kind"]]
        row = dict(zip(kind["params"], r["params"]))
        row.update({(n if isinstance(n, str) else n[0]): v for n, v in zip(kind["metrics"], r["metrics"])})
        out.append(row)
    return out


def roofline(tkprobe, name, options, program, work, keep):
    out = os.path.join(work, name + ".json")
    rep = os.path.join(work, name + ".ncu-rep")
    cmd = [tkprobe, "roofline", "--json", out, "--export", rep, *options, "--", *program]
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(run.stdout, end="")
    if run.returncode != 0:
        print(run.stderr[-3000:])
        check(False, f"{name}: tkprobe roofline exited {run.returncode}")
        return []
    if keep:
        shutil.copy(out, keep)
        shutil.copy(rep, keep)
        with open(os.path.join(keep, name + ".csv"), "w") as csv:
            subprocess.run(["ncu", "--import", rep, "--csv", "--page", "raw", "--print-units", "base"], stdout=csv)
    return rows_of(out)


def near(value, expected, tolerance):
    return abs(value - expected) <= tolerance * abs(expected)


def target_cases(tkprobe, target, expected, ceilings, work, keep):
    regex = "|".join(sorted({e["kernel"] for e in expected}))
    rows = roofline(tkprobe, "target", ["--ceilings", ceilings, "--kernel", regex], [target], work, keep)
    check(len(rows) == len(expected), f"target: {len(rows)} kernels placed, {len(expected)} launched")
    for e, r in zip(expected, rows):
        what = (f"{e['case']}: {r.get('binding')} binds at {r.get('pct_of_binding', 0):.1f}% "
                f"(want {e['binding']}, {e['min_pct']}..{e['max_pct']}%); clock {r['sm_clock_mhz']:.0f} MHz")
        check(r.get("binding") == e["binding"] and e["min_pct"] <= r["pct_of_binding"] <= e["max_pct"], what)
        for exact in ("tensor_tflop", "smem_conflict_x"):
            if exact in e:
                check(near(r.get(exact, 0), e[exact], EXACT_TOLERANCE),
                      f"{e['case']}: {exact} {r.get(exact, 0):.4g}, want {e[exact]:.4g}")


def attention_cases(tkprobe, ceilings, work, keep):
    fwd = roofline(tkprobe, "attention_fwd", ["--ceilings", ceilings, "--kernel", "forward_kernel", "--launch-skip",
                                              "2", "--launch-count", "1"],
                   [tkprobe, "attention", *ATTENTION, "--pass", "fwd"], work, keep)
    bwd = roofline(tkprobe, "attention_bwd", ["--ceilings", ceilings, "--kernel", "dkdv|deterministic|dq|preprocess",
                                              "--launch-skip", "4", "--launch-count", "4"],
                   [tkprobe, "attention", *ATTENTION, "--pass", "bwd"], work, keep)
    for r in fwd:
        check(near(r["tensor_tflop"] * 1e12, ATTENTION_FWD_FLOP, EXACT_TOLERANCE),
              f"attention forward: tensor work {r['tensor_tflop']:.4f} TFLOP, want {ATTENTION_FWD_FLOP / 1e12:.4f}")
    for r in fwd + bwd:
        check(bool(r.get("binding")) and 0 < r["pct_of_binding"] <= 105,
              f"{r['kernel'][:60]}: {r.get('binding')} binds at {r.get('pct_of_binding', 0):.1f}%")
    check(len(fwd) == 1 and len(bwd) >= 1, f"attention: {len(fwd)} forward and {len(bwd)} backward launches placed")


def model_case(tkprobe, torch_python, ceilings, work, keep):
    if not torch_python or subprocess.run([torch_python, "-c", "import torch"], capture_output=True).returncode:
        print("skipped: the PyTorch model (no python with torch)")
        return
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "roofline_model.py")
    rows = roofline(tkprobe, "model", ["--ceilings", ceilings, "--profiler-range"], [torch_python, script], work, keep)
    attention = [r for r in rows if any(s in r["kernel"].lower() for s in ("sdpa", "fmha", "flash", "attention"))]
    check(len(rows) >= 5 and len(attention) == 1,
          f"model: {len(rows)} kernels placed, {len(attention)} of them attention")
    for r in rows:
        check(bool(r.get("binding")), f"model {r['kernel'][:60]}: {r.get('binding')} at {r.get('pct_of_binding', 0):.1f}%")


def measure_ceilings(tkprobe, work):
    """The runs `tkprobe roofline --measure-ceilings` makes, once for every case: one report of them."""
    parts = []
    for name, run in (("hbm", ["bandwidth", "--quick", "--size", "1024"]),
                      ("rest", ["all", "--quick", "--probes", "l2,tensor-cores,overlap"])):
        path = os.path.join(work, name + ".json")
        subprocess.run([tkprobe, *run, "--json", path], check=True, stdout=subprocess.DEVNULL)
        parts.append(json.load(open(path)))
    merged = parts[1]
    merged["kinds"].update(parts[0]["kinds"])  # disjoint probes: each row's kind index stays its probe's
    merged["results"] += parts[0]["results"]
    path = os.path.join(work, "ceilings.json")
    json.dump(merged, open(path, "w"))
    return path


def main():
    args = sys.argv[1:]
    keep = None
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
        del args[args.index("--keep"):args.index("--keep") + 2]
        os.makedirs(keep, exist_ok=True)
    tkprobe, target = args[0], args[1]
    torch_python = args[2] if len(args) > 2 else None
    plain = subprocess.run([target], capture_output=True, text=True)
    if plain.returncode == 77 or not shutil.which("ncu"):
        print("skipped: " + ("no CUDA device" if plain.returncode == 77 else "ncu not found"))
        return 77
    plain.check_returncode()
    expected = [json.loads(l) for l in plain.stdout.splitlines() if l.startswith("{")]
    with tempfile.TemporaryDirectory() as work:
        ceilings = measure_ceilings(tkprobe, work)
        if keep:
            shutil.copy(ceilings, keep)
        target_cases(tkprobe, target, expected, ceilings, work, keep)
        attention_cases(tkprobe, ceilings, work, keep)
        model_case(tkprobe, torch_python, ceilings, work, keep)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
