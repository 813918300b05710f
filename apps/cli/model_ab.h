// `k3tune model --baseline-runner OLD` / `--baseline-build HASH`: the whole-model tests of two
// builds measured in the same interleaved rounds (or, with --table T, one build with the table
// and with its built-in defaults), judged by the one within-run verdict
// (k3reports::within_run_verdict: the paired test on per-round log ratios), and the change
// attributed to the ops: per round, each op kind's time per call in the candidate minus the
// baseline's (the same round: paired), from the per-op breakdown every runner process reports;
// the mean and 95% t interval of those differences over the rounds, divided by the baseline's
// mean wall time per call (a ratio of means: one disturbed round cannot blow it up as a mean of
// per-round ratios would). The contributions and the forward's
// glue (wall time outside the op calls) sum to the relative change of the mean wall time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.h"

namespace k3cli {

struct OpContribution {
  std::string op;                            // the forward's op kind, or "glue"
  double mean = 0, ci_low = 0, ci_high = 0;  // share of the baseline's wall time per call
};

struct ModelAbRow {
  std::string test;                           // pp512, tg128, ...
  std::string verdict;                        // "unchanged within +-3.4%", "SLOWER +5.1%", ...
  double rel_diff = 0, p_value = 1, mde = 0;  // of the time per call (> 0: candidate slower)
  int rounds = 0;                             // rounds with both builds' breakdowns
  double wall_change = 0;  // (mean B - mean A) / mean A of the wall time per call, those rounds
  std::vector<OpContribution> ops;  // those whose interval excludes 0 first, each by |mean|
};

// The rows of a judged A/B run: two builds (k3reports::judge_within_run) or a tuning table
// against the defaults on one build (k3reports::judge_table_within_run).
std::vector<ModelAbRow> model_ab(const std::string& db_path, const k3reports::JudgedRun& judged);
// `baseline` and `candidate` name the two sides in the heading; `design` says how two builds were
// measured (bench_session.h BuildPairing::text(); "" for a table against the defaults, which
// shares the rounds of one build).
std::string model_ab_markdown(const std::vector<ModelAbRow>& rows, const std::string& baseline,
                              const std::string& candidate, const std::string& design = "");
nlohmann::json model_ab_json(const std::vector<ModelAbRow>& rows);

}  // namespace k3cli
