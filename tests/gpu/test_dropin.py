#!/usr/bin/env python3
"""The installed tk_attention package on the GPU, against PyTorch's SDPA (ctest gpu.dropin).

Gradients and outputs against SDPA's math backend in fp32 (relative error <= 1e-2, and at most
1.5x the flash backend's error against the same reference, both printed), the layouts PyTorch hands
over read in place with the same bits as contiguous inputs, PyTorch's current stream, the incoming
gradient of out.sum() (stride 0), a bit-for-bit repeatable backward when asked for one, and every
refusal. Exits 77
(ctest: skipped) without torch, a CUDA device of compute capability 9.0, or the package.

usage: test_dropin.py [LIBRARY]   (default: the library the package carries; ctest gives the build's)
"""
import contextlib
import math
import sys

try:
    import tk_attention
except ImportError:
    tk_attention = None

MAX_REL_ERROR = 1e-2
# The e4m3 forward's bounds over O and for its worst row: P rounded to e4m3 for P V
# (kernels/attention/reference_fp8.hpp).
E4M3_MAX_REL_ERROR, E4M3_MAX_ROW_ERROR = 4e-2, 1e-1
E4M3_MAX = 448.0  # e4m3's largest finite magnitude
MAX_LSE_ERROR = 1e-2  # absolute, the forward's (probes/attention)
# "No worse than PyTorch's flash backward on the same inputs" (issue 15), up to the rounding noise two
# bf16 outputs of fp32 sums differ by: at most this multiple of flash's error, or below the floor
# where both errors are the bf16 rounding of the output itself (2^-8 relative, at most).
MAX_OVER_FLASH, ROUNDING_FLOOR = 1.5, 4e-3
# N = 1: dQ and dK are exactly 0 (one key: P = 1, dS = dP - D = 0); the kernels leave the rounding
# difference of two fp32 dot products (tests/gpu/test_attention_backward.cpp's bound).
MAX_ZERO_GRADIENT = 1e-3
# (batch, heads, kv_heads, seq, head_dim, causal): lengths that end mid-tile and a single row,
# GQA 4:1 and one key/value head, batch and heads not powers of two.
SHAPES = [(2, 8, 8, 1000, 64, True), (1, 4, 4, 4097, 128, False), (3, 8, 2, 100, 128, True),
          (2, 3, 1, 1, 64, False), (1, 6, 6, 2048, 128, True)]


def error(x, ref):
    """(relative error, its bound), or (largest magnitude, its bound) where the reference is 0."""
    ref_norm = ref.norm().item()
    if ref_norm == 0:
        return x.float().abs().max().item(), MAX_ZERO_GRADIENT
    return ((x.float() - ref).norm() / ref_norm).item(), MAX_REL_ERROR


def inputs(torch, shape, seed):
    b, h, kvh, n, d, _ = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    draw = lambda heads: torch.randn(b, heads, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    return draw(h), draw(kvh), draw(kvh), draw(h)  # q, k, v, dO


@contextlib.contextmanager
def deterministic():
    """The deterministic backward, for the checks that compare bits: by default the backward
    reduces dQ in fp32, with additions in no fixed order."""
    tk_attention.deterministic_backward = True
    try:
        yield
    finally:
        tk_attention.deterministic_backward = False


def run(torch, attend, q, k, v, d_o, causal, gqa):
    """O, dQ, dK, dV of `attend` on q, k, v made leaves where they lie (detach keeps the strides)."""
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = attend(*leaves, is_causal=causal, enable_gqa=gqa)
    return [out.detach(), *torch.autograd.grad(out, leaves, d_o)]


def test_matches_the_fp32_reference_as_well_as_flash(torch, F):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for i, shape in enumerate(SHAPES):
        q, k, v, d_o = inputs(torch, shape, seed=i)
        causal, gqa = shape[5], shape[1] != shape[2]
        with sdpa_kernel(SDPBackend.MATH):
            want = run(torch, F.scaled_dot_product_attention, q.float(), k.float(), v.float(), d_o.float(), causal, gqa)
        ours = run(torch, tk_attention.scaled_dot_product_attention, q, k, v, d_o, causal, gqa)
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                flash = run(torch, F.scaled_dot_product_attention, q, k, v, d_o, causal, gqa)
        except RuntimeError:  # flash refuses some shapes (GQA in older releases): no comparison then
            flash = None
        for j, name in enumerate(("O", "dQ", "dK", "dV")):
            err, bound = error(ours[j], want[j])
            flash_err = error(flash[j], want[j])[0] if flash else float("nan")
            print(f"  {shape} {name}: ours {err:.2e}, flash {flash_err:.2e} (bound {bound:.0e})")
            assert err <= bound, f"{shape} {name}: error {err:.3e} > {bound}"
            if flash and bound == MAX_REL_ERROR:
                assert err <= max(MAX_OVER_FLASH * flash_err, ROUNDING_FLOOR), \
                    f"{shape} {name}: {err:.3e}, over {MAX_OVER_FLASH}x flash's {flash_err:.3e}"


def attend_fp32(torch, q, k, v, causal):
    """SDPA in fp32 with the kernels' mask: causal at the bottom-right corner, and rows that see no
    key (more queries than keys) O = 0 with zero gradients, where SDPA's softmax would give NaN."""
    n, kn, group = q.shape[2], k.shape[2], q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    seen = torch.ones(n, kn, dtype=torch.bool, device=q.device)
    if causal:
        seen = seen.tril(diagonal=kn - n)
    has_key = seen.any(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(~(seen | ~has_key), float("-inf")), dim=-1) * has_key
    return p @ v


def test_fewer_or_more_keys_than_queries(torch, F):
    """Nq != Nk, the causal mask as causal_lower_right(Nq, Nk): O and gradients against fp32."""
    from torch.nn.attention.bias import causal_lower_right
    shapes = [(2, 8, 2, 100, 1000, 128), (1, 4, 4, 1000, 100, 64), (2, 4, 1, 1, 4097, 128), (1, 4, 4, 4097, 1, 64)]
    for i, (b, h, kvh, n, kn, d) in enumerate(shapes):
        g = torch.Generator(device="cuda").manual_seed(100 + i)
        draw = lambda heads, rows: torch.randn(b, heads, rows, d, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k, v, d_o = draw(h, n), draw(kvh, kn), draw(kvh, kn), draw(h, n)
        for causal in (False, True):
            mask = causal_lower_right(n, kn) if causal else None
            leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
            out = attend_fp32(torch, *leaves, causal)
            want = [out.detach(), *torch.autograd.grad(out, leaves, d_o.float())]
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            out = tk_attention.scaled_dot_product_attention(*leaves, attn_mask=mask, enable_gqa=h != kvh)
            ours = [out.detach(), *torch.autograd.grad(out, leaves, d_o)]
            for j, name in enumerate(("O", "dQ", "dK", "dV")):
                err, bound = error(ours[j], want[j])
                print(f"  {(b, h, kvh, n, kn, d)} causal={causal} {name}: {err:.2e} (bound {bound:.0e})")
                assert err <= bound, f"{(b, h, kvh, n, kn, d)} causal={causal} {name}: error {err:.3e} > {bound}"


def test_head_dims_96_and_256_forward_without_a_gradient(torch, F):
    """D = 96 and 256, the forward alone (no gradient asked): O against fp32 SDPA, causal and not,
    GQA, fewer keys than queries; inputs that require grad are refused (the backward takes 64, 128)."""
    from torch.nn.attention.bias import causal_lower_right
    for i, (b, h, kvh, n, kn, d) in enumerate([(2, 8, 2, 1000, 1000, 96), (1, 4, 4, 300, 4097, 256),
                                               (2, 4, 1, 1000, 100, 256)]):
        g = torch.Generator(device="cuda").manual_seed(200 + i)
        draw = lambda heads, rows: torch.randn(b, heads, rows, d, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k, v = draw(h, n), draw(kvh, kn), draw(kvh, kn)
        for causal in (False, True):
            mask = causal_lower_right(n, kn) if causal else None
            with torch.no_grad():
                ours = tk_attention.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=h != kvh)
            err, bound = error(ours, attend_fp32(torch, q.float(), k.float(), v.float(), causal))
            print(f"  {(b, h, kvh, n, kn, d)} causal={causal} O: {err:.2e} (bound {bound:.0e})")
            assert err <= bound, f"{(b, h, kvh, n, kn, d)} causal={causal}: error {err:.3e} > {bound}"


def test_packed_batches_match_each_sequence_alone(torch, F):
    """varlen_attention (flash_attn_varlen_func's signature): O and the gradients of a packed batch
    (sequences of 0, 1 and uneven lengths, GQA, other key counts) against attend_fp32 on each
    sequence alone, causal and not, on both dQ paths; its refusals."""
    cases = [([1, 300, 1000, 7, 0, 129], None), ([5, 300, 0, 1000, 1, 129], [0, 1000, 7, 300, 2049, 1])]
    for i, (lengths_q, lengths_k) in enumerate(cases):
        lengths_k = lengths_k or lengths_q
        h, kvh, d = 8, 2, 128 if i == 0 else 64
        g = torch.Generator(device="cuda").manual_seed(200 + i)
        draw = lambda heads, rows: torch.randn(rows, heads, d, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k, v, d_o = draw(h, sum(lengths_q)), draw(kvh, sum(lengths_k)), draw(kvh, sum(lengths_k)), \
            draw(h, sum(lengths_q))
        offsets = lambda lengths: torch.tensor([0] + lengths, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
        cu_q, cu_k = offsets(lengths_q), offsets(lengths_k)
        for causal in (False, True):
            leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
            pieces = []
            for b in range(len(lengths_q)):  # each sequence alone, as (1, H, N, D)
                rows = lambda t, cu: t[cu[b]:cu[b + 1]].transpose(0, 1).unsqueeze(0)
                pieces.append(attend_fp32(torch, rows(leaves[0], cu_q), rows(leaves[1], cu_k), rows(leaves[2], cu_k),
                                          causal)[0].transpose(0, 1))
            out = torch.cat(pieces)
            want = [out.detach(), *torch.autograd.grad(out, leaves, d_o.float(), allow_unused=True)]
            want = [w if w is not None else torch.zeros_like(x) for w, x in zip(want, (out, *leaves))]
            for deterministic in (False, True):
                tk_attention.deterministic_backward = deterministic
                try:
                    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                    out = tk_attention.varlen_attention(*leaves, cu_q, cu_k, max(lengths_q), max(lengths_k),
                                                        causal=causal)
                    ours = [out.detach(), *torch.autograd.grad(out, leaves, d_o)]
                finally:
                    tk_attention.deterministic_backward = False
                for j, name in enumerate(("O", "dQ", "dK", "dV")):
                    err, bound = error(ours[j], want[j])
                    print(f"  packed {lengths_q}/{lengths_k} causal={causal} deterministic={deterministic} "
                          f"{name}: {err:.2e} (bound {bound:.0e})")
                    assert err <= bound, f"packed causal={causal} {name}: error {err:.3e} > {bound}"
    q = torch.zeros(10, 2, 64, device="cuda", dtype=torch.bfloat16)
    cu = torch.tensor([0, 4, 10], device="cuda", dtype=torch.int32)
    expect_refused({"int64 offsets": lambda: tk_attention.varlen_attention(q, q, q, cu.long(), cu, 6, 6),
                    "max_seqlen": lambda: tk_attention.varlen_attention(q, q, q, cu, cu, 5, 6),
                    "last offset": lambda: tk_attention.varlen_attention(q[:9], q, q, cu, cu, 6, 6)},
                   "cu_seqlens_q and cu_seqlens_k int32")


def test_varlen_plan_replays_in_a_cuda_graph(torch, F):
    """VarlenPlan: a packed batch's forward and backward captured in a CUDA graph, then replayed on
    new inputs copied into the plan's tensors: O and the gradients equal varlen_attention's on those
    inputs, bit for bit on the deterministic path; a plan without d_o has no backward."""
    lengths = [1, 300, 0, 1000, 129]
    h, kvh, d, total = 8, 2, 128, sum(lengths)
    g = torch.Generator(device="cuda").manual_seed(300)
    draw = lambda heads: torch.randn(total, heads, d, device="cuda", dtype=torch.bfloat16, generator=g)
    q, k, v, d_o = draw(h), draw(kvh), draw(kvh), draw(h)
    cu = torch.tensor([0] + lengths, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
    plan = tk_attention.VarlenPlan(q, k, v, cu, cu, max(lengths), max(lengths), causal=True, d_o=d_o,
                                   deterministic=True)
    plan.forward()  # outside capture first: a graph's first replay must not be the kernels' first launch
    plan.backward()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.forward()
        plan.backward()
    fresh = [draw(h), draw(kvh), draw(kvh), draw(h)]
    for static, new in zip((q, k, v, d_o), fresh):
        static.copy_(new)
    for t in (plan.out, plan.dq, plan.dk, plan.dv):
        t.fill_(float("nan"))  # poisoned: the replay must write every element
    graph.replay()
    torch.cuda.synchronize()
    tk_attention.deterministic_backward = True
    try:
        leaves = [t.detach().requires_grad_() for t in fresh[:3]]
        out = tk_attention.varlen_attention(*leaves, cu, cu, max(lengths), max(lengths), causal=True)
        want = [out.detach(), *torch.autograd.grad(out, leaves, fresh[3])]
    finally:
        tk_attention.deterministic_backward = False
    for name, got, w in zip(("O", "dQ", "dK", "dV"), (plan.out, plan.dq, plan.dk, plan.dv), want):
        assert torch.equal(got, w), f"{name}: the replayed plan differs from varlen_attention on the same inputs"
    forward_only = tk_attention.VarlenPlan(q, k, v, cu, cu, max(lengths), max(lengths))
    expect_refused({"backward without d_o": forward_only.backward,
                    "d_o of another shape": lambda: tk_attention.VarlenPlan(q, k, v, cu, cu, max(lengths),
                                                                            max(lengths), d_o=d_o[:-1]),
                    "d_o with a strided head dim": lambda: tk_attention.VarlenPlan(
                        q, k, v, cu, cu, max(lengths), max(lengths), d_o=torch.cat([d_o, d_o], -1)[..., ::2]),
                    "head dim 256 with d_o": lambda: tk_attention.VarlenPlan(
                        *(torch.cat([t, t], -1) for t in (q, k, v)), cu, cu, max(lengths), max(lengths),
                        d_o=torch.cat([d_o, d_o], -1))},
                   "tk_attention: ")
    forward_only.close()
    plan.close()


def scattered_pages(torch, lengths, page, seed):
    """(block table on the GPU, each sequence's pages, the pool's pages): each sequence's pages drawn
    in random order from a pool twice the size they need, so no sequence's pages lie in order."""
    widths = [-(-n // page) for n in lengths]
    pool = 2 * sum(widths) + 1
    order = torch.randperm(pool, generator=torch.Generator().manual_seed(seed)).tolist()
    table = torch.zeros(len(lengths), max(widths), dtype=torch.int32)
    for b, w in enumerate(widths):
        table[b, :w] = torch.tensor(order[sum(widths[:b]):sum(widths[:b]) + w], dtype=torch.int32)
    return table.cuda(), widths, pool


def check_decode_step(torch, what, out, lse, q, caches, table, widths, lengths, causal):
    """Each sequence's O against fp32 attention on its keys gathered from `caches` (the values of K
    and V, (pages, page_size, Hkv, D)); an empty sequence O = 0 and LSE = inf."""
    page = caches[0].shape[1]
    for b, n in enumerate(lengths):
        if n == 0:
            assert bool((out[b] == 0).all()) and bool((lse[b] == float("inf")).all()), "an empty cache: O 0, LSE inf"
            continue
        rows = (table[b, :widths[b]].long()[:, None] * page + torch.arange(page, device="cuda")).flatten()[:n]
        k, v = (c.flatten(0, 1)[rows].transpose(0, 1)[None].float() for c in caches)
        want = attend_fp32(torch, q[b].transpose(0, 1)[None].float(), k, v, causal)[0].transpose(0, 1)
        err, bound = error(out[b], want)
        print(f"  decode {what} tokens={q.shape[1]} causal={causal} keys={n}: O {err:.2e} (bound {bound:.0e})")
        assert err <= bound, f"decode {what} keys={n} tokens={q.shape[1]}: error {err:.3e} > {bound}"


def replays_to_the_same_bits(torch, out, step):
    """The decode `step` captured in a CUDA graph replays to `out`, its eager result."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed, _ = step()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(replayed, out), "the replayed decode step differs from the eager one"


def test_decode_over_a_paged_cache(torch, F):
    """tk_attention.decode: each sequence's new tokens against its pages, scattered over the pool in
    random order, O and LSE against fp32 attention on the cache gathered per sequence (causal among
    the new tokens at the bottom-right), and the same step captured in a CUDA graph replays to the
    same bits."""
    g = torch.Generator(device="cuda").manual_seed(400)
    lengths, page, h, kvh, d = [1, 300, 0, 4097, 64], 16, 32, 8, 128
    for tokens, causal in ((1, False), (4, True)):
        table, widths, pool = scattered_pages(torch, lengths, page, seed=tokens)
        q = torch.randn(len(lengths), tokens, h, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k_cache, v_cache = (torch.randn(pool, page, kvh, d, device="cuda", dtype=torch.bfloat16, generator=g)
                            for _ in range(2))
        seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        out, lse = tk_attention.decode(q, k_cache, v_cache, table, seqlens, causal=causal)
        check_decode_step(torch, "bf16", out, lse, q, (k_cache, v_cache), table, widths, lengths, causal)
        replays_to_the_same_bits(torch, out, lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens,
                                                                         causal=causal))
    expect_refused({"int64 table": lambda: tk_attention.decode(q, k_cache, v_cache, table.long(), seqlens),
                    "head dim 96": lambda: tk_attention.decode(q[..., :96].contiguous(), k_cache[..., :96].contiguous(),
                                                               v_cache[..., :96].contiguous(), table, seqlens)},
                   "block_table (B, pages_per_seq)")


def test_decode_over_an_e4m3_cache(torch, F):
    """tk_attention.decode on a float8_e4m3fn cache with a float32 scale per kv head for K and for V
    (powers of two that differ between heads and between K and V, and one that is none): O against
    fp32 attention on the dequantized cache (entry x its head's scale), pages scattered, causal and
    not, one and several tokens, head dims 128 and 64; a CUDA graph replays the step to the same
    bits; scales missing, misshapen or elsewhere, or with a bf16 cache, are refused."""
    g = torch.Generator(device="cuda").manual_seed(500)
    lengths, page, h, kvh = [1, 300, 0, 4097, 64], 16, 32, 8
    k_scale = 2.0 ** torch.tensor([-3, -2, -1, 0, 1, -2, -3, -1], device="cuda")
    v_scale = 2.0 ** torch.tensor([1, 0, -1, -2, -3, 0, -1, -2], device="cuda")
    k_scale[6] = 0.3  # no power of two, so scaling rounds: a scale applied in too low a precision shows
    for tokens, causal, d in ((1, False, 128), (4, True, 128), (4, False, 64), (3, True, 64)):
        table, widths, pool = scattered_pages(torch, lengths, page, seed=10 + tokens)
        q = torch.randn(len(lengths), tokens, h, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k_cache, v_cache = ((torch.randn(pool, page, kvh, d, device="cuda", generator=g) / s[:, None]
                             ).to(torch.float8_e4m3fn) for s in (k_scale, v_scale))
        seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        step = lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens, causal=causal, k_scale=k_scale,
                                           v_scale=v_scale)
        out, lse = step()
        dequantized = tuple(c.float() * s[None, None, :, None] for c, s in ((k_cache, k_scale), (v_cache, v_scale)))
        # The bf16 cache's bound: fp16 holds e4m3 entries exactly and these bf16 queries all but exactly,
        # and rounds P to 11 bits where bf16 rounds to 8, so the fp16 products add no larger error.
        check_decode_step(torch, "e4m3", out, lse, q, dequantized, table, widths, lengths, causal)
        replays_to_the_same_bits(torch, out, step)
    expect_refused({"no scales": lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens),
                    "no v_scale": lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens, k_scale=k_scale),
                    "a bf16 scale": lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens,
                                                                k_scale=k_scale.bfloat16(), v_scale=v_scale),
                    "a scale per query head": lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens,
                                                                          k_scale=k_scale.repeat(4), v_scale=v_scale),
                    "a scale on the host": lambda: tk_attention.decode(q, k_cache, v_cache, table, seqlens,
                                                                       k_scale=k_scale, v_scale=v_scale.cpu()),
                    "a bf16 cache with scales": lambda: tk_attention.decode(q, k_cache.bfloat16(), v_cache.bfloat16(),
                                                                            table, seqlens, k_scale=k_scale,
                                                                            v_scale=v_scale),
                    "k e4m3, v bf16": lambda: tk_attention.decode(q, k_cache, v_cache.bfloat16(), table, seqlens,
                                                                  k_scale=k_scale, v_scale=v_scale)},
                   "block_table (B, pages_per_seq)")


def quantized_e4m3(torch, x):
    """x as e4m3 under one power-of-two scale that keeps its largest magnitude within e4m3's, and
    that scale: a stored value y stands for y x scale."""
    scale = 2.0 ** math.ceil(math.log2(x.abs().max().item() / E4M3_MAX))
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


def test_e4m3_forward_through_the_c_interface(torch, F):
    """tk_attention_fp8_create and _launch (the e4m3 forward as scripts time it) on e4m3 Q, K and V
    with a scale each: O (poisoned first) against fp32 attention on the dequantized inputs, over
    the tensor and row by row, and LSE; a length off the tile, causal and not, GQA 4:1."""
    lib = tk_attention.library.loaded()
    for b, h, kvh, n, causal in ((2, 4, 4, 1000, False), (1, 8, 2, 1000, True), (2, 4, 4, 63, True)):
        q, k, v, _ = inputs(torch, (b, h, kvh, n, 128, causal), seed=600 + n + causal)
        (q8, q_scale), (k8, k_scale), (v8, v_scale) = (quantized_e4m3(torch, t) for t in (q, k, v))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((b, h, n), float("nan"), device="cuda")
        forward = lib.tk_attention_fp8_create(q8.data_ptr(), k8.data_ptr(), v8.data_ptr(), q_scale, k_scale, v_scale,
                                              o.data_ptr(), lse.data_ptr(), b, h, kvh, n, 128, int(causal))
        assert forward, "tk_attention_fp8_create refused the shape (its reason is on stderr)"
        try:
            assert lib.tk_attention_fp8_launch(forward, torch.cuda.current_stream().cuda_stream) == 0
            torch.cuda.synchronize()
        finally:
            lib.tk_attention_fp8_destroy(forward)
        q, k, v = (t8.float() * scale for t8, scale in ((q8, q_scale), (k8, k_scale), (v8, v_scale)))
        want = attend_fp32(torch, q, k, v, causal)
        err = ((o.float() - want).norm() / want.norm()).item()
        worst_row = ((o.float() - want).norm(dim=-1) / want.norm(dim=-1)).max().item()
        group = h // kvh
        scores = q @ k.repeat_interleave(group, dim=1).transpose(-1, -2) / math.sqrt(128)
        if causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
        lse_error = (lse - scores.logsumexp(-1)).abs().max().item()
        print(f"  e4m3 B={b} H={h}/{kvh} N={n} causal={causal}: O {err:.2e}, worst row {worst_row:.2e}, "
              f"LSE {lse_error:.2e}")
        assert err < E4M3_MAX_REL_ERROR and worst_row < E4M3_MAX_ROW_ERROR and lse_error < MAX_LSE_ERROR, \
            f"e4m3 B={b} N={n} causal={causal}: O {err:.3e}, worst row {worst_row:.3e}, LSE {lse_error:.3e}"


def test_projection_layouts_are_read_in_place(torch, F):
    """q, k, v as x @ W viewed (B, N, H, D) and transposed, and as slices of one fused QKV: the same
    bits as the same values contiguous, and O laid out as q (empty_like keeps a dense layout)."""
    b, h, n, d = 2, 4, 1000, 128
    g = torch.Generator(device="cuda").manual_seed(7)
    qkv = torch.randn(b, n, 3, h, d, device="cuda", dtype=torch.bfloat16, generator=g)
    d_o = torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    fused = [qkv[:, :, i].transpose(1, 2) for i in range(3)]  # rows 3 H D apart
    separate = [t.contiguous().transpose(1, 2) for t in qkv.unbind(2)]  # each (B, N, H, D) contiguous
    dense = [t.contiguous() for t in fused]
    assert fused[0].stride() == (n * 3 * h * d, d, 3 * h * d, 1) and separate[0].stride() == (n * h * d, d, h * d, 1)
    with deterministic():
        want = run(torch, tk_attention.scaled_dot_product_attention, *dense, d_o, True, False)
        runs = [(layout, run(torch, tk_attention.scaled_dot_product_attention, *tensors, d_o, True, False))
                for layout, tensors in (("fused QKV", fused), ("(B, N, H, D)", separate))]
    for layout, got in runs:
        for name, x, y in zip(("O", "dQ", "dK", "dV"), got, want):
            assert torch.equal(x, y), f"{layout}: {name} differs from the contiguous run's"
    out = tk_attention.scaled_dot_product_attention(*separate, is_causal=True)
    assert out.stride() == separate[0].stride(), f"O strides {out.stride()}: not q's"


def test_runs_on_the_current_stream(torch, F):
    """On a side stream, the inputs are written after a long sleep: a launch anywhere but PyTorch's
    current stream would read them before they are there."""
    q, k, v, d_o = inputs(torch, (2, 4, 4, 4097, 64, True), seed=11)
    with deterministic():
        want = run(torch, tk_attention.scaled_dot_product_attention, q, k, v, d_o, True, False)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), deterministic():
        torch.cuda._sleep(50_000_000)  # ~25 ms
        late = [t.clone() for t in (q, k, v, d_o)]
        got = run(torch, tk_attention.scaled_dot_product_attention, *late, True, False)
    torch.cuda.current_stream().wait_stream(side)
    for name, x, y in zip(("O", "dQ", "dK", "dV"), got, want):
        assert torch.equal(x, y), f"on a side stream: {name} differs"


def test_takes_the_gradient_of_a_sum_and_repeats_bit_for_bit(torch, F):
    """At a shape whose default backward reduces dQ (D = 128, N = 2048): asked for the deterministic
    one, two runs give the same bits."""
    q, k, v, _ = inputs(torch, (2, 8, 2, 2048, 128, False), seed=13)
    grads = []
    with deterministic():
        for _ in range(2):
            leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
            tk_attention.scaled_dot_product_attention(*leaves, enable_gqa=True).sum().backward()  # dO: stride 0
            grads.append([t.grad for t in leaves])
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
        F.scaled_dot_product_attention(*leaves, enable_gqa=True).sum().backward()
    for name, x, y, ref in zip(("dQ", "dK", "dV"), grads[0], grads[1], leaves):
        assert torch.equal(x, y), f"{name}: two runs differ"
        err, bound = error(x, ref.grad)
        assert err <= bound, f"{name} of a sum: error {err:.3e} > {bound}"


def test_refusals_name_what_is_supported(torch, F):
    q, k, v, _ = inputs(torch, (1, 2, 2, 64, 64, False), seed=17)
    bad_calls = {
        "fp16": lambda: tk_attention.scaled_dot_product_attention(q.half(), k.half(), v.half()),
        "attn_mask": lambda: tk_attention.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(64, 64,
                                                                                                      dtype=torch.bool,
                                                                                                      device="cuda")),
        "dropout": lambda: tk_attention.scaled_dot_product_attention(q, k, v, dropout_p=0.1),
        "scale": lambda: tk_attention.scaled_dot_product_attention(q, k, v, scale=1.0),
        "head dim 80": lambda: tk_attention.scaled_dot_product_attention(*(t[..., :80] for t in inputs(
            torch, (1, 2, 2, 64, 128, False), seed=1)[:3])),
        "head dim 256 with a gradient": lambda: tk_attention.scaled_dot_product_attention(*(
            t.requires_grad_() for t in inputs(torch, (1, 2, 2, 64, 256, False), seed=2)[:3])),
        "cpu": lambda: tk_attention.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu()),
        "mismatched": lambda: tk_attention.scaled_dot_product_attention(q, k[:, :, :32], v[:, :48]),
        "is_causal, two lengths": lambda: tk_attention.scaled_dot_product_attention(q, k[:, :, :32], v[:, :, :32],
                                                                                    is_causal=True),
        "strided head dim": lambda: tk_attention.scaled_dot_product_attention(
            *(torch.cat([t, t], -1)[..., ::2] for t in (q, k, v))),
    }
    expect_refused(bad_calls, "supported: bf16 CUDA tensors")


def expect_refused(calls, supported):
    """Each of `calls` (what -> call) raises Unsupported saying what is supported."""
    for what, call in calls.items():
        try:
            call()
        except tk_attention.Unsupported as e:
            assert supported in str(e), f"{what}: {e}"
            continue
        raise AssertionError(f"{what}: accepted")


def ready(script):
    """torch, where there are torch, a device of compute capability 9.0 and the installed package;
    else `script` exits 77 (ctest: skipped) saying which is missing."""
    def skip(why):
        print(f"{script}: skipped: {why}")
        sys.exit(77)
    try:
        import torch
    except ImportError:
        skip("no torch")
    if not torch.cuda.is_available():
        skip("no CUDA device")
    if torch.cuda.get_device_capability() != (9, 0):
        skip(f"the kernels need sm_90a; this is compute capability {torch.cuda.get_device_capability()}")
    if tk_attention is None:
        skip(f"tk_attention is not installed for {sys.executable}: pip install . in a checkout (python/README.md)")
    return torch


def run_tests(tests, torch):
    """Runs every test_* of `tests` (a module's globals), each failure (an exception) printed; the exit code."""
    import torch.nn.functional as F
    failed = 0
    for name, test in [(n, t) for n, t in tests.items() if n.startswith("test_")]:
        try:
            test(torch, F)
            print(f"PASSED {name}")
        except Exception as e:  # noqa: BLE001 (every test runs; each failure is reported)
            failed += 1
            print(f"FAILED {name}: {type(e).__name__}: {e}")
    return 1 if failed else 0


def main():
    torch = ready("test_dropin.py")
    tk_attention.load(sys.argv[1] if len(sys.argv) > 1 else None)
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is fp32, not TF32
    return run_tests(globals(), torch)


if __name__ == "__main__":
    sys.exit(main())
