#include "harness/host/stats/signed_rank.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>

#include "harness/host/stats/power.h"

namespace k3stats {
namespace {

// counts[w] = the number of sign patterns of ranks 1..n whose positive ranks sum to w: the
// generating function prod_k (1 + x^k), expanded one rank at a time. Every count is at most 2^50,
// exact in a double.
std::vector<double> signed_rank_counts(int n) {
  const int top = n * (n + 1) / 2;
  std::vector<double> counts(static_cast<std::size_t>(top) + 1, 0.0);
  counts[0] = 1;
  for (int k = 1; k <= n; ++k)
    for (int w = k * (k + 1) / 2; w >= k; --w) counts[w] += counts[w - k];
  return counts;
}

double normal_upper_quantile(double tail) {
  return boost::math::quantile(boost::math::complement(boost::math::normal(), tail));
}

// Midranks of |d| over the nonzero differences, and the tie sizes (for the variance correction).
struct Ranks {
  std::vector<double> rank, value;  // parallel, in ascending |d|
  std::vector<int> ties;            // sizes of groups of equal |d| (> 1)
};

Ranks midranks(const std::vector<double>& nonzero) {
  Ranks r;
  r.value = nonzero;
  std::sort(r.value.begin(), r.value.end(),
            [](double x, double y) { return std::fabs(x) < std::fabs(y); });
  r.rank.resize(r.value.size());
  for (std::size_t i = 0; i < r.value.size();) {
    std::size_t j = i;
    while (j + 1 < r.value.size() && std::fabs(r.value[j + 1]) == std::fabs(r.value[i])) ++j;
    const double mid = 0.5 * double(i + j) + 1.0;  // the mean of ranks i+1 .. j+1
    for (std::size_t k = i; k <= j; ++k) r.rank[k] = mid;
    if (j > i) r.ties.push_back(static_cast<int>(j - i + 1));
    i = j + 1;
  }
  return r;
}

}  // namespace

double signed_rank_cdf(double w, int n) {
  if (n < 0 || n > kExactSignedRankLimit)
    throw std::invalid_argument("signed_rank_cdf: n must be in 0..50");
  if (w < 0) return 0.0;
  const auto counts = signed_rank_counts(n);
  const auto top = static_cast<std::size_t>(std::min<double>(std::floor(w), counts.size() - 1));
  double below = 0;
  for (std::size_t k = 0; k <= top; ++k) below += counts[k];
  return below / std::ldexp(1.0, n);
}

int signed_rank_min_rounds(double alpha) {
  if (!(alpha > 0)) throw std::invalid_argument("signed_rank_min_rounds: alpha must be positive");
  int n = 1;
  while (std::ldexp(2.0, -n) > alpha) ++n;
  return n;
}

namespace {

// The Hodges-Lehmann standard error from the magnitudes: sqrt(pi/3) 1.4826 median|d| / sqrt(n).
double sign_free_se(const std::vector<double>& d) {
  const std::size_t n = d.size();
  std::vector<double> magnitude;
  for (double x : d) magnitude.push_back(std::fabs(x));
  std::sort(magnitude.begin(), magnitude.end());
  const double mid =
      n % 2 == 1 ? magnitude[n / 2] : 0.5 * (magnitude[n / 2 - 1] + magnitude[n / 2]);
  return std::sqrt(std::acos(-1.0) / 3) * 1.4826 * mid / std::sqrt(double(n));
}

}  // namespace

double signed_rank_mde_from_magnitudes(const std::vector<double>& d, double alpha, double power) {
  const int n = static_cast<int>(d.size());
  if (n < signed_rank_min_rounds(alpha)) return std::numeric_limits<double>::infinity();
  return std::exp(minimum_detectable_shift(sign_free_se(d), n - 1, alpha, power)) - 1;
}

double signed_rank_power_from_magnitudes(const std::vector<double>& d, double effect,
                                         double alpha) {
  const int n = static_cast<int>(d.size());
  if (n < signed_rank_min_rounds(alpha)) return alpha;
  return shift_power(std::log1p(effect), sign_free_se(d), n - 1, alpha);
}

SignedRankTest wilcoxon_signed_rank(const std::vector<double>& d) {
  SignedRankTest t;
  std::vector<double> nonzero;
  for (double x : d) {
    if (!std::isfinite(x))
      throw std::invalid_argument("wilcoxon_signed_rank: a value is not finite");
    if (x == 0)
      ++t.zeros;
    else
      nonzero.push_back(x);
  }
  t.n = static_cast<int>(nonzero.size());
  if (t.n == 0) return t;  // no evidence either way: p = 1
  const Ranks r = midranks(nonzero);
  for (std::size_t i = 0; i < r.value.size(); ++i)
    if (r.value[i] > 0) t.w_plus += r.rank[i];
  const double n = t.n;
  const double mean = n * (n + 1) / 4;
  double variance = n * (n + 1) * (2 * n + 1) / 24;
  for (int g : r.ties) variance -= (double(g) * g * g - g) / 48;  // Hollander & Wolfe (3.13)
  t.z = variance > 0 ? (t.w_plus - mean) / std::sqrt(variance) : 0.0;
  t.exact = r.ties.empty() && t.zeros == 0 && t.n <= kExactSignedRankLimit;
  if (t.exact) {
    // Two-sided: twice the smaller tail, the null distribution being symmetric about n(n+1)/4.
    const double lower = signed_rank_cdf(t.w_plus, t.n);
    const double upper = 1.0 - signed_rank_cdf(t.w_plus - 1, t.n);
    t.p_value = std::min(1.0, 2 * std::min(lower, upper));
  } else if (variance > 0) {
    const double shifted = t.w_plus - mean;
    const double corrected = shifted - std::copysign(std::min(0.5, std::fabs(shifted)), shifted);
    const double z = corrected / std::sqrt(variance);
    t.p_value = std::min(
        1.0, 2 * boost::math::cdf(boost::math::complement(boost::math::normal(), std::fabs(z))));
  }
  return t;
}

ShiftEstimate hodges_lehmann(const std::vector<double>& d, double confidence) {
  if (d.empty()) throw std::invalid_argument("hodges_lehmann: no differences");
  const std::size_t n = d.size();
  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i; j < n; ++j) walsh.push_back(0.5 * (d[i] + d[j]));
  std::sort(walsh.begin(), walsh.end());
  const std::size_t m = walsh.size();
  ShiftEstimate s;
  s.estimate = m % 2 == 1 ? walsh[m / 2] : 0.5 * (walsh[m / 2 - 1] + walsh[m / 2]);
  const double tail = (1 - confidence) / 2;
  // C: the interval is (W(C), W(M+1-C)), 1-based; C - 1 is the largest w with P(W+ <= w) <= tail.
  long c = 0;
  std::vector<double> sorted = d;
  std::sort(sorted.begin(), sorted.end());
  const bool ties = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  if (static_cast<int>(n) <= kExactSignedRankLimit) {
    const auto counts = signed_rank_counts(static_cast<int>(n));
    const double total = std::ldexp(1.0, static_cast<int>(n));
    double below = 0;
    while (c < static_cast<long>(counts.size()) && (below + counts[c]) / total <= tail)
      below += counts[c++];
    // c counted w = 0 .. C-1; c == 0: not even W+ = 0 is rare enough (no interval).
    s.confidence = 1 - 2 * below / total;
    s.exact = !ties;
  } else {
    // Hollander & Wolfe (3.25): C = n(n+1)/4 - z_{tail} sqrt(n(n+1)(2n+1)/24), to the integer
    // below.
    const double nn = double(n);
    c = static_cast<long>(
        std::floor(nn * (nn + 1) / 4 -
                   normal_upper_quantile(tail) * std::sqrt(nn * (nn + 1) * (2 * nn + 1) / 24)));
    s.confidence = confidence;
  }
  if (c < 1) {
    s.low = -std::numeric_limits<double>::infinity();
    s.high = std::numeric_limits<double>::infinity();
    s.confidence = 1;
  } else {
    s.low = walsh[static_cast<std::size_t>(c - 1)];
    s.high = walsh[m - static_cast<std::size_t>(c)];
  }
  return s;
}

}  // namespace k3stats
