#include "src/counters.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "src/errors.hpp"

// The CUPTI parameter structs below are built with designated initializers that leave fields
// out on purpose: C++20 zero-initializes them, which is what every CUPTI profiler call asks for.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tkprobe {
namespace {

// Why no counter can be read here; it becomes the reason of every metric still without one.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Bytes = std::vector<std::uint8_t>;
using Names = std::vector<const char*>;
using Profiler = CUpti_RangeProfiler_Object*;
using Host = CUpti_Profiler_Host_Object*;

std::string result_text(CUptiResult status) {
  if (status == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) return kProfilingRestricted;
  const char* text = nullptr;
  cuptiGetResultString(status, &text);
  return text ? text : fmt::format("CUptiResult {}", static_cast<int>(status));
}

void check(CUptiResult status, const char* call) {
  if (status != CUPTI_SUCCESS) throw Unavailable(fmt::format("{}: {}", call, result_text(status)));
}

template <class Params>
Params checked(CUptiResult (*call)(Params*), Params params, const char* name) {
  check(call(&params), name);
  return params;
}

// A CUPTI parameter struct: zeroed, with the struct size this header knows (the *_STRUCT_SIZE
// macros of cupti_profiler_host.h and cupti_range_profiler.h) and the given fields.
#define TK_CUPTI_PARAMS(type, ...) \
  type { .structSize = type##_STRUCT_SIZE __VA_OPT__(, ) __VA_ARGS__ }
// Calls `call` with such a struct, makes a failure Unavailable, and returns the struct's outputs.
#define TK_CUPTI(call, type, ...) checked(call, TK_CUPTI_PARAMS(type, __VA_ARGS__), #call)

void check_device(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw Unavailable(fmt::format("no CUDA device: {}: {}", call, cudaGetErrorString(status)));
}

// Undoes one set-up step when the scope ends, on every path out: the session is torn down in
// the reverse order it was built.
template <class F>
struct OnExit {
  F undo;
  ~OnExit() { undo(); }
};

// The current device with its primary context made current (cudaSetDevice does that since
// CUDA 12), and that context, which the range profiler works on.
std::pair<int, CUcontext> current_context() {
  int count = 0, device = 0;
  check_device(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count == 0) throw Unavailable("no CUDA device: the driver reports 0 devices");
  check_device(cudaGetDevice(&device), "cudaGetDevice");
  check_device(cudaSetDevice(device), "cudaSetDevice");
  // Through the runtime's entry-point lookup, as for cuTensorMapEncodeTiled: no link to libcuda.
  void* get_current = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check_device(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &get_current, 4000, cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
  CUcontext context = nullptr;
  if (found != cudaDriverEntryPointSuccess ||
      reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(get_current)(&context) != CUDA_SUCCESS || !context) {
    throw Unavailable("no CUDA device: no current CUDA context");
  }
  return {device, context};
}

// Which counters this context may read now. Asked before the range profiler is enabled:
// cupti_profiler_target.h warns that the call may fail while a session is active.
Bytes counter_availability(CUcontext context) {
  auto p = TK_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params, .ctx = context);
  check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");  // no buffer: the size
  Bytes image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  return image;
}

// The config image that schedules `names` onto the chip's counters (cupti_profiler_host.h).
Bytes config_image(Host host, Names& names) {
  TK_CUPTI(cuptiProfilerHostConfigAddMetrics, CUpti_Profiler_Host_ConfigAddMetrics_Params, .pHostObject = host,
           .ppMetricNames = names.data(), .numMetrics = names.size());
  Bytes image(
      TK_CUPTI(cuptiProfilerHostGetConfigImageSize, CUpti_Profiler_Host_GetConfigImageSize_Params, .pHostObject = host)
          .configImageSize);
  TK_CUPTI(cuptiProfilerHostGetConfigImage, CUpti_Profiler_Host_GetConfigImage_Params, .pHostObject = host,
           .configImageSize = image.size(), .pConfigImage = image.data());
  return image;
}

// Host memory that the decoded counters of our one range land in (cupti_range_profiler.h).
Bytes counter_data_image(Profiler profiler, Names& names) {
  Bytes image(TK_CUPTI(cuptiRangeProfilerGetCounterDataSize, CUpti_RangeProfiler_GetCounterDataSize_Params,
                       .pRangeProfilerObject = profiler, .pMetricNames = names.data(), .numMetrics = names.size(),
                       .maxNumOfRanges = 1, .maxNumRangeTreeNodes = 1)
                  .counterDataSize);
  TK_CUPTI(cuptiRangeProfilerCounterDataImageInitialize, CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
           .pRangeProfilerObject = profiler, .counterDataSize = image.size(), .pCounterData = image.data());
  return image;
}

// One user range around everything `launch` enqueues, which we replay ourselves (user replay)
// until Stop reports the last pass submitted; kernel replay would need auto ranges, one per
// kernel (CUPTI guide, "Range Profiling API": range modes and replay modes).
void replay(Profiler profiler, Bytes& config, Bytes& counter_data, const std::function<void()>& launch) {
  TK_CUPTI(cuptiRangeProfilerSetConfig, CUpti_RangeProfiler_SetConfig_Params, .pRangeProfilerObject = profiler,
           .configSize = config.size(), .pConfig = config.data(), .counterDataImageSize = counter_data.size(),
           .pCounterDataImage = counter_data.data(), .range = CUPTI_UserRange, .replayMode = CUPTI_UserReplay,
           .maxRangesPerPass = 1, .numNestingLevels = 1, .minNestingLevel = 1, .targetNestingLevel = 1);
  const std::size_t passes = TK_CUPTI(cuptiProfilerHostGetNumOfPasses, CUpti_Profiler_Host_GetNumOfPasses_Params,
                                      .configImageSize = config.size(), .pConfigImage = config.data())
                                 .numOfPasses;
  for (std::size_t pass = 0; pass < passes; ++pass) {
    TK_CUPTI(cuptiRangeProfilerStart, CUpti_RangeProfiler_Start_Params, .pRangeProfilerObject = profiler);
    TK_CUPTI(cuptiRangeProfilerPushRange, CUpti_RangeProfiler_PushRange_Params, .pRangeProfilerObject = profiler,
             .pRangeName = "launch");
    launch();
    // The work ends inside its range whatever stream it went to, and a fault in it surfaces
    // here as the CUDA error it is.
    TK_CUDA(cudaDeviceSynchronize());
    TK_CUPTI(cuptiRangeProfilerPopRange, CUpti_RangeProfiler_PopRange_Params, .pRangeProfilerObject = profiler);
    if (TK_CUPTI(cuptiRangeProfilerStop, CUpti_RangeProfiler_Stop_Params, .pRangeProfilerObject = profiler)
            .isAllPassSubmitted) {
      return;
    }
  }
  throw Unavailable(
      fmt::format("cuptiRangeProfilerStop: passes still missing after the {} that "
                  "cuptiProfilerHostGetNumOfPasses counted",
                  passes));
}

// Fills `out`: a reason for each metric the chip does not know, a value for each other one.
void profile(const std::vector<std::string>& metrics, const std::function<void()>& launch,
             std::vector<CounterValue>& out) {
  const auto [device, context] = current_context();
  TK_CUPTI(cuptiProfilerInitialize, CUpti_Profiler_Initialize_Params);
  OnExit deinitialize{[] {
    auto p = TK_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
    cuptiProfilerDeInitialize(&p);
  }};
  const std::string chip =
      TK_CUPTI(cuptiDeviceGetChipName, CUpti_Device_GetChipName_Params, .deviceIndex = static_cast<std::size_t>(device))
          .pChipName;
  const Bytes availability = counter_availability(context);
  const Host host = TK_CUPTI(cuptiProfilerHostInitialize, CUpti_Profiler_Host_Initialize_Params,
                             .profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER, .pChipName = chip.c_str(),
                             .pCounterAvailabilityImage = availability.data())
                        .pHostObject;
  OnExit host_deinitialize{[host] {
    auto p = TK_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, .pHostObject = host);
    cuptiProfilerHostDeinitialize(&p);
  }};
  // Checked one by one: a single unknown name makes ConfigAddMetrics refuse the whole list.
  Names names;
  std::vector<std::size_t> slots;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    auto known = TK_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params, .pHostObject = host,
                                 .pMetricName = metrics[i].c_str());
    if (const CUptiResult status = cuptiProfilerHostGetMetricProperties(&known); status != CUPTI_SUCCESS) {
      out[i].reason = fmt::format("metric '{}' on chip {}: {}", metrics[i], chip, result_text(status));
    } else {
      names.push_back(metrics[i].c_str());
      slots.push_back(i);
    }
  }
  if (names.empty()) return;
  Bytes config = config_image(host, names);
  const Profiler profiler =
      TK_CUPTI(cuptiRangeProfilerEnable, CUpti_RangeProfiler_Enable_Params, .ctx = context).pRangeProfilerObject;
  OnExit disable{[profiler] {
    auto p = TK_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, .pRangeProfilerObject = profiler);
    cuptiRangeProfilerDisable(&p);
  }};
  Bytes counter_data = counter_data_image(profiler, names);
  replay(profiler, config, counter_data, launch);
  // Decoding synchronizes the context first (CUPTI guide, "Range Profiling API").
  if (TK_CUPTI(cuptiRangeProfilerDecodeData, CUpti_RangeProfiler_DecodeData_Params, .pRangeProfilerObject = profiler)
          .numOfRangeDropped != 0) {
    throw Unavailable("cuptiRangeProfilerDecodeData: the range was dropped");
  }
  std::vector<double> values(names.size());
  TK_CUPTI(cuptiProfilerHostEvaluateToGpuValues, CUpti_Profiler_Host_EvaluateToGpuValues_Params, .pHostObject = host,
           .pCounterDataImage = counter_data.data(), .counterDataImageSize = counter_data.size(), .rangeIndex = 0,
           .ppMetricNames = names.data(), .numMetrics = names.size(), .pMetricValues = values.data());
  for (std::size_t k = 0; k < slots.size(); ++k) out[slots[k]] = CounterValue{true, values[k], ""};
}

}  // namespace

std::vector<CounterValue> measure_counters(const std::vector<std::string>& metrics,
                                           const std::function<void()>& launch) {
  std::vector<CounterValue> out(metrics.size());
  try {
    profile(metrics, launch, out);
  } catch (const Unavailable& why) {
    for (CounterValue& value : out)
      if (value.reason.empty()) value = CounterValue{false, 0, why.what()};
  }
  return out;
}

std::optional<double> InstructionCounts::per_kib(const std::function<void()>& launch, double bytes) {
  constexpr double kBytesPerKib = 1024;
  const CounterValue c = measure_counters({kWarpInstructionsIssued}, launch).front();
  if (!c.available) {
    if (why_.empty()) why_ = c.reason;
    return std::nullopt;
  }
  return c.value / (bytes / kBytesPerKib);
}

std::string InstructionCounts::text(const std::optional<double>& per_kib) {
  return per_kib ? fmt::format("{:.4g}", *per_kib) : "n/a";  // 124.2, 36.9, 0.5123
}

std::optional<std::string> InstructionCounts::unavailable_finding() const {
  if (why_.empty()) return std::nullopt;
  return "SASS instructions per KiB not measured (n/a): " + why_;
}

}  // namespace tkprobe
