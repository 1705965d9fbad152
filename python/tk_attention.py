"""A drop-in for torch.nn.functional.scaled_dot_product_attention on tkprobe's attention kernels.

    import tk_attention
    out = tk_attention.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    out.sum().backward()  # dq, dk, dv from the DSL's backward kernels

Forward and backward are the `wgmma` kernels (sm_90a) of kernels/attention, reached through the C
library libtk_attention_c.so (kernels/attention/c_api.cpp) with ctypes, launched on PyTorch's
current stream. What it takes, with SDPA's semantics: bf16 CUDA tensors (B, H, N, D) of one
device, head dim 64 or 128, queries and keys of one length N, is_causal, enable_gqa (H a multiple
of the key/value heads), scale None or 1/sqrt(D), no attn_mask, no dropout; strides as PyTorch
hands them (the (B, N, H, D) layout of x.view(B, N, H, D).transpose(1, 2) is read in place)
wherever the TMA can describe them: the head dim contiguous, the other strides multiples of 8
elements (16 bytes), the base 16-byte aligned. Anything else raises Unsupported naming what is
supported: never a silent fallback to another implementation. The one copy it makes itself: an
incoming gradient whose strides the TMA cannot read (out.sum()'s, stride 0) is made contiguous.

The library: load(path), else $TK_ATTENTION_LIB, else build/kernels/libtk_attention_c.so of the
checkout this file lies in. The checks below are plain Python over shapes, dtypes and strides, so
tests/host/test_dropin_checks.py runs them without torch or a GPU.
"""
import collections
import ctypes
import math
import os

HEAD_DIMS = (64, 128)
ELEMENT_BYTES = 2  # bf16
MAX_STRIDE_BYTES = 1 << 40  # cuTensorMapEncodeTiled's bound
SUPPORTED = ("supported: bf16 CUDA tensors (B, H, N, D) with D 64 or 128, one length N for queries and keys, "
             "is_causal, enable_gqa, scale None or 1/sqrt(D)")


class Unsupported(ValueError):
    """What the drop-in does not do, and what it does."""


# What the checks need of a tensor: torch.Tensor's shape, stride(), dtype, device and data_ptr().
Tensor = collections.namedtuple("Tensor", "name shape stride dtype device address")
Problem = collections.namedtuple("Problem", "batch heads kv_heads seq head_dim causal")


def refuse(why):
    raise Unsupported(f"tk_attention: {why} ({SUPPORTED})")


def tma_refusal(t):
    """Why the TMA cannot read or write tensor t where it lies ("" when it can): the rules
    attention::refusal applies (kernels/attention/attention.cpp), here so the error comes before
    the library is reached. An axis of extent 1 is never stepped over: its stride does not count."""
    if t.stride[3] != 1:
        return f"{t.name}: head-dim stride {t.stride[3]}: the head dim must be contiguous (stride 1)"
    if t.address % 16:
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


def check_tensor(t):
    if t.device.split(":")[0] != "cuda":
        refuse(f"{t.name} is on {t.device}: give CUDA tensors")
    if t.dtype != "bfloat16":
        refuse(f"{t.name} is {t.dtype}: give bfloat16")
    if len(t.shape) != 4:
        refuse(f"{t.name} has {len(t.shape)} dims {tuple(t.shape)}: give (B, H, N, D)")
    if t.shape[3] not in HEAD_DIMS:
        refuse(f"{t.name} has head dim {t.shape[3]}: give 64 or 128")
    if 0 in t.shape:
        refuse(f"{t.name} is empty {tuple(t.shape)}: give at least one batch, head and row")
    why = tma_refusal(t)
    if why:
        refuse(why)


def check_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The Problem an SDPA call describes, or Unsupported. q, k, v are Tensor descriptions."""
    if attn_mask is not None:
        refuse("attn_mask is not supported: give is_causal=True for the causal mask, or no mask")
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
    if kn != n:
        refuse(f"queries have length {n} and keys {kn}: give one length")
    if kh != h and not enable_gqa:
        refuse(f"q has {h} heads and k {kh}: give equal heads, or enable_gqa=True for grouped-query attention")
    if h % kh:
        refuse(f"q has {h} heads and k {kh}: grouped-query attention needs the query heads to be a multiple of "
               f"the key/value heads")
    if scale is not None and not math.isclose(scale, 1 / math.sqrt(d), rel_tol=1e-6):
        refuse(f"scale = {scale}: only the default 1/sqrt(D) = {1 / math.sqrt(d):.6g} is supported")
    return Problem(b, h, kh, n, d, bool(is_causal))


def library_path(given=None):
    """The library to load: `given`, $TK_ATTENTION_LIB, or the one built beside this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = given or os.environ.get("TK_ATTENTION_LIB") or os.path.join(here, "..", "build", "kernels",
                                                                        "libtk_attention_c.so")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tk_attention: no library at {path}: build it (cmake --build build --target "
                                f"tk_attention_c), or give its path to tk_attention.load() or $TK_ATTENTION_LIB")
    return os.path.normpath(path)


# ---- the library and PyTorch: imported on first use ----

_lib = None
_function = None


def load(path=None):
    """Loads libtk_attention_c.so (see library_path) and declares its functions; returns it."""
    global _lib
    lib = ctypes.CDLL(library_path(path))
    p, i, strides = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)
    lib.tk_attention_create.restype = p
    lib.tk_attention_create.argtypes = [p] * 5 + [i] * 7
    lib.tk_attention_create_strided.restype = p
    lib.tk_attention_create_strided.argtypes = [p] * 5 + [i] * 7 + [strides]
    lib.tk_attention_launch.argtypes = [p, p]
    lib.tk_attention_destroy.argtypes = [p]
    lib.tk_attention_backward_scratch_bytes.restype = ctypes.c_longlong
    lib.tk_attention_backward_scratch_bytes.argtypes = [i] * 6
    lib.tk_attention_backward_create.restype = p
    lib.tk_attention_backward_create.argtypes = [p] * 9 + [i] * 6 + [strides, p]
    lib.tk_attention_backward_scratch_bytes_opts.restype = ctypes.c_longlong
    lib.tk_attention_backward_scratch_bytes_opts.argtypes = [i] * 7
    lib.tk_attention_backward_create_opts.restype = p
    lib.tk_attention_backward_create_opts.argtypes = [p] * 9 + [i] * 6 + [strides, p, i]
    lib.tk_attention_backward_dq_path.argtypes = [i] * 7
    lib.tk_attention_backward_launch.argtypes = [p, p]
    lib.tk_attention_backward_destroy.argtypes = [p]
    _lib = lib
    return lib


def describe(name, tensor):
    return Tensor(name, tuple(tensor.shape), tuple(tensor.stride()), str(tensor.dtype).replace("torch.", ""),
                  str(tensor.device), tensor.data_ptr())


def _strides(tensors):
    flat = [s for t in tensors for s in t.stride()]
    return (ctypes.c_int64 * len(flat))(*flat)


def _shape_args(p):
    return p.batch, p.heads, p.kv_heads, p.seq, p.head_dim, int(p.causal)


def _run(torch, create, launch, destroy, entry, *args):
    """Prepares a pass, launches it on PyTorch's current stream and frees the host-side object (the
    launch holds copies of everything it needs)."""
    handle = create(*args)
    if not handle:
        raise Unsupported(f"tk_attention: {entry} refused the call (its reason is on stderr)")
    try:
        if launch(handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)) != 0:
            raise RuntimeError(f"tk_attention: {entry}: the launch failed")
    finally:
        destroy(handle)


def forward(q, k, v, problem):
    """O (laid out as q where q is dense, else contiguous) and the row logsumexp, float (B, H, N)."""
    import torch
    o = torch.empty_like(q)
    lse = torch.empty((problem.batch, problem.heads, problem.seq), dtype=torch.float32, device=q.device)
    with torch.cuda.device(q.device):
        _run(torch, _lib.tk_attention_create_strided, _lib.tk_attention_launch, _lib.tk_attention_destroy,
             "tk_attention_create", q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
             *_shape_args(problem), 0, _strides((q, k, v, o)))
    return o, lse


# The backward's dQ path (attention::DqPath): False (the default) runs whichever path measured
# faster for the shape (attention::dq_path: today everywhere the one where the dK/dV kernel reduces
# dQ in fp32 with the TMA, five matrix products instead of seven; dQ's bits may differ from run to
# run). True, or torch.use_deterministic_algorithms(True), always runs the deterministic kernels
# (the same inputs give the same bits).
deterministic_backward = False
# The C interface's dq_path for each path's name (attention::DqPath; tkprobe attention --dq).
DQ_PATHS = {"fastest": 0, "deterministic": 1, "reduce": 2}


def _dq_path(torch):
    deterministic = deterministic_backward or torch.are_deterministic_algorithms_enabled()
    return DQ_PATHS["deterministic" if deterministic else "fastest"]


def backward(q, k, v, o, lse, d_o, problem):
    """dq, dk, dv, each laid out as its input where that is dense."""
    import torch
    if tma_refusal(describe("grad", d_o)):
        d_o = d_o.contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    lib = _lib
    dq_path = _dq_path(torch)
    with torch.cuda.device(q.device):
        # The scratch from PyTorch's allocator, ordered on this stream: no cudaMalloc/cudaFree per step.
        scratch = torch.empty(lib.tk_attention_backward_scratch_bytes_opts(*_shape_args(problem), dq_path),
                              dtype=torch.uint8, device=q.device)
        _run(torch, lib.tk_attention_backward_create_opts, lib.tk_attention_backward_launch,
             lib.tk_attention_backward_destroy, "tk_attention_backward_create", q.data_ptr(), k.data_ptr(),
             v.data_ptr(), o.data_ptr(), d_o.data_ptr(), lse.data_ptr(), dq.data_ptr(), dk.data_ptr(),
             dv.data_ptr(), *_shape_args(problem), _strides((q, k, v, o, d_o, dq, dk, dv)), scratch.data_ptr(),
             dq_path)
    return dq, dk, dv


def _autograd_function():
    import torch

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, problem):
            o, lse = forward(q, k, v, problem)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.problem = problem
            return o

        @staticmethod
        def backward(ctx, d_o):
            q, k, v, o, lse = ctx.saved_tensors
            return (*backward(q, k, v, o, lse, d_o, ctx.problem), None)

    return Attention


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention for what the kernels support (the module's
    docstring); raises Unsupported for the rest."""
    global _function
    problem = check_call(describe("q", query), describe("k", key), describe("v", value), attn_mask, dropout_p,
                         is_causal, scale, enable_gqa)
    if _lib is None:
        load()
    if _function is None:
        _function = _autograd_function()
    return _function.apply(query, key, value, problem)
