// mem-latency: load-to-use latency of global memory, from L1 to beyond L2 and the TLB's reach.
//
// One thread chases a random cycle through a buffer, one link per 128-byte line, so every load
// waits for the one before and no two loads share a line. Footprints that fit in half the L2
// are warmed by one full lap inside the same kernel (so this SM's L1 holds what fits); larger
// ones start cold: L2 is flushed before every timed chase, because the chain's own set-up (and
// any cudaMemcpy) leaves its last lines in L2. The slope of cycles over three chase lengths is
// the latency; the chase's end address is checked against the host's walk of the same chain.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/measure/chain.hpp"
#include "probes/mem-latency/metrics.hpp"
#include "probes/timed_kernels/global_chase.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::mem_latency;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace gc = global_chase;

constexpr long long kMinFootprintKib = 16, kMaxFootprintKib = 4ll << 20;  // 16 KiB .. 4 GiB

class MemLatency final : public Probe {
 public:
  std::string name() const override { return "mem-latency"; }
  std::string summary() const override {
    return "Global-memory latency by dependent chase over footprints 16 KiB..2 GiB: L1, L2, HBM, TLB reach";
  }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--footprint", footprints_kib_, "Footprints in KiB, 16..4194304 (default 16 KiB to 2 GiB by 2x)")
        ->delimiter(',');
  }
  void validate() const override {
    for (long long f : footprints_kib_) {
      if (f < kMinFootprintKib || f > kMaxFootprintKib) {
        throw UsageError(fmt::format("--footprint {}: give KiB from {} to {} (16 KiB to 4 GiB)", f, kMinFootprintKib,
                                     kMaxFootprintKib));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    std::vector<std::string> ladder;
    for (long long kib : footprints(ctx.options.quick)) {
      const Result& r = measure(ctx, std::size_t(kib) << 10);
      if (r.status == Status::ok) {
        ladder.push_back(fmt::format("{}: {:.0f} cycles ({})", size_text(kib), r.metrics["latency_cycles"]["median"].get<double>(),
                                     r.params["cache_state"].get<std::string>()));
      }
    }
    ctx.finding(name(), fmt::format("cycles per dependent load by footprint: {}", fmt::join(ladder, " · ")));
  }

 private:
  std::vector<long long> footprints_kib_;

  std::vector<long long> footprints(bool quick) const {
    if (!footprints_kib_.empty()) return footprints_kib_;
    if (quick) return {16, 4 << 10, 256 << 10};
    std::vector<long long> all;
    for (long long kib = kMinFootprintKib; kib <= (2ll << 20); kib *= 2) all.push_back(kib);
    return all;
  }

  static std::string size_text(long long kib) {
    if (kib >= (1 << 20)) return fmt::format("{} GiB", kib >> 20);
    if (kib >= (1 << 10)) return fmt::format("{} MiB", kib >> 10);
    return fmt::format("{} KiB", kib);
  }

  const Result& measure(ProbeContext& ctx, std::size_t bytes) {
    const auto lines = static_cast<std::uint32_t>(bytes / gc::kLineBytes);
    const bool warm = bytes <= static_cast<std::size_t>(ctx.device.l2_bytes) / 2;
    const std::vector<std::uint32_t> next = chain::random_cycle(lines, ctx.rng);
    DeviceBuffer<std::uint64_t> buffer(bytes / 8), cycles(1), sink(1);
    DeviceBuffer<ClockWindow> clock(1);
    {
      DeviceBuffer<std::uint32_t> d_next(lines);
      d_next.upload(next);
      gc::link(buffer.get(), d_next.get(), lines, ctx.harness.stream());
      TK_CUDA(cudaStreamSynchronize(ctx.harness.stream()));
    }
    const long long warm_steps = warm ? gc::whole_trips(lines) : 0;
    const std::vector<long long> lengths{512, 1024, 2048};
    const std::vector<double> x(lengths.begin(), lengths.end());
    std::vector<std::uint64_t> end_addresses;  // walked once on the host, not in every sample
    for (long long steps : lengths) {
      end_addresses.push_back(gc::address_of(buffer.get(), gc::line_after(next, 0, warm_steps + steps)));
    }
    bool ended_right = true;
    const Measurement m = ctx.harness.measure(fmt::format("mem-latency {} B", bytes), [&] {
      std::vector<double> y;
      for (std::size_t i = 0; i < lengths.size(); ++i) {
        if (!warm) ctx.harness.flush_l2();
        cycles.poison();
        gc::launch_chase(gc::Path::l1_and_l2, buffer.get(), warm_steps, lengths[i], {cycles.get(), sink.get(), clock.get()},
                         ctx.harness.stream());
        y.push_back(static_cast<double>(cycles.download()[0]));
        ended_right &= sink.download()[0] == end_addresses[i];
      }
      const ClockWindow longest = clock.download()[0];
      return Sample{chain::fit_line(x, y).slope, window_mhz(longest), (longest.end.ns - longest.begin.ns) * 1e-9};
    });
    Result r(name(), {{"footprint_bytes", bytes}, {"cache_state", warm ? "warm" : "flushed"}});
    r.metric(metric::latency_cycles, m.stats, "cycles", Better::lower);
    r.value(metric::latency_ns, m.stats.median / m.sm_clock_mhz * 1e3);
    r.value(metric::sm_clock_mhz, m.sm_clock_mhz);
    r.checked({{"what", "every chase ended on the line the host's walk of the chain predicts"}}, ended_right);
    r.telemetry = m.telemetry;
    return ctx.add(std::move(r));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(MemLatency);

}  // namespace tkprobe
