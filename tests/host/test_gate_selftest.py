#!/usr/bin/env python3
"""scripts/gate-selftest.sh's judging, without a GPU (GATE_REJUDGE=1 on constructed runs): three runs
that differ by noise alone pass every comparison and the 8%-worse rows fail exactly; a run with one row
really 10% slower (per clock and per second alike) fails the A/A pairs it is in.

The runs are the committed H200 baseline (results/h200/suite.json) with its recorded drift removed,
each statistic moved by up to 0.3% (seeded) as three runs of unchanged code move.

usage: test_gate_selftest.py SOURCE_DIR TKPROBE
"""
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

NOISE = 0.003
SLOWDOWN = 1.10


def raw_run(baseline, index, rng):
    """One run as `tkprobe all` writes it: no baseline record, no drift, each row's primary as the probe
    sets it (the baseline may have moved a row to its per-second twin), its figures a little apart."""
    run = copy.deepcopy(baseline)
    run["tool"].pop("baseline", None)
    run["tool"]["started_at"] = f"2026-12-01T00:0{index}:00Z"
    for row in run["results"]:
        metrics = row["metrics"]
        if row.get("primary") == "tflops" and isinstance(metrics.get("pct_clock_peak"), dict):
            row["primary"] = "pct_clock_peak"
        for stats in metrics.values():
            if not isinstance(stats, dict):
                continue
            stats.pop("drift_pct", None)
            stats.pop("runs", None)
            factor = 1 + rng.uniform(-NOISE, NOISE)
            for key in ("median", "min", "max", "q1", "q3"):
                stats[key] *= factor
    return run


def slow_down(run):
    """Makes the first judged attention row 10% slower, as a slower kernel at the same clock is."""
    for row in run["results"]:
        if row["probe"] == "attention" and row["status"] == "ok" and not row.get("peer"):
            for stats in row["metrics"].values():
                if isinstance(stats, dict):
                    factor = 1 / SLOWDOWN if stats["better"] == "higher" else SLOWDOWN
                    for key in ("median", "min", "max", "q1", "q3"):
                        stats[key] *= factor
            return row["params"]
    raise AssertionError("the baseline has no attention row")


def selftest(source_dir, tkprobe, runs):
    folder = tempfile.mkdtemp(prefix="tkprobe-gate-")
    for i, run in enumerate(runs, 1):
        with open(os.path.join(folder, f"run{i}.json"), "w") as f:
            json.dump(run, f)
    return subprocess.run(["bash", os.path.join(source_dir, "scripts", "gate-selftest.sh"), folder, tkprobe],
                          env=dict(os.environ, GATE_REJUDGE="1"), capture_output=True, text=True)


def main():
    source_dir, tkprobe = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(source_dir, "scripts"))
    import tkreport  # the baseline, a version 3 file, as the version 2 document the runs are made from
    baseline = tkreport.load(os.path.join(source_dir, "results", "h200", "suite.json"))
    rng = random.Random(20261201)
    runs = [raw_run(baseline, i, rng) for i in (1, 2, 3)]
    failures = []

    clean = selftest(source_dir, tkprobe, runs)
    if clean.returncode != 0 or "self-test: 0 failure(s)" not in clean.stdout:
        failures.append(f"noise alone: exit {clean.returncode}\n{clean.stdout}{clean.stderr}")
    if "8% worse: 20 rows scaled, 20 fail, 20 of them scaled" not in clean.stdout:
        failures.append(f"noise alone: the 8%-worse rows did not fail exactly\n{clean.stdout}")

    slower = copy.deepcopy(runs)
    params = slow_down(slower[2])
    regressed = selftest(source_dir, tkprobe, slower)
    for pair in ("A/A: run2 vs run3", "A/A: run1 vs run3"):
        if f"SELF-TEST FAIL: {pair}" not in regressed.stdout:
            failures.append(f"attention {params} 10% slower in run 3: '{pair}' did not fail\n{regressed.stdout}")
    if "SELF-TEST FAIL: A/A: run1 vs run2" in regressed.stdout or regressed.returncode == 0:
        failures.append(f"a slowdown in run 3 alone: runs 1 and 2 must still agree, the test must fail\n"
                        f"{regressed.stdout}")

    for failure in failures:
        print("FAIL:", failure)
    print("gate self-test judging: " + ("ok" if not failures else "FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
