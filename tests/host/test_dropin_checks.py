#!/usr/bin/env python3
"""The tk_attention package's checks, with torch hidden and no GPU: every call SDPA could make that the
drop-in does not support raises Unsupported naming what is wrong and what is supported, the layouts
PyTorch hands over (contiguous, transposed projections, slices of a fused QKV) pass, and the rules
agree with the C++ library's (tests/host/test_attention_strides.cpp checks the same cases there).
Given the library, also its C interface as the package declares it: the backward's scratch size and
dQ path per shape, and refusals answered with null and the reason on stderr (no GPU is reached
before them).

usage: test_dropin_checks.py SOURCE_DIR [LIBRARY]   the package's source (python/tk_attention) and a built library
       test_dropin_checks.py --installed            the package this python has installed, and the library it carries
"""
import ctypes
import importlib.util
import os
import subprocess
import sys
import tempfile
import types


def load_package(source_dir):
    """tk_attention with torch hidden (its checks must run without it): the source package under
    SOURCE_DIR/python, loaded from its files, or (source_dir None) the one installed."""
    sys.modules["torch"] = None  # `import torch` raises ImportError
    if source_dir is None:
        import tk_attention
        return tk_attention
    folder = os.path.join(source_dir, "python", "tk_attention")
    spec = importlib.util.spec_from_file_location("tk_attention", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tk_attention"] = module
    spec.loader.exec_module(module)
    return module


def library_calls(source_dir, library):
    """Prints what the library answers (run in a child, whose stderr, the library's fprintf, the test reads)."""
    lib = load_package(source_dir).load(library)
    print("scratch", lib.tk_attention_backward_scratch_bytes_opts(2, 8, 2, 1000, 0, 128, 1, 1))
    strides = (ctypes.c_int64 * 16)(*([8 * 1000 * 128, 1000 * 128, 128, 2] * 4))
    print("forward", lib.tk_attention_create_strided(*[1 << 20] * 5, 2, 8, 8, 1000, 0, 128, 1, 0, strides))
    print("backward", lib.tk_attention_backward_create(*[1 << 20] * 9, 2, 8, 8, 1000, 96, 1, None, None))
    print("scratch reducing", lib.tk_attention_backward_scratch_bytes_opts(2, 8, 2, 1000, 0, 128, 1, 2))
    print("backward reducing",
          lib.tk_attention_backward_create_opts(*[1 << 20] * 9, 2, 8, 8, 1000, 0, 96, 1, None, None, 2))
    print("paths", *(lib.tk_attention_backward_dq_path(1, 8, 2, n, 0, d, causal, 0) for n, d, causal in
                     ((2048, 128, 0), (4096, 128, 1), (2048, 128, 1), (1024, 128, 0), (16384, 64, 0))))
    print("forced", lib.tk_attention_backward_dq_path(1, 8, 2, 64, 0, 64, 0, 2),
          lib.tk_attention_backward_dq_path(1, 8, 2, 16384, 0, 128, 0, 1))
    print("scratch fastest", lib.tk_attention_backward_scratch_bytes(1, 8, 2, 4096, 128, 0))
    print("bad path", lib.tk_attention_backward_dq_path(1, 8, 2, 64, 0, 64, 0, 3),
          lib.tk_attention_backward_scratch_bytes_opts(1, 8, 2, 64, 0, 64, 0, -1),
          lib.tk_attention_backward_create_opts(*[1 << 20] * 9, 1, 8, 8, 64, 0, 64, 0, None, None, 7))
    print("negative seq_k", lib.tk_attention_create_strided(*[1 << 20] * 5, 2, 8, 8, 1000, -1, 128, 1, 0, None))
    # the e4m3 forward: q k v, their scales, o lse, then B H Hkv N D causal
    print("e4m3", lib.tk_attention_fp8_create(*[1 << 20] * 3, 1.0, 1.0, 1.0, *[1 << 20] * 2, 2, 8, 8, 1000, 64, 1),
          lib.tk_attention_fp8_create(*[1 << 20] * 3, 1.0, 0.0, 1.0, *[1 << 20] * 2, 2, 8, 8, 1000, 128, 1),
          lib.tk_attention_fp8_create(*[1 << 20] * 2, 8, 1.0, 1.0, 1.0, *[1 << 20] * 2, 2, 8, 8, 1000, 128, 0))
    decreasing, starts = (ctypes.c_int * 3)(0, 5, 3), (ctypes.c_int * 3)(0, 5, 9)
    print("varlen", lib.tk_attention_varlen_create(*[1 << 20] * 5, decreasing, starts, 2, 8, 8, 128, 1, None),
          lib.tk_attention_varlen_create(*[1 << 20] * 5, starts, starts, 0, 8, 8, 128, 1, None))
    print("varlen backward", lib.tk_attention_varlen_backward_scratch_bytes(starts, starts, 2, 8, 2, 128, 1, 1),
          lib.tk_attention_varlen_backward_scratch_bytes(starts, starts, 2, 8, 2, 64, 1, 2),
          lib.tk_attention_varlen_backward_scratch_bytes(decreasing, starts, 2, 8, 2, 64, 1, 2),
          lib.tk_attention_varlen_backward_create(*[1 << 20] * 9, starts, decreasing, 2, 8, 8, 128, 1, None, None, 0),
          lib.tk_attention_varlen_backward_create(*[1 << 20] * 9, starts, starts, 2, 8, 8, 96, 1, None, None, 0))
    # B, T, H, Hkv, D, page, pages per seq, pages, causal, max, cache dtype (bf16)
    decode_shape = (2, 1, 32, 8, 128, 16, 4, 10, 0, 0, 0)
    print("decode", lib.tk_attention_decode_splits(*decode_shape[:4], 96, *decode_shape[5:], 0),
          lib.tk_attention_decode_splits(*decode_shape, 5), lib.tk_attention_decode_splits(*decode_shape, 100),
          lib.tk_attention_decode_scratch_bytes(2, 1, 32, 8, 128, 5), lib.tk_attention_decode_scratch_bytes(2, 1, 32, 8, 128, 1),
          lib.tk_attention_decode_create(*[1 << 20] * 3, None, None, *[1 << 20] * 4, *decode_shape[:4], 96,
                                         *decode_shape[5:], 1, None))
    e4m3_shape, unknown_cache = decode_shape[:-1] + (1,), decode_shape[:-1] + (2,)
    print("decode e4m3", lib.tk_attention_decode_splits(*e4m3_shape, 5),
          lib.tk_attention_decode_splits(*e4m3_shape[:4], 96, *e4m3_shape[5:], 0),
          lib.tk_attention_decode_splits(*unknown_cache, 5),
          lib.tk_attention_decode_create(*[1 << 20] * 9, *unknown_cache, 1, None))


def check_library(where, failures):
    """`where`: this script's arguments (SOURCE_DIR LIBRARY, or --installed)."""
    r = subprocess.run([sys.executable, __file__, "--library-calls", *where], capture_output=True, text=True)
    # Two vectors (lse2, D) of B x H x padded(N) floats: padded(1000) = 1024; the reducing path adds
    # the fp32 dQ accumulator, B x H x padded(N) x D floats. A packed batch's: each sequence's rows
    # padded (5 and 4 queries: 128 + 128 rows), 0 for refused offsets.
    # The default (fastest) path reduces on every shape (attention::dq_path): 1 deterministic,
    # 2 reducing, 0 refused.
    expected = ["scratch 131072", "forward None", "backward None", f"scratch reducing {131072 + 2 * 8 * 1024 * 128 * 4}",
                "backward reducing None", "paths 2 2 2 2 2", "forced 2 1",
                f"scratch fastest {2 * 8 * 4096 * 4 + 8 * 4096 * 128 * 4}", "bad path 0 0 None", "negative seq_k None", "e4m3 None None None", "varlen None None",
                f"varlen backward {2 * 8 * 256 * 4} {2 * 8 * 256 * 4 + 8 * 256 * 64 * 4} 0 None None",
                # decode: refused 0; forced splits (at most 64); 5 splits' O and LSE, (D + 1) floats per row
                f"decode 0 5 64 {5 * 2 * 32 * 129 * 4} 0 None",
                # an e4m3 cache: forced splits; head dim 96 refused as with bf16; cache_dtype 2 refused
                "decode e4m3 5 0 0 None"]
    if r.returncode != 0 or r.stdout.split("\n")[:len(expected)] != expected:
        failures.append(f"library calls: exit {r.returncode}, {r.stdout!r} {r.stderr}")
    for reason in ("tk_attention_create: q: head-dim stride 2: the head dim must be contiguous",
                   "tk_attention_backward_create: head dim = 96: the backward takes 64 or 128",
                   "tk_attention: dq_path 3: give 0 (fastest), 1 (deterministic) or 2 (reducing)",
                   "tk_attention: dq_path -1: give 0 (fastest), 1 (deterministic) or 2 (reducing)",
                   "tk_attention: dq_path 7: give 0 (fastest), 1 (deterministic) or 2 (reducing)",
                   "tk_attention_create: seq k = -1: give a positive number (0: as many as seq)",
                   "tk_attention_fp8_create: head dim = 64: the e4m3 forward takes 128",
                   "tk_attention_fp8_create: k_scale = 0.000000: give a positive finite scale",
                   "tk_attention_fp8_create: v: null or not 16-byte aligned: the TMA needs a 16-byte aligned base",
                   "tk_attention_varlen_create: cu_seqlens_q[2] = 3 < cu_seqlens_q[1] = 5: offsets must not decrease",
                   "tk_attention_varlen_create: cu_seqlens_q: 0 offsets: give B + 1 >= 2",
                   "tk_attention_varlen_backward_create: cu_seqlens_k[2] = 3 < cu_seqlens_k[1] = 5: offsets must not decrease",
                   "tk_attention_varlen_backward_create: head dim = 96: the backward takes 64 or 128",
                   "tk_attention_decode_create: head dim 96: give 64 or 128",
                   "tk_attention_decode_create: cache_dtype 2: give 0 (bf16) or 1 (e4m3)"):
        if reason not in r.stderr:
            failures.append(f"library: stderr lacks '{reason}': {r.stderr}")


def contiguous(shape):
    b, h, n, d = shape
    return (h * n * d, n * d, d, 1)


def transposed(shape, pad=0):
    """(B, N, H, D) contiguous viewed as (B, H, N, D); rows padded by `pad` elements, as a slice of a
    wider projection (a fused QKV's q: pad = 2 H D)."""
    b, h, n, d = shape
    row = h * d + pad
    return (n * row, d, row, 1)


def causal_bias(variant, seq_len_q, seq_len_kv):
    """What the checks read of torch.nn.attention.bias.CausalBias, without torch."""
    return types.SimpleNamespace(variant=types.SimpleNamespace(name=variant), seq_len_q=seq_len_q,
                                 seq_len_kv=seq_len_kv)


def expect_refused(m, failures, what, expected, supported, call):
    """call() must raise Unsupported whose message holds `expected` and the `supported` summary."""
    try:
        call()
        failures.append(f"{what}: accepted")
    except m.Unsupported as e:
        if expected not in str(e) or supported not in str(e):
            failures.append(f"{what}: the message lacks '{expected}' or what is supported: {e}")


def check_varlen(m, tensor, failures):
    """flash_attn_varlen_func's calls: packed (total, H, D) tensors and int32 cu_seqlens."""
    def packed(name, total, heads, d=128, **kw):
        return tensor(name, (total, heads, d), (heads * d, d, 1), **kw)

    def offsets(name, values, dtype="int32", device="cuda:0", known=True):
        return m.Offsets(name, (len(values),), dtype, device, list(values) if known else None)

    cu_q, cu_k = [0, 0, 5, 6, 306], [0, 7, 7, 8, 298]  # lengths 0, 5, 1, 300 and 7, 0, 1, 290

    def call(q=None, k=None, v=None, cq=None, ck=None, max_q=300, max_k=290, **kw):
        return m.check_varlen_call(q or packed("q", 306, 8), k or packed("k", 298, 2), v or packed("v", 298, 2),
                                   cq or offsets("cu_seqlens_q", cu_q), ck or offsets("cu_seqlens_k", cu_k), max_q,
                                   max_k, **kw)

    def refuses(what, expected, **kw):
        expect_refused(m, failures, f"varlen {what}", expected, "cu_seqlens_q and cu_seqlens_k int32",
                       lambda: call(**kw))

    try:
        p = call(causal=True)
        if p != m.VarlenProblem(cu_q, cu_k, 8, 2, 128, True):
            failures.append(f"varlen: problem {p}")
        call(cq=offsets("cu_seqlens_q", cu_q, known=False), ck=offsets("cu_seqlens_k", cu_k, known=False))
        qkv = 3 * 8 * 64  # q, k, v as slices of one (total, 3, H, D) projection
        call(q=tensor("q", (306, 8, 64), (qkv, 64, 1)), k=tensor("k", (306, 8, 64), (qkv, 64, 1)),
             v=tensor("v", (306, 8, 64), (qkv, 64, 1)), ck=offsets("cu_seqlens_k", cu_q), max_k=300)
    except m.Unsupported as e:
        failures.append(f"varlen: refused: {e}")
    refuses("int64 offsets", "cu_seqlens_q is int64: give int32", cq=offsets("cu_seqlens_q", cu_q, dtype="int64"))
    refuses("not from 0", "cu_seqlens_k[0] = 1: the first offset must be 0",
            ck=offsets("cu_seqlens_k", [1, 7, 7, 8, 298]))
    refuses("decreasing", "cu_seqlens_q[2] = 4 < cu_seqlens_q[1] = 5: offsets must not decrease",
            cq=offsets("cu_seqlens_q", [0, 5, 4, 6, 306]))
    refuses("last not the total", "cu_seqlens_q[-1] = 305, but the tensor has 306 tokens",
            cq=offsets("cu_seqlens_q", [0, 0, 5, 6, 305]))
    refuses("over max_seqlen", "sequence 3 has 300 tokens, more than max_seqlen 299", max_q=299)
    refuses("other device", "cu_seqlens_k is on cpu and q on cuda:0",
            ck=offsets("cu_seqlens_k", cu_k, device="cpu"))
    refuses("batch differs", "cu_seqlens_q has 5 offsets and cu_seqlens_k 4",
            ck=offsets("cu_seqlens_k", [0, 7, 8, 298]))
    refuses("4-d q", "q has 4 dims", q=tensor("q", (1, 306, 8, 128)))
    refuses("head dim 80", "q has head dim 80: give 64, 96, 128 or 256", q=packed("q", 306, 8, 80),
            k=packed("k", 298, 2, 80), v=packed("v", 298, 2, 80))
    refuses("head dim 256 with a gradient", "head dim 256 with inputs that require grad", q=packed("q", 306, 8, 256),
            k=packed("k", 298, 2, 256), v=packed("v", 298, 2, 256), needs_gradient=True)
    refuses("fp16", "k is float16: give bfloat16", k=packed("k", 298, 2, dtype="float16"))
    refuses("heads", "a multiple of the key/value heads", k=packed("k", 298, 3), v=packed("v", 298, 3))
    refuses("misaligned", "v: its address is not 16-byte aligned", v=packed("v", 298, 2, offset=2))
    refuses("row stride", "q: seq stride 1028 (2056 bytes)", q=tensor("q", (306, 8, 128), (1028, 128, 1)))
    refuses("scale", "softmax_scale = 1.0", softmax_scale=1.0)


def check_decode(m, failures):
    """flash_attn_with_kvcache-style calls: contiguous q (B, T, H, D), paged caches (bf16, or e4m3
    with float32 scales per kv head), int32 tables."""
    def tensor(name, shape, dtype="bfloat16", device="cuda:0", address=0, stride=None):
        return m.Tensor(name, shape, stride or m.checks.contiguous_strides(shape), dtype, device, address)

    made = {"q": tensor("q", (2, 4, 32, 128)), "k_cache": tensor("k_cache", (10, 16, 8, 128)),
            "v_cache": tensor("v_cache", (10, 16, 8, 128)), "block_table": tensor("block_table", (2, 5), "int32"),
            "cache_seqlens": tensor("cache_seqlens", (2,), "int32")}
    e4m3 = {"k_cache": tensor("k_cache", (10, 16, 8, 128), "float8_e4m3fn"),
            "v_cache": tensor("v_cache", (10, 16, 8, 128), "float8_e4m3fn"),
            "k_scale": tensor("k_scale", (8,), "float32"), "v_scale": tensor("v_scale", (8,), "float32")}

    def call(max_seqlen_k=None, k_scale=None, v_scale=None, **changes):
        given = dict(made, **changes)
        return m.check_decode_call(*(given[n] for n in made), True, max_seqlen_k, k_scale=k_scale, v_scale=v_scale)

    def refuses(what, expected, **kw):
        expect_refused(m, failures, f"decode {what}", expected, "block_table (B, pages_per_seq)", lambda: call(**kw))

    try:
        if call(max_seqlen_k=70) != m.DecodeProblem(2, 4, 32, 8, 128, 16, 5, 10, True, 70, 0):
            failures.append(f"decode: problem {call(max_seqlen_k=70)}")
        if call(**e4m3) != m.DecodeProblem(2, 4, 32, 8, 128, 16, 5, 10, True, 0, 1):
            failures.append(f"decode e4m3: problem {call(**e4m3)}")
        d64 = {n: tensor(n, (10, 16, 8, 64), "float8_e4m3fn") for n in ("k_cache", "v_cache")}
        if call(**dict(e4m3, q=tensor("q", (2, 4, 32, 64)), **d64)).head_dim != 64:
            failures.append("decode e4m3: head dim 64 is not its problem's")
    except m.Unsupported as e:
        failures.append(f"decode: refused: {e}")
    refuses("int64 table", "block_table is int64: give int32", block_table=tensor("block_table", (2, 5), "int64"))
    refuses("lengths elsewhere", "cache_seqlens is on cuda:1: give CUDA tensors of q's device",
            cache_seqlens=tensor("cache_seqlens", (2,), "int32", "cuda:1"))
    refuses("head dim 96", "give one head dim, 64 or 128", q=tensor("q", (2, 4, 32, 96)),
            k_cache=tensor("k_cache", (10, 16, 8, 96)), v_cache=tensor("v_cache", (10, 16, 8, 96)))
    refuses("heads", "a multiple of the cache's", q=tensor("q", (2, 4, 30, 128)))
    refuses("batch", "give one per sequence", block_table=tensor("block_table", (3, 5), "int32"))
    refuses("strided q", "q has strides", q=tensor("q", (2, 4, 32, 128), stride=(4 * 32 * 256, 32 * 256, 256, 1)))
    refuses("misaligned", "k_cache: its address is not 16-byte aligned", k_cache=tensor("k_cache", (10, 16, 8, 128),
                                                                                        address=2))
    refuses("v shape", "give one shape", v_cache=tensor("v_cache", (10, 16, 4, 128)))
    refuses("fp16", "q is float16: give bfloat16", q=tensor("q", (2, 4, 32, 128), "float16"))
    refuses("max_seqlen_k", "max_seqlen_k = 0", max_seqlen_k=0)
    check_decode_e4m3(tensor, refuses, e4m3)


def check_decode_e4m3(tensor, refuses, e4m3):
    """An e4m3 cache's refusals: scales missing, misshapen or elsewhere, scales with a bf16 cache,
    caches of two dtypes."""
    both = {"k_cache": e4m3["k_cache"], "v_cache": e4m3["v_cache"]}
    refuses("e4m3 without scales", "k_scale is None with float8_e4m3fn caches: give k_scale and v_scale", **both)
    refuses("e4m3 without v_scale", "v_scale is None with float8_e4m3fn caches", **both, k_scale=e4m3["k_scale"])
    for what, expected, scale in (
            ("a scale per query head", "k_scale has shape (32,): give one scale per cache head, (8,)",
             tensor("k_scale", (32,), "float32")),
            ("a 2-d scale", "k_scale has shape (1, 8): give (Hkv,)", tensor("k_scale", (1, 8), "float32")),
            ("a bf16 scale", "k_scale is bfloat16: give float32", tensor("k_scale", (8,))),
            ("a scale on the host", "k_scale is on cpu: give CUDA tensors of q's device",
             tensor("k_scale", (8,), "float32", "cpu")),
            ("a scale on another GPU", "k_scale is on cuda:1", tensor("k_scale", (8,), "float32", "cuda:1")),
            ("a strided scale", "k_scale has strides (2,): give a contiguous tensor",
             tensor("k_scale", (8,), "float32", stride=(2,)))):
        refuses(what, expected, **dict(e4m3, k_scale=scale))
    refuses("a v_scale per query head", "v_scale has shape (32,)", **dict(e4m3, v_scale=tensor("v_scale", (32,),
                                                                                              "float32")))
    refuses("a bf16 cache with k_scale", "k_scale given with bfloat16 caches: scales are an e4m3 cache's alone",
            k_scale=e4m3["k_scale"])
    refuses("a bf16 cache with v_scale", "v_scale given with bfloat16 caches", v_scale=e4m3["v_scale"])
    refuses("k e4m3, v bf16", "k_cache is float8_e4m3fn and v_cache bfloat16: give both bfloat16, or both "
            "float8_e4m3fn", **dict(e4m3, v_cache=tensor("v_cache", (10, 16, 8, 128))))
    refuses("e5m2 caches", "k_cache is float8_e5m2 and v_cache float8_e5m2",
            **{n: tensor(n, (10, 16, 8, 128), "float8_e5m2") for n in ("k_cache", "v_cache")})
    refuses("misaligned e4m3", "v_cache: its address is not 16-byte aligned",
            **dict(e4m3, v_cache=tensor("v_cache", (10, 16, 8, 128), "float8_e4m3fn", address=8)))


def main():
    args = sys.argv[1:]
    if args[:1] == ["--library-calls"]:
        installed = args[1:] == ["--installed"]
        return library_calls(None if installed else args[1], None if installed else args[2])
    installed = args == ["--installed"]
    m = load_package(None if installed else args[0])
    failures = []
    address = iter(range(1 << 20, 1 << 30, 1 << 16))

    def tensor(name, shape, stride=None, dtype="bfloat16", device="cuda:0", offset=0):
        return m.Tensor(name, shape, stride or contiguous(shape), dtype, device, next(address) + offset)

    def qkv(shape=(2, 8, 1000, 128), kv_heads=None, **changes):
        kv_shape = (shape[0], kv_heads or shape[1], shape[2], shape[3])
        made = {"q": tensor("q", shape), "k": tensor("k", kv_shape), "v": tensor("v", kv_shape)}
        made.update(changes)
        return made["q"], made["k"], made["v"]

    def accepts(what, *args, **kwargs):
        try:
            return m.check_call(*args, **kwargs)
        except m.Unsupported as e:
            failures.append(f"{what}: refused: {e}")

    def refuses(what, expected, *args, **kwargs):
        expect_refused(m, failures, what, expected, "supported: bf16 CUDA tensors",
                       lambda: m.check_call(*args, **kwargs))

    # What passes, and the problem it describes.
    p = accepts("contiguous", *qkv())
    if p != m.Problem(2, 8, 8, 1000, 1000, 128, False):
        failures.append(f"contiguous: problem {p}")
    p = accepts("GQA 4:1, causal", *qkv((3, 8, 100, 64), kv_heads=2), is_causal=True, enable_gqa=True)
    if p != m.Problem(3, 8, 2, 100, 100, 64, True):
        failures.append(f"GQA: problem {p}")
    longer_keys = {"k": tensor("k", (2, 8, 4096, 128)), "v": tensor("v", (2, 8, 4096, 128))}
    p = accepts("fewer queries than keys", *qkv(**longer_keys))
    if p != m.Problem(2, 8, 8, 1000, 4096, 128, False):
        failures.append(f"fewer queries than keys: problem {p}")
    p = accepts("causal_lower_right", *qkv(**longer_keys), attn_mask=causal_bias("LOWER_RIGHT", 1000, 4096))
    if p != m.Problem(2, 8, 8, 1000, 4096, 128, True):
        failures.append(f"causal_lower_right: problem {p}")
    p = accepts("causal_upper_left of one length", *qkv(), attn_mask=causal_bias("UPPER_LEFT", 1000, 1000))
    if p is None or not p.causal:
        failures.append(f"causal_upper_left of one length: problem {p}")
    shape = (2, 8, 1000, 128)
    accepts("(B, N, H, D) transposed", *qkv(q=tensor("q", shape, transposed(shape)),
                                            k=tensor("k", shape, transposed(shape)),
                                            v=tensor("v", shape, transposed(shape))))
    accepts("slices of a fused QKV", *qkv(q=tensor("q", shape, transposed(shape, 2 * 8 * 128)),
                                          k=tensor("k", shape, transposed(shape, 2 * 8 * 128), offset=8 * 128 * 2)))
    accepts("scale 1/sqrt(D) given", *qkv(), scale=128 ** -0.5)
    accepts("no address while torch.compile traces", *qkv(q=tensor("q", shape)._replace(address=None)))
    accepts("an axis of extent 1 takes any stride", *qkv((1, 1, 1, 64), q=tensor("q", (1, 1, 1, 64), (3, 5, 7, 1))))

    # SDPA's options the kernels do not take.
    refuses("attn_mask", "attn_mask is not supported", *qkv(), attn_mask=object())
    refuses("is_causal of two lengths", "give attn_mask=torch.nn.attention.bias.causal_lower_right(1000, 4096)",
            *qkv(**longer_keys), is_causal=True)
    refuses("causal_upper_left of two lengths", "attn_mask is not supported but as",
            *qkv(**longer_keys), attn_mask=causal_bias("UPPER_LEFT", 1000, 4096))
    refuses("a causal bias of other lengths", "give one of the queries' and keys' lengths, 1000 x 4096",
            *qkv(**longer_keys), attn_mask=causal_bias("LOWER_RIGHT", 1000, 1000))
    refuses("dropout", "dropout_p = 0.1: only 0.0 is supported", *qkv(), dropout_p=0.1)
    refuses("scale", "scale = 0.5: only the default 1/sqrt(D)", *qkv(), scale=0.5)
    # Dtypes, devices, shapes.
    refuses("fp16", "q is float16: give bfloat16", *qkv(q=tensor("q", shape, dtype="float16")))
    refuses("fp32 v", "v is float32: give bfloat16", *qkv(v=tensor("v", shape, dtype="float32")))
    refuses("cpu", "k is on cpu: give CUDA tensors", *qkv(k=tensor("k", shape, device="cpu")))
    refuses("two devices", "give tensors of one device", *qkv(v=tensor("v", shape, device="cuda:1")))
    refuses("head dim 80", "q has head dim 80: give 64, 96, 128 or 256", *qkv((2, 8, 100, 80)))
    for d in (96, 256):  # the forward alone
        if getattr(accepts(f"head dim {d} without a gradient", *qkv((2, 8, 100, d))), "head_dim", None) != d:
            failures.append(f"head dim {d} without a gradient: not its problem")
        refuses(f"head dim {d} with a gradient", f"head dim {d} with inputs that require grad: the backward takes 64 "
                "or 128", *qkv((2, 8, 100, d)), needs_gradient=True)
    accepts("head dim 128 with a gradient", *qkv((2, 8, 100, 128)), needs_gradient=True)
    refuses("3-d", "q has 3 dims (8, 100, 64): give (B, H, N, D)", *qkv(q=tensor("q", (8, 100, 64), (6400, 64, 1))))
    refuses("empty", "q is empty (0, 8, 100, 64)", *qkv((0, 8, 100, 64)))
    refuses("k and v differ", "give k and v of one shape", *qkv(v=tensor("v", (2, 8, 999, 128))))
    refuses("batch differs", "give q and k of one batch and head dim",
            *qkv(k=tensor("k", (1, 8, 1000, 128)), v=tensor("v", (1, 8, 1000, 128))))
    refuses("GQA without enable_gqa", "enable_gqa=True", *qkv(kv_heads=2))
    refuses("heads not a multiple", "a multiple of the key/value heads", *qkv(kv_heads=3), enable_gqa=True)
    # Strides the TMA cannot describe.
    refuses("head dim strided", "q: head-dim stride 2: the head dim must be contiguous",
            *qkv(q=tensor("q", shape, (2 * 8 * 1000 * 128, 2 * 1000 * 128, 256, 2))))
    refuses("row stride not 16 bytes", "k: seq stride 132 (264 bytes): the TMA needs strides that are multiples "
            "of 16 bytes", *qkv(k=tensor("k", shape, (8 * 1000 * 132, 1000 * 132, 132, 1))))
    refuses("broadcast", "v: head stride 0: give a positive stride",
            *qkv(v=tensor("v", shape, (1000 * 128, 0, 128, 1))))
    refuses("misaligned", "q: its address is not 16-byte aligned", *qkv(q=tensor("q", shape, offset=2)))

    check_varlen(m, tensor, failures)
    check_decode(m, failures)

    # No library: the error says how to install the package or point at one.
    with tempfile.TemporaryDirectory() as tmp:
        try:
            m.library_path(os.path.join(tmp, "none.so"))
            failures.append("a missing library was accepted")
        except FileNotFoundError as e:
            if "install the package (pip install . in a checkout" not in str(e):
                failures.append(f"missing library: {e}")

    if installed or len(args) > 1:
        check_library(args, failures)

    for f in failures:
        print("FAILED:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
