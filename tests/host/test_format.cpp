#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "src/format.hpp"
#include "src/probe.hpp"
#include "tests/fixtures.hpp"

using tkprobe::Format;

namespace {

std::string render(Format format) {
  auto row = fixtures::timed_result("p", {{"stride", 2}}, 30, 0.01);
  row.value("model_ways", 2);
  const auto report = fixtures::report({fixtures::timed_result("p", {{"stride", 1}}, 15, 0.02), row});
  std::ostringstream out;
  tkprobe::print_report(out, report, format);
  return out.str();
}

}  // namespace

TEST(Format, TableShowsParamsMedianUnitAndSpread) {
  const auto text = render(Format::table);
  EXPECT_NE(text.find("== p =="), std::string::npos);
  EXPECT_NE(text.find("cycles [cycles]"), std::string::npos);
  EXPECT_NE(text.find("cv %"), std::string::npos);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos) << "names the device";
  EXPECT_NE(text.find("2.00"), std::string::npos) << "the second row's cv";
}

TEST(Format, MarkdownIsAPipeTable) {
  const auto text = render(Format::markdown);
  EXPECT_NE(text.find("### p"), std::string::npos);
  EXPECT_NE(text.find("| stride | cycles [cycles] | cv % | model_ways |"), std::string::npos) << text;
  EXPECT_NE(text.find("|---|---|---|---|"), std::string::npos);
}

TEST(Format, CsvKeepsEveryStatistic) {
  const auto text = render(Format::csv);
  EXPECT_EQ(text.substr(0, text.find('\n')), "probe,stride,status,reason,metric,primary,value,unit,min,q1,q3,max,cv,n");
  EXPECT_NE(text.find("p,1,ok,,cycles,yes,15,cycles,15,15,15,15,0.02,20\n"), std::string::npos) << text;
  EXPECT_NE(text.find("p,2,ok,,model_ways,no,2,,,,,,,\n"), std::string::npos) << "a plain value: no spread" << text;
}

// `all --format csv`: one header for every probe, and rows that did not run keep their reason.
TEST(Format, CsvOfASuiteIsOneTableWithReasons) {
  tkprobe::Result skipped("q", {{"dtype", "e5m2"}});
  skipped.status = tkprobe::Status::skipped;
  skipped.reason = "needs sm_90a, a, comma";
  const auto report = fixtures::report(
      {fixtures::timed_result("p", {{"stride", 1}}, 15, 0.02), skipped, fixtures::timed_result("r", {}, 3, 0.1)});
  std::ostringstream out;
  tkprobe::print_report(out, report, Format::csv);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << "one header, one line per figure or reason:\n" << text;
  EXPECT_EQ(text.rfind("probe,stride,dtype,status,reason,", 0), 0u) << text;
  EXPECT_NE(text.find("q,,e5m2,skipped,\"needs sm_90a, a, comma\",,,,"), std::string::npos) << text;
  EXPECT_NE(text.find("r,,,ok,,cycles,yes,3,"), std::string::npos) << text;
}

// A probe's wall time closes its section, where the report has it (a recorded report may not).
TEST(Format, EachProbeSaysHowLongItRan) {
  const auto report =
      fixtures::report({fixtures::timed_result("p", {}, 15, 0.02), fixtures::timed_result("q", {}, 3, 0.1)},
                       "NVIDIA H200", {{"p", 61.24}});
  std::ostringstream table, markdown;
  tkprobe::print_report(table, report, Format::table);
  tkprobe::print_report(markdown, report, Format::markdown);
  const std::string text = table.str();
  EXPECT_NE(text.find("  ran 61.2 s\n"), std::string::npos) << text;
  EXPECT_LT(text.find("ran 61.2 s"), text.find("== q ==")) << "under p's table, not q's";
  EXPECT_EQ(text.find("ran", text.find("== q ==")), std::string::npos) << "q's time is not known:\n" << text;
  EXPECT_NE(markdown.str().find("\n_ran 61.2 s_\n"), std::string::npos) << markdown.str();
  EXPECT_EQ(render(Format::table).find(" ran "), std::string::npos) << "no time without the report's";
}

TEST(Format, JsonIsTheReport) {
  const auto text = render(Format::json);
  EXPECT_EQ(tkprobe::Json::parse(text)["schema"], "tkprobe.report/3");  // version 2 in columns
}

TEST(Format, AColumnWhoseRowsDifferInUnitNamesEachUnit) {
  tkprobe::Stats s;
  s.median = 900;
  tkprobe::Result flop("t"), top("t");
  flop.params = {{"dtype", "bf16"}};
  top.params = {{"dtype", "s8"}};
  flop.metric("tflops", s, "TFLOP/s", tkprobe::Better::higher);
  top.metric("tflops", s, "TOP/s", tkprobe::Better::higher);
  std::ostringstream out;
  tkprobe::print_report(out, fixtures::report({flop, top}), Format::table);
  EXPECT_NE(out.str().find("tflops [TFLOP/s, TOP/s]"), std::string::npos) << out.str();
}

// A report of several devices: a device column, each device named with its bus and UUID, and each
// device's findings marked with it.
TEST(Format, SeveralDevicesNameEachRowsDevice) {
  std::vector<tkprobe::Json> runs;
  for (int k = 0; k < 2; ++k) {
    auto r = fixtures::report({fixtures::timed_result("p", {{"stride", 1}}, 15 + k, 0.02)});
    r["device"]["index"] = k;
    r["device"]["pci_bus_id"] = fmt::format("0000:1{}:00.0", k);
    r["device"]["uuid"] = fmt::format("GPU-{}", k);
    r["findings"] = tkprobe::Json::array({{{"probe", "p"}, {"text", "fast"}}});
    runs.push_back(r);
  }
  const auto report = fixtures::several_devices(runs);
  std::ostringstream table, csv;
  tkprobe::print_report(table, report, Format::table);
  tkprobe::print_report(csv, report, Format::csv);
  EXPECT_NE(table.str().find("device 1: NVIDIA H200 · cc 9.0 · 132 SMs · 0000:11:00.0 · GPU-1"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("device  stride  cycles [cycles]"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("* device 1: fast"), std::string::npos) << table.str();
  EXPECT_EQ(csv.str().rfind("probe,device,stride,status,", 0), 0u) << csv.str();
  EXPECT_NE(csv.str().find("p,1,1,ok,,cycles,yes,16,"), std::string::npos) << csv.str();
}
