#!/usr/bin/env python3
"""Confirms a model with the hardware's own counters. The target program launches kernels and
prints one JSON line per launch, in order: {"case", "value": metric, "per": metric or absent,
"expected"}. ncu then profiles the same launches, and each metric `value` (divided by `per`
when given) must equal `expected` within 2%. Where the model gives bounds rather than a figure, a
line has "min" and/or "max" instead of "expected", and the figure must lie within them. "show":
[metrics] adds their counts to the line printed, which always gives the measured figure.
Exit 77 (skipped) without ncu or a GPU."""
import csv
import io
import json
import shutil
import subprocess
import sys


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
    names = sorted({e["value"] for e in expected} | {e["per"] for e in expected if "per" in e}
                   | {m for e in expected for m in e.get("show", [])})
    # base units: a rate in bytes per second, a count unscaled, whatever its size
    prof = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
                           "--metrics", ",".join(names), target], capture_output=True, text=True)
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
        value = number(row[exp["value"]])
        per = number(row[exp["per"]]) if "per" in exp else 1.0
        measured = value / per if per else float("nan")
        if "expected" in exp:
            ok = value > 0 and abs(measured - exp["expected"]) <= 0.02 * exp["expected"]
            model, shown = f"model {exp['expected']}", f"{measured:.2f}"
        else:  # NaN (per 0) fails both comparisons
            ok = measured >= exp.get("min", float("-inf")) and measured <= exp.get("max", float("inf"))
            model, shown = f"bounds [{exp.get('min', '-')}, {exp.get('max', '-')}]", f"{measured:.4g}"
        failures += not ok
        ratio = f" ({value:.0f} / {per:.0f})" if "per" in exp else ""
        extra = "".join(f"; {m} {number(row[m]):.2f}" for m in exp.get("show", []))
        print(f"{'ok  ' if ok else 'FAIL'} {exp['case']}: ncu {shown}{ratio}, {model}{extra}")
    print(f"{len(expected) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
