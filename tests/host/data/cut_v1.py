#!/usr/bin/env python3
"""Cuts the version 1 fixtures in tests/host/data/v1/ from the H200's version 1 reports, which left the
tree once the suite baseline superseded them (results/README.md): each report keeps its sections and
findings whole and, of its rows, the smallest of each kind (probe, status, param, metric and check
names, throttled or not, peer or not) and its last row, unchanged. Rows are cut whole, never edited, so
every figure is the H200's. Run once; its output is committed.

usage: tests/host/data/cut_v1.py [REV]   (REV: a commit that holds them all; default 59bf19b, the last)
"""
import json
import os
import subprocess
import sys

REV = sys.argv[1] if len(sys.argv) > 1 else "59bf19b"
HERE = os.path.dirname(os.path.abspath(__file__))
ARCHIVE = "results/h200/archive"


def kind(row):
    telemetry = row.get("telemetry", {})
    return (row["probe"], row["status"], tuple(row["params"]), tuple(row["metrics"]), tuple(row.get("check", {})),
            bool(telemetry.get("throttled")), bool(row.get("peer")))


def cut(report):
    smallest = {}
    for i, row in enumerate(report["results"]):
        size = len(json.dumps(row))
        if kind(row) not in smallest or size < smallest[kind(row)][0]:
            smallest[kind(row)] = (size, i)
    keep = sorted({i for _, i in smallest.values()} | {len(report["results"]) - 1})
    return dict(report, results=[report["results"][i] for i in keep])


def text(report):
    """A line a section and a line a row, as tkprobe lays reports out."""
    dump = lambda x: json.dumps(x, separators=(",", ":"))
    parts = [f"  {dump(k)}: [\n" + ",\n".join("    " + dump(v) for v in value) + "\n  ]"
             if k in ("results", "findings") and value else f"  {dump(k)}: {dump(value)}" for k, value in report.items()]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=HERE, capture_output=True, text=True,
                          check=True).stdout.strip()
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{REV}:{ARCHIVE}"], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split()
    out_dir = os.path.join(HERE, "v1")
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        report = json.loads(subprocess.run(["git", "show", f"{REV}:{ARCHIVE}/{name}"], cwd=root, capture_output=True,
                                           text=True, check=True).stdout)
        if report.get("schema") != "tkprobe.report/1":
            continue
        excerpt = cut(report)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text(excerpt))
        print(f"{name}: {len(excerpt['results'])} of {len(report['results'])} rows")


if __name__ == "__main__":
    main()
