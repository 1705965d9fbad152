#!/usr/bin/env python3
"""scripts/measured_rows.py on the committed H200 baseline, without a GPU: against a run of a build that
skipped every row of some probes and a few of another (as the PTX-only build skips the sm_90a rows),
the cut keeps exactly the rows the run measured, keeps their bands, and `tkprobe compare` of the cut
against the run passes, where the whole baseline against it fails on the skipped rows. Bad arguments
exit 2.

usage: test_measured_rows.py SOURCE_DIR TKPROBE
"""
import copy
import os
import subprocess
import sys
import tempfile

from checklist import Checklist

SKIPPED_PROBES = ("tensor-cores", "wgmma", "gemm")  # every row skipped, as the PTX-only build does


def main():
    source, tkprobe = sys.argv[1:3]
    sys.path.insert(0, os.path.join(source, "scripts"))
    import tkreport
    script = os.path.join(source, "scripts", "measured_rows.py")
    checks = Checklist("measured_rows")
    base_path = os.path.join(source, "results", "h200", "suite.json")
    base = tkreport.load(base_path)
    run = copy.deepcopy(base)
    run["tool"].pop("baseline", None)
    bandwidth_skipped = 0
    for row in run["results"]:
        for stats in row["metrics"].values():
            if isinstance(stats, dict):
                stats.pop("drift_pct", None)
                stats.pop("runs", None)
        skip = row["probe"] in SKIPPED_PROBES or (row["probe"] == "bandwidth" and bandwidth_skipped < 3)
        if skip and row["status"] == "ok":
            bandwidth_skipped += row["probe"] == "bandwidth"
            row.update(status="skipped", reason="needs sm_90a", metrics={})
            row.pop("primary", None)
            row.pop("check", None)
    measured = sum(r["status"] == "ok" for r in run["results"])
    with tempfile.TemporaryDirectory() as tmp:
        run_path, cut_path = os.path.join(tmp, "run.json"), os.path.join(tmp, "cut.json")
        with open(run_path, "w") as f:
            f.write(tkreport.text(run))
        r = subprocess.run([sys.executable, script, base_path, run_path, cut_path], capture_output=True, text=True)
        checks.expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        cut = tkreport.load(cut_path)
        checks.expect(len(cut["results"]) == measured and all(x["probe"] not in SKIPPED_PROBES for x in cut["results"]),
                      f"{len(cut['results'])} rows kept, not the {measured} the run measured")
        drifts = [s.get("drift_pct") for x in cut["results"] for s in x["metrics"].values() if isinstance(s, dict)]
        checks.expect(any(d is not None for d in drifts), "the cut keeps the baseline's bands")
        whole = subprocess.run([tkprobe, "compare", base_path, run_path], capture_output=True, text=True)
        checks.expect(whole.returncode == 1, f"the whole baseline against the run: exit {whole.returncode}")
        cut_vs_run = subprocess.run([tkprobe, "compare", cut_path, run_path], capture_output=True, text=True)
        checks.expect(cut_vs_run.returncode == 0, f"the cut against the run: exit {cut_vs_run.returncode} "
                                                  f"{cut_vs_run.stdout[-300:]}{cut_vs_run.stderr}")
        for bad in ([base_path, run_path], [base_path, os.path.join(tmp, "none.json"), cut_path]):
            r = subprocess.run([sys.executable, script, *bad], capture_output=True, text=True)
            checks.expect(r.returncode == 2 and r.stderr, f"{bad}: exit {r.returncode}")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
