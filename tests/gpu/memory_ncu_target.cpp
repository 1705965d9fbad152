// Launches the tma-reduce probe's kernels and the L2 read the l2 probe's ladder streams with, small,
// for ncu to count what the L2 sees (tests/gpu/check_ncu.py). Prints per launch, in order, what the
// probes' accounts imply: the reduced bytes as L2 reduction sectors exactly; L2 hits and traffic
// between the L2's two partitions as bounds, as their exact values depend on replacement policy.
#include <cstdio>

#include "probes/common/bandwidth_kernels.hpp"
#include "probes/tma-reduce/tma_reduce_kernels.hpp"
#include "src/device_buffer.hpp"

using namespace tkprobe;
namespace tr = tma_reduce;

namespace {

// Sectors (32 bytes) that reached an L2 slice as reductions: red.global's and, we take it, the TMA's
// cp.reduce.async.bulk's, which also reduces in L2 and returns no value (PTX ISA "red",
// "cp.reduce.async.bulk"), like SASS RED; op_atom would be ATOM's, which return one. Should ncu
// file the bulk form under op_atom after all, its cases read 0 here and the shown op_atom count
// says so. Should a reduction crossing to its line's far partition count at both slices, a case
// reads ~1.5x; the shown srcunit_tex count (sectors as they came from the SMs) would then hold it.
constexpr const char* kRedSectors = "lts__t_sectors_op_red.sum";
constexpr const char* kShowRed = R"(["lts__t_sectors_op_atom.sum", "lts__t_sectors_srcunit_tex_op_red.sum"])";
// Of all sectors the L2's slices looked up, the share that hit (ncu's "L2 Hit Rate"), and the
// sectors a slice received from the other partition over the LTC fabric rather than from an SM.
constexpr const char* kHitRate = "lts__t_sector_hit_rate.pct";
constexpr const char* kSectors = "lts__t_sectors.sum";
constexpr const char* kFabricSectors = "lts__t_sectors_srcunit_ltcfabric.sum";

constexpr int kSectorBytes = 32;
// ncu empties the caches before each replay pass (--cache-control all, its default), so a launch's
// first pass over the footprint misses, a far-homed line at both partitions: ~1.5 missed lookups
// per sector. 100 passes keep that under 1.5% of lookups; the probe's 21 would leave ~7%.
constexpr int kL2Passes = 100;

void reduce(tr::Method m, tr::Dtype t) {
  const tr::Launch l{8, 8, 4, 1};  // each block into its own tile: 4 additions of 1, exact in bf16
  DeviceBuffer<std::uint32_t> dst(std::size_t(l.targets) * tr::kTileWords);
  dst.poison(0);  // add's identity in f32 and bf16 (a memset: ncu profiles kernels only)
  tr::launch_reduce(m, tr::Op::add, t, l, dst.get(), nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  std::printf("{\"case\": \"tma-reduce add %s %s\", \"value\": \"%s\", \"show\": %s, \"expected\": %lld}\n",
              t == tr::Dtype::f32 ? "f32" : "bf16", m == tr::Method::bulk ? "bulk" : "atomic", kRedSectors, kShowRed,
              static_cast<long long>(l.blocks) * l.passes * tr::kTileBytes / kSectorBytes);
}

// Every SM (bandwidth's kBlocksPerSm blocks each) reads `share` of the L2 kL2Passes times with
// ld.global.cg, which caches in L2 only, so every load is an L2 lookup. `bounds` is the JSON tail.
void l2_read(const cudaDeviceProp& p, double share, const char* value, const char* per, const char* bounds) {
  const std::size_t count = std::size_t(share * p.l2CacheSize) / sizeof(uint4);
  DeviceBuffer<uint4> src(count);
  DeviceBuffer<std::uint32_t> sink(1);
  src.poison(0);
  bandwidth::launch_l2_read(src.get(), count, kL2Passes, sink.get(), p.multiProcessorCount * bandwidth::kBlocksPerSm,
                            nullptr);
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaDeviceSynchronize());
  std::printf("{\"case\": \"L2 read %.0f%% of the L2 (%.1f MiB)\", \"value\": \"%s\"", 100 * share,
              double(count * sizeof(uint4)) / (1 << 20), value);
  if (per) std::printf(", \"per\": \"%s\"", per);
  std::printf(", %s}\n", bounds);
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  for (tr::Dtype t : {tr::Dtype::f32, tr::Dtype::bf16})
    for (tr::Method m : {tr::Method::bulk, tr::Method::atomic}) reduce(m, t);

  cudaDeviceProp p{};
  TK_CUDA(cudaGetDeviceProperties(&p, 0));
  // Hit rate. At 25% every line stays in L2 after the cold pass: >= 95%. At 150% at most 2/3 of
  // the footprint fits at any moment, so at most ~2/3 of lookups can hit (fewer with the near
  // partition's copies taking room); 80% leaves room for how ncu counts, well below 95.
  l2_read(p, 0.25, kHitRate, nullptr, R"("min": 95)");
  l2_read(p, 1.5, kHitRate, nullptr, R"("max": 80)");
  // The fabric's share of L2 sectors. A partition caches what its SMs read (A100 whitepaper, "L2
  // cache"); the probe's latency step at ~55% says a footprint up to half the L2 (30 MiB on the
  // H200) is served from the SM's own partition. At 25% only the cold pass crosses, for the lines
  // homed in the far half: ~0.5 of ~100.5 lookups per sector, under 1%; max 0.1. At 75% a third or
  // more of the footprint cannot sit in the near half, so at least a third of reads cross and each
  // is looked up at both ends: share >= (1/3) / (4/3) = 0.25; min 0.2, twice 25%'s max.
  l2_read(p, 0.25, kFabricSectors, kSectors, R"("max": 0.1, "show": ["lts__t_sector_hit_rate.pct"])");
  l2_read(p, 0.75, kFabricSectors, kSectors, R"("min": 0.2, "show": ["lts__t_sector_hit_rate.pct"])");
  return 0;
}
