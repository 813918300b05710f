// Gate fitting where the truth is known: thresholds recovered from synthetic measurements, the
// shapes a noisy measurement makes wrong reported, and the decode path rule's loss.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/common/params/param_spec.h"
#include "tuner/gates.h"

namespace {

TEST(TunerGates, FitRecoversAKnownThresholdAndReportsWrongShapes) {
  // TCM wins exactly when K >= 2048 and the weights are >= 4 MiB; one noisy shape disagrees.
  std::vector<k3tuner::GatePoint> points;
  for (std::int64_t k : {512, 1024, 2048, 4096})
    for (std::int64_t bytes : {1 << 20, 4 << 20, 16 << 20}) {
      k3tuner::GatePoint p;
      p.shape = {{"k", k}, {"b", bytes}};
      p.k = k;
      p.bytes = bytes;
      const bool wins = k >= 2048 && bytes >= (4 << 20);
      p.yes = wins ? 90 : 110;
      p.no = 100;
      points.push_back(p);
    }
  points[0].yes = 99;  // k=512, 1 MiB: TCM slightly better by noise
  const auto rule = k3tuner::fit_tcm_gate(points);
  EXPECT_EQ(rule.use, "threshold");
  EXPECT_EQ(rule.k_min, 2048);
  EXPECT_EQ(rule.b_min, 4 << 20);
  EXPECT_EQ(rule.wrong.size(), 1u);
  EXPECT_NEAR(rule.loss, 1.0 / (12 * 100 - 4 * 10 - 1), 1e-9);  // the one shape's 1 unit lost
  // Never better anywhere: "never", no loss.
  for (auto& p : points) p.yes = 120;
  const auto never = k3tuner::fit_tcm_gate(points);
  EXPECT_EQ(never.use, "never");
  EXPECT_EQ(never.loss, 0);
  // A prefill M threshold.
  std::vector<k3tuner::GatePoint> m;
  for (std::int64_t x : {1, 4, 16, 64, 256}) {
    k3tuner::GatePoint p;
    p.m = x;
    p.shape = {{"m", x}};
    p.yes = x >= 16 ? 50 : 150;
    p.no = 100;
    m.push_back(p);
  }
  EXPECT_EQ(k3tuner::fit_m_gate(m).m_min, 16);
}

// decode_path: ime2 iff K >= k_min and N*K >= w_min, fitted over a K x N grid where only one pair
// of measured values separates the sides (K 512 x N 8192 has the weights but not the K; K 4096 x
// N 512 has 2^21 weights, K 512 x N 2048 and K 2048 x N 512 have 2^20).
std::vector<k3tuner::GatePoint> decode_path_points(std::int64_t k_min, std::int64_t w_min) {
  std::vector<k3tuner::GatePoint> points;
  for (std::int64_t k : {512, 1024, 2048, 4096})
    for (std::int64_t n : {512, 2048, 8192}) {  // 8192: K 512 with many weights, rvv by K alone
      k3tuner::GatePoint p;
      p.shape = {{"k", k}, {"n", n}};
      p.k = k;
      p.n = n;
      p.weights = n * k;
      // Instructions of the rvv side: a per-call and a per-weight term; ime2 10% either way.
      p.no = 1000 + 0.032 * static_cast<double>(p.weights);
      p.yes = k >= k_min && p.weights >= w_min ? 0.9 * p.no : 1.1 * p.no;
      points.push_back(p);
    }
  return points;
}

TEST(TunerGates, DecodePathFitSeparatesExactlyWithNoLoss) {
  const auto points = decode_path_points(1024, 2048 * 1024);
  const auto rule = k3tuner::fit_decode_path_gate(points);
  EXPECT_EQ(rule.use, "threshold");
  EXPECT_EQ(rule.k_min, 1024);
  EXPECT_EQ(rule.w_min, 2048 * 1024);
  EXPECT_EQ(rule.loss, 0);
  EXPECT_TRUE(rule.wrong.empty());
  EXPECT_EQ(rule.shapes, 12);
  for (const auto& p : points) EXPECT_EQ(rule.takes("decode_path", p), p.yes < p.no) << p.shape;
  const auto j = rule.to_json("decode_path");
  EXPECT_EQ(j, (nlohmann::json{{"use", "threshold"},
                               {"k_min", 1024},
                               {"w_min", 2048 * 1024},
                               {"loss", 0.0},
                               {"wrong_shapes", 0},
                               {"shapes", 12}}));
  EXPECT_EQ(k3tuner::fit_gate("decode_path", points).w_min, rule.w_min);
  // IME2 everywhere or nowhere: always / never, no loss.
  auto everywhere = points;
  for (auto& p : everywhere) p.yes = 0.5 * p.no;
  EXPECT_EQ(k3tuner::fit_decode_path_gate(everywhere).use, "always");
  for (auto& p : everywhere) p.yes = 2 * p.no;
  const auto never = k3tuner::fit_decode_path_gate(everywhere);
  EXPECT_EQ(never.use, "never");
  EXPECT_EQ(never.to_json("decode_path").contains("k_min"), false);
}

TEST(TunerGates, DecodePathFitReportsTheShapesANoisyMeasurementMakesWrong) {
  auto points = decode_path_points(1024, 2048 * 1024);
  // IME2 wins one shape the true rule gives to rvv (K 512 x N 2048) by a hair: no threshold rule
  // takes it without taking shapes where IME2 loses by far, so the fit keeps the true rule and
  // reports that shape, at exactly the hair's loss.
  k3tuner::GatePoint* noisy = nullptr;
  for (auto& p : points)
    if (p.k == 512 && p.n == 2048) noisy = &p;
  ASSERT_NE(noisy, nullptr);
  const double lost = 0.001 * noisy->no;
  noisy->yes = noisy->no - lost;
  const auto rule = k3tuner::fit_decode_path_gate(points);
  EXPECT_EQ(rule.use, "threshold");
  EXPECT_EQ(rule.k_min, 1024);
  EXPECT_EQ(rule.w_min, 2048 * 1024);
  ASSERT_EQ(rule.wrong.size(), 1u);
  EXPECT_EQ(rule.wrong.front(), k3params::to_kv(noisy->shape));
  double best = 0;
  for (const auto& p : points) best += std::min(p.yes, p.no);
  EXPECT_NEAR(rule.loss, lost / best, 1e-12);
}

}  // namespace
