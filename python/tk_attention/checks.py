"""What the kernels take, checked in plain Python over shapes, dtypes, strides and addresses, so that
an unsupported call raises Unsupported before any library is reached, and
tests/host/test_dropin_checks.py runs the checks without torch or a GPU.

SDPA's semantics: bf16 CUDA tensors (B, H, N, D) of one device, head dim 64 or 128 (96 and 256
without a gradient: the backward takes 64 and 128), queries and keys
of any lengths, enable_gqa (H a multiple of the key/value heads), scale None or 1/sqrt(D), no
dropout; the causal mask as is_causal where queries and keys are of one length, else as
attn_mask=torch.nn.attention.bias.causal_lower_right(Nq, Nk): the kernels align it to the
bottom-right corner (query i sees keys up to i + Nk - Nq), and PyTorch's is_causal to the top-left
one, which they do not take; no other attn_mask; strides as PyTorch hands them (the (B, N, H, D) layout of
x.view(B, N, H, D).transpose(1, 2) is read in place) wherever the TMA can describe them: the head
dim contiguous, the other strides multiples of 8 elements (16 bytes), the base 16-byte aligned.
"""
import collections
import math

HEAD_DIMS = (64, 96, 128, 256)  # the forward's (attention::refusal)
BACKWARD_HEAD_DIMS = (64, 128)  # the backward's (attention::backward_refusal)
ELEMENT_BYTES = 2  # bf16
MAX_STRIDE_BYTES = 1 << 40  # cuTensorMapEncodeTiled's bound
SUPPORTED = ("supported: bf16 CUDA tensors (B, H, N, D) with D 64 or 128 (96 or 256 without a gradient), is_causal "
             "(queries and keys of one length) or attn_mask=causal_lower_right(Nq, Nk), enable_gqa, scale None or "
             "1/sqrt(D)")
LOWER_RIGHT = "LOWER_RIGHT"  # torch.nn.attention.bias.CausalVariant's name for the bottom-right causal mask


class Unsupported(ValueError):
    """What the drop-in does not do, and what it does."""


# What the checks need of a tensor: torch.Tensor's shape, stride(), dtype, device and data_ptr();
# address None while torch.compile traces (no data yet: the operator checks it when it runs).
Tensor = collections.namedtuple("Tensor", "name shape stride dtype device address")
Problem = collections.namedtuple("Problem", "batch heads kv_heads seq seq_k head_dim causal")


def refuse(why):
    raise Unsupported(f"tk_attention: {why} ({SUPPORTED})")


def tma_refusal(t):
    """Why the TMA cannot read or write tensor t where it lies ("" when it can): the rules
    attention::refusal applies (kernels/attention/attention.cpp), here so the error comes before
    the library is reached. An axis of extent 1 is never stepped over: its stride does not count."""
    if t.stride[3] != 1:
        return f"{t.name}: head-dim stride {t.stride[3]}: the head dim must be contiguous (stride 1)"
    if t.address is not None and t.address % 16:
        return f"{t.name}: its address is not 16-byte aligned: the TMA needs a 16-byte aligned base"
    for axis, extent, stride in zip(("batch", "head", "seq"), t.shape[:3], t.stride[:3]):
        if extent == 1:
            continue
        which = f"{t.name}: {axis} stride {stride}"
        if stride <= 0:
            return f"{which}: give a positive stride"
        if stride * ELEMENT_BYTES % 16:
            return (f"{which} ({stride * ELEMENT_BYTES} bytes): the TMA needs strides that are multiples of 16 "
                    f"bytes (8 bf16 elements)")
        if stride * ELEMENT_BYTES >= MAX_STRIDE_BYTES:
            return f"{which}: the TMA needs strides below 2^40 bytes"
    return ""


def layout_refusal(t, dims, nonempty, tma):
    """Why t is no bf16 CUDA tensor of `dims` (the head dim last) that `tma` accepts ("" when it is);
    `nonempty` says what an empty one lacks."""
    if t.device.split(":")[0] != "cuda":
        return f"{t.name} is on {t.device}: give CUDA tensors"
    if t.dtype != "bfloat16":
        return f"{t.name} is {t.dtype}: give bfloat16"
    if len(t.shape) != dims.count(",") + 1:
        return f"{t.name} has {len(t.shape)} dims {tuple(t.shape)}: give {dims}"
    if t.shape[-1] not in HEAD_DIMS:
        return f"{t.name} has head dim {t.shape[-1]}: give 64, 96, 128 or 256"
    if 0 in t.shape:
        return f"{t.name} is empty {tuple(t.shape)}: give at least {nonempty}"
    return tma(t)


def check_tensor(t):
    why = layout_refusal(t, "(B, H, N, D)", "one batch, head and row", tma_refusal)
    if why:
        refuse(why)


def gradient_refusal(head_dim, needs_gradient):
    """Why a call whose inputs need a gradient (autograd on, an input requiring grad) cannot be
    taken at this head dim ("" when it can): the backward takes BACKWARD_HEAD_DIMS."""
    if needs_gradient and head_dim not in BACKWARD_HEAD_DIMS:
        return (f"head dim {head_dim} with inputs that require grad: the backward takes 64 or 128 (run the forward "
                f"under torch.no_grad(), or give inputs that do not require grad)")
    return ""


def causal_mask(attn_mask, is_causal, n, kn):
    """Whether the call asks for the causal mask the kernels take (mask.hpp), or Unsupported."""
    if attn_mask is None:
        if is_causal and n != kn:
            refuse(f"is_causal with {n} queries and {kn} keys: PyTorch aligns that mask to the top-left corner and "
                   f"the kernels to the bottom-right (query i sees keys up to i + Nk - Nq): give "
                   f"attn_mask=torch.nn.attention.bias.causal_lower_right({n}, {kn})")
        return bool(is_causal)
    variant = getattr(getattr(attn_mask, "variant", None), "name", None)
    if variant != LOWER_RIGHT and not (variant and n == kn):
        refuse("attn_mask is not supported but as torch.nn.attention.bias.causal_lower_right(Nq, Nk) (or either "
               "causal bias where Nq = Nk): give is_causal=True for the causal mask of one length, or no mask")
    if (attn_mask.seq_len_q, attn_mask.seq_len_kv) != (n, kn):
        refuse(f"attn_mask is a causal bias of {attn_mask.seq_len_q} x {attn_mask.seq_len_kv}: give one of the "
               f"queries' and keys' lengths, {n} x {kn}")
    return True


def check_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
               needs_gradient=False):
    """The Problem an SDPA call describes, or Unsupported. q, k, v are Tensor descriptions;
    needs_gradient: whether autograd will ask for the backward."""
    if dropout_p != 0.0:
        refuse(f"dropout_p = {dropout_p}: only 0.0 is supported")
    for t in (q, k, v):
        check_tensor(t)
    if len({q.device, k.device, v.device}) != 1:
        refuse(f"q, k, v are on {q.device}, {k.device}, {v.device}: give tensors of one device")
    (b, h, n, d), (kb, kh, kn, kd) = q.shape, k.shape
    if tuple(v.shape) != tuple(k.shape):
        refuse(f"k is {tuple(k.shape)} and v {tuple(v.shape)}: give k and v of one shape")
    if kb != b or kd != d:
        refuse(f"q is {tuple(q.shape)} and k {tuple(k.shape)}: give q and k of one batch and head dim")
    if kh != h and not enable_gqa:
        refuse(f"q has {h} heads and k {kh}: give equal heads, or enable_gqa=True for grouped-query attention")
    if h % kh:
        refuse(f"q has {h} heads and k {kh}: grouped-query attention needs the query heads to be a multiple of "
               f"the key/value heads")
    if scale is not None and not math.isclose(scale, 1 / math.sqrt(d), rel_tol=1e-6):
        refuse(f"scale = {scale}: only the default 1/sqrt(D) = {1 / math.sqrt(d):.6g} is supported")
    if why := gradient_refusal(d, needs_gradient):
        refuse(why)
    return Problem(b, h, kh, n, kn, d, causal_mask(attn_mask, is_causal, n, kn))


# ---- packed batches (FlashAttention's flash_attn_varlen_func) ----
VARLEN_SUPPORTED = ("supported: bf16 CUDA tensors q (total_q, H, D), k and v (total_k, Hkv, D), D 64 or 128 (96 or "
                    "256 without a gradient), H a "
                    "multiple of Hkv, cu_seqlens_q and cu_seqlens_k int32 (B + 1) on their device: 0, then each "
                    "sequence's end, never decreasing, the last the tokens' count; no sequence longer than max_seqlen; "
                    "softmax_scale None or 1/sqrt(D)")
# What the checks need of cu_seqlens: its values where known (None while torch.compile traces).
Offsets = collections.namedtuple("Offsets", "name shape dtype device values")
VarlenProblem = collections.namedtuple("VarlenProblem", "cu_seqlens_q cu_seqlens_k heads kv_heads head_dim causal")


def refuse_varlen(why):
    raise Unsupported(f"tk_attention: {why} ({VARLEN_SUPPORTED})")


def check_packed(t):
    """A packed (total, heads, D) tensor, as the TMA reads it (packed_tma_refusal)."""
    why = layout_refusal(t, "(total, heads, D)", "one token and head", packed_tma_refusal)
    if why:
        refuse_varlen(why)


def packed_tma_refusal(t):
    """tma_refusal of a packed (total, heads, D) tensor: its rows and heads the seq and head axes of a
    batch of one."""
    return tma_refusal(Tensor(t.name, (1, t.shape[1], t.shape[0], t.shape[2]),
                              (0, t.stride[1], t.stride[0], t.stride[2]), t.dtype, t.device, t.address))


def check_offsets(cu, total, max_seqlen, device):
    """cu_seqlens `cu` of a packed tensor of `total` rows: int32 (B + 1) on `device`, and where its
    values are known 0, never decreasing, ending at total, no step over max_seqlen."""
    if cu.dtype != "int32":
        refuse_varlen(f"{cu.name} is {cu.dtype}: give int32")
    if len(cu.shape) != 1 or cu.shape[0] < 2:
        refuse_varlen(f"{cu.name} has shape {tuple(cu.shape)}: give B + 1 >= 2 offsets")
    if cu.device != device:
        refuse_varlen(f"{cu.name} is on {cu.device} and q on {device}: give them on one device")
    if cu.values is None:
        return
    if cu.values[0] != 0:
        refuse_varlen(f"{cu.name}[0] = {cu.values[0]}: the first offset must be 0")
    for b in range(1, len(cu.values)):
        length = cu.values[b] - cu.values[b - 1]
        if length < 0:
            refuse_varlen(f"{cu.name}[{b}] = {cu.values[b]} < {cu.name}[{b - 1}] = {cu.values[b - 1]}: offsets must "
                          f"not decrease")
        if length > max_seqlen:
            refuse_varlen(f"{cu.name}: sequence {b - 1} has {length} tokens, more than max_seqlen {max_seqlen}")
    if cu.values[-1] != total:
        refuse_varlen(f"{cu.name}[-1] = {cu.values[-1]}, but the tensor has {total} tokens: the last offset must be "
                      f"the total")


def check_varlen_call(q, k, v, cu_q, cu_k, max_seqlen_q, max_seqlen_k, causal=False, softmax_scale=None,
                      needs_gradient=False):
    """The VarlenProblem a flash_attn_varlen_func call describes, or Unsupported. q, k, v are Tensor
    descriptions of (total, heads, D) tensors, cu_q and cu_k Offsets; needs_gradient as check_call's."""
    for t in (q, k, v):
        check_packed(t)
    if len({q.device, k.device, v.device}) != 1:
        refuse_varlen(f"q, k, v are on {q.device}, {k.device}, {v.device}: give tensors of one device")
    (total_q, h, d), (total_k, kh, kd) = q.shape, k.shape
    if tuple(v.shape) != tuple(k.shape):
        refuse_varlen(f"k is {tuple(k.shape)} and v {tuple(v.shape)}: give k and v of one shape")
    if kd != d:
        refuse_varlen(f"q has head dim {d} and k {kd}: give one head dim")
    if h % kh:
        refuse_varlen(f"q has {h} heads and k {kh}: the query heads must be a multiple of the key/value heads")
    check_offsets(cu_q, total_q, max_seqlen_q, q.device)
    check_offsets(cu_k, total_k, max_seqlen_k, q.device)
    if cu_q.shape != cu_k.shape:
        refuse_varlen(f"cu_seqlens_q has {cu_q.shape[0]} offsets and cu_seqlens_k {cu_k.shape[0]}: give B + 1 of each")
    if softmax_scale is not None and not math.isclose(softmax_scale, 1 / math.sqrt(d), rel_tol=1e-6):
        refuse_varlen(f"softmax_scale = {softmax_scale}: only the default 1/sqrt(D) = {1 / math.sqrt(d):.6g} is "
                      f"supported")
    if why := gradient_refusal(d, needs_gradient):
        refuse_varlen(why)
    return VarlenProblem(cu_q.values, cu_k.values, h, kh, d, bool(causal))


DECODE_HEAD_DIMS = (64, 128)  # attention::decode::refusal's
# The caches' dtypes and the C interface's cache_dtype for each (attention::decode::Cache).
CACHE_DTYPES = {"bfloat16": 0, "float8_e4m3fn": 1}
DECODE_SUPPORTED = ("supported: contiguous CUDA tensors q (B, T, H, D) bf16 and k_cache, v_cache (pages, page_size, "
                    "Hkv, D) both bf16, or both float8_e4m3fn with k_scale and v_scale float32 (Hkv,); D 64 or 128, H "
                    "a multiple of Hkv; block_table (B, pages_per_seq) and cache_seqlens (B,) contiguous int32 on q's "
                    "device; max_seqlen_k None or at least 1")
DecodeProblem = collections.namedtuple(
    "DecodeProblem", "batch q_tokens heads kv_heads head_dim page_size pages_per_seq pages causal max_keys cache_dtype")


def refuse_decode(why):
    raise Unsupported(f"tk_attention: {why} ({DECODE_SUPPORTED})")


def contiguous_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return tuple(strides)


def decode_tensor_refusal(t, dims, dtype, device=None):
    """Why t is no contiguous CUDA tensor of `dtype` and `dims` on `device` ("" when it is); q and the
    caches (CACHE_DTYPES) also 16-byte aligned."""
    if t.device.split(":")[0] != "cuda" or (device is not None and t.device != device):
        return f"{t.name} is on {t.device}: give CUDA tensors of q's device"
    if t.dtype != dtype:
        return f"{t.name} is {t.dtype}: give {dtype}"
    if len(t.shape) != len([axis for axis in dims.strip("()").split(",") if axis.strip()]) or 0 in t.shape:
        return f"{t.name} has shape {tuple(t.shape)}: give {dims}, none of them 0"
    if tuple(t.stride) != contiguous_strides(t.shape):
        return f"{t.name} has strides {tuple(t.stride)}: give a contiguous tensor"
    if dtype in CACHE_DTYPES and t.address is not None and t.address % 16:
        return f"{t.name}: its address is not 16-byte aligned (cp.async reads 16 bytes at a time)"
    return ""


def cache_dtype(k_cache, v_cache, k_scale, v_scale):
    """The C interface's cache_dtype of the caches: scales come with e4m3 caches, and with them alone."""
    if k_cache.dtype not in CACHE_DTYPES or v_cache.dtype != k_cache.dtype:
        refuse_decode(f"k_cache is {k_cache.dtype} and v_cache {v_cache.dtype}: give both bfloat16, or both "
                      f"float8_e4m3fn")
    e4m3 = k_cache.dtype == "float8_e4m3fn"
    for name, scale in (("k_scale", k_scale), ("v_scale", v_scale)):
        if e4m3 and scale is None:
            refuse_decode(f"{name} is None with float8_e4m3fn caches: give k_scale and v_scale, float32 (Hkv,)")
        if not e4m3 and scale is not None:
            refuse_decode(f"{name} given with bfloat16 caches: scales are an e4m3 cache's alone (give None, or "
                          f"float8_e4m3fn caches)")
    return CACHE_DTYPES[k_cache.dtype]


def check_scale(scale, kv_heads, device):
    """An e4m3 cache's scales: float32 (kv_heads,), contiguous, on the cache's device."""
    if why := decode_tensor_refusal(scale, "(Hkv,)", "float32", device):
        refuse_decode(why)
    if tuple(scale.shape) != (kv_heads,):
        refuse_decode(f"{scale.name} has shape {tuple(scale.shape)}: give one scale per cache head, ({kv_heads},)")


def check_decode_call(q, k_cache, v_cache, block_table, cache_seqlens, causal=False, max_seqlen_k=None, k_scale=None,
                      v_scale=None):
    """The DecodeProblem a flash_attn_with_kvcache-style call describes (Tensor descriptions of each
    argument; k_scale and v_scale: an e4m3 cache's, else None), or Unsupported. Where a sequence's
    length is past max_seqlen_k or the table's capacity the kernel reads only the table's pages;
    pages outside the pool read as zeros."""
    code = cache_dtype(k_cache, v_cache, k_scale, v_scale)
    cache = "(pages, page_size, Hkv, D)"
    for t, dims, dtype in ((q, "(B, T, H, D)", "bfloat16"), (k_cache, cache, k_cache.dtype),
                           (v_cache, cache, v_cache.dtype), (block_table, "(B, pages_per_seq)", "int32"),
                           (cache_seqlens, "(B,)", "int32")):
        if why := decode_tensor_refusal(t, dims, dtype, q.device if t is not q else None):
            refuse_decode(why)
    (b, tokens, h, d), (pages, page_size, kh, kd) = q.shape, k_cache.shape
    if tuple(v_cache.shape) != tuple(k_cache.shape):
        refuse_decode(f"k_cache is {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)}: give one shape")
    for scale in (k_scale, v_scale):
        if scale is not None:
            check_scale(scale, kh, k_cache.device)
    if d not in DECODE_HEAD_DIMS or kd != d:
        refuse_decode(f"q has head dim {d} and the cache {kd}: give one head dim, 64 or 128")
    if h % kh:
        refuse_decode(f"q has {h} heads and the cache {kh}: the query heads must be a multiple of the cache's")
    if block_table.shape[0] != b or cache_seqlens.shape[0] != b:
        refuse_decode(f"q has batch {b}, block_table {block_table.shape[0]} rows and cache_seqlens "
                      f"{cache_seqlens.shape[0]} entries: give one per sequence")
    if max_seqlen_k is not None and max_seqlen_k < 1:
        refuse_decode(f"max_seqlen_k = {max_seqlen_k}: give at least 1, or None (the table's capacity)")
    return DecodeProblem(b, tokens, h, kh, d, page_size, block_table.shape[1], pages, bool(causal), max_seqlen_k or 0,
                         code)
