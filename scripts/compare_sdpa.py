#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the `tkprobe attention` grid, as a tkprobe report.

Times torch.nn.functional.scaled_dot_product_attention with its FlashAttention and cuDNN backends
(torch.nn.attention.sdpa_kernel) on the shapes `tkprobe attention --sweep` measures (or `--quick`'s),
bf16 in (B, H, N, D) layout, causal and not; and, given the DSL's attention library (--tk-lib,
libtk_attention_c.so, built beside tkprobe), the DSL's own kernels ("wgmma", "mma-sync") in the same
process on the same inputs, so every ratio between them is measured in one run. Each shape gets
fresh random inputs; the kernels are warmed up, then timed in turns (--rounds rounds of --reps /
--rounds launches each, so a drifting clock or power state touches all alike) with CUDA events
(TFLOP/s per launch: median, quartiles, noise; with libtk_clock_c beside --tk-lib, the SM clock under
each launch as tkprobe reads its own, clock64 over %globaltimer on an SM across it, the median per
kernel and shape as the row's kernel_sm_clock_mhz: in one turn a kernel at a lower clock than its
neighbours drew the card into its power cap itself); each output is checked against an fp32 reference
computed head by head (and the DSL's logsumexp against its fp32 value). A kernel that refuses a
shape gets a `skipped` row with its reason. FlashAttention-4 ("fa4": PyPI flash-attn-4, module
flash_attn.cute, its CuTe-DSL kernels) is timed beside them where it is installed, on copies of
the same inputs in its own (B, N, H, D) layout made before timing; where it is not, its rows say
`skipped` with the import's error. It is never a dependency.

--pass picks what is timed: `fwd` (the default) the forward; `bwd` the backward alone (PyTorch's
through torch.autograd.grad on a retained graph; the DSL's `wgmma` backward through the library,
prepared once), rated at 2.5x the forward's FLOPs (five N^2 D products against two, the count
FlashAttention-2 and its successors report backward rates in); `fwd+bwd` both in one timed unit,
at 3.5x; `all` each of the three. Every gradient (dQ, dK, dV, from one random dO) is checked
against SDPA's math backend in fp32, head by head (relative error <= 1e-2), and each kernel's row
carries its own errors against that same reference, so the DSL's and FlashAttention-2's sit side
by side.

The JSON (--out) is a tkprobe report as tkprobe writes one (results/README.md): version 2 (NVML's
readings once for the probe, numbers to 6 significant digits) in version 3's columns (tkreport.text);
probe "attention", the probe's row params with kernel "torch-flash" or "torch-cudnn" and the pass, so
`tkprobe compare` reads it and its rows sit beside the probe's. --against REPORT prints both side by side.
--energy S adds each row's energy per call, as `tkprobe attention --energy S` measures it, every kernel
in turn after the timed rounds. --varlen SPEC (again for more mixes) times packed batches instead
of the grid (scripts/sdpa_varlen.py): the DSL's varlen kernels beside SDPA on jagged nested tensors,
cuDNN's ragged SDPA and FlashAttention-4's varlen function, in rows keyed as `tkprobe attention
--varlen`'s. --head-dims picks the grid's head dims (96, 256: the DSL's wgmma forward alone).

    scripts/compare_sdpa.py --out sdpa.json [--quick] [--pass fwd|bwd|fwd+bwd|all] [--reps 50] [--seed N]
                            [--tk-lib build/kernels/libtk_attention_c.so] [--energy SECONDS]
                            [--varlen LENGTHS|random:SEED ...] [--head-dims 64,128,256]
    scripts/compare_sdpa.py --out sdpa.json --against attention.json   # tkprobe attention --json attention.json

The report builder below needs neither torch nor a GPU (tests/host/test_compare_sdpa.py runs it);
only measure() and the device queries do.
"""
import argparse
import collections
import contextlib
import ctypes
import datetime
import functools
import importlib.util
import json
import math
import os
import random
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_varlen  # noqa: E402 (--varlen: packed batches)
import tkreport  # noqa: E402 (--against: a tkprobe report of any version; the report, written as tkprobe does)


def c_interface():
    """The C interface's ctypes declarations, the file the tk_attention package declares them in,
    read from this checkout: --tk-lib is this checkout's build, not an installed package's library."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tk_attention", "library.py")
    spec = importlib.util.spec_from_file_location("tk_attention_library", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tk_library = c_interface()

PROBE = "attention"
BACKENDS = {"torch-flash": "FLASH_ATTENTION", "torch-cudnn": "CUDNN_ATTENTION"}
FA4 = "fa4"
PEERS = (*BACKENDS, FA4, sdpa_varlen.CUDNN_RAGGED, sdpa_varlen.FLASH_VARLEN)  # not the DSL's: reported, never judged
TK_KERNELS = {"wgmma": 0, "mma-sync": 1}  # libtk_attention_c's kernel numbers (kernels/attention/c_api.cpp)
MAX_LSE_ERROR = 1e-2  # the probe's bound on the logsumexp (absolute)
MAX_REL_ERROR = 1e-2  # the probe's bound (probes/attention/attention.cpp): bf16 inputs and output; and each gradient's
PASSES = ("fwd", "bwd", "fwd+bwd")
PASS_WORK = {"fwd": 1.0, "bwd": 2.5, "fwd+bwd": 3.5}  # FLOPs per pass, in forwards (the module's docstring)

# The probe's grids (probes/attention/attention.cpp): 16k tokens at hidden 2048; --quick a small, ragged one.
SWEEP_TOKENS, SWEEP_HIDDEN, SWEEP_SEQS, HEAD_DIMS = 16384, 2048, (1024, 4096, 16384), (64, 128)
ALL_HEAD_DIMS = (64, 96, 128, 256)  # --head-dims: 96 and 256 have the DSL's wgmma forward alone
QUICK_BATCH, QUICK_HEADS, QUICK_SEQ = 2, 4, 1000

# Dense bf16 TFLOP/s by datasheet, as src/device.cpp's datasheet_peaks() matches device names.
def datasheet_bf16_peak(name):
    if "H200" in name or ("H100" in name and ("SXM" in name or "HBM3" in name)):
        return 989.4
    if "H100" in name and "PCIe" in name:
        return 756.5
    if "H100 NVL" in name:
        return 835.5
    return None


# ---- the report builder: plain Python ----

def grid(quick, head_dims=HEAD_DIMS):
    """The shapes as dicts, in the probe's order: head dim, then causal, then sequence length."""
    shapes = []
    for d in head_dims:
        for causal in (False, True):
            if quick:
                shapes.append(dict(batch=QUICK_BATCH, heads=QUICK_HEADS, kv_heads=QUICK_HEADS, seq=QUICK_SEQ,
                                   head_dim=d, causal=causal))
                continue
            for n in SWEEP_SEQS:
                heads = SWEEP_HIDDEN // d
                shapes.append(dict(batch=SWEEP_TOKENS // n, heads=heads, kv_heads=heads, seq=n, head_dim=d,
                                   causal=causal))
    return shapes


def flops(shape):
    """attention::flops: 4 B H N^2 D, half of it under the causal mask (a packed batch: its sequences')."""
    if sdpa_varlen.is_varlen(shape):
        return sdpa_varlen.varlen_flops(shape)
    full = 4.0 * shape["batch"] * shape["heads"] * shape["seq"] ** 2 * shape["head_dim"]
    return full / 2 if shape["causal"] else full


def pass_flops(shape, pass_):
    """The FLOPs a pass's TFLOP/s divides: the forward's, 2.5x for the backward, 3.5x for both."""
    return PASS_WORK[pass_] * flops(shape)


def params(kernel, shape, pass_="fwd"):
    """The probe's row keys, so rows of both reports match on everything but the kernel."""
    if sdpa_varlen.is_varlen(shape):
        return sdpa_varlen.varlen_params(kernel, shape, pass_)
    return {"kernel": kernel, "head_dim": shape["head_dim"], "seq": shape["seq"], "batch": shape["batch"],
            "heads": shape["heads"], "kv_heads": shape["kv_heads"], "causal": shape["causal"], "dtype": "bf16",
            "pass": pass_}


def summarize(samples, unit, better):
    """src/stats.cpp's summary: quartiles by linear interpolation, cv = sample stdev / mean."""
    s = sorted(samples)
    n = len(s)

    def quantile(q):
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    mean = sum(s) / n
    cv = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) / abs(mean) if n > 1 and mean else 0.0
    return {"median": quantile(0.5), "min": s[0], "max": s[-1], "q1": quantile(0.25), "q3": quantile(0.75),
            "cv": cv, "n": n, "unit": unit, "better": better}


def measured_row(kernel, shape, tflops_samples, rel_error, peak, telemetry, lse_error=None, pass_="fwd",
                 grad_errors=None):
    """A timed, checked row: TFLOP/s per launch (primary), % of the datasheet peak, the error check
    (and the logsumexp's, for the DSL's kernels). rel_error is O's (None when the pass does not
    check O: the backward alone); grad_errors, for the passes with a backward, {"dQ": .., "dK": ..,
    "dV": ..}, each ||g - g_ref|| / ||g_ref||."""
    stats = summarize(tflops_samples, "TFLOP/s", "higher")
    number = lambda x: None if x is None or math.isnan(x) else x
    errors = {"O": rel_error} if rel_error is not None else {}
    errors.update(grad_errors or {})
    passed = all(e < MAX_REL_ERROR for e in errors.values()) and (lse_error is None or lse_error < MAX_LSE_ERROR)
    what = " and ".join(f"||{name} - {name}_ref||_F / ||{name}_ref||_F" for name in errors)
    worst = next((e for e in errors.values() if math.isnan(e)), max(errors.values()))  # a NaN is the worst
    check = {"what": f"{what} against an fp32 reference", "value": number(worst), "max": MAX_REL_ERROR,
             "passed": passed}
    metrics = {"tflops": stats, "pct_datasheet_peak": 100 * stats["median"] / peak if peak else None}
    if rel_error is not None:
        metrics["rel_error"] = number(rel_error)
    for name, error in (grad_errors or {}).items():
        metrics[f"rel_error_{name.lower()}"] = number(error)
        check[f"rel_error_{name.lower()}"] = number(error)
    if lse_error is not None:
        check.update(lse_error=number(lse_error), lse_max=MAX_LSE_ERROR)
        metrics["lse_error"] = number(lse_error)
    return as_peer_where_due(kernel, {"probe": PROBE, "params": params(kernel, shape, pass_),
                                      "status": "ok" if passed else "failed", "metrics": metrics,
                                      "primary": "tflops", "check": check, "telemetry": telemetry})


def skipped_row(kernel, shape, reason, pass_="fwd"):
    return as_peer_where_due(kernel, {"probe": PROBE, "params": params(kernel, shape, pass_), "status": "skipped",
                                      "reason": reason, "metrics": {}})


def as_peer_where_due(kernel, row):
    """The peers' rows: `tkprobe compare` reports them and never judges them."""
    if kernel in PEERS:
        row["peer"] = True
    return row


def finding(kernel, rows, pass_="fwd"):
    mine = [r for r in rows if r["params"]["kernel"] == kernel and r["params"]["pass"] == pass_]
    ok = [r for r in mine if "tflops" in r["metrics"]]
    if not ok:
        return None
    rate = lambda r: r["metrics"]["tflops"]["median"]
    best, worst = max(ok, key=rate), min(ok, key=rate)
    describe = lambda r: describe_shape(r["params"])
    skipped = sum(1 for r in mine if r["status"] == "skipped")
    failed = sum(1 for r in ok if r["status"] == "failed")
    label = kernel if pass_ == "fwd" else f"{kernel} {pass_}"
    return {"probe": PROBE,
            "text": f"{label}: {rate(worst):.1f}..{rate(best):.1f} TFLOP/s over {len(ok)} shapes; best "
                    f"{describe(best)}, slowest {describe(worst)}; {failed} failed the check, {skipped} skipped"}


def describe_shape(params):
    """A row's shape in words (findings, tables)."""
    if "varlen" in params:
        return sdpa_varlen.describe(params)
    return "B={batch} H={heads} N={seq} D={head_dim}".format(**params) + (" causal" if params["causal"] else "")


def report(tool, host, device, rows):
    """The version 2 document, made as tkprobe's to_json makes it: built whole as version 1 (each
    row with NVML's readings around it), then compacted (tkreport.compacted). `rows` stay whole."""
    findings = [f for f in (finding(k, rows, p) for p in PASSES for k in [*TK_KERNELS, *PEERS]) if f]
    return tkreport.compacted({"schema": tkreport.SCHEMAS[0], "tool": tool, "host": host, "device": device,
                               "results": rows, "findings": findings})


def per_shape(reports, value):
    """{shape key: {kernel: value(row)}} over the reports' passing rows where value(row) is not None
    (a later report's row replaces an earlier one's for the same kernel)."""
    by_shape = {}
    for r in [row for doc in reports for row in doc["results"]]:
        if r.get("probe") != PROBE or r.get("status") != "ok" or value(r) is None:
            continue
        key = tuple(sorted((k, v) for k, v in r["params"].items() if k not in ("kernel", "dq")))  # dq: ours only
        by_shape.setdefault(key, {})[r["params"]["kernel"]] = value(r)
    return by_shape


def shape_name(key):
    p = dict(key)
    pass_ = "" if p.get("pass", "fwd") == "fwd" else " " + p["pass"]
    if "varlen" in p:
        return sdpa_varlen.describe(p) + pass_
    return "B={batch} H={heads} HKV={kv_heads} N={seq} D={head_dim}{c}".format(
        c=" causal" if p["causal"] else "", **p) + pass_


def ratio(values, peer):
    """The DSL's (wgmma's) value over a peer's, as a table cell; "-" where either has none."""
    return f"{values['wgmma'] / values[peer]:.3f}" if "wgmma" in values and peer in values else "-"


def table_row(key, cells, values, peers):
    """A shape's row: its cells, then the DSL's value over each peer's (ratio)."""
    return f"| {shape_name(key)} | " + " | ".join(cells) + "".join(f" | {ratio(values, p)}" for p in peers) + " |"


def side_by_side(*reports):
    """Markdown: per shape, every kernel's median TFLOP/s from the reports, and the DSL's over each
    peer's (FlashAttention-4's and cuDNN ragged's columns only where they have rows); then, where rows carry it, the SM
    clock each kernel ran at. Rows that failed their check are left out: a wrong output's speed
    compares with nothing."""
    by_shape = per_shape(reports, lambda r: r["metrics"]["tflops"]["median"])
    optional = (FA4, sdpa_varlen.CUDNN_RAGGED, sdpa_varlen.FLASH_VARLEN)  # columns only where they have rows
    peers = [*BACKENDS, *(p for p in optional if any(p in rates for rates in by_shape.values()))]
    kernels = [*TK_KERNELS, *peers]
    ratios = "".join(f" | wgmma / {p.removeprefix('torch-')}" for p in peers)
    lines = ["| shape | " + " | ".join(kernels) + ratios + " |",
             "|---|" + "---:|" * (len(kernels) + len(peers))]
    for key, rates in by_shape.items():
        cells = [f"{rates[k]:.1f}" if k in rates else "-" for k in kernels]
        lines.append(table_row(key, cells, rates, peers))
    clocks = per_shape(reports, lambda r: (r.get("telemetry") or {}).get("kernel_sm_clock_mhz"))
    if clocks:
        lines += ["", "SM clock under each kernel (MHz; the median over its launches of clock64 over %globaltimer "
                  "across each, as tkprobe reads its own), and the DSL's TFLOP/s over each peer's at equal clocks "
                  "(a ratio above the one per second: the card ran the DSL's kernel at a lower clock, its power cap):",
                  "", "| shape | " + " | ".join(kernels) + "".join(f" | per clock / {p.removeprefix('torch-')}"
                                                                for p in peers) + " |",
                  "|---|" + "---:|" * (len(kernels) + len(peers))]
        for key, mhz in clocks.items():
            per_mhz = {k: by_shape[key][k] / mhz[k] for k in mhz if k in by_shape.get(key, {})}
            cells = [f"{mhz[k]:.0f}" if k in mhz else "-" for k in kernels]
            lines.append(table_row(key, cells, per_mhz, peers))
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    """As tkprobe writes reports: the whole file or nothing."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ---- NVML through ctypes (the same readings src/nvml.cpp takes; no extra package) ----

REASONS = [(0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
           (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
           (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting")]
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


class Nvml:
    def __init__(self, uuid):
        self.dev = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            handle = ctypes.c_void_p()
            if self.lib.nvmlInit_v2() == 0 and self.lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle)) == 0:
                self.dev = handle
        except OSError:
            pass

    def _uint(self, fn, *args):
        value = ctypes.c_uint()
        return value.value if self.dev and fn(self.dev, *args, ctypes.byref(value)) == 0 else None

    def max_sm_clock(self):
        return self._uint(self.lib.nvmlDeviceGetMaxClockInfo, 1) if self.dev else None

    def max_mem_clock(self):
        return self._uint(self.lib.nvmlDeviceGetMaxClockInfo, 2) if self.dev else None

    def power_limit_w(self):
        mw = self._uint(self.lib.nvmlDeviceGetEnforcedPowerLimit) if self.dev else None
        return mw / 1000 if mw is not None else None

    def driver(self):
        text = ctypes.create_string_buffer(96)
        return text.value.decode() if self.dev and self.lib.nvmlSystemGetDriverVersion(text, 96) == 0 else "unavailable"

    def energy_j(self):
        """The GPU's energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ) in joules, or None."""
        mj = ctypes.c_ulonglong()
        get = getattr(self.lib, "nvmlDeviceGetTotalEnergyConsumption", None) if self.dev else None
        return mj.value / 1000 if get and get(self.dev, ctypes.byref(mj)) == 0 else None

    def sample(self):
        if not self.dev:
            return None
        reasons = ctypes.c_ulonglong()
        get_reasons = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            self.lib.nvmlDeviceGetCurrentClocksThrottleReasons
        if get_reasons(self.dev, ctypes.byref(reasons)) != 0:
            return None
        values = (self._uint(self.lib.nvmlDeviceGetClockInfo, 1), self._uint(self.lib.nvmlDeviceGetPowerUsage),
                  self._uint(self.lib.nvmlDeviceGetTemperature, 0))
        if None in values:
            return None
        return {"sm": values[0], "power": values[1] / 1000, "temp": values[2], "reasons": reasons.value}


def telemetry(before, after):
    """src/nvml.cpp's telemetry_json: NVML before and after a measurement."""
    if before is None or after is None:
        return {"nvml": "unavailable", "throttled": False, "reasons": []}
    span = lambda key: [min(before[key], after[key]), max(before[key], after[key])]
    mask = before["reasons"] | after["reasons"]
    return {"sm_clock_mhz": span("sm"), "power_w": span("power"), "temperature_c": span("temp"),
            "throttled": bool(mask & THROTTLE_MASK), "reasons": [name for bit, name in REASONS if mask & bit]}


# ---- measuring: torch and a GPU ----

def git_sha():
    """The commit, as tkprobe stamps it: TKPROBE_GIT_SHA where the tree is a copy whose .git is not
    its own (a GPU machine's), else git's HEAD (-dirty with uncommitted changes)."""
    if os.environ.get("TKPROBE_GIT_SHA"):
        return os.environ["TKPROBE_GIT_SHA"]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        sha = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def device_section(torch, index, nvml):
    p = torch.cuda.get_device_properties(index)
    return {"index": index, "name": p.name, "cc": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
            "l2_bytes": getattr(p, "L2_cache_size", 0),
            "smem_per_sm": getattr(p, "shared_memory_per_multiprocessor", 0),
            "smem_per_block_optin": getattr(p, "shared_memory_per_block_optin", 0),
            "sm_clock_max_mhz": nvml.max_sm_clock() or 0, "mem_clock_mhz": nvml.max_mem_clock() or 0,
            "power_limit_w": nvml.power_limit_w()}


def reference(torch, q, k, v, causal):
    """fp32 attention and its row logsumexp, one (batch, head) at a time: the N x N scores of the
    sweep's N = 16384 fit."""
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    n = q.shape[2]
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if causal else None
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = (q[b, h].float() @ k[b, h].float().T) / math.sqrt(q.shape[3])
            if mask is not None:
                s.masked_fill_(~mask, float("-inf"))
            lse[b, h] = torch.logsumexp(s, dim=-1)
            out[b, h] = torch.softmax(s, dim=-1) @ v[b, h].float()
    return out, lse


def reference_backward(torch, q, k, v, d_o, causal):
    """O, dQ, dK, dV in fp32 from SDPA's math backend, one (batch, query head) at a time, as the
    forward's reference: the sweep's N = 16384 scores fit. A key/value head's gradients sum over
    the query heads that share it."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    dq = torch.empty_like(out)
    dk = torch.zeros(k.shape, dtype=torch.float32, device=q.device)
    dv = torch.zeros_like(dk)
    group = q.shape[1] // k.shape[1]
    with sdpa_kernel(SDPBackend.MATH):
        for b in range(q.shape[0]):
            for h in range(q.shape[1]):
                one_head = lambda t, i: t[b:b + 1, i:i + 1].float()  # (1, 1, N, D)
                leaves = [one_head(t, i).requires_grad_() for t, i in ((q, h), (k, h // group), (v, h // group))]
                o = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                grads = torch.autograd.grad(o, leaves, one_head(d_o, h))
                out[b, h] = o.detach()[0, 0]
                dq[b, h] = grads[0][0, 0]
                dk[b, h // group] += grads[1][0, 0]
                dv[b, h // group] += grads[2][0, 0]
    return out, dq, dk, dv


def rel_error(torch, x, ref):
    return (torch.linalg.vector_norm(x.float() - ref) / torch.linalg.vector_norm(ref)).item()


def first_line(error):
    """An exception as a skipped row's reason."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


@functools.lru_cache(maxsize=None)
def flash_attn_4():
    """FlashAttention-4's flash_attn_func, or None and why it cannot be had (imported once)."""
    try:
        from flash_attn.cute import flash_attn_func
    except Exception as e:  # not installed, or its CUTLASS DSL failing to load
        return None, f"flash-attn-4 not importable ({type(e).__name__}: {first_line(e)}): pip install flash-attn-4"
    return flash_attn_func, None


def fa4_layout(t):
    """A (B, H, N, D) tensor as FlashAttention-4 takes one, (B, N, H, D) contiguous: a copy, made
    before timing."""
    return t.transpose(1, 2).contiguous()


def fa4_output(result):
    """O from flash_attn_func, which some versions return with the LSE."""
    return result[0] if isinstance(result, tuple) else result


def autograd_runs(torch, attend, leaves, d_o, with_forward):
    """A peer's backward through autograd: O and the gradients once (a kernel that cannot take the
    shape raises here), and the timed unit: the backward alone on a retained graph, or the forward
    and the backward."""
    o = attend()
    grads = torch.autograd.grad(o, leaves, d_o, retain_graph=True)
    if with_forward:
        return o, grads, lambda: torch.autograd.grad(attend(), leaves, d_o)
    return o, grads, lambda: torch.autograd.grad(o, leaves, d_o, retain_graph=True)


BLOCKER_CYCLES = 1_000_000  # ~0.5 ms of GPU spin: longer than any host-side launch path here


class SmClock:
    """The SM clock bracket of libtk_clock_c (probes/clock_c/c_api.cpp) on PyTorch's current
    stream: `begin` before a launch's start event stamps every SM, `end` after its stop event closes
    the window on one, `mhz` (after the stop event's wait) reads it: cycles over nanoseconds across
    the launch, neither timed. NVML's clock, read from the host while a launch was queued, was not
    the clock under it (docs/decisions/004-peers-in-one-process.md)."""

    def __init__(self, torch, path):
        self.lib = ctypes.CDLL(path)
        self.lib.tk_clock_create.restype = ctypes.c_void_p
        self.lib.tk_clock_begin.argtypes = self.lib.tk_clock_end.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.tk_clock_mhz.argtypes = self.lib.tk_clock_destroy.argtypes = [ctypes.c_void_p]
        self.lib.tk_clock_mhz.restype = ctypes.c_double
        self.handle = self.lib.tk_clock_create()
        if not self.handle:
            raise RuntimeError(f"tk_clock_create failed ({path}; the reason is above)")
        self.stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def begin(self):
        if self.lib.tk_clock_begin(self.handle, self.stream) != 0:
            raise RuntimeError("tk_clock_begin failed")

    def end(self):
        if self.lib.tk_clock_end(self.handle, self.stream) != 0:
            raise RuntimeError("tk_clock_end failed")

    def mhz(self):
        """The last launch's SM clock, or None where its window was empty."""
        value = self.lib.tk_clock_mhz(self.handle)
        return None if math.isnan(value) else value


class NoClock:
    """No clock library: launches carry no clock reading."""

    def begin(self):
        pass

    def end(self):
        pass

    def mhz(self):
        return None


def sm_clock(torch, tk_lib):
    """The SM clock bracket from libtk_clock_c.so beside the DSL's library, or NoClock (saying why)."""
    path = os.path.join(os.path.dirname(os.path.abspath(tk_lib)), "libtk_clock_c.so") if tk_lib else None
    if path and os.path.isfile(path):
        return SmClock(torch, path)
    why = f"no {path} (cmake --build build --target tk_clock_c)" if path else "no --tk-lib to find libtk_clock_c beside"
    print(f"{os.path.basename(sys.argv[0])}: rows carry no SM clock: {why}", file=sys.stderr)
    return NoClock()


def timed_launches(torch, run, reps, clock=NoClock(), before=None):
    """(seconds, SM MHz or None) of each of `reps` launches, CUDA events around each. A spin kernel
    goes first, so the GPU is busy while the host enqueues the start event and the launch (PyTorch's
    dispatch, or ctypes): the events then time the kernel, not the host's path to it (nvbench's
    blocking kernel). The clock's bracket lies outside the events; so does `before` (e.g. an L2
    eviction), ahead of the spin."""
    samples = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if before:
            before()
        torch.cuda._sleep(BLOCKER_CYCLES)
        clock.begin()
        start.record()
        run()
        stop.record()
        clock.end()
        stop.synchronize()
        samples.append((start.elapsed_time(stop) * 1e-3, clock.mhz()))
    return samples


def timed_seconds(torch, run, reps):
    """Seconds of each of `reps` launches (timed_launches)."""
    return [seconds for seconds, _ in timed_launches(torch, run, reps)]


class TkAttention:
    """The DSL's kernels through libtk_attention_c: prepared once per shape and kernel (tensor maps,
    launch attributes), so a timed launch is the kernel alone."""

    def __init__(self, path, dq="fastest"):
        self.dq_path = tk_library.DQ_PATHS[dq]  # the backward's dQ path (tkprobe attention --dq)
        self.lib = tk_library.load(path)  # declared as the package declares them

    def reduces_dq(self, q, k, causal):
        """Whether the backward of this shape takes the reducing path (--dq fastest resolves per shape)."""
        b, h, n, d = q.shape
        path = self.lib.tk_attention_backward_dq_path(b, h, k.shape[1], n, k.shape[2], d, int(causal),
                                                    self.dq_path)
        return path == tk_library.DQ_PATHS["reduce"]

    @staticmethod
    def runnable(torch, handle, launch, destroy):
        """(run, release) of a pass the library prepared (tk_library.launcher), launched on PyTorch's
        current stream, so events order with it; None where it refused (the reason is on stderr)."""
        made = tk_library.launcher(handle, launch, destroy)
        if made is None:
            return None
        launch_on, release = made
        stream = torch.cuda.current_stream().cuda_stream
        return (lambda: launch_on(stream)), release

    def prepare(self, torch, kernel, q, k, v, causal):
        """(run, o, lse, release), or None when the kernel refuses the shape (it says why on stderr)."""
        b, h, n, d = q.shape
        o = torch.full_like(q, float("nan"))  # poisoned: an unwritten element fails the check
        lse = torch.full((b, h, n), float("nan"), device=q.device)
        made = self.runnable(torch, self.lib.tk_attention_create(
            q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, h, k.shape[1], n, d,
            int(causal), TK_KERNELS[kernel]), self.lib.tk_attention_launch, self.lib.tk_attention_destroy)
        return None if made is None else (made[0], o, lse, made[1])

    def prepare_backward(self, torch, q, k, v, d_o, causal):
        """(forward run, backward run, o, lse, (dq, dk, dv), release) for the wgmma kernels (the
        backward has no other), or None when refused (the reason is on stderr). The backward reads
        the o and lse the forward run writes."""
        forward = self.prepare(torch, "wgmma", q, k, v, causal)
        if forward is None:
            return None
        run_forward, o, lse, release_forward = forward
        b, h, n, d = q.shape
        grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]  # poisoned
        made = self.runnable(torch, self.lib.tk_attention_backward_create_opts(
            q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), d_o.data_ptr(), lse.data_ptr(),
            *(g.data_ptr() for g in grads), b, h, k.shape[1], n, d, int(causal), None, None, self.dq_path),
            self.lib.tk_attention_backward_launch, self.lib.tk_attention_backward_destroy)
        return with_forward(run_forward, release_forward, made, o, lse, grads)


def with_forward(run_forward, release_forward, made, o, lse, grads):
    """A prepared backward (`made`: runnable's, None where refused) beside its forward: (forward run,
    backward run, o, lse, grads, release of both), or None, the forward released."""
    if made is None:
        release_forward()
        return None
    run_backward, release_backward = made
    return run_forward, run_backward, o, lse, grads, lambda: (release_backward(), release_forward())


# Energy per call, as src/energy.cpp measures it for `tkprobe attention --energy`: the call back to back,
# chunks of it queued ahead, NVML's energy counter (which steps about every 100 ms) read between them.
ENERGY_MIN_STEPS = 5  # src/energy.hpp's kMinEnergySteps
ENERGY_CHUNK_SECONDS = 0.01
ENERGY_CHUNKS_AHEAD = 4
ENERGY_POLL_SECONDS = 0.0005
ENERGY_SLACK_SECONDS = 1.0  # past twice the window: a counter that stopped stepping
ENERGY_MIN_WINDOW, ENERGY_MAX_WINDOW = 0.5, 3600  # --energy, as tkprobe attention's


def energy_from_steps(steps, seconds_per_call):
    """src/energy.cpp's energy_from_steps: (host seconds, joules) of each step of the counter seen while
    the GPU was busy -> {watts, joules_per_call, seconds_per_call, window_s, steps}, or None."""
    if len(steps) < ENERGY_MIN_STEPS:
        return None
    joules, seconds = steps[-1][1] - steps[0][1], steps[-1][0] - steps[0][0]
    if not (joules > 0 and seconds > 0 and seconds_per_call > 0):
        return None
    watts = joules / seconds
    return {"watts": watts, "joules_per_call": watts * seconds_per_call, "seconds_per_call": seconds_per_call,
            "window_s": seconds, "steps": len(steps)}


def energy_per_call(torch, run, seconds_per_call, window_s, nvml):
    """(energy_from_steps of `run` back to back for `window_s`, None) or (None, why)."""
    last = nvml.energy_j()
    if last is None:
        return None, "NVML has no energy counter for this GPU"
    per_chunk = max(1, round(ENERGY_CHUNK_SECONDS / seconds_per_call))
    queued, chunks, steps, busy, ran_dry = collections.deque(), 0, [], False, False
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    begin = time.monotonic()
    while True:
        while queued and queued[0].query():
            queued.popleft()
            busy = True  # the first chunk ended: the next ones are running
        ran_dry |= busy and not queued
        if len(steps) >= 2 and steps[-1][0] - steps[0][0] >= window_s:
            break
        while len(queued) < ENERGY_CHUNKS_AHEAD:
            for _ in range(per_chunk):
                run()
            queued.append(torch.cuda.Event())
            queued[-1].record()
            chunks += 1
        joules = nvml.energy_j()
        if joules is not None and joules != last:
            last = joules
            if busy:
                steps.append((time.monotonic(), joules))
        if time.monotonic() - begin > 2 * window_s + ENERGY_SLACK_SECONDS:
            break
        time.sleep(ENERGY_POLL_SECONDS)
    stop.record()
    stop.synchronize()
    if ran_dry:
        return None, "the GPU ran dry between queued chunks of calls (the host's launches are slower than the GPU)"
    energy = energy_from_steps(steps, start.elapsed_time(stop) * 1e-3 / (chunks * per_chunk))
    why = f"NVML's energy counter stepped {len(steps)} times in the window; {ENERGY_MIN_STEPS} are needed"
    return (energy, None) if energy else (None, why)


def add_energy(row, args, energy, work):
    """Under --energy, `tkprobe attention --energy`'s metrics on a measured row (null where not had)."""
    if args.energy:
        row["metrics"].update(energy_mj=1e3 * energy["joules_per_call"] if energy else None,
                              power_w=energy["watts"] if energy else None,
                              tflop_per_j=work / 1e12 / energy["joules_per_call"] if energy else None)


def energies(torch, runs, contexts, args, work, rates, nvml):
    """{kernel: energy or None} for every run under --energy, one kernel after another (None for all
    without it); why one is missing goes to stderr."""
    out = {kernel: None for kernel in runs}
    if not args.energy:
        return out
    for kernel, run in runs.items():
        with contexts[kernel]():
            seconds = work / 1e12 / summarize(rates[kernel], "TFLOP/s", "higher")["median"]
            out[kernel], why = energy_per_call(torch, run, seconds, args.energy, nvml)
        if why:
            print(f"compare_sdpa.py: {kernel}: no energy: {why}", file=sys.stderr)
    return out


def measure_shape(torch, shape, kernels, args, generator, nvml, clock, peak, tk):
    """Rows for every kernel on one shape: same inputs, launches timed in turns, outputs checked."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    b, h, n, d = shape["batch"], shape["heads"], shape["seq"], shape["head_dim"]
    draw = lambda: torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=generator)
    q, k, v = draw(), draw(), draw()
    runs, outputs, rows, releases = {}, {}, {}, []
    contexts = {kernel: contextlib.nullcontext for kernel in kernels}  # torch's backend choice, outside timing
    for kernel in kernels:
        if kernel in TK_KERNELS:
            prepared = tk.prepare(torch, kernel, q, k, v, shape["causal"])
            if prepared is None:
                rows[kernel] = skipped_row(kernel, shape, "refused by the kernel (its reason is on stderr)")
                continue
            run, o, lse, release = prepared
            releases.append(release)
            run()
            outputs[kernel] = (o, lse)
        elif kernel == FA4:
            flash_attn_func, why = flash_attn_4()
            if flash_attn_func is None:
                rows[kernel] = skipped_row(kernel, shape, why)
                continue
            fq, fk, fv = (fa4_layout(t) for t in (q, k, v))
            run = lambda f=flash_attn_func, fq=fq, fk=fk, fv=fv: f(fq, fk, fv, causal=shape["causal"])
            try:
                outputs[kernel] = (fa4_output(run()).transpose(1, 2), None)
            except Exception as e:  # a shape or GPU it does not take
                rows[kernel] = skipped_row(kernel, shape, f"refused: {first_line(e)}")
                continue
        else:
            backend = getattr(SDPBackend, BACKENDS[kernel])
            run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=shape["causal"])
            try:
                with sdpa_kernel(backend):
                    outputs[kernel] = (run(), None)  # a backend that cannot take the shape refuses here
            except RuntimeError as e:
                rows[kernel] = skipped_row(kernel, shape, first_line(e))
                continue
            contexts[kernel] = lambda backend=backend: sdpa_kernel(backend)
        runs[kernel] = run
    torch.cuda.synchronize()
    want, want_lse = reference(torch, q, k, v, shape["causal"])
    rates, measured = timed_in_turns(torch, runs, contexts, args, flops(shape), nvml, clock)
    energy = energies(torch, runs, contexts, args, flops(shape), rates, nvml)
    for kernel, (o, lse) in outputs.items():
        lse_error = None if lse is None else (lse - want_lse).abs().max().item()
        rows[kernel] = measured_row(kernel, shape, rates[kernel], rel_error(torch, o, want), peak, measured[kernel],
                                    lse_error)
        add_energy(rows[kernel], args, energy[kernel], flops(shape))
    for release in releases:
        release()
    return [rows[kernel] for kernel in kernels]


def timed_in_turns(torch, runs, contexts, args, work, nvml, clock):
    """Every run warmed up, then timed in turns: {kernel: TFLOP/s samples}, and {kernel: telemetry}:
    NVML before and after them all, and the SM clock under each kernel's launches (with_clock). In
    one turn the card's drift falls on every kernel alike, so a kernel at a lower clock than its
    neighbours drew the card into its power cap itself (docs/decisions/002-changes-measured-in-turns.md):
    its TFLOP/s lost to power, not to its schedule."""
    rates = {kernel: [] for kernel in runs}
    clocks = {kernel: [] for kernel in runs}
    for kernel, run in runs.items():
        with contexts[kernel]():
            for _ in range(args.warmup):
                run()
    before = nvml.sample()
    for _ in range(args.rounds):
        for kernel, run in runs.items():
            with contexts[kernel]():
                for seconds, mhz in timed_launches(torch, run, args.reps // args.rounds, clock):
                    rates[kernel].append(work / seconds / 1e12)
                    clocks[kernel].append(mhz)
    span = telemetry(before, nvml.sample())
    return rates, {kernel: with_clock(span, clocks[kernel]) for kernel in runs}


def with_clock(span, clocks):
    """span, plus the median (summarize's) of the SM clock readings under one kernel as
    kernel_sm_clock_mhz (the key of tkprobe's in-kernel clock, which compaction keeps per row); span
    alone without readings."""
    read = [c for c in clocks if c is not None]
    return dict(span, kernel_sm_clock_mhz=summarize(read, "MHz", "higher")["median"]) if read else span


def measure_backward_shape(torch, shape, kernels, args, generator, nvml, clock, peak, tk, pass_):
    """Rows for every kernel's backward (pass "bwd") or forward and backward ("fwd+bwd") on one
    shape: same q, k, v and dO, timed in turns, every gradient checked against SDPA's math backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    b, h, kvh, n, d, causal = (shape[key] for key in ("batch", "heads", "kv_heads", "seq", "head_dim", "causal"))
    draw = lambda heads: torch.randn(b, heads, n, d, device="cuda", dtype=torch.bfloat16, generator=generator)
    q, k, v, d_o = draw(h), draw(kvh), draw(kvh), draw(h)
    with_forward = pass_ == "fwd+bwd"
    runs, results, rows, releases = {}, {}, {}, []
    contexts = {kernel: contextlib.nullcontext for kernel in kernels}
    for kernel in kernels:
        if kernel == "mma-sync":
            rows[kernel] = skipped_row(kernel, shape, "no backward: the backward is the wgmma kernels'", pass_)
            continue
        if kernel in TK_KERNELS:
            prepared = tk.prepare_backward(torch, q, k, v, d_o, causal)
            if prepared is None:
                rows[kernel] = skipped_row(kernel, shape, "refused by the kernel (its reason is on stderr)", pass_)
                continue
            run_forward, run_backward, o, lse, grads, release = prepared
            releases.append(release)
            run_forward()
            run_backward()
            run = (lambda f=run_forward, g=run_backward: (f(), g())) if with_forward else run_backward
            results[kernel] = (o, lse, grads)
        elif kernel == FA4:
            flash_attn_func, why = flash_attn_4()
            if flash_attn_func is None:
                rows[kernel] = skipped_row(kernel, shape, why, pass_)
                continue
            leaves = [fa4_layout(t).requires_grad_() for t in (q, k, v)]
            attend = lambda f=flash_attn_func, leaves=leaves: fa4_output(f(*leaves, causal=causal))
            try:
                o, grads, run = autograd_runs(torch, attend, leaves, fa4_layout(d_o), with_forward)
            except Exception as e:  # a shape or GPU it does not take
                rows[kernel] = skipped_row(kernel, shape, f"refused: {first_line(e)}", pass_)
                continue
            results[kernel] = (o.detach().transpose(1, 2), None, [g.transpose(1, 2) for g in grads])
        else:
            backend = getattr(SDPBackend, BACKENDS[kernel])
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            attend = lambda leaves=leaves: F.scaled_dot_product_attention(*leaves, is_causal=causal,
                                                                          enable_gqa=kvh != h)
            try:
                with sdpa_kernel(backend):  # a backend that cannot take the shape refuses here
                    o, grads, run = autograd_runs(torch, attend, leaves, d_o, with_forward)
            except RuntimeError as e:
                rows[kernel] = skipped_row(kernel, shape, first_line(e), pass_)
                continue
            results[kernel] = (o.detach(), None, grads)
            contexts[kernel] = lambda backend=backend: sdpa_kernel(backend)
        runs[kernel] = run
    torch.cuda.synchronize()
    want_o, *want_grads = reference_backward(torch, q, k, v, d_o, causal)
    want_lse = reference(torch, q, k, v, causal)[1] if with_forward and tk else None
    rates, measured = timed_in_turns(torch, runs, contexts, args, pass_flops(shape, pass_), nvml, clock)
    energy = energies(torch, runs, contexts, args, pass_flops(shape, pass_), rates, nvml)
    for kernel, (o, lse, grads) in results.items():
        grad_errors = {name: rel_error(torch, g, want) for name, g, want in zip(("dQ", "dK", "dV"), grads, want_grads)}
        o_error = rel_error(torch, o, want_o) if with_forward else None
        lse_error = (lse - want_lse).abs().max().item() if with_forward and lse is not None else None
        rows[kernel] = measured_row(kernel, shape, rates[kernel], o_error, peak, measured[kernel], lse_error,
                                    pass_, grad_errors)
        add_energy(rows[kernel], args, energy[kernel], pass_flops(shape, pass_))
        if kernel in TK_KERNELS and tk.reduces_dq(q, k, causal):
            rows[kernel]["params"]["dq"] = "reduce"  # as tkprobe's rows of the reducing path
    for release in releases:
        release()
    return [rows[kernel] for kernel in kernels]


def no_device(why):
    """tkprobe's exit code 3: nothing here to measure with."""
    print(f"compare_sdpa.py: {why}", file=sys.stderr)
    sys.exit(3)


class GpuSession:
    """What a peers run sets up once, here and in compare_based.py: references in true fp32, the GPU
    (its properties, NVML handle and report section), the seed (drawn fresh and recorded unless
    given) with a generator on it, and the report's host section."""

    def __init__(self, torch, seed):
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference is fp32, not TF32
        torch.set_float32_matmul_precision("highest")
        index = torch.cuda.current_device()
        self.props = torch.cuda.get_device_properties(index)
        self.nvml = Nvml("GPU-" + str(self.props.uuid))
        self.device = device_section(torch, index, self.nvml)
        self.seed = seed if seed is not None else random.SystemRandom().getrandbits(63)
        self.generator = torch.Generator(device="cuda").manual_seed(self.seed)
        self.host = {"hostname": socket.gethostname(), "driver": self.nvml.driver(),
                     "cuda_runtime": str(torch.version.cuda)}

    def tool(self, version):
        """The report's tool section for a script of `version`."""
        return {"version": version, "git_sha": git_sha(), "command_line": " ".join(sys.argv), "seed": self.seed,
                "started_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def shapes(args):
    """Each packed batch (--varlen) at each head dim, causal and not; or the dense grid."""
    if args.varlen:
        return [shape for spec in args.varlen
                for shape in sdpa_varlen.varlen_grid(spec, args.quick, SWEEP_HIDDEN, args.head_dims, QUICK_HEADS)]
    return grid(args.quick, args.head_dims)


def run_all(args):
    import torch
    if not torch.cuda.is_available():
        no_device("no CUDA device for PyTorch")
    session = GpuSession(torch, args.seed)
    nvml, device, generator = session.nvml, session.device, session.generator
    tool, host = session.tool("compare_sdpa.py (torch " + torch.__version__ + ")"), session.host
    tk = TkAttention(args.tk_lib, args.dq) if args.tk_lib else None
    clock = sm_clock(torch, args.tk_lib)
    kernels = [*(TK_KERNELS if tk else []), *(PEERS if args.varlen else [*BACKENDS, FA4])]
    tk_varlen = sdpa_varlen.TkVarlen(tk) if tk else None
    this = sys.modules[__name__]  # the reference, rows and timing sdpa_varlen shares
    rows = []
    peak = datasheet_bf16_peak(device["name"])
    for pass_ in PASSES if args.pass_ == "all" else [args.pass_]:
        for shape in shapes(args):
            if args.varlen:
                rows += sdpa_varlen.measure(torch, this, shape, kernels, args, session, clock, peak, tk_varlen, pass_)
            elif pass_ == "fwd":
                rows += measure_shape(torch, shape, kernels, args, generator, nvml, clock, peak, tk)
            else:
                rows += measure_backward_shape(torch, shape, kernels, args, generator, nvml, clock, peak, tk, pass_)
            for row in rows[-len(kernels):]:
                print(json.dumps(row["params"]), row["status"], file=sys.stderr)
    return report(tool, host, device, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the report (JSON)")
    parser.add_argument("--quick", action="store_true", help="the probe's --quick shapes instead of the sweep")
    parser.add_argument("--pass", dest="pass_", default="fwd", choices=[*PASSES, "all"],
                        help="what to time: the forward, the backward, both in one unit, or each of them")
    parser.add_argument("--reps", type=int, default=50, help="timed launches per kernel and shape (>= 20)")
    parser.add_argument("--rounds", type=int, default=5, help="turns the kernels' launches are split into")
    parser.add_argument("--warmup", type=int, default=5, help="untimed launches first")
    parser.add_argument("--tk-lib", help="the DSL's attention library (build/kernels/libtk_attention_c.so): time "
                                         "its kernels too, in the same run (and with libtk_clock_c.so beside it, "
                                         "read every kernel's SM clock)")
    parser.add_argument("--dq", default="fastest", choices=list(tk_library.DQ_PATHS),
                        help="the DSL backward's dQ path (as tkprobe attention --dq; needs --tk-lib)")
    parser.add_argument("--varlen", action="append",
                        help="a packed batch instead of the dense grid: lengths separated by commas, or random:SEED "
                             f"(tkprobe attention --varlen's), at hidden {SWEEP_HIDDEN} for each --head-dims, causal "
                             "and not; again for more length mixes (scripts/plot.py draws each mix a group)")
    parser.add_argument("--head-dims", default=",".join(map(str, HEAD_DIMS)),
                        help=f"the head dims of the grid, of {ALL_HEAD_DIMS} separated by commas (default: the "
                             "probe's sweep)")
    parser.add_argument("--seed", type=int, help="seed for the inputs (default: drawn fresh, recorded)")
    parser.add_argument("--against", help="a `tkprobe attention --json` report to print side by side")
    parser.add_argument("--energy", type=float, default=0,
                        help="also each row's energy per call (energy_mj, power_w, tflop_per_j): every kernel back "
                             f"to back for this many seconds ({ENERGY_MIN_WINDOW} to {ENERGY_MAX_WINDOW}), after "
                             "the timed turns, as tkprobe attention --energy (default 0: not measured)")
    args = parser.parse_args()
    if args.energy and not ENERGY_MIN_WINDOW <= args.energy <= ENERGY_MAX_WINDOW:
        parser.error(f"--energy {args.energy}: give 0 (not measured) or a window of {ENERGY_MIN_WINDOW} to "
                     f"{ENERGY_MAX_WINDOW} seconds (the counter steps about every 100 ms)")
    if args.reps < 20:
        parser.error(f"--reps {args.reps}: give 20 or more (quartiles need them)")
    if args.rounds < 1 or args.reps % args.rounds:
        parser.error(f"--rounds {args.rounds}: give a divisor of --reps ({args.reps}): each turn times "
                     "--reps / --rounds launches of every kernel")
    if args.tk_lib and not os.path.isfile(args.tk_lib):
        parser.error(f"--tk-lib {args.tk_lib}: no such file (build it: cmake --build build --target tk_attention_c)")
    if args.dq != "fastest" and not args.tk_lib:
        parser.error(f"--dq {args.dq} picks the DSL backward's dQ path: give --tk-lib too")
    try:
        args.head_dims = tuple(int(d) for d in args.head_dims.split(","))
    except ValueError:
        args.head_dims = ()
    if not args.head_dims or any(d not in ALL_HEAD_DIMS for d in args.head_dims):
        parser.error(f"--head-dims: give head dims of {ALL_HEAD_DIMS} separated by commas")
    for spec in args.varlen or []:
        try:
            sdpa_varlen.varlen_lengths(spec)
        except ValueError as e:
            parser.error(str(e))
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed {args.seed}: give a non-negative integer")
    if args.against and not os.path.isfile(args.against):
        parser.error(f"--against {args.against}: no such file (give a `tkprobe attention --json` report)")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        parser.error(f"--out {args.out}: folder '{out_dir}' does not exist")
    try:
        import torch  # noqa: F401 (only to say clearly what is missing)
    except ImportError:
        no_device("needs PyTorch with CUDA (e.g. pip install torch)")
    doc = run_all(args)
    write_atomic(args.out, tkreport.text(doc))
    if args.against:
        print(side_by_side(tkreport.load(args.against), doc), end="")
    elif args.tk_lib:
        print(side_by_side(doc), end="")
    failed = any(r["status"] == "failed" for r in doc["results"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
