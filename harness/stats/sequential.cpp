#include "sequential.h"

#include <cmath>
#include <limits>

#include "stats.h"

namespace k3stats {

double relative_half_width(const std::vector<double>& x, double confidence) {
  if (x.size() < 2) return std::numeric_limits<double>::infinity();
  return t_interval(x, confidence).rel_half_width;
}

bool wide_enough_sample(const std::vector<double>& process_means, double target_rel, int min_n,
                        double confidence) {
  if (static_cast<int>(process_means.size()) < std::max(min_n, 2)) return false;
  return relative_half_width(process_means, confidence) <= target_rel;
}

int processes_for_half_width(double cv, double target_rel, int min_n, int max_n, double confidence) {
  for (int n = std::max(min_n, 2); n <= max_n; ++n) {
    if (t_critical(confidence, n - 1) * cv / std::sqrt(double(n)) <= target_rel) return n;
  }
  return max_n;
}

}  // namespace k3stats
