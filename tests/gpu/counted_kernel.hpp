#pragma once
// A kernel whose instruction count is known from its source, for testing the counters.
#include <cuda_runtime_api.h>

namespace tkprobe::test_kernels {

// Dependent integer steps in one trip of the counted loop. Each step is x = x * x + c on the
// previous step's x: iterated squaring has no shorter form for a compiler to fold it into, so
// each step costs at least one SASS instruction (an IMAD).
inline constexpr int kStepsPerTrip = 128;

// One block of 32 threads (one warp) runs `trips` trips of the loop and stores its result to
// out[0..31], so the chain is not dead code.
void launch_counted(int trips, unsigned* out, cudaStream_t stream);

}  // namespace tkprobe::test_kernels
