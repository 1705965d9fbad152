#pragma once
// A report of several devices (`--devices`): the reports each device's run wrote, under one header.
// What belonged to one device moves into that device's entry of "devices" (its "device" section and
// its NVML "telemetry"), and each of its rows and findings names it with "device": its CUDA index.
// What spans devices (p2p's rows, findings and telemetry) stays where a report of one device has it,
// with no tag. So a report of several devices splits back, without loss, into the report each
// device's run alone would have written, which is how `fleet` (a card per device) and `compare`
// (device by device) read it. A report made without --devices has "device" and no tags, as before.
#include <string>
#include <vector>

#include "src/json.hpp"

namespace tkprobe {

// ReportPart::device of the rows that span devices.
inline constexpr int kSpansDevices = -1;

// Whether a report holds several devices' runs (a "devices" section).
bool has_devices(const Json& report);

// One device of a --devices run: its section (to_json(DeviceInfo)), and the version 2 report its
// run wrote, or null where it wrote none (the device then has an entry and no rows).
struct DeviceRun {
  Json device;
  Json report;
};

// The report of a --devices run: `tool` and `host` for the whole run, each device's run, and the
// version 2 report of the probes that span devices (null where none ran).
Json merge_device_runs(Json tool, Json host, const std::vector<DeviceRun>& runs, const Json& spanning);

struct ReportPart {
  int device;  // its CUDA index, or kSpansDevices
  Json report;
};

// A report's parts: per device, the report its run alone would have written (its section as
// "device", its telemetry, its rows and findings untagged, tool.probes the probes that ran per device);
// then, where there are any, the rows of probes that span devices ("device" null, tool.probes
// those probes: the probes of the untagged rows). A report of one device is its own one part.
std::vector<ReportPart> report_parts(const Json& report);

// What the schema cannot say about a report's devices: "device" or "devices", not both; no device
// listed twice (index or UUID); every tagged row and finding naming a listed device.
void check_devices(const Json& report, std::vector<std::string>& problems);

}  // namespace tkprobe
