// The datasheet tensor-core peaks of the common data-centre and workstation GPUs, dense (without
// 2:4 sparsity), in TFLOP/s (TOP/s for int8); 0 where the part has no such tensor type. Where a
// datasheet gives only the sparse figure, the dense one is half of it. GeForce parts: the rates with
// fp32 accumulation, which the probes' kernels use (fp16 accumulation runs twice as fast there).
#include <algorithm>
#include <cctype>
#include <vector>

#include "src/device.hpp"

namespace tkprobe {
namespace {

struct Row {
  std::vector<std::vector<std::string_view>> names;  // any one: every word of it in the device's name
  DatasheetPeaks peaks;
};

// First match wins: the NVL parts come before the SXM ones, whose names they also hold.
const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      // NVIDIA H100 NVL and H200 NVL product briefs: 1,671 TFLOP/s bf16 with sparsity.
      {{{"H100", "NVL"}}, {"H100 NVL", 835.5, 835.5, 417.5, 1671.0, 1671.0}},
      {{{"H200", "NVL"}}, {"H200 NVL", 835.5, 835.5, 417.5, 1670.5, 1670.5}},
      // NVIDIA H100 and H200 datasheets (SXM; the GH200 datasheet's GPU the same): 132 SMs x 4096
      // FLOP/clk x 1.83 GHz = 989.4 bf16.
      {{{"H200"}, {"GH200"}, {"H100", "HBM3"}, {"H100", "SXM5"}, {"H100", "SXM"}},
       {"H100/H200 SXM", 989.4, 989.4, 494.7, 1978.9, 1978.9}},
      {{{"H100", "PCIe"}}, {"H100 PCIe", 756.5, 756.5, 378.0, 1513.0, 1513.0}},
      // NVIDIA H20 product brief (as NVIDIA's partners publish it): 148 TFLOP/s bf16 dense.
      {{{"H20"}}, {"H20", 148.0, 148.0, 74.0, 296.0, 296.0}},
      // NVIDIA HGX B200 datasheet, per GPU (1000 W): 2.25 PFLOP/s bf16, 4.5 fp8 dense.
      {{{"B200"}}, {"B200", 2250.0, 2250.0, 1100.0, 4500.0, 4500.0}},
      // NVIDIA A100 datasheet: the same peaks for SXM4 and PCIe, 40 and 80 GB; no fp8.
      {{{"A100"}}, {"A100", 312.0, 312.0, 156.0, 0, 624.0}},
      // NVIDIA A10, A30 and A40 datasheets (A40's: 299.4 bf16 with sparsity).
      {{{"A10"}}, {"A10", 125.0, 125.0, 62.5, 0, 250.0}},
      {{{"A30"}}, {"A30", 165.0, 165.0, 82.0, 0, 330.0}},
      {{{"A40"}}, {"A40", 149.7, 149.7, 74.8, 0, 299.3}},
      // NVIDIA L4 datasheet (242 bf16, 485 fp8 with sparsity) and L40S datasheet.
      {{{"L4"}}, {"L4", 121.0, 121.0, 60.0, 242.5, 242.5}},
      {{{"L40S"}}, {"L40S", 362.05, 362.05, 183.0, 733.0, 733.0}},
      // NVIDIA Ada GPU Architecture whitepaper, appendix A (RTX 4090), fp32 accumulation.
      {{{"RTX", "4090"}}, {"GeForce RTX 4090", 165.2, 165.2, 82.6, 330.3, 660.6}},
      // NVIDIA RTX Blackwell GPU Architecture whitepaper, appendix A (RTX 5090), fp32 accumulation.
      {{{"RTX", "5090"}}, {"GeForce RTX 5090", 209.5, 209.5, 104.8, 419.0, 838.0}},
  };
  return table;
}

// The words of a device name, split at spaces and dashes: "NVIDIA A100-SXM4-80GB" gives NVIDIA,
// A100, SXM4, 80GB. Whole words, so that "H20" is not found in "NVIDIA H200".
std::vector<std::string_view> words(std::string_view name) {
  std::vector<std::string_view> out;
  while (!name.empty()) {
    const std::size_t cut = name.find_first_of(" -");
    if (cut != 0) out.push_back(name.substr(0, cut));
    name.remove_prefix(cut == std::string_view::npos ? name.size() : cut + 1);
  }
  return out;
}

bool same_word(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return std::toupper(x) == std::toupper(y); });
}

bool holds_all(const std::vector<std::string_view>& name, const std::vector<std::string_view>& key) {
  return std::ranges::all_of(key, [&](std::string_view k) {
    return std::ranges::any_of(name, [&](std::string_view w) { return same_word(w, k); });
  });
}

}  // namespace

std::optional<DatasheetPeaks> datasheet_peaks(std::string_view name) {
  const std::vector<std::string_view> have = words(name);
  for (const Row& row : rows()) {
    if (std::ranges::any_of(row.names, [&](const auto& key) { return holds_all(have, key); })) return row.peaks;
  }
  return std::nullopt;
}

}  // namespace tkprobe
