#include "harness/host/stats/e_divisive.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include <boost/math/distributions/students_t.hpp>

#include "harness/host/stats/energy_distance.h"
#include "harness/host/stats/shuffle.h"

namespace k3stats {
namespace {

using Interval = std::pair<std::size_t, std::size_t>;  // [first, second)

std::vector<Interval> intervals_between(const std::vector<EDivisiveChange>& changes,
                                        std::size_t n) {
  std::vector<Interval> out;
  std::size_t begin = 0;
  for (const auto& c : changes) {
    out.push_back({begin, c.index});
    begin = c.index;
  }
  out.push_back({begin, n});
  return out;
}

// The candidate of Otava's Calculator.get_next_candidate: the largest Q-hat over the intervals,
// the first interval on a tie.
struct Candidate {
  SplitCandidate split;
  Interval interval;
};

Candidate next_candidate(const ObservationDistances& d, const std::vector<std::size_t>& order,
                         const std::vector<Interval>& intervals, std::size_t min_segment) {
  Candidate best;
  for (const auto& iv : intervals) {
    const auto s = best_split(d, order, iv.first, iv.second, min_segment);
    if (s.found && (!best.split.found || s.q_hat > best.split.q_hat)) best = {s, iv};
  }
  return best;
}

double permutation_p_value(const ObservationDistances& d, const std::vector<Interval>& intervals,
                           double observed, const EDivisiveOptions& opt, PortableShuffler& rng) {
  std::vector<std::size_t> order(d.size());
  int reached = 0;
  for (int r = 0; r < opt.permutations; ++r) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (const auto& iv : intervals)
      rng.shuffle(order.begin() + std::ptrdiff_t(iv.first),
                  order.begin() + std::ptrdiff_t(iv.second));
    const auto c = next_candidate(d, order, intervals, opt.min_segment);
    if (c.split.found && c.split.q_hat >= observed) ++reached;
  }
  return double(reached + 1) / double(opt.permutations + 1);
}

std::vector<double> observation_means(const std::vector<std::vector<double>>& obs,
                                      std::size_t begin, std::size_t end) {
  std::vector<double> means;
  for (std::size_t i = begin; i < end; ++i)
    means.push_back(std::accumulate(obs[i].begin(), obs[i].end(), 0.0) / double(obs[i].size()));
  return means;
}

void check_options(const EDivisiveOptions& opt) {
  if (!(opt.max_p_value > 0 && opt.max_p_value <= 1))
    throw std::invalid_argument("e-divisive: max_p_value must be in (0, 1]");
  if (opt.test == SplitSignificance::kPermutation && opt.permutations < 1)
    throw std::invalid_argument("e-divisive: the permutation test needs at least one permutation");
}

}  // namespace

StudentT student_t_test(const std::vector<double>& a, const std::vector<double>& b,
                        VarianceDenominator denominator) {
  StudentT r;
  const double na = double(a.size()), nb = double(b.size());
  r.df = na + nb - 2;
  if (a.empty() || b.empty() || r.df < 1) return r;
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / na;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / nb;
  double ssa = 0, ssb = 0;
  for (double x : a) ssa += (x - ma) * (x - ma);
  for (double x : b) ssb += (x - mb) * (x - mb);
  if (denominator == VarianceDenominator::kCount) {  // (n - 1) s^2 with s^2 = ss / n
    ssa *= (na - 1) / na;
    ssb *= (nb - 1) / nb;
  }
  const double se = std::sqrt((ssa + ssb) / r.df * (1 / na + 1 / nb));
  if (se == 0) {
    r.t = mb == ma ? 0 : std::copysign(INFINITY, mb - ma);
    r.p_value = mb == ma ? 1 : 0;
    return r;
  }
  r.t = (mb - ma) / se;
  r.p_value =
      2 * boost::math::cdf(boost::math::complement(boost::math::students_t(r.df), std::fabs(r.t)));
  return r;
}

std::vector<EDivisiveChange> e_divisive(const std::vector<std::vector<double>>& observations,
                                        const EDivisiveOptions& opt) {
  check_options(opt);
  const ObservationDistances d(observations, opt.exponent);
  std::vector<std::size_t> identity(d.size());
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  PortableShuffler rng(opt.seed);
  std::vector<EDivisiveChange> changes;
  while (true) {
    const auto intervals = intervals_between(changes, d.size());
    const auto c = next_candidate(d, identity, intervals, opt.min_segment);
    if (!c.split.found) break;
    EDivisiveChange change{c.split.index, c.split.q_hat, 1, c.interval.first, c.interval.second};
    if (opt.test == SplitSignificance::kPermutation) {
      change.p_value = permutation_p_value(d, intervals, c.split.q_hat, opt, rng);
    } else {
      change.p_value = student_t_test(observation_means(observations, change.begin, change.index),
                                      observation_means(observations, change.index, change.end),
                                      VarianceDenominator::kCount)
                           .p_value;
    }
    if (!(change.p_value <= opt.max_p_value)) break;
    changes.push_back(change);
    std::sort(changes.begin(), changes.end(),
              [](const auto& x, const auto& y) { return x.index < y.index; });
  }
  return changes;
}

std::vector<EDivisiveChange> e_divisive(const std::vector<double>& series,
                                        const EDivisiveOptions& opt) {
  std::vector<std::vector<double>> observations;
  observations.reserve(series.size());
  for (double x : series) observations.push_back({x});
  return e_divisive(observations, opt);
}

}  // namespace k3stats
