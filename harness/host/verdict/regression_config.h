// The regression rules (configs/regression.toml): when a difference between a baseline and a
// candidate is called a regression. A timing change is one only when it is significant under the
// A/B test on process-level data AND at least the op's minimum effect (raised to the target's
// measured noise floor when one is stored); accuracy is part of the verdict (a worse error/bound
// ratio beyond a threshold, a changed output checksum for ops whose outputs must not change);
// the confirm step's process plan. Every key is optional; bad values are one line
// "file:line: key: what".
#pragma once

#include <map>
#include <set>
#include <string>

#include "harness/host/stats/stats.h"

namespace k3verdict {

struct RegressionConfig {
  std::string source = "built-in defaults";  // the file the rules came from
  double alpha = 0.05;                       // two-sided significance level
  double power = 0.8;                        // for the minimum detectable effect
  double min_effect = 0.02;                  // relative; every op without its own entry
  std::map<std::string, double> op_min_effect;
  bool use_noise_floor = true;  // raise each threshold to the target's measured noise floor
  // The estimator and test of within-run (paired) verdicts; across runs it is always Welch's t.
  k3stats::PairedEstimator estimator = k3stats::CompareOptions{}.estimator;
  // Accuracy: flagged when the candidate's worst error/bound ratio exceeds the baseline's by more
  // than this (in units of the bound: 0.25 = a quarter of the allowed error).
  double max_ratio_increase = 0.25;
  std::set<std::string> identical_outputs;  // ops whose output checksum must not change
  // Confirm step: the interleaved re-measurement's process plan (Stein first stage, ceiling, CI).
  int confirm_processes = 5;
  int confirm_max_processes = 16;
  double confirm_target_ci = 0.03;

  double min_effect_for(const std::string& op) const;
};

// Reads `path`; VerdictError naming file, line and key on any bad or unknown entry.
RegressionConfig load_regression_config(const std::string& path);

}  // namespace k3verdict
