// Change points in a trend: one value per run (the run's mean time of a cell), in time order.
// Two steps:
//   1. Candidates: the segmentation into runs of constant level that minimises the squared
//      deviations from each segment's mean plus a penalty per segment (optimal partitioning, exact
//      by dynamic programming; every segment at least two runs). The penalty is the Schwarz
//      criterion's 2 sigma^2 ln n, sigma estimated from successive differences (median absolute
//      difference / (0.6745 sqrt 2)), which a step does not inflate the way a plain deviation
//      would. Unlike splitting in two and recursing, this finds a slowdown that a later run fixed
//      (the level goes up, then back), which no single split separates.
//   2. Verdict: each boundary is a change point only when Welch's t-test between the two segments
//      it separates (k3stats::compare_processes on the run means) has p below alpha AND the step is
//      at least the minimum effect; the weakest failing boundary is merged away and the rest
//      tested again, until every boundary left passes.
// Runs, not processes, are the unit: processes of one run share that run's state of the machine,
// and run-to-run drift is what a trend must not mistake for a change.
#pragma once

#include <cstddef>
#include <vector>

namespace k3reports {

struct ChangePoint {
  std::size_t index = 0;  // first value after the change
  double rel_change = 0;  // mean of the segment after / mean of the segment before - 1
  double p_value = 1;     // Welch's test between the two segments
};

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, double alpha,
                                            double min_effect);

}  // namespace k3reports
