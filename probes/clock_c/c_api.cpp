// The SM clock bracket (probes/measure/clock_bracket.hpp) behind C functions, so scripts/compare_sdpa.py reads
// the clock under every kernel it times, PyTorch's and FlashAttention-4's as well as the DSL's,
// the way tkprobe reads its own: clock64 over %globaltimer across the launch, on an SM. NVML's
// clock, read from the host while a launch was queued, was not the clock under it
// (docs/decisions/004-peers-in-one-process.md). Every function returns null, NaN or non-zero on
// failure, with the reason on stderr.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "probes/measure/clock_bracket.hpp"

namespace {

// `call()`, or `failed` with the exception's message on stderr.
template <class Call, class Result>
Result or_explain(const char* entry, Result failed, Call call) {
  try {
    return call();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", entry, e.what());
    return failed;
  }
}

tkprobe::SmClockBracket& bracket_of(void* handle) {
  if (handle == nullptr) throw std::invalid_argument("null bracket (tk_clock_create failed?)");
  return *static_cast<tkprobe::SmClockBracket*>(handle);
}

}  // namespace

extern "C" {

// A bracket on the current device. Free it with tk_clock_destroy.
void* tk_clock_create() {
  return or_explain("tk_clock_create", static_cast<void*>(nullptr), [] {
    int device = 0, sms = 0;
    TK_CUDA(cudaGetDevice(&device));
    TK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return static_cast<void*>(new tkprobe::SmClockBracket(sms));
  });
}

// On `stream` just before a launch's start event: stamps every SM.
int tk_clock_begin(void* handle, void* stream) {
  return or_explain("tk_clock_begin", 1, [&] {
    bracket_of(handle).begin(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

// On `stream` just after its stop event: closes the window on one SM.
int tk_clock_end(void* handle, void* stream) {
  return or_explain("tk_clock_end", 1, [&] {
    bracket_of(handle).end(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

// The last window's clock in MHz, once the stream has run its end (a synchronous copy); NaN when
// the window is empty (the SM that closed it was not stamped).
double tk_clock_mhz(void* handle) {
  return or_explain("tk_clock_mhz", std::nan(""), [&] {
    tkprobe::ClockWindow w{};
    TK_CUDA(cudaMemcpy(&w, bracket_of(handle).window(), sizeof w, cudaMemcpyDeviceToHost));
    return tkprobe::window_mhz(w);
  });
}

void tk_clock_destroy(void* handle) { delete static_cast<tkprobe::SmClockBracket*>(handle); }

}  // extern "C"
