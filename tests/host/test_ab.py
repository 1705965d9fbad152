#!/usr/bin/env python3
"""scripts/ab.py without a GPU: two stand-ins for tkprobe, `a` and `b`, write the committed
baseline's rows as a report, each run's judged medians moved by under 0.3% (the run's noise); `b`
makes one row 10% faster and another 10% slower. ab.py must run them in turns (a b b a), call those
two rows faster and slower and every other reading the same (per-clock rows are read per second too),
call a row slower whose B gains 5% per clock at a 20% lower clock, and say why, exit 1 for the slower
row but not past a --threshold of 20, give --b-args to b's runs alone, pass a failed check on as exit 1 and any other
failure as exit 4, refuse bad usage and runs whose rows do not pair with exit 2, and pair them once
--drop-param names the param that differs.

usage: test_ab.py SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

from checklist import Checklist

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import ab  # noqa: E402
import tkreport  # noqa: E402

STAND_IN = """#!/usr/bin/env python3
import json, os, sys
build = os.path.basename(sys.argv[0])
with open(os.environ["AB_CALLS"], "a") as f:
    f.write(build + "\\n")
with open(os.environ["AB_CALLS"] + ".args", "a") as f:
    f.write(" ".join(sys.argv[1:sys.argv.index("--json")]) + "\\n")
call = sum(1 for _ in open(os.environ["AB_CALLS"]))
doc = json.load(open(os.environ["AB_REPORT"]))
moved = {} if build == "a" else {int(os.environ["AB_FASTER"]): 1.1, int(os.environ["AB_SLOWER"]): 1 / 1.1}
capped = int(os.environ.get("AB_POWER", "-1")) if build == "b" else -1
for i, row in enumerate(doc["results"]):
    if i == capped:  # 5% more per clock at a 20% lower clock: 16% less per second
        row["metrics"][row["primary"]]["median"] *= 1.05
        row["metrics"][row["primary"].replace("pct_clock_peak", "tflops")]["median"] *= 1.05 * 0.8
        row["telemetry"]["kernel_sm_clock_mhz"] *= 0.8
    if build == "b" and os.environ.get("AB_B_PARAM"):
        row["params"]["dq"] = "b-only"  # a value no baseline row holds (some hold dq: reduce)
    stat = row["metrics"].get(row.get("primary"))
    if isinstance(stat, dict) and "median" in stat:
        gain = moved.get(i, 1.0)
        stat["median"] *= (1 + 0.001 * (call % 3)) * (gain if stat["better"] == "higher" else 1 / gain)
json.dump(doc, open(sys.argv[sys.argv.index("--json") + 1], "w"))
sys.exit(int(os.environ.get("AB_EXIT_" + build.upper(), "0")))
"""


def readings(table):
    """{(row, metric): verdict} from ab.md's lines."""
    cells = [line.rstrip(" |").split(" | ") for line in table.splitlines()
             if line.startswith("| ") and not line.startswith("| row")]
    return {(c[0][2:], c[1].split(" (")[0]): c[-1] for c in cells}


def run(args, env):
    return subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "ab.py")] + args, env=env,
                          capture_output=True, text=True, timeout=300)


def main():
    checks = Checklist("ab")
    expect = checks.expect

    with tempfile.TemporaryDirectory() as tmp:
        doc = tkreport.load(os.path.join(SOURCE, "results", "h200", "suite.json"))
        report = os.path.join(tmp, "report.json")
        with open(report, "w") as f:
            json.dump(doc, f)
        higher = [i for i, r in enumerate(doc["results"]) if r.get("status") == "ok"
                  and r["metrics"].get(r.get("primary"), {}).get("better") == "higher"]
        faster, slower = higher[0], higher[1]
        capped = next(i for i in higher if doc["results"][i]["primary"] == "pct_clock_peak"
                      and "tflops" in doc["results"][i]["metrics"]
                      and "kernel_sm_clock_mhz" in doc["results"][i]["telemetry"])
        binaries = {}
        for build in ("a", "b"):
            binaries[build] = os.path.join(tmp, build)
            with open(binaries[build], "w") as f:
                f.write(STAND_IN)
            os.chmod(binaries[build], 0o755)
        calls = os.path.join(tmp, "calls")
        env = dict(os.environ, AB_CALLS=calls, AB_REPORT=report, AB_FASTER=str(faster), AB_SLOWER=str(slower))
        out = os.path.join(tmp, "out")
        ab_args = [binaries["a"], binaries["b"], "--out", out]

        r = run(ab_args + ["--", "all"], env)
        expect(r.returncode == 1, f"a 10% slower row: exit {r.returncode}, not 1\n{r.stderr}")
        expect(open(calls).read().split() == ["a", "b", "b", "a"], f"runs {open(calls).read().split()}, not a b b a")
        table = open(os.path.join(out, "ab.md")).read() if os.path.exists(os.path.join(out, "ab.md")) else ""
        verdicts = readings(table)
        names = {i: (ab.label(doc["results"][i]), doc["results"][i]["primary"]) for i in (faster, slower)}
        expect(verdicts.get(names[faster]) == "faster", f"{names[faster]}: {verdicts.get(names[faster])}, not faster")
        expect(verdicts.get(names[slower]) == "slower", f"{names[slower]}: {verdicts.get(names[slower])}, not slower")
        others = {k: v for k, v in verdicts.items() if k not in names.values()}
        expect(others and set(others.values()) == {"same"}, f"unmoved readings judged {sorted(set(others.values()))}")
        expect(any(metric == "tflops" for _, metric in others), "no per-second reading beside a per-clock one")
        expect(" 1 faster, 1 slower," in table, "the summary line does not count one faster and one slower row")

        # B faster per clock but slower per second (its clock fell): the row is slower, with a note.
        os.remove(calls)
        r = run(ab_args + ["--", "all"], dict(env, AB_FASTER="-1", AB_SLOWER="-1", AB_POWER=str(capped)))
        table = open(os.path.join(out, "ab.md")).read()
        name = ab.label(doc["results"][capped])
        both = tuple(readings(table).get((name, metric)) for metric in ("pct_clock_peak", "tflops"))
        expect(r.returncode == 1, f"a row 16% slower per second: exit {r.returncode}, not 1\n{r.stderr}")
        expect(both == ("faster", "slower"), f"{name}: per clock and per second {both}, not faster and slower")
        expect(" 0 faster, 1 slower," in table, "a row slower per second and faster per clock is not counted slower")
        expect(f"{name}: faster per clock, slower per second: B's SM clock" in table, "no note on the fallen clock")

        os.remove(calls)
        os.remove(calls + ".args")
        r = run(ab_args + ["--threshold", "20", "--b-args", "--flush-l2 --seed 7", "--", "all", "--quick"], env)
        expect(r.returncode == 0, f"--threshold 20: exit {r.returncode}, not 0\n{r.stderr}")
        seen = open(calls + ".args").read().splitlines()
        b_run = "all --quick --flush-l2 --seed 7"
        expect(seen == ["all --quick", b_run, b_run, "all --quick"],
               f"--b-args: the runs took {seen}")

        os.remove(calls)
        r = run(ab_args + ["--rounds", "1", "--", "all"], dict(env, AB_EXIT_B="1"))
        expect(r.returncode == 1 and "failed their check: B round 1" in r.stdout,
               f"a failed check: exit {r.returncode}, output {r.stdout[-200:]!r}")

        os.remove(calls)
        r = run(ab_args + ["--", "all"], dict(env, AB_EXIT_B="4"))
        expect(r.returncode == 4, f"a run that failed: exit {r.returncode}, not 4")

        r = run(ab_args + ["--rounds", "1", "--", "all"], dict(env, AB_B_PARAM="1"))
        expect(r.returncode == 2 and "no row of A's reports has a twin" in r.stderr,
               f"no row paired: exit {r.returncode}, stderr {r.stderr[-200:]!r}")
        r = run(ab_args + ["--rounds", "1", "--drop-param", "dq", "--", "all"], dict(env, AB_B_PARAM="1"))
        expect(r.returncode == 0 and " 0 slower," in r.stdout, f"--drop-param dq: exit {r.returncode}\n{r.stderr}")

        for bad in (ab_args + ["all"], ab_args + ["--rounds", "0", "--", "all"], ab_args + ["--rounds", "x", "--", "all"],
                    ab_args + ["--threshold", "-1", "--", "all"], ab_args + ["--"],
                    [binaries["a"], os.path.join(tmp, "missing"), "--", "all"],
                    ab_args + ["--", "all", "--json", "x.json"], ab_args + ["--b-args", "--json=x", "--", "all"]):
            r = run(bad, env)
            expect(r.returncode == 2 and r.stderr.startswith("ab.py: "), f"{bad[2:]}: exit {r.returncode}, not 2 with a message")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
