// The Wilcoxon signed-rank test and the Hodges-Lehmann estimator against published worked examples
// and tables, and the robust paired verdict against the mean's on a round that is far off.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/host/stats/signed_rank.h"
#include "harness/host/stats/stats.h"

namespace {

// Hollander & Wolfe, Nonparametric Statistical Methods, 2nd ed. (1999), Table 3.1 (p. 39): the
// Hamilton depression scale factor IV of nine patients before (X) and after (Y) a tranquilizer.
// Z = Y - X.
const std::vector<double> kDepressionZ = {-0.952, 0.147,  -1.022, -0.430, -0.620,
                                          -0.590, -0.490, 0.080,  -0.010};

TEST(HarnessSignedRank, NullDistributionMatchesPublishedCriticalValues) {
  // The classic two-sided 5% table of the signed-rank statistic (e.g. Hollander & Wolfe Table A.4):
  // the critical lower value is 5 for n = 9, 8 for n = 10, 52 for n = 20, each the largest w with
  // P(W+ <= w) <= 0.025.
  EXPECT_DOUBLE_EQ(k3stats::signed_rank_cdf(5, 9), 10.0 / 512);
  EXPECT_GT(k3stats::signed_rank_cdf(6, 9), 0.025);
  EXPECT_DOUBLE_EQ(k3stats::signed_rank_cdf(8, 10), 25.0 / 1024);
  EXPECT_GT(k3stats::signed_rank_cdf(9, 10), 0.025);
  EXPECT_NEAR(k3stats::signed_rank_cdf(52, 20), 0.02422, 1e-5);
  EXPECT_GT(k3stats::signed_rank_cdf(53, 20), 0.025);
  // Symmetric about n(n+1)/4 and complete.
  EXPECT_DOUBLE_EQ(k3stats::signed_rank_cdf(45, 9), 1.0);
  EXPECT_DOUBLE_EQ(k3stats::signed_rank_cdf(22, 9), 0.5);
  EXPECT_DOUBLE_EQ(k3stats::signed_rank_cdf(-1, 9), 0.0);
}

TEST(HarnessSignedRank, HollanderWolfeExample31ExactTest) {
  // Example 3.1: T+ = 5 (the ranks of the two positive Z, 3 and 2), exact P0(T+ <= 5) = .020;
  // two-sided 2 x 10/512 = .039. (R: wilcox.test(x, y, paired = TRUE) gives V = 40 for X - Y and
  // p-value = 0.03906.)
  const auto t = k3stats::wilcoxon_signed_rank(kDepressionZ);
  EXPECT_EQ(t.n, 9);
  EXPECT_EQ(t.zeros, 0);
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.w_plus, 5);
  EXPECT_DOUBLE_EQ(t.p_value, 20.0 / 512);
  std::vector<double> x_minus_y;
  for (double z : kDepressionZ) x_minus_y.push_back(-z);
  const auto u = k3stats::wilcoxon_signed_rank(x_minus_y);
  EXPECT_DOUBLE_EQ(u.w_plus, 40);
  EXPECT_DOUBLE_EQ(u.p_value, t.p_value);
}

TEST(HarnessSignedRank, HollanderWolfeExamples32And33EstimateAndInterval) {
  // Example 3.2: the Hodges-Lehmann estimate of the treatment effect is the median of the 45 Walsh
  // averages, -.46. Example 3.3: the 96.1% interval (alpha = .039, C = 6) is (W(6), W(40)) =
  // (-.786, -.010).
  const auto s = k3stats::hodges_lehmann(kDepressionZ, 0.95);
  EXPECT_NEAR(s.estimate, -0.46, 1e-12);
  EXPECT_NEAR(s.low, -0.786, 1e-12);
  EXPECT_NEAR(s.high, -0.010, 1e-12);
  EXPECT_TRUE(s.exact);
  EXPECT_NEAR(s.confidence, 1 - 20.0 / 512, 1e-12);  // 0.961
  // Too few differences to reach 95%: 2^-5 = 0.031 > 0.025, the interval is unbounded.
  const auto tiny = k3stats::hodges_lehmann({0.1, 0.2, 0.3, 0.4, 0.5}, 0.95);
  EXPECT_TRUE(std::isinf(tiny.low) && std::isinf(tiny.high));
  EXPECT_NEAR(tiny.estimate, 0.3, 1e-12);
}

TEST(HarnessSignedRank, NormalApproximationWithTiesMatchesR) {
  // 19 paired differences with one tie (3.93 twice), from the R output posted at
  // stats.stackexchange.com/q/613310: wilcox.test(x, y, paired = TRUE, correct = TRUE) gives
  // "Wilcoxon signed rank test with continuity correction, V = 181, p-value = 0.0005795".
  const std::vector<double> d = {3.93, 3.44, 21.79, 2.30,  -0.40, 1.20, 2.88, 4.77, 6.78, 4.72,
                                 1.95, 0.92, 3.59,  -3.21, 3.71,  3.68, 5.43, 2.41, 3.93};
  const auto t = k3stats::wilcoxon_signed_rank(d);
  EXPECT_FALSE(t.exact);
  EXPECT_EQ(t.n, 19);
  EXPECT_DOUBLE_EQ(t.w_plus, 181);
  EXPECT_NEAR(t.p_value, 0.0005795, 5e-8);
}

TEST(HarnessSignedRank, ZerosAreDroppedFromTheTestNotTheEstimate) {
  std::vector<double> d = kDepressionZ;
  d.push_back(0.0);
  const auto t = k3stats::wilcoxon_signed_rank(d);
  EXPECT_EQ(t.n, 9);
  EXPECT_EQ(t.zeros, 1);
  EXPECT_FALSE(t.exact);  // a zero: the normal approximation, as R does
  EXPECT_DOUBLE_EQ(t.w_plus, 5);
  // W+ = 5 of n = 9: z = (5 - 22.5 + 0.5) / sqrt(71.25) = -2.0140, two-sided p = 0.0440.
  EXPECT_NEAR(t.p_value, 0.04400, 5e-5);
  EXPECT_EQ(k3stats::wilcoxon_signed_rank({0.0, 0.0}).p_value, 1.0);
}

TEST(HarnessSignedRank, RobustPairedVerdictKeepsItsPowerWhenOneRoundIsFarOff) {
  // Twelve rounds, B about 6% slower in each, and one round where A was hit by another tenant (B
  // reads 60% faster there). The mean log ratio's spread is dominated by that round and the t-test
  // loses the slowdown; the signed-rank test counts it as one negative rank and still finds it.
  std::vector<double> a, b;
  const double jitter[] = {0.010,  -0.008, 0.004,  -0.012, 0.006,  0.0,
                           -0.004, 0.012,  -0.006, 0.008,  -0.010, 0.002};
  for (int r = 0; r < 12; ++r) {
    a.push_back(100.0);
    b.push_back(100.0 * std::exp(0.06 + jitter[r]));
  }
  a[7] = 250.0;
  k3stats::CompareOptions opt;
  opt.estimator = k3stats::PairedEstimator::kMeanT;
  const auto mean_t = k3stats::compare_paired_rounds(a, b, opt);
  opt.estimator = k3stats::PairedEstimator::kHodgesLehmann;
  const auto hl = k3stats::compare_paired_rounds(a, b, opt);
  EXPECT_EQ(mean_t.verdict, k3stats::Comparison::Verdict::kNoDifference) << mean_t.p_value;
  EXPECT_EQ(hl.verdict, k3stats::Comparison::Verdict::kBSlower) << hl.p_value;
  EXPECT_NEAR(hl.rel_diff, std::exp(0.06) - 1, 0.01);
  EXPECT_LT(hl.log_shift_low, 0.06);
  EXPECT_GT(hl.log_shift_high, 0.06);
  EXPECT_EQ(hl.estimator, "Hodges-Lehmann/Wilcoxon");
  EXPECT_EQ(mean_t.estimator, "mean/paired t");
  EXPECT_LT(hl.mde, mean_t.mde);
}

TEST(HarnessSignedRank, TooFewRoundsToRejectFallBackToTheTTest) {
  // All of 5 rounds slower: the exact p is 2/32 = 0.0625, never below 0.05; with 6 it is 0.03125.
  EXPECT_EQ(k3stats::signed_rank_min_rounds(0.05), 6);
  EXPECT_EQ(k3stats::signed_rank_min_rounds(0.01), 8);
  EXPECT_DOUBLE_EQ(k3stats::wilcoxon_signed_rank({0.1, 0.2, 0.3, 0.4, 0.5}).p_value, 0.0625);
  EXPECT_DOUBLE_EQ(k3stats::wilcoxon_signed_rank({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}).p_value, 0.03125);
  k3stats::CompareOptions opt;
  opt.estimator = k3stats::PairedEstimator::kHodgesLehmann;
  const auto five =
      k3stats::compare_paired_rounds({100, 100, 100, 100, 100}, {110, 111, 109, 110, 112}, opt);
  EXPECT_EQ(five.estimator, "mean/paired t");
  EXPECT_NE(five.method.find("too few for the signed-rank test"), std::string::npos);
  EXPECT_EQ(five.verdict, k3stats::Comparison::Verdict::kBSlower);
}

TEST(HarnessSignedRank, EstimatorNamesRoundTripAndUnknownNamesAreRefused) {
  EXPECT_EQ(k3stats::paired_estimator_from("hodges-lehmann"),
            k3stats::PairedEstimator::kHodgesLehmann);
  EXPECT_EQ(k3stats::paired_estimator_from("mean"), k3stats::PairedEstimator::kMeanT);
  EXPECT_STREQ(k3stats::to_string(k3stats::PairedEstimator::kHodgesLehmann), "hodges-lehmann");
  EXPECT_THROW(k3stats::paired_estimator_from("median"), std::invalid_argument);
}

}  // namespace
