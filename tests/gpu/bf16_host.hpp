#pragma once
// bf16 values on the host, for the attention tests' references: the exact float of a bf16, and
// a float rounded to bf16 as the hardware rounds (to nearest, ties to even).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bf16_host {

using bf16 = __nv_bfloat16;

inline float to_float(bf16 x) {
  const std::uint32_t u = std::uint32_t(__nv_bfloat16_raw(x).x) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even (the values here are finite).
inline bf16 to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  __nv_bfloat16_raw raw;
  raw.x = std::uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  return bf16(raw);
}

inline std::vector<float> to_floats(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), to_float);
  return out;
}

}  // namespace bf16_host
