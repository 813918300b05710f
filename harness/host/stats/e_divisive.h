// E-divisive means (Matteson & James 2014), as Apache Otava runs it
// (otava/change_point_divisive/detector.py, significance_test.py and analysis.py): hierarchical
// bisection of a series of observations (energy_distance.h), each new split kept while it is
// significant.
//
// The loop: the current change points cut the series into intervals; the best split of every
// interval (best_split) is found and the one with the largest Q-hat is the candidate; if its
// significance test passes (p <= max_p_value) it becomes a change point and the loop goes on,
// otherwise the search stops (Otava's stop_at = 0).
//
// Significance, two tests:
//  - kPermutation (the paper's, and Otava's PermutationsSignificanceTester): the observations of
//    every interval are shuffled within that interval, the largest Q-hat over all intervals is
//    computed again, R times; p = (1 + #{permuted >= observed}) / (R + 1). Otava divides the count
//    alone by R + 1, which reports p = 0 when no permutation reaches the observation; the "+1"
//    (the observed order is itself one of the permutations: Phipson and Smyth, "Permutation
//    p-values should never be zero", Stat. Appl. Genet. Mol. Biol. 9 (2010)) keeps p a valid
//    p-value, so with R permutations no p below 1/(R+1) exists and a threshold below it needs more
//    permutations. Whole observations (nights) are shuffled, never the figures inside them: the
//    test is exact under "the nights of an interval are exchangeable", whatever correlates
//    processes of a night. It sees any change of distribution.
//  - kOtavaStudentT (Otava's TTestSignificanceTester, from Fleming et al., "Hunter: Using Change
//    Point Detection to Hunt for Performance Regressions", ICPE 2023): Student's two-sample t-test
//    with pooled variance between the candidate's two sides -- the whole interval before and after
//    the split, not the kappa-truncated Y -- on the observations' means (one figure each: the
//    values). Otava hands scipy's ttest_ind_from_stats numpy's default standard deviation, whose
//    denominator is n, not n - 1; that convention is kept here (VarianceDenominator::kCount), since
//    Otava's published series reproduce only with it
//    (tests/harness/change_point_published_test.cpp). It makes the test slightly liberal on short
//    sides. Fast and deterministic, but it sees only the mean: a change of spread or shape that
//    E-divisive finds is then judged by a test blind to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3stats {

enum class SplitSignificance { kPermutation, kOtavaStudentT };

struct EDivisiveOptions {
  double exponent = 1.0;  // the paper's alpha, in (0, 2); 1 in its examples and Otava's default
  SplitSignificance test = SplitSignificance::kPermutation;
  double max_p_value = 0.05;
  int permutations = 199;       // kPermutation: R
  std::uint64_t seed = 1;       // kPermutation: the shuffles (same seed, same p-values everywhere)
  std::size_t min_segment = 1;  // observations on each side of a split (Otava: 1)
};

struct EDivisiveChange {
  std::size_t index = 0;  // the first observation after the change
  double q_hat = 0;       // of the split when it was found
  double p_value = 1;     // of its test when it was found
  // The interval it split: [begin, index) against [index, end) (the t-test's sides).
  std::size_t begin = 0, end = 0;
};

// Change points of observations[0..n), in index order. invalid_argument for an empty observation,
// a figure that is not finite, an exponent outside (0, 2), max_p_value outside (0, 1] or fewer than
// one permutation.
std::vector<EDivisiveChange> e_divisive(const std::vector<std::vector<double>>& observations,
                                        const EDivisiveOptions& options = {});
// One figure per observation.
std::vector<EDivisiveChange> e_divisive(const std::vector<double>& series,
                                        const EDivisiveOptions& options = {});

struct StudentT {
  double t = 0, df = 0;
  double p_value = 1;  // two-sided; 1 when df < 1 (Otava: at least three values)
};
// How each side's variance is estimated before pooling: kMinusOne, the unbiased sample variance
// (the textbook test); kCount, the mean squared deviation (what Otava passes on).
enum class VarianceDenominator { kMinusOne, kCount };
// Student's pooled-variance two-sample t-test (mean of b minus mean of a), df = n_a + n_b - 2.
// Both sides constant: p = 0 if their values differ, 1 if they are equal.
StudentT student_t_test(const std::vector<double>& a, const std::vector<double>& b,
                        VarianceDenominator denominator = VarianceDenominator::kMinusOne);

}  // namespace k3stats
