// A C interface to the Based forward (based.hpp), so that Python (ctypes) can call the same kernel
// `tkprobe based` times: scripts/compare_based.py times it beside fla's Based kernels in one
// process, on the same tensors. A pass is prepared once (tensor maps, the kernel's shared-memory
// attribute) and then launched, so a timed launch holds no host-side setup. Create returns null
// when the shape is refused (based::refusal), a pointer is null or not 16-byte aligned (the TMA
// reads from it), or preparing failed, with the reason on stderr.
//
// Layout: every tensor contiguous bf16, Q and K [batch][heads][seq][feature_dim], V and O
// [batch][heads][seq][value_dim], as torch.Tensor.contiguous() gives (B, H, N, D).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "kernels/based/based.hpp"

namespace {

using bf16 = __nv_bfloat16;

based::Shape shape_of(int batch, int heads, int seq, int feature_dim, int value_dim, int normalize) {
  return {batch, heads, seq, feature_dim, value_dim, normalize != 0};
}

// Why the tensors cannot be read by the TMA ("" when they can).
std::string pointer_refusal(const void* q, const void* k, const void* v, const void* o) {
  const char* names[] = {"q", "k", "v", "o"};
  const void* pointers[] = {q, k, v, o};
  for (int i = 0; i < 4; ++i) {
    if (pointers[i] == nullptr) return std::string(names[i]) + " is null: give a device pointer";
    if (reinterpret_cast<std::uintptr_t>(pointers[i]) % 16 != 0) {
      return std::string(names[i]) + " is not 16-byte aligned: give the start of a tensor (the TMA needs 16 bytes)";
    }
  }
  return "";
}

}  // namespace

extern "C" {

// Why the kernel cannot run this shape: the reason's length (0 when it can), and as much of it as
// fits into `why` (`size` bytes, NUL-terminated; `why` may be null to ask for the length alone).
int tk_based_refusal(int batch, int heads, int seq, int feature_dim, int value_dim, int normalize, char* why,
                     int size) {
  const std::string reason = based::refusal(shape_of(batch, heads, seq, feature_dim, value_dim, normalize));
  if (why != nullptr && size > 0) {
    const std::size_t n = reason.size() < std::size_t(size) ? reason.size() : std::size_t(size) - 1;
    std::memcpy(why, reason.data(), n);
    why[n] = '\0';
  }
  return int(reason.size());
}

// based::flops: the FLOPs `tkprobe based` divides by a launch's time (based.hpp says what it counts).
double tk_based_flops(int batch, int heads, int seq, int feature_dim, int value_dim, int normalize) {
  return based::flops(shape_of(batch, heads, seq, feature_dim, value_dim, normalize));
}

// A prepared forward pass o = Based(q, k, v) (normalized when `normalize` is not 0), or null with
// the reason on stderr. Free it with tk_based_forward_destroy.
void* tk_based_forward_create(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seq,
                              int feature_dim, int value_dim, int normalize) {
  const based::Shape s = shape_of(batch, heads, seq, feature_dim, value_dim, normalize);
  std::string refused = based::refusal(s);
  if (refused.empty()) refused = pointer_refusal(q, k, v, o);
  if (!refused.empty()) {
    std::fprintf(stderr, "tk_based_forward_create: %s\n", refused.c_str());
    return nullptr;
  }
  try {
    const based::Tensors t{static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
                           static_cast<bf16*>(o)};
    auto* forward = new based::Forward(t, s);
    // Preparing sets the kernel's shared-memory size without checking it: a failure shows here.
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) {
      delete forward;
      std::fprintf(stderr, "tk_based_forward_create: preparing failed: %s (%s)\n", cudaGetErrorName(status),
                   cudaGetErrorString(status));
      return nullptr;
    }
    return forward;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_based_forward_create: %s\n", e.what());
    return nullptr;
  }
}

// Launches it on `stream` (a cudaStream_t; null: the legacy default stream): the launch's
// cudaError_t as an int, 0 (cudaSuccess) when it was launched.
int tk_based_forward_launch(void* forward, void* stream) {
  if (forward == nullptr) return int(cudaErrorInvalidValue);
  try {
    (*static_cast<const based::Forward*>(forward))(static_cast<cudaStream_t>(stream));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_based_forward_launch: %s\n", e.what());
    return int(cudaErrorUnknown);
  }
  return int(cudaGetLastError());
}

// Frees it (null: nothing). A launch in flight still runs: its tensor maps were passed by value.
void tk_based_forward_destroy(void* forward) { delete static_cast<based::Forward*>(forward); }

}  // extern "C"
