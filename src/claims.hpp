#pragma once
// `tkprobe claims`: what the account ThunderKittens grew out of says about the H100 (its figures
// as stated), set beside what this GPU measured, with a verdict and the probe that measured it.
// The claims are data: each names the probe runs whose rows it reads and a rule that judges them.
// Claims no probe can measure yet are rows too, `skipped` with the reason: never a guess.
#include <string>
#include <vector>

#include "src/json.hpp"
#include "src/report.hpp"

namespace tkprobe {

// One probe run the claims read: `tkprobe PROBE ARGS` (with --quick unless --full).
struct ClaimRun {
  std::string probe;
  std::vector<std::string> args;
};

// Every run the claims need, in the order they run.
std::vector<ClaimRun> claim_runs();

// One row per claim (probe "claims", params {"claim": id}) judged from `report`'s rows: the
// merged results of the runs above (a version 1 or 2 report's "results" and "device").
std::vector<Result> judge_claims(const Json& report);

}  // namespace tkprobe
