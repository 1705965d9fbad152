#!/usr/bin/env python3
"""scripts/compare_decode.py without torch or a GPU: the bytes and FLOPs a decode step is credited
with (hand-worked cases), the lengths, block tables and FlashInfer's page lists made from them, the
rows (tk's and the peers', passing, failing, skipped), the batch-1 fit, and the report and table
built of them; bad options exit 2 naming what is valid, and valid ones without torch exit 3. Given tkprobe's
validate_report and tkprobe, the report must pass tkprobe's schema and reader and be readable by
`tkprobe compare`.

usage: test_compare_decode.py SOURCE_DIR [VALIDATE_REPORT TKPROBE]
"""
import os
import random
import subprocess
import sys
import tempfile

import sample_header as header

# The decode probe's row keys (probes/decode/decode.cpp), the kernel and the dtype.
PROBE_KEYS = {"kernel", "batch", "keys", "q_tokens", "heads", "kv_heads", "head_dim", "page_size", "dtype"}


def shape(batch, keys, q_tokens, heads, kv_heads, head_dim, page_size):
    return dict(batch=batch, keys=keys, q_tokens=q_tokens, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                page_size=page_size)


def check_counting(m, checks):
    """Bytes and FLOPs of two steps worked by hand."""
    one = shape(2, 40, 1, 4, 2, 64, 16)  # lengths 33 and 7
    # K and V: (33 + 7) keys x 2 heads x 64 x 2 bytes, twice = 20480; q and o: 2 x (2 x 1 x 4 x 64 x 2) = 2048.
    checks.expect(m.step_bytes(one, [33, 7]) == 22528, f"bytes, one new token: {m.step_bytes(one, [33, 7])}")
    # 4 x 4 heads x 64 x 40 attended keys.
    checks.expect(m.step_flops(one, [33, 7]) == 40960, f"FLOPs, one new token: {m.step_flops(one, [33, 7])}")
    causal = shape(2, 10, 3, 2, 1, 64, 16)  # lengths 10 and 5, three causal new tokens
    # K and V: 15 x 1 x 64 x 2, twice = 3840; q and o: 2 x (2 x 3 x 2 x 64 x 2) = 3072.
    checks.expect(m.step_bytes(causal, [10, 5]) == 6912, f"bytes, causal: {m.step_bytes(causal, [10, 5])}")
    # The new tokens see 8 + 9 + 10 and 3 + 4 + 5 keys: 39 pairs, x 4 x 2 heads x 64.
    checks.expect(m.step_flops(causal, [10, 5]) == 19968, f"FLOPs, causal: {m.step_flops(causal, [10, 5])}")
    checks.expect((m.visible_keys(10, 3, 0, True), m.visible_keys(10, 3, 2, True), m.visible_keys(10, 3, 0, False))
                  == (8, 10, 10), "the first new token sees the keys before the others, the last sees all")


def check_tables(m, checks):
    """Lengths off the page boundaries, a shuffled pool, FlashInfer's pages of the same table."""
    checks.expect(m.length_range(1000, 64, 1) == range(937, 1001) and m.length_range(100, 64, 40) == range(40, 101),
                  "the last page below --keys, at least the new tokens")
    checks.expect((m.ends_mid_page(960, 64), m.ends_mid_page(961, 64), m.ends_mid_page(64, 1)) == (False, True, True),
                  "a multiple of the page size ends on a boundary; a page of 1 ends every length")
    checks.expect((m.lengths_possible(16, 16, 16), m.lengths_possible(17, 16, 16), m.lengths_possible(64, 64, 1),
                   m.lengths_possible(5, 1, 1), m.lengths_possible(3, 16, 4)) == (False, True, True, True, False),
                  "a point is refused where no length ends mid-page")
    sweep = m.shapes(m.SWEEP, 32, 8, 128, 64, 1)
    checks.expect([(s["batch"], s["keys"]) for s in sweep] ==
                  [(1, 8192), (1, 32768), (1, 131072), (16, 8192), (64, 2048), (64, 8192), (256, 1024)]
                  and all((s["heads"], s["kv_heads"], s["head_dim"], s["page_size"]) == (32, 8, 128, 64)
                          for s in sweep),
                  f"the sweep: {sweep}")
    lengths = m.sequence_lengths(shape(256, 1024, 1, 32, 8, 128, 64), random.Random(1))
    checks.expect(len(lengths) == 256 and all(961 <= n <= 1023 and n % 64 for n in lengths)
                  and len(set(lengths)) > 1, f"lengths of one page's range, none on a boundary, unequal: {lengths[:8]}")
    table = m.block_table(3, 4, random.Random(2))
    flat = [p for row in table for p in row]
    checks.expect([len(row) for row in table] == [4, 4, 4] and sorted(flat) == list(range(12))
                  and flat != list(range(12)), f"each page once, in shuffled order: {table}")
    checks.expect(m.flashinfer_pages([[5, 2, 7], [0, 3, 1]], [33, 7], 16) == ([0, 3, 4], [5, 2, 7, 0], [1, 7]),
                  f"kv_indptr, kv_indices, kv_last_page_len: {m.flashinfer_pages([[5, 2, 7], [0, 3, 1]], [33, 7], 16)}")
    checks.expect(m.flashinfer_pages([[4, 9]], [32], 16) == ([0, 2], [4, 9], [16]), "a full last page holds page_size")
    checks.expect((m.sdpa_needs_mask([5, 5], False), m.sdpa_needs_mask([5, 6], False), m.sdpa_needs_mask([5, 5], True))
                  == (False, True, True), "SDPA's mask only where lengths differ or the new tokens are causal")


def sample_rows(m):
    """Every row kind the script writes, on the hand-worked step and one more, with the NVML spans."""
    small, big = shape(2, 40, 1, 4, 2, 64, 16), shape(16, 8192, 1, 32, 8, 128, 64)
    work = (m.step_bytes(small, [33, 7]), m.step_flops(small, [33, 7]))
    ours, peer = [1e-4] * 20, [2e-4] * 20  # seconds a launch
    calm = (header.reading(1980, 300.0, 40, 0x0), header.reading(1970, 650.0, 52, 0x1))
    capped = (header.reading(1980, 300.0, 40, 0x0), header.reading(1600, 690.0, 55, 0x4))
    ratios = m.based.paired_ratios(ours, peer)
    nan = float("nan")
    rows = [m.measured_row("tk", small, ours, work, {"rel_error": 2e-3, "worst_row_error": 4e-3, "lse_error": 1e-5},
                           span=calm),
            m.measured_row("flashinfer", small, peer, work, {"rel_error": 3e-3, "worst_row_error": 6e-3}, ratios, calm),
            m.measured_row("cudnn-paged", small, peer, work, {"rel_error": nan, "worst_row_error": nan}, ratios, calm),
            m.measured_row("torch-sdpa", small, peer, work, {"rel_error": 4e-3, "worst_row_error": 2e-2}, ratios,
                           capped),  # one row far off: fails
            m.skipped_row("tk", big, "refused: tk_attention: ..."),
            m.skipped_row("flashinfer", big, "not importable (ModuleNotFoundError: No module named 'flashinfer'): "
                                             "pip install flashinfer-python")]
    return rows, [calm, calm, calm, capped]


def sample_report(m, rows, spans):
    return m.report(header.TOOL, header.HOST, header.DEVICE, rows, spans)


def check_rows(m, checks):
    rows, spans = sample_rows(m)
    doc = sample_report(m, rows, spans)
    out = doc["results"]
    checks.expect(doc["schema"] == "tkprobe.report/2" and doc["tool"]["probes"] == ["decode-peers"],
                  "a version 2 report")
    checks.expect(all(set(r["params"]) == PROBE_KEYS for r in out), "every row carries the decode probe's params")
    checks.expect([bool(r.get("peer")) for r in out] == [False, True, True, True, False, True],
                  "the peers' rows, and only they, are peers")
    checks.expect([r["status"] for r in out] == ["ok", "ok", "failed", "failed", "skipped", "skipped"],
                  f"statuses: {[r['status'] for r in out]}")
    tk = out[0]["metrics"]
    # 22528 bytes and 40960 FLOPs in 0.1 ms.
    checks.expect((tk["ms"]["median"], tk["gbps"]["median"], tk["tflops"]["median"], tk["bytes"]) ==
                  (0.1, 0.22528, 0.0004096, 22528) and tk["gbps"]["better"] == "higher",
                  f"ms, GB/s and TFLOP/s of the counted work: {tk['ms']} {tk['gbps']} {tk['tflops']}")
    checks.expect(all(r["primary"] == "gbps" for r in out if r["status"] != "skipped"), "primary: gbps")
    checks.expect("ratio" not in tk and out[1]["metrics"]["ratio"]["median"] == 2.0,
                  "tk's speed over a peer's, launch by launch; none for tk itself")
    checks.expect(tk["lse_error"] == 1e-5 and out[0]["check"]["lse_max"] == 1e-2 and "lse_error" not in out[1]["check"],
                  "tk's logsumexp checked, the peers' not given")
    checks.expect(out[2]["metrics"]["rel_error"] is None and out[2]["check"]["value"] is None,
                  "a NaN error (an unwritten output) shows as null and fails")
    checks.expect(out[3]["check"]["worst_row_error"] == 2e-2 and not out[3]["check"]["passed"],
                  "a worst row over 1e-2 fails though the norm passes")
    lse_off = m.measured_row("tk", m.shapes([(2, 40)], 4, 2, 64, 16, 1)[0], [1e-4] * 20, (1, 1),
                             {"rel_error": 1e-3, "worst_row_error": 1e-3, "lse_error": 0.5})
    checks.expect(lse_off["status"] == "failed", "a logsumexp off by 0.5 fails")
    checks.expect("what" in out[0]["check"] and all("what" not in r["check"] for r in out[1:4]),
                  "version 2: a check's `what` once, where it changes")
    checks.expect("telemetry" not in out[0] and out[3]["telemetry"] == {"throttled": True, "reasons": ["sw_power_cap"]},
                  f"row telemetry only where throttled: {out[3].get('telemetry')}")
    section = doc["telemetry"]["decode-peers"]
    checks.expect(section["rows"] == 4 and section["throttled_rows"] == 1 and section["sm_clock_mhz"] == [1600, 1980],
                  f"the telemetry section: {section}")
    texts = [f["text"] for f in doc["findings"]]
    checks.expect(any(t.startswith("tk over flashinfer, paired launch by launch: 2.00x..2.00x") for t in texts)
                  and any(t.startswith("torch-sdpa: 0..0 GB/s over 1 shape;") and "1 failed the check" in t
                          for t in texts), f"findings: {texts}")
    only_skipped = m.kernel_findings("flashinfer", [rows[5]])
    checks.expect(only_skipped == ["flashinfer: skipped (1 shape): not importable (ModuleNotFoundError: No module "
                                   "named 'flashinfer'): pip install flashinfer-python"], f"{only_skipped}")
    checks.expect(rows[1]["check"].get("what"), "the report leaves the caller's rows whole")
    table = m.markdown(doc)
    checks.expect("| B=2 keys=40 T=1 H=4/2 D=64 page=16 | tk | 0.1000 | 0 | 0.00 | 2.00e-03 | 4.00e-03 | - | ok |"
                  in table and "| flashinfer | 0.2000 | 0 | 0.00 | 3.00e-03 | 6.00e-03 | 2.000 | ok |" in table
                  and "| NaN | NaN | 2.000 | FAILED |" in table
                  and "| B=16 keys=8192 T=1 H=32/8 D=128 page=64 | flashinfer | - | - | - | - | - | - | skipped: not "
                      "importable" in table, f"the table:\n{table}")
    return doc


def check_step_fit(m, checks):
    """Batch-1 steps of 10 us plus their bytes at 2 TB/s come back as that; one length, a failed
    step or a batch of two gives no fit."""
    calm = (header.reading(1980, 300.0, 40, 0x0), header.reading(1970, 650.0, 52, 0x1))
    good = {"rel_error": 2e-3, "worst_row_error": 4e-3, "lse_error": 1e-5}
    rows = []
    for keys in (1024, 4096, 16384):
        one = shape(1, keys, 1, 4, 2, 64, 16)
        step_b = m.step_bytes(one, [keys])
        rows.append(m.measured_row("tk", one, [10e-6 + step_b / 2e12] * 20, (step_b, 1), good, span=calm))
    two = shape(2, 4096, 1, 4, 2, 64, 16)
    rows.append(m.measured_row("flashinfer", shape(1, 1024, 1, 4, 2, 64, 16), [1e-5] * 20, (1, 1), good, [1.0], calm))
    rows.append(m.measured_row("flashinfer", two, [2e-5] * 20, (2, 1), good, [1.0], calm))
    rows.append(m.measured_row("torch-sdpa", shape(1, 1024, 1, 4, 2, 64, 16), [1e-5] * 20, (1, 1),
                               {"rel_error": 1.0, "worst_row_error": 1.0}, [1.0], calm))
    rows.append(m.measured_row("torch-sdpa", shape(1, 4096, 1, 4, 2, 64, 16), [2e-5] * 20, (2, 1), good, [1.0], calm))
    fixed, rate = m.step_fit([(1e6, 10e-6 + 1e6 / 2e12), (4e6, 10e-6 + 4e6 / 2e12)])
    checks.expect(abs(fixed - 10e-6) < 1e-12 and abs(rate / 2e12 - 1) < 1e-9, f"the fit: {fixed} s, {rate} B/s")
    checks.expect((m.step_fit([(1e6, 1e-5)]), m.step_fit([(1e6, 1e-5), (1e6, 2e-5)]),
                   m.step_fit([(1e6, 2e-5), (2e6, 1e-5)])) == (None, None, None),
                  "no fit of one step, one size twice, or less time for more bytes")
    texts = m.fit_findings(rows)
    checks.expect(texts == ["tk B=1: over 3 lengths, a step costs 10.0 us plus its bytes at 2000 GB/s"],
                  f"tk's fit alone (flashinfer's one batch-1 length, torch-sdpa's failed step): {texts}")
    doc = sample_report(m, rows, [calm] * len(rows))
    checks.expect(doc["findings"][-1]["text"] == texts[0], "the report's findings end with the fit")


def check_reader(m, doc, tools, source_dir, checks):
    """The report as tkprobe reads it: its schema, its reader, `tkprobe compare`; on its passing rows
    alone, compare passes."""
    written = header.check_written_report(m.peer_table.tkreport.text(doc), tools, source_dir, checks, "flashinfer")
    if written is None:
        return
    checks.expect(m.peer_table.tkreport.decoded(written) == doc, "version 3 decodes to the version 2 document")
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean.json")
        m.sdpa.write_atomic(clean, m.peer_table.tkreport.text(dict(doc, results=[r for r in doc["results"]
                                                                                 if r["status"] != "failed"])))
        c = subprocess.run([tools[1], "compare", clean, clean], capture_output=True, text=True)
        checks.expect(c.returncode == 0, f"tkprobe compare on passing rows: {c.returncode} {c.stdout} {c.stderr}")


def check_options(source_dir, checks):
    """Bad options exit 2 with a message saying what is valid; valid ones without torch exit 3."""
    script = os.path.join(source_dir, "scripts", "compare_decode.py")
    header.check_bad_options(script, (
        (["--head-dim", "96"], "--head-dim 96: give 64 or 128"),
        (["--q-tokens", "17"], "--q-tokens 17: give 1 to 16"),
        (["--q-tokens", "0"], "--q-tokens 0: give 1 to 16"),
        (["--heads", "32", "--kv-heads", "6"], "give heads a multiple of kv-heads"),
        (["--page-size", "0"], "--page-size 0: give a positive integer"),
        (["--batch", "4"], "--batch, --keys: give both"),
        (["--keys", "100"], "--batch, --keys: give both"),
        (["--batch", "x", "--keys", "100"], "--batch x: give a positive integer"),
        (["--batch", "1", "--keys", "0"], "--keys 0: give a positive integer"),
        (["--batch", "1", "--keys", "16", "--q-tokens", "16", "--page-size", "16"],
         "ends mid-page: give --keys above --q-tokens"),
        (["--batch", "65536", "--keys", "65536"], "at most 2147483647 cached keys"),
        (["--kernels", ""], "--kernels : give some of")), checks)
    header.check_run_options(script, "tk,flashinfer,cudnn-paged,torch-sdpa", "torch-sdpa", checks)


def check_all(m, source_dir, tools, checks):
    check_counting(m, checks)
    check_tables(m, checks)
    doc = check_rows(m, checks)
    check_step_fit(m, checks)
    check_reader(m, doc, tools, source_dir, checks)
    check_options(source_dir, checks)


if __name__ == "__main__":
    sys.exit(header.main("compare_decode", __doc__.strip().splitlines()[-1], check_all))
