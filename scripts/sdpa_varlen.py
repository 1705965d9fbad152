"""compare_sdpa.py --varlen: packed batches (FlashAttention's varlen semantics) timed beside the peers
that take them, on the same packed tensors, in turns.

A packed batch holds its sequences back to back: Q, K, V, O (total, heads, D) with int32 offsets
(cu_seqlens) of batch + 1 entries; every sequence's queries are its keys, so a causal mask is the
same from either corner. The lengths are `tkprobe attention --varlen`'s: a list, or random:SEED,
the same long-tailed mix the probe draws (varlen_lengths below mirrors
probes/attention/varlen_lengths.hpp, and both tests pin random:1). The kernels:
- wgmma: the DSL's varlen forward and backward (libtk_attention_c's tk_attention_varlen_*);
- torch-flash, torch-cudnn: PyTorch's SDPA on jagged nested tensors (torch.nested, layout
  torch.jagged) under that backend: FlashAttention-2's varlen kernels for FLASH_ATTENTION, and
  each call's nested-tensor work around them;
- torch-flash-varlen: those FlashAttention-2 kernels alone (aten::_flash_attention_forward on the
  packed tensors and offsets);
- cudnn-ragged: cuDNN's SDPA graph over ragged offsets (nvidia-cudnn-frontend), where installed;
- fa4: FlashAttention-4's flash_attn_varlen_func (flash_attn.cute), where installed.
A kernel that cannot take the batch (a zero-length sequence, GQA under autograd, a missing package)
gets a skipped row with its reason. Every output and gradient is checked against an fp32 reference
computed sequence by sequence (compare_sdpa.reference), the DSL's logsumexp too.

Plain Python down to the measuring code: the lengths, shapes, FLOPs and row params need no torch
(tests/host/test_compare_sdpa.py runs them).
"""
import contextlib
import ctypes
import functools
import math

# probes/attention/varlen_lengths.hpp: random:SEED draws log-uniform lengths in [SHORTEST, LONGEST]
# until RANDOM_TOKENS tokens, the last cut to fit.
RANDOM_TOKENS, SHORTEST, LONGEST = 16384, 16, 8192
MAX_LENGTH = 1 << 20
MASK64 = (1 << 64) - 1
CUDNN_RAGGED = "cudnn-ragged"
FLASH_VARLEN = "torch-flash-varlen"  # FlashAttention-2's varlen kernels, called without nested tensors
NESTED_BACKENDS = {"torch-flash": "FLASH_ATTENTION", "torch-cudnn": "CUDNN_ATTENTION"}
MAX_TOTAL_ALIGN = 64  # cuDNN's backward sizes its workspace for the packed tokens rounded up to this


def next_random(state):
    """splitmix64, as varlen_lengths.hpp: (new state, value)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def random_lengths(seed):
    out, state, total = [], seed & MASK64, 0
    low, high = math.log(SHORTEST), math.log(LONGEST)
    while total < RANDOM_TOKENS:
        state, z = next_random(state)
        unit = (z >> 11) * 2.0 ** -53
        n = min(int(math.exp(low + unit * (high - low))), RANDOM_TOKENS - total)
        out.append(n)
        total += n
    return out


def varlen_lengths(spec):
    """The lengths `spec` names, or raises ValueError saying what is valid (as tkprobe attention --varlen)."""
    valid = f"give lengths separated by commas (e.g. 4096,100,1, each 0 to {MAX_LENGTH}, at least one above 0) " \
            "or random:SEED"
    if spec.startswith("random:"):
        seed = spec[len("random:"):]
        if not seed.isdigit() or int(seed) >= 1 << 63:
            raise ValueError(f"--varlen {spec}: the seed must be a non-negative integer: {valid}")
        return random_lengths(int(seed))
    lengths = []
    for part in spec.split(","):
        if not part.isdigit() or int(part) > MAX_LENGTH:
            raise ValueError(f"--varlen {spec}: '{part}' is no length: {valid}")
        lengths.append(int(part))
    if not 0 < sum(lengths) <= (2 ** 31 - 1) // 2:
        raise ValueError(f"--varlen {spec}: {sum(lengths)} tokens in all: {valid}")
    return lengths


def offsets_of(lengths):
    """cu_seqlens: 0, then each sequence's end."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def varlen_grid(spec, quick, hidden, head_dims, quick_heads):
    """The packed batch at each head dim (heads = hidden / D; --quick: quick_heads), causal and not."""
    lengths = varlen_lengths(spec)
    return [dict(varlen=spec, lengths=lengths, heads=quick_heads if quick else hidden // d,
                 kv_heads=quick_heads if quick else hidden // d, head_dim=d, causal=causal)
            for d in head_dims for causal in (False, True)]


def is_varlen(shape):
    return "lengths" in shape


def varlen_flops(shape):
    """attention::flops(Varlen): each sequence's 4 H n^2 D, half of it under the causal mask."""
    per_token_pair = 4.0 * shape["heads"] * shape["head_dim"] / (2 if shape["causal"] else 1)
    return sum(per_token_pair * n * n for n in shape["lengths"])


def varlen_params(kernel, shape, pass_):
    """`tkprobe attention --varlen`'s row keys (probes/attention/attention.cpp, varlen_params)."""
    return {"kernel": kernel, "pass": pass_, "varlen": shape["varlen"], "sequences": len(shape["lengths"]),
            "tokens": sum(shape["lengths"]), "head_dim": shape["head_dim"], "heads": shape["heads"],
            "kv_heads": shape["kv_heads"], "causal": shape["causal"], "dtype": "bf16"}


def describe(params):
    """A varlen row's shape as the findings and tables name it."""
    return "varlen {varlen} ({sequences} sequences, {tokens} tokens) H={heads} D={head_dim}".format(**params) + \
        (" causal" if params["causal"] else "")


# ---- the measuring side: torch and a GPU ----

class Packed:
    """A packed batch on the GPU: q, k, v, d_o (total, heads, D) bf16, fresh random; offsets on the
    host and as int32/int64 device tensors."""

    def __init__(self, torch, shape, generator):
        self.shape, self.lengths = shape, shape["lengths"]
        self.offsets = offsets_of(self.lengths)
        total, h, kvh, d = self.offsets[-1], shape["heads"], shape["kv_heads"], shape["head_dim"]
        draw = lambda heads: torch.randn(total, heads, d, device="cuda", dtype=torch.bfloat16, generator=generator)
        self.q, self.k, self.v, self.d_o = draw(h), draw(kvh), draw(kvh), draw(h)
        self.cu32 = torch.tensor(self.offsets, dtype=torch.int32, device="cuda")
        self.cu64 = self.cu32.long()
        self.max_len = max(self.lengths)

    def host_offsets(self):
        """The offsets as the C interface takes them (int32 host array)."""
        return (ctypes.c_int * len(self.offsets))(*self.offsets)

    def sequences(self):
        """(start, end) of each non-empty sequence."""
        return [(a, b) for a, b in zip(self.offsets, self.offsets[1:]) if b > a]


def one_sequence(t, a, b):
    """Rows a..b of a packed (total, heads, D) tensor as a (1, heads, n, D) batch."""
    return t[a:b].transpose(0, 1).unsqueeze(0)


def packed_reference(torch, compare, p, causal):
    """O (total, H, D) and LSE (H, total) in fp32, sequence by sequence (compare.reference)."""
    o = torch.zeros(p.q.shape, dtype=torch.float32, device="cuda")
    lse = torch.zeros(p.q.shape[1], p.q.shape[0], dtype=torch.float32, device="cuda")
    for a, b in p.sequences():
        out, row_lse = compare.reference(torch, *(one_sequence(t, a, b) for t in (p.q, p.k, p.v)), causal)
        o[a:b] = out[0].transpose(0, 1)
        lse[:, a:b] = row_lse[0]
    return o, lse


def packed_reference_backward(torch, compare, p, causal):
    """O, dQ, dK, dV (packed, fp32), sequence by sequence (compare.reference_backward)."""
    o, dq = (torch.zeros(p.q.shape, dtype=torch.float32, device="cuda") for _ in range(2))
    dk, dv = (torch.zeros(p.k.shape, dtype=torch.float32, device="cuda") for _ in range(2))
    for a, b in p.sequences():
        parts = compare.reference_backward(torch, *(one_sequence(t, a, b) for t in (p.q, p.k, p.v, p.d_o)), causal)
        for whole, part in zip((o, dq, dk, dv), parts):
            whole[a:b] = part[0].transpose(0, 1)
    return o, dq, dk, dv


class TkVarlen:
    """The DSL's varlen forward and backward through libtk_attention_c, prepared once per batch, as
    compare.TkAttention (`tk`) prepares the dense passes."""

    def __init__(self, tk):
        self.tk, self.lib = tk, tk.lib

    def prepare(self, torch, p, causal):
        """(run, o, lse, release) or None when refused (the reason is on stderr)."""
        s = p.shape
        o = torch.full_like(p.q, float("nan"))  # poisoned: an unwritten row fails the check
        lse = torch.full((s["heads"], p.q.shape[0]), float("nan"), device="cuda")
        cu = p.host_offsets()
        made = self.tk.runnable(torch, self.lib.tk_attention_varlen_create(
            p.q.data_ptr(), p.k.data_ptr(), p.v.data_ptr(), o.data_ptr(), lse.data_ptr(), cu, cu, len(p.lengths),
            s["heads"], s["kv_heads"], s["head_dim"], int(causal), None),
            self.lib.tk_attention_varlen_launch, self.lib.tk_attention_varlen_destroy)
        return None if made is None else (made[0], o, lse, made[1])

    def prepare_backward(self, torch, compare, p, causal):
        """(forward run, backward run, o, lse, grads, release) or None when refused."""
        forward = self.prepare(torch, p, causal)
        if forward is None:
            return None
        run_forward, o, lse, release_forward = forward
        s, cu = p.shape, p.host_offsets()
        grads = [torch.full_like(t, float("nan")) for t in (p.q, p.k, p.v)]  # poisoned
        made = self.tk.runnable(torch, self.lib.tk_attention_varlen_backward_create(
            p.q.data_ptr(), p.k.data_ptr(), p.v.data_ptr(), o.data_ptr(), p.d_o.data_ptr(), lse.data_ptr(),
            *(g.data_ptr() for g in grads), cu, cu, len(p.lengths), s["heads"], s["kv_heads"], s["head_dim"],
            int(causal), None, None, self.tk.dq_path),
            self.lib.tk_attention_varlen_backward_launch, self.lib.tk_attention_varlen_backward_destroy)
        return compare.with_forward(run_forward, release_forward, made, o, lse, grads)


def nested_attend(torch, p, causal, q, k, v):
    """SDPA on jagged nested tensors over the packed values: O as (total, heads, D)."""
    import torch.nn.functional as F
    as_nested = lambda t: torch.nested.nested_tensor_from_jagged(
        t, p.cu64, min_seqlen=min(p.lengths), max_seqlen=p.max_len).transpose(1, 2)  # (B, heads, j, D)
    return F.scaled_dot_product_attention(as_nested(q), as_nested(k), as_nested(v), is_causal=causal) \
        .transpose(1, 2).values()


class Skipped(Exception):
    """A kernel that cannot run the batch here (not installed, no such pass, refused): its rows say why."""


def autograd_peer(torch, compare, kernel, p, causal):
    """(attend(q, k, v) -> O (total, heads, D), the context it runs in) of a peer autograd
    differentiates: SDPA on nested tensors under its backend, FlashAttention-2's varlen kernels as
    PyTorch ships them (aten::_flash_attention_forward, no nested-tensor work around them), or
    FlashAttention-4's; Skipped where the peer is not installed."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if kernel in NESTED_BACKENDS:
        backend = getattr(SDPBackend, NESTED_BACKENDS[kernel])
        return (lambda q, k, v: nested_attend(torch, p, causal, q, k, v)), (lambda: sdpa_kernel(backend))
    if kernel == FLASH_VARLEN:
        flash = torch.ops.aten._flash_attention_forward
        return (lambda q, k, v: flash(q, k, v, p.cu32, p.cu32, p.max_len, p.max_len, 0.0, causal, False)[0]), \
            contextlib.nullcontext
    varlen_func, why = flash_attn_4_varlen()
    if varlen_func is None:
        raise Skipped(why)
    return (lambda q, k, v: compare.fa4_output(varlen_func(q, k, v, cu_seqlens_q=p.cu32, cu_seqlens_k=p.cu32,
                                                             max_seqlen_q=p.max_len, max_seqlen_k=p.max_len,
                                                             causal=causal))), contextlib.nullcontext


@functools.lru_cache(maxsize=None)
def flash_attn_4_varlen():
    """FlashAttention-4's flash_attn_varlen_func, or None and why it cannot be had."""
    try:
        from flash_attn.cute import flash_attn_varlen_func
    except Exception as e:  # not installed, or its CUTLASS DSL failing to load
        return None, f"flash-attn-4 not importable ({type(e).__name__}: {str(e).strip()[:120]}): pip install flash-attn-4"
    return flash_attn_varlen_func, None


@functools.lru_cache(maxsize=None)
def cudnn_frontend():
    """nvidia-cudnn-frontend's module and a handle, or None and why."""
    try:
        import cudnn
        return (cudnn, cudnn.create_handle()), None
    except Exception as e:
        return None, f"nvidia-cudnn-frontend not usable ({type(e).__name__}: {str(e).strip()[:120]}): " \
                     "pip install nvidia-cudnn-frontend"


class CudnnRagged:
    """cuDNN's SDPA forward and backward graphs over a packed batch: each tensor (B, heads, S_max, D)
    in (B, S, heads, D) strides with a ragged offset (elements) per sequence, a padding mask from
    the sequence lengths; the softmax stats (B, heads, S_max, 1) fp32 between the two."""

    def __init__(self, torch, p, causal):
        (self.cudnn, self.handle), why = cudnn_frontend()
        if why:
            raise RuntimeError(why)
        s = p.shape
        self.p, self.causal, self.b, self.s_max = p, causal, len(p.lengths), p.max_len
        self.scale = 1.0 / math.sqrt(s["head_dim"])
        lengths = torch.tensor(p.lengths, dtype=torch.int32, device="cuda").view(-1, 1, 1, 1)
        self.device = {"seq_len": lengths, "q_offsets": (p.cu64 * s["heads"] * s["head_dim"]).view(-1, 1, 1, 1),
                       "kv_offsets": (p.cu64 * s["kv_heads"] * s["head_dim"]).view(-1, 1, 1, 1)}
        self.stats = torch.full((self.b, s["heads"], self.s_max, 1), float("nan"), device="cuda")

    def _graph(self):
        c = self.cudnn
        g = c.pygraph(io_data_type=c.data_type.BFLOAT16, intermediate_data_type=c.data_type.FLOAT,
                      compute_data_type=c.data_type.FLOAT, handle=self.handle)
        scalar = lambda name, n, kind: g.tensor(name=name, dim=[n, 1, 1, 1], stride=[1, 1, 1, 1], data_type=kind)
        t = {"seq_len": scalar("seq_len", self.b, c.data_type.INT32),
             "q_offsets": scalar("q_offsets", self.b + 1, c.data_type.INT64),
             "kv_offsets": scalar("kv_offsets", self.b + 1, c.data_type.INT64)}
        return g, t

    def _dims(self, heads):
        d = self.p.shape["head_dim"]
        return [self.b, heads, self.s_max, d], [self.s_max * heads * d, d, heads * d, 1]

    def _packed(self, g, t, name, heads, offsets):
        dim, stride = self._dims(heads)
        return g.tensor(name=name, dim=dim, stride=stride, data_type=self.cudnn.data_type.BFLOAT16,
                        ragged_offset=t[offsets])

    def _output(self, tensor, heads, t, offsets):
        dim, stride = self._dims(heads)
        tensor.set_output(True).set_dim(dim).set_stride(stride).set_ragged_offset(t[offsets])

    def _built(self, g):
        c = self.cudnn
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([c.heur_mode.A, c.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        return g

    def _masks(self, t):
        return dict(attn_scale=self.scale, use_causal_mask=self.causal, use_padding_mask=True,
                    seq_len_q=t["seq_len"], seq_len_kv=t["seq_len"])

    def forward(self, torch, o):
        """The forward's run, writing o and the stats."""
        s, p = self.p.shape, self.p
        g, t = self._graph()
        q, k, v = (self._packed(g, t, name, heads, offsets) for name, heads, offsets in
                   (("q", s["heads"], "q_offsets"), ("k", s["kv_heads"], "kv_offsets"),
                    ("v", s["kv_heads"], "kv_offsets")))
        out, stats = g.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=True, **self._masks(t))
        self._output(out, s["heads"], t, "q_offsets")
        stats.set_output(True).set_data_type(self.cudnn.data_type.FLOAT).set_dim(list(self.stats.shape)) \
            .set_stride(list(self.stats.stride()))
        bound = {q: p.q, k: p.k, v: p.v, out: o, stats: self.stats, **{t[n]: self.device[n] for n in t}}
        return self._runner(torch, self._built(g), bound)

    def backward(self, torch, o, grads):
        """The backward's run, from o and the forward's stats, writing grads (dq, dk, dv)."""
        s, p = self.p.shape, self.p
        g, t = self._graph()
        layout = {"q": (s["heads"], "q_offsets"), "k": (s["kv_heads"], "kv_offsets"),
                  "v": (s["kv_heads"], "kv_offsets"), "o": (s["heads"], "q_offsets"), "dO": (s["heads"], "q_offsets")}
        inputs = {name: self._packed(g, t, name, *layout[name]) for name in layout}
        stats = g.tensor(name="stats", dim=list(self.stats.shape), stride=list(self.stats.stride()),
                         data_type=self.cudnn.data_type.FLOAT)
        total = self.p.offsets[-1]
        aligned = -(-total // MAX_TOTAL_ALIGN) * MAX_TOTAL_ALIGN
        dq, dk, dv = g.sdpa_backward(name="sdpa_backward", q=inputs["q"], k=inputs["k"], v=inputs["v"],
                                     o=inputs["o"], dO=inputs["dO"], stats=stats, max_total_seq_len_q=aligned,
                                     max_total_seq_len_kv=aligned, **self._masks(t))
        for tensor, h, off in ((dq, s["heads"], "q_offsets"), (dk, s["kv_heads"], "kv_offsets"),
                               (dv, s["kv_heads"], "kv_offsets")):
            self._output(tensor, h, t, off)
        bound = {inputs["q"]: p.q, inputs["k"]: p.k, inputs["v"]: p.v, inputs["o"]: o, inputs["dO"]: p.d_o,
                 stats: self.stats, dq: grads[0], dk: grads[1], dv: grads[2], **{t[n]: self.device[n] for n in t}}
        return self._runner(torch, self._built(g), bound)

    def _runner(self, torch, g, bound):
        workspace = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)

        def run():
            self.cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)
            g.execute(bound, workspace, handle=self.handle)
        return run


def prepared_runs(compare, kernels, prepare):
    """prepare(kernel) -> (run, result, context or None) for each kernel: {kernel: run}, {kernel:
    result}, {kernel: why skipped} (Skipped, or a batch or GPU the kernel refused) and {kernel: the
    torch backend context its launches need}."""
    runs, results, skipped = {}, {}, {}
    contexts = {kernel: contextlib.nullcontext for kernel in kernels}
    for kernel in kernels:
        try:
            runs[kernel], results[kernel], context = prepare(kernel)
        except Skipped as e:
            skipped[kernel] = str(e)
            continue
        except Exception as e:  # a batch or GPU the kernel does not take
            skipped[kernel] = f"refused: {compare.first_line(e)}"
            continue
        contexts[kernel] = context or contexts[kernel]
    return runs, results, skipped, contexts


def the_dsls(prepared, kernel, what):
    """The DSL's prepared pass, or Skipped: `what` the mma-sync kernel lacks, or the wgmma kernel's refusal."""
    if kernel != "wgmma":
        raise Skipped(what)
    if prepared is None:
        raise Skipped("refused by the kernel (its reason is on stderr)")
    return prepared


def timed_unit(run_forward, run_backward, with_forward):
    """What a backward row times: the backward alone, or the forward and the backward."""
    return (lambda: (run_forward(), run_backward())) if with_forward else run_backward


def forward_runs(torch, compare, p, kernels, tk):
    """prepared_runs of the forward, each result (o, lse or None); and the DSL's releases."""
    causal, releases = p.shape["causal"], []

    def prepare(kernel):
        if kernel in compare.TK_KERNELS:
            run, o, lse, release = the_dsls(tk.prepare(torch, p, causal) if kernel == "wgmma" else None, kernel,
                                            "no packed batches: the varlen kernels are the wgmma ones")
            releases.append(release)
            run()
            return run, (o, lse), None
        if kernel == CUDNN_RAGGED:
            o = torch.full_like(p.q, float("nan"))
            run = CudnnRagged(torch, p, causal).forward(torch, o)
            run()
            return run, (o, None), None
        attend, context = autograd_peer(torch, compare, kernel, p, causal)
        with context():  # a peer that cannot take the batch refuses here
            o = attend(p.q, p.k, p.v)
        return (lambda: attend(p.q, p.k, p.v)), (o, None), context
    return (*prepared_runs(compare, kernels, prepare), releases)


def backward_runs(torch, compare, p, kernels, tk, with_forward):
    """As forward_runs for the backward (or forward and backward): each result (o, lse, grads)."""
    causal, releases = p.shape["causal"], []

    def prepare(kernel):
        if kernel in compare.TK_KERNELS:
            run_forward, run_backward, o, lse, grads, release = the_dsls(
                tk.prepare_backward(torch, compare, p, causal) if kernel == "wgmma" else None, kernel,
                "no backward: the backward is the wgmma kernels'")
            releases.append(release)
        elif kernel == CUDNN_RAGGED:
            ragged = CudnnRagged(torch, p, causal)
            o, lse = torch.full_like(p.q, float("nan")), None
            grads = [torch.full_like(t, float("nan")) for t in (p.q, p.k, p.v)]
            run_forward, run_backward = ragged.forward(torch, o), ragged.backward(torch, o, grads)
        else:
            attend, context = autograd_peer(torch, compare, kernel, p, causal)
            leaves = [t.detach().requires_grad_() for t in (p.q, p.k, p.v)]
            with context():  # a peer that cannot take the batch refuses here
                o, grads, run = compare.autograd_runs(torch, lambda: attend(*leaves), leaves, p.d_o, with_forward)
            return run, (o.detach(), None, grads), context
        run_forward()
        run_backward()
        return timed_unit(run_forward, run_backward, with_forward), (o, lse, grads), None
    return (*prepared_runs(compare, kernels, prepare), releases)


def measure(torch, compare, shape, kernels, args, session, clock, peak, tk, pass_):
    """Rows for every kernel on one packed batch and pass: same tensors, timed in turns, checked."""
    p = Packed(torch, shape, session.generator)
    work = compare.pass_flops(shape, pass_)
    with_forward = pass_ != "bwd"
    if pass_ == "fwd":
        runs, outputs, skipped, contexts, releases = forward_runs(torch, compare, p, kernels, tk)
        results = {kernel: (o, lse, None) for kernel, (o, lse) in outputs.items()}
    else:
        runs, results, skipped, contexts, releases = backward_runs(torch, compare, p, kernels, tk, pass_ == "fwd+bwd")
    torch.cuda.synchronize()
    if pass_ == "fwd":
        (want_o, want_lse), want_grads = packed_reference(torch, compare, p, shape["causal"]), None
    else:
        want_o, *want_grads = packed_reference_backward(torch, compare, p, shape["causal"])
        want_lse = packed_reference(torch, compare, p, shape["causal"])[1] if with_forward and tk else None
    rates, measured = compare.timed_in_turns(torch, runs, contexts, args, work, session.nvml, clock)
    energy = compare.energies(torch, runs, contexts, args, work, rates, session.nvml)
    rows = {kernel: compare.skipped_row(kernel, shape, why, pass_) for kernel, why in skipped.items()}
    for kernel, (o, lse, grads) in results.items():
        grad_errors = None if grads is None else {
            name: compare.rel_error(torch, g, want) for name, g, want in zip(("dQ", "dK", "dV"), grads, want_grads)}
        o_error = compare.rel_error(torch, o, want_o) if with_forward else None
        lse_error = (lse - want_lse).abs().max().item() if with_forward and lse is not None else None
        rows[kernel] = compare.measured_row(kernel, shape, rates[kernel], o_error, peak, measured[kernel], lse_error,
                                            pass_, grad_errors)
        compare.add_energy(rows[kernel], args, energy[kernel], work)
    for release in releases:
        release()
    return [rows[kernel] for kernel in kernels]
