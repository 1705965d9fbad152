// cluster: what thread-block clusters (sm_90) give a kernel. A cluster's blocks run at once on one
// GPC and read one another's shared memory (distributed shared memory) by cluster addresses.
//   limits     how many clusters of each size the GPU holds at once (the occupancy API), and so how
//              many blocks: sizes past 8 need the non-portable attribute, and the driver may refuse them
//   latency    one thread's dependent chase through a chain in its own block's memory and in other
//              ranks', through cluster addresses: the slope of cycles against chase length, as in
//              smem-latency
//   bandwidth  every block of every co-resident cluster reads a 64 KiB buffer in its own memory or its
//              neighbour's with 16-byte loads: TB/s by CUDA events, bytes per SM cycle at block 0's clock
//   multicast  every block of every co-resident cluster receives the same sequence of 16 KiB tiles by
//              TMA, multicast by rank 0 or loaded by each block: TB/s delivered into shared memory and
//              read from L2 (multicast reads a tile once per cluster), checked by sums of what landed
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <optional>

#include "probes/cluster/cluster_kernels.hpp"
#include "probes/cluster/metrics.hpp"
#include "probes/measure/chain.hpp"
#include "probes/measure/chase_slope.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "probes/timed_kernels/tma_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::cluster;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace cl = cluster;

constexpr int kChainWords = 4096;   // a 16 KiB chain in the target block's memory
constexpr int kChainStride = 33;    // words between links: 132 bytes, a new bank and line each load
constexpr int kPasses = 64, kQuickPasses = 8;  // reads of the 64 KiB buffer per block per launch
// The multicast tiles: 8 MiB, 512 tiles, far more than a round of every co-resident cluster (2 tiles
// each) and L2-resident (the H200's L2 holds 60 MiB), so the rows measure L2 to shared memory.
constexpr std::size_t kTileBufferBytes = std::size_t(8) << 20;
constexpr int kRounds = 512, kQuickRounds = 128;  // rounds of cl::kTilesPerRound tiles per cluster per launch

// The tiles every multicast row loads: bandwidth's hash pattern (no zero word, a fresh seed) as a
// column of 128x64 bf16 tiles under one tensor map, and each tile's word sum mod 2^32 on the host.
struct Tiles {
  static constexpr int kCount = int(kTileBufferBytes / cl::kTileBytes);
  static constexpr int kWords = cl::kTileBytes / int(sizeof(std::uint32_t));

  explicit Tiles(ProbeContext& ctx)
      : seed(static_cast<std::uint32_t>(ctx.rng())), words(kTileBufferBytes / sizeof(uint4)), sums(kCount) {
    bandwidth::fill(words.get(), words.size(), seed, ctx.harness.stream());
    for (int t = 0; t < kCount; ++t) {
      for (int w = 0; w < kWords; ++w) sums[t] += bandwidth::pattern(std::uint64_t(t) * kWords + w, seed);
    }
    const tma::Extent tensor{std::uint64_t(kCount) * cl::kTileRows, cl::kTileCols};
    const CUresult r = tma::encode_map(&map, words.get(), cl::kTileElementBytes, tensor, {cl::kTileRows, cl::kTileCols},
                                       CU_TENSOR_MAP_SWIZZLE_128B);
    if (r != CUDA_SUCCESS)
      throw CudaError(fmt::format("cuTensorMapEncodeTiled refused the tile: {}", tma::result_name(r)));
  }
  // What every block of cluster c must sum: its tiles (c + k x clusters) % kCount, k < tiles_per_cluster.
  std::uint32_t expected(int c, int clusters, int tiles_per_cluster) const {
    std::uint32_t sum = 0;
    for (int k = 0; k < tiles_per_cluster; ++k) sum += sums[(c + std::size_t(k) * clusters) % kCount];
    return sum;
  }

  std::uint32_t seed;
  DeviceBuffer<uint4> words;
  std::vector<std::uint32_t> sums;
  CUtensorMap map{};
};

class Cluster final : public Probe {
 public:
  std::string name() const override { return "cluster"; }
  std::string summary() const override {
    return "Thread-block clusters: how many fit, distributed shared memory latency and bandwidth against local";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::clusters, Sm90aFeature::tma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--sizes", sizes_, "Cluster sizes, 2..16 (comma-separated; default 2,4,8,16; --quick 2,8)")
        ->delimiter(',')
        ->check(CLI::Range(2, cl::kNonPortableMax));
  }

  void run(ProbeContext& ctx) override {
    const std::vector<int> chosen = sizes(ctx.options.quick);
    const int first = chosen.front();
    std::optional<double> own_latency, remote_latency, own_bandwidth, remote_bandwidth;
    std::optional<int> largest;
    std::optional<Tiles> tiles;
    std::vector<std::string> multicast_text;
    for (int size : chosen) {
      const auto clusters = limits(ctx, size);
      if (!clusters) continue;
      largest = size;
      const double remote = latency(ctx, size, 1);
      if (size > 2) latency(ctx, size, size - 1);
      const double neighbour = bandwidth(ctx, size, *clusters, 1);
      if (!tiles) tiles.emplace(ctx);
      const auto once = multicast(ctx, *tiles, size, cl::Delivery::multicast);
      const auto each = multicast(ctx, *tiles, size, cl::Delivery::each_block);
      if (once && each) {
        multicast_text.push_back(fmt::format("{}: {:.2f} vs {:.2f} TB/s ({:.2f}x)", size, *once, *each, *once / *each));
      }
      if (size != first) continue;
      own_latency = latency(ctx, size, 0);
      own_bandwidth = bandwidth(ctx, size, *clusters, 0);
      remote_latency = remote;
      remote_bandwidth = neighbour;
    }
    const auto text = [](std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : std::string("not run"); };
    ctx.finding(name(), fmt::format("clusters of {}: a dependent load costs {} cycles in the block's own shared memory "
                                    "and {} in rank 1's; 16-byte reads move {} bytes per SM cycle from the own block "
                                    "and {} from the neighbour's; the largest size that ran: {}",
                                    first, text(own_latency), text(remote_latency), text(own_bandwidth),
                                    text(remote_bandwidth), largest ? std::to_string(*largest) : std::string("none")));
    if (!multicast_text.empty()) {
      ctx.finding(name(), fmt::format("TMA multicast of each {} KiB tile to every block of the cluster against each "
                                      "block loading it, TB/s delivered into shared memory by cluster size: {}; "
                                      "multicast reads L2 once per cluster, each block once per block",
                                      cl::kTileBytes / 1024, fmt::join(multicast_text, "; ")));
    }
  }

 private:
  std::vector<int> sizes_;

  std::vector<int> sizes(bool quick) const {
    if (!sizes_.empty()) return sizes_;
    return quick ? std::vector<int>{2, 8} : std::vector<int>{2, 4, 8, 16};
  }

  // The limits row; the clusters of `size` that run at once, or none (the row says why).
  std::optional<int> limits(ProbeContext& ctx, int size) {
    Result r(name(), {{"test", "limits"}, {"cluster_size", size}});
    int clusters = 0;
    cudaError_t e = cl::prepare(size, kChainWords);
    if (e == cudaSuccess) e = cl::max_active_clusters(size, &clusters);
    if (e != cudaSuccess || clusters == 0) {
      cudaGetLastError();  // a refused attribute or size is this row's result, not an error for the next
      r.status = Status::skipped;
      r.reason = e != cudaSuccess ? fmt::format("the driver refuses clusters of {}: {}", size, cudaGetErrorString(e))
                                  : fmt::format("no cluster of {} blocks of {} KiB fits", size, cl::kStreamBytes / 1024);
      ctx.add(std::move(r));
      return std::nullopt;
    }
    r.value(metric::max_active_clusters, clusters);
    r.value(metric::blocks_at_once, clusters * size);
    r.value(metric::blocks_per_sm, double(clusters * size) / ctx.device.sms);
    r.value(metric::smem_per_block_bytes, cl::kStreamBytes);
    r.value(metric::threads_per_block, cl::kThreads);
    r.value(metric::portable, size <= cl::kPortableMax);
    ctx.add(std::move(r));
    return clusters;
  }

  // One thread of rank 0 chasing a chain in rank `target`'s shared memory (0: its own); its cycles.
  double latency(ProbeContext& ctx, int size, int target) {
    const std::vector<std::uint32_t> next = chain::strided(kChainWords, kChainStride);
    const std::vector<int> lengths = chase_lengths(ctx.options.quick);
    DeviceBuffer<std::uint32_t> d_next(next.size()), sink(1);
    DeviceBuffer<std::uint64_t> cycles(1);
    DeviceBuffer<ClockWindow> clock(1);
    d_next.upload(next);
    const auto chase_cycles = [&](int loads) {
      cycles.poison();
      TK_CUDA(cl::launch_chase(size, {d_next.get(), kChainWords, loads, target},
                               {cycles.get(), clock.get(), sink.get()}, ctx.harness.stream()));
      return static_cast<double>(cycles.download()[0]);  // synchronous: waits for the kernel
    };
    const ChaseSlope slope =
        measure_chase_slope(ctx.harness, fmt::format("cluster latency size={} target={}", size, target), lengths,
                            chase_cycles, [&] { return clock.download()[0]; });
    Result r(name(), {{"test", "latency"}, {"cluster_size", size}, {"target", target_name(target)}});
    add_chase_slope(r, slope);
    r.value(metric::chain_bytes, kChainWords * 4);
    ctx.add(std::move(r));
    return slope.m.stats.median;
  }

  // Every block of `clusters` clusters reading `offset` ranks along (0: its own memory); bytes per SM cycle.
  double bandwidth(ProbeContext& ctx, int size, int clusters, int offset) {
    const int passes = ctx.options.quick ? kQuickPasses : kPasses;
    DeviceBuffer<ClockWindow> clock(1);
    DeviceBuffer<std::uint32_t> sink(cl::kThreads);
    const double bytes = cl::stream_bytes_per_block(passes) * clusters * size;
    const auto launch = [&](cudaStream_t s) {
      TK_CUDA(cl::launch_stream(size, clusters, {offset, passes}, {clock.get(), sink.get()}, s));
    };
    const Measurement m = ctx.harness.time_kernel_rate(
        fmt::format("cluster bandwidth size={} source={}", size, source_name(offset)), launch, bytes / 1e12, clock.get());
    Result r(name(), {{"test", "bandwidth"}, {"cluster_size", size}, {"source", source_name(offset)}});
    r.metric(metric::tbps, m.stats, "TB/s", Better::higher);
    const double per_clock = m.stats.median * 1e12 / (m.sm_clock_mhz * 1e6 * ctx.device.sms);
    r.value(metric::bytes_per_clk_per_sm, per_clock);
    r.value(metric::clusters, clusters);
    r.value(metric::blocks, clusters * size);
    r.value(metric::bytes_per_block, cl::stream_bytes_per_block(passes));
    r.telemetry = m.telemetry;
    ctx.add(std::move(r));
    return per_clock;
  }

  // Every block of as many clusters as run at once receiving the same tiles, multicast by rank 0 or
  // loaded by each block: TB/s delivered into shared memory (the primary) and read from L2, then a
  // checked launch in which every block sums every word it received. The delivered TB/s, or none.
  std::optional<double> multicast(ProbeContext& ctx, const Tiles& tiles, int size, cl::Delivery d) {
    Result r(name(), {{"test", "multicast"}, {"cluster_size", size}, {"delivery", cl::name(d)}});
    int clusters = 0;
    const cudaError_t e = cl::max_active_multicast_clusters(size, &clusters);
    if (e != cudaSuccess || clusters == 0) {
      cudaGetLastError();
      r.status = Status::skipped;
      r.reason = e != cudaSuccess
                     ? fmt::format("the occupancy query refuses clusters of {}: {}", size, cudaGetErrorString(e))
                     : fmt::format("no cluster of {} blocks of {} B fits", size, cl::kMulticastSmem);
      ctx.add(std::move(r));
      return std::nullopt;
    }
    const int rounds = ctx.options.quick ? kQuickRounds : kRounds, blocks = clusters * size;
    const int tiles_per_cluster = rounds * cl::kTilesPerRound;
    cl::Multicast m{tiles.map, d, Tiles::kCount, rounds, false};
    DeviceBuffer<ClockWindow> clock(1);
    DeviceBuffer<std::uint32_t> sums(blocks);
    const auto launch = [&](cudaStream_t s) {
      TK_CUDA(cl::launch_multicast(size, clusters, m, {clock.get(), sums.get()}, s));
    };
    const double delivered = cl::multicast_bytes_per_block(rounds) * blocks;
    const Measurement meas = ctx.harness.time_kernel_rate(
        fmt::format("cluster multicast size={} delivery={}", size, cl::name(d)), launch, delivered / 1e12, clock.get());

    m.check = true;
    sums.poison(0);
    launch(ctx.harness.stream());
    const std::vector<std::uint32_t> got = sums.download();
    int wrong = 0;
    for (int b = 0; b < blocks; ++b) wrong += got[b] != tiles.expected(b / size, clusters, tiles_per_cluster);

    // Reads of each tile from L2 per cluster: one multicast, or one per block.
    const int reads = d == cl::Delivery::multicast ? 1 : size;
    r.metric(metric::delivered_tbps, meas.stats, "TB/s", Better::higher);
    r.value(metric::l2_read_tbps, meas.stats.median * reads / size);
    r.value(metric::bytes_per_clk_per_sm, meas.stats.median * 1e12 / (meas.sm_clock_mhz * 1e6 * ctx.device.sms));
    r.value(metric::clusters, clusters);
    r.value(metric::blocks, blocks);
    r.value(metric::tile_bytes, cl::kTileBytes);
    r.value(metric::tiles_per_block, tiles_per_cluster);
    r.value(metric::buffer_bytes, kTileBufferBytes);
    r.checked({{"what", "each block's sum of the words it received vs the host's sum of its cluster's tiles"},
               {"blocks_wrong", wrong},
               {"blocks", blocks}},
              wrong == 0);
    r.telemetry = meas.telemetry;
    ctx.add(std::move(r));
    return meas.stats.median;
  }

  static std::string target_name(int target) { return target == 0 ? "own" : fmt::format("rank {}", target); }
  static std::string source_name(int offset) { return offset == 0 ? "own" : "neighbour"; }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Cluster);

}  // namespace tkprobe
