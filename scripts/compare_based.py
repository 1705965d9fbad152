#!/usr/bin/env python3
"""The DSL's Based forward beside fla's two Based kernels, in one process, as a tkprobe report.

Times the DSL's kernel (kernels/based, through libtk_based_c.so: --tk-lib) and, where fla
(flash-linear-attention, `fla.ops.based`) imports, its `fused_chunk_based` ("fla-fused") and
`parallel_based` ("fla-parallel") on the same bf16 inputs in one process: by default B = 16, H = 16,
feature dim 16, value dim 64, normalized, at N = 1024, 4096, 8192 and 16384 (the lengths issue 18
measures the peers at; `tkprobe based` sweeps the same).

Per shape: fresh q, k, v ~ N(0, 1) (bf16, (B, H, N, D) contiguous), the same draw as `tkprobe
based`'s. Unscaled on purpose: q.k sums 16 products of unit variance, so q.k / 4 (the kernels'
scale, 1 / sqrt(16)) is itself ~N(0, 1) and phi(x) = 1 + x + x^2/2 stays moderate (0.5 to ~10 for
|x| < 4): every row's weights spread over many keys, neither overflowing nor collapsing onto one,
and the errors sit beside the probe's. Then an fp32 quadratic reference computed in torch
(reference(): causal, a block of queries and a group of heads at a time so N = 16384 fits), every
kernel warmed up, then timed in turns (--rounds rounds, each --reps / --rounds launches of every
kernel in the same order, so a drifting clock or power state touches all alike) with CUDA events, a
spin kernel ahead of each launch so the events time the GPU, not the host's path to it, and the SM
clock bracketed around each launch as compare_sdpa.py reads it (libtk_clock_c beside --tk-lib; the
median as the row's kernel_sm_clock_mhz). Each row holds the median ms and TFLOP/s with their
quartiles; each peer's row the paired ratio: the DSL's
speed over the peer's, launch by launch from the same rounds (peer ms / ours ms; above 1: ours is
faster). Last, one checked launch per kernel on a poisoned (NaN) output, compared with the
reference: ||O - O_ref||_F / ||O_ref||_F and the worst row's, against the probe's bounds (1e-2 and
2e-2). TFLOP/s divides based::flops (tk_based_flops: the count `tkprobe based` uses) for every
kernel, whatever each does: they compare by time.

fla's calls (fla_call()): fla-core 0.6.0's fused_chunk_based(q, k, v, scale, use_norm) and
parallel_based(...) take (B, N, H, D) and transpose to (B, H, N, D) themselves, so they are given
q.transpose(1, 2) of our contiguous tensors, which they transpose back into contiguous tensors: no
copy either way; they return (B, N, H, Dv), a transposed view of a (B, H, N, Dv) tensor, turned back
the same way. Older fla, whose functions take head_first (default True), get our tensors as they are.
fla normalizes as we do (phi(q.k * scale), scale 1/4, divided by the row's sum of weights) but adds
1e-6 to that sum (nothing: it is at least (i + 1) / 2) and divides the bf16-rounded numerator (and,
in parallel_based, a bf16-rounded sum) rather than fp32 sums. Their timed call is what a user calls:
the Triton kernel and the few torch operations around it (the division, the casts). fla absent or
failing to import: each fla row is `skipped` with the reason, and ours is still measured.

The JSON (--out) is a tkprobe.report/2 document, written in version 3's columns as tkprobe writes it
(tkreport.text; results/README.md): probe "based-peers", params
kernel ("tk", "fla-fused", "fla-parallel"), seq, batch, heads, feature_dim, value_dim, normalize,
dtype; fla's rows are peers (`"peer": true`: reported, never judged). A markdown table goes to stdout.

    scripts/compare_based.py --out based-peers.json [--tk-lib build/kernels/libtk_based_c.so]
        [--seq 1024,4096,8192,16384] [--batch 16] [--heads 16] [--value-dim 64|128] [--no-normalize]
        [--peers fla-fused,fla-parallel|none] [--reps 50] [--rounds 25] [--warmup 5] [--seed N]

Exit: 0 every row correct; 1 a row failed its check; 2 a bad option (the message names what is
valid); 3 no PyTorch or no CUDA device; 4 a CUDA error. The report builder below needs neither torch
nor a GPU (tests/host/test_compare_based.py runs it); only measure_shape() and run_all() do.
"""
import argparse
import ctypes
import gc
import inspect
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_sdpa as sdpa  # noqa: E402 (the GPU session, statistics, atomic write)
import tkreport  # noqa: E402 (the report's rounding and text, as tkprobe writes)

SCHEMA = "tkprobe.report/2"
PROBE = "based-peers"
OURS = "tk"
PEERS = {"fla-fused": "fused_chunk_based", "fla-parallel": "parallel_based"}  # our name: fla.ops.based's
KERNELS = (OURS, *PEERS)
FEATURE_DIM = 16  # the only one the DSL's kernel takes
SCALE = FEATURE_DIM ** -0.5  # q.k / 4: every kernel's
VALUE_DIMS = (64, 128)
SEQS, BATCH, HEADS, VALUE_DIM = (1024, 4096, 8192, 16384), 16, 16, 64
MAX_REL_ERROR, MAX_ROW_ERROR = 1e-2, 2e-2  # the probe's bounds (probes/based/based.cpp)
DEFAULT_TK_LIB = os.path.join(os.path.dirname(HERE), "build", "kernels", "libtk_based_c.so")
CHECK_WHAT = ("||O - O_ref||_F / ||O_ref||_F and the same for the worst row, against an fp32 quadratic reference "
              "(torch), on a poisoned output")


# ---- the report builder: plain Python ----

def shapes(seqs, batch, heads, value_dim, normalize):
    return [dict(batch=batch, heads=heads, seq=n, feature_dim=FEATURE_DIM, value_dim=value_dim, normalize=normalize)
            for n in seqs]


def params(kernel, shape):
    """The based probe's row keys (probes/based/based.cpp, params_json) and the kernel."""
    return {"kernel": kernel, "seq": shape["seq"], "batch": shape["batch"], "heads": shape["heads"],
            "feature_dim": shape["feature_dim"], "value_dim": shape["value_dim"], "normalize": shape["normalize"],
            "dtype": "bf16"}


def describe(shape):
    return "B={batch} H={heads} N={seq} Dk={feature_dim} Dv={value_dim}".format(**shape) + \
        (" normalized" if shape["normalize"] else "")


def paired_ratios(ours_seconds, peer_seconds):
    """Ours' speed over the peer's, launch by launch: the i-th launch of each was timed in the same
    round, in the same position (timed_in_turns), so the pair saw the same clock and power state."""
    return [p / o for o, p in zip(ours_seconds, peer_seconds)]


def row_telemetry(before, after):
    """Version 2's row telemetry: the throttling event and NVML's reasons where the clock was slowed
    (power or thermal), else nothing; the readings themselves go to the report's section."""
    if before is None or after is None:
        return None
    mask = before["reasons"] | after["reasons"]
    if not mask & sdpa.THROTTLE_MASK:
        return None
    return {"throttled": True, "reasons": [name for bit, name in sdpa.REASONS if mask & bit]}


def probe_telemetry(spans):
    """The report's telemetry section for the probe: NVML's readings over every measured row as
    [low, high] ranges (src/report.cpp). `spans`: a (before, after) pair of readings a measured row."""
    section = {"rows": len(spans), "throttled_rows": sum(1 for b, a in spans if row_telemetry(b, a))}
    readings = [r for span in spans for r in span]
    if not readings or any(r is None for r in readings):
        section["nvml"] = "unavailable"
        return section
    for name, key in (("sm_clock_mhz", "sm"), ("power_w", "power"), ("temperature_c", "temp")):
        section[name] = [min(r[key] for r in readings), max(r[key] for r in readings)]
    return section


def number(x):
    """A figure as the report holds it: null for NaN (an output left unwritten), so it fails."""
    return None if x is None or math.isnan(x) else x


def measured_row(kernel, shape, seconds, work, rel_error, worst_row_error, ratios=None, span=(None, None),
                 clocks=()):
    """A timed, checked row: ms and TFLOP/s per launch (`seconds`: each timed launch's; `work`: the
    FLOPs credited to one), the errors of the checked launch, for a peer the paired ratios, and the
    SM clock under its launches (`clocks`, MHz or None each)."""
    passed = rel_error < MAX_REL_ERROR and worst_row_error < MAX_ROW_ERROR  # False on NaN
    metrics = {"ms": sdpa.summarize([s * 1e3 for s in seconds], "ms", "lower"),
               "tflops": sdpa.summarize([work / s / 1e12 for s in seconds], "TFLOP/s", "higher"),
               "rel_error": number(rel_error), "worst_row_error": number(worst_row_error)}
    if ratios is not None:
        metrics["ratio"] = sdpa.summarize(ratios, "x", "higher")  # ours over this peer: above 1, ours is faster
    row = {"probe": PROBE, "params": params(kernel, shape), "status": "ok" if passed else "failed",
           "metrics": metrics, "primary": "tflops",
           "check": {"what": CHECK_WHAT, "value": number(rel_error), "max": MAX_REL_ERROR,
                     "worst_row_error": number(worst_row_error), "worst_row_max": MAX_ROW_ERROR, "passed": passed}}
    telemetry = sdpa.with_clock(row_telemetry(*span) or {}, clocks)
    if telemetry:
        row["telemetry"] = telemetry
    return as_peer_where_due(kernel, row)


def skipped_row(kernel, shape, reason):
    return as_peer_where_due(kernel, {"probe": PROBE, "params": params(kernel, shape), "status": "skipped",
                                      "reason": reason, "metrics": {}})


def as_peer_where_due(kernel, row):
    """fla's kernels are peers: `tkprobe compare` reports their rows and never judges them."""
    if kernel in PEERS:
        row["peer"] = True
    return row


def plural(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def findings(rows):
    out = []
    median = lambda r, m: r["metrics"][m]["median"]
    for kernel in KERNELS:
        mine = [r for r in rows if r["params"]["kernel"] == kernel]
        timed = [r for r in mine if "tflops" in r["metrics"]]
        skipped = [r for r in mine if r["status"] == "skipped"]
        if not timed:
            if skipped:
                out.append({"probe": PROBE, "text": f"{kernel}: skipped on all {len(skipped)} shapes: "
                                                    f"{skipped[0]['reason']}"})
            continue
        best = max(timed, key=lambda r: median(r, "tflops"))
        worst = min(timed, key=lambda r: median(r, "tflops"))
        shape = lambda r: describe({k: v for k, v in r["params"].items() if k not in ("kernel", "dtype")})
        errors = [r["metrics"]["rel_error"] for r in timed]
        largest = "NaN" if None in errors else f"{max(errors):.2e}"
        failed = sum(1 for r in timed if r["status"] == "failed")
        out.append({"probe": PROBE, "text": f"{kernel}: {median(worst, 'tflops'):.1f}..{median(best, 'tflops'):.1f} "
                                            f"TFLOP/s over {plural(len(timed), 'shape')}; best {shape(best)} = "
                                            f"{median(best, 'ms'):.3f} ms; slowest {shape(worst)}; largest relative "
                                            f"error {largest}; {failed} failed the check, {len(skipped)} skipped"})
        ratios = [median(r, "ratio") for r in timed if "ratio" in r["metrics"]]
        if ratios:
            span = f"{min(ratios):.2f}x..{max(ratios):.2f}x over {plural(len(ratios), 'shape')}"
            out.append({"probe": PROBE, "text": f"{OURS} over {kernel}, paired launch by launch: {span} "
                                                "(above 1: ours is faster)"})
    return out


def report(tool, host, device, rows, spans):
    """The tkprobe.report/2 document. `spans`: the NVML readings (before, after) of each measured row."""
    rows = [json.loads(json.dumps(r)) for r in rows]  # the caller's rows stay whole
    tkreport.drop_repeated_check_texts(rows)
    doc = {"schema": SCHEMA, "tool": dict(tool, probes=[PROBE]), "host": host, "device": device,
           "telemetry": {PROBE: probe_telemetry(spans)}, "results": rows, "findings": findings(rows)}
    return tkreport.round_significant(doc)


def markdown(doc):
    """A line a row: time, rate, errors, ours' paired speed over the peer's, status."""
    lines = ["| shape | kernel | ms | TFLOP/s | SM MHz | rel. error | worst row | tk / it (paired) | status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    figure = lambda m, name, fmt: "-" if name not in m else ("NaN" if m[name] is None else fmt.format(m[name]))
    for r in doc["results"]:
        p, m = r["params"], r["metrics"]
        shape = describe({k: v for k, v in p.items() if k not in ("kernel", "dtype")})
        status = {"ok": "ok", "failed": "FAILED"}.get(r["status"]) or f"skipped: {r.get('reason', '')}"
        if "tflops" not in m:
            lines.append(f"| {shape} | {p['kernel']} | - | - | - | - | - | - | {status} |")
            continue
        ratio = f"{m['ratio']['median']:.3f}" if "ratio" in m else "-"
        mhz = (r.get("telemetry") or {}).get("kernel_sm_clock_mhz")
        lines.append(f"| {shape} | {p['kernel']} | {m['ms']['median']:.3f} | {m['tflops']['median']:.1f} | "
                     f"{'-' if mhz is None else f'{mhz:.0f}'} | "
                     f"{figure(m, 'rel_error', '{:.2e}')} | {figure(m, 'worst_row_error', '{:.2e}')} | {ratio} | "
                     f"{status} |")
    return "\n".join(lines) + "\n"


# ---- options ----

def positive_ints(text):
    values = []
    for part in text.split(","):
        try:
            values.append(int(part))
        except ValueError:
            return None
    return values if values and all(v > 0 for v in values) else None


def check_timing_options(parser, args):
    """--reps, --rounds, --warmup and --seed (compare_decode.py's and compare_fp8.py's too)."""
    if args.reps < 20:
        parser.error(f"--reps {args.reps}: give 20 or more (quartiles need them)")
    if args.rounds < 1 or args.reps % args.rounds:
        parser.error(f"--rounds {args.rounds}: give a divisor of --reps ({args.reps}): each turn times "
                     "--reps / --rounds launches of every kernel")
    if args.warmup < 0:
        parser.error(f"--warmup {args.warmup}: give 0 or more")
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed {args.seed}: give a non-negative integer")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the tkprobe.report/2 JSON")
    parser.add_argument("--tk-lib", default=DEFAULT_TK_LIB,
                        help="the DSL's Based library (default: build/kernels/libtk_based_c.so)")
    parser.add_argument("--seq", default=",".join(map(str, SEQS)), help="sequence lengths, comma-separated")
    parser.add_argument("--batch", default=str(BATCH), help="batch size")
    parser.add_argument("--heads", default=str(HEADS), help="heads")
    parser.add_argument("--value-dim", default=str(VALUE_DIM), help="value dim: 64 or 128")
    parser.add_argument("--no-normalize", action="store_true", help="the numerator alone")
    parser.add_argument("--peers", default=",".join(PEERS), help="fla's kernels to time beside ours, or none")
    parser.add_argument("--reps", type=int, default=50, help="timed launches per kernel and shape (>= 20)")
    parser.add_argument("--rounds", type=int, default=25, help="turns the kernels' launches are split into")
    parser.add_argument("--warmup", type=int, default=5, help="untimed launches first")
    parser.add_argument("--seed", type=int, help="seed for the inputs (default: drawn fresh, recorded)")
    args = parser.parse_args(argv)
    seqs = positive_ints(args.seq)
    if seqs is None:
        parser.error(f"--seq {args.seq}: give positive integers, comma-separated (e.g. 1024,4096)")
    args.seqs = seqs
    for name in ("batch", "heads"):
        value = positive_ints(getattr(args, name))
        if value is None or len(value) != 1:
            parser.error(f"--{name} {getattr(args, name)}: give one positive integer")
        setattr(args, name, value[0])
    if args.value_dim not in [str(d) for d in VALUE_DIMS]:
        parser.error(f"--value-dim {args.value_dim}: give 64 or 128 (the DSL's kernel takes those)")
    args.value_dim = int(args.value_dim)
    peers = [p for p in args.peers.split(",")] if args.peers != "none" else []
    if args.peers == "" or any(p not in PEERS for p in peers) or len(set(peers)) != len(peers):
        parser.error(f"--peers {args.peers}: give some of {', '.join(PEERS)} (comma-separated), or none")
    args.peer_kernels = peers
    check_timing_options(parser, args)
    if not os.path.isfile(args.tk_lib):
        parser.error(f"--tk-lib {args.tk_lib}: no such file (build it: ninja -C build tk_based_c)")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        parser.error(f"--out {args.out}: folder '{out_dir}' does not exist")
    try:
        args.tk = TkBased(args.tk_lib)
    except (OSError, AttributeError) as e:
        parser.error(f"--tk-lib {args.tk_lib}: not the Based library ({e}; build it: ninja -C build tk_based_c)")
    return args


# ---- the DSL's kernel through ctypes (loads without a GPU) ----

class TkBased:
    """libtk_based_c (kernels/based/c_api.cpp): a forward prepared once per shape (tensor maps), so a
    timed launch is the kernel alone; based::flops, the count the probe divides."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        shape_args = [ctypes.c_int] * 6  # batch, heads, seq, feature_dim, value_dim, normalize
        self.lib.tk_based_forward_create.restype = ctypes.c_void_p
        self.lib.tk_based_forward_create.argtypes = [ctypes.c_void_p] * 4 + shape_args
        self.lib.tk_based_forward_launch.restype = ctypes.c_int
        self.lib.tk_based_forward_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.tk_based_forward_destroy.restype = None
        self.lib.tk_based_forward_destroy.argtypes = [ctypes.c_void_p]
        self.lib.tk_based_flops.restype = ctypes.c_double
        self.lib.tk_based_flops.argtypes = shape_args
        self.lib.tk_based_refusal.restype = ctypes.c_int
        self.lib.tk_based_refusal.argtypes = shape_args + [ctypes.c_char_p, ctypes.c_int]

    @staticmethod
    def _shape(shape):
        return (shape["batch"], shape["heads"], shape["seq"], shape["feature_dim"], shape["value_dim"],
                int(shape["normalize"]))

    def flops(self, shape):
        return self.lib.tk_based_flops(*self._shape(shape))

    def refusal(self, shape):
        why = ctypes.create_string_buffer(512)
        return why.value.decode() if self.lib.tk_based_refusal(*self._shape(shape), why, len(why)) else ""

    def prepare(self, torch, q, k, v, shape):
        """(run, o, release), or the reason it cannot run. o is poisoned (NaN)."""
        refused = self.refusal(shape)
        if refused:
            return refused
        o = torch.full(v.shape, float("nan"), dtype=torch.bfloat16, device=v.device)
        handle = self.lib.tk_based_forward_create(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                                  *self._shape(shape))
        if not handle:
            return "refused by tk_based_forward_create (its reason is on stderr)"
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # PyTorch's: the events order with it

        def run():
            status = self.lib.tk_based_forward_launch(handle, stream)
            if status != 0:
                raise RuntimeError(f"tk_based_forward_launch: cudaError_t {status}")
        return run, o, lambda: self.lib.tk_based_forward_destroy(handle)


# ---- fla ----

def load_fla(wanted):
    """{kernel: fla's function} for the wanted peers and fla's version, or None and why not."""
    if not wanted:
        return None, "not asked for (--peers none)"
    try:
        import fla
        from fla.ops import based as fla_based
        functions = {kernel: getattr(fla_based, PEERS[kernel]) for kernel in wanted}
    except Exception as e:  # absent, or present and broken (its torch, its triton): either way, skipped
        return None, f"fla not importable: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
    return functions, getattr(fla, "__version__", "unknown")


def fla_call(fn, normalize):
    """One fla Based forward as a function of our contiguous (B, H, N, D) q, k, v, returning
    (B, H, N, Dv) (a view: no copy).

    The signature assumed is fla-core 0.6.0's (fla/ops/based/fused_chunk.py and parallel.py, read
    from the package): fn(q, k, v, scale=None, use_norm=True) with q, k, v (B, N, H, D), which it
    transposes to (B, H, N, D) and makes contiguous (input_guard: a no-op on the transposed views of
    contiguous tensors), returning (B, N, H, Dv) as the transpose of a (B, H, N, Dv) result. fla
    before the (B, N, H, D) convention took head_first=True (the default) and (B, H, N, D) as they
    are: a function with that parameter gets them so. measure_shape() checks the result's shape, and
    a wrong one skips the row naming this assumption."""
    if "head_first" in inspect.signature(fn).parameters:
        return lambda q, k, v: fn(q, k, v, scale=SCALE, use_norm=normalize, head_first=True)
    return lambda q, k, v: fn(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale=SCALE,
                              use_norm=normalize).transpose(1, 2)


def poison_allocator(torch, shape):
    """NaN in the blocks fla's next call most likely gets: it allocates its outputs itself (fp32
    numerator and sums, then bf16), so a NaN-filled output is not ours to hand it. The cache is
    emptied, and blocks of those sizes filled with NaN and freed: the caching allocator hands them
    out again to the next allocations of the same sizes."""
    b, h, n, dv = shape["batch"], shape["heads"], shape["seq"], shape["value_dim"]
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    blocks = [torch.full(size, float("nan"), dtype=dtype, device="cuda")
              for size, dtype in (((b, h, n, dv), torch.float32), ((b, h, n, dv), torch.float32),
                                  ((b, h, n), torch.float32), ((b, h, n), torch.float32),
                                  ((b, h, n, dv), torch.bfloat16), ((b, h, n, dv), torch.bfloat16))]
    del blocks


# ---- measuring: torch and a GPU ----

REFERENCE_BYTES = 1 << 30  # the fp32 weights of one step of the reference
REFERENCE_QUERIES = 1024  # queries a step


def reference(torch, q, k, v, normalize):
    """based.hpp's forward in fp32, quadratic: o_i = sum_{j<=i} phi(q_i.k_j / 4) v_j (over the sum of
    the weights when normalized), as float (B, H, N, Dv). A step takes REFERENCE_QUERIES queries of a
    group of heads against every key up to the block's last, so its weights fit REFERENCE_BYTES."""
    b, h, n, dk = q.shape
    dv = v.shape[-1]
    qf, kf, vf = (t.reshape(b * h, n, t.shape[-1]) for t in (q, k, v))
    out = torch.empty(b * h, n, dv, dtype=torch.float32, device=q.device)
    block = min(n, REFERENCE_QUERIES)
    group = max(1, min(b * h, REFERENCE_BYTES // (block * n * 4)))
    future = torch.ones(block, block, dtype=torch.bool, device=q.device).triu(1)  # key after the query
    for g0 in range(0, b * h, group):
        g1 = min(b * h, g0 + group)
        keys, values = kf[g0:g1].float(), vf[g0:g1].float()
        for i0 in range(0, n, block):
            i1 = min(n, i0 + block)
            x = torch.bmm(qf[g0:g1, i0:i1].float(), keys[:, :i1].transpose(1, 2)).mul_(1 / math.sqrt(dk))
            w = x.add_(1).square_().mul_(0.5).add_(0.5)  # phi(x) = 1 + x + x^2/2 = ((x + 1)^2 + 1) / 2
            w[:, :, i0:i1].masked_fill_(future[:i1 - i0, :i1 - i0], 0)
            o = torch.bmm(w, values[:, :i1])
            if normalize:
                o.div_(w.sum(dim=-1, keepdim=True))
            out[g0:g1, i0:i1] = o
            del x, w, o
    return out.view(b, h, n, dv)


def errors(torch, o, want):
    """||O - O_ref||_F / ||O_ref||_F and the largest of the same over single rows; NaN where any
    element is NaN (a poisoned element never written)."""
    diff = o.float() - want
    rel = (torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(want)).item()
    rows = torch.linalg.vector_norm(diff, dim=-1) / torch.linalg.vector_norm(want, dim=-1)
    worst = rows.max().item()  # max propagates NaN
    return rel, worst


def timed_in_turns(torch, runs, args, nvml, clock, before=None):
    """Every run warmed up, then timed in turns: {kernel: seconds a launch} and {kernel: SM MHz a
    launch}, round-major, so the i-th sample of every kernel comes from the same round and position;
    and NVML before and after. `before` runs ahead of each timed launch, untimed."""
    for run in runs.values():
        for _ in range(args.warmup):
            run()
    torch.cuda.synchronize()
    seconds, clocks = {kernel: [] for kernel in runs}, {kernel: [] for kernel in runs}
    first_reading = nvml.sample()
    for _ in range(args.rounds):
        for kernel, run in runs.items():
            for launch_seconds, mhz in sdpa.timed_launches(torch, run, args.reps // args.rounds, clock, before):
                seconds[kernel].append(launch_seconds)
                clocks[kernel].append(mhz)
    return seconds, clocks, (first_reading, nvml.sample())


def first_line(e):
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"


def measure_shape(torch, shape, args, generator, nvml, clock, tk, fla, fla_why, ours_why):
    """Rows for every kernel on one shape (same inputs, launches in turns, outputs checked) and the
    NVML span of the measured ones."""
    b, h, n, dk, dv = (shape[key] for key in ("batch", "heads", "seq", "feature_dim", "value_dim"))
    draw = lambda d: torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=generator)
    q, k, v = draw(dk), draw(dk), draw(dv)
    want = reference(torch, q, k, v, shape["normalize"])
    work = tk.flops(shape)
    rows, runs, checks, releases = {}, {}, {}, []

    prepared = ours_why or tk.prepare(torch, q, k, v, shape)
    if isinstance(prepared, str):
        rows[OURS] = skipped_row(OURS, shape, prepared)
    else:
        run, o, release = prepared
        releases.append(release)
        runs[OURS] = run

        def check_ours(run=run, o=o):
            o.fill_(float("nan"))
            run()
            return o
        checks[OURS] = check_ours

    for kernel in args.peer_kernels:
        if fla is None:
            rows[kernel] = skipped_row(kernel, shape, fla_why)
            continue
        call = fla_call(fla[kernel], shape["normalize"])
        try:
            got = call(q, k, v)  # the first call compiles fla's Triton kernel
            torch.cuda.synchronize()
        except Exception as e:  # fla refuses the shape or fails on this GPU: skipped, with its words
            rows[kernel] = skipped_row(kernel, shape, f"fla's {PEERS[kernel]} raised {first_line(e)}")
            continue
        if tuple(got.shape) != (b, h, n, dv):
            rows[kernel] = skipped_row(kernel, shape, f"fla's {PEERS[kernel]} returned shape {tuple(got.shape)}, "
                                                      f"not {(b, h, n, dv)}: the call assumed (fla-core 0.6.0's "
                                                      "signature, compare_based.py's fla_call) does not hold")
            continue
        del got
        runs[kernel] = lambda call=call: call(q, k, v)

        def check_peer(call=call):
            poison_allocator(torch, shape)
            return call(q, k, v)
        checks[kernel] = check_peer

    seconds, clocks, span = timed_in_turns(torch, runs, args, nvml, clock) if runs else ({}, {}, (None, None))
    for kernel, check in checks.items():
        o = check()
        torch.cuda.synchronize()
        rel, worst = errors(torch, o, want)
        del o
        ratios = paired_ratios(seconds[OURS], seconds[kernel]) if kernel in PEERS and OURS in seconds else None
        rows[kernel] = measured_row(kernel, shape, seconds[kernel], work, rel, worst, ratios, span, clocks[kernel])
    for release in releases:
        release()
    return [rows[kernel] for kernel in (OURS, *args.peer_kernels)], [span] * len(checks)


def run_all(args):
    import torch
    if not torch.cuda.is_available():
        no_device("no CUDA device for PyTorch")
    session = sdpa.GpuSession(torch, args.seed)
    props, nvml, device, generator = session.props, session.nvml, session.device, session.generator
    ours_why = None if (props.major, props.minor) == (9, 0) else \
        f"needs compute capability 9.0 (sm_90a: wgmma, the TMA); this GPU is {props.major}.{props.minor}"
    fla, fla_note = load_fla(args.peer_kernels)
    versions = f"torch {torch.__version__}" + (f", fla {fla_note}" if fla else "")
    tool, host = session.tool(f"compare_based.py ({versions})"), session.host
    if fla is None and args.peer_kernels:
        print(f"compare_based.py: fla's rows skipped: {fla_note}", file=sys.stderr)
    rows, spans, clock = [], [], sdpa.sm_clock(torch, args.tk_lib)
    for shape in shapes(args.seqs, args.batch, args.heads, args.value_dim, not args.no_normalize):
        more, more_spans = measure_shape(torch, shape, args, generator, nvml, clock, args.tk, fla, fla_note, ours_why)
        rows += more
        spans += more_spans
        for row in more:
            print(json.dumps(row["params"]), row["status"], row.get("reason", ""), file=sys.stderr)
        torch.cuda.empty_cache()
    return report(tool, host, device, rows, spans)


def no_device(why):
    """tkprobe's exit code 3: nothing here to measure with."""
    print(f"compare_based.py: {why}", file=sys.stderr)
    sys.exit(3)


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch  # noqa: F401 (only to say clearly what is missing)
    except ImportError:
        no_device("needs PyTorch with CUDA (e.g. pip install torch)")
    return reported(run_all, args, markdown, args.out)


def reported(run_all, args, markdown, out):
    """run_all(args)'s report written to `out` whole or not at all (None: not written) and its
    table printed; the exit code: 4 on a CUDA error, 1 where a row failed its check, else 0."""
    try:
        doc = run_all(args)
    except RuntimeError as e:  # a CUDA error: tkprobe's exit code 4
        print(f"{os.path.basename(sys.argv[0])}: {first_line(e)}", file=sys.stderr)
        return 4
    if out:
        sdpa.write_atomic(out, tkreport.text(doc))
    print(markdown(doc), end="")
    return 1 if any(r["status"] == "failed" for r in doc["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
