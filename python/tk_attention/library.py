"""libtk_attention_c.so (kernels/attention/c_api.cpp) through ctypes: the one boundary between
Python and the kernels. The package carries the library beside this file; load(path) takes another
(scripts/compare_sdpa.py times a build's). Plain Python: no torch, and no import from the package,
so a script can load this file alone.
"""
import ctypes
import os

LIBRARY = "libtk_attention_c.so"
# The C interface's dq_path for each path's name (attention::DqPath; tkprobe attention --dq).
DQ_PATHS = {"fastest": 0, "deterministic": 1, "reduce": 2}

lib = None  # the library load() declared last


def library_path(given=None):
    """The library to load: `given`, or the one the package carries beside this file."""
    path = given or os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tk_attention: no library at {path}: install the package (pip install . in a "
                                f"checkout, python/README.md), or give a built {LIBRARY} to tk_attention.load()")
    return os.path.normpath(path)


def launcher(handle, launch, destroy):
    """(launch_on, release) of a pass a create call prepared, or None where it refused (a null
    handle; the reason is on stderr). launch_on(stream) launches it on a CUDA stream given as an
    integer (torch.cuda.Stream.cuda_stream) and raises RuntimeError where the launch fails;
    release() frees it."""
    if not handle:
        return None

    def launch_on(stream):
        if launch(handle, ctypes.c_void_p(stream)) != 0:
            raise RuntimeError(f"tk_attention: {launch.__name__} failed")
    return launch_on, lambda: destroy(handle)


def load(path=None):
    """Loads the library (library_path) and declares its functions; returns it."""
    global lib
    loaded = ctypes.CDLL(library_path(path))
    p, i, strides = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)
    loaded.tk_attention_create.restype = p
    loaded.tk_attention_create.argtypes = [p] * 5 + [i] * 7
    loaded.tk_attention_create_strided.restype = p
    loaded.tk_attention_create_strided.argtypes = [p] * 5 + [i] * 8 + [strides]
    loaded.tk_attention_launch.argtypes = [p, p]
    loaded.tk_attention_destroy.argtypes = [p]
    loaded.tk_attention_fp8_create.restype = p
    loaded.tk_attention_fp8_create.argtypes = [p] * 3 + [ctypes.c_float] * 3 + [p] * 2 + [i] * 6
    loaded.tk_attention_fp8_launch.argtypes = [p, p]
    loaded.tk_attention_fp8_destroy.argtypes = [p]
    loaded.tk_attention_backward_scratch_bytes.restype = ctypes.c_longlong
    loaded.tk_attention_backward_scratch_bytes.argtypes = [i] * 6
    loaded.tk_attention_backward_create.restype = p
    loaded.tk_attention_backward_create.argtypes = [p] * 9 + [i] * 6 + [strides, p]
    loaded.tk_attention_backward_scratch_bytes_opts.restype = ctypes.c_longlong
    loaded.tk_attention_backward_scratch_bytes_opts.argtypes = [i] * 8
    loaded.tk_attention_backward_create_opts.restype = p
    loaded.tk_attention_backward_create_opts.argtypes = [p] * 9 + [i] * 7 + [strides, p, i]
    loaded.tk_attention_backward_dq_path.argtypes = [i] * 8
    loaded.tk_attention_backward_launch.argtypes = [p, p]
    loaded.tk_attention_backward_destroy.argtypes = [p]
    offsets = ctypes.POINTER(ctypes.c_int)
    loaded.tk_attention_varlen_create.restype = p
    loaded.tk_attention_varlen_create.argtypes = [p] * 5 + [offsets] * 2 + [i] * 5 + [strides]
    loaded.tk_attention_varlen_launch.argtypes = [p, p]
    loaded.tk_attention_varlen_destroy.argtypes = [p]
    loaded.tk_attention_varlen_backward_scratch_bytes.restype = ctypes.c_longlong
    loaded.tk_attention_varlen_backward_scratch_bytes.argtypes = [offsets] * 2 + [i] * 6
    loaded.tk_attention_varlen_backward_create.restype = p
    loaded.tk_attention_varlen_backward_create.argtypes = [p] * 9 + [offsets] * 2 + [i] * 5 + [strides, p, i]
    loaded.tk_attention_varlen_backward_launch.argtypes = [p, p]
    loaded.tk_attention_varlen_backward_destroy.argtypes = [p]
    loaded.tk_attention_decode_splits.argtypes = [i] * 12
    loaded.tk_attention_decode_scratch_bytes.restype = ctypes.c_longlong
    loaded.tk_attention_decode_scratch_bytes.argtypes = [i] * 6
    loaded.tk_attention_decode_create.restype = p
    loaded.tk_attention_decode_create.argtypes = [p] * 9 + [i] * 12 + [p]
    loaded.tk_attention_decode_launch.argtypes = [p, p]
    loaded.tk_attention_decode_destroy.argtypes = [p]
    lib = loaded
    return loaded


def loaded():
    """The library load() declared, loading the package's own on first use."""
    return lib or load()
