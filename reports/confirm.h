// The confirm step: runs taken at different times on a machine that changes are never called
// regressions as they stand. Every timing regression the cross-run test suspects is measured
// again, now: the baseline build's kept runner and the candidate's, interleaved in the same rounds
// (A B A B, one sweep into the database, a run of its own), and the paired per-round test
// (k3stats::compare_paired_rounds, Stein's first stage) decides. Confirmed when that test calls
// the candidate slower by at least the same threshold; refuted when it does not and its minimum
// detectable effect is below the suspected change; unavailable, and counted (with the reason),
// when the re-measurement was too noisy to tell, a runner was not kept or the target is not in
// the targets file. Two runs of the
// same build are refuted without measuring: the code did not change, so the change is the
// machine's (the trends show it).
#pragma once

#include <map>
#include <string>

#include "harness/host/verdict/run_data.h"
#include "harness/host/targets/target.h"
#include "harness/host/verdict/verdict.h"

namespace k3reports {

struct ConfirmContext {
  std::string db_path;      // written: the re-measurement is a run of its own
  std::string root;         // source tree (targets resolve their runners against it)
  std::string runners_dir;  // kept runner binaries (runner_store.h)
  std::map<std::string, k3targets::TargetConfig> targets;  // the targets file
  std::string command_line;
  bool progress = false;
};

// Re-measures the suspected timing regressions of `v` (a cross-run verdict of `cand` against
// `base`) and records each one's confirmation. Returns the confirm run's id ("" if none ran).
std::string confirm_suspected(k3verdict::Verdict& v, const k3verdict::RunData& base, const k3verdict::RunData& cand,
                              const ConfirmContext& ctx);

}  // namespace k3reports
