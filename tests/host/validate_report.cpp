// validate_report SCHEMA REPORT: exit 0 when REPORT is a report tkprobe reads (read_report) and
// it matches SCHEMA; otherwise exit 1 with one line per violation. For reports written by other
// tools (scripts/compare_sdpa.py), checked by tests/host/test_compare_sdpa.py.
#include <fstream>
#include <iostream>

#include "src/report.hpp"
#include "src/schema.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: validate_report SCHEMA.json REPORT.json\n";
    return 2;
  }
  try {
    const tkprobe::Json report = tkprobe::read_report(argv[2]);
    std::ifstream schema_in(argv[1]);
    const auto errors = tkprobe::validate_schema(tkprobe::Json::parse(schema_in), report);
    for (const auto& e : errors) std::cerr << argv[2] << ": " << e << '\n';
    return errors.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
}
