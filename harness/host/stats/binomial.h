// A rate measured by counting (false positives in A-vs-A trials, detections of an injected
// slowdown) is reported with its exact binomial (Clopper-Pearson) interval, so "0 of 20" reads as
// "somewhere between 0% and 17%", not as "0%". Quantiles from boost::math::binomial_distribution.
#pragma once

namespace k3stats {

struct Proportion {
  int successes = 0, trials = 0;
  double rate = 0;           // successes / trials (0 when trials == 0)
  double low = 0, high = 1;  // two-sided Clopper-Pearson interval at `confidence`
};

Proportion clopper_pearson(int successes, int trials, double confidence = 0.95);

}  // namespace k3stats
