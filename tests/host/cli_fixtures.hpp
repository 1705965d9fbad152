#pragma once
// Helpers of the command line's host tests (tests/host/test_cli.cpp and each probe's host_test.cpp).
#include <cuda_runtime_api.h>

#include <string>

#include "tests/fixtures.hpp"

namespace cli_fixtures {

inline bool has_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

inline bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace cli_fixtures
