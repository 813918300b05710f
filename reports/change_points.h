// Change points in a trend: one value per run (the run's mean time of a cell), in time order.
// Binary segmentation: over every split with at least two runs on each side, Welch's t-test between
// the runs before and after it (k3stats::compare_processes on the run means); the split with the
// smallest p-value is a change point when that p-value, Bonferroni-adjusted for the number of
// splits tried, is below alpha AND the step is at least the minimum effect; both sides are then
// searched the same way. Runs, not processes, are the unit: processes of one run share that run's
// state of the machine, and run-to-run drift is what a trend must not mistake for a change.
#pragma once

#include <cstddef>
#include <vector>

namespace k3reports {

struct ChangePoint {
  std::size_t index = 0;  // first value after the change
  double rel_change = 0;  // mean after / mean before - 1
  double p_value = 1;     // Bonferroni-adjusted
};

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, double alpha,
                                            double min_effect);

}  // namespace k3reports
