#include "kernels/based/based.hpp"

#include <cstdint>
#include <stdexcept>

#include "kernels/based/launcher.hpp"

namespace based {

double flops(Shape s) {
  const double features = 1.0 + s.feature_dim + double(s.feature_dim) * s.feature_dim;
  const double value_cols = s.value_dim + (s.normalize ? 1 : 0);
  const double per_row = 2.0 * kChunk * s.feature_dim + 2.0 * kChunk * value_cols + 2 * (2.0 * features * value_cols);
  return double(s.batch) * s.heads * s.seq * per_row;
}

std::string refusal(Shape s) {
  const auto positive = [](const char* name, int v) {
    return v > 0 ? std::string() : std::string(name) + " = " + std::to_string(v) + ": give a positive number";
  };
  for (const std::string& why : {positive("batch", s.batch), positive("heads", s.heads), positive("seq", s.seq)}) {
    if (!why.empty()) return why;
  }
  if (s.feature_dim != kFeatureDim) {
    return "feature dim = " + std::to_string(s.feature_dim) + ": give " + std::to_string(kFeatureDim);
  }
  if (s.value_dim != 64 && s.value_dim != 128) return "value dim = " + std::to_string(s.value_dim) + ": give 64 or 128";
  // One block per (batch, head).
  if (std::int64_t(s.batch) * s.heads > INT32_MAX) return "batch x heads is too large: give at most 2^31 - 1";
  return "";
}

namespace {

Shape checked(Shape s) {
  if (const std::string why = refusal(s); !why.empty()) throw std::invalid_argument("based: " + why);
  return s;
}

}  // namespace

Forward::Forward(const Tensors& t, Shape s) : launch_(detail::hopper_forward(t, checked(s))) {}

}  // namespace based
