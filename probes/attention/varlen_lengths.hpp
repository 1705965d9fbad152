#pragma once
// `tkprobe attention --varlen`'s sequence lengths (host side, tested in host_test.cpp): a list
// ("4096,100,1"), or "random:SEED", a long-tailed mix as packed training batches hold: lengths
// log-uniform from kShortest to kLongest until kRandomTokens tokens, the last one cut to fit (the
// sweep's 16k tokens, so its rates stand beside the dense rows').
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tkprobe::attention_probe {

inline constexpr int kRandomTokens = 16384, kShortest = 16, kLongest = 8192;
inline constexpr int kMaxLength = 1 << 20;  // per sequence, so that a batch's offsets fit int

// splitmix64: the same lengths for a seed on every machine (std's distributions may differ).
inline std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = state += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline std::vector<int> random_lengths(std::uint64_t seed) {
  std::vector<int> out;
  std::uint64_t state = seed;
  const double low = std::log(double(kShortest)), high = std::log(double(kLongest));
  for (int total = 0; total < kRandomTokens;) {
    const double unit = double(next_random(state) >> 11) * 0x1.0p-53;  // [0, 1)
    const int n = std::min(int(std::exp(low + unit * (high - low))), kRandomTokens - total);
    out.push_back(n);
    total += n;
  }
  return out;
}

// A non-negative integer of at most `max`, the whole of `text`, or nothing.
inline std::optional<long long> parse_count(const std::string& text, long long max) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return {};
  const long long v = std::stoll(text);
  return v <= max ? std::optional<long long>(v) : std::nullopt;
}

// The lengths `spec` names, or why it names none (`why`, saying what is valid).
inline std::vector<int> varlen_lengths(const std::string& spec, std::string& why) {
  const std::string valid = "give lengths separated by commas (e.g. 4096,100,1, each 0 to " +
                            std::to_string(kMaxLength) + ", at least one above 0) or random:SEED";
  if (spec.starts_with("random:")) {
    const auto seed = parse_count(spec.substr(7), INT64_MAX);
    if (!seed) why = "--varlen " + spec + ": the seed must be a non-negative integer: " + valid;
    return seed ? random_lengths(std::uint64_t(*seed)) : std::vector<int>{};
  }
  std::vector<int> out;
  long long total = 0;
  for (std::size_t at = 0; at <= spec.size();) {
    const std::size_t end = std::min(spec.find(',', at), spec.size());
    const auto n = parse_count(spec.substr(at, end - at), kMaxLength);
    if (!n) {
      why = "--varlen " + spec + ": '" + spec.substr(at, end - at) + "' is no length: " + valid;
      return {};
    }
    out.push_back(int(*n));
    total += *n;
    at = end + 1;
  }
  if (total == 0 || total > INT32_MAX / 2) {
    why = "--varlen " + spec + ": " + std::to_string(total) + " tokens in all: " + valid;
    return {};
  }
  return out;
}

}  // namespace tkprobe::attention_probe
