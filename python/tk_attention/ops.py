"""The forward and backward as PyTorch custom operators, tk_attention::forward and
tk_attention::backward (torch.library), with fake implementations and autograd registered, so that
torch.compile(fullgraph=True) traces them as single nodes and a CUDA graph captures them: the
outputs and the backward's scratch come from PyTorch's allocator, launches go on PyTorch's current
stream, and nothing waits for the GPU. A fake implementation makes its outputs as the real one does
(empty_like keeps q's layout where q is dense), so both agree in strides.
"""
import ctypes
import functools
from typing import Optional

import torch

from . import library
from .checks import (Offsets, Tensor, Unsupported, check_call, check_decode_call, check_varlen_call, packed_tma_refusal,
                     tma_refusal)


def describe(name, tensor, address=False):
    """The Tensor description of a torch.Tensor; its address only where asked (a traced tensor has none)."""
    return Tensor(name, tuple(tensor.shape), tuple(tensor.stride()), str(tensor.dtype).replace("torch.", ""),
                  str(tensor.device), tensor.data_ptr() if address else None)


def _problem(q, k, v, causal, address=False):
    """The Problem of an operator call: `causal` is the kernels' mask (the bottom-right corner where
    the lengths differ), which the drop-in resolved from SDPA's arguments."""
    return check_call(describe("q", q, address), describe("k", k, address), describe("v", v, address),
                      enable_gqa=True)._replace(causal=causal)


def _shape_args(p):
    return p.batch, p.heads, p.kv_heads, p.seq, p.seq_k, p.head_dim, int(p.causal)


def _strides(tensors):
    flat = [s for t in tensors for s in t.stride()]
    return (ctypes.c_int64 * len(flat))(*flat)


def prepared(create, launch, destroy, *args):
    """library.launcher of create(*args), or Unsupported where the library refused the call."""
    made = library.launcher(create(*args), launch, destroy)
    if made is None:
        raise Unsupported(f"tk_attention: {create.__name__} refused the call (its reason is on stderr)")
    return made


def _run(create, launch, destroy, device, *args):
    """Prepares a pass on `device`, launches it on PyTorch's current stream and frees the host-side
    object (the launch holds copies of everything it needs)."""
    with torch.cuda.device(device):
        launch_on, release = prepared(create, launch, destroy, *args)
        try:
            launch_on(torch.cuda.current_stream().cuda_stream)
        finally:
            release()


def _forward_outputs(q, p):
    return torch.empty_like(q), q.new_empty((p.batch, p.heads, p.seq), dtype=torch.float32)


@torch.library.custom_op("tk_attention::forward", mutates_args=())
def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
            deterministic_backward: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """O (laid out as q where q is dense, else contiguous) and the row logsumexp, float (B, H, N).
    deterministic_backward is the backward's: an argument of the forward, so that a compiled graph
    holds the choice made when it was traced (and torch.compile guards on it)."""
    p = _problem(q, k, v, causal, address=True)
    o, lse = _forward_outputs(q, p)
    lib = library.loaded()
    _run(lib.tk_attention_create_strided, lib.tk_attention_launch, lib.tk_attention_destroy,
         q.device, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), *_shape_args(p), 0,
         _strides((q, k, v, o)))
    return o, lse


@forward.register_fake
def _(q, k, v, causal, deterministic_backward):
    return _forward_outputs(q, _problem(q, k, v, causal))


@torch.library.custom_op("tk_attention::backward", mutates_args=())
def backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
             d_o: torch.Tensor, causal: bool, deterministic: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv, each laid out as its input where that is dense. The backward takes the dQ path
    attention::dq_path picks for the shape, or with `deterministic` the deterministic one (the same
    bits every run). The one copy: an incoming gradient the TMA cannot read (out.sum()'s, stride 0)."""
    p = _problem(q, k, v, causal, address=True)
    if tma_refusal(describe("grad", d_o, address=True)):
        d_o = d_o.contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    lib = library.loaded()
    dq_path = library.DQ_PATHS["deterministic" if deterministic else "fastest"]
    # The scratch from PyTorch's allocator, ordered on this stream: no cudaMalloc/cudaFree per step.
    scratch = torch.empty(lib.tk_attention_backward_scratch_bytes_opts(*_shape_args(p), dq_path), dtype=torch.uint8,
                          device=q.device)
    _run(lib.tk_attention_backward_create_opts, lib.tk_attention_backward_launch, lib.tk_attention_backward_destroy,
         q.device, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
         d_o.data_ptr(), lse.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), *_shape_args(p),
         _strides((q, k, v, o, d_o, dq, dk, dv)), scratch.data_ptr(), dq_path)
    return dq, dk, dv


@backward.register_fake
def _(q, k, v, o, lse, d_o, causal, deterministic):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _save_for_backward(ctx, inputs, output):
    q, k, v, causal, deterministic = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.deterministic = causal, deterministic
    ctx.mark_non_differentiable(lse)


def _gradients(ctx, d_o, _):
    q, k, v, o, lse = ctx.saved_tensors
    return (*backward(q, k, v, o, lse, d_o, ctx.causal, ctx.deterministic), None, None)


forward.register_autograd(_gradients, setup_context=_save_for_backward)


def attention(q, k, v, causal, deterministic_backward):
    """O of the forward operator: what the drop-in returns."""
    return forward(q, k, v, causal, deterministic_backward)[0]


# ---- packed batches: tk_attention::varlen_forward and ::varlen_backward ----
# The offsets are host data to the kernels (kernels/attention/varlen.hpp: each sequence's tensor maps
# and work items are made once a call), so each call reads cu_seqlens back from the GPU: eager and
# torch.compile take these operators, a CUDA graph cannot capture them.

def _offsets(name, cu, read=False):
    """The Offsets description of a cu_seqlens tensor, its values where asked (a host copy: a sync)."""
    return Offsets(name, tuple(cu.shape), str(cu.dtype).replace("torch.", ""), str(cu.device),
                   cu.tolist() if read else None)


def varlen_problem(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale=None, read=False, needs_gradient=False):
    """The VarlenProblem of a call; `read`: with the addresses and offsets' values (a sync)."""
    return check_varlen_call(describe("q", q, read), describe("k", k, read), describe("v", v, read),
                             _offsets("cu_seqlens_q", cu_q, read), _offsets("cu_seqlens_k", cu_k, read), max_q, max_k,
                             causal, scale, needs_gradient)


def needs_gradient(*tensors):
    """Whether autograd will ask for these inputs' gradient."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def varlen_args(p):
    """The C interface's offsets and shape arguments for VarlenProblem p."""
    batch = len(p.cu_seqlens_q) - 1
    host = lambda values: (ctypes.c_int * len(values))(*values)
    return host(p.cu_seqlens_q), host(p.cu_seqlens_k), batch, p.heads, p.kv_heads, p.head_dim, int(p.causal)


def packed_strides(tensors):
    """{row, head} in elements per packed (total, heads, D) tensor."""
    flat = [s for t in tensors for s in t.stride()[:2]]
    return (ctypes.c_int64 * len(flat))(*flat)


def varlen_lse(q):
    return q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)  # [heads][total_q]


@torch.library.custom_op("tk_attention::varlen_forward", mutates_args=())
def varlen_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                   cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool,
                   deterministic_backward: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """O (laid out as q where q is dense) and the row logsumexp, float [heads][total_q]."""
    p = varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, read=True)
    o, lse = torch.empty_like(q), varlen_lse(q)
    lib = library.loaded()
    offsets_q, offsets_k, *shape = varlen_args(p)
    _run(lib.tk_attention_varlen_create, lib.tk_attention_varlen_launch, lib.tk_attention_varlen_destroy,
         q.device, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
         lse.data_ptr(), offsets_q, offsets_k, *shape, packed_strides((q, k, v, o)))
    return o, lse


@varlen_forward.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, deterministic_backward):
    varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal)
    return torch.empty_like(q), varlen_lse(q)


@torch.library.custom_op("tk_attention::varlen_backward", mutates_args=())
def varlen_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
                    d_o: torch.Tensor, cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                    max_seqlen_k: int, causal: bool,
                    deterministic: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv, each laid out as its input where that is dense, on the dQ path as backward's."""
    p = varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, read=True)
    if packed_tma_refusal(describe("grad", d_o, address=True)):
        d_o = d_o.contiguous()  # out.sum()'s gradient, stride 0: the one copy
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    lib = library.loaded()
    dq_path = library.DQ_PATHS["deterministic" if deterministic else "fastest"]
    offsets_q, offsets_k, *shape = varlen_args(p)
    scratch = torch.empty(lib.tk_attention_varlen_backward_scratch_bytes(offsets_q, offsets_k, *shape, dq_path),
                          dtype=torch.uint8, device=q.device)
    _run(lib.tk_attention_varlen_backward_create, lib.tk_attention_varlen_backward_launch,
         lib.tk_attention_varlen_backward_destroy, q.device, q.data_ptr(),
         k.data_ptr(), v.data_ptr(), o.data_ptr(), d_o.data_ptr(), lse.data_ptr(), dq.data_ptr(), dk.data_ptr(),
         dv.data_ptr(), offsets_q, offsets_k, *shape, packed_strides((q, k, v, o, d_o, dq, dk, dv)),
         scratch.data_ptr(), dq_path)
    return dq, dk, dv


@varlen_backward.register_fake
def _(q, k, v, o, lse, d_o, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, deterministic):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _save_varlen(ctx, inputs, output):
    q, k, v, cu_q, cu_k, max_q, max_k, causal, deterministic = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k)
    ctx.lengths, ctx.causal, ctx.deterministic = (max_q, max_k), causal, deterministic
    ctx.mark_non_differentiable(lse)


def _varlen_gradients(ctx, d_o, _):
    q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
    grads = varlen_backward(q, k, v, o, lse, d_o, cu_q, cu_k, *ctx.lengths, ctx.causal, ctx.deterministic)
    return (*grads, None, None, None, None, None, None)


varlen_forward.register_autograd(_varlen_gradients, setup_context=_save_varlen)


def decode_problem(q, k_cache, v_cache, block_table, cache_seqlens, causal, max_seqlen_k, k_scale=None, v_scale=None,
                   address=False):
    """The DecodeProblem of a call; k_scale and v_scale an e4m3 cache's (None for bf16 caches)."""
    names = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "k_scale", "v_scale")
    tensors = (q, k_cache, v_cache, block_table, cache_seqlens, k_scale, v_scale)
    given = [None if t is None else describe(n, t, address) for n, t in zip(names, tensors)]
    return check_decode_call(*given[:5], causal, max_seqlen_k or None, *given[5:])


@functools.lru_cache(maxsize=256)
def _decode_splits(device, shape):
    """The splits the library's rule gives `shape` (the cache's dtype its last entry) on `device`:
    asked once (an occupancy query), not at every step of a serving loop."""
    with torch.cuda.device(device):
        splits = library.loaded().tk_attention_decode_splits(*shape, 0)
    if splits == 0:
        raise Unsupported("tk_attention: tk_attention_decode_splits refused the call")
    return splits


def _decode_lse(q):
    return q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)  # [B][H][T]


def _address(t):
    return None if t is None else t.data_ptr()  # None: a null pointer


@torch.library.custom_op("tk_attention::decode", mutates_args=())
def decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
           cache_seqlens: torch.Tensor, causal: bool, max_seqlen_k: int, k_scale: Optional[torch.Tensor],
           v_scale: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, T, H, D) and the row logsumexp, float (B, H, T); the split's scratch from PyTorch's
    allocator, so a CUDA graph captures the step. k_scale, v_scale: an e4m3 cache's, else None."""
    p = decode_problem(q, k_cache, v_cache, block_table, cache_seqlens, causal, max_seqlen_k, k_scale, v_scale,
                       address=True)
    o, lse = torch.empty_like(q), _decode_lse(q)
    lib = library.loaded()
    shape = (p.batch, p.q_tokens, p.heads, p.kv_heads, p.head_dim, p.page_size, p.pages_per_seq, p.pages,
             int(p.causal), p.max_keys, p.cache_dtype)
    splits = _decode_splits(q.device.index, shape)
    scratch_bytes = lib.tk_attention_decode_scratch_bytes(p.batch, p.q_tokens, p.heads, p.kv_heads, p.head_dim, splits)
    scratch = torch.empty(scratch_bytes, dtype=torch.uint8, device=q.device) if scratch_bytes else None
    _run(lib.tk_attention_decode_create, lib.tk_attention_decode_launch, lib.tk_attention_decode_destroy, q.device,
         q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), _address(k_scale), _address(v_scale),
         block_table.data_ptr(), cache_seqlens.data_ptr(), o.data_ptr(), lse.data_ptr(), *shape, splits,
         _address(scratch))
    return o, lse


@decode.register_fake
def _(q, k_cache, v_cache, block_table, cache_seqlens, causal, max_seqlen_k, k_scale, v_scale):
    decode_problem(q, k_cache, v_cache, block_table, cache_seqlens, causal, max_seqlen_k, k_scale, v_scale)
    return torch.empty_like(q), _decode_lse(q)
