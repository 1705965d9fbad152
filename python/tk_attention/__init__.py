"""A drop-in for torch.nn.functional.scaled_dot_product_attention on tkprobe's attention kernels.

    import tk_attention
    out = tk_attention.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    out.sum().backward()  # dq, dk, dv from the DSL's backward kernels
    # fewer queries than keys (chunked prefill), the causal mask at the bottom-right corner:
    mask = torch.nn.attention.bias.causal_lower_right(q.shape[2], k.shape[2])
    out = tk_attention.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    # a packed batch (total, H, D) with int32 cu_seqlens, as flash_attn_varlen_func:
    out = tk_attention.varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_q, max_k, causal=True)
    # decode over a paged KV cache, flash_attn_with_kvcache's layout (no append):
    out, lse = tk_attention.decode(q, k_cache, v_cache, block_table, cache_seqlens)
    # the cache in float8_e4m3fn, a float32 scale per kv head for each of K and V:
    out, lse = tk_attention.decode(q, k_cache, v_cache, block_table, cache_seqlens, k_scale=ks, v_scale=vs)

Forward and backward are the `wgmma` kernels (sm_90a) of kernels/attention, reached through the C
library the package carries (library.py), registered as the PyTorch operators tk_attention::forward
and tk_attention::backward (ops.py): torch.compile and CUDA graphs take them. What a call may be is
in checks.py; anything else raises Unsupported naming what is supported, never a silent fallback to
another implementation. Without torch the checks still import and run.
"""
from .checks import (DecodeProblem, Offsets, Problem, Tensor, Unsupported, VarlenProblem, check_call,
                     check_decode_call, check_varlen_call)
from .library import DQ_PATHS, library_path, load

__all__ = ["DQ_PATHS", "DecodeProblem", "Offsets", "Problem", "Tensor", "Unsupported", "VarlenProblem", "check_call",
           "check_decode_call", "check_varlen_call", "decode", "deterministic_backward", "library_path", "load",
           "scaled_dot_product_attention", "varlen_attention"]

try:
    import torch
except ImportError:  # the checks and the library need no torch; the attention does
    torch = None
else:
    from . import ops
    from .plan import VarlenPlan  # a packed batch's passes prepared once: CUDA graphs capture them
    __all__.append("VarlenPlan")

# The backward's dQ path (attention::DqPath): False (the default) runs whichever path measured
# faster for the shape (attention::dq_path: today everywhere the one where the dK/dV kernel reduces
# dQ in fp32 with the TMA; dQ's bits may differ from run to run). True, or
# torch.use_deterministic_algorithms(True), runs the deterministic kernels (the same inputs give the
# same bits). Read at each call, so a compiled model is traced again when it changes.
deterministic_backward = False


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention for what the kernels support (checks.py);
    raises Unsupported for the rest."""
    if torch is None:
        raise ImportError("tk_attention.scaled_dot_product_attention needs PyTorch: install torch")
    p = check_call(ops.describe("q", query), ops.describe("k", key), ops.describe("v", value), attn_mask, dropout_p,
                   is_causal, scale, enable_gqa, ops.needs_gradient(query, key, value))
    deterministic = deterministic_backward or torch.are_deterministic_algorithms_enabled()
    return ops.attention(query, key, value, p.causal, deterministic)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                     softmax_scale=None):
    """FlashAttention's flash_attn_varlen_func for what the kernels support (checks.py's
    check_varlen_call): q (total_q, H, D), k and v (total_k, Hkv, D), int32 cu_seqlens; causal at each
    sequence's bottom-right corner. Each call reads cu_seqlens back to the host (a sync): no CUDA graph
    (VarlenPlan prepares a batch once, and a graph captures its launches)."""
    if torch is None:
        raise ImportError("tk_attention.varlen_attention needs PyTorch: install torch")
    ops.varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale,
                       needs_gradient=ops.needs_gradient(q, k, v))
    deterministic = deterministic_backward or torch.are_deterministic_algorithms_enabled()
    return ops.varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k), bool(causal),
                              deterministic)[0]


def decode(q, k_cache, v_cache, block_table, cache_seqlens, causal=False, max_seqlen_k=None, k_scale=None,
           v_scale=None):
    """Attention of each sequence's new tokens q (B, T, H, D) against its cached keys: k_cache and
    v_cache (pages, page_size, Hkv, D), sequence b's key j in page block_table[b, j // page_size]
    (int32), cache_seqlens[b] keys (int32, the new tokens' included); causal: the new tokens see each
    other causally (bottom-right). Returns (out (B, T, H, D), lse float (B, H, T)). Nothing is read
    back to the host: a CUDA graph captures the call. max_seqlen_k bounds the lengths (None: the
    table's capacity) and sets how the keys are split across the GPU.
    The caches are bf16, or both torch.float8_e4m3fn with k_scale and v_scale, float32 (Hkv,): a key
    is its entry x k_scale[its kv head], a value likewise with v_scale. The kernel then multiplies in
    fp16, so q must lie within fp16's range (|q| <= 65504; not checked)."""
    if torch is None:
        raise ImportError("tk_attention.decode needs PyTorch: install torch")
    ops.decode_problem(q, k_cache, v_cache, block_table, cache_seqlens, causal, max_seqlen_k, k_scale, v_scale)
    return ops.decode(q, k_cache, v_cache, block_table, cache_seqlens, bool(causal), int(max_seqlen_k or 0), k_scale,
                      v_scale)
