#!/usr/bin/env python3
"""scripts/slurm-fleet.sh without Slurm or a GPU: a stand-in `srun` runs the script's per-GPU
command as two nodes of three GPUs would (SLURMD_NODENAME, SLURM_LOCALID), and a stand-in for
`tkprobe all` writes each card's report: the committed baseline with the card's own UUID, one card
10% slower on every judged row. The real `tkprobe fleet` then has to flag that card alone, exit 1,
and leave fleet.md and fleet.json.

usage: test_slurm_fleet.py SOURCE_DIR TKPROBE"""
import json
import os
import subprocess
import sys
import tempfile

SOURCE, TKPROBE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import tkreport  # noqa: E402

SRUN = """#!/usr/bin/env bash
# Two nodes of three GPUs, one task each, as `srun` with --gpus-per-task=1 would start them.
while [[ "$1" == --* ]]; do shift; done
for node in nodeA nodeB; do
  for gpu in 0 1 2; do SLURMD_NODENAME=$node SLURM_LOCALID=$gpu "$@" || exit 1; done
done
"""

FAKE_TKPROBE = """#!/usr/bin/env python3
import json, sys, os, zlib
if sys.argv[1] != "all":
    os.execv(os.environ["REAL_TKPROBE"], [os.environ["REAL_TKPROBE"]] + sys.argv[1:])
out = sys.argv[sys.argv.index("--json") + 1]
card = os.environ["SLURMD_NODENAME"] + os.environ["SLURM_LOCALID"]
doc = json.load(open(os.environ["CARD_REPORT"]))
doc["device"]["uuid"] = "GPU-%08x-0000-0000-0000-000000000000" % zlib.crc32(card.encode())
if card == "nodeB1":  # the slow card: every statistic 10% worse
    for r in doc["results"]:
        for s in r["metrics"].values():
            if isinstance(s, dict) and "median" in s:
                f = 1 / 1.1 if s["better"] == "higher" else 1.1
                for k in ("median", "min", "max", "q1", "q3"):
                    s[k] *= f
json.dump(doc, open(out, "w"))
"""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir, out = os.path.join(tmp, "bin"), os.path.join(tmp, "out")
        os.makedirs(bin_dir)
        for name, text in (("srun", SRUN), ("tkprobe", FAKE_TKPROBE)):
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(bin_dir, name), 0o755)
        card_report = os.path.join(tmp, "card.json")
        with open(card_report, "w") as f:  # the baseline as the version 2 document, drift and all
            json.dump(tkreport.load(os.path.join(SOURCE, "results", "h200", "suite.json")), f)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], TKPROBE=os.path.join(bin_dir, "tkprobe"),
                   REAL_TKPROBE=TKPROBE, CARD_REPORT=card_report)
        run = subprocess.run(["bash", os.path.join(SOURCE, "scripts", "slurm-fleet.sh"), out], env=env,
                             capture_output=True, text=True, timeout=600)
        failures = []
        if run.returncode != 1:
            failures.append(f"exit {run.returncode}, not 1 (an outlier)\n{run.stdout}{run.stderr}")
        reports = sorted(f for f in os.listdir(out) if f.endswith(".json") and "-gpu" in f)
        if len(reports) != 6:
            failures.append(f"{len(reports)} card reports, not 6: {reports}")
        fleet = json.load(open(os.path.join(out, "fleet.json"))) if os.path.exists(os.path.join(out, "fleet.json")) else {}
        flagged = {fleet["gpus"][g]["source"] for r in fleet.get("rows", []) for g in r["outliers"]}
        if flagged != {os.path.join(out, "nodeB-gpu1.json")}:
            failures.append(f"flagged {sorted(flagged)}, not nodeB-gpu1.json alone")
        if "**OUTLIER**" not in open(os.path.join(out, "fleet.md")).read() if os.path.exists(os.path.join(out, "fleet.md")) else True:
            failures.append("fleet.md does not mark the outlier")
        for f in failures:
            print("FAIL:", f)
        print(f"slurm-fleet: {len(failures)} failure(s)")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
