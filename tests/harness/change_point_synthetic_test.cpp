// The distribution-aware change points (harness/host/stats/distribution_changes.h) on synthetic
// nightly series with a planted change: a level step, a spread doubling, a unimodal series turning
// bimodal with the same mean and spread, and none at all. Each night is a set of per-process
// figures (ns per call: 100 ns, a process spread of 2 ns, a night-to-night offset of 0.5 ns that
// every process of the night shares). Fixed seeds, so every figure here is reproducible; counts
// over seeds are of a deterministic computation, not rates of a machine. Today's mean rule
// (reports/change_points.h) runs on the same series' night means for comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/host/stats/distribution_changes.h"
#include "reports/change_points.h"

namespace {

using Nights = std::vector<std::vector<double>>;
using k3stats::ChangeKind;
using k3stats::DistributionChangePoint;

// Standard normal draws from std::mt19937_64 (its output is fixed by the standard) by Box-Muller,
// so the series are the same with every standard library.
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : engine_(seed) {}
  double operator()() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  double uniform() { return (double(engine_() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  std::mt19937_64 engine_;
};

using Figure = std::function<double(Normal&)>;  // one process's figure, before the night offset

Nights nightly_series(std::uint64_t seed, int nights_before, int nights_after, int processes,
                      const Figure& before, const Figure& after) {
  Normal z(seed);
  Nights out;
  for (int n = 0; n < nights_before + nights_after; ++n) {
    const double night = 0.5 * z();
    std::vector<double> figures;
    for (int p = 0; p < processes; ++p)
      figures.push_back(night + (n < nights_before ? before(z) : after(z)));
    out.push_back(std::move(figures));
  }
  return out;
}

const Figure kUnimodal = [](Normal& z) { return 100 + 2 * z(); };

std::vector<double> night_means(const Nights& nights) {
  std::vector<double> means;
  for (const auto& n : nights) {
    double sum = 0;
    for (double x : n) sum += x;
    means.push_back(sum / double(n.size()));
  }
  return means;
}

// The change point within a night of `planted` (the first), if any.
const DistributionChangePoint* change_near(const std::vector<DistributionChangePoint>& cps,
                                           std::size_t planted) {
  for (const auto& c : cps)
    if (std::abs(long(c.index) - long(planted)) <= 1) return &c;
  return nullptr;
}

constexpr int kSeeds = 20;

TEST(HarnessChangePoint, LevelStepIsALevelChange) {
  // 15 + 15 nights of 10 processes, the mean 3% higher from night 15 on.
  const Figure slower = [](Normal& z) { return 103 + 2 * z(); };
  int right = 0;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const auto nights = nightly_series(seed, 15, 15, 10, kUnimodal, slower);
    const auto cps = k3stats::find_distribution_changes(nights);
    for (const auto& c : cps) {
      if (std::abs(long(c.index) - 15) > 1) continue;
      EXPECT_EQ(c.what.kind, ChangeKind::kLevel) << "seed " << seed << ": " << describe(c);
      EXPECT_NEAR(c.what.level.size, 1.03, 0.01) << "seed " << seed;
      EXPECT_FALSE(c.what.spread.passes) << "seed " << seed << ": " << describe(c);
    }
    const auto* c = change_near(cps, 15);
    if (c && c->what.kind == ChangeKind::kLevel) ++right;
    // The mean rule sees this one too.
    EXPECT_FALSE(k3reports::find_change_points(night_means(nights), 0.05, 0.02).empty());
  }
  // 20 of 20 with these seeds (two a night early: their night 14 sits high by chance).
  EXPECT_GE(right, kSeeds - 1) << "series with a change within a night of 15, called level";
}

TEST(HarnessChangePoint, SpreadDoublingIsSeenWhereTheMeanRuleIsBlind) {
  // The processes' spread doubles from night 15 on (2 ns -> 4 ns); the mean stays at 100 ns.
  const Figure noisier = [](Normal& z) { return 100 + 4 * z(); };
  int right = 0;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const auto nights = nightly_series(seed, 15, 15, 10, kUnimodal, noisier);
    const auto cps = k3stats::find_distribution_changes(nights);
    const auto mean_rule = k3reports::find_change_points(night_means(nights), 0.05, 0.02);
    if (seed == 1) {
      std::cout << "spread doubling at night 15, seed 1 (30 nights x 10 processes):\n";
      for (const auto& c : cps) std::cout << "  distribution-aware: " << describe(c) << "\n";
      std::cout << "  mean rule (reports/change_points): " << mean_rule.size()
                << " change points\n";
    }
    EXPECT_TRUE(mean_rule.empty()) << "seed " << seed;
    for (const auto& c : cps) {
      if (std::abs(long(c.index) - 15) > 1) continue;
      // Never a level change: the centres agree and the level test keeps its rate.
      EXPECT_NE(c.what.kind, ChangeKind::kLevel) << "seed " << seed << ": " << describe(c);
      EXPECT_NEAR(c.what.level.size, 1.0, 0.01) << "seed " << seed;
      EXPECT_GT(c.what.spread.size, 1.5) << "seed " << seed;
      EXPECT_LT(c.what.spread.size, 2.7) << "seed " << seed;
    }
    const auto* c = change_near(cps, 15);
    if (c && c->what.kind == ChangeKind::kSpread) ++right;
  }
  // 19 of 20 with these seeds.
  EXPECT_GE(right, kSeeds - 2) << "series with a change within a night of 15, called spread";
}

TEST(HarnessChangePoint, BimodalSplitIsAShapeChange) {
  // From night 15 on every process lands in one of two placements, 2 ns either side of the old
  // mean, each 0.3 ns wide: the same mean, the same standard deviation (2.02 ns), two modes.
  // 20 processes a night: with fewer, a night's share of each mode varies too much to tell.
  const Figure bimodal = [](Normal& z) {
    const double side = z() > 0 ? 1 : -1;
    return 100 + 2 * side + 0.3 * z();
  };
  int right = 0;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const auto nights = nightly_series(seed, 15, 15, 20, kUnimodal, bimodal);
    const auto cps = k3stats::find_distribution_changes(nights);
    EXPECT_TRUE(k3reports::find_change_points(night_means(nights), 0.05, 0.02).empty())
        << "seed " << seed;
    for (const auto& c : cps) {
      if (std::abs(long(c.index) - 15) > 1) continue;
      EXPECT_EQ(c.what.kind, ChangeKind::kShape) << "seed " << seed << ": " << describe(c);
      EXPECT_NEAR(c.what.level.size, 1.0, 0.01) << "seed " << seed;
    }
    const auto* c = change_near(cps, 15);
    if (c && c->what.kind == ChangeKind::kShape) ++right;
  }
  // 17 of 20 with these seeds (two found two nights late, one not found).
  EXPECT_GE(right, kSeeds - 5) << "series with a change within a night of 15, called shape";
}

TEST(HarnessChangePoint, StationarySeriesRarelyChange) {
  // 30 nights of 10 processes, nothing planted, at two night-to-night offsets: 0.5 ns and 2 ns
  // (as large as the process spread). Nights, not processes, are what the tests exchange, so a
  // night offset shared by its processes does not read as a change. At max_p_value 0.05 about 1
  // series in 20 may show one.
  for (double night_sd : {0.5, 2.0}) {
    int with_change = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      Normal z(seed);
      Nights nights;
      for (int n = 0; n < 30; ++n) {
        const double night = night_sd * z();
        std::vector<double> figures;
        for (int p = 0; p < 10; ++p) figures.push_back(100 + night + 2 * z());
        nights.push_back(std::move(figures));
      }
      if (!k3stats::find_distribution_changes(nights).empty()) ++with_change;
    }
    EXPECT_LE(with_change, 3) << "night offset sd " << night_sd << " ns";
  }
}

TEST(HarnessChangePoint, DeterministicFiguresStepIsALevelChange) {
  // Figures without noise (a deterministic proxy objective, instruction counts): a step is a level
  // change with an exact p-value of its level test, and no step is no change at all.
  Nights nights(12, std::vector<double>(3, 1000.0));
  EXPECT_TRUE(k3stats::find_distribution_changes(nights).empty());
  for (std::size_t n = 6; n < nights.size(); ++n) nights[n].assign(3, 1100.0);
  const auto cps = k3stats::find_distribution_changes(nights);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 6u);
  EXPECT_EQ(cps[0].what.kind, ChangeKind::kLevel);
  EXPECT_DOUBLE_EQ(cps[0].what.level.size, 1.1);
  EXPECT_EQ(cps[0].what.level.p_value, 0.0);
  EXPECT_DOUBLE_EQ(cps[0].what.spread.size, 1.0);
}

TEST(HarnessChangePoint, BadInputNamesTheNight) {
  auto message = [](const Nights& nights, const k3stats::DistributionChangeOptions& opt = {}) {
    try {
      k3stats::find_distribution_changes(nights, opt);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Nights nights(6, std::vector<double>{1.0, 2.0});
  nights[3].clear();
  EXPECT_EQ(message(nights), "distribution change points: night 3 has no figures");
  nights[3] = {1.0, NAN};
  EXPECT_EQ(message(nights), "distribution change points: night 3, figure 1 is not finite");
  nights[3] = {1.0, 2.0};
  k3stats::DistributionChangeOptions opt;
  opt.exponent = 2;
  EXPECT_EQ(message(nights, opt), "energy distance: the exponent must be in (0, 2), got 2.000000");
  opt = {};
  opt.min_segment = 1;
  EXPECT_EQ(message(nights, opt), "distribution change points: min_segment must be at least 2");
  EXPECT_EQ(message(nights), "accepted");
  EXPECT_TRUE(k3stats::find_distribution_changes({}).empty());
}

}  // namespace
