// When to stop adding processes to a cell: the adaptive protocol keeps measuring interleaved
// rounds until the 95% Student-t interval of the mean of process means is narrower than a target
// fraction of the mean, between a minimum and a maximum number of processes.
//
// This is a fully sequential fixed-width interval rule of the Chow-Robbins type (Y. S. Chow and
// H. Robbins, "On the asymptotic theory of fixed-width sequential confidence intervals for the
// mean", Ann. Math. Statist. 36 (1965) 457-462): stop at the first n >= n0 with
// t_{1-alpha/2, n-1} * s_n / sqrt(n) <= d * mean_n. A minimum of n0 processes stands in for their
// 1/n variance term (which guards against stopping on a spuriously small s_n; in relative units it
// would dominate the variance). Because the rule looks only at the spread, not at the difference
// between configurations, stopping does not bias an A/B test of the means toward significance
// for normal data (x-bar and s^2 are independent); the synthetic-noise tests check the nominal
// false-positive rate holds.
#pragma once

#include <vector>

namespace k3stats {

// Relative half-width of the Student-t interval of the mean of x (infinite for fewer than 2).
double relative_half_width(const std::vector<double>& x, double confidence = 0.95);

// The stopping rule above.
bool wide_enough_sample(const std::vector<double>& process_means, double target_rel, int min_n,
                        double confidence = 0.95);

// Planning: the smallest n >= min_n (at most max_n) with t_{1-alpha/2, n-1} * cv / sqrt(n) <= target,
// for a between-process coefficient of variation cv. This is the textbook sample-size iteration
// for a mean to within a margin E when sigma is estimated (E = target * mean, s = cv * mean).
int processes_for_half_width(double cv, double target_rel, int min_n, int max_n,
                             double confidence = 0.95);

}  // namespace k3stats
