#pragma once
// `tkprobe compare BASE NEW`: matches results by probe + params and judges each row from
// its primary metric, using the spread each report recorded to tell change from noise.
#include <string>
#include <vector>

#include "src/json.hpp"

namespace tkprobe {

struct CompareOptions {
  double threshold_pct = 5.0;          // a slowdown beyond this fails the comparison
  bool allow_device_mismatch = false;  // compare reports from different GPU models
};

enum class Verdict { faster, slower, same, missing, added, failed, skipped, not_comparable };
std::string_view to_string(Verdict);

struct CompareRow {
  std::string probe;
  std::string params;  // "key=value key=value", for reading
  std::string metric;
  std::string unit;
  double base = 0, now = 0;
  double delta_pct = 0;  // (now - base) / base, signed as measured
  double noise_pct = 0;  // the band inside which a difference is called `same`
  Verdict verdict = Verdict::same;
  bool fails = false;  // this row alone makes compare exit 1
};

struct Comparison {
  std::vector<CompareRow> rows;
  double threshold_pct = 0;
  bool failed() const;
};

// The noise band for two medians with coefficients of variation cv_base and cv_now:
// two standard deviations of their difference, in percent.
double noise_band_pct(double cv_base, double cv_now);

// Throws UsageError when the reports come from different GPU models and that is not allowed.
Comparison compare_reports(const Json& base, const Json& now, const CompareOptions& options);

std::string to_markdown(const Comparison& comparison);

}  // namespace tkprobe
