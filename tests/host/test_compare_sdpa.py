#!/usr/bin/env python3
"""scripts/compare_sdpa.py's report builder, without torch or a GPU: a report built from a sample
of constructed timings (forward and backward rows) must pass tkprobe's own schema and reader
(validate_report) and be readable by `tkprobe compare`, and its rows must carry the probe's params
and the pass. The report is compacted and written as tkprobe does (scripts/tkreport.py): the
version 2 document equal to the one tkprobe makes of the same version 1 rows, written in version
3's columns and read back equal.

usage: test_compare_sdpa.py VALIDATE_REPORT TKPROBE SOURCE_DIR
"""
import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import sample_header as header
from checklist import Checklist

# The attention probe's row keys (probes/attention/attention.cpp, params_json; results/README.md).
PROBE_KEYS = {"kernel", "head_dim", "seq", "batch", "heads", "kv_heads", "causal", "dtype", "pass"}
# Its --varlen rows' keys (varlen_params).
VARLEN_KEYS = {"kernel", "pass", "varlen", "sequences", "tokens", "head_dim", "heads", "kv_heads", "causal", "dtype"}
# random:1's lengths, as probes/attention/varlen_lengths.hpp draws them (host_test.cpp pins the same list).
RANDOM_1 = [548, 1677, 6836, 255, 255, 1866, 3811, 418, 94, 624]


def sample_report(m):
    """Every row kind the script writes: measured and passing, failing (NaN: an unwritten output), skipped;
    the report, and the version 1 document its rows were built as."""
    shapes = m.grid(quick=True)
    rates = [100.0 + i for i in range(20)]
    rows = [m.measured_row("torch-flash", shapes[0], rates, 3e-3, 989.4, m.telemetry(None, None)),
            m.measured_row("torch-cudnn", shapes[0], rates, float("nan"), None,
                           m.telemetry({"sm": 1980, "power": 100.0, "temp": 40, "reasons": 0x4},
                                       {"sm": 1600, "power": 690.0, "temp": 55, "reasons": 0x1})),
            m.skipped_row("torch-cudnn", shapes[1], "No available kernel. Aborting execution."),
            m.measured_row("wgmma", shapes[0], rates, None, 989.4, m.telemetry(None, None), None, "bwd",
                           {"dQ": 3e-3, "dK": 4e-3, "dV": 2e-3}),
            m.measured_row("torch-flash", shapes[0], rates, 2e-3, 989.4, m.telemetry(None, None), None, "fwd+bwd",
                           {"dQ": 5e-3, "dK": 6e-3, "dV": 4e-3}),
            m.skipped_row("mma-sync", shapes[0], "no backward", "bwd")]
    doc = m.report(header.TOOL, header.HOST, header.DEVICE, rows)
    return doc, {"schema": "tkprobe.report/1", "tool": header.TOOL, "host": header.HOST, "device": header.DEVICE, "results": rows,
                 "findings": doc["findings"]}


def main():
    validate, tkprobe, source_dir, clock_lib = sys.argv[1:5]
    m = header.load_script(source_dir, "compare_sdpa")
    checks = Checklist("compare_sdpa")

    doc, v1 = sample_report(m)
    rows = doc["results"]
    checks.expect(doc["schema"] == "tkprobe.report/2" and doc["telemetry"]["attention"]["rows"] == 4
                  and doc["telemetry"]["attention"]["throttled_rows"] == 1, f"version 2: {doc['telemetry']}")
    checks.expect(rows[0]["telemetry"] == {} and "what" in rows[0]["check"] and "what" not in rows[1]["check"],
                  "NVML's readings once for the probe, a check's text where it changes")
    checks.expect(all(set(r["params"]) == PROBE_KEYS for r in rows), "every row carries the probe's params")
    checks.expect(rows[0]["status"] == "ok" and rows[0]["check"]["passed"], "a small error passes")
    checks.expect(rows[1]["status"] == "failed" and not rows[1]["check"]["passed"], "a NaN error fails")
    checks.expect(rows[1]["metrics"]["pct_datasheet_peak"] is None, "no peak: null, not a number")
    checks.expect(rows[1]["telemetry"]["throttled"] and rows[1]["telemetry"]["reasons"] == ["gpu_idle", "sw_power_cap"],
                  "NVML reasons are named as src/nvml.cpp names them")
    stats = rows[0]["metrics"]["tflops"]
    checks.expect((stats["median"], stats["q1"], stats["q3"], stats["n"]) == (109.5, 104.75, 114.25, 20),
                  f"quartiles by linear interpolation, as src/stats.cpp: {stats}")
    checks.expect(math.isclose(m.flops(dict(batch=1, heads=16, seq=16384, head_dim=128, causal=True)),
                               2 * 16 * 16384 ** 2 * 128), "flops as attention::flops")
    sweep = m.grid(quick=False)
    checks.expect([s["head_dim"] for s in m.grid(False, (256,))] == [256] * 6 and m.grid(False, (256,))[0]["heads"] == 8,
                  "--head-dims 256: the sweep's six shapes at hidden 2048")
    checks.expect(len(sweep) == 12 and all(s["batch"] * s["seq"] == 16384 and s["heads"] * s["head_dim"] == 2048
                                           for s in sweep), "the sweep: 16k tokens, hidden 2048")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sdpa.json")
        m.write_atomic(path, m.tkreport.text(doc))
        with open(path) as f:
            text = f.read()
        checks.expect(json.loads(text)["schema"] == "tkprobe.report/3" and m.tkreport.load(path) == doc
                      and '\n    {"probe":"attention","kind":0,' in text, "written in columns, read back equal")
        schema = os.path.join(source_dir, "results", "report.schema.json")
        v = subprocess.run([validate, schema, path], capture_output=True, text=True)
        checks.expect(v.returncode == 0, f"validate_report: {v.stderr}")
        # tkprobe's own compaction of the version 1 rows is the same document, number for number.
        v1_path = os.path.join(tmp, "v1.json")
        m.write_atomic(v1_path, json.dumps(v1, indent=2) + "\n")
        v = subprocess.run([validate, schema, v1_path, "--print-v2"], capture_output=True, text=True)
        checks.expect(v.returncode == 0 and json.loads(v.stdout) == doc == m.tkreport.compacted(v1),
                      f"tkprobe's compact_report and tkreport.compacted differ: {v.stderr}")
        c = subprocess.run([tkprobe, "compare", path, path], capture_output=True, text=True)
        # The failed row fails compare (exit 1) however it compares; the reader must not refuse it (2).
        checks.expect(c.returncode == 1 and "torch-flash" in c.stdout, f"tkprobe compare: {c.returncode} {c.stderr}")

    table = m.side_by_side({"results": [dict(rows[0], params=dict(rows[0]["params"], kernel="wgmma"))]}, doc)
    checks.expect("| 109.5 | - | 109.5 | - | 1.000 | - |" in table, f"side by side:\n{table}")
    reducing = dict(rows[0], params=dict(rows[0]["params"], kernel="wgmma", dq="reduce"))
    table = m.side_by_side({"results": [reducing]}, doc)
    checks.expect("| 109.5 | - | 109.5 | - | 1.000 | - |" in table, f"--dq reduce's rows beside the peers:\n{table}")

    # FlashAttention-4: a peer where installed (never judged, its own columns in the table only once it
    # has a row); where it cannot be imported, a skipped row saying why.
    fa4_row = m.measured_row("fa4", m.grid(quick=True)[0], [120.0 + i for i in range(20)], 3e-3, 989.4,
                             m.telemetry(None, None))
    checks.expect(fa4_row.get("peer") is True, "FlashAttention-4's rows are peers")
    table = m.side_by_side({"results": [dict(rows[0], params=dict(rows[0]["params"], kernel="wgmma")), fa4_row]}, doc)
    checks.expect(table.startswith("| shape | wgmma | mma-sync | torch-flash | torch-cudnn | fa4 | wgmma / flash | "
                                   "wgmma / cudnn | wgmma / fa4 |") and "| 109.5 | - | 109.5 | - | 129.5 | 1.000 | - | 0.846 |"
                  in table, f"FlashAttention-4 beside the others:\n{table}")
    checks.expect("fa4" not in m.side_by_side(doc), "no FlashAttention-4 columns without its rows")
    flash_attn_func, why = m.flash_attn_4()
    checks.expect(flash_attn_func is not None or ("flash-attn-4" in why and "pip install" in why),
                  f"where FlashAttention-4 cannot be imported, the reason names it: {why}")

    # The SM clock under each kernel: the bracket opens before each launch's start event and closes
    # after its stop event (neither timed), and is read after the wait; the median kept per row
    # through compaction and shown beside the TFLOP/s.
    calls = []

    class Event:
        def __init__(self, enable_timing):
            pass

        def record(self):
            calls.append("record")

        def synchronize(self):
            calls.append("wait")

        def elapsed_time(self, other):
            return 2.0

    class Clock:
        def begin(self):
            calls.append("begin")

        def end(self):
            calls.append("end")

        def mhz(self):
            calls.append("read")
            return 1700.0

    fake = type("Torch", (), {"cuda": type("Cuda", (), {"Event": Event, "_sleep": staticmethod(lambda c: None)})})
    samples = m.timed_launches(fake, lambda: calls.append("run"), 3, Clock())
    checks.expect(samples == [(2e-3, 1700.0)] * 3
                  and calls == ["begin", "record", "run", "record", "end", "wait", "read"] * 3,
                  f"the bracket around each launch's events, read after the wait: {samples} {calls}")
    calls.clear()
    checks.expect(m.timed_seconds(fake, lambda: calls.append("run"), 2) == [2e-3] * 2
                  and calls == ["record", "run", "record", "wait"] * 2, f"no clock, no bracket: {calls}")
    checks.expect(isinstance(m.sm_clock(None, None), m.NoClock)
                  and isinstance(m.sm_clock(None, "/nonexistent/libtk_attention_c.so"), m.NoClock),
                  "without libtk_clock_c beside the DSL's library, rows carry no clock")
    span = m.telemetry(None, None)
    checks.expect(m.with_clock(span, [1700, None, 1500, 1750]) == dict(span, kernel_sm_clock_mhz=1700)
                  and m.with_clock(span, [None]) == span, "the median of the readings, or none")
    shape, rates = m.grid(quick=True)[0], [100.0 + i for i in range(20)]
    clocked = m.measured_row("fa4", shape, rates, 3e-3, 989.4, m.with_clock(span, [1490, 1495, 1500]))
    ours = m.measured_row("wgmma", shape, rates, 3e-3, 989.4, m.with_clock(span, [1745]))
    kept = m.report(doc["tool"], doc["host"], doc["device"], [clocked, ours])["results"]
    checks.expect([r["telemetry"].get("kernel_sm_clock_mhz") for r in kept] == [1495, 1745],
                  f"the clock survives compaction: {[r['telemetry'] for r in kept]}")
    table = m.side_by_side({"results": [clocked, ours]})
    checks.expect("SM clock under each kernel" in table and "| 1745 | - | - | - | 1495 | - | - | 0.857 |" in table,
                  f"the clocks beside the TFLOP/s; equal rates at 1745 MHz against 1495: 0.857x per clock\n{table}")
    checks.expect("SM clock" not in m.side_by_side(doc), "no clock table without clocks")

    # The DSL's rows (timed through libtk_attention_c) also check the logsumexp.
    tk_ok = m.measured_row("wgmma", shape, rates, 3e-3, 989.4, m.telemetry(None, None), lse_error=2e-6)
    tk_bad = m.measured_row("wgmma", shape, rates, 3e-3, 989.4, m.telemetry(None, None), lse_error=float("nan"))
    checks.expect(tk_ok["status"] == "ok" and tk_ok["metrics"]["lse_error"] == 2e-6, "a small LSE error passes")
    checks.expect(tk_bad["status"] == "failed" and tk_bad["check"]["lse_error"] is None, "an unwritten LSE fails")

    # Backward rows: every gradient's error, the worst one judged; the passes' FLOPs.
    bwd, both = rows[3], rows[4]
    checks.expect(bwd["params"]["pass"] == "bwd" and rows[0]["params"]["pass"] == "fwd", "rows carry the pass")
    checks.expect(bwd["status"] == "ok" and bwd["check"]["value"] == 4e-3 and bwd["metrics"]["rel_error_dk"] == 4e-3
                  and "rel_error" not in bwd["metrics"], f"a backward row: {bwd['check']} {bwd['metrics']}")
    checks.expect(both["status"] == "ok" and both["metrics"]["rel_error"] == 2e-3 and both["check"]["value"] == 6e-3,
                  f"a forward and backward row checks O and the gradients: {both['check']}")
    wrong = m.measured_row("wgmma", shape, rates, None, 989.4, m.telemetry(None, None), None, "bwd",
                           {"dQ": 3e-3, "dK": 2e-2, "dV": 2e-3})
    unwritten = m.measured_row("wgmma", shape, rates, None, 989.4, m.telemetry(None, None), None, "bwd",
                               {"dQ": 1e-3, "dK": float("nan"), "dV": 2e-3})
    checks.expect(wrong["status"] == "failed" and wrong["check"]["value"] == 2e-2, "one gradient over the bound fails")
    checks.expect(unwritten["status"] == "failed" and unwritten["check"]["value"] is None,
                  f"an unwritten gradient fails and shows as null: {unwritten['check']}")
    full = m.flops(shape)
    checks.expect((m.pass_flops(shape, "fwd"), m.pass_flops(shape, "bwd"), m.pass_flops(shape, "fwd+bwd")) ==
                  (full, 2.5 * full, 3.5 * full), "backward FLOPs 2.5x the forward's, both 3.5x")
    texts = [f["text"] for f in doc["findings"]]
    checks.expect(any(t.startswith("wgmma bwd:") for t in texts)
                  and any(t.startswith("torch-flash fwd+bwd:") for t in texts), f"a finding per kernel and pass: {texts}")
    checks.expect(" D=64 bwd |" in m.side_by_side(doc), "side by side names the pass")

    # Bad options exit 2 before torch is needed.
    script = os.path.join(source_dir, "scripts", "compare_sdpa.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "x.json")
        for bad in (["--reps", "10"], ["--rounds", "7"], ["--rounds", "0"], ["--tk-lib", os.path.join(tmp, "none.so")],
                    ["--pass", "backward"], ["--dq", "sideways"], ["--dq", "reduce"],
                    ["--dq", "deterministic"], ["--energy", "0.1"], ["--energy", "-1"], ["--energy", "nan"],
                    ["--head-dims", "80"], ["--head-dims", "64,x"], ["--head-dims", ""]):
            r = subprocess.run([sys.executable, script, "--out", out, *bad], capture_output=True, text=True)
            checks.expect(r.returncode == 2 and bad[0] in r.stderr, f"{bad}: exit {r.returncode} {r.stderr}")

    check_varlen(m, validate, source_dir, checks)
    check_energy(m, checks)
    check_clock_library(m, clock_lib, checks)
    return checks.exit_code()


def check_varlen(m, validate, source_dir, checks):
    """--varlen: the probe's lengths and row keys, each sequence's FLOPs, cuDNN ragged as a peer with
    its own column, bad specs refused before torch is needed."""
    v = m.sdpa_varlen
    checks.expect(v.varlen_lengths("random:1") == RANDOM_1, f"random:1 as the probe draws it: {v.random_lengths(1)}")
    checks.expect(v.varlen_lengths("4096,0,1") == [4096, 0, 1] and v.offsets_of([4096, 0, 1]) == [0, 4096, 4096, 4097],
                  "a list of lengths and its offsets")
    mixes = m.shapes(argparse.Namespace(varlen=["random:1", "100,28"], quick=False, head_dims=(128,)))
    checks.expect([(s["varlen"], s["causal"], s["heads"]) for s in mixes] ==
                  [("random:1", False, 16), ("random:1", True, 16), ("100,28", False, 16), ("100,28", True, 16)],
                  f"--varlen again: each mix at each head dim, causal and not: {mixes}")
    shapes = v.varlen_grid("100,0,28", False, 2048, (64, 128), 4)
    checks.expect([(s["heads"], s["head_dim"], s["causal"]) for s in shapes] ==
                  [(32, 64, False), (32, 64, True), (16, 128, False), (16, 128, True)], "hidden 2048, causal and not")
    checks.expect(m.flops(shapes[3]) == 4.0 * 16 * 128 / 2 * (100 ** 2 + 28 ** 2),
                  "each sequence's causal FLOPs, none for the empty one (attention::flops(Varlen))")
    rates = [200.0 + i for i in range(20)]
    rows = [m.measured_row("wgmma", shapes[3], rates, 3e-3, 989.4, m.telemetry(None, None), 1e-5),
            m.measured_row(v.CUDNN_RAGGED, shapes[3], [100.0 + i for i in range(20)], 4e-3, 989.4,
                           m.telemetry(None, None)),
            m.skipped_row("torch-flash", shapes[3], "refused: fused kernels do not support seq_len == 0", "bwd")]
    checks.expect(all(set(r["params"]) == VARLEN_KEYS for r in rows) and rows[0]["params"]["sequences"] == 3
                  and rows[0]["params"]["tokens"] == 128, f"the probe's --varlen keys: {rows[0]['params']}")
    checks.expect(rows[1].get("peer") is True and "peer" not in rows[0], "cuDNN's ragged SDPA is a peer")
    flash2 = m.measured_row(v.FLASH_VARLEN, shapes[3], rates, 3e-3, 989.4, m.telemetry(None, None))
    checks.expect(flash2.get("peer") is True and "torch-flash-varlen" in m.side_by_side({"results": [rows[0], flash2]}),
                  "FlashAttention-2's varlen kernels alone: a peer with a column of its own")
    table = m.side_by_side({"results": rows})
    checks.expect("| varlen 100,0,28 (3 sequences, 128 tokens) H=16 D=128 causal | 209.5 | - | - | - | 109.5 | - | - | "
                  "1.913 |" in table and "wgmma / cudnn-ragged" in table, f"a packed batch beside its peers:\n{table}")
    dense, _ = sample_report(m)
    doc = m.report(dense["tool"], dense["host"], dense["device"], rows)
    checks.expect(any("varlen 100,0,28" in f["text"] for f in doc["findings"]), f"findings name the batch: {doc['findings']}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "varlen.json")
        m.write_atomic(path, m.tkreport.text(doc))
        r = subprocess.run([validate, os.path.join(source_dir, "results", "report.schema.json"), path],
                           capture_output=True, text=True)
        checks.expect(r.returncode == 0, f"a --varlen report passes the schema: {r.stderr}")
        script = os.path.join(source_dir, "scripts", "compare_sdpa.py")
        for bad, why in (("random:-1", "seed"), ("4096,x", "'x' is no length"), ("0,0", "0 tokens")):
            r = subprocess.run([sys.executable, script, "--out", os.path.join(tmp, "x.json"), "--varlen", "random:2",
                                "--varlen", bad], capture_output=True, text=True)
            checks.expect(r.returncode == 2 and why in r.stderr, f"--varlen {bad}: exit {r.returncode} {r.stderr}")


def check_energy(m, checks):
    """--energy as src/energy.cpp measures it: power from the first to the last step of the counter seen
    while the GPU was busy; on a stand-in GPU and counter, the power drawn, and each way it cannot be had."""
    steps = [(5 + 0.1 * i, 1e4 + 65.0 * i) for i in range(11)]
    e = m.energy_from_steps(steps, 0.002)
    checks.expect(e is not None and math.isclose(e["watts"], 650) and math.isclose(e["joules_per_call"], 1.3)
                  and e["steps"] == 11, f"energy_from_steps: {e}")
    checks.expect(m.energy_from_steps(steps[:m.ENERGY_MIN_STEPS - 1], 0.002) is None
                  and m.energy_from_steps([(t, 1e4) for t, _ in steps], 0.002) is None, "too few steps, or no energy")
    calls, seconds_per_call, watts = [0], 0.001, 650.0

    def stand_in(done_every):
        class Event:
            def __init__(self, enable_timing=False):
                self.looks = 0

            def record(self):
                pass

            def query(self):  # a chunk ends at every `done_every`-th look
                self.looks += 1
                return self.looks % done_every == 0

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return 1e3 * calls[0] * seconds_per_call
        return type("Torch", (), {"cuda": type("Cuda", (), {"Event": Event})})

    class Counter:  # `watts` drawn, stepping every 20 ms
        def energy_j(self):
            return watts * 0.02 * int(time.monotonic() / 0.02)

    run = lambda: calls.__setitem__(0, calls[0] + 1)
    e, why = m.energy_per_call(stand_in(2), run, seconds_per_call, 0.5, Counter())
    checks.expect(e is not None and abs(e["watts"] - watts) < 0.05 * watts and e["steps"] >= m.ENERGY_MIN_STEPS
                  and math.isclose(e["joules_per_call"], e["watts"] * seconds_per_call), f"energy_per_call: {e} {why}")
    e, why = m.energy_per_call(stand_in(1), run, seconds_per_call, 0.5, Counter())
    checks.expect(e is None and "ran dry" in why, f"a GPU faster than the host's launches: {why}")
    frozen = Counter()
    first = frozen.energy_j()
    frozen.energy_j = lambda: min(watts * 0.02 * int(time.monotonic() / 0.02), first + 1)  # steps, then stops
    e, why = m.energy_per_call(stand_in(2), run, seconds_per_call, 0.5, frozen)
    checks.expect(e is None and "stepped" in why, f"a counter that stopped stepping ends the window: {why}")
    no_counter = type("Nvml", (), {"energy_j": lambda self: None})()
    e, why = m.energy_per_call(stand_in(2), run, seconds_per_call, 0.5, no_counter)
    checks.expect(e is None and "no energy counter" in why, f"no counter: {why}")
    row = {"metrics": {}}
    m.add_energy(row, type("Args", (), {"energy": 1.0}), {"joules_per_call": 2.0, "watts": 600.0}, 4e12)
    checks.expect(row["metrics"] == {"energy_mj": 2000.0, "power_w": 600.0, "tflop_per_j": 2.0}, f"{row}")


def check_clock_library(m, lib_path, checks):
    """libtk_clock_c as SmClock declares it. Without a GPU, creating a bracket fails and says so; with
    one, a bracket around nothing reads a clock the card can run at, or none where the window is
    shorter than %globaltimer's tick (docs/decisions/004-peers-in-one-process.md: under real kernels)."""
    stream = type("Stream", (), {"cuda_stream": 0})  # the default stream: no torch needed
    fake = type("Torch", (), {"cuda": type("Cuda", (), {"current_stream": staticmethod(lambda: stream)})})
    try:
        clock = m.SmClock(fake, lib_path)
    except RuntimeError as e:
        checks.expect("tk_clock_create failed" in str(e), f"no GPU: the bracket is refused, saying so: {e}")
        lib = ctypes.CDLL(lib_path)
        lib.tk_clock_begin.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.tk_clock_mhz.argtypes = [ctypes.c_void_p]
        lib.tk_clock_mhz.restype = ctypes.c_double
        checks.expect(lib.tk_clock_begin(None, None) != 0 and math.isnan(lib.tk_clock_mhz(None)),
                      "a null bracket is an error, not a crash")
        return
    clock.begin()
    clock.end()
    mhz = clock.mhz()
    checks.expect(mhz is None or 100 < mhz < 5000, f"a bracket around nothing reads a clock: {mhz} MHz")


if __name__ == "__main__":
    sys.exit(main())
