// l2: the L2 as each SM sees it. The account says "50 MB of L2 in two ~25 MB partitions joined by a
// crossbar" and "~12 TB/s"; mem-latency sees one L2 plateau and bandwidth 7 TB/s. This probe finds
// the partitions by timing, with no address table: every SM times a dependent load from each line
// of a buffer held in L2, each SM's lines split into a near and a far level (l2_split.hpp), and SMs
// that see the same lines near form a group. Then every SM streams its group's near lines, its far
// lines, or all of them, and the TB/s say what a partition's locality is worth.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <numeric>

#include "probes/l2/l2_kernels.hpp"
#include "probes/l2/l2_split.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

constexpr int kLines = 2048, kQuickLines = 512;  // lines timed (256 KiB, 64 KiB: far inside the L2)
constexpr int kMapRuns = 3;                       // each line's latency: the least of three maps
constexpr int kPasses = 64, kQuickPasses = 8;     // reads of each block's whole list per stream launch
constexpr double kLoadsTimed = l2::kLongChase - l2::kShortChase;

// The latency map: per SM (by SM id) the cycles per dependent load of each line, the least over the maps.
struct LatencyMap {
  std::vector<std::uint32_t> smids;
  std::vector<std::vector<double>> cycles;  // [sm][line]
  bool one_block_per_sm = true;
};

// "0-3,8,10-11" for sorted ids.
std::string id_ranges(const std::vector<std::uint32_t>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]));
    i = j + 1;
  }
  return out;
}

class L2 final : public Probe {
 public:
  std::string name() const override { return "l2"; }
  std::string summary() const override {
    return "The L2's partitions as each SM sees them, found by timing: near vs far latency, SM groups, bandwidth";
  }

  void run(ProbeContext& ctx) override {
    const int lines = ctx.options.quick ? kQuickLines : kLines;
    DeviceBuffer<std::uint32_t> buffer(std::size_t(lines) * l2::kLineWords);
    TK_CUDA(cudaMemset(buffer.get(), 0, buffer.size() * sizeof(std::uint32_t)));  // every value an offset of 0
    const LatencyMap map = measure_map(ctx, buffer.get(), lines);
    std::vector<l2::Split> splits;
    std::vector<std::vector<bool>> near_sets;
    for (const auto& c : map.cycles) {
      splits.push_back(l2::split_levels(c));
      near_sets.push_back(splits.back().near);
    }
    const int two_level_sms = int(std::count_if(splits.begin(), splits.end(), [](auto& s) { return s.two_levels; }));
    const std::vector<l2::Group> groups =
        two_level_sms == 0 ? std::vector<l2::Group>{} : l2::group_by_near_lines(near_sets);
    add_summary(ctx, map, groups, two_level_sms, lines);
    for (std::size_t g = 0; g < groups.size(); ++g) add_group(ctx, map, splits, groups[g], int(g));
    measure_streams(ctx, buffer.get(), map, groups, lines);
  }

 private:
  static LatencyMap measure_map(ProbeContext& ctx, const std::uint32_t* buffer, int lines) {
    const int blocks = ctx.device.sms;
    // More than half an SM's shared memory a block, so that no SM takes two of them.
    const int smem = int(std::min(ctx.device.smem_per_block_optin, ctx.device.smem_per_sm / 2 + 1024));
    DeviceBuffer<std::uint32_t> cycles(std::size_t(blocks) * lines), smid(blocks);
    std::map<std::uint32_t, std::vector<std::uint32_t>> least;  // by SM id: a block may land elsewhere each run
    LatencyMap map;
    l2::prepare_map(smem);
    for (int run = 0; run < kMapRuns; ++run) {
      cycles.poison();
      l2::launch_map(buffer, lines, blocks, smem, {cycles.get(), smid.get()}, ctx.harness.stream());
      TK_CUDA(cudaStreamSynchronize(ctx.harness.stream()));
      const auto got = cycles.download();
      auto ids = smid.download();
      for (int b = 0; b < blocks; ++b) {
        auto& row = least.try_emplace(ids[b], std::vector<std::uint32_t>(lines, UINT32_MAX)).first->second;
        for (int l = 0; l < lines; ++l) row[l] = std::min(row[l], got[std::size_t(b) * lines + l]);
      }
      std::sort(ids.begin(), ids.end());
      map.one_block_per_sm &= std::adjacent_find(ids.begin(), ids.end()) == ids.end();
    }
    for (const auto& [id, row] : least) {  // in SM id order
      map.smids.push_back(id);
      std::vector<double> per_load;
      for (std::uint32_t c : row) per_load.push_back(c / kLoadsTimed);
      map.cycles.push_back(std::move(per_load));
    }
    return map;
  }

  void add_summary(ProbeContext& ctx, const LatencyMap& map, const std::vector<l2::Group>& groups, int two_level_sms,
                   int lines) {
    Result r(name(), {{"test", "map"}, {"lines", lines}});
    r.value("sms", int(map.smids.size()));
    r.value("sms_with_two_levels", two_level_sms);
    r.value("groups", int(groups.size()));
    r.value("complementary_pct",
            groups.size() == 2 ? Json(100 * l2::complementary_share(groups[0], groups[1])) : Json(nullptr));
    r.checked({{"what", "every block of the map ran on an SM of its own (its shared memory keeps a second off)"}},
              map.one_block_per_sm);
    ctx.add(std::move(r));
    std::vector<double> all;
    for (const auto& c : map.cycles) all.insert(all.end(), c.begin(), c.end());
    ctx.finding(name(), groups.empty()
                            ? fmt::format("no SM sees two latency levels among {} L2 lines: median {:.0f} cycles from "
                                          "every SM", lines, summarize(all).median)
                            : fmt::format("{} SMs fall into {} group(s) by which of {} L2 lines they reach fastest{}",
                                          map.smids.size(), groups.size(), lines,
                                          groups.size() == 2 ? fmt::format(" ({:.0f}% of the lines near to exactly one "
                                                                           "group)", 100 * l2::complementary_share(groups[0], groups[1]))
                                                             : ""));
  }

  void add_group(ProbeContext& ctx, const LatencyMap& map, const std::vector<l2::Split>& splits, const l2::Group& g,
                 int index) {
    std::vector<double> near, far, share;
    std::vector<std::uint32_t> ids;
    for (int m : g.members) {
      near.push_back(splits[m].near_cycles);
      far.push_back(splits[m].far_cycles);
      share.push_back(splits[m].near_share);
      ids.push_back(map.smids[m]);
    }
    const Stats near_stats = summarize(near), far_stats = summarize(far);  // over the group's SMs
    const double near_share_pct = 100 * summarize(share).median;
    Result r(name(), {{"test", "partition"}, {"group", index}});
    r.metric("near_cycles", near_stats, "cycles", Better::lower);
    r.metric("far_cycles", far_stats, "cycles", Better::lower);
    r.value("sms", int(g.members.size()));
    r.value("near_share_pct", near_share_pct);
    r.value("min_agreement_pct", 100 * g.min_agreement);
    r.value("smids", id_ranges(ids));
    ctx.add(std::move(r));
    ctx.finding(name(), fmt::format("group {} ({} SMs: {}): near lines {:.0f} cycles, far {:.0f} ({:.0f}% of the lines "
                                    "near)", index, g.members.size(), id_ranges(ids), near_stats.median,
                                    far_stats.median, near_share_pct));
  }

  // Every SM reads its group's near lines, far lines, or every line; the near and far lists are cut
  // to the shortest group's, so that every block reads as many bytes.
  void measure_streams(ProbeContext& ctx, const std::uint32_t* buffer, const LatencyMap& map,
                       const std::vector<l2::Group>& groups, int lines) {
    const int smids = map.smids.empty() ? 0 : int(map.smids.back()) + 1;
    std::vector<std::int32_t> group_of(smids, 0);
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (int m : groups[g].members) group_of[map.smids[m]] = std::int32_t(g);
    DeviceBuffer<std::int32_t> d_group(std::max(smids, 1));
    if (smids) d_group.upload(group_of);
    DeviceBuffer<std::uint32_t> sink(l2::kStreamThreads);
    for (const char* source : {"near", "far", "all"}) {
      Result r(name(), {{"test", "bandwidth"}, {"source", source}});
      const bool all = std::string(source) == "all";
      if (!all && groups.empty()) {
        r.status = Status::skipped;
        r.reason = "no SM sees two latency levels, so there are no near and far lines";
        ctx.add(std::move(r));
        continue;
      }
      const std::vector<std::vector<std::uint32_t>> lists = line_lists(groups, lines, source);
      const int count = int(lists.front().size());
      std::vector<std::uint32_t> flat;
      for (const auto& l : lists) flat.insert(flat.end(), l.begin(), l.begin() + count);
      DeviceBuffer<std::uint32_t> d_lists(flat.size());
      d_lists.upload(flat);
      const int passes = ctx.options.quick ? kQuickPasses : kPasses;
      const l2::StreamArgs a{buffer, d_lists.get(), count, d_group.get(), smids, passes, sink.get()};
      const double bytes = double(ctx.device.sms) * l2::kStreamBlocksPerSm * passes * count * l2::kLineBytes;
      const Measurement t = ctx.harness.time_kernel_rate(
          fmt::format("l2 stream {}", source), [&](cudaStream_t s) { l2::launch_stream(a, ctx.device.sms, s); },
          bytes / 1e12);
      r.metric("tbps", t.stats, "TB/s", Better::higher);
      std::vector<std::uint32_t> distinct = flat;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      r.value("lines_per_block", count);
      r.value("footprint_bytes", distinct.size() * l2::kLineBytes);
      r.telemetry = t.telemetry;
      ctx.add(std::move(r));
    }
  }

  // Per group (one list where there are none), the lines it reads: its near lines, its far lines,
  // or every line.
  static std::vector<std::vector<std::uint32_t>> line_lists(const std::vector<l2::Group>& groups, int lines,
                                                            const std::string& source) {
    std::vector<std::vector<std::uint32_t>> lists;
    if (source == "all") {
      std::vector<std::uint32_t> every(lines);
      std::iota(every.begin(), every.end(), 0u);
      lists.assign(std::max<std::size_t>(groups.size(), 1), every);
      return lists;
    }
    for (const auto& g : groups) {
      std::vector<std::uint32_t> l;
      for (int i = 0; i < lines; ++i)
        if (g.near[i] == (source == "near")) l.push_back(std::uint32_t(i));
      lists.push_back(std::move(l));
    }
    const std::size_t shortest = std::min_element(lists.begin(), lists.end(), [](auto& a, auto& b) {
                                   return a.size() < b.size();
                                 })->size();
    if (shortest < std::size_t(l2::kLinesPerWarpLoad)) {
      throw std::runtime_error(fmt::format("l2: a group has {} {} lines, too few to stream", shortest, source));
    }
    for (auto& l : lists) l.resize(shortest);
    return lists;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(L2);

}  // namespace tkprobe
