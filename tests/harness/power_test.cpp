// Power, minimum detectable effect, exact binomial intervals and the sequential stopping rule,
// against published values: Cohen's sample-size table for the two-sample t-test, Clopper-Pearson
// intervals, and the textbook iteration for the sample size of a mean to within a margin.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/host/stats/binomial.h"
#include "harness/host/stats/power.h"
#include "harness/host/stats/sequential.h"
#include "harness/host/stats/stats.h"

namespace {

TEST(HarnessPower, SampleSizesMatchCohensTable) {
  // J. Cohen, Statistical Power Analysis for the Behavioral Sciences (2nd ed., 1988), Table 2.4.1:
  // two-sided alpha = .05, power .80 -> n per group 393 (d = .2), 64 (d = .5), 26 (d = .8).
  // The exact non-central t gives 394 for d = .2 (Cohen's table rounds an approximation).
  EXPECT_EQ(k3stats::processes_per_side(0.5, 0.05, 0.8), 64);
  EXPECT_EQ(k3stats::processes_per_side(0.8, 0.05, 0.8), 26);
  EXPECT_NEAR(k3stats::processes_per_side(0.2, 0.05, 0.8), 393, 1);
  // Power .90, d = .5: 86 per group with the exact non-central t.
  EXPECT_EQ(k3stats::processes_per_side(0.5, 0.05, 0.9), 86);
}

TEST(HarnessPower, MinimumDetectableDifferenceInvertsPower) {
  // 64 per side with unit spread: the effect found with power 0.8 is d = 0.5 (Cohen), to within
  // the rounding of n; and welch_power at that effect gives back 0.8.
  const double mdd = k3stats::minimum_detectable_difference(1.0, 64, 1.0, 64, 0.05, 0.8);
  EXPECT_NEAR(mdd, 0.5, 0.005);
  EXPECT_NEAR(k3stats::welch_power(mdd, 1.0, 64, 1.0, 64, 0.05), 0.8, 1e-6);
  // Fewer processes, larger MDE; no spread, none; one process, unknowable.
  EXPECT_GT(k3stats::minimum_detectable_difference(1.0, 3, 1.0, 3, 0.05, 0.8), 2.0);
  EXPECT_EQ(k3stats::minimum_detectable_difference(0.0, 5, 0.0, 5, 0.05, 0.8), 0.0);
  EXPECT_TRUE(std::isinf(k3stats::minimum_detectable_difference(1.0, 1, 1.0, 5, 0.05, 0.8)));
  // Power at no difference is alpha.
  EXPECT_NEAR(k3stats::welch_power(0.0, 1.0, 10, 1.0, 10, 0.05), 0.05, 1e-12);
}

TEST(HarnessPower, ComparisonReportsItsMinimumDetectableEffect) {
  // Process means with a 10% spread: 3 per side cannot see 5%; 40 per side can.
  const auto few = k3stats::compare_processes({100, 110, 90}, {100, 110, 90});
  EXPECT_GT(few.mde, 0.15);
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) {
    a.push_back(100 + (i % 2 ? 10 : -10));
    b.push_back(100 + (i % 2 ? -10 : 10));
  }
  const auto many = k3stats::compare_processes(a, b);
  EXPECT_LT(many.mde, 0.07);
  EXPECT_EQ(many.verdict, k3stats::Comparison::Verdict::kNoDifference);
}

TEST(HarnessBinomial, ClopperPearsonMatchesPublishedIntervals) {
  // 3 of 10: the exact 95% interval is 0.0667..0.6525 (e.g. R binom.test(3, 10)).
  const auto p = k3stats::clopper_pearson(3, 10);
  EXPECT_DOUBLE_EQ(p.rate, 0.3);
  EXPECT_NEAR(p.low, 0.06674, 1e-4);
  EXPECT_NEAR(p.high, 0.65245, 1e-4);
  // 0 of 40: lower 0, upper 1 - 0.025^(1/40) = 0.0881 ("0 of 40" is not "0%").
  const auto z = k3stats::clopper_pearson(0, 40);
  EXPECT_DOUBLE_EQ(z.low, 0.0);
  EXPECT_NEAR(z.high, 1 - std::pow(0.025, 1.0 / 40), 1e-9);
  // 40 of 40 mirrors it.
  const auto all = k3stats::clopper_pearson(40, 40);
  EXPECT_NEAR(all.low, std::pow(0.025, 1.0 / 40), 1e-9);
  EXPECT_THROW(k3stats::clopper_pearson(5, 4), std::invalid_argument);
}

TEST(HarnessSequential, SampleSizeIterationMatchesWorkedExample) {
  // Mean to within E = 5 at 99% with s = 17: iterate n = (t_{.995, n-1} * 17 / 5)^2 -> n = 81
  // (t(80) = 2.639: 2.639 * 17 / 9 = 4.98 <= 5; n = 80 gives 5.02).
  EXPECT_EQ(k3stats::processes_for_half_width(17.0, 5.0, 2, 10000, 0.99), 81);
  // The same rule in relative terms: CV 10%, target 2% at 95% needs 99 processes.
  EXPECT_EQ(k3stats::processes_for_half_width(0.10, 0.02, 2, 10000, 0.95), 99);
  EXPECT_EQ(k3stats::processes_for_half_width(0.10, 0.02, 2, 12, 0.95), 12);  // capped
}

TEST(HarnessSequential, SteinTotalFollowsTheBooksRounding) {
  // N = max{m, <t^2 s^2 / d^2> + 1}, <u> the largest integer strictly below u.
  EXPECT_EQ(k3stats::stein_round_up(27.02), 28);
  EXPECT_EQ(k3stats::stein_round_up(23.0), 23);  // an integer stays (the book: C = 23 -> 23)
  EXPECT_EQ(k3stats::stein_round_up(102.801), 103);
  // m = 5, s = 5, d = 1.789, 95%: t_{4,.025} = 2.776 -> 2.776^2 * 25 / 1.789^2 = 60.2 -> 61.
  EXPECT_EQ(k3stats::stein_total(5.0, 5, 1.789, 0.95, 1000), 61);
  EXPECT_EQ(k3stats::stein_total(5.0, 5, 1.789, 0.95, 40), 40);   // capped
  EXPECT_EQ(k3stats::stein_total(0.1, 5, 1.789, 0.95, 1000), 5);  // never below the first stage
}

// Mukhopadhyay, Probability and Statistical Inference (2000), Table 13.2.1: Stein's two-stage
// procedure on N(mu, 25) with alpha = .05, 5000 replications: for d = 1.789 (C = 30) the mean
// final sample size was 62.32 with m = 5 and 40.48 with m = 10, and the interval mean_N +- d
// covered mu in 98.82% and 95.77% of replications (both at least the 95% goal).
TEST(HarnessSequential, SteinTwoStageReproducesThePublishedSimulation) {
  for (const auto& [m, book_mean_n] : {std::pair{5, 62.32}, std::pair{10, 40.48}}) {
    std::mt19937_64 rng(1945);
    std::normal_distribution<double> x(10.0, 5.0);
    const int reps = 5000;
    double sum_n = 0;
    int covered = 0;
    for (int r = 0; r < reps; ++r) {
      std::vector<double> v;
      for (int i = 0; i < m; ++i) v.push_back(x(rng));
      const int n = k3stats::stein_total(k3stats::sample_stddev(v), m, 1.789, 0.95, 1000000);
      while (static_cast<int>(v.size()) < n) v.push_back(x(rng));
      sum_n += n;
      covered += std::fabs(k3stats::mean(v) - 10.0) <= 1.789;
    }
    // Within 4% of the book's mean N (its own simulation error is about 1%), coverage >= 95%
    // beyond simulation error.
    EXPECT_NEAR(sum_n / reps, book_mean_n, 0.04 * book_mean_n) << "m = " << m;
    EXPECT_GE(k3stats::clopper_pearson(covered, reps, 0.99).high, 0.95) << "m = " << m;
  }
}

}  // namespace
