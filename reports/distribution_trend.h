// The distribution-aware change points of a trend, next to the mean rule's (change_points.h):
// E-divisive means over the series' nights, each night its counted processes' mean times
// (harness/host/stats/distribution_changes.h), each change named level, spread or shape with its
// size. Used by the nightly's trends and by publish.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "harness/host/stats/distribution_changes.h"
#include "harness/host/store/sqlite.h"
#include "reports/trends.h"

namespace k3reports {

// A run's counted process mean times by cell key: a point's nights (TrendPoint::process_ns).
std::map<std::string, std::vector<double>> process_means_by_cell(k3store::Connection& db,
                                                                 const std::string& run_uuid);

// The test's cost grows with the square of the nights (0.66 s for 365 nights of 10 processes on
// the development VM): a series is read over its last kMaxNights nights with figures, 0.1 s each.
inline constexpr std::size_t kMaxNights = 120;

// A point without process figures (every process set aside, or a run stored before the figures
// were) is not a night of the test; the change points' indices are those of s.points. alpha is the
// significance of the split and of each component; min_effect the op's minimum level effect. A
// split no component confirms at its minimum size (a level step below the op's minimum effect,
// nothing else) is dropped, as the mean rule drops a step below it.
std::vector<k3stats::DistributionChangePoint> find_trend_distribution_changes(const TrendSeries& s,
                                                                              double alpha,
                                                                              double min_effect);

// "spread x2.31 (p 0.005)": what changed, its size and its test; for a level change the level's.
std::string distribution_change_text(const k3stats::DistributionChangePoint& c);

}  // namespace k3reports
