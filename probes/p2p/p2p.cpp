// p2p: what GPUs move between each other, pair by pair, over NVLink or PCIe.
//
// For every ordered pair (src, dst) of the devices --devices selects (every GPU by default), with
// peer access enabled wherever the driver allows it (cudaDeviceCanAccessPeer), four rows:
//   copy-engine  cudaMemcpyPeerAsync of a buffer from src to dst, issued on src;
//   sm-stores    a kernel on src writes dst's buffer, 16-byte stores from every SM;
//   sm-loads     a kernel on dst reads src's buffer, 16-byte loads from every SM;
//   sm-chase     one thread on dst follows a random cycle through 1 MiB of src's memory, a line per
//                load, so each load waits for the one before: a round trip over the link plus src's
//                L2 (the chain is written there just before), in dst's SM cycles.
// The stores and loads are bandwidth's streaming kernels, the chase mem-latency's, given a peer's
// address: nothing here is a kernel of its own. Bandwidth is GB/s of bytes that crossed the link once.
// Every figure is checked: what the copy or the stores left in dst's memory is counted on dst
// itself against the pattern src holds; the loads' XOR against the host's XOR of that pattern; each
// chase's end against the host's walk of the chain. A pair without peer access is `skipped`, saying
// so. Findings: each method's matrix and its slowest pair against the median pair.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "probes/measure/chain.hpp"
#include "probes/measure/chase_slope.hpp"
#include "probes/p2p/metrics.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "probes/timed_kernels/global_chase.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::p2p;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace bw = bandwidth;
namespace gc = global_chase;

constexpr int kSizeMib = 256, kQuickSizeMib = 64, kMaxSizeMib = 16384;
constexpr std::size_t kChaseBytes = std::size_t(1) << 20;  // 8192 lines: in any GPU's L2
// Eight 16-byte loads in flight per thread: a peer's latency is several times HBM's.
constexpr bw::Variant kStreaming{8, bw::Hint::none, bw::Schedule::grid_stride};

enum class Method { copy_engine, sm_stores, sm_loads, sm_chase };
constexpr Method kMethods[] = {Method::copy_engine, Method::sm_stores, Method::sm_loads, Method::sm_chase};

const char* method_name(Method m) {
  switch (m) {
    case Method::copy_engine:
      return "copy-engine";
    case Method::sm_stores:
      return "sm-stores";
    case Method::sm_loads:
      return "sm-loads";
    case Method::sm_chase:
      return "sm-chase";
  }
  return "?";
}

// src pushes its copies and stores; dst pulls its loads and chases.
bool pushed(Method m) { return m == Method::copy_engine || m == Method::sm_stores; }

// Device `d` current while in scope: allocations, launches on the legacy stream and the harness's
// L2 flush go to the current device.
class OnDevice {
 public:
  explicit OnDevice(int d) {
    TK_CUDA(cudaGetDevice(&previous_));
    TK_CUDA(cudaSetDevice(d));
  }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

// One GPU's buffers, made while it is current: `src`, filled with the pattern of `seed`, is what
// leaves it; `dst` what reaches it; `chain`, a random cycle of lines, what peers chase; and what its
// checks count into.
struct Side {
  Side(std::size_t bytes, std::mt19937_64& rng)
      : count(bytes / sizeof(uint4)),
        seed(static_cast<std::uint32_t>(rng())),
        read_xor(bw::pattern_xor(count, seed)),
        next(chain::random_cycle(kChaseBytes / gc::kLineBytes, rng)),
        src(count),
        dst(count),
        chain(kChaseBytes / sizeof(std::uint64_t)),
        sink(1),
        mismatches(1) {
    bw::fill(src.get(), count, seed, nullptr);
    DeviceBuffer<std::uint32_t> d_next(next.size());
    d_next.upload(next);
    gc::link(chain.get(), d_next.get(), static_cast<std::uint32_t>(next.size()), nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }
  std::size_t count;
  std::uint32_t seed, read_xor;
  std::vector<std::uint32_t> next;
  DeviceBuffer<uint4> src, dst;
  DeviceBuffer<std::uint64_t> chain;
  DeviceBuffer<std::uint32_t> sink;
  DeviceBuffer<unsigned long long> mismatches;
};

using Pair = std::pair<int, int>;  // (src, dst) as CUDA indices

class P2p final : public Probe {
 public:
  std::string name() const override { return "p2p"; }
  std::string summary() const override {
    return "Between GPUs, every ordered pair: copy-engine, SM store and SM load GB/s, and load latency (--devices)";
  }
  bool spans_devices() const override { return true; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--size-mib", size_mib_,
                   fmt::format("MiB each copy, store or load pass moves, 1..{} (default {}; --quick {})", kMaxSizeMib,
                               kSizeMib, kQuickSizeMib));
  }
  void validate() const override {
    if (size_mib_ && (*size_mib_ < 1 || *size_mib_ > kMaxSizeMib)) {
      throw UsageError(fmt::format("--size-mib {}: give MiB from 1 to {}", *size_mib_, kMaxSizeMib));
    }
  }

  void run(ProbeContext& ctx) override {
    const std::size_t bytes = std::size_t(size_mib_.value_or(ctx.options.quick ? kQuickSizeMib : kSizeMib)) << 20;
    std::map<int, std::unique_ptr<Side>> sides;
    for (const DeviceSlot& slot : ctx.across) {
      const OnDevice on(slot.info.index);
      sides[slot.info.index] = std::make_unique<Side>(bytes, ctx.rng);
    }
    enable_peer_access(ctx);
    std::map<Method, std::map<Pair, double>> figures;
    for (const DeviceSlot& s : ctx.across) {
      for (const DeviceSlot& d : ctx.across) {
        if (s.info.index == d.info.index) continue;
        for (Method m : kMethods) {
          const auto figure = measure(ctx, m, s, *sides[s.info.index], d, *sides[d.info.index], bytes);
          if (figure) figures[m][{s.info.index, d.info.index}] = *figure;
        }
      }
    }
    for (const auto& [m, pairs] : figures) ctx.finding(name(), matrix_finding(m, pairs, ctx));
    for (auto& [index, side] : sides) {
      const OnDevice on(index);  // each GPU's buffers freed where they were made
      side.reset();
    }
  }

 private:
  std::optional<int> size_mib_;

  // Peer access between every pair the driver allows, both ways: a kernel's loads and stores reach
  // a peer's memory only so, and cudaMemcpyPeerAsync goes over the link rather than through the host.
  static void enable_peer_access(ProbeContext& ctx) {
    for (const DeviceSlot& a : ctx.across) {
      const OnDevice on(a.info.index);
      for (const DeviceSlot& b : ctx.across) {
        if (a.info.index == b.info.index || !can_access(a.info.index, b.info.index)) continue;
        const cudaError_t status = cudaDeviceEnablePeerAccess(b.info.index, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();  // a repeated run in this process: enabled already, and not an error to keep
        } else {
          TK_CUDA(status);
        }
      }
    }
  }

  static bool can_access(int from, int to) {
    int can = 0;
    TK_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
    return can != 0;
  }

  // One row; its median (GB/s, or cycles for the chase), or nothing where the pair has no peer access.
  std::optional<double> measure(ProbeContext& ctx, Method m, const DeviceSlot& s, Side& from, const DeviceSlot& d,
                                Side& to, std::size_t bytes) {
    const DeviceSlot& issuer = pushed(m) ? s : d;
    const DeviceSlot& peer = pushed(m) ? d : s;
    Result r(name(), {{"src", s.info.index},
                      {"dst", d.info.index},
                      {"by", method_name(m)},
                      {"bytes", m == Method::sm_chase ? kChaseBytes : bytes}});
    if (!can_access(issuer.info.index, peer.info.index)) {
      r.status = Status::skipped;
      r.reason = fmt::format(
          "device {} cannot reach device {}'s memory (cudaDeviceCanAccessPeer: 0): no peer path "
          "between them (NVLink, or PCIe peer-to-peer)",
          issuer.info.index, peer.info.index);
      ctx.add(std::move(r));
      return std::nullopt;
    }
    const OnDevice on(issuer.info.index);
    const std::string label = fmt::format("p2p {} {}->{}", method_name(m), s.info.index, d.info.index);
    const double figure =
        m == Method::sm_chase ? chase(ctx, r, label, from, d) : stream(r, m, label, s, from, d, to, bytes);
    r.value(metric::issued_on, issuer.info.index);
    ctx.add(std::move(r));
    return figure;
  }

  // copy-engine, sm-stores or sm-loads: GB/s over `bytes`, then one more pass checked.
  static double stream(Result& r, Method m, const std::string& label, const DeviceSlot& s, Side& from,
                       const DeviceSlot& d, Side& to, std::size_t bytes) {
    const DeviceSlot& issuer = pushed(m) ? s : d;
    const int blocks = bw::blocks_for(kStreaming, from.count, issuer.info.sms * bw::kBlocksPerSm);
    const auto launch = [&](cudaStream_t stream) {
      if (m == Method::copy_engine) {
        TK_CUDA(cudaMemcpyPeerAsync(to.dst.get(), d.info.index, from.src.get(), s.info.index, bytes, stream));
      } else if (m == Method::sm_stores) {  // dst's buffer written with the pattern src holds
        bw::launch_stream(bw::Stream::write, kStreaming, nullptr, to.dst.get(), to.count, from.seed, nullptr, blocks, 0,
                          stream);
      } else {
        bw::launch_stream(bw::Stream::read, kStreaming, from.src.get(), nullptr, from.count, from.seed, to.sink.get(),
                          blocks, 0, stream);
      }
    };
    const Measurement meas = issuer.harness.time_kernel_rate(label, launch, double(bytes) / 1e9);
    r.metric(metric::gbps, meas.stats, "GB/s", Better::higher);
    r.telemetry = meas.telemetry;
    if (m == Method::sm_loads) {
      to.sink.poison(0);
      launch(issuer.harness.stream());
      const std::uint32_t got = to.sink.download()[0];
      r.checked(
          {{"what", "XOR of every word dst read from src vs the host's"}, {"value", got}, {"expected", from.read_xor}},
          got == from.read_xor);
      return meas.stats.median;
    }
    {
      const OnDevice on_dst(d.info.index);
      to.dst.poison();
      TK_CUDA(cudaDeviceSynchronize());  // a memset on dst orders nothing src issues next
    }
    launch(issuer.harness.stream());
    TK_CUDA(cudaStreamSynchronize(issuer.harness.stream()));
    const OnDevice on_dst(d.info.index);  // counted where the bytes landed, by dst itself
    to.mismatches.poison(0);
    bw::count_mismatches(to.dst.get(), to.count, from.seed, to.mismatches.get(), nullptr);
    const auto bad = to.mismatches.download()[0];
    r.checked(
        {{"what", "words in dst's memory, counted on dst, that differ from the pattern src holds"}, {"value", bad}},
        bad == 0);
    return meas.stats.median;
  }

  // sm-chase: cycles per dependent load from dst into src's chain, the slope over chase lengths.
  static double chase(ProbeContext& ctx, Result& r, const std::string& label, const Side& from, const DeviceSlot& d) {
    DeviceBuffer<std::uint64_t> cycles(1), sink(1);
    DeviceBuffer<ClockWindow> clock(1);
    const std::vector<int> lengths = chase_lengths(ctx.options.quick);
    std::map<int, std::uint64_t> ends;  // per length: where the host's walk from line 0 ends
    for (int loads : lengths) ends[loads] = gc::address_of(from.chain.get(), gc::line_after(from.next, 0, loads));
    bool ended_right = true;
    const ChaseSlope slope = measure_chase_slope(
        d.harness, label, lengths,
        [&](int loads) {
          cycles.poison();
          gc::launch_chase(gc::Path::l2_only, from.chain.get(), 0, loads, {cycles.get(), sink.get(), clock.get()},
                           d.harness.stream());
          ended_right &= sink.download()[0] == ends[loads];
          return static_cast<double>(cycles.download()[0]);
        },
        [&] { return clock.download()[0]; });
    r.metric(metric::latency_cycles, slope.m.stats, "cycles", Better::lower);
    r.value(metric::latency_ns, slope.m.stats.median / slope.m.sm_clock_mhz * 1e3);
    r.value(metric::overhead_cycles, slope.overhead_cycles);
    r.checked({{"what", "every chase ended on the line the host's walk predicts; cycles linear in chase length"},
               {"ended_right", ended_right},
               {"max_rel_residual", slope.max_rel_residual},
               {"max", kMaxChaseResidual}},
              ended_right && slope.max_rel_residual <= kMaxChaseResidual);
    r.telemetry = slope.m.telemetry;
    return slope.m.stats.median;
  }

  // "copy-engine GB/s, src by row, dst by column: ...; slowest pair 1->0 at 391 GB/s, 2.1% below the median pair".
  static std::string matrix_finding(Method m, const std::map<Pair, double>& pairs, const ProbeContext& ctx) {
    const bool latency = m == Method::sm_chase;
    std::string rows;
    for (const DeviceSlot& s : ctx.across) {
      std::vector<std::string> cells;
      for (const DeviceSlot& d : ctx.across) {
        const auto it = pairs.find({s.info.index, d.info.index});
        cells.push_back(it == pairs.end() ? "-" : fmt::format("{:.0f}", it->second));
      }
      rows += fmt::format("{}{}: [{}]", rows.empty() ? "" : "; ", s.info.index, fmt::join(cells, " "));
    }
    std::vector<double> values;
    for (const auto& [pair, v] : pairs) values.push_back(v);
    const double median = summarize(values).median;
    const auto slowest = latency ? std::max_element(pairs.begin(), pairs.end(),
                                                    [](const auto& a, const auto& b) { return a.second < b.second; })
                                 : std::min_element(pairs.begin(), pairs.end(),
                                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    const double off = 100 * std::abs(slowest->second - median) / median;
    return fmt::format(
        "{} {}, src by row, dst by column: {}; slowest pair {}->{} at {:.4g} {}, {:.1f}% {} the median "
        "pair",
        method_name(m), latency ? "cycles per load" : "GB/s", rows, slowest->first.first, slowest->first.second,
        slowest->second, latency ? "cycles" : "GB/s", off, latency ? "above" : "below");
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(P2p);

}  // namespace tkprobe
