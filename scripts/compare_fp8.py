#!/usr/bin/env python3
"""The DSL's e4m3 attention forward beside cuDNN's fp8 SDPA (nvidia-cudnn-frontend), in one process.

Both run on the same e4m3 Q, K and V (B, H, N, D = 128), each quantized from fresh N(0, 1) bf16
with one power-of-two scale that keeps its largest magnitude within e4m3's 448 (a stored value y
stands for y x scale); both round P to e4m3 at scale 256 (the DSL's choice, kernels/attention/
DESIGN.md; cuDNN's scale_s and descale_s) and write O in bf16. The shapes are the attention
probe's D = 128 sweep (16k tokens, 2048 wide: N 1024, 4096, 16384, causal and not); --quick its
quick shape.

Timing as compare_decode.py's: every kernel warmed up, then timed in turns (--rounds rounds of
--reps / --rounds launches of each), CUDA events around each launch behind a spin kernel, the SM
clock bracketed where libtk_clock_c lies beside --tk-lib. Each row: ms and TFLOP/s per launch
(attention::flops: 4 B H N^2 D, half under the causal mask; the DSL's launch includes its V^T
pass), % of the dense fp8 datasheet peak, and on cuDNN's row tk's speed over it launch by launch
("ratio": above 1 tk is faster). Last, one checked launch per kernel on a NaN-poisoned O against
fp32 attention on the dequantized inputs, within the e4m3 forward's bounds (kernels/attention/
reference_fp8.hpp): 4e-2 over O, 1e-1 its worst row, and tk's LSE within 1e-2.

usage: compare_fp8.py [--json FILE] [--quick] [--kernels tk,cudnn-fp8] [--tk-lib LIB] [--reps N]
                      [--rounds N] [--warmup N] [--seed S]
Exit 0; 1 where a row failed its check; 2 on bad options; 3 without PyTorch or a GPU; 4 on a CUDA error.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_based as based  # noqa: E402 (timing in turns, paired ratios, the telemetry section)
import compare_sdpa as sdpa  # noqa: E402 (GpuSession, the sweep, statistics, the reference, atomic write)
import peer_table  # noqa: E402 (rows, findings, report and options shared with compare_decode.py)
import sdpa_varlen  # noqa: E402 (the cuDNN frontend and its handle, loaded once)

PROBE = "fp8-peers"
OURS = "tk"
CUDNN = "cudnn-fp8"
KERNELS = (OURS, CUDNN)
PEERS = (CUDNN,)
HEAD_DIM = 128  # what the e4m3 forward takes
E4M3_MAX = 448.0  # e4m3's largest finite magnitude
P_SCALE = 256.0  # P in [0, 1] rounded to e4m3 at this scale: exact, clear of saturation
MAX_REL_ERROR, MAX_ROW_ERROR, MAX_LSE_ERROR = 4e-2, 1e-1, 1e-2  # the e4m3 forward's bounds
ROOT = os.path.dirname(HERE)
DEFAULT_TK_LIB = os.path.join(ROOT, "build", "kernels", "libtk_attention_c.so")
CHECK_WHAT = ("||O - O_ref||_F / ||O_ref||_F and the same for the worst row (tk: and max |LSE - LSE_ref|) against "
              "fp32 attention on the dequantized inputs, on a poisoned output")


# ---- shapes, rows and the report: plain Python ----

def shapes(quick):
    """The attention probe's D = 128 shapes (compare_sdpa.py's grid)."""
    return sdpa.grid(quick, head_dims=(HEAD_DIM,))


def params(kernel, shape):
    return {"kernel": kernel, "batch": shape["batch"], "heads": shape["heads"], "kv_heads": shape["kv_heads"],
            "seq": shape["seq"], "head_dim": shape["head_dim"], "causal": shape["causal"], "dtype": "e4m3"}


def describe(p):
    return "B={batch} H={heads} N={seq} D={head_dim}".format(**p) + (" causal" if p["causal"] else "")


def fp8_peak(device_name):
    """The dense e4m3 datasheet peak, TFLOP/s: twice bf16's (the tensor cores' rate per clock)."""
    bf16 = sdpa.datasheet_bf16_peak(device_name)
    return 2 * bf16 if bf16 else None


def power_of_two_scale(amax):
    """The scale that brings |x| <= amax within e4m3's range, a power of two (exact to apply)."""
    return 2.0 ** math.ceil(math.log2(amax / E4M3_MAX)) if amax > 0 else 1.0


TABLE = peer_table.PeerTable(PROBE, OURS, PEERS, params, describe, rate=("tflops", "TFLOP/s", "{:.1f}"),
                             check_what=CHECK_WHAT, bounds=(MAX_REL_ERROR, MAX_ROW_ERROR, MAX_LSE_ERROR))
skipped_row, kernel_findings, report = TABLE.skipped_row, TABLE.kernel_findings, TABLE.report


def measured_row(kernel, shape, seconds, errors, peak, ratios=None, span=(None, None), clocks=()):
    """A timed, checked row: ms and TFLOP/s per launch (`seconds`: each timed launch's), % of the
    fp8 peak, the checked launch's errors, for cuDNN the paired ratios, the SM clock under it."""
    work = sdpa.flops(shape)
    tflops = sdpa.summarize([work / s / 1e12 for s in seconds], "TFLOP/s", "higher")
    rates = {"tflops": tflops, "pct_datasheet_peak": 100 * tflops["median"] / peak if peak else None}
    return TABLE.measured_row(kernel, shape, seconds, rates, errors, ratios, span, clocks)


def markdown(doc):
    """A line a row: time, rate, errors, tk's paired speed over the peer's, status."""
    percent = lambda m: "-" if m.get("pct_datasheet_peak") is None else f"{m['pct_datasheet_peak']:.1f}"
    return TABLE.markdown(doc, [("TFLOP/s", lambda m: f"{m['tflops']['median']:.1f}"), ("% fp8 peak", percent)])


# ---- options ----

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="where to write the tkprobe report (default: the table alone)")
    parser.add_argument("--quick", action="store_true", help="the attention probe's quick shape, causal and not")
    peer_table.add_run_options(parser, KERNELS, DEFAULT_TK_LIB,
                               "the DSL's attention library (default: build/kernels/libtk_attention_c.so)")
    parser.add_argument("--seed", type=int, help="seed for the inputs (default: drawn, recorded)")
    args = parser.parse_args(argv)
    peer_table.check_run_options(parser, args, OURS, KERNELS)
    return args


# ---- the kernels, on one shape's tensors (torch and a GPU) ----

class Skipped(Exception):
    """A kernel that cannot run here (not installed, refused the shape): its row says why."""


class Inputs:
    """One shape's e4m3 Q, K, V and their scales; the dequantized values the reference reads."""

    def __init__(self, torch, shape, generator):
        b, h, kvh, n, d = (shape[k] for k in ("batch", "heads", "kv_heads", "seq", "head_dim"))
        self.e4m3, self.scales, self.values = [], [], []
        for heads in (h, kvh, kvh):
            x = torch.randn(b, heads, n, d, device="cuda", dtype=torch.bfloat16, generator=generator).float()
            scale = power_of_two_scale(x.abs().max().item())
            stored = (x / scale).to(torch.float8_e4m3fn)
            self.e4m3.append(stored)
            self.scales.append(scale)
            self.values.append(stored.float() * scale)


def prepare_tk(torch, shape, inputs, tk):
    """(run, check): our e4m3 forward through the C interface on the shape's tensors."""
    lib = tk.library.loaded()
    o = torch.empty(inputs.e4m3[0].shape, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(inputs.e4m3[0].shape[:3], dtype=torch.float32, device="cuda")
    handle = lib.tk_attention_fp8_create(*(t.data_ptr() for t in inputs.e4m3), *inputs.scales, o.data_ptr(),
                                         lse.data_ptr(), shape["batch"], shape["heads"], shape["kv_heads"],
                                         shape["seq"], shape["head_dim"], int(shape["causal"]))
    if not handle:
        raise Skipped("refused by the kernel (its reason is on stderr)")

    def run():
        if lib.tk_attention_fp8_launch(handle, torch.cuda.current_stream().cuda_stream) != 0:
            raise RuntimeError("tk_attention_fp8_launch failed")

    def check():
        o.fill_(float("nan"))
        lse.fill_(float("nan"))
        run()
        return o, lse
    return run, check, lambda: lib.tk_attention_fp8_destroy(handle)


def sdpa_fp8_node(g, **arguments):
    """The graph's fp8 SDPA node without softmax stats (inference): the frontend names that
    `generate_stats=False` in its newer versions, `is_inference=True` in older ones."""
    try:
        return g.sdpa_fp8(generate_stats=False, **arguments)
    except TypeError:
        return g.sdpa_fp8(is_inference=True, **arguments)


def prepare_cudnn(torch, shape, inputs, frontend):
    """(run, check): cuDNN's fp8 SDPA graph on the shape's tensors: e4m3 in, the scales as device
    scalars, P at scale P_SCALE, bf16 O, and O's amax bound as the frontend's own fp8 tests bind it."""
    cudnn, handle = frontend
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FP8_E4M3, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    names = ("q", "k", "v")
    stored = {name: g.tensor(name=name, dim=list(t.shape), stride=list(t.stride()), data_type=cudnn.data_type.FP8_E4M3)
              for name, t in zip(names, inputs.e4m3)}
    scalar_values = {**{f"descale_{n}": s for n, s in zip(names, inputs.scales)},
                     "scale_s": P_SCALE, "descale_s": 1 / P_SCALE, "scale_o": 1.0}
    scalars = {name: g.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.FLOAT)
               for name in scalar_values}
    o, _, _, amax_o = sdpa_fp8_node(g, name="sdpa_fp8", **stored, **scalars,
                                    attn_scale=1 / math.sqrt(shape["head_dim"]), use_causal_mask=shape["causal"])
    out = torch.empty(inputs.e4m3[0].shape, dtype=torch.bfloat16, device="cuda")
    o.set_output(True).set_dim(list(out.shape)).set_stride(list(out.stride())).set_data_type(cudnn.data_type.BFLOAT16)
    amax = torch.empty(1, 1, 1, 1, dtype=torch.float32, device="cuda")
    amax_o.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(cudnn.data_type.FLOAT)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    device_scalars = {scalars[n]: torch.full((1, 1, 1, 1), v, dtype=torch.float32, device="cuda")
                      for n, v in scalar_values.items()}
    bound = {**{stored[n]: t for n, t in zip(names, inputs.e4m3)}, **device_scalars, o: out, amax_o: amax}
    workspace = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)

    def run():
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        g.execute(bound, workspace, handle=handle)

    def check():
        out.fill_(float("nan"))
        run()
        return out, None
    return run, check, lambda: None


def output_errors(torch, o, lse, want_o, want_lse):
    """O's relative error over the tensor and its worst row's (a row: one query's D values), and the
    largest LSE difference where the kernel gives LSE."""
    diff = o.float() - want_o
    row_error = torch.linalg.vector_norm(diff, dim=-1) / torch.linalg.vector_norm(want_o, dim=-1)
    errors = {"rel_error": sdpa.rel_error(torch, o, want_o),
              "worst_row_error": float("nan") if row_error.isnan().any() else row_error.max().item()}
    if lse is not None:
        errors["lse_error"] = (lse - want_lse).abs().max().item()
    return errors


def load_kernels(kernels, tk_lib):
    """{kernel: (module, None) or (None, why)} and the versions of those that loaded."""
    loaded, versions = {}, []
    for kernel in kernels:
        if kernel == OURS:
            try:
                loaded[kernel] = peer_table.load_tk_attention(tk_lib), None
            except Exception as e:  # a library that does not load: its rows say so
                loaded[kernel] = None, f"not loadable ({based.first_line(e)})"
            continue
        frontend, why = sdpa_varlen.cudnn_frontend()
        loaded[kernel] = frontend, why
        if frontend:
            versions.append(f"cudnn-frontend {getattr(frontend[0], '__version__', 'unknown')} "
                            f"(cuDNN {frontend[0].backend_version()})")
    return loaded, versions


PREPARE = {OURS: prepare_tk, CUDNN: prepare_cudnn}


def measure_shape(torch, shape, args, gpu, clock, loaded, peak):
    """Rows for every kernel on one shape (same tensors, launches in turns, outputs checked) and the
    NVML span of the measured ones."""
    inputs = Inputs(torch, shape, gpu.generator)
    want_o, want_lse = sdpa.reference(torch, *inputs.values, shape["causal"])
    ready, rows, releases = {}, {}, []
    for kernel in args.kernels:
        module, why = loaded[kernel]
        try:
            if module is None:
                raise Skipped(why)
            run, check, release = PREPARE[kernel](torch, shape, inputs, module)
            releases.append(release)
            run()
            torch.cuda.synchronize()
            ready[kernel] = run, check
        except Skipped as e:
            rows[kernel] = skipped_row(kernel, shape, str(e))
        except Exception as e:  # the shape or GPU refused: skipped with its words
            rows[kernel] = skipped_row(kernel, shape, f"refused: {based.first_line(e)}")
    runs = {kernel: run for kernel, (run, _) in ready.items()}
    seconds, clocks, span = based.timed_in_turns(torch, runs, args, gpu.nvml, clock) if runs else ({}, {}, None)
    for kernel, (_, check) in ready.items():
        o, lse = check()
        torch.cuda.synchronize()
        errors = output_errors(torch, o, lse, want_o, want_lse)
        ratios = based.paired_ratios(seconds[OURS], seconds[kernel]) if kernel != OURS and OURS in seconds else None
        rows[kernel] = measured_row(kernel, shape, seconds[kernel], errors, peak, ratios, span, clocks[kernel])
    for release in releases:
        release()
    return [rows[kernel] for kernel in args.kernels], [span] * len(ready)


def run_all(args):
    import torch
    gpu, loaded, tool, clock = peer_table.start(torch, args, load_kernels)
    peak = fp8_peak(gpu.props.name)
    rows, spans = peer_table.measure_all(torch, shapes(args.quick),
                                         lambda shape: measure_shape(torch, shape, args, gpu, clock, loaded, peak))
    return report(tool, gpu.host, gpu.device, rows, spans)


def main(argv=None):
    return peer_table.main(parse_args(argv), run_all, markdown)


if __name__ == "__main__":
    sys.exit(main())
