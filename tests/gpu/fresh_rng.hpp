#pragma once
// The kernels' GPU tests draw their inputs from a generator seeded afresh each run: every run meets
// new random inputs, never the same few.
#include <random>

namespace gpu_inputs {

inline std::mt19937_64 fresh_rng() { return std::mt19937_64(std::random_device{}()); }

}  // namespace gpu_inputs
