#!/usr/bin/env python3
"""scripts/compare_based.py without torch or a GPU: a report built from constructed timings and
errors (ours and fla's rows, passing, failing, skipped) must pass tkprobe's own schema and reader
(validate_report) and be readable by `tkprobe compare`; its rows carry the based probe's params and
the kernel, fla's as peers; the C library's count is based::flops; bad options exit 2 naming the
option, and valid ones without torch exit 3; timing in turns (a stand-in torch) runs `before` ahead
of each timed launch and keeps the NVML readings apart from it.

usage: test_compare_based.py VALIDATE_REPORT TKPROBE TK_BASED_LIB SOURCE_DIR
"""
import ctypes
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

import sample_header as header
from checklist import Checklist

# The based probe's row keys (probes/based/based.cpp, params_json) and the kernel.
PROBE_KEYS = {"kernel", "seq", "batch", "heads", "feature_dim", "value_dim", "normalize", "dtype"}


def flops(shape):
    """based::flops as based.hpp states it: per row, 2 x 64 x Dk + 2 x 64 x Dv' + 2 x (2 x 273 x Dv')."""
    dv = shape["value_dim"] + (1 if shape["normalize"] else 0)
    features = 1 + shape["feature_dim"] + shape["feature_dim"] ** 2
    return shape["batch"] * shape["heads"] * shape["seq"] * (2 * 64 * shape["feature_dim"] + 2 * 64 * dv +
                                                             4 * features * dv)


def sample_rows(m):
    """Every row kind the script writes, over two shapes, with the NVML spans of the measured ones."""
    s1, s2 = m.shapes([1024, 16384], 16, 16, 64, True)
    ours = [1e-4 * (1 + i / 100) for i in range(20)]  # seconds a launch
    peer = [2e-4 * (1 + i / 100) for i in range(20)]
    calm = (header.reading(1980, 300.0, 40, 0x0), header.reading(1970, 650.0, 52, 0x1))
    capped = (header.reading(1980, 300.0, 40, 0x0), header.reading(1600, 690.0, 55, 0x4))
    w1, w2 = flops(s1), flops(s2)
    rows = [m.measured_row("tk", s1, ours, w1, 2.3e-3, 5.5e-3, span=calm),
            m.measured_row("fla-fused", s1, peer, w1, 3e-3, 7e-3, m.paired_ratios(ours, peer), calm),
            m.measured_row("fla-parallel", s1, peer, w1, float("nan"), float("nan"), m.paired_ratios(ours, peer),
                           calm),
            m.measured_row("tk", s2, ours, w2, 2.3e-3, 2.5e-2, span=capped),  # one row far off: fails
            m.skipped_row("fla-fused", s2, "fla not importable: ModuleNotFoundError: No module named 'fla'"),
            m.skipped_row("fla-parallel", s2, "fla not importable: ModuleNotFoundError: No module named 'fla'")]
    return rows, [calm, calm, calm, capped], (s1, s2)


def sample_report(m, rows, spans):
    return m.report(header.TOOL, header.HOST, header.DEVICE, rows, spans)


def check_rows(m, checks):
    rows, spans, (s1, s2) = sample_rows(m)
    doc = sample_report(m, rows, spans)
    out = doc["results"]
    checks.expect(doc["schema"] == "tkprobe.report/2" and doc["tool"]["probes"] == ["based-peers"],
                  "a version 2 report")
    checks.expect(all(set(r["params"]) == PROBE_KEYS for r in out), "every row carries the probe's params")
    checks.expect([r["params"]["kernel"] for r in out] == ["tk", "fla-fused", "fla-parallel"] * 2, "the kernels")
    checks.expect([bool(r.get("peer")) for r in out] == [False, True, True] * 2, "fla's rows, and only they, are peers")
    checks.expect([r["status"] for r in out] == ["ok", "ok", "failed", "failed", "skipped", "skipped"],
                  f"statuses: {[r['status'] for r in out]}")
    checks.expect(out[2]["metrics"]["rel_error"] is None and out[2]["check"]["value"] is None,
                  "a NaN error (an unwritten output) shows as null and fails")
    checks.expect(out[3]["check"]["worst_row_error"] == 2.5e-2 and not out[3]["check"]["passed"],
                  "a worst row over 2e-2 fails though the norm passes")
    ms, tflops = out[0]["metrics"]["ms"], out[0]["metrics"]["tflops"]
    checks.expect((ms["median"], ms["n"], ms["better"], tflops["better"]) == (0.1095, 20, "lower", "higher"),
                  f"ms by linear interpolation, as src/stats.cpp: {ms}")
    checks.expect(tflops["max"] == float(f"{flops(s1) / 1e-4 / 1e12:.6g}") and tflops["unit"] == "TFLOP/s",
                  f"TFLOP/s: the FLOPs given over each launch's time (the fastest: the max): {tflops}")
    ratio = out[1]["metrics"]["ratio"]
    checks.expect(ratio["median"] == 2.0 and ratio["min"] == 2.0 and ratio["better"] == "higher",
                  f"the paired ratio: ours' speed over the peer's, launch by launch: {ratio}")
    checks.expect("ratio" not in out[0]["metrics"], "ours has no ratio to itself")
    checks.expect(all(r["primary"] == "tflops" for r in out if r["status"] != "skipped"), "primary: tflops")
    checks.expect("what" in out[0]["check"] and all("what" not in r["check"] for r in out[1:4]),
                  "version 2: a check's `what` once, where it changes")
    checks.expect("telemetry" not in out[0] and out[3]["telemetry"] == {"throttled": True, "reasons": ["sw_power_cap"]},
                  f"row telemetry only where throttled: {out[3].get('telemetry')}")
    section = doc["telemetry"]["based-peers"]
    checks.expect(section == {"rows": 4, "throttled_rows": 1, "sm_clock_mhz": [1600, 1980], "power_w": [300.0, 690.0],
                              "temperature_c": [40, 55]}, f"the telemetry section: {section}")
    checks.expect(m.probe_telemetry([(None, None)]) == {"rows": 1, "throttled_rows": 0, "nvml": "unavailable"},
                  "no NVML: unavailable")
    texts = [f["text"] for f in doc["findings"]]
    checks.expect(any(t.startswith("tk over fla-fused, paired launch by launch: 2.00x..2.00x") for t in texts) and
                  any(t.startswith("fla-parallel: ") and "largest relative error NaN" in t for t in texts),
                  f"findings: {texts}")
    checks.expect(m.tkreport.round_significant({"a": [1 / 3, 7, True, None]}) == {"a": [0.333333, 7, True, None]},
                  "numbers to 6 significant digits, integers and booleans as they are")
    checks.expect(rows[1]["check"].get("what"), "the report leaves the caller's rows whole")
    ours, calm = [1e-4] * 20, (header.reading(1980, 300.0, 40, 0x0), header.reading(1970, 650.0, 52, 0x1))
    clocked = m.measured_row("tk", s1, ours, flops(s1), 2.3e-3, 5.5e-3, span=calm,
                             clocks=[1700.0, None, 1650.0, 1750.0])
    unclocked = m.measured_row("tk", s1, ours, flops(s1), 2.3e-3, 5.5e-3, span=calm, clocks=[None])
    checks.expect(clocked["telemetry"] == {"kernel_sm_clock_mhz": 1700.0} and "telemetry" not in unclocked,
                  f"the median SM clock under the launches that read one: {clocked.get('telemetry')}")
    checks.expect("| 1700 | 2.30e-03 |" in m.markdown({"results": [clocked]}), "the clock in the table")
    table = m.markdown(doc)
    checks.expect("| B=16 H=16 N=1024 Dk=16 Dv=64 normalized | fla-fused | 0.219 | " in table
                  and "| 2.000 | ok |" in table and "| fla-parallel | 0.219 |" in table
                  and "| NaN | NaN | 2.000 | FAILED |" in table
                  and "| - | skipped: fla not importable: " in table, f"the table:\n{table}")
    return doc


def check_reader(m, doc, validate, tkprobe, source_dir, checks):
    schema = os.path.join(source_dir, "results", "report.schema.json")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "based-peers.json")
        m.sdpa.write_atomic(path, m.tkreport.text(doc))
        with open(path) as f:
            text = f.read()
        checks.expect(json.loads(text)["schema"] == "tkprobe.report/3" and m.tkreport.decoded(json.loads(text)) == doc
                      and '\n    {"probe":"based-peers","kind":0,' in text,
                      "written as tkprobe writes: version 2 in columns, a line a row")
        v = subprocess.run([validate, schema, path], capture_output=True, text=True)
        checks.expect(v.returncode == 0, f"validate_report: {v.stderr}")
        c = subprocess.run([tkprobe, "compare", path, path], capture_output=True, text=True)
        # The failed rows fail compare (exit 1); the reader must not refuse the report (2).
        checks.expect(c.returncode == 1 and "fla-fused" in c.stdout, f"tkprobe compare: {c.returncode} {c.stderr}")
        passing = dict(doc, results=[r for r in doc["results"] if r["status"] != "failed"])
        clean = os.path.join(tmp, "clean.json")
        m.sdpa.write_atomic(clean, m.tkreport.text(passing))
        c = subprocess.run([tkprobe, "compare", clean, clean], capture_output=True, text=True)
        checks.expect(c.returncode == 0, f"tkprobe compare on passing rows: {c.returncode} {c.stdout} {c.stderr}")


def check_library(m, lib_path, checks):
    """The C entry points as the script declares them, on the host alone (no GPU is touched)."""
    tk = m.TkBased(lib_path)
    for shape in m.shapes([1, 1000, 16384], 16, 16, 64, True) + m.shapes([5000], 2, 4, 128, False):
        checks.expect(tk.flops(shape) == flops(shape), f"tk_based_flops {shape}: {tk.flops(shape)} != {flops(shape)}")
    checks.expect(math.isclose(tk.flops(m.shapes([16384], 16, 16, 64, True)[0]), 3.41198e11, rel_tol=1e-5),
                  "3.41e11 FLOPs at B = H = 16, N = 16384 (based.hpp)")
    bad = dict(m.shapes([1024], 16, 16, 64, True)[0], value_dim=96)
    checks.expect(tk.refusal(bad) == "value dim = 96: give 64 or 128", f"tk_based_refusal: {tk.refusal(bad)!r}")
    checks.expect(tk.refusal(m.shapes([1024], 16, 16, 128, False)[0]) == "", "a valid shape is not refused")
    short = ctypes.create_string_buffer(6)
    n = tk.lib.tk_based_refusal(1, 1, 0, 16, 64, 1, short, len(short))
    checks.expect(n == len("seq = 0: give a positive number") and short.value == b"seq =", "a refusal truncated to fit")
    checks.expect(not tk.lib.tk_based_forward_create(None, None, None, None, 1, 1, 64, 16, 64, 1), "null tensors: null")
    checks.expect(not tk.lib.tk_based_forward_create(16, 32, 48, 64, 1, 1, 64, 16, 96, 1), "a refused shape: null")
    checks.expect(tk.lib.tk_based_forward_launch(None, None) != 0, "launching null is an error, not a crash")


def check_options(source_dir, lib_path, checks):
    script = os.path.join(source_dir, "scripts", "compare_based.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "x.json")
        run = lambda *args: subprocess.run([sys.executable, script, "--out", out, "--tk-lib", lib_path, *args],
                                           capture_output=True, text=True)
        for bad in (["--seq", "0"], ["--seq", "1024,x"], ["--seq", ""], ["--batch", "0"], ["--heads", "16,16"],
                    ["--value-dim", "96"], ["--peers", "fla"], ["--peers", ""], ["--peers", "fla-fused,fla-fused"],
                    ["--reps", "10"], ["--rounds", "7"], ["--rounds", "0"], ["--warmup", "-1"], ["--seed", "-1"],
                    ["--tk-lib", os.path.join(tmp, "none.so")], ["--tk-lib", script],
                    ["--out", os.path.join(tmp, "no", "x.json")]):
            r = run(*bad)
            checks.expect(r.returncode == 2 and bad[0] in r.stderr, f"{bad}: exit {r.returncode} {r.stderr}")
        r = run("--value-dim", "96")
        checks.expect("64 or 128" in r.stderr, f"the refusal names what is valid: {r.stderr}")
        if importlib.util.find_spec("torch") is None:
            r = run("--seq", "1024", "--peers", "none")
            checks.expect(r.returncode == 3 and "PyTorch" in r.stderr and not os.path.exists(out),
                          f"no torch: exit 3 and no report: {r.returncode} {r.stderr}")


class FakeCuda:
    """torch.cuda as timed_in_turns uses it, on a clock that moves 1 ms a launch; `log` records the
    order of what ran."""

    def __init__(self, log):
        self.log, self.now = log, 0.0
        cuda = self

        class Event:
            def __init__(self, enable_timing):
                self.at = None

            def record(self):
                self.at = cuda.now

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return other.at - self.at

        self.Event = Event

    def synchronize(self):
        pass

    def _sleep(self, cycles):
        self.log.append("spin")


class FakeNvml:
    def __init__(self):
        self.readings = 0

    def sample(self):
        self.readings += 1
        return f"reading {self.readings}"


def check_timed_in_turns(m, checks):
    """`before` runs ahead of every timed launch (and never in the warm-up), the NVML span is the
    readings before and after; without `before` nothing else runs."""
    log = []
    torch = type("FakeTorch", (), {})()
    torch.cuda = FakeCuda(log)

    def launch(name):
        def run():
            log.append(name)
            torch.cuda.now += 1.0
        return run

    args = type("Args", (), dict(warmup=1, rounds=2, reps=4))()
    runs = {"tk": launch("tk"), "peer": launch("peer")}
    seconds, clocks, span = m.timed_in_turns(torch, runs, args, FakeNvml(), m.sdpa.NoClock(),
                                             lambda: log.append("evict"))
    timed = log[2:]  # after one warm-up launch of each
    checks.expect(log[:2] == ["tk", "peer"] and timed == ["evict", "spin", "tk"] * 2 + ["evict", "spin", "peer"] * 2
                  + ["evict", "spin", "tk"] * 2 + ["evict", "spin", "peer"] * 2, f"the order: {log}")
    checks.expect(seconds == {"tk": [1e-3] * 4, "peer": [1e-3] * 4} and span == ("reading 1", "reading 2"),
                  f"seconds {seconds}, span {span}")
    log.clear()
    m.timed_in_turns(torch, runs, args, FakeNvml(), m.sdpa.NoClock())
    checks.expect("evict" not in log and log.count("spin") == 8, f"no `before`: {log}")


def main():
    validate, tkprobe, lib_path, source_dir = sys.argv[1:5]
    m = header.load_script(source_dir, "compare_based")
    checks = Checklist("compare_based")
    doc = check_rows(m, checks)
    check_reader(m, doc, validate, tkprobe, source_dir, checks)
    check_library(m, lib_path, checks)
    check_options(source_dir, lib_path, checks)
    check_timed_in_turns(m, checks)
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
