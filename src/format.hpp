#pragma once
// Human-facing output of a report: an aligned table or markdown, one block per probe; or CSV, one
// table for the whole run.
#include <ostream>

#include "src/json.hpp"

namespace tkprobe {

enum class Format;

// `report` is a tkprobe.report/1 document (to_json(Report)).
void print_report(std::ostream& out, const Json& report, Format format);

}  // namespace tkprobe
