#include "harness/host/stats/sequential.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/host/stats/stats.h"

namespace k3stats {

int stein_round_up(double u) {
  // <u> + 1 is ceil(u): floor(u) + 1 for a fraction, u itself for an integer.
  return u > 1 ? static_cast<int>(std::ceil(u)) : 1;
}

int stein_total(double s_m, int m, double d, double confidence, int max_n) {
  if (m < 2) throw std::invalid_argument("stein_total: the first stage needs m >= 2");
  if (!(d > 0)) throw std::invalid_argument("stein_total: the half-width d must be positive");
  const double t = t_critical(confidence, m - 1);
  const double u = t * t * s_m * s_m / (d * d);
  if (!std::isfinite(u) || u >= max_n) return std::max(m, max_n);
  return std::clamp(stein_round_up(u), m, std::max(m, max_n));
}

double relative_half_width(const std::vector<double>& x, double confidence) {
  if (x.size() < 2) return std::numeric_limits<double>::infinity();
  return t_interval(x, confidence).rel_half_width;
}

int processes_for_half_width(double cv, double target_rel, int min_n, int max_n,
                             double confidence) {
  for (int n = std::max(min_n, 2); n <= max_n; ++n) {
    if (t_critical(confidence, n - 1) * cv / std::sqrt(double(n)) <= target_rel) return n;
  }
  return max_n;
}

}  // namespace k3stats
