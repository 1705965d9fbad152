#pragma once
// What a probe (or one kind of its rows) needs of the GPU, and whether this binary can run it
// there: the compute capability, Hopper's arch-specific features, and a kernel image for the GPU.
// Decided on the host before any launch, so a GPU that lacks something gets a `skipped` row that
// says what, never a CUDA error.
#include <string>
#include <string_view>
#include <vector>

#include "src/device.hpp"

namespace tkprobe {

inline constexpr int kSm90aCc = 90;  // the one compute capability sm_90a code runs on

// Features that exist only in sm_90a code, which runs on compute capability 9.0 alone.
enum class Sm90aFeature { wgmma, tma, clusters, setmaxnreg, sm90a_kernels };

std::string_view feature_name(Sm90aFeature f);

// The oldest target of the portable code: cp.async, bf16 mma.sync and the sm_80 build.
inline constexpr int kPortableMinCc = 80;

struct Requirements {
  int min_cc = kPortableMinCc;        // portable code: the oldest compute capability it runs on
  std::vector<Sm90aFeature> sm90a{};  // any: the code is built for sm_90a alone
};

// What the kinds of rows that several probes and their tests share need: the TMA's copies and wgmma.
inline const Requirements kTmaNeeds{.sm90a = {Sm90aFeature::tma}};
inline const Requirements kWgmmaNeeds{.sm90a = {Sm90aFeature::wgmma}};

// The kernel images this binary holds for its portable code (CMAKE_CUDA_ARCHITECTURES): machine
// code for each entry of `sass` (90 with arch_specific: sm_90a), PTX for each entry of `ptx`.
struct KernelImages {
  struct Sass {
    int cc;
    bool arch_specific;
  };
  std::vector<Sass> sass;
  std::vector<int> ptx;
  bool any = false;  // "all", "all-major", "native": CMake chose them, and a launch reports a gap
};

// CMake's architecture list ("90a-real;80-real;80-virtual"); an entry without -real or -virtual
// gives both. Throws std::invalid_argument on an entry it cannot read.
KernelImages parse_architectures(std::string_view list);

// The images of this build.
const KernelImages& this_build();

// How code needing `r` would run on a GPU of compute capability `cc` with `images`: from machine
// code, from PTX the driver compiles, or not at all. For the support matrix (`tkprobe list --matrix`).
enum class ImageUse { none, machine_code, ptx };
ImageUse image_use(const Requirements& r, int cc, const KernelImages& images = this_build());

// The GPUs the support matrix has a column for: a compute capability and cards that have it.
struct GpuFamily {
  int cc;
  std::string_view cards;
};
inline constexpr GpuFamily kMatrixFamilies[] = {
    {80, "A100"},  {86, "A10, A40, RTX 30"}, {89, "L4, L40S, RTX 4090"}, {90, "H100, H200"},
    {100, "B200"}, {120, "RTX 50"}};

// "sm_90a, sm_80, PTX for compute_80".
std::string image_list(const KernelImages& images);

// "sm_86", "sm_90a".
std::string sm_name(int cc, bool arch_specific = false);

// What `r` needs, for `tkprobe list` and --help: "sm_80 or newer", "sm_90a (wgmma, TMA)".
std::string describe(const Requirements& r);

// Why code needing `r` cannot run on `d` with `images`, or "": "needs sm_90a (wgmma); this GPU
// (device 0, NVIDIA A10) is sm_86".
std::string why_not_runnable(const Requirements& r, const DeviceInfo& d, const KernelImages& images = this_build());

}  // namespace tkprobe
