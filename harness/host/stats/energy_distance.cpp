#include "harness/host/stats/energy_distance.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace k3stats {
namespace {

double mean_cross_distance(const std::vector<double>& a, const std::vector<double>& b,
                           double exponent) {
  double sum = 0;
  for (double x : a)
    for (double y : b)
      sum += exponent == 1.0 ? std::fabs(x - y) : std::pow(std::fabs(x - y), exponent);
  return sum / (double(a.size()) * double(b.size()));
}

}  // namespace

ObservationDistances::ObservationDistances(const std::vector<std::vector<double>>& observations,
                                           double exponent)
    : n_(observations.size()), d_(observations.size() * observations.size(), 0.0) {
  if (!(exponent > 0 && exponent < 2))
    throw std::invalid_argument("energy distance: the exponent must be in (0, 2), got " +
                                std::to_string(exponent));
  for (std::size_t i = 0; i < n_; ++i) {
    if (observations[i].empty())
      throw std::invalid_argument("energy distance: observation " + std::to_string(i) +
                                  " has no figures");
    for (double x : observations[i])
      if (!std::isfinite(x))
        throw std::invalid_argument("energy distance: observation " + std::to_string(i) +
                                    " has a figure that is not finite");
  }
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t j = i + 1; j < n_; ++j)
      d_[i * n_ + j] = d_[j * n_ + i] =
          mean_cross_distance(observations[i], observations[j], exponent);
}

// For each tau (ascending) the sums over X = [begin, tau) are kept incrementally: within_x (pairs
// inside X) and cross_x[k] = sum_{i in X} D(i, k) for every later position k. Then kappa grows from
// tau + 1 and Y = [tau, kappa) gains position k = kappa - 1: the cross sum gains cross_x[k] and the
// pairs inside Y gain sum_{j in [tau, k)} D(j, k) = upto[k] - cross_x[k], where upto[k] is the sum
// over all of [begin, k).
SplitCandidate best_split(const ObservationDistances& d, const std::vector<std::size_t>& order,
                          std::size_t begin, std::size_t end, std::size_t min_segment) {
  SplitCandidate best;
  if (min_segment < 1) min_segment = 1;
  if (end < begin + 2 * min_segment) return best;
  const std::size_t len = end - begin;
  auto dist = [&](std::size_t p, std::size_t q) { return d(order[p], order[q]); };
  std::vector<double> upto(len, 0.0), cross_x(len, 0.0);
  for (std::size_t k = 1; k < len; ++k)
    for (std::size_t j = 0; j < k; ++j) upto[k] += dist(begin + j, begin + k);
  for (std::size_t k = 1; k < len; ++k) cross_x[k] = dist(begin, begin + k);
  double within_x = 0;
  for (std::size_t tau = begin + 1; tau < end; ++tau) {
    const double n = double(tau - begin);
    double cross = 0, within_y = 0;
    for (std::size_t kappa = tau + 1; kappa <= end; ++kappa) {
      const std::size_t k = kappa - 1 - begin;
      cross += cross_x[k];
      within_y += upto[k] - cross_x[k];
      const double m = double(kappa - tau);
      if (tau - begin < min_segment || kappa - tau < min_segment) continue;
      double q = 2 / (n + m) * cross;
      if (n > 1) q -= 2 * m / ((n + m) * (n - 1)) * within_x;
      if (m > 1) q -= 2 * n / ((n + m) * (m - 1)) * within_y;
      if (!best.found || q > best.q_hat) best = {true, tau, kappa, q};
    }
    // Position tau joins X.
    const std::size_t t = tau - begin;
    within_x += cross_x[t];
    for (std::size_t k = t + 1; k < len; ++k) cross_x[k] += dist(tau, begin + k);
  }
  return best;
}

double energy_statistic(const ObservationDistances& d, const std::vector<std::size_t>& x,
                        const std::vector<std::size_t>& y) {
  if (x.empty() || y.empty())
    throw std::invalid_argument("energy statistic: each side needs an observation");
  double cross = 0, within_x = 0, within_y = 0;
  for (std::size_t i : x)
    for (std::size_t j : y) cross += d(i, j);
  for (std::size_t a = 0; a < x.size(); ++a)
    for (std::size_t b = a + 1; b < x.size(); ++b) within_x += d(x[a], x[b]);
  for (std::size_t a = 0; a < y.size(); ++a)
    for (std::size_t b = a + 1; b < y.size(); ++b) within_y += d(y[a], y[b]);
  const double n = double(x.size()), m = double(y.size());
  double e = 2 * cross / (n * m);
  if (x.size() > 1) e -= within_x / (n * (n - 1) / 2);
  if (y.size() > 1) e -= within_y / (m * (m - 1) / 2);
  return e;
}

}  // namespace k3stats
