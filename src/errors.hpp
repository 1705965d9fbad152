#pragma once
// Exit codes and the exceptions that carry them (the README's options and exit codes).
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace tkprobe {

enum class Exit : int {
  ok = 0,
  check_failed = 1,  // a correctness check or a regression failed
  usage = 2,         // bad option or input; the message says what is valid
  no_device = 3,     // no GPU, or none that the probe can run on
  runtime = 4,       // a CUDA or runtime error during a run
};

// Each error's message is one line that names what is wrong and what is valid.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct NoDeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw CudaError(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

}  // namespace tkprobe

// Checks a CUDA runtime call and throws CudaError naming the call.
#define TK_CUDA(call) ::tkprobe::cuda_check((call), #call)
