#include "reports/change_points.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/host/stats/stats.h"

namespace k3reports {
namespace {

constexpr std::size_t kMinSegment = 2;  // Welch's test needs two runs a side

// Noise scale from successive differences: robust to the steps being looked for. Floored at a
// millionth of the level so that noise-free data (a deterministic proxy objective) still pays a
// penalty per segment.
double noise_sigma(const std::vector<double>& v) {
  std::vector<double> diffs, levels(v);
  for (std::size_t i = 1; i < v.size(); ++i) diffs.push_back(std::fabs(v[i] - v[i - 1]));
  std::nth_element(diffs.begin(), diffs.begin() + diffs.size() / 2, diffs.end());
  std::nth_element(levels.begin(), levels.begin() + levels.size() / 2, levels.end());
  const double sigma = diffs[diffs.size() / 2] / (0.6745 * std::sqrt(2.0));
  return std::max(sigma, 1e-6 * std::fabs(levels[levels.size() / 2]));
}

// Segment starts (first index of every segment but the first) of the penalised least-squares
// segmentation.
std::vector<std::size_t> optimal_partition(const std::vector<double>& v) {
  const std::size_t n = v.size();
  std::vector<double> sum(n + 1, 0), sum2(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + v[i];
    sum2[i + 1] = sum2[i] + v[i] * v[i];
  }
  auto cost = [&](std::size_t a, std::size_t b) {  // squared deviations of v[a, b)
    const double s = sum[b] - sum[a], m = double(b - a);
    return std::max(0.0, sum2[b] - sum2[a] - s * s / m);
  };
  const double sigma = noise_sigma(v);
  const double penalty = 2 * sigma * sigma * std::log(double(n));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);  // best[e]: cheapest segmentation of v[0, e)
  std::vector<std::size_t> start(n + 1, 0);
  best[0] = -penalty;  // the first segment pays no boundary
  for (std::size_t e = kMinSegment; e <= n; ++e) {
    for (std::size_t s = 0; s + kMinSegment <= e; ++s) {
      if (s != 0 && s < kMinSegment) continue;
      if (best[s] == inf) continue;
      const double c = best[s] + penalty + cost(s, e);
      if (c < best[e]) {
        best[e] = c;
        start[e] = s;
      }
    }
  }
  std::vector<std::size_t> starts;
  for (std::size_t e = n; start[e] != 0; e = start[e]) starts.push_back(start[e]);
  std::reverse(starts.begin(), starts.end());
  return starts;
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, double alpha,
                                            double min_effect) {
  if (values.size() < 2 * kMinSegment) return {};
  std::vector<std::size_t> starts = optimal_partition(values);
  k3stats::CompareOptions opt;
  opt.alpha = alpha;
  opt.min_effect = min_effect;
  while (true) {
    std::vector<ChangePoint> points;
    std::size_t weakest = 0;
    double weakest_score = -1;  // the failing boundary with the largest p (then the smallest step)
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::size_t lo = i == 0 ? 0 : starts[i - 1];
      const std::size_t hi = i + 1 == starts.size() ? values.size() : starts[i + 1];
      const std::vector<double> before(values.begin() + lo, values.begin() + starts[i]);
      const std::vector<double> after(values.begin() + starts[i], values.begin() + hi);
      const auto c = k3stats::compare_processes(before, after, opt);
      points.push_back({starts[i], c.rel_diff, c.p_value});
      if (c.significant && c.meaningful) continue;
      const double score = c.p_value + (1 - std::min(1.0, std::fabs(c.rel_diff)));
      if (score > weakest_score) {
        weakest_score = score;
        weakest = i;
      }
    }
    if (weakest_score < 0) return points;
    starts.erase(starts.begin() + weakest);
  }
}

}  // namespace k3reports
