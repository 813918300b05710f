// Statistics against textbook values: Student t quantiles, a t interval on known data, Welch's
// test against a hand-worked example, Tukey fences, and the cell summary's bookkeeping.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/host/stats/stats.h"

namespace {

TEST(HarnessStats, StudentTQuantilesMatchTables) {
  // Two-sided 95%: t(0.975, df) from any statistics table.
  EXPECT_NEAR(k3stats::t_critical(0.95, 1), 12.7062, 1e-4);
  EXPECT_NEAR(k3stats::t_critical(0.95, 2), 4.3027, 1e-4);
  EXPECT_NEAR(k3stats::t_critical(0.95, 4), 2.7764, 1e-4);
  EXPECT_NEAR(k3stats::t_critical(0.95, 10), 2.2281, 1e-4);
  EXPECT_NEAR(k3stats::t_critical(0.95, 30), 2.0423, 1e-4);
  EXPECT_NEAR(k3stats::t_critical(0.99, 5), 4.0321, 1e-4);
}

TEST(HarnessStats, TIntervalOnKnownData) {
  // x = 10, 12, 14: mean 12, s = 2, se = 2/sqrt(3), half width = 4.3027 * 1.1547 = 4.9683.
  const auto ci = k3stats::t_interval({10, 12, 14});
  EXPECT_DOUBLE_EQ(ci.mean, 12.0);
  EXPECT_NEAR(ci.half_width, 4.9683, 1e-4);
  EXPECT_NEAR(ci.low, 7.0317, 1e-4);
  EXPECT_NEAR(ci.high, 16.9683, 1e-4);
  EXPECT_DOUBLE_EQ(ci.df, 2.0);
  EXPECT_TRUE(std::isinf(k3stats::t_interval({5}).half_width));
}

TEST(HarnessStats, QuantilesMedianAndStddev) {
  EXPECT_DOUBLE_EQ(k3stats::median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(k3stats::median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(k3stats::quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_NEAR(k3stats::sample_stddev({2, 4, 4, 4, 5, 5, 7, 9}), 2.13809, 1e-5);
}

TEST(HarnessStats, WelchTestMatchesWorkedExample) {
  // a = 1..5 (mean 3, var 2.5), b = 3..7 (mean 5, var 2.5): t = 2 / sqrt(1) = 2, df = 8,
  // two-sided p = 0.0805 (R: t.test(3:7, 1:5)).
  const auto c = k3stats::compare_processes({1, 2, 3, 4, 5}, {3, 4, 5, 6, 7});
  EXPECT_NEAR(c.t, 2.0, 1e-12);
  EXPECT_NEAR(c.df, 8.0, 1e-12);
  EXPECT_NEAR(c.p_value, 0.08051, 1e-4);
  EXPECT_FALSE(c.significant);
  EXPECT_EQ(c.verdict, k3stats::Comparison::Verdict::kNoDifference);
  // Unequal variances: a = {10, 11, 12} (var 1), b = {14, 18, 22} (var 16): se = sqrt(1/3 + 16/3),
  // df = (17/3)^2 / ((1/3)^2/2 + (16/3)^2/2) = 2.2491.
  const auto w = k3stats::compare_processes({10, 11, 12}, {14, 18, 22});
  EXPECT_NEAR(w.df, 2.2491, 1e-4);
  EXPECT_NEAR(w.t, 7.0 / std::sqrt(17.0 / 3.0), 1e-12);
}

TEST(HarnessStats, VerdictNeedsSignificanceAndMinimumEffect) {
  // 1% slower with almost no noise: significant but below the 2% minimum effect.
  const auto small = k3stats::compare_processes({100, 100.01, 99.99}, {101, 101.01, 100.99});
  EXPECT_TRUE(small.significant);
  EXPECT_FALSE(small.meaningful);
  EXPECT_EQ(small.verdict, k3stats::Comparison::Verdict::kNoDifference);
  const auto big = k3stats::compare_processes({100, 100.5, 99.5}, {110, 110.5, 109.5});
  EXPECT_EQ(big.verdict, k3stats::Comparison::Verdict::kBSlower);
  const auto faster = k3stats::compare_processes({110, 110.5, 109.5}, {100, 100.5, 99.5});
  EXPECT_EQ(faster.verdict, k3stats::Comparison::Verdict::kBFaster);
  EXPECT_THROW(k3stats::compare_processes({1}, {1, 2}), std::invalid_argument);
}

TEST(HarnessStats, TukeyFlagsWithoutDropping) {
  const std::vector<double> reps = {10, 10.1, 9.9, 10.05, 30};
  const auto out = k3stats::tukey_outliers(reps);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], 4u);
  // The cell summary flags it and still includes it: the mean of process 0 is (sum)/5.
  const auto s = k3stats::summarize_cell({reps, {10, 10, 10, 10, 10}, {11, 11, 11, 11, 11}});
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_TRUE(s.outlier_flags[0][4]);
  EXPECT_NEAR(s.process_means[0], 14.01, 1e-12);
  EXPECT_EQ(s.samples, 15u);
  EXPECT_NEAR(s.mean, (14.01 + 10 + 11) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 9.9);
  EXPECT_TRUE(s.wide_ci);  // three processes spread 10..14: CI far wider than 5%
}

// A time's interval is the Student interval of ln(process means) applied as a factor around the
// mean: with means {1, 1, 100} the Student interval on the means themselves reaches -108.4; the
// log one stays positive. Reference by hand: ln means {0, 0, ln 100}, sd = ln(100)/sqrt(3),
// t(0.975, df 2) = 4.302652729911275, half = t * sd / sqrt(3) = t * ln(100) / 3.
TEST(HarnessStats, ATimesIntervalIsInLogSpaceAndNeverNegative) {
  const auto s = k3stats::summarize_cell({{1}, {1}, {100}});
  const double half = 4.302652729911275 * std::log(100.0) / 3;
  EXPECT_NEAR(s.mean, 34, 1e-12);
  EXPECT_NEAR(s.ci.low, 34 * std::exp(-half), 1e-9);
  EXPECT_NEAR(s.ci.high, 34 * std::exp(half), 1e-9 * s.ci.high);
  EXPECT_GT(s.ci.low, 0);
  EXPECT_FALSE(s.ci.too_few);
  EXPECT_LT(k3stats::t_interval({1, 1, 100}).low, -100);  // what the mean's Student interval gives
}

// Two processes are too few for a time's interval: it is infinite and says so (outputs print
// words, the store no interval), where Student's would print a finite, possibly negative one.
TEST(HarnessStats, TwoProcessesAreTooFewForAnInterval) {
  const auto s = k3stats::summarize_cell({{794.9, 795}, {100, 101}});
  EXPECT_TRUE(s.ci.too_few);
  EXPECT_FALSE(std::isfinite(s.ci.half_width));
  EXPECT_TRUE(s.wide_ci);
  EXPECT_TRUE(k3stats::log_interval({5, 6}, 0.95, 2).too_few == false);
  EXPECT_TRUE(k3stats::log_interval({5}, 0.95, 1).too_few);  // one value: never an interval
}

TEST(HarnessStats, TightCellHasNoWideCiWarning) {
  const auto s =
      k3stats::summarize_cell({{100, 101, 99}, {100, 100, 100}, {101, 100, 99}}, {0.95, 0.05});
  EXPECT_FALSE(s.wide_ci);
  EXPECT_LT(s.ci.rel_half_width, 0.05);
  EXPECT_THROW(k3stats::summarize_cell({}), std::invalid_argument);
}

}  // namespace

// Paired test = one-sample t on ln(b/a). With log ratios {0.1, 0.2, 0.3}: mean 0.2, sd 0.1,
// t = 0.2 / (0.1 / sqrt 3) = 3.4641, df 2. For df = 2 the t CDF has the closed form
// F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so p = 2 (1 - F) = 1 - 3.4641 / sqrt(14) = 0.074180.
TEST(HarnessStats, PairedRoundsTestMatchesClosedForm) {
  const std::vector<double> a = {100.0, 200.0, 50.0};
  const std::vector<double> b = {100.0 * std::exp(0.1), 200.0 * std::exp(0.2), 50.0 * std::exp(0.3)};
  const auto c = k3stats::compare_paired_rounds(a, b, {0.05, 0.02});
  EXPECT_NEAR(c.t, 3.4641016, 1e-6);
  EXPECT_DOUBLE_EQ(c.df, 2.0);
  EXPECT_NEAR(c.p_value, 1.0 - 3.4641016 / std::sqrt(14.0), 1e-6);
  EXPECT_NEAR(c.rel_diff, std::exp(0.2) - 1.0, 1e-12);
  EXPECT_FALSE(c.significant);  // p = 0.074 > 0.05
  // Drift that scales both sides of every round alike cancels exactly; Welch sees the spread.
  const std::vector<double> drift_a = {100, 150, 90, 130};
  std::vector<double> drift_b;
  for (double x : drift_a) drift_b.push_back(x * 1.05);
  const auto paired = k3stats::compare_paired_rounds(drift_a, drift_b, {0.05, 0.02});
  EXPECT_EQ(paired.verdict, k3stats::Comparison::Verdict::kBSlower);
  EXPECT_EQ(k3stats::compare_processes(drift_a, drift_b, {0.05, 0.02}).verdict,
            k3stats::Comparison::Verdict::kNoDifference);
  EXPECT_THROW(k3stats::compare_paired_rounds({1.0, 2.0}, {1.0}), std::invalid_argument);
}
