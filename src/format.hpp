#pragma once
// Human-facing output of a report: an aligned table, markdown or CSV, one block per probe.
#include <ostream>

#include "src/json.hpp"

namespace tkprobe {

enum class Format;

// `report` is a tkprobe.report/1 document (to_json(Report)).
void print_report(std::ostream& out, const Json& report, Format format);

}  // namespace tkprobe
