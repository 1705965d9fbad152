// A C interface to the attention forward pass, so that Python (ctypes) can call the same kernels
// tkprobe times: scripts/compare_sdpa.py times them beside PyTorch's SDPA backends in one process,
// on the same tensors. A forward pass is prepared once (tensor maps, launch attributes) and then
// launched, so a timed launch holds no host-side setup.
#include <cstdio>
#include <exception>

#include "kernels/attention/attention.hpp"

extern "C" {

// A prepared forward pass (kernel 0: wgmma, 1: mma_sync), or null if the shape is refused or
// preparing it failed (the reason goes to stderr). Free it with tk_attention_destroy.
void* tk_attention_create(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int heads,
                          int kv_heads, int seq, int head_dim, int causal, int kernel) {
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0};
  const auto which = kernel == 0 ? attention::Kernel::wgmma : attention::Kernel::mma_sync;
  if (const std::string why = attention::refusal(s, which); !why.empty()) {
    std::fprintf(stderr, "tk_attention_create: %s\n", why.c_str());
    return nullptr;
  }
  try {
    const attention::Tensors t{static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                               static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), lse};
    return new attention::Forward(t, s, which);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_attention_create: %s\n", e.what());
    return nullptr;
  }
}

// Launches it on `stream`: 0 on success, 1 on a CUDA error.
int tk_attention_launch(void* forward, void* stream) {
  (*static_cast<attention::Forward*>(forward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_destroy(void* forward) { delete static_cast<attention::Forward*>(forward); }

}  // extern "C"
