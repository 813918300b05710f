#include "harness/host/stats/otava_split_merge.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "harness/host/stats/e_divisive.h"

namespace k3stats {
namespace {

double first_pass_threshold(double max_p) {
  if (max_p < 0.05) return max_p * 10;
  if (max_p < 0.5) return max_p * 2;
  return max_p;
}

double relative(double to, double from) {
  return from == 0 ? 0 : to / from - 1;
}

// The change at indices[k] between its neighbours (the series' ends for the first and the last).
OtavaChange tested(const std::vector<double>& series, const std::vector<std::size_t>& indices,
                   std::size_t k) {
  const std::size_t begin = k == 0 ? 0 : indices[k - 1];
  const std::size_t end = k + 1 == indices.size() ? series.size() : indices[k + 1];
  const auto first = series.begin();
  const std::vector<double> before(first + std::ptrdiff_t(begin),
                                   first + std::ptrdiff_t(indices[k]));
  const std::vector<double> after(first + std::ptrdiff_t(indices[k]), first + std::ptrdiff_t(end));
  OtavaChange c;
  c.index = indices[k];
  c.p_value = student_t_test(before, after, VarianceDenominator::kCount).p_value;
  c.mean_before = std::accumulate(before.begin(), before.end(), 0.0) / double(before.size());
  c.mean_after = std::accumulate(after.begin(), after.end(), 0.0) / double(after.size());
  c.magnitude = std::max(std::fabs(relative(c.mean_after, c.mean_before)),
                         std::fabs(relative(c.mean_before, c.mean_after)));
  return c;
}

std::vector<std::size_t> weak_change_points(const std::vector<double>& series, std::size_t window,
                                            double threshold) {
  EDivisiveOptions opt;
  opt.test = SplitSignificance::kOtavaStudentT;
  opt.max_p_value = threshold;
  opt.min_segment = 1;
  std::vector<std::size_t> weak;
  const std::size_t step = window / 2;
  for (std::size_t start = 0; start < series.size();) {
    const std::size_t end = std::min(start + window, series.size());
    const std::vector<double> slice(series.begin() + std::ptrdiff_t(start),
                                    series.begin() + std::ptrdiff_t(end));
    std::size_t last = 0;
    for (const auto& c : e_divisive(slice, opt)) {
      last = c.index + start;
      if (std::find(weak.begin(), weak.end(), last) == weak.end()) weak.push_back(last);
    }
    start = std::max(last, start + step);
  }
  std::sort(weak.begin(), weak.end());
  return weak;
}

}  // namespace

std::vector<OtavaChange> otava_change_points(const std::vector<double>& series,
                                             const OtavaOptions& opt) {
  if (opt.window < 2) throw std::invalid_argument("otava change points: the window must be >= 2");
  for (double x : series)
    if (!std::isfinite(x))
      throw std::invalid_argument("otava change points: a figure is not finite");
  std::vector<std::size_t> indices =
      weak_change_points(series, opt.window, first_pass_threshold(opt.max_p_value));
  std::vector<OtavaChange> changes;
  for (std::size_t k = 0; k < indices.size(); ++k) changes.push_back(tested(series, indices, k));
  while (!changes.empty()) {
    auto weakest =
        std::max_element(changes.begin(), changes.end(),
                         [](const auto& a, const auto& b) { return a.p_value < b.p_value; });
    if (weakest->p_value < opt.max_p_value) {
      weakest = std::min_element(changes.begin(), changes.end(), [](const auto& a, const auto& b) {
        return a.magnitude < b.magnitude;
      });
      if (weakest->magnitude > opt.min_magnitude) break;
    }
    const auto k = std::size_t(weakest - changes.begin());
    changes.erase(weakest);
    indices.erase(indices.begin() + std::ptrdiff_t(k));
    // Otava's recompute(i), recompute(i + 1): the left neighbour (k - 1) keeps its p-value.
    for (std::size_t j = k; j < std::min(k + 2, changes.size()); ++j)
      changes[j] = tested(series, indices, j);
  }
  return changes;
}

}  // namespace k3stats
