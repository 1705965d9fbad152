#pragma once
// Version 3 is version 2 written in columns: the same document, each row's param and metric names
// said once per probe instead of once per row, and each statistic as an array. Only the file
// changes; every command holds the version 2 form in memory (read_report decodes, report_text
// encodes). results/README.md ("The report") describes the layout.
#include "src/json.hpp"

namespace tkprobe {

// A version 2 document in version 3's form: a "kinds" section (per probe, the distinct
// param-name/metric-descriptor lists its rows use) and rows whose "params" and "metrics" are
// arrays in their kind's order. Statistics with exactly the usual fields become arrays (kStatFields,
// then drift_pct and runs where present), their unit and better moving to the kind.
Json to_columns(const Json& v2);

// The version 2 document a version 3 one encodes, equal to the one to_columns was given. Throws
// std::invalid_argument naming the row when a row's arrays do not match its kind.
Json from_columns(const Json& v3);

}  // namespace tkprobe
