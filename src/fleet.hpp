#pragma once
// `tkprobe fleet REPORT...`: which GPU of many is not like the others. Each report (each file of a
// folder) is one card's run, named by its device section, or a run of several (--devices), each of
// whose devices is a card; reports of one card are merged. Per judged row, every
// card's primary median is held to the fleet's: a card is an outlier where it is worse than the
// fleet's median by more than the threshold AND by more than kMaxMads robust deviations (1.4826 x
// the median absolute deviation), so that eight identical cards are never flagged for noise and one
// card 8% slow among them is. With two cards there is no median to trust: the worse is held to the
// better, by the threshold alone.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/json.hpp"
#include "src/report_set.hpp"

namespace tkprobe {

inline constexpr double kMaxMads = 3.5;       // Iglewicz and Hoaglin's cut for a modified z-score
inline constexpr double kMadToSigma = 1.4826;  // a normal sample's standard deviation over its MAD

struct FleetOptions {
  double threshold_pct = 5;  // the floor: a card within this much of the fleet is never an outlier
  bool allow_device_mismatch = false;
  std::set<std::string> probes;  // empty: every probe
};

struct FleetGpu {
  std::string id;      // device.uuid, else host:PCI bus id
  std::string source;  // the report files (and the device, in a report of several), for messages
};

struct FleetRow {
  std::string probe, params, metric, unit;
  bool higher_is_better = true;
  std::vector<std::optional<double>> values;  // per card, in Fleet::gpus order
  double reference = 0;                       // the fleet's median (two cards: the better)
  std::vector<std::optional<double>> loss_pct;  // per card, worse than the reference by (negative: better)
  std::vector<int> outliers;                  // cards, by index
};

struct Fleet {
  std::vector<FleetGpu> gpus;
  std::vector<FleetRow> rows;  // judged rows that two or more cards measured
  double threshold_pct = 0;
  int outlier_rows() const;
  bool failed() const { return outlier_rows() > 0; }
};

// The card a report ran on: its UUID, or (reports from before they recorded it) host and PCI bus.
std::string gpu_identity(const Json& report);

// Throws UsageError: fewer than two cards, cards of different models (unless allowed), version 1
// reports beside later ones, the same row twice for one card, one card (UUID) on two hosts.
Fleet fleet_of(const std::vector<ReportSet>& reports, const FleetOptions& options);

// The table people read: the verdict, a line per card (rows, outlier rows, its worst row), then each
// outlier row with every card's figure.
std::string fleet_markdown(const Fleet& fleet);
Json fleet_json(const Fleet& fleet);

}  // namespace tkprobe
