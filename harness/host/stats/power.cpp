#include "harness/host/stats/power.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/tools/roots.hpp>

namespace k3stats {
namespace {

// Two-sided power for a test statistic that is t'(df, ncp) under the alternative.
double two_sided_power(double df, double ncp, double alpha) {
  const boost::math::students_t central(df);
  const double crit = boost::math::quantile(boost::math::complement(central, alpha / 2));
  if (ncp == 0) return alpha;
  const boost::math::non_central_t alt(df, ncp);
  return boost::math::cdf(boost::math::complement(alt, crit)) + boost::math::cdf(alt, -crit);
}

double welch_se_df(double sd_a, int n_a, double sd_b, int n_b, double& df) {
  const double va = sd_a * sd_a / n_a, vb = sd_b * sd_b / n_b;
  const double se = std::sqrt(va + vb);
  df = (va + vb) * (va + vb) / (va * va / (n_a - 1) + vb * vb / (n_b - 1));
  if (!std::isfinite(df)) df = n_a + n_b - 2;  // one side without spread: the other's df rules
  return se;
}

}  // namespace

double welch_power(double delta, double sd_a, int n_a, double sd_b, int n_b, double alpha) {
  if (n_a < 2 || n_b < 2)
    throw std::invalid_argument("welch_power: each side needs >= 2 processes");
  double df = 0;
  const double se = welch_se_df(sd_a, n_a, sd_b, n_b, df);
  if (se == 0) return delta == 0 ? alpha : 1.0;
  return two_sided_power(df, std::fabs(delta) / se, alpha);
}

namespace {
// The absolute difference at which a test with standard error `se` and `df` degrees of freedom
// reaches `power`. Power grows monotonically with the non-centrality: bracket it, then solve.
double detectable_at(double se, double df, double alpha, double power) {
  if (se == 0) return 0.0;
  auto excess = [&](double ncp) { return two_sided_power(df, ncp, alpha) - power; };
  double hi = 1.0;
  while (excess(hi) < 0 && hi < 1e6) hi *= 2;
  std::uintmax_t iterations = 200;
  const auto root =
      boost::math::tools::toms748_solve(excess, 0.0, hi, excess(0.0), excess(hi),
                                        boost::math::tools::eps_tolerance<double>(40), iterations);
  return 0.5 * (root.first + root.second) * se;
}
}  // namespace

double minimum_detectable_difference(double sd_a, int n_a, double sd_b, int n_b, double alpha,
                                     double power) {
  if (n_a < 2 || n_b < 2) return std::numeric_limits<double>::infinity();
  double df = 0;
  const double se = welch_se_df(sd_a, n_a, sd_b, n_b, df);
  return detectable_at(se, df, alpha, power);
}

double minimum_detectable_shift(double se, double df, double alpha, double power) {
  if (!(df >= 1)) return std::numeric_limits<double>::infinity();
  return detectable_at(se, df, alpha, power);
}

double shift_power(double delta, double se, double df, double alpha) {
  if (!(df >= 1)) return alpha;
  if (se == 0) return delta == 0 ? alpha : 1.0;
  return two_sided_power(df, std::fabs(delta) / se, alpha);
}

int processes_per_side(double d, double alpha, double power) {
  if (!(d > 0)) throw std::invalid_argument("processes_per_side: d must be positive");
  for (int n = 2; n < 1000000; ++n) {
    const double df = 2.0 * n - 2.0;
    if (two_sided_power(df, d * std::sqrt(n / 2.0), alpha) >= power) return n;
  }
  return std::numeric_limits<int>::max();
}

}  // namespace k3stats
