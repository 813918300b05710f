// A robust location test and estimator for paired differences (the per-round log ratios of an A/B
// run): the Wilcoxon signed-rank test and the Hodges-Lehmann estimator with its distribution-free
// interval from the Walsh averages. Why: on a shared machine the per-round ratios have heavy tails
// (a rare round hit by another tenant), which inflate the spread a t-test divides by and cost it
// its power; ranks give a rare large ratio no more weight than a moderate one. The only assumption
// is that the differences are independent and symmetric about the shift, which holds under "no
// change" for two identical builds measured in the same rounds (a and b exchangeable).
//
// Sources:
//  - F. Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin 1 (1945) 80-83;
//  - J. L. Hodges and E. L. Lehmann, "Estimates of location based on rank tests", Ann. Math.
//    Statist. 34 (1963) 598-611;
//  - M. Hollander and D. A. Wolfe, Nonparametric Statistical Methods, 2nd ed. (1999), sections
//    3.1-3.3: the test (exact null distribution, large-sample approximation with the tie
//    correction of the variance), the estimator (median of the n(n+1)/2 Walsh averages) and the
//    interval (Walsh averages W(C) and W(M+1-C), C from the exact null distribution, eq. 3.21;
//    from the normal approximation for large n, eq. 3.25).
// Zeros are dropped from the test (Wilcoxon's rule, as in Hollander & Wolfe); the estimator and the
// interval use every difference.
#pragma once

#include <vector>

namespace k3stats {

// P(W+ <= w) under the null hypothesis for n untied nonzero differences: every one of the 2^n sign
// patterns is equally likely (counted exactly; n <= kExactSignedRankLimit).
inline constexpr int kExactSignedRankLimit = 50;
double signed_rank_cdf(double w, int n);

// The fewest nonzero differences with which the two-sided exact test can reject at `alpha`: the
// smallest p-value of n differences is 2 / 2^n (all of one sign), so 6 at alpha = 0.05.
int signed_rank_min_rounds(double alpha);

// The smallest relative effect the signed-rank test detects with `power` at `alpha` on these
// rounds, from the magnitudes |d| alone: scale 1.4826 median|d| (the MAD about 0, robust to a
// far-off round), the Hodges-Lehmann estimator's standard error sqrt(pi/3) scale / sqrt(n) (its
// asymptotic variance at the normal model; Hodges & Lehmann 1963), through the t power curve with
// n - 1 degrees of freedom. A stopping rule that looks only at |d| -- not at the signs -- leaves
// the signs of identical builds' rounds independent fair coins given the stopping point, so the
// exact null distribution of W+ still holds for the stopped sample (the sequential rule of bench
// --mde). Infinite below signed_rank_min_rounds(alpha).
double signed_rank_mde_from_magnitudes(const std::vector<double>& d, double alpha, double power);
// The same model's power against a relative effect (the sequential rule's cheap question: is the
// effect detectable with the requested power yet?). alpha below signed_rank_min_rounds(alpha).
double signed_rank_power_from_magnitudes(const std::vector<double>& d, double effect, double alpha);

struct SignedRankTest {
  int n = 0;           // nonzero differences ranked
  int zeros = 0;       // differences equal to zero (dropped)
  double w_plus = 0;   // sum of the (mid)ranks of |d| over the positive differences
  double p_value = 1;  // two-sided
  bool exact = false;  // from the exact null distribution (n <= 50, no ties, no zeros)
  double z = 0;        // (W+ - n(n+1)/4) / sd, tie-corrected, without continuity correction
};

// Two-sided test of "the differences are symmetric about 0". Exact when there are no ties or zeros
// and n <= kExactSignedRankLimit; otherwise the normal approximation with the tie-corrected
// variance and a continuity correction of 1/2 (the convention of R's wilcox.test).
SignedRankTest wilcoxon_signed_rank(const std::vector<double>& d);

struct ShiftEstimate {
  double estimate = 0;       // Hodges-Lehmann: the median of the Walsh averages (d_i + d_j) / 2
  double low = 0, high = 0;  // W(C) and W(M+1-C) of the sorted Walsh averages
  double confidence = 0;     // the interval's coverage: exact (1 - 2 P(W+ <= C-1)) or nominal
  bool exact = false;        // coverage from the exact null distribution (n <= 50, continuous data)
};

// The shift estimate and its interval at (at least, when exact) the requested confidence; the
// interval is infinite for n too small to reach it (e.g. n < 6 at 95%). Empty d: invalid_argument.
ShiftEstimate hodges_lehmann(const std::vector<double>& d, double confidence = 0.95);

}  // namespace k3stats
