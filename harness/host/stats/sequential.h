// How many processes a cell (or an A/B pair of cells) needs: Stein's two-stage procedure.
//
// C. Stein, "A two-sample test for a linear hypothesis whose power is independent of the
// variance", Ann. Math. Statist. 16 (1945) 243-258; as presented in N. Mukhopadhyay, Probability
// and Statistical Inference (2000), section 13.2, eq. (13.2.4)-(13.2.5):
//   stage 1: m observations, sample standard deviation s_m;
//   N = max{ m, <t_{m-1, alpha/2}^2 s_m^2 / d^2> + 1 }   (<u>: the largest integer below u);
//   stage 2: N - m more observations; the interval  mean_N +- d  covers the mean with probability
//   at least 1 - alpha, whatever the variance, because sqrt(N) (mean_N - mu) / s_m is exactly
//   Student t with m - 1 degrees of freedom (N depends on the first stage only).
// The same statistic is the test the A/B verdicts use (compare_paired_rounds with a first stage):
// its false-positive rate is exactly alpha. A fully sequential rule that looks at the interval
// after every round is not: it tends to stop when the spread happens to be small, and the test
// then rejects too often (measured on the synthetic runner: 6-7% instead of 5%).
#pragma once

#include <vector>

namespace k3stats {

// <u> + 1 with <u> the largest integer strictly below u (u > 0): the book's rounding.
int stein_round_up(double u);

// Total observations N for a half-width d at confidence 1 - alpha, from the first-stage standard
// deviation s_m of m >= 2 observations; capped at max_n (>= m).
int stein_total(double s_m, int m, double d, double confidence, int max_n);

// Relative half-width of the Student-t interval of the mean of x (infinite for fewer than 2).
double relative_half_width(const std::vector<double>& x, double confidence = 0.95);

// Planning: the smallest n >= min_n (at most max_n) with t_{1-alpha/2, n-1} * cv / sqrt(n) <=
// target, for a between-process coefficient of variation cv. This is the textbook sample-size
// iteration for a mean to within a margin E when sigma is estimated (E = target * mean, s = cv *
// mean).
int processes_for_half_width(double cv, double target_rel, int min_n, int max_n,
                             double confidence = 0.95);

}  // namespace k3stats
