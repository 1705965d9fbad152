#pragma once
// What `compare` hands to people and CI systems: a markdown summary for a job's summary page (the
// verdict first, then regressions and the closest calls, the rest folded), JUnit XML (one test case
// per judged row) and JSON.
#include <string>

#include "src/compare.hpp"
#include "src/json.hpp"

namespace tkprobe {

std::string to_markdown(const Comparison& comparison);
std::string to_junit(const Comparison& comparison);
Json to_json(const Comparison& comparison);

// "205 rows: 196 same, 9 new. Threshold 5.0%: no regression." (the markdown's last line)
std::string summary_line(const Comparison& comparison);

}  // namespace tkprobe
