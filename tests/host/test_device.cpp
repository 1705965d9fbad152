#include <gtest/gtest.h>

#include "src/device.hpp"
#include "src/errors.hpp"
#include "src/nvml.hpp"
#include "tests/host/fake_gpu.hpp"

TEST(Peaks, DatasheetRowsByName) {
  const auto h200 = tkprobe::datasheet_peaks("NVIDIA H200");
  ASSERT_TRUE(h200);
  EXPECT_DOUBLE_EQ(h200->bf16, 989.4);
  EXPECT_DOUBLE_EQ(h200->fp8, 1978.9);
  EXPECT_TRUE(tkprobe::datasheet_peaks("NVIDIA H100 80GB HBM3"));
  EXPECT_DOUBLE_EQ(tkprobe::datasheet_peaks("NVIDIA H100 PCIe")->bf16, 756.5);
  // The NVL parts are not the SXM part, though their names hold "H200" and "H100".
  EXPECT_DOUBLE_EQ(tkprobe::datasheet_peaks("NVIDIA H200 NVL")->bf16, 835.5);
  EXPECT_EQ(tkprobe::datasheet_peaks("NVIDIA H200 NVL")->part, "H200 NVL");
  EXPECT_DOUBLE_EQ(tkprobe::datasheet_peaks("NVIDIA H100 NVL")->bf16, 835.5);
}

TEST(Peaks, EachCommonGpuFindsItsOwnRow) {
  // The names the CUDA runtime reports, and the datasheet row each must find.
  const std::pair<const char*, const char*> parts[] = {
      {"NVIDIA H100 80GB HBM3", "H100/H200 SXM"},
      {"NVIDIA H100 PCIe", "H100 PCIe"},
      {"NVIDIA H100 NVL", "H100 NVL"},
      {"NVIDIA H200", "H100/H200 SXM"},
      {"NVIDIA GH200 480GB", "H100/H200 SXM"},
      {"NVIDIA H20", "H20"},
      {"NVIDIA B200", "B200"},
      {"NVIDIA A100-SXM4-80GB", "A100"},
      {"NVIDIA A100-PCIE-40GB", "A100"},
      {"NVIDIA A100 80GB PCIe", "A100"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA A30", "A30"},
      {"NVIDIA A40", "A40"},
      {"NVIDIA L4", "L4"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
      {"NVIDIA GeForce RTX 5090", "GeForce RTX 5090"}};
  for (const auto& [name, part] : parts) {
    const auto peaks = tkprobe::datasheet_peaks(name);
    ASSERT_TRUE(peaks) << name;
    EXPECT_EQ(peaks->part, part) << name;
  }
  EXPECT_DOUBLE_EQ(tkprobe::datasheet_peaks("NVIDIA H20")->bf16, 148.0);
  EXPECT_DOUBLE_EQ(tkprobe::datasheet_peaks("NVIDIA A100-SXM4-40GB")->fp8, 0);  // Ampere has no fp8
  // A name that only holds a known one is another GPU: the clock peak, not a wrong datasheet row.
  for (const char* other : {"NVIDIA A10G", "NVIDIA L40", "NVIDIA GeForce RTX 4080", "NVIDIA H800", "NVIDIA H100"}) {
    EXPECT_FALSE(tkprobe::datasheet_peaks(other)) << other;
  }
}

TEST(Peaks, EveryReportCarriesTheDatasheetRow) {
  tkprobe::DeviceInfo d;
  d.name = "NVIDIA H200";
  EXPECT_DOUBLE_EQ(tkprobe::to_json(d)["datasheet"]["bf16_tflops"].get<double>(), 989.4);
  d.name = "NVIDIA A100-SXM4-80GB";
  EXPECT_FALSE(tkprobe::to_json(d)["datasheet"].contains("fp8_tflops"));
  d.name = "NVIDIA A10G";
  EXPECT_TRUE(tkprobe::to_json(d)["datasheet"].is_null());
}

TEST(Peaks, ClockPeakIsSmsTimesFlopPerClockTimesClock) {
  // The datasheet's bf16 figure is the clock peak at 1830 MHz on 132 SMs.
  EXPECT_NEAR(tkprobe::clock_peak_tflops(132, tkprobe::hopper_flop_per_clock_per_sm("bf16"), 1830), 989.4, 0.05);
  EXPECT_EQ(tkprobe::hopper_flop_per_clock_per_sm("tf32"), 2048);
  EXPECT_EQ(tkprobe::hopper_flop_per_clock_per_sm("e4m3"), 8192);
  EXPECT_THROW(tkprobe::hopper_flop_per_clock_per_sm("fp64"), tkprobe::UsageError);
}

TEST(Peaks, ArchitectureRatesGiveTheDatasheetPeaksAtBoostClock) {
  const tkprobe::DeviceInfo gpus[] = {fake::gpu("NVIDIA A100-SXM4-80GB", 80, 108, 1410),
                                      fake::gpu("NVIDIA A30", 80, 56, 1440),
                                      fake::gpu("NVIDIA A10", 86, 72, 1695),
                                      fake::gpu("NVIDIA A40", 86, 84, 1740),
                                      fake::gpu("NVIDIA L4", 89, 58, 2040),
                                      fake::gpu("NVIDIA L40S", 89, 142, 2520),
                                      fake::gpu("NVIDIA GeForce RTX 4090", 89, 128, 2520),
                                      fake::gpu("NVIDIA H100 80GB HBM3", 90, 132, 1830),
                                      fake::gpu("NVIDIA H100 PCIe", 90, 114, 1620),
                                      fake::gpu("NVIDIA GeForce RTX 5090", 120, 170, 2407)};
  for (const auto& d : gpus) {
    const auto sheet = tkprobe::datasheet_peaks(d.name);
    const auto clock = tkprobe::clock_peaks(d);
    ASSERT_TRUE(sheet && clock) << d.name;
    const std::pair<double, double> types[] = {
        {sheet->bf16, clock->bf16}, {sheet->tf32, clock->tf32}, {sheet->fp8, clock->fp8}, {sheet->int8, clock->int8}};
    for (const auto& [datasheet, derived] : types) EXPECT_NEAR(derived, datasheet, 0.015 * datasheet) << d.name;
  }
  EXPECT_FALSE(tkprobe::clock_peaks(fake::gpu("Tesla T4", 75, 40, 1590)));  // no rates for Turing
  const auto json = tkprobe::to_json(fake::gpu("NVIDIA RTX 6000 Ada Generation", 89, 142, 2505));
  EXPECT_TRUE(json["datasheet"].is_null());
  EXPECT_EQ(json["clock_peaks"]["source"], "clock-derived: 142 SMs x 1024 bf16 FLOP/clk/SM (sm_89) x 2505 MHz");
  EXPECT_NEAR(json["clock_peaks"]["bf16_tflops"].get<double>(), 364.2, 0.1);
}

TEST(Telemetry, ThrottleReasonsByName) {
  EXPECT_EQ(tkprobe::clock_event_reason_names(0x4 | 0x40),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_TRUE(tkprobe::is_throttle(0x4));
  EXPECT_FALSE(tkprobe::is_throttle(0x1));  // idle is not throttling
  EXPECT_FALSE(tkprobe::is_throttle(0x2));  // nor an applications-clock setting
}

TEST(Telemetry, RangesAndFlagFromTwoReadings) {
  tkprobe::NvmlSample before{true, 1980, 3201, 300, 40, 0x0};
  tkprobe::NvmlSample after{true, 1755, 3201, 690, 55, 0x4};
  const auto t = tkprobe::telemetry_json(before, after, 1700);
  EXPECT_EQ(t["sm_clock_mhz"], tkprobe::Json::array({1755.0, 1980.0}));
  EXPECT_EQ(t["power_w"], tkprobe::Json::array({300.0, 690.0}));
  EXPECT_EQ(t["kernel_sm_clock_mhz"], 1700);
  EXPECT_TRUE(t["throttled"]);
  EXPECT_EQ(t["reasons"], tkprobe::Json::array({"sw_power_cap"}));
}

TEST(Telemetry, WithoutNvmlSaysSo) {
  const auto t = tkprobe::telemetry_json({}, {}, std::nan(""));
  EXPECT_EQ(t["nvml"], "unavailable");
  EXPECT_FALSE(t["throttled"]);
  EXPECT_FALSE(t.contains("kernel_sm_clock_mhz"));
}

// As nvidia-smi -L writes it, so a report's card can be found on the machine.
TEST(Device, UuidIsWrittenAsNvidiaSmiDoes) {
  const char bytes[16] = {0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, static_cast<char>(0x82), static_cast<char>(0x93),
                          static_cast<char>(0xa4), static_cast<char>(0xb5), static_cast<char>(0xc6),
                          static_cast<char>(0xd7), static_cast<char>(0xe8), static_cast<char>(0xff)};
  EXPECT_EQ(tkprobe::uuid_text(bytes), "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8ff");
}
