// cluster on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// Distributed shared memory, bounds set around the H200's figures (results/h200/suite.json: own 32.9
// cycles, another rank's 192-208; 108 and 10-15 bytes per SM cycle). A dependent load into the
// block's own memory by a cluster address costs about ld.shared's ~30 cycles; another rank's crosses
// the SM-to-SM network, several times that but below L2's ~280; a block streams its own memory at a
// good share of the 128 bytes per SM cycle, and a neighbour's at under half of that; the GPU holds at
// least one block of a 2-block cluster per SM.
TEST(Cluster, NeighbourSharedMemoryIsSlowerThanOwnAndFasterThanL2) {
  const Json report = run_probe("cluster");
  std::map<std::string, const Json*> rows;
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const auto& p = r["params"];
    rows[p["test"].get<std::string>() + " " + std::to_string(p["cluster_size"].get<int>()) + " " +
         p.value("target", p.value("source", p.value("delivery", std::string())))] = &r;
  }
  ASSERT_EQ(rows.size(), 13u) << "--quick: sizes 2 and 8; their limits, latencies, bandwidths and multicast rows";
  EXPECT_GE(rows.at("limits 2 ")->at("metrics")["blocks_at_once"].get<int>(), 132);
  const double own = median(*rows.at("latency 2 own"), "latency_cycles");
  EXPECT_GE(own, 25);
  EXPECT_LE(own, 45);
  for (const char* remote : {"latency 2 rank 1", "latency 8 rank 1", "latency 8 rank 7"}) {
    const double cycles = median(*rows.at(remote), "latency_cycles");
    EXPECT_GT(cycles, 4 * own) << remote;
    EXPECT_LT(cycles, 280) << remote;
  }
  const double own_bw = rows.at("bandwidth 2 own")->at("metrics")["bytes_per_clk_per_sm"];
  EXPECT_GE(own_bw, 32);
  EXPECT_LE(own_bw, 128 * 1.02);
  for (const char* neighbour : {"bandwidth 2 neighbour", "bandwidth 8 neighbour"}) {
    EXPECT_LT(rows.at(neighbour)->at("metrics")["bytes_per_clk_per_sm"].get<double>(), own_bw / 2) << neighbour;
  }
}

// TMA multicast: every row's blocks summed what landed and matched the host; the TB/s delivered into
// shared memory lies between 0.5 (far below the L2's ~7 TB/s that each block's own loads can draw on)
// and 40 (above shared memory's 128 B per SM cycle: ~33 TB/s at 1980 MHz), and L2 reads are the
// delivered bytes over the cluster size for multicast, equal to them for each block.
TEST(Cluster, MulticastRowsAreCheckedAndWithinBounds) {
  const Json report = run_probe("cluster");
  int multicast_rows = 0;
  for (const auto& r : report["results"]) {
    const auto& p = r["params"];
    if (p["test"] != "multicast") continue;
    ++multicast_rows;
    const std::string row = p.dump();
    EXPECT_EQ(r["status"], "ok") << r.dump();
    ASSERT_TRUE(r["check"].is_object()) << row;
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << row;
    EXPECT_EQ(r["check"]["blocks_wrong"], 0) << row;
    const double delivered = median(r, "delivered_tbps"), read = r["metrics"]["l2_read_tbps"];
    EXPECT_GE(delivered, 0.5) << row;
    EXPECT_LE(delivered, 40) << row;
    EXPECT_LE(r["metrics"]["bytes_per_clk_per_sm"].get<double>(), 128 * 1.02) << row;
    const int size = p["cluster_size"];
    EXPECT_NEAR(read, p["delivery"] == "multicast" ? delivered / size : delivered, 1e-3 * delivered) << row;
  }
  EXPECT_EQ(multicast_rows, 4) << "--quick: sizes 2 and 8, multicast and each block";
}
