// validate_report SCHEMA REPORT [--print-v2]: exit 0 when REPORT is a report tkprobe reads
// (read_report) and it matches SCHEMA; otherwise exit 1 with one line per violation. For reports
// written by other tools (scripts/compare_sdpa.py), checked by tests/host/test_compare_sdpa.py.
// --print-v2: also prints the version 2 document tkprobe makes of it (compact_report), one line,
// so the test can hold scripts/tkreport.py's compaction to tkprobe's.
#include <fstream>
#include <iostream>
#include <string>

#include "src/report.hpp"
#include "src/schema.hpp"

int main(int argc, char** argv) {
  const bool print_v2 = argc == 4 && std::string(argv[3]) == "--print-v2";
  if (argc != 3 && !print_v2) {
    std::cerr << "usage: validate_report SCHEMA.json REPORT.json [--print-v2]\n";
    return 2;
  }
  try {
    const tkprobe::Json report = tkprobe::read_report(argv[2]);
    std::ifstream schema_in(argv[1]);
    const auto errors = tkprobe::validate_schema(tkprobe::Json::parse(schema_in), report);
    for (const auto& e : errors) std::cerr << argv[2] << ": " << e << '\n';
    if (print_v2) std::cout << tkprobe::compact_report(report).dump() << '\n';
    return errors.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
}
