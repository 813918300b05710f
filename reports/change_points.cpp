#include "change_points.h"

#include <algorithm>
#include <cmath>

#include "stats.h"

namespace k3reports {
namespace {

void segment(const std::vector<double>& v, std::size_t lo, std::size_t hi, double alpha,
             double min_effect, std::vector<ChangePoint>& out) {
  const std::size_t n = hi - lo;
  if (n < 4) return;
  const double splits = double(n - 3);  // k = lo+2 .. hi-2
  ChangePoint best;
  bool found = false;
  for (std::size_t k = lo + 2; k + 2 <= hi; ++k) {
    const std::vector<double> before(v.begin() + lo, v.begin() + k), after(v.begin() + k, v.begin() + hi);
    k3stats::CompareOptions opt;
    opt.alpha = alpha;
    opt.min_effect = min_effect;
    const auto c = k3stats::compare_processes(before, after, opt);
    const double p = std::min(1.0, c.p_value * splits);
    if (!found || p < best.p_value) {
      best = {k, c.rel_diff, p};
      found = true;
    }
  }
  if (!found || !(best.p_value < alpha) || std::fabs(best.rel_change) < min_effect) return;
  out.push_back(best);
  segment(v, lo, best.index, alpha, min_effect, out);
  segment(v, best.index, hi, alpha, min_effect, out);
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, double alpha,
                                            double min_effect) {
  std::vector<ChangePoint> out;
  segment(values, 0, values.size(), alpha, min_effect, out);
  std::sort(out.begin(), out.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

}  // namespace k3reports
