#!/usr/bin/env python3
"""The DSL's decode step over a paged KV cache beside its peers, in one process, as a tkprobe report.

Times tk_attention.decode ("tk": kernels/attention/decode.hpp, through this checkout's tk_attention
package and the library --tk-lib names) and, where each imports and takes the shape, on the same
tensors:
- flashinfer: FlashInfer's BatchDecodeWithPagedKVCacheWrapper (kv_layout "NHD", its default CUDA-core
  decode) for one new token, its BatchPrefillWithPagedKVCacheWrapper with causal=True for more (its
  causal mask is aligned bottom-right, as ours); kv_indptr, kv_indices and kv_last_page_len made from
  the same block table and lengths; plan() once before timing, run() timed, writing into our output;
- cudnn-paged: cuDNN's SDPA graph (nvidia-cudnn-frontend) reading the same caches through the block
  table (paged_attention_k_table and _v_table, paged_attention_max_seq_len_kv the table's capacity),
  a padding mask from seq_len_q and seq_len_kv, and for more than one new token the causal band
  (diagonal_band_right_bound 0) aligned BOTTOM_RIGHT;
- torch-sdpa: the floor: torch.nn.functional.scaled_dot_product_attention(enable_gqa=True) on the
  cache gathered into contiguous (B, Hkv, N, D) tensors BEFORE timing (the gather, which a serving
  engine without a paged kernel pays every step, is not in its figure), with a boolean mask of the
  keys each new token sees where the lengths differ or the new tokens are causal.
A kernel that is not installed or refuses the shape gets a `skipped` row saying why.

The layout is the kernel's (flash_attn_with_kvcache's): q and o (B, T, H, D) bf16, T = 1..16 new
tokens, seeing each other causally (bottom-right) where T > 1; k_cache and v_cache (pages, page_size,
Hkv, D) bf16; block_table (B, pages_per_seq) and cache_seqlens (B,) int32 on the GPU; H a multiple
of Hkv. Per shape: fresh N(0, 1) q and caches from the run's seed; the pool holds B x pages_per_seq
pages, shuffled over the sequences' table rows; each sequence's length drawn from the last page
below --keys (keys - page_size + 1 to keys), never a multiple of the page size, so every sequence
ends mid-page and lengths differ between sequences. The points (batch x keys) are the decode probe's:
1x8k, 1x32k, 1x128k, 16x8k, 64x2k, 64x8k, 256x1k at 32 query heads over 8, D = 128, pages of 64
keys, one new token; --quick its 1x16k, 1x64k and 32x1000; --batch with --keys one point.

Timing as compare_based.py's: every kernel warmed up, then timed in turns (--rounds rounds of --reps /
--rounds launches of each), CUDA events around each launch behind a spin kernel so they time the
GPU, not the host's path to it, and the SM clock bracketed where libtk_clock_c lies beside --tk-lib;
before each launch twice the L2 of other data is read, so every step starts with its cache out of
the L2, as the decode probe's do. Each row: ms, GB/s and TFLOP/s per launch (median and spread); a peer's row also tk's speed over
the peer's, launch by launch from the same rounds ("ratio": peer ms / tk ms, above 1 tk is faster).
GB/s divides step_bytes(): the K and V of every attended key (sum over sequences of length x Hkv x
D x 2 bytes, for K and for V) plus q read and o written. TFLOP/s divides step_flops(): 4 H D per
(new token, key it sees) pair. Last, one checked launch per kernel on a NaN-poisoned output (ours
where the kernel writes into a buffer it is given; else blocks of the output's size filled with NaN
and freed just before, so the caching allocator hands them out again) against an fp32 reference
computed sequence by sequence on its gathered pages: ||O - O_ref||_F / ||O_ref||_F of the worst
sequence below 5e-3, the worst single row below 1e-2, and tk's logsumexp within 1e-2 (the decode
probe's bounds, probes/decode/decode.cpp). A row over them is `failed`, its figures kept.

The JSON (--json) is a tkprobe.report/2 document written in version 3's columns as tkprobe writes
it (tkreport.text): probe "decode-peers", params the decode probe's (batch, keys, q_tokens, heads,
kv_heads, head_dim, page_size) with kernel and dtype, primary gbps; the peers' rows are peers
(reported, never judged by `tkprobe compare`). A markdown table goes to stdout.

    scripts/compare_decode.py [--json decode-peers.json] [--quick | --batch B --keys N]
        [--heads 32] [--kv-heads 8] [--head-dim 64|128] [--page-size 64] [--q-tokens 1..16]
        [--kernels tk,flashinfer,cudnn-paged,torch-sdpa] [--tk-lib build/kernels/libtk_attention_c.so]
        [--reps 50] [--rounds 25] [--warmup 5] [--seed N]

Exit: 0 every row correct; 1 a row failed its check; 2 a bad option (the message names what is
valid); 3 no PyTorch or no CUDA device; 4 a CUDA error. Everything down to the measuring side is
plain Python (tests/host/test_compare_decode.py runs it without torch).
"""
import argparse
import gc
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_based as based  # noqa: E402 (timing in turns, paired ratios, the telemetry section)
import compare_sdpa as sdpa  # noqa: E402 (GpuSession, statistics, atomic write)
import sdpa_varlen  # noqa: E402 (the cuDNN frontend and its handle, loaded once)
import peer_table  # noqa: E402 (rows, findings, report and options shared with compare_fp8.py)

PROBE = "decode-peers"
OURS = "tk"
PEERS = ("flashinfer", "cudnn-paged", "torch-sdpa")
KERNELS = (OURS, *PEERS)
# The decode probe's model (probes/decode/decode.cpp): Llama-3 8B's attention, 64-token pages.
HEADS, KV_HEADS, HEAD_DIM, PAGE_SIZE, Q_TOKENS = 32, 8, 128, 64, 1
SWEEP = ((1, 8192), (1, 32768), (1, 131072), (16, 8192), (64, 2048), (64, 8192), (256, 1024))
QUICK = ((1, 16384), (1, 65536), (32, 1000))  # the probe's --quick points
HEAD_DIMS = (64, 128)  # what tk_attention.decode takes (checks.DECODE_HEAD_DIMS)
MAX_Q_TOKENS = 16
MAX_INT = 2 ** 31 - 1  # the kernels index keys with ints
ELEMENT_BYTES = 2  # bf16
MAX_REL_ERROR, MAX_ROW_ERROR, MAX_LSE_ERROR = 5e-3, 1e-2, 1e-2  # the decode probe's bounds
FLASHINFER_WORKSPACE_BYTES = 128 << 20  # FlashInfer's recommended split-KV workspace
ROOT = os.path.dirname(HERE)
DEFAULT_TK_LIB = os.path.join(ROOT, "build", "kernels", "libtk_attention_c.so")
CHECK_WHAT = ("||O - O_ref||_F / ||O_ref||_F of the worst sequence and the same for the worst row (tk: and "
              "max |LSE - LSE_ref|) against fp32 attention on each sequence's gathered pages, on a poisoned output")


# ---- shapes, lengths and page tables: plain Python ----

def shapes(points, heads, kv_heads, head_dim, page_size, q_tokens):
    return [dict(batch=b, keys=n, q_tokens=q_tokens, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                 page_size=page_size) for b, n in points]


def is_causal(shape):
    """Several new tokens see each other causally, as the probe runs them."""
    return shape["q_tokens"] > 1


def pages_for(keys, page_size):
    return -(-keys // page_size)


def length_range(keys, page_size, q_tokens):
    """The lengths a sequence may have: within the last page up to `keys`, at least the new tokens."""
    return range(max(q_tokens, keys - page_size + 1, 1), keys + 1)


def ends_mid_page(length, page_size):
    """Off the page boundaries, so the last page is partial; with pages of one key every length is on
    one, and is taken."""
    return page_size == 1 or length % page_size != 0


def lengths_possible(keys, page_size, q_tokens):
    # Of two consecutive lengths at most one is a multiple of the page size: the first two decide.
    return any(ends_mid_page(n, page_size) for n in length_range(keys, page_size, q_tokens)[:2])


def sequence_lengths(shape, rng):
    """A length for each sequence, uniform over length_range's lengths that end mid-page."""
    lengths, page = length_range(shape["keys"], shape["page_size"], shape["q_tokens"]), shape["page_size"]
    out = []
    while len(out) < shape["batch"]:
        n = rng.choice(lengths)
        if ends_mid_page(n, page):
            out.append(n)
    return out


def block_table(batch, pages_per_seq, rng):
    """Each sequence's row of page numbers: the pool's pages in random order, none shared."""
    pages = list(range(batch * pages_per_seq))
    rng.shuffle(pages)
    return [pages[b * pages_per_seq:(b + 1) * pages_per_seq] for b in range(batch)]


def flashinfer_pages(table, lengths, page_size):
    """FlashInfer's CSR form of the same pages: (kv_indptr, kv_indices, kv_last_page_len), each
    sequence's pages its first ceil(length / page_size) table entries, its last holding 1..page_size keys."""
    indptr, indices, last = [0], [], []
    for row, n in zip(table, lengths):
        used = pages_for(n, page_size)
        indices += row[:used]
        indptr.append(len(indices))
        last.append(n - (used - 1) * page_size)
    return indptr, indices, last


def visible_keys(length, q_tokens, token, causal):
    """Keys new token `token` of a sequence of `length` keys attends: all, or causally those up to its
    own position, the new tokens being the last q_tokens keys (bottom-right)."""
    return length - q_tokens + token + 1 if causal else length


def sdpa_needs_mask(lengths, causal):
    """Whether torch-sdpa needs a mask on the gathered cache: where lengths differ (padding) or the new
    tokens are causal; one new token over keys of one length sees them all."""
    return causal or len(set(lengths)) > 1


# ---- the work counted: the one place bytes and FLOPs are counted ----

def step_bytes(shape, lengths):
    """Bytes a step must move: K and V of every attended key, q read and o written."""
    cache = 2 * sum(lengths) * shape["kv_heads"] * shape["head_dim"] * ELEMENT_BYTES
    q_and_o = 2 * shape["batch"] * shape["q_tokens"] * shape["heads"] * shape["head_dim"] * ELEMENT_BYTES
    return cache + q_and_o


def step_flops(shape, lengths):
    """4 H D per (new token, key it sees) pair: two products of 2 D FLOPs each per head."""
    t = shape["q_tokens"]
    pairs = sum(visible_keys(n, t, i, is_causal(shape)) for n in lengths for i in range(t))
    return 4 * shape["heads"] * shape["head_dim"] * pairs


# ---- rows, report, table: plain Python ----

def params(kernel, shape):
    """The decode probe's row keys (probes/decode/decode.cpp), the kernel and the dtype."""
    return {"kernel": kernel, "batch": shape["batch"], "keys": shape["keys"], "q_tokens": shape["q_tokens"],
            "heads": shape["heads"], "kv_heads": shape["kv_heads"], "head_dim": shape["head_dim"],
            "page_size": shape["page_size"], "dtype": "bf16"}


def describe(p):
    return "B={batch} keys={keys} T={q_tokens} H={heads}/{kv_heads} D={head_dim} page={page_size}".format(**p)


TABLE = peer_table.PeerTable(PROBE, OURS, PEERS, params, describe, rate=("gbps", "GB/s", "{:.0f}"),
                             check_what=CHECK_WHAT, bounds=(MAX_REL_ERROR, MAX_ROW_ERROR, MAX_LSE_ERROR))
skipped_row, kernel_findings = TABLE.skipped_row, TABLE.kernel_findings


def step_fit(samples):
    """(fixed seconds, bytes per second) of a step from (bytes, seconds) samples of two or more sizes,
    by least squares (the decode probe's fit, probes/decode/step_fit.hpp); None without two sizes or a
    time that grows with the bytes."""
    if len(samples) < 2:
        return None
    mean_b = sum(b for b, _ in samples) / len(samples)
    mean_s = sum(s for _, s in samples) / len(samples)
    sbb = sum((b - mean_b) ** 2 for b, _ in samples)
    sbs = sum((b - mean_b) * (s - mean_s) for b, s in samples)
    if sbb <= 0 or sbs <= 0:
        return None
    slope = sbs / sbb
    return mean_s - slope * mean_b, 1 / slope


def fit_findings(rows):
    """Per kernel, its batch-1 steps (checked, timed) fitted as a fixed cost plus a read rate: what a
    short cache pays each step whatever it reads."""
    lines = []
    for kernel in KERNELS:
        steps = [(r["metrics"]["bytes"], r["metrics"]["ms"]["median"] / 1e3) for r in rows
                 if r["params"]["kernel"] == kernel and r["params"]["batch"] == 1 and r["status"] == "ok"]
        fit = step_fit(steps)
        if fit:
            lines.append(f"{kernel} B=1: over {len(steps)} lengths, a step costs {fit[0] * 1e6:.1f} us plus its "
                         f"bytes at {fit[1] / 1e9:.0f} GB/s")
    return lines


def report(tool, host, device, rows, spans):
    """The peers table's report, with each kernel's batch-1 fit among its findings."""
    doc = TABLE.report(tool, host, device, rows, spans)
    doc["findings"] += [{"probe": PROBE, "text": text} for text in fit_findings(doc["results"])]
    return doc


def measured_row(kernel, shape, seconds, work, errors, ratios=None, span=(None, None), clocks=()):
    """A timed, checked row: ms, GB/s and TFLOP/s per launch (`seconds`: each timed launch's; `work`:
    (bytes, FLOPs) of one step), the checked launch's errors ({rel_error, worst_row_error, and for tk
    lse_error}), for a peer the paired ratios, and the SM clock under its launches."""
    step_b, step_f = work
    rates = {"gbps": sdpa.summarize([step_b / s / 1e9 for s in seconds], "GB/s", "higher"),
             "tflops": sdpa.summarize([step_f / s / 1e12 for s in seconds], "TFLOP/s", "higher"), "bytes": step_b}
    return TABLE.measured_row(kernel, shape, seconds, rates, errors, ratios, span, clocks)


def markdown(doc):
    """A line a row: time, rates, errors, tk's paired speed over the peer's, status."""
    return TABLE.markdown(doc, [("GB/s", lambda m: f"{m['gbps']['median']:.0f}"),
                                ("TFLOP/s", lambda m: f"{m['tflops']['median']:.2f}")])


# ---- options ----

def positive_int(parser, name, text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        parser.error(f"--{name} {text}: give a positive integer")
    return value


def check_shape_options(parser, args):
    """The model's options: each a positive integer in what the kernels take, named where it is not."""
    for name in ("heads", "kv_heads", "page_size"):
        setattr(args, name, positive_int(parser, name.replace("_", "-"), getattr(args, name)))
    if args.heads % args.kv_heads:
        parser.error(f"--heads {args.heads} --kv-heads {args.kv_heads}: give heads a multiple of kv-heads")
    if args.head_dim not in [str(d) for d in HEAD_DIMS]:
        parser.error(f"--head-dim {args.head_dim}: give 64 or 128 (what tk_attention.decode takes)")
    args.head_dim = int(args.head_dim)
    if args.q_tokens not in [str(t) for t in range(1, MAX_Q_TOKENS + 1)]:
        parser.error(f"--q-tokens {args.q_tokens}: give 1 to {MAX_Q_TOKENS} new tokens per sequence")
    args.q_tokens = int(args.q_tokens)


def check_points(parser, args):
    """--batch with --keys, or the sweep (--quick: the probe's quick points); every point's lengths possible."""
    if (args.batch is None) != (args.keys is None):
        parser.error("--batch, --keys: give both, or neither for the sweep")
    if args.batch is not None:
        args.points = [(positive_int(parser, "batch", args.batch), positive_int(parser, "keys", args.keys))]
    else:
        args.points = list(QUICK if args.quick else SWEEP)
    for batch, keys in args.points:
        if batch * pages_for(keys, args.page_size) * args.page_size > MAX_INT:
            parser.error(f"--batch {batch} --keys {keys}: at most {MAX_INT} cached keys in all (the pool's rows are "
                         "ints)")
        if not lengths_possible(keys, args.page_size, args.q_tokens):
            parser.error(f"--keys {keys} --q-tokens {args.q_tokens} --page-size {args.page_size}: no length from "
                         f"max(q-tokens, keys - page-size + 1) to keys ends mid-page: give --keys above --q-tokens")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="where to write the tkprobe report (default: the table alone)")
    parser.add_argument("--quick", action="store_true", help="the decode probe's --quick points instead of the sweep")
    parser.add_argument("--batch", help="sequences (with --keys; default: the sweep)")
    parser.add_argument("--keys", help="cached keys per sequence, the new tokens' included (lengths are drawn from "
                                       "the last page below it, off the page boundaries)")
    parser.add_argument("--heads", default=str(HEADS), help="query heads")
    parser.add_argument("--kv-heads", default=str(KV_HEADS), help="key/value heads (heads a multiple of them)")
    parser.add_argument("--head-dim", default=str(HEAD_DIM), help="64 or 128")
    parser.add_argument("--page-size", default=str(PAGE_SIZE), help="keys per cache page")
    parser.add_argument("--q-tokens", default=str(Q_TOKENS), help=f"new tokens per sequence, 1 to {MAX_Q_TOKENS}, "
                                                                  "causal among themselves where more than one")
    peer_table.add_run_options(parser, KERNELS, DEFAULT_TK_LIB,
                               "the DSL's attention library (default: build/kernels/libtk_attention_c.so)")
    parser.add_argument("--seed", type=int, help="seed for the inputs, lengths and tables (default: drawn, recorded)")
    args = parser.parse_args(argv)
    check_shape_options(parser, args)
    check_points(parser, args)
    peer_table.check_run_options(parser, args, OURS, KERNELS)
    return args


# ---- the kernels: loaded once, prepared per shape (torch and a GPU) ----

class Skipped(Exception):
    """A kernel that cannot run here (not installed, refused the shape): its row says why."""


def load_flashinfer():
    import flashinfer
    return flashinfer, f"flashinfer {getattr(flashinfer, '__version__', 'unknown')}"


def load_cudnn():
    frontend, why = sdpa_varlen.cudnn_frontend()
    if frontend is None:
        raise Skipped(why)
    module = frontend[0]
    return frontend, f"cudnn-frontend {getattr(module, '__version__', 'unknown')} (cuDNN {module.backend_version()})"


def load_torch_sdpa():
    import torch.nn.functional as F
    return F, None


PEER_LOADERS = {"flashinfer": load_flashinfer, "cudnn-paged": load_cudnn, "torch-sdpa": load_torch_sdpa}
INSTALL = {"flashinfer": "pip install flashinfer-python", "cudnn-paged": "pip install nvidia-cudnn-frontend"}


def load_kernels(kernels, tk_lib):
    """{kernel: (module, None) or (None, why)} and the versions of those that loaded."""
    loaders = dict(PEER_LOADERS, **{OURS: lambda: (peer_table.load_tk_attention(tk_lib), None)})
    loaded, versions = {}, []
    for kernel in kernels:
        try:
            module, version = loaders[kernel]()
        except Skipped as e:
            loaded[kernel] = None, str(e)
            continue
        except Exception as e:  # absent, or present and broken: either way, skipped
            hint = f": {INSTALL[kernel]}" if kernel in INSTALL else ""
            loaded[kernel] = None, f"not importable ({based.first_line(e)}){hint}"
            continue
        loaded[kernel] = module, None
        versions += [version] if version else []
    return loaded, versions


class Step:
    """One decode step on the GPU: fresh N(0, 1) q and caches, the block table and lengths (host lists
    and int32 device tensors)."""

    def __init__(self, torch, shape, rng, generator):
        self.shape, self.causal = shape, is_causal(shape)
        self.lengths = sequence_lengths(shape, rng)
        self.pages_per_seq = pages_for(shape["keys"], shape["page_size"])
        self.table_rows = block_table(shape["batch"], self.pages_per_seq, rng)
        b, t, h, kvh, d = (shape[k] for k in ("batch", "q_tokens", "heads", "kv_heads", "head_dim"))
        draw = lambda *dims: torch.randn(*dims, device="cuda", dtype=torch.bfloat16, generator=generator)
        self.q = draw(b, t, h, d)
        self.k_cache, self.v_cache = (draw(b * self.pages_per_seq, shape["page_size"], kvh, d) for _ in range(2))
        self.table = torch.tensor(self.table_rows, dtype=torch.int32, device="cuda")
        self.seqlens = torch.tensor(self.lengths, dtype=torch.int32, device="cuda")

    def key_rows(self, torch, b):
        """Cache rows (pages x page_size flattened) of sequence b's keys, in order."""
        page = self.shape["page_size"]
        pages = self.table[b, :pages_for(self.lengths[b], page)].long()
        return (pages[:, None] * page + torch.arange(page, device="cuda")).flatten()[:self.lengths[b]]

    def gathered(self, torch, cache, b):
        """Sequence b's keys of `cache`, (length, Hkv, D)."""
        return cache.flatten(0, 1)[self.key_rows(torch, b)]


def poison_allocator(torch, blocks):
    """NaN in the blocks a kernel that allocates its own outputs most likely gets next: the cache
    emptied, blocks of those (shape, dtype) filled with NaN and freed, so the caching allocator hands
    them out again to the next allocations of the same sizes."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    filled = [torch.full(shape, float("nan"), dtype=dtype, device="cuda") for shape, dtype in blocks]
    del filled


def prepare_tk(torch, step, tk):
    """(run, check) of tk_attention.decode; check() -> (o, lse) of a launch on poisoned blocks."""
    s = step.shape
    decode = lambda: tk.decode(step.q, step.k_cache, step.v_cache, step.table, step.seqlens, causal=step.causal,
                               max_seqlen_k=max(step.lengths))
    decode()  # a refusal (Unsupported) is raised here, before timing

    def check():
        poison_allocator(torch, [(step.q.shape, torch.bfloat16), ((s["batch"], s["heads"], s["q_tokens"]),
                                                                  torch.float32)])
        return decode()
    return decode, check


def prepare_flashinfer(torch, step, flashinfer):
    """FlashInfer's paged decode (one new token) or causal prefill (several) on the same pages,
    planned here once, writing into `out`: (run, check)."""
    s = step.shape
    b, t, h, d = s["batch"], s["q_tokens"], s["heads"], s["head_dim"]
    device = lambda values: torch.tensor(values, dtype=torch.int32, device="cuda")
    indptr, indices, last = (device(v) for v in flashinfer_pages(step.table_rows, step.lengths, s["page_size"]))
    workspace = torch.zeros(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    dtypes = dict(q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
    shape_args = (h, s["kv_heads"], d, s["page_size"])
    if t == 1:
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
        wrapper.plan(indptr, indices, last, *shape_args, **dtypes)
    else:
        wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD")
        wrapper.plan(device([i * t for i in range(b + 1)]), indptr, indices, last, *shape_args, causal=True, **dtypes)
    q_rows = step.q.view(b * t, h, d)  # its (tokens, heads, D), the same memory
    out = torch.empty_like(q_rows)
    run = lambda: wrapper.run(q_rows, (step.k_cache, step.v_cache), out=out)
    run()

    def check():
        out.fill_(float("nan"))
        run()
        return out.view(step.q.shape), None
    return run, check


def cudnn_paged_graph(cudnn, handle, step):
    """cuDNN's SDPA graph of the step, built, reading the caches through the block table; and its
    tensors by name."""
    s = step.shape
    b, t, h, kvh, d, page = (s[k] for k in ("batch", "q_tokens", "heads", "kv_heads", "head_dim", "page_size"))
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    bf16, int32 = cudnn.data_type.BFLOAT16, cudnn.data_type.INT32
    q_layout = dict(dim=[b, h, t, d], stride=[t * h * d, d, h * d, 1])  # (B, H, T, D) over our (B, T, H, D)
    # A container of pages: (pages, Hkv, page_size, D) over our (pages, page_size, Hkv, D), read in place.
    container = dict(dim=[step.k_cache.shape[0], kvh, page, d], stride=[page * kvh * d, d, kvh * d, 1], data_type=bf16)
    table = dict(dim=[b, 1, step.pages_per_seq, 1], stride=[step.pages_per_seq, step.pages_per_seq, 1, 1],
                 data_type=int32)
    lengths = dict(dim=[b, 1, 1, 1], stride=[1, 1, 1, 1], data_type=int32)
    tensors = {"q": g.tensor(name="q", data_type=bf16, **q_layout), "k": g.tensor(name="k_container", **container),
               "v": g.tensor(name="v_container", **container), "k_table": g.tensor(name="k_table", **table),
               "v_table": g.tensor(name="v_table", **table), "seq_q": g.tensor(name="seq_len_q", **lengths),
               "seq_kv": g.tensor(name="seq_len_kv", **lengths)}
    causal = dict(diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT, diagonal_band_right_bound=0) \
        if step.causal else {}
    tensors["o"], _ = g.sdpa(name="sdpa", q=tensors["q"], k=tensors["k"], v=tensors["v"], generate_stats=False,
                             attn_scale=1 / math.sqrt(d), use_padding_mask=True, seq_len_q=tensors["seq_q"],
                             seq_len_kv=tensors["seq_kv"], paged_attention_k_table=tensors["k_table"],
                             paged_attention_v_table=tensors["v_table"],
                             paged_attention_max_seq_len_kv=step.pages_per_seq * page, **causal)
    tensors["o"].set_output(True).set_dim(q_layout["dim"]).set_stride(q_layout["stride"])
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, tensors


def prepare_cudnn(torch, step, frontend):
    """cuDNN's paged SDPA on the step, writing into `out`: (run, check)."""
    cudnn, handle = frontend
    g, t = cudnn_paged_graph(cudnn, handle, step)
    b = step.shape["batch"]
    out = torch.empty_like(step.q)
    q_lengths = torch.full((b, 1, 1, 1), step.shape["q_tokens"], dtype=torch.int32, device="cuda")
    bound = {t["q"]: step.q, t["k"]: step.k_cache, t["v"]: step.v_cache, t["k_table"]: step.table,
             t["v_table"]: step.table, t["seq_q"]: q_lengths, t["seq_kv"]: step.seqlens.view(b, 1, 1, 1), t["o"]: out}
    workspace = torch.empty(g.get_workspace_size(), dtype=torch.uint8, device="cuda")

    def run():
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        g.execute(bound, workspace, handle=handle)
    run()

    def check():
        out.fill_(float("nan"))
        run()
        return out, None
    return run, check


def sdpa_mask(torch, step, keys):
    """torch-sdpa's attn_mask over `keys` gathered keys: None where none is needed, else a boolean
    (B, 1, T, keys) of the keys each new token sees."""
    if not sdpa_needs_mask(step.lengths, step.causal):
        return None
    t = step.shape["q_tokens"]
    seen = [[visible_keys(n, t, i, step.causal) for i in range(t)] for n in step.lengths]
    limits = torch.tensor(seen, dtype=torch.int32, device="cuda")  # (B, T)
    return (torch.arange(keys, device="cuda") < limits[:, :, None])[:, None]


def prepare_torch_sdpa(torch, step, F):
    """SDPA on the cache gathered, before timing, into zero-padded contiguous (B, Hkv, N, D): (run, check)."""
    s = step.shape
    keys = max(step.lengths)
    k, v = (torch.zeros(s["batch"], s["kv_heads"], keys, s["head_dim"], dtype=torch.bfloat16, device="cuda")
            for _ in range(2))
    for b, n in enumerate(step.lengths):
        k[b, :, :n] = step.gathered(torch, step.k_cache, b).transpose(0, 1)
        v[b, :, :n] = step.gathered(torch, step.v_cache, b).transpose(0, 1)
    q = step.q.transpose(1, 2)  # (B, H, T, D), a view
    mask = sdpa_mask(torch, step, keys)
    attend = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    attend()

    def check():
        poison_allocator(torch, [(q.shape, torch.bfloat16)])
        return attend().transpose(1, 2), None
    return attend, check


PREPARE = {OURS: prepare_tk, "flashinfer": prepare_flashinfer, "cudnn-paged": prepare_cudnn,
           "torch-sdpa": prepare_torch_sdpa}


# ---- the reference and the errors ----

def reference(torch, step):
    """O (B, T, H, D) and LSE (B, H, T) in fp32, sequence by sequence on its gathered keys; query head
    h reads key/value head h // (H / Hkv); new token i sees visible_keys(..., i, causal) keys."""
    s = step.shape
    t, h, kvh, d = s["q_tokens"], s["heads"], s["kv_heads"], s["head_dim"]
    group = h // kvh
    o = torch.empty(step.q.shape, dtype=torch.float32, device="cuda")
    lse = torch.empty(s["batch"], h, t, dtype=torch.float32, device="cuda")
    for b, n in enumerate(step.lengths):
        k, v = (step.gathered(torch, cache, b).float().transpose(0, 1) for cache in (step.k_cache, step.v_cache))
        q = step.q[b].float().view(t, kvh, group, d).permute(1, 2, 0, 3).reshape(kvh, group * t, d)  # rows (g, i)
        scores = q @ k.transpose(1, 2) / math.sqrt(d)  # (Hkv, group x T, n)
        limits = torch.tensor([visible_keys(n, t, i, step.causal) for i in range(t)], device="cuda").repeat(group)
        scores.masked_fill_(torch.arange(n, device="cuda") >= limits[:, None], float("-inf"))
        lse[b] = torch.logsumexp(scores, dim=-1).view(h, t)
        o[b] = (torch.softmax(scores, dim=-1) @ v).view(kvh, group, t, d).permute(2, 0, 1, 3).reshape(t, h, d)
    return o, lse


def output_errors(torch, o, want):
    """The worst sequence's ||O - O_ref||_F / ||O_ref||_F and the worst row's (a token and head); NaN
    where any element is NaN (torch's max propagates it)."""
    diff = o.float() - want
    per_sequence = torch.linalg.vector_norm(diff, dim=(1, 2, 3)) / torch.linalg.vector_norm(want, dim=(1, 2, 3))
    per_row = torch.linalg.vector_norm(diff, dim=-1) / torch.linalg.vector_norm(want, dim=-1)
    return {"rel_error": per_sequence.max().item(), "worst_row_error": per_row.max().item()}


# ---- measuring ----

def prepared(torch, step, kernels, loaded):
    """{kernel: (run, check)} of those that took the step, {kernel: skipped row} of the others."""
    ready, skipped = {}, {}
    for kernel in kernels:
        module, why = loaded[kernel]
        try:
            if module is None:
                raise Skipped(why)
            ready[kernel] = PREPARE[kernel](torch, step, module)
            torch.cuda.synchronize()
        except Skipped as e:
            skipped[kernel] = skipped_row(kernel, step.shape, str(e))
        except Exception as e:  # the shape or GPU refused, a JIT build failing: skipped with its words
            skipped[kernel] = skipped_row(kernel, step.shape, f"refused: {based.first_line(e)}")
    return ready, skipped


def l2_eviction(torch):
    """What runs before each timed step: a read of twice the L2 of other data (clean lines, so the
    step's misses write nothing back), leaving none of the step's cache there, as in serving, where
    the other layers run between two steps of one; the decode probe's samples start so too."""
    l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    other = torch.ones(2 * l2_bytes // 4, dtype=torch.float32, device="cuda")
    return lambda: other.sum()


def measure_shape(torch, shape, args, gpu, rng, clock, loaded, evict):
    """Rows for every kernel on one step (same tensors, launches in turns, each launch after `evict`,
    outputs checked) and the NVML span of the measured ones."""
    step = Step(torch, shape, rng, gpu.generator)
    want_o, want_lse = reference(torch, step)
    ready, rows = prepared(torch, step, args.kernels, loaded)
    runs = {kernel: run for kernel, (run, _) in ready.items()}
    seconds, clocks, span = based.timed_in_turns(torch, runs, args, gpu.nvml, clock, evict) if runs else ({}, {}, None)
    work = step_bytes(shape, step.lengths), step_flops(shape, step.lengths)
    for kernel, (_, check) in ready.items():
        o, lse = check()
        torch.cuda.synchronize()
        errors = output_errors(torch, o, want_o)
        if lse is not None:
            errors["lse_error"] = (lse - want_lse).abs().max().item()
        ratios = based.paired_ratios(seconds[OURS], seconds[kernel]) if kernel != OURS and OURS in seconds else None
        rows[kernel] = measured_row(kernel, shape, seconds[kernel], work, errors, ratios, span, clocks[kernel])
    return [rows[kernel] for kernel in args.kernels], [span] * len(ready)


def run_all(args):
    import torch
    gpu, loaded, tool, clock = peer_table.start(torch, args, load_kernels)
    rng = random.Random(gpu.seed)  # lengths and tables: the same seed makes the same steps
    evict = l2_eviction(torch)  # its buffer made once for every step
    steps = shapes(args.points, args.heads, args.kv_heads, args.head_dim, args.page_size, args.q_tokens)
    rows, spans = peer_table.measure_all(
        torch, steps, lambda shape: measure_shape(torch, shape, args, gpu, rng, clock, loaded, evict))
    return report(tool, gpu.host, gpu.device, rows, spans)


def main(argv=None):
    return peer_table.main(parse_args(argv), run_all, markdown)


if __name__ == "__main__":
    sys.exit(main())
