#!/usr/bin/env python3
"""scripts/slurm-fleet.sh without Slurm or a GPU: a stand-in `srun` runs the script's per-node
command as two nodes would (SLURMD_NODENAME), and a stand-in for `tkprobe all --devices all` writes
each node's report of three GPUs as tkprobe merges them (src/report_devices.hpp): the committed
baseline's rows once per device, each card with its own UUID, one card 10% slower on every judged
row. The real `tkprobe fleet` then has to flag that card alone, exit 1, and leave fleet.md and
fleet.json.

usage: test_slurm_fleet.py SOURCE_DIR TKPROBE"""
import json
import os
import subprocess
import sys
import tempfile

from checklist import Checklist

SOURCE, TKPROBE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import tkreport  # noqa: E402

SRUN = """#!/usr/bin/env bash
# Two nodes, one task each, as `srun` with --ntasks-per-node=1 would start them.
while [[ "$1" == --* ]]; do shift; done
for node in nodeA nodeB; do SLURMD_NODENAME=$node "$@" || exit 1; done
"""

FAKE_TKPROBE = """#!/usr/bin/env python3
import copy, json, sys, os, zlib
if sys.argv[1] != "all":
    os.execv(os.environ["REAL_TKPROBE"], [os.environ["REAL_TKPROBE"]] + sys.argv[1:])
assert sys.argv[sys.argv.index("--devices") + 1] == "all"
out = sys.argv[sys.argv.index("--json") + 1]
node = os.environ["SLURMD_NODENAME"]
card_doc = json.load(open(os.environ["CARD_REPORT"]))
doc = {"schema": card_doc["schema"], "tool": card_doc["tool"], "host": dict(card_doc["host"], hostname=node),
       "devices": [], "results": [], "findings": []}
for k in range(3):
    device = dict(card_doc["device"], index=k)
    device["uuid"] = "GPU-%08x-0000-0000-0000-000000000000" % zlib.crc32(f"{node}{k}".encode())
    doc["devices"].append({"device": device, "telemetry": card_doc["telemetry"]})
    for r in copy.deepcopy(card_doc["results"]):
        if (node, k) == ("nodeB", 1):  # the slow card: every statistic 10% worse
            for s in r["metrics"].values():
                if isinstance(s, dict) and "median" in s:
                    f = 1 / 1.1 if s["better"] == "higher" else 1.1
                    for key in ("median", "min", "max", "q1", "q3"):
                        s[key] *= f
        doc["results"].append({"probe": r.pop("probe"), "device": k, **r})
    doc["findings"] += [{"probe": f["probe"], "device": k, "text": f["text"]} for f in card_doc["findings"]]
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
        checks = Checklist("slurm-fleet")
        checks.expect(run.returncode == 1, f"exit {run.returncode}, not 1 (an outlier)\n{run.stdout}{run.stderr}")
        reports = sorted(f for f in os.listdir(os.path.join(out, "reports")) if f.endswith(".json"))
        checks.expect(reports == ["nodeA.json", "nodeB.json"], f"node reports {reports}, not nodeA.json and nodeB.json")
        fleet = json.load(open(os.path.join(out, "fleet.json"))) if os.path.exists(os.path.join(out, "fleet.json")) else {}
        checks.expect(len(fleet.get("gpus", [])) == 6, f"{len(fleet.get('gpus', []))} cards, not 6")
        flagged = {fleet["gpus"][g]["source"] for r in fleet.get("rows", []) for g in r["outliers"]}
        checks.expect(flagged == {os.path.join(out, "reports", "nodeB.json") + " device 1"},
                      f"flagged {sorted(flagged)}, not nodeB.json's device 1 alone")
        fleet_md = os.path.join(out, "fleet.md")
        checks.expect(os.path.exists(fleet_md) and "**OUTLIER**" in open(fleet_md).read(),
                      "fleet.md does not mark the outlier")
        return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
