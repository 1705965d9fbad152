#include "src/fleet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "src/compare.hpp"
#include "src/errors.hpp"
#include "src/report.hpp"
#include "src/report_devices.hpp"
#include "src/stats.hpp"

namespace tkprobe {
namespace {

// One card's rows by key, the cards in the order first given.
struct Card {
  ReportSet set;
  std::map<std::string, const Json*> rows;
};

std::string hostname(const ReportSet& set) { return set.report["host"].value("hostname", "?"); }

void add_card(std::vector<Card>& cards, ReportSet card, const FleetOptions& o) {
  if (!cards.empty() && gpu_model(card.report) != gpu_model(cards.front().set.report) && !o.allow_device_mismatch) {
    throw UsageError(fmt::format("{} is from a {} but {} from a {}: pass --allow-device-mismatch to hold them "
                                 "together", card.source, gpu_model(card.report), cards.front().set.source,
                                 gpu_model(cards.front().set.report)));
  }
  const std::string id = gpu_identity(card.report);
  auto same = std::find_if(cards.begin(), cards.end(), [&](const Card& c) { return gpu_identity(c.set.report) == id; });
  if (same == cards.end()) {
    cards.push_back({std::move(card), {}});
    return;
  }
  if (hostname(same->set) != hostname(card)) {
    throw UsageError(fmt::format("{} and {} both name card {}, on hosts {} and {}: a UUID names one card, so one of "
                                 "them is a copy or mislabelled",
                                 same->set.source, card.source, id, hostname(same->set), hostname(card)));
  }
  merge_into(same->set, card.report, card.source);  // the same card's other report: its rows join, none twice
  same->set.source += ", " + card.source;
}

// The cards in `reports`: each report of one device, and each device of a report of several
// (src/report_devices.hpp); the rows that span devices (p2p) belong to a node, not a card, and are
// left out. A card in two reports merges where both come from one host: the same UUID on two hosts
// is a copied report or a mislabelled card, not one card.
std::vector<Card> cards_of(const std::vector<ReportSet>& reports, const FleetOptions& o) {
  std::vector<Card> cards;
  for (const auto& r : reports) {
    if (r.report["schema"] != reports.front().report["schema"]) {
      // Version 2 and 3 files read alike (as version 2): only version 1 can differ, so it is the one named.
      const bool first_is_v1 = reports.front().report["schema"] == kReportSchemaV1;
      throw UsageError(
          fmt::format("{} is '{}' but {} is a later version: make every report with tkprobe 0.1 or "
                      "later (version 2 or 3 files)",
                      first_is_v1 ? reports.front().source : r.source, kReportSchemaV1,
                      first_is_v1 ? r.source : reports.front().source));
    }
    for (auto& part : report_parts(r.report)) {
      if (part.device == kSpansDevices) continue;
      const std::string source = has_devices(r.report) ? fmt::format("{} device {}", r.source, part.device) : r.source;
      add_card(cards, as_report_set(std::move(part.report), source), o);
    }
  }
  if (cards.size() < 2) {
    throw UsageError(fmt::format("fleet needs reports from two or more cards; these are all from {} ({})",
                                 gpu_identity(cards.front().set.report), cards.front().set.source));
  }
  for (auto& c : cards) {
    for (const auto& row : c.set.report["results"]) {
      if (o.probes.empty() || o.probes.count(row["probe"].get<std::string>())) c.rows[row_key(row)] = &row;
    }
  }
  return cards;
}

// The primary statistic of a judged row: ok, not a peer's, with a measured primary.
const Json* judged_stats(const Json& row) {
  if (row["status"] != "ok" || row.value("peer", false)) return nullptr;
  return metric_stats(row, row.value("primary", ""));
}

void judge(FleetRow& row, double threshold_pct) {
  std::vector<double> present;
  for (const auto& v : row.values)
    if (v) present.push_back(*v);
  const bool has_median = present.size() >= 3;
  row.reference = has_median              ? summarize(present).median
                  : row.higher_is_better ? *std::max_element(present.begin(), present.end())
                                         : *std::min_element(present.begin(), present.end());
  std::vector<double> deviations;
  for (double x : present) deviations.push_back(std::abs(x - row.reference));
  const double mad = has_median ? summarize(deviations).median : 0.0;
  for (std::size_t i = 0; i < row.values.size(); ++i) {
    if (!row.values[i] || row.reference == 0) {
      row.loss_pct.push_back(std::nullopt);
      continue;
    }
    const double x = *row.values[i];
    const double loss = 100 * (row.higher_is_better ? row.reference - x : x - row.reference) / row.reference;
    row.loss_pct.push_back(loss);
    const bool far_from_noise = !has_median || std::abs(x - row.reference) > kMaxMads * kMadToSigma * mad;
    if (loss > threshold_pct && far_from_noise) row.outliers.push_back(int(i));
  }
}

std::string value_text(const std::optional<double>& v, const std::string& unit) {
  return v ? fmt::format("{:.4g} {}", *v, unit) : "-";
}

}  // namespace

std::string gpu_identity(const Json& report) {
  const Json& d = report["device"];
  if (d.contains("uuid") && d["uuid"].is_string()) return d["uuid"];
  return fmt::format("{}:{}", report["host"].value("hostname", "?"), d.value("pci_bus_id", "?"));
}

int Fleet::outlier_rows() const {
  return int(std::count_if(rows.begin(), rows.end(), [](const FleetRow& r) { return !r.outliers.empty(); }));
}

Fleet fleet_of(const std::vector<ReportSet>& reports, const FleetOptions& options) {
  const std::vector<Card> cards = cards_of(reports, options);
  Fleet fleet;
  fleet.threshold_pct = options.threshold_pct;
  for (const auto& c : cards) fleet.gpus.push_back({gpu_identity(c.set.report), c.set.source});
  std::map<std::string, FleetRow> by_key;  // rows in key order: the same order for any order of reports
  for (std::size_t i = 0; i < cards.size(); ++i) {
    for (const auto& [key, row] : cards[i].rows) {
      const Json* stats = judged_stats(*row);
      if (!stats) continue;
      FleetRow& f = by_key[key];
      if (f.values.empty()) {
        f = {row->at("probe"), params_text(row->at("params")), row->at("primary"), stats->value("unit", ""),
             stats->value("better", "higher") == "higher", std::vector<std::optional<double>>(cards.size()), 0, {}, {}};
      }
      f.values[i] = (*stats)["median"].get<double>();
    }
  }
  for (auto& [key, row] : by_key) {
    if (std::count_if(row.values.begin(), row.values.end(), [](auto& v) { return v.has_value(); }) < 2) continue;
    judge(row, options.threshold_pct);
    fleet.rows.push_back(std::move(row));
  }
  return fleet;
}

std::string fleet_markdown(const Fleet& f) {
  std::string md = fmt::format("## tkprobe fleet: {}\n\n{} cards, {} rows measured by two or more; {} row(s) with an "
                               "outlier (worse than the fleet by more than {:.1f}% and {} robust deviations).\n\n",
                               f.failed() ? "OUTLIER" : "pass", f.gpus.size(), f.rows.size(), f.outlier_rows(),
                               f.threshold_pct, kMaxMads);
  md += "| card | reports | rows | outlier rows | worst row | worse by |\n|---|---|---:|---:|---|---:|\n";
  for (std::size_t g = 0; g < f.gpus.size(); ++g) {
    int rows = 0, outliers = 0;
    const FleetRow* worst = nullptr;
    for (const auto& r : f.rows) {
      if (!r.loss_pct[g]) continue;
      ++rows;
      outliers += std::count(r.outliers.begin(), r.outliers.end(), int(g));
      if (!worst || *r.loss_pct[g] > *worst->loss_pct[g]) worst = &r;
    }
    md += fmt::format("| {}{} | {} | {} | {} | {} | {} |\n", f.gpus[g].id, outliers ? " **OUTLIER**" : "",
                      f.gpus[g].source, rows, outliers,
                      worst ? fmt::format("{} {} {}", worst->probe, worst->params, worst->metric) : "-",
                      worst ? fmt::format("{:+.2f}%", *worst->loss_pct[g]) : "-");
  }
  if (f.failed()) {
    md += "\n### Outlier rows\n\n| probe | params | metric | fleet | outliers |\n|---|---|---|---:|---|\n";
    for (const auto& r : f.rows) {
      if (r.outliers.empty()) continue;
      std::string who;
      for (int g : r.outliers) {
        who += fmt::format("{}{} {} ({:+.2f}%)", who.empty() ? "" : "; ", f.gpus[g].id, value_text(r.values[g], r.unit),
                           *r.loss_pct[g]);
      }
      md += fmt::format("| {} | {} | {} | {} | {} |\n", r.probe, r.params, r.metric,
                        value_text(r.reference, r.unit), who);
    }
  }
  return md;
}

Json fleet_json(const Fleet& f) {
  Json gpus = Json::array(), rows = Json::array();
  for (const auto& g : f.gpus) gpus.push_back({{"id", g.id}, {"source", g.source}});
  for (const auto& r : f.rows) {
    Json values = Json::array(), loss = Json::array();
    for (std::size_t i = 0; i < r.values.size(); ++i) {
      values.push_back(r.values[i] ? Json(*r.values[i]) : Json(nullptr));
      loss.push_back(r.loss_pct[i] ? Json(*r.loss_pct[i]) : Json(nullptr));
    }
    rows.push_back({{"probe", r.probe}, {"params", r.params}, {"metric", r.metric}, {"unit", r.unit},
                    {"reference", r.reference}, {"values", values}, {"loss_pct", loss}, {"outliers", r.outliers}});
  }
  return {{"threshold_pct", f.threshold_pct}, {"max_mads", kMaxMads}, {"failed", f.failed()},
          {"outlier_rows", f.outlier_rows()}, {"gpus", gpus}, {"rows", rows}};
}

}  // namespace tkprobe
