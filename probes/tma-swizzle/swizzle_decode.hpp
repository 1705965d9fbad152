#pragma once
// Recovering a swizzle rule from where a copy engine put each byte: given every element's linear
// byte offset and the offset it landed at, which offset bits the hardware XORed with which
// others. Plain C++, host-tested against the model in kernels/tk/layout/swizzle.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tkprobe::swizzle_decode {

struct Placement {
  std::uint32_t linear;  // where the element sits without a swizzle
  std::uint32_t placed;  // where the hardware put it
};

// placed bit `target` = linear bit `target` XOR linear bit `source`.
struct XorTerm {
  int target, source;
  bool operator==(const XorTerm&) const = default;
};

inline constexpr int kOffsetBits = 18;  // shared-memory offsets (256 KiB)

// The XOR terms that explain every placement, or nullopt when some changed bit is not a single
// other linear bit (then the rule is not an XOR swizzle of this kind).
inline std::optional<std::vector<XorTerm>> recover_xor_rule(const std::vector<Placement>& placements) {
  std::vector<XorTerm> terms;
  for (int target = 0; target < kOffsetBits; ++target) {
    const auto flipped = [&](const Placement& p) { return ((p.linear ^ p.placed) >> target) & 1u; };
    bool ever = false;
    for (const Placement& p : placements) ever |= flipped(p) != 0;
    if (!ever) continue;
    std::optional<int> source;
    for (int s = 0; s < kOffsetBits && !source; ++s) {
      bool matches = s != target;
      for (const Placement& p : placements) matches = matches && flipped(p) == ((p.linear >> s) & 1u);
      if (matches) source = s;
    }
    if (!source) return std::nullopt;
    terms.push_back({target, *source});
  }
  return terms;
}

// "bits 4-6 ^= bits 7-9 (16-byte chunk ^= 128-byte line mod 8)", or "identity".
inline std::string describe(const std::vector<XorTerm>& terms) {
  if (terms.empty()) return "identity (no bit moves)";
  const XorTerm& first = terms.front();
  const XorTerm& last = terms.back();
  bool contiguous = true;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    contiguous &= terms[i].target == first.target + int(i) && terms[i].source == first.source + int(i);
  }
  if (!contiguous) {
    std::string text;
    for (const XorTerm& t : terms) text += (text.empty() ? "" : ", ") + std::string("bit ") + std::to_string(t.target) +
                                          " ^= bit " + std::to_string(t.source);
    return text;
  }
  const int n = int(terms.size());
  return "bits " + std::to_string(first.target) + "-" + std::to_string(last.target) + " ^= bits " +
         std::to_string(first.source) + "-" + std::to_string(last.source) + " (" + std::to_string(1 << first.target) +
         "-byte chunk ^= " + std::to_string(1 << first.source) + "-byte line mod " + std::to_string(1 << n) + ")";
}

}  // namespace tkprobe::swizzle_decode
