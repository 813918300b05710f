#include "harness/host/stats/binomial.h"

#include <stdexcept>

#include <boost/math/distributions/binomial.hpp>

namespace k3stats {

Proportion clopper_pearson(int successes, int trials, double confidence) {
  if (trials < 0 || successes < 0 || successes > trials) {
    throw std::invalid_argument("clopper_pearson: need 0 <= successes <= trials");
  }
  Proportion p;
  p.successes = successes;
  p.trials = trials;
  if (trials == 0) return p;
  p.rate = double(successes) / trials;
  using B = boost::math::binomial_distribution<double>;
  const double tail = (1.0 - confidence) / 2;
  p.low = B::find_lower_bound_on_p(trials, successes, tail, B::clopper_pearson_exact_interval);
  p.high = B::find_upper_bound_on_p(trials, successes, tail, B::clopper_pearson_exact_interval);
  return p;
}

}  // namespace k3stats
