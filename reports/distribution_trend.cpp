#include "reports/distribution_trend.h"

#include <fmt/format.h>

#include "harness/host/store/result_reads.h"

namespace k3reports {

std::map<std::string, std::vector<double>> process_means_by_cell(k3store::Connection& db,
                                                                 const std::string& run_uuid) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& m : k3store::counted_process_means(db, run_uuid))
    out[m.cell_key].push_back(m.mean_ns);
  return out;
}

std::vector<k3stats::DistributionChangePoint> find_trend_distribution_changes(const TrendSeries& s,
                                                                              double alpha,
                                                                              double min_effect) {
  std::vector<std::vector<double>> nights;
  std::vector<std::size_t> point_of_night;
  std::size_t first = 0, with_figures = 0;
  for (std::size_t i = s.points.size(); i-- > 0;) {
    if (s.points[i].process_ns.empty()) continue;
    first = i;
    if (++with_figures == kMaxNights) break;
  }
  for (std::size_t i = first; i < s.points.size(); ++i) {
    if (s.points[i].process_ns.empty()) continue;
    nights.push_back(s.points[i].process_ns);
    point_of_night.push_back(i);
  }
  k3stats::DistributionChangeOptions options;
  options.max_p_value = alpha;
  options.classify.alpha = alpha;
  options.classify.min_level_effect = min_effect;
  std::vector<k3stats::DistributionChangePoint> changes;
  for (auto c : k3stats::find_distribution_changes(nights, options)) {
    if (c.what.kind == k3stats::ChangeKind::kNone) continue;
    c.index = point_of_night[c.index];
    c.segment_begin = point_of_night[c.segment_begin];
    // segment_end is one past the last night of the side after.
    c.segment_end = point_of_night[c.segment_end - 1] + 1;
    changes.push_back(c);
  }
  return changes;
}

std::string distribution_change_text(const k3stats::DistributionChangePoint& c) {
  const auto& w = c.what;
  switch (w.kind) {
    case k3stats::ChangeKind::kLevel:
      return fmt::format("level x{:.3g} (p {:.2g})", w.level.size, w.level.p_value);
    case k3stats::ChangeKind::kSpread:
      return fmt::format("spread x{:.3g} (p {:.2g})", w.spread.size, w.spread.p_value);
    case k3stats::ChangeKind::kShape:
      return fmt::format("shape {:.3g} (p {:.2g})", w.shape.size, w.shape.p_value);
    case k3stats::ChangeKind::kNone:
      break;
  }
  return fmt::format("unattributed (split p {:.2g})", c.p_value);
}

}  // namespace k3reports
