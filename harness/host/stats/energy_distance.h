// The energy statistic of E-divisive means (D. S. Matteson and N. A. James, "A Nonparametric
// Approach for Multiple Change Point Analysis of Multivariate Data", JASA 109 (2014) 334-345) over
// a series of observations, and the search for the split that maximises it.
//
// An observation is a sample of figures: one night's per-process times of a series. The distance
// between observations i != j is the mean of |x - y|^alpha over the figures x of i and y of j. With
// one figure per observation that is |z_i - z_j|^alpha, the paper's univariate statistic as Apache
// Otava computes it (otava/change_point_divisive/calculator.py, PairDistanceCalculator, whose
// `power` is alpha). With several, pairs of figures of the SAME night are never used: processes of
// one night share that night's machine state, so their distances are smaller than between nights
// even when nothing changed; the statistic below uses distances between distinct observations only,
// which keeps it a U-statistic with expectation 0 when the nights are exchangeable. Its population
// value is the energy distance between the per-process distributions of the two segments (Szekely
// and Rizzo), zero if and only if they are the same distribution, whatever differs -- location,
// spread or shape. The nights, not their processes, are what a permutation test exchanges.
//
// Q-hat of the observations [s, kappa) split at tau: X = [s, tau), Y = [tau, kappa), n = tau - s,
// m = kappa - tau, D the distances above,
//   E = 2/(n m) sum_{X x Y} D - C(n,2)^-1 sum_{pairs in X} D - C(m,2)^-1 sum_{pairs in Y} D,
//   Q = n m / (n + m) E
// (a within-segment term of a single observation is 0, as in Otava). The candidate maximises Q over
// tau AND kappa: Y may end before the interval does, so that a later change does not blur this one
// (the paper's kappa; Otava's docs/MATH.md). Ties keep the smallest tau, then the smallest kappa
// (numpy's argmax order in Otava). O(L^2) time per interval of L observations, O(L) extra memory.
#pragma once

#include <cstddef>
#include <vector>

namespace k3stats {

class ObservationDistances {
 public:
  // invalid_argument when the exponent (alpha) is outside (0, 2) (the paper's range, where the
  // energy distance characterises equality of distributions), an observation is empty or a figure
  // is not finite.
  ObservationDistances(const std::vector<std::vector<double>>& observations, double exponent);
  std::size_t size() const { return n_; }
  double operator()(std::size_t i, std::size_t j) const { return d_[i * n_ + j]; }

 private:
  std::size_t n_ = 0;
  std::vector<double> d_;  // n x n, row-major, 0 on the diagonal
};

struct SplitCandidate {
  bool found = false;     // false when the interval is shorter than two segments
  std::size_t index = 0;  // tau: the first position of Y
  std::size_t end = 0;    // kappa: one past the last position of Y
  double q_hat = 0;
};

// The best split of positions [begin, end), each side at least min_segment (>= 1) positions long.
// order[p] is the observation at position p: the identity for the series as observed, a shuffle for
// a permutation test (the distances are computed once and read through it).
SplitCandidate best_split(const ObservationDistances& d, const std::vector<std::size_t>& order,
                          std::size_t begin, std::size_t end, std::size_t min_segment);

// The two-sample energy statistic E (no n m / (n + m) factor) between the observations listed in x
// and in y (each at least one; a side of one observation has no within term).
double energy_statistic(const ObservationDistances& d, const std::vector<std::size_t>& x,
                        const std::vector<std::size_t>& y);

}  // namespace k3stats
