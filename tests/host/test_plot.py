#!/usr/bin/env python3
"""scripts/plot.py without a GPU: every figure (each probe's probes/<name>/plot.py) drawn from the
committed reports (results/h200) and from the version 1 fixtures (tests/host/data/v1) is a non-empty
PNG; the TMA swizzle map reads the same from a v1 and a v2 placement; bad input (not a report, not
JSON, a report of several devices, an unknown probe, an unwritable --out) is one message, exit 2, and
no file. Exit 77 (skipped) where matplotlib is not installed for this python3.

usage: test_plot.py [SOURCE_DIR]
"""
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "plot.py")
SUITE = os.path.join(ROOT, "results", "h200", "suite.json")
ARCHIVE = os.path.join(ROOT, "results", "h200", "archive")  # the peers' records
V1 = os.path.join(ROOT, "tests", "host", "data", "v1")  # rows cut from the H200's version 1 reports
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import tkreport  # noqa: E402 (the suite baseline, a version 3 file, as the version 2 document)


def load_script():
    spec = importlib.util.spec_from_file_location("plot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["plot"] = module  # as plot.py registers itself when run: the probes' plot.py import it
    spec.loader.exec_module(module)
    return module


def drawn_probes():
    """The probes whose folder's plot.py draws a figure."""
    return {name for name, module in load_script().probe_plots().items() if hasattr(module, "draw")}


def plot(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


def ok_probes(report):
    return {r["probe"] for r in report["results"] if r["status"] == "ok"}


def to_v2(report):
    """The report in schema v2's placement format: per 16-byte chunk of the box, the placed byte / 16."""
    v2 = copy.deepcopy(report)
    v2["schema"] = "tkprobe.report/2"
    for row in v2["results"]:
        placement = row.get("check", {}).get("placement")
        if row["probe"] != "tma-swizzle" or not placement:
            continue
        size = {"bf16": 2, "fp32": 4, "fp8": 1}[row["params"]["dtype"]]
        rows = max(y for y, _, _ in placement) + 1
        chunks = max(col * size // 16 for _, col, _ in placement) + 1
        placed = [None] * (rows * chunks)
        for y, col, byte in placement:
            if col * size % 16 == 0:
                placed[y * chunks + col * size // 16] = byte // 16
        row["check"]["placement"] = {"rows": rows, "chunks_per_row": chunks, "chunk_bytes": 16,
                                     "placed_chunk": placed}
    return v2


class Figures(unittest.TestCase):
    def check_pngs(self, out, names):
        for name in names:
            path = os.path.join(out, f"{name}.png")
            self.assertTrue(os.path.isfile(path), f"{name}.png not written")
            with open(path, "rb") as f:
                data = f.read()
            self.assertTrue(data.startswith(PNG_SIGNATURE), f"{name}.png is not a PNG")
            self.assertGreater(len(data), 1000, f"{name}.png is nearly empty")
            self.assertLess(len(data), 200_000, f"{name}.png is not small ({len(data)} bytes)")
        self.assertEqual(sorted(os.listdir(out)), sorted(f"{n}.png" for n in names), "stray or temporary files")

    def test_every_figure_of_the_suite(self):
        report = tkreport.load(SUITE)
        expected = ok_probes(report) & drawn_probes()
        self.assertGreaterEqual(len(expected), 16, "the suite should draw every probe that has a figure")
        for probe in ("overlap", "quadrants", "tma-reduce", "based", "cluster", "l2"):  # the baseline's newest probes
            self.assertIn(probe, expected, f"{probe}: no figure from the suite")
        with tempfile.TemporaryDirectory() as out:
            run = plot(SUITE, "--out", out)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.check_pngs(out, expected)
        for probe in ("info", "wgmma-layout"):  # no figure, by choice: a note, not an error
            self.assertIn(f"{probe} (suite.json): no figure", run.stdout)

    def check_every_report_in(self, folder):
        reports = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json"))
        self.assertTrue(reports, f"no report in {folder}")
        plots = drawn_probes()
        expected = []
        for path in reports:
            expected += [(p, path) for p in ok_probes(tkreport.load(path)) & plots]
        counts = {p: sum(q == p for q, _ in expected) for p, _ in expected}
        names = [p if counts[p] == 1 else f"{p}-{os.path.splitext(os.path.basename(path))[0]}" for p, path in expected]
        with tempfile.TemporaryDirectory() as out:
            run = plot(*reports, "--out", out)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.check_pngs(out, names)

    def test_every_archived_record(self):
        self.check_every_report_in(ARCHIVE)

    def test_every_version_1_fixture(self):
        self.check_every_report_in(V1)

    def test_probes_limits_the_figures(self):
        with tempfile.TemporaryDirectory() as out:
            run = plot(SUITE, "--out", out, "--probes", "mem-latency,info")
            self.assertEqual(run.returncode, 0, run.stderr)
            self.check_pngs(out, ["mem-latency"])
            self.assertIn("info (suite.json): no figure", run.stdout)

    def test_swizzle_v1_and_v2_placements_agree(self):
        # The suite is schema v2 now: the v1 placements are the H200's version 1 report's (two rows of it).
        with open(os.path.join(V1, "tma-swizzle.json")) as f:
            v1 = json.load(f)
        self.assertEqual(v1["schema"], "tkprobe.report/1")
        v2 = to_v2(v1)
        swizzle_map = load_script().probe_plots()["tma-swizzle"].swizzle_map
        pairs = [(a, b) for a, b in zip(v1["results"], v2["results"]) if a["probe"] == "tma-swizzle"]
        self.assertTrue(pairs)
        for a, b in pairs:
            self.assertEqual(swizzle_map(a), swizzle_map(b), a["params"])
        rows, chunks, placed = swizzle_map(pairs[-1][0])
        if pairs[-1][0]["params"]["mode"] == "128B":  # the hardware's 128B swizzle: chunk ^= row mod 8
            self.assertEqual(placed[3][5], 5 ^ 3)
        b = pairs[-1][1]
        b["check"]["placement"]["placed_chunk"][0] = None  # a chunk the probe did not find
        self.assertIsNone(swizzle_map(b)[2][0][0])
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "v2.json")
            with open(path, "w") as f:
                json.dump({**v2, "results": [r for r in v2["results"] if r["probe"] == "tma-swizzle"]}, f)
            run = plot(path, "--out", os.path.join(out, "plots"))
            self.assertEqual(run.returncode, 0, run.stderr)
            self.check_pngs(os.path.join(out, "plots"), ["tma-swizzle"])

    def test_packed_batches_are_drawn_by_their_length_mix(self):
        report = tkreport.load(SUITE)
        report["results"] = [r for r in report["results"] if r["probe"] == "attention"]
        packed = copy.deepcopy(next(r for r in report["results"] if r["params"]["pass"] == "bwd"))
        packed["params"] = {"kernel": "wgmma", "pass": "bwd", "varlen": "random:1", "sequences": 12, "tokens": 16384,
                            "head_dim": 128, "heads": 16, "kv_heads": 16, "causal": True, "dtype": "bf16"}
        report["results"].append(packed)
        self.plot_written(report, ["attention"])

    def test_a_probe_without_a_plot_is_a_note(self):
        report = tkreport.load(SUITE)
        report["results"] = [r for r in report["results"] if r["probe"] == "gemm"]
        report["results"].append({"probe": "claims", "params": {}, "status": "ok", "metrics": {}})
        run = self.plot_written(report, ["gemm"])
        self.assertIn("claims (r.json): no figure", run.stdout)

    def plot_written(self, report, figures):
        """plot.py on `report` (written as r.json): exit 0 and exactly `figures` drawn; its run."""
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "r.json")
            with open(path, "w") as f:
                json.dump(report, f)
            run = plot(path, "--out", os.path.join(out, "plots"))
            self.assertEqual(run.returncode, 0, run.stderr)
            self.check_pngs(os.path.join(out, "plots"), figures)
        return run


class BadInput(unittest.TestCase):
    def refused(self, files, extra=(), out=None):
        """Runs plot.py on `files` (name -> text, written to a folder first); asserts exit 2, one message
        on stderr, no PNG anywhere; returns the message."""
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, text in files.items():
                paths.append(os.path.join(tmp, name))
                if text is not None:
                    with open(paths[-1], "w") as f:
                        f.write(text)
            target = out(tmp) if out else os.path.join(tmp, "plots")
            run = plot(*paths, "--out", target, *extra)
            self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
            self.assertEqual(run.stdout, "")
            self.assertEqual(run.stderr.count("\n"), 1, run.stderr)
            written = [f for _, _, fs in os.walk(tmp) for f in fs if not f.endswith((".json", ".txt"))]
            self.assertEqual(written, [], "nothing may be written")
            self.assertFalse(os.path.exists(target), "--out is made only once the input is known good")
            return run.stderr

    def suite_text(self):
        with open(SUITE) as f:
            return f.read()

    def test_not_a_report(self):
        err = self.refused({"other.json": json.dumps({"schema": "something/1", "results": []})})
        self.assertIn("not a tkprobe report", err)
        self.assertIn("tkprobe.report/1", err)
        self.assertIn("tkprobe.report/2", err)
        err = self.refused({"list.json": "[1, 2]"})
        self.assertIn("not a tkprobe report", err)

    def test_a_row_that_is_not_a_row(self):
        report = tkreport.decoded(json.loads(self.suite_text()))
        report["results"][3] = {"probe": "gemm"}
        self.assertIn("results[3]", self.refused({"bad.json": json.dumps(report)}))

    def test_a_row_its_figure_cannot_draw(self):
        report = tkreport.decoded(json.loads(self.suite_text()))
        row = next(r for r in report["results"] if r["probe"] == "mem-latency")
        del row["params"]["cache_state"]
        err = self.refused({"suite.json": json.dumps(report)})  # the other figures are not written either
        self.assertIn("cannot draw mem-latency", err)

    def test_a_report_of_several_devices(self):
        report = tkreport.decoded(json.loads(self.suite_text()))
        report["devices"] = [{"device": report.pop("device")}]
        self.assertIn("a report of several devices (--devices, 1 here)", self.refused({"node.json": json.dumps(report)}))

    def test_unreadable_json(self):
        self.assertIn("not JSON", self.refused({"broken.json": '{"schema": "tkprobe.report/1", '}))
        self.assertIn("cannot read", self.refused({"absent.json": None}))

    def test_a_bad_report_among_good_ones_stops_everything(self):
        err = self.refused({"suite.json": self.suite_text(), "zz.json": "not json"})
        self.assertIn("zz.json", err)

    def test_unknown_probe(self):
        err = self.refused({"suite.json": self.suite_text()}, extra=("--probes", "mem-latency,no-such-probe"))
        self.assertIn("no-such-probe", err)
        self.assertIn("valid: ", err)
        self.assertIn("mem-latency", err.split("valid: ")[1])

    def test_unwritable_out(self):
        def under_a_file(tmp):  # a folder inside a regular file: unwritable even for root
            with open(os.path.join(tmp, "file.txt"), "w") as f:
                f.write("x")
            return os.path.join(tmp, "file.txt", "plots")

        err = self.refused({"suite.json": self.suite_text()}, out=under_a_file)
        self.assertIn("--out", err)
        self.assertIn("cannot write", err)


if __name__ == "__main__":
    try:
        import matplotlib
        new_enough = tuple(int(v) for v in re.findall(r"\d+", matplotlib.__version__)[:2]) >= (3, 6)  # as plot.py
    except ImportError:
        new_enough = False
    if not new_enough:
        print(f"skipped: matplotlib 3.6 or newer is not installed for {sys.executable} "
              "(scripts/setup.sh installs Debian 12's python3-matplotlib)")
        sys.exit(77)
    unittest.main(verbosity=2)
