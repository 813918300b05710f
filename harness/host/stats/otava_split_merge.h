// Apache Otava's default analysis of a series with one figure per point (otava/analysis.py,
// compute_change_points), from Fleming et al., "Hunter: Using Change Point Detection to Hunt for
// Performance Regressions", ICPE 2023:
//  1. split: E-divisive with the Student t-test (e_divisive.h, kOtavaStudentT, sides of one point
//     allowed) in overlapping windows of `window` points, the next window starting half a window
//     on or at the last change point found, whichever is later, at a relaxed first-pass threshold
//     (10 max_p_value below 0.05, 2 max_p_value below 0.5, else max_p_value). The union of the
//     windows' change points are the "weak" change points.
//  2. merge: every weak change point is tested (t-test) between its neighbouring change points;
//     while the weakest -- the largest p-value if it is not below max_p_value, else the smallest
//     magnitude if that is not above min_magnitude -- fails, it is removed and its neighbours are
//     tested again.
// Why windows: over a long history, a large early change dominates Q-hat and the permutation or
// t-test of a whole-series split can stop the bisection before a later, smaller change is seen.
//
// Two of Otava's conventions are kept because its published series reproduce only with both
// (tests/harness/change_point_published_test.cpp, the Tigerbeetle series at eleven settings): the
// t-test's variances with denominator n (e_divisive.h, kOtavaStudentT), and, after a removal, the
// p-values of the RIGHT neighbour and the one after it are computed again (merge(): recompute(i),
// recompute(i + 1)) while the LEFT neighbour keeps its old p-value although its right side has
// grown. Both keep more change points than the textbook test with both neighbours tested again
// would (Tigerbeetle at max_pvalue 0.0001: 8 change points against 5).
#pragma once

#include <cstddef>
#include <vector>

namespace k3stats {

struct OtavaOptions {
  std::size_t window = 50;  // Otava's AnalysisOptions defaults
  double max_p_value = 0.001;
  double min_magnitude = 0;  // relative change, max(|after/before - 1|, |before/after - 1|)
};

struct OtavaChange {
  std::size_t index = 0;  // the first point after the change
  double p_value = 1;     // t-test between the neighbouring change points
  double mean_before = 0, mean_after = 0;
  double magnitude = 0;
};

// invalid_argument for a window below 2 or a figure that is not finite.
std::vector<OtavaChange> otava_change_points(const std::vector<double>& series,
                                             const OtavaOptions& options = {});

}  // namespace k3stats
