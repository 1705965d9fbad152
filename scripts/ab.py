#!/usr/bin/env python3
"""Two builds of tkprobe, A and B, run the same probe in turns (A B, then B A, ...) on one GPU, so
that what drifts while they run (clocks under a power cap, temperature, another tenant) falls on
both alike; then each row's judged metric (`primary`) side by side, and beside a per-clock one its
per-second twin (TFLOP/s): A's and B's mean over the rounds, their ranges, and the change. A reading
is faster or slower only where the two ranges do not overlap; with one round every row is "same". A
row is slower where either reading is: a change can win per clock and lose time to the power cap,
and a note under the table says so with both builds' SM clocks. Reports and each run's table land
in --out.

This is how a kernel change is measured before it lands
(docs/decisions/002-changes-measured-in-turns.md): a 2% effect is below what `tkprobe compare` can judge
against a baseline from another card or hour, but shows plainly when both builds share the card and the
minutes. One build against itself with --b-args compares two settings the same way (`--b-args
--flush-l2`). Rows pair by probe and params; a setting that is a param pairs once --drop-param names it
(`--b-args "--dq reduce" --drop-param dq`: the attention backward's reducing path against its
deterministic one).

usage: scripts/ab.py [--rounds N] [--out DIR] [--threshold PCT] [--a-args ARGS] [--b-args ARGS]
                     [--drop-param NAME]... A_TKPROBE B_TKPROBE -- PROBE [ARGS...]
exit: 0, 1 where B is slower than A by more than --threshold percent on some row (default 0: any
slower row) or a run failed its check, 2 bad usage or no row paired, 4 a run that ended otherwise (its
log is in --out)."""
import argparse
import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tkreport  # noqa: E402


def usage_error(message):
    print(f"ab.py: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        usage_error(message)


def joined(options):
    """--a-args X and --b-args X as --a-args=X: their values are options themselves."""
    out, i = [], 0
    while i < len(options):
        if options[i] in ("--a-args", "--b-args") and i + 1 < len(options):
            out.append(f"{options[i]}={options[i + 1]}")
            i += 2
        else:
            out.append(options[i])
            i += 1
    return out


def parse(argv):
    if "--" not in argv and not {"-h", "--help"} & set(argv):
        usage_error("give the probe after --: ab.py A_TKPROBE B_TKPROBE -- PROBE [ARGS...]")
    cut = argv.index("--") if "--" in argv else len(argv)
    p = Parser(prog="ab.py", usage="%(prog)s [options] A_TKPROBE B_TKPROBE -- PROBE [ARGS...]",
               description=__doc__.split("\n\n")[0])
    p.add_argument("a", help="build A's tkprobe (the base)")
    p.add_argument("b", help="build B's tkprobe (the change)")
    p.add_argument("--rounds", type=int, default=2, help="rounds, each running A and B once (default 2)")
    p.add_argument("--out", default="ab-out", help="folder for the reports, logs and ab.md (default ab-out)")
    p.add_argument("--threshold", type=float, default=0.0, help="percent B may be slower before exit 1 (default 0)")
    p.add_argument("--a-args", default="", help="options only A's runs take, as one string")
    p.add_argument("--b-args", default="", help="options only B's runs take, as one string")
    p.add_argument("--drop-param", action="append", default=[], help="a param left out when rows pair (repeatable)")
    args = p.parse_args(joined(argv[:cut]))
    args.probe = argv[cut + 1:]
    args.extra = {"a": shlex.split(args.a_args), "b": shlex.split(args.b_args)}
    if not args.probe:
        usage_error("no probe after --")
    if args.rounds < 1:
        usage_error(f"--rounds {args.rounds}: give 1 or more")
    if args.threshold < 0:
        usage_error(f"--threshold {args.threshold}: give a percentage >= 0")
    for binary in (args.a, args.b):
        if not os.access(binary, os.X_OK):
            usage_error(f"{binary}: not an executable file")
    if any(a == "--json" or a.startswith("--json=") for a in args.probe + args.extra["a"] + args.extra["b"]):
        usage_error("--json is ab.py's to give: it writes each run's report into --out")
    return args


def order(rounds):
    """The runs in turns: (build, round) pairs, A first in odd rounds and B first in even ones."""
    runs = []
    for r in range(1, rounds + 1):
        pair = ("a", "b") if r % 2 else ("b", "a")
        runs += [(build, r) for build in pair]
    return runs


def run_all(args):
    os.makedirs(args.out, exist_ok=True)
    failed_checks = []
    for build, r in order(args.rounds):
        report = os.path.join(args.out, f"{build}-{r}.json")
        log = os.path.join(args.out, f"{build}-{r}.txt")
        binary = args.a if build == "a" else args.b
        with open(log, "w") as out:
            command = [binary] + args.probe + args.extra[build] + ["--json", report]
            code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
        print(f"{build.upper()} round {r}: exit {code}", file=sys.stderr)
        if code == 1:
            failed_checks.append(f"{build.upper()} round {r}")
        elif code != 0 or not os.path.exists(report):
            print(f"ab.py: {binary} exit {code} (round {r}): see {log}", file=sys.stderr)
            sys.exit(4)
    return failed_checks


def label(row, dropped=()):
    """The row as `tkprobe compare` names it: probe, then key=value with values as JSON writes them."""
    params = " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in row["params"].items()
                      if k not in dropped)
    return f"{row['probe']} {params}".strip()


PER_CLOCK = "pct_clock_peak"


def per_second_twin(metric):
    """A per-clock metric's per-second reading (tkprobe's compare.hpp names it alike), or None."""
    return metric[:-len(PER_CLOCK)] + "tflops" if metric.endswith(PER_CLOCK) else None


def judged(path, dropped):
    """{row label: ({metric: (unit, better, median)}, the kernel's SM clock or None)} for each row with a
    judged statistic: its primary and, beside a per-clock primary, the per-second twin. Against a
    baseline from another hour a row is judged per clock (its clock drifts by itself), but in turns
    the drift falls on both builds alike, so time is judged too: a change that wins per clock can lose
    per second by driving the card into its power cap (docs/decisions/002-changes-measured-in-turns.md)."""
    rows = {}
    for row in tkreport.load(path)["results"]:
        metrics = row.get("metrics", {})
        stat = metrics.get(row.get("primary"))
        if row.get("status") != "ok" or not isinstance(stat, dict) or "median" not in stat:
            continue
        key = label(row, dropped) + (f" device={row['device']}" if "device" in row else "")
        readings = {row["primary"]: (stat["unit"], stat["better"], stat["median"])}
        twin = per_second_twin(row["primary"])
        twin_stat = metrics.get(twin) if twin else None
        if isinstance(twin_stat, dict) and "median" in twin_stat:
            readings[twin] = (twin_stat["unit"], twin_stat["better"], twin_stat["median"])
        rows[key] = (readings, (row.get("telemetry") or {}).get("kernel_sm_clock_mhz"))
    return rows


def verdict(a, b, better):
    """faster, slower or same: B against A by their ranges over the rounds."""
    if len(a) < 2:
        return "same"
    if better == "lower":
        a, b = [-x for x in a], [-x for x in b]
    return "faster" if min(b) > max(a) else "slower" if max(b) < min(a) else "same"


def mean(xs):
    return sum(xs) / len(xs)


def row_call(calls):
    """A row's verdict from its readings': slower if any reading is, else faster if any is."""
    return "slower" if "slower" in calls else "faster" if "faster" in calls else "same"


def table(args):
    runs = {(build, r): judged(os.path.join(args.out, f"{build}-{r}.json"), args.drop_param)
            for build, r in order(args.rounds)}
    rounds = range(1, args.rounds + 1)
    lines = [f"| row | metric | A mean (range) | B mean (range) | B vs A | verdict |", "|---|---|---:|---:|---:|---|"]
    notes, worst = [], 0.0
    counts = {"faster": 0, "slower": 0, "same": 0}
    for key, (readings, _) in runs[("a", 1)].items():
        if not all(key in runs[(build, r)] for build in "ab" for r in rounds):
            continue  # a row some run lacks: nothing paired to judge
        calls = {}
        for metric, (unit, better, _) in readings.items():
            a = [runs[("a", r)][key][0][metric][2] for r in rounds if metric in runs[("a", r)][key][0]]
            b = [runs[("b", r)][key][0][metric][2] for r in rounds if metric in runs[("b", r)][key][0]]
            if len(a) != args.rounds or len(b) != args.rounds:
                continue
            change = (mean(b) / mean(a) - 1) * 100 if mean(a) else 0.0
            calls[metric] = verdict(a, b, better)
            if calls[metric] == "slower":
                worst = max(worst, -change if better == "higher" else change)
            lines.append(f"| {key} | {metric} ({unit}) | {mean(a):.4g} ({min(a):.4g}-{max(a):.4g}) | "
                         f"{mean(b):.4g} ({min(b):.4g}-{max(b):.4g}) | {change:+.2f}% | {calls[metric]} |")
        if not calls:
            continue
        counts[row_call(calls.values())] += 1
        if len(set(calls.values()) - {"same"}) == 2:  # one reading faster, the other slower
            per_clock, per_second = calls.values()
            clocks = {build: [runs[(build, r)][key][1] for r in rounds] for build in "ab"}
            seen = "" if None in clocks["a"] + clocks["b"] else \
                f": B's SM clock {mean(clocks['b']):.0f} MHz against A's {mean(clocks['a']):.0f}"
            notes.append(f"{key}: {per_clock} per clock, {per_second} per second{seen} (a change that draws more "
                         f"power loses time to the power cap, one that draws less gains it)")
    summary = (f"{sum(counts.values())} rows over {args.rounds} round(s) in turns: {counts['faster']} faster, "
               f"{counts['slower']} slower, {counts['same']} same (B against A)")
    return "\n".join(lines + [""] + notes + [summary]), worst, sum(counts.values())


def main():
    args = parse(sys.argv[1:])
    failed_checks = run_all(args)
    text, worst, paired = table(args)
    if not paired:
        usage_error(f"no row of A's reports has a twin in B's (same probe and params): see {args.out}")
    if failed_checks:
        text += "\nfailed their check: " + ", ".join(failed_checks)
    with open(os.path.join(args.out, "ab.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if failed_checks or worst > args.threshold else 0


if __name__ == "__main__":
    sys.exit(main())
