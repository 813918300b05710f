// Power of the A/B test and the smallest effect it can see. A verdict of "no difference" means
// little without it: with 3 noisy processes a 10% slowdown often goes unseen, and saying
// "unchanged within +-4.1%" (the minimum detectable effect at the data's own spread and process
// counts) tells the reader what the measurement could and could not have found.
//
// Exact power of the two-sided Welch t-test: under a true difference delta the statistic is
// non-central t with the Welch-Satterthwaite df and non-centrality delta / se, so
//   power = P(T' > t_crit) + P(T' < -t_crit),  T' ~ t'(df, delta / se),  t_crit = t_{1-alpha/2, df}
// (boost::math::non_central_t). The minimum detectable effect is the delta at which the power
// reaches the requested value (root found by TOMS 748 on the monotone power curve).
#pragma once

namespace k3stats {

// Power of the two-sided test at level alpha against a true absolute difference `delta`, for
// standard deviations sd_a, sd_b of the process means and n_a, n_b processes (each >= 2).
double welch_power(double delta, double sd_a, int n_a, double sd_b, int n_b, double alpha);

// The smallest absolute difference detected with probability `power` (e.g. 0.8). Infinite when
// either side has fewer than 2 processes; 0 when both spreads are 0.
double minimum_detectable_difference(double sd_a, int n_a, double sd_b, int n_b, double alpha,
                                     double power);

// The same for a one-sample (paired) t-test whose mean has standard error `se` with `df` degrees
// of freedom (n - 1 for n differences; m - 1 after Stein's two-stage procedure).
double minimum_detectable_shift(double se, double df, double alpha, double power);

// Power of the two-sided one-sample t-test (standard error `se`, `df` degrees of freedom) against
// a true shift `delta`: one evaluation of the non-central t, where the minimum detectable shift
// solves for a root (a sequential rule asks "is the target detectable yet?" after every round).
double shift_power(double delta, double se, double df, double alpha);

// Processes per side a pooled two-sample t-test needs to detect a standardised difference d
// (delta / sd) with the given power: the smallest n with power(n) >= power, df = 2n - 2.
int processes_per_side(double d, double alpha, double power);

}  // namespace k3stats
