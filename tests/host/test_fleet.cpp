#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/fleet.hpp"
#include "tests/fixtures.hpp"

using fixtures::report;
using fixtures::timed_result;
using tkprobe::Better;
using tkprobe::Json;

namespace {

// Card `n`'s report: one row per (probe, value), each value in cycles (lower is better) unless said.
Json card(int n, const std::vector<std::pair<std::string, double>>& rows, Better better = Better::lower,
          const std::string& gpu = "NVIDIA H200") {
  std::vector<tkprobe::Result> results;
  for (const auto& [probe, v] : rows) results.push_back(timed_result(probe, {{"s", 1}}, v, 0.002, better));
  Json r = report(results, gpu);
  r["device"]["uuid"] = fmt::format("GPU-0000000{}-0000-0000-0000-000000000000", n);
  return r;
}

// A node's `tkprobe all --devices all`: card `first + k` as its device k, each with row p at cycles[k].
Json node(const std::string& host, int first, const std::vector<double>& cycles,
          const std::vector<std::string>& gpus = {}) {
  std::vector<Json> runs;
  for (std::size_t k = 0; k < cycles.size(); ++k) {
    Json r = card(first + int(k), {{"p", cycles[k]}}, Better::lower, gpus.empty() ? "NVIDIA H200" : gpus[k]);
    r["device"]["index"] = k;
    r["host"]["hostname"] = host;
    runs.push_back(r);
  }
  return fixtures::several_devices(runs);
}

tkprobe::Fleet fleet_of(const std::vector<Json>& cards, tkprobe::FleetOptions o = {}) {
  std::vector<tkprobe::ReportSet> sets;
  for (std::size_t i = 0; i < cards.size(); ++i) sets.push_back(fixtures::report_set(cards[i], fmt::format("card{}.json", i)));
  return tkprobe::fleet_of(sets, o);
}

// Run `tkprobe fleet` on reports written to files.
fixtures::CliRun fleet_files(const std::vector<Json>& cards, std::vector<std::string> extra = {}) {
  const auto dir = fixtures::temp_dir("fleet");
  std::vector<std::string> args{"fleet"};
  for (std::size_t i = 0; i < cards.size(); ++i)
    args.push_back(fixtures::write(dir / fmt::format("card{}.json", i), cards[i].dump()).string());
  args.insert(args.end(), extra.begin(), extra.end());
  return fixtures::run(args);
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Eight figures within 0.4% of each other, figure `slow` `pct` percent slower (more cycles).
std::vector<double> eight_figures(int slow, double pct) {
  const double noise[8] = {0.998, 1.001, 1.003, 0.999, 1.002, 1.0, 0.997, 1.004};
  std::vector<double> figures;
  for (int i = 0; i < 8; ++i) figures.push_back(100 * noise[i] * (i == slow ? 1 + pct / 100 : 1));
  return figures;
}

// Eight cards within 0.4% of each other, card `slow` `pct` percent slower (more cycles).
std::vector<Json> eight_cards(int slow, double pct) {
  std::vector<Json> cards;
  for (const double v : eight_figures(slow, pct)) cards.push_back(card(int(cards.size()), {{"p", v}}));
  return cards;
}

}  // namespace

TEST(Fleet, OneCardEightPercentSlowAmongEightIsFlagged) {
  const auto f = fleet_of(eight_cards(5, 8));
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].outliers, std::vector<int>{5});
  EXPECT_NEAR(*f.rows[0].loss_pct[5], 8, 0.6);
  EXPECT_TRUE(f.failed());
  const auto run = fleet_files(eight_cards(5, 8));
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(mentions(run.out, "GPU-00000005-0000-0000-0000-000000000000 **OUTLIER**")) << run.out;
}

TEST(Fleet, EightCardsWithinNoiseAreNotFlagged) {
  const auto f = fleet_of(eight_cards(-1, 0));
  EXPECT_FALSE(f.failed());
  EXPECT_EQ(fleet_files(eight_cards(-1, 0)).code, 0);
  // 4% slow is under the 5% floor; with --threshold 3 it is an outlier, the others still not.
  EXPECT_FALSE(fleet_of(eight_cards(2, 4)).failed());
  tkprobe::FleetOptions tight;
  tight.threshold_pct = 3;
  EXPECT_EQ(fleet_of(eight_cards(2, 4), tight).rows[0].outliers, std::vector<int>{2});
}

// A faster card is not an outlier, and the direction follows each metric's `better`.
TEST(Fleet, OnlyTheWorseSideIsAnOutlier) {
  EXPECT_FALSE(fleet_of(eight_cards(3, -10)).failed());
  std::vector<Json> rates;
  for (int i = 0; i < 4; ++i) rates.push_back(card(i, {{"p", i == 1 ? 90.0 : 100.0}}, Better::higher));
  EXPECT_EQ(fleet_of(rates).rows[0].outliers, std::vector<int>{1});
}

TEST(Fleet, TwoCardsTheWorseIsHeldToTheBetter) {
  EXPECT_EQ(fleet_of({card(0, {{"p", 100}}), card(1, {{"p", 106}})}).rows[0].outliers, std::vector<int>{1});
  EXPECT_FALSE(fleet_of({card(0, {{"p", 100}}), card(1, {{"p", 103}})}).failed());
}

// Reports of one card merge (say, one probe each); a row only one card measured is not compared.
TEST(Fleet, ACardsReportsMergeAndLoneRowsAreLeftOut) {
  const auto f = fleet_of({card(0, {{"p", 100}}), card(0, {{"q", 50}}), card(1, {{"p", 100}, {"q", 80}}),
                           card(2, {{"p", 100}})});
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[0].source, "card0.json, card1.json");
  ASSERT_EQ(f.rows.size(), 2u);  // p on three cards, q on two
  EXPECT_EQ(f.rows[1].outliers, std::vector<int>{1});
  const Json j = tkprobe::fleet_json(f);
  EXPECT_EQ(j["outlier_rows"], 1);
  EXPECT_EQ(j["rows"][1]["values"], Json::array({50.0, 80.0, nullptr}));
}

TEST(Fleet, BadInputsExitTwoSayingWhy) {
  const auto one_card = fleet_files({card(0, {{"p", 100}}), card(0, {{"q", 100}})});
  EXPECT_EQ(one_card.code, 2);
  EXPECT_TRUE(mentions(one_card.err, "two or more cards")) << one_card.err;
  const auto row_twice = fleet_files({card(0, {{"p", 100}}), card(0, {{"p", 101}}), card(1, {{"p", 100}})});
  EXPECT_EQ(row_twice.code, 2);
  EXPECT_TRUE(mentions(row_twice.err, "is also in another report")) << row_twice.err;
  const std::vector<Json> models{card(0, {{"p", 100}}), card(1, {{"p", 100}}, Better::lower, "NVIDIA H100 80GB HBM3")};
  const auto mixed = fleet_files(models);
  EXPECT_EQ(mixed.code, 2);
  EXPECT_TRUE(mentions(mixed.err, "--allow-device-mismatch")) << mixed.err;
  EXPECT_EQ(fleet_files(models, {"--allow-device-mismatch"}).code, 0);
  Json v1 = card(1, {{"p", 100}});
  v1["schema"] = "tkprobe.report/1";
  const auto versions = fleet_files({card(0, {{"p", 100}}), v1});
  EXPECT_EQ(versions.code, 2);
  EXPECT_TRUE(mentions(versions.err, "tkprobe.report/1")) << versions.err;
  // A version 3 file reads as version 2: the message names neither version for it.
  const auto v3_first = fleet_files({Json::parse(tkprobe::report_text(card(0, {{"p", 100}}))), v1});
  EXPECT_TRUE(mentions(v3_first.err, "card1.json is 'tkprobe.report/1' but ")) << v3_first.err;
  EXPECT_TRUE(mentions(v3_first.err, "card0.json is a later version")) << v3_first.err;
  EXPECT_FALSE(mentions(v3_first.err, "tkprobe.report/2")) << v3_first.err;
  EXPECT_EQ(fleet_files({card(0, {{"p", 100}}), card(1, {{"p", 100}})}, {"--threshold", "nan"}).code, 2);
  EXPECT_EQ(fleet_files({card(0, {{"p", 100}}), card(1, {{"p", 100}})}, {"--probes", "nope"}).code, 2);
  EXPECT_EQ(fleet_files({card(0, {{"p", 100}}), card(1, {{"p", 100}})}, {"--format", "pdf"}).code, 2);
  EXPECT_EQ(fixtures::run({"fleet"}).code, 2) << "no reports";
  const auto nowhere = fixtures::temp_dir("fleet-nowhere") / "missing" / "fleet.md";
  const auto unwritable = fleet_files(eight_cards(5, 8), {"--markdown", nowhere.string()});
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_TRUE(mentions(unwritable.err, "does not exist")) << unwritable.err;
  EXPECT_FALSE(std::filesystem::exists(nowhere.parent_path()));
}

// ---- reports of several devices (--devices): each device is a card ----

TEST(FleetOfDevices, OneCardEightPercentSlowAmongEightInOneReportIsFlagged) {
  const auto f = fleet_of({node("n1", 0, eight_figures(5, 8))});
  ASSERT_EQ(f.gpus.size(), 8u);
  EXPECT_EQ(f.gpus[5].source, "card0.json device 5");
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].outliers, std::vector<int>{5});
  const auto run = fleet_files({node("n1", 0, eight_figures(5, 8))});
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_TRUE(mentions(run.out, "GPU-00000005-0000-0000-0000-000000000000 **OUTLIER**")) << run.out;
}

TEST(FleetOfDevices, EightIdenticalCardsInOneReportAreNotFlagged) {
  EXPECT_FALSE(fleet_of({node("n1", 0, eight_figures(-1, 0))}).failed());
  EXPECT_EQ(fleet_files({node("n1", 0, eight_figures(-1, 0))}).code, 0);
}

// Two nodes of four (one report each, as scripts/slurm-fleet.sh leaves them), read from a folder.
TEST(FleetOfDevices, NodesOfSeveralCardsMakeOneFleet) {
  const auto figures = eight_figures(6, 8);
  const std::vector<double> a(figures.begin(), figures.begin() + 4), b(figures.begin() + 4, figures.end());
  const auto dir = fixtures::temp_dir("fleet-nodes");
  fixtures::write(dir / "nodeA.json", tkprobe::report_text(node("nodeA", 0, a)));
  fixtures::write(dir / "nodeB.json", tkprobe::report_text(node("nodeB", 4, b)));
  const auto run = fixtures::run({"fleet", dir.string(), "--format", "json"});
  EXPECT_EQ(run.code, 1) << run.err;
  const Json j = Json::parse(run.out);
  ASSERT_EQ(j["gpus"].size(), 8u);
  ASSERT_EQ(j["rows"][0]["outliers"], Json::array({6}));
  EXPECT_EQ(j["gpus"][6]["source"], (dir / "nodeB.json").string() + " device 2");
}

// p2p's rows belong to a node's pairs, not to a card: fleet leaves them out.
TEST(FleetOfDevices, RowsThatSpanDevicesAreLeftOut) {
  std::vector<Json> runs;
  for (int k = 0; k < 3; ++k) {
    runs.push_back(card(k, {{"p", 100}}));
    runs.back()["device"]["index"] = k;
  }
  const Json pairs = report({timed_result("p2p", {{"src", 0}, {"dst", 1}}, 900, 0.002)});
  const auto f = fleet_of({fixtures::several_devices(runs, pairs)});
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].probe, "p");
}

TEST(FleetOfDevices, BadInputsExitTwoSayingWhy) {
  Json twice = node("n1", 0, {100, 100, 100});
  twice["devices"][2]["device"]["uuid"] = twice["devices"][0]["device"]["uuid"];
  const auto dup = fleet_files({twice});
  EXPECT_EQ(dup.code, 2);
  EXPECT_TRUE(mentions(dup.err, "one card listed twice")) << dup.err;
  const auto two_hosts = fleet_files({node("nodeA", 0, {100, 100}), node("nodeB", 1, {100, 100})});
  EXPECT_EQ(two_hosts.code, 2);
  EXPECT_TRUE(mentions(two_hosts.err, "GPU-00000001-0000-0000-0000-000000000000, on hosts nodeA and nodeB"))
      << two_hosts.err;
  const Json mix = node("n1", 0, {100, 100, 100}, {"NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3"});
  const auto mixed = fleet_files({mix});
  EXPECT_EQ(mixed.code, 2);
  EXPECT_TRUE(mentions(mixed.err, "--allow-device-mismatch")) << mixed.err;
  EXPECT_EQ(fleet_files({mix}, {"--allow-device-mismatch"}).code, 0);
  Json v1 = card(9, {{"p", 100}});
  v1["schema"] = "tkprobe.report/1";
  const auto versions = fleet_files({node("n1", 0, {100, 100}), v1});
  EXPECT_EQ(versions.code, 2);
  EXPECT_TRUE(mentions(versions.err, "tkprobe.report/1")) << versions.err;
  Json stray = node("n1", 0, {100, 100});
  stray["results"][1]["device"] = 5;
  const auto unlisted = fleet_files({stray});
  EXPECT_EQ(unlisted.code, 2);
  EXPECT_TRUE(mentions(unlisted.err, "device 5 is not in \"devices\"")) << unlisted.err;
}
