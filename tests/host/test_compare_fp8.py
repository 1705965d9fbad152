#!/usr/bin/env python3
"""scripts/compare_fp8.py without torch or a GPU: its shapes, the power-of-two scales, the fp8 peak,
the rows (tk's and cuDNN's, passing, failing, skipped) and the report and table built of them; bad
options exit 2 naming what is valid, and valid ones without torch exit 3. Given tkprobe's
validate_report and tkprobe, the report must pass tkprobe's schema and reader and be readable by
`tkprobe compare`.

usage: test_compare_fp8.py SOURCE_DIR [VALIDATE_REPORT TKPROBE]
"""
import os
import sys

import sample_header as header

# The attention probe's row keys for the forward, and the dtype.
PROBE_KEYS = {"kernel", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "dtype"}


def check_shapes_and_scales(m, checks):
    sweep, quick = m.shapes(False), m.shapes(True)
    checks.expect([(s["batch"], s["heads"], s["seq"], s["causal"]) for s in sweep] ==
                  [(16, 16, 1024, False), (4, 16, 4096, False), (1, 16, 16384, False),
                   (16, 16, 1024, True), (4, 16, 4096, True), (1, 16, 16384, True)]
                  and all(s["head_dim"] == 128 and s["kv_heads"] == s["heads"] for s in sweep),
                  f"the attention probe's D = 128 sweep: {sweep}")
    checks.expect(len(quick) == 2 and {s["causal"] for s in quick} == {False, True}, f"--quick: {quick}")
    scales = [m.power_of_two_scale(x) for x in (448.0, 449.0, 1.0, 3.5, 0.0)]
    # 448 fits as it is; 449 needs 2; 1 / 2^-8 = 256 <= 448 (2^-9 would give 512); 3.5 / 2^-7 = 448.
    checks.expect(scales == [1.0, 2.0, 2.0 ** -8, 2.0 ** -7, 1.0], f"power-of-two scales: {scales}")
    checks.expect(m.fp8_peak("NVIDIA H200") == 2 * 989.4 and m.fp8_peak("NVIDIA A100-SXM4-80GB") is None,
                  "the fp8 peak twice bf16's, none where no datasheet is known")


class NewerFrontendGraph:
    """A graph whose sdpa_fp8 takes generate_stats, as newer nvidia-cudnn-frontend releases' do."""

    def sdpa_fp8(self, generate_stats, **arguments):
        return generate_stats, arguments


class OlderFrontendGraph:
    """A graph whose sdpa_fp8 takes is_inference, as older releases' do."""

    def sdpa_fp8(self, is_inference, **arguments):
        return is_inference, arguments


def check_frontend_versions(m, checks):
    """The fp8 node asks for no softmax stats in either spelling the frontend has had."""
    checks.expect(m.sdpa_fp8_node(NewerFrontendGraph(), name="n") == (False, {"name": "n"}),
                  "generate_stats=False where taken")
    checks.expect(m.sdpa_fp8_node(OlderFrontendGraph(), name="n") == (True, {"name": "n"}),
                  "is_inference=True where generate_stats is not a keyword")


def sample_rows(m):
    """Every row kind the script writes, with the NVML spans."""
    (small, small_causal), (first, _, big) = m.shapes(True), m.shapes(False)[:3]
    ours, peer = [1e-3] * 20, [1.25e-3] * 20  # seconds a launch
    calm = (header.reading(1980, 300.0, 40, 0x0), header.reading(1970, 650.0, 52, 0x1))
    capped = (header.reading(1980, 300.0, 40, 0x0), header.reading(1600, 690.0, 55, 0x4))
    ratios = m.based.paired_ratios(ours, peer)
    peak, nan = m.fp8_peak("NVIDIA H200"), float("nan")
    rows = [m.measured_row("tk", small, ours, {"rel_error": 2e-2, "worst_row_error": 5e-2, "lse_error": 1e-5}, peak,
                           span=calm),
            m.measured_row("cudnn-fp8", small, peer, {"rel_error": 3e-2, "worst_row_error": 6e-2}, peak, ratios, calm),
            m.measured_row("cudnn-fp8", small_causal, peer, {"rel_error": nan, "worst_row_error": nan}, peak, ratios,
                           calm),
            m.measured_row("cudnn-fp8", first, peer, {"rel_error": 3e-2, "worst_row_error": 0.2}, peak, ratios,
                           capped),  # one row far off: fails
            m.skipped_row("tk", big, "refused by the kernel (its reason is on stderr)"),
            m.skipped_row("cudnn-fp8", big, "nvidia-cudnn-frontend not usable (ModuleNotFoundError: No module "
                                            "named 'cudnn'): pip install nvidia-cudnn-frontend")]
    return rows, [calm, calm, calm, capped]


def check_rows(m, checks):
    rows, spans = sample_rows(m)
    doc = m.report(header.TOOL, header.HOST, header.DEVICE, rows, spans)
    out = doc["results"]
    checks.expect(doc["schema"] == "tkprobe.report/2" and doc["tool"]["probes"] == ["fp8-peers"], "a version 2 report")
    checks.expect(all(set(r["params"]) == PROBE_KEYS and r["params"]["dtype"] == "e4m3" for r in out),
                  "every row carries the attention probe's params, dtype e4m3")
    checks.expect([bool(r.get("peer")) for r in out] == [False, True, True, True, False, True],
                  "cuDNN's rows, and only they, are peers")
    checks.expect([r["status"] for r in out] == ["ok", "ok", "failed", "failed", "skipped", "skipped"],
                  f"statuses: {[r['status'] for r in out]}")
    tk = out[0]["metrics"]
    # B=2 H=4 N=1000 D=128 without a mask: 4 x 2 x 4 x 1000^2 x 128 = 4.096e9 FLOPs in 1 ms.
    checks.expect((tk["ms"]["median"], tk["tflops"]["median"]) == (1.0, 4.096) and
                  abs(tk["pct_datasheet_peak"] - 100 * 4.096 / 1978.8) < 1e-3, f"ms, TFLOP/s, % of peak: {tk}")
    checks.expect(all(r["primary"] == "tflops" for r in out if r["status"] != "skipped"), "primary: tflops")
    checks.expect("ratio" not in tk and out[1]["metrics"]["ratio"]["median"] == 1.25,
                  "tk's speed over cuDNN's, launch by launch; none for tk itself")
    # The rows' NaN and LSE handling is peer_table's, checked in test_compare_decode.py.
    checks.expect(out[3]["check"]["worst_row_error"] == 0.2 and out[3]["check"]["worst_row_max"] == 0.1,
                  "a worst row over the e4m3 bound 1e-1 fails though the tensor's error passes")
    checks.expect(out[0]["check"]["max"] == 4e-2, "the e4m3 forward's bound over O")
    checks.expect("telemetry" not in out[0] and out[3]["telemetry"] == {"throttled": True, "reasons": ["sw_power_cap"]},
                  f"row telemetry only where throttled: {out[3].get('telemetry')}")
    texts = [f["text"] for f in doc["findings"]]
    checks.expect(any(t.startswith("tk over cudnn-fp8, paired launch by launch: 1.25x..1.25x") for t in texts)
                  and any(t.startswith("tk: 4.1..4.1 TFLOP/s over 1 shape;") for t in texts), f"findings: {texts}")
    table = m.markdown(doc)
    checks.expect("| B=2 H=4 N=1000 D=128 | tk | 1.0000 | 4.1 | 0.2 | 2.00e-02 | 5.00e-02 | - | ok |" in table
                  and "| cudnn-fp8 | 1.2500 | 3.3 | 0.2 | 3.00e-02 | 6.00e-02 | 1.250 | ok |" in table
                  and "| NaN | NaN | 1.250 | FAILED |" in table
                  and "| B=1 H=16 N=16384 D=128 | cudnn-fp8 | - | - | - | - | - | - | skipped: nvidia-cudnn-frontend"
                      in table, f"the table:\n{table}")
    return doc


def check_all(m, source_dir, tools, checks):
    check_shapes_and_scales(m, checks)
    check_frontend_versions(m, checks)
    doc = check_rows(m, checks)
    header.check_written_report(m.peer_table.tkreport.text(doc), tools, source_dir, checks, "cudnn-fp8")
    header.check_run_options(os.path.join(source_dir, "scripts", "compare_fp8.py"), "tk,cudnn-fp8", "cudnn-fp8",
                             checks)


if __name__ == "__main__":
    sys.exit(header.main("compare_fp8", __doc__.strip().splitlines()[-1], check_all))
