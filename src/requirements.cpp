#include "src/requirements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace tkprobe {
namespace {

int major(int cc) { return cc / 10; }  // cc: major x 10 + minor, as DeviceInfo::cc()

std::string device_text(const DeviceInfo& d) {
  return fmt::format("this GPU (device {}, {}) is {}", d.index, d.name, sm_name(d.cc()));
}

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

std::string feature_list(const std::vector<Sm90aFeature>& features) {
  std::vector<std::string> names;
  for (Sm90aFeature f : features) names.emplace_back(feature_name(f));
  return join(names);
}

// Machine code runs on its own major revision at its minor or newer; sm_90a code on 9.0 alone.
bool has_machine_code(const KernelImages& images, int cc) {
  const auto runs = [&](const KernelImages::Sass& s) {
    return s.arch_specific ? s.cc == cc : major(s.cc) == major(cc) && s.cc <= cc;
  };
  return images.any || std::ranges::any_of(images.sass, runs);
}

// PTX is compiled by the driver for any GPU at its compute capability or newer.
bool has_ptx(const KernelImages& images, int cc) {
  return std::ranges::any_of(images.ptx, [&](int p) { return p <= cc; });
}

bool has_sm90a(const KernelImages& images) {
  return images.any ||
         std::ranges::any_of(images.sass, [](const auto& s) { return s.arch_specific && s.cc == kSm90aCc; });
}

// One entry of CMake's list: "80", "90a-real", "80-virtual", "100f-real".
void add_architecture(std::string_view entry, KernelImages& images) {
  constexpr std::string_view kReal = "-real", kVirtual = "-virtual";
  const bool real = !entry.ends_with(kVirtual), virt = !entry.ends_with(kReal);
  if (!real) entry.remove_suffix(kVirtual.size());
  if (!virt) entry.remove_suffix(kReal.size());
  int cc = 0;
  const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), cc);
  const std::string_view suffix(end, entry.data() + entry.size() - end);
  if (error != std::errc() || (suffix != "" && suffix != "a" && suffix != "f")) {
    throw std::invalid_argument(fmt::format("unreadable CUDA architecture '{}'", entry));
  }
  // Arch-specific PTX (compute_90a) compiles for its own GPU alone, as its machine code runs there alone.
  if (suffix == "a")
    images.sass.push_back({cc, true});
  else {
    if (real) images.sass.push_back({cc, false});
    if (virt) images.ptx.push_back(cc);
  }
}

}  // namespace

std::string_view feature_name(Sm90aFeature f) {
  switch (f) {
    case Sm90aFeature::wgmma:
      return "wgmma";
    case Sm90aFeature::tma:
      return "TMA";
    case Sm90aFeature::clusters:
      return "clusters";
    case Sm90aFeature::setmaxnreg:
      return "setmaxnreg";
    case Sm90aFeature::sm90a_kernels:
      return "kernels built for it alone";
  }
  return "?";
}

KernelImages parse_architectures(std::string_view list) {
  KernelImages images;
  if (list == "all" || list == "all-major" || list == "native") {
    images.any = true;  // CMake chose the images: the launch itself reports a missing one
    return images;
  }
  while (!list.empty()) {
    const std::size_t cut = list.find_first_of(",; ");
    if (cut != 0) add_architecture(list.substr(0, cut), images);
    list.remove_prefix(cut == std::string_view::npos ? list.size() : cut + 1);
  }
  return images;
}

const KernelImages& this_build() {
  static const KernelImages images = parse_architectures(TKPROBE_CUDA_ARCHITECTURES);
  return images;
}

ImageUse image_use(const Requirements& r, int cc, const KernelImages& images) {
  if (!r.sm90a.empty()) return cc == kSm90aCc && has_sm90a(images) ? ImageUse::machine_code : ImageUse::none;
  if (cc < r.min_cc) return ImageUse::none;
  if (has_machine_code(images, cc)) return ImageUse::machine_code;
  return has_ptx(images, cc) ? ImageUse::ptx : ImageUse::none;
}

std::string image_list(const KernelImages& images) {
  std::vector<std::string> names;
  for (const auto& s : images.sass) names.push_back(sm_name(s.cc, s.arch_specific));
  for (int p : images.ptx) names.push_back(fmt::format("PTX for compute_{}", p));
  return join(names);
}

std::string sm_name(int cc, bool arch_specific) { return fmt::format("sm_{}{}", cc, arch_specific ? "a" : ""); }

std::string describe(const Requirements& r) {
  if (!r.sm90a.empty()) return fmt::format("{} ({})", sm_name(kSm90aCc, true), feature_list(r.sm90a));
  return r.min_cc > 0 ? fmt::format("{} or newer", sm_name(r.min_cc)) : "any GPU";
}

std::string why_not_runnable(const Requirements& r, const DeviceInfo& d, const KernelImages& images) {
  if (image_use(r, d.cc(), images) != ImageUse::none) return "";
  if (!r.sm90a.empty()) {
    const std::string needs = "needs " + describe(r);
    if (d.cc() != kSm90aCc) return fmt::format("{}; {}", needs, device_text(d));
    // A build without sm_90a in its list (PTX alone) runs as a newer GPU would: its Hopper code unused.
    return fmt::format("{}; this binary is built for {} alone", needs, image_list(images));
  }
  if (d.cc() < r.min_cc) return fmt::format("needs {} or newer; {}", sm_name(r.min_cc), device_text(d));
  return fmt::format(
      "this binary holds no kernel image for {} ({}): rebuild with CMAKE_CUDA_ARCHITECTURES "
      "holding {}-real, or a -virtual architecture for the driver to compile",
      sm_name(d.cc()), image_list(images), d.cc());
}

}  // namespace tkprobe
