// The trends' distribution-aware change points (reports/distribution_trend.h) on a real results
// database: 24 nights of one configuration, ten processes a night. From night 12 on, the processes'
// spread doubles while their mean stays exactly where it was: the mean rule sees nothing, the
// distribution's detector names a spread change at night 12. A level step of 10% is named level by
// both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>

#include <fmt/format.h>

#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/run_data.h"
#include "harness/store_fixture.h"
#include "reports/distribution_trend.h"
#include "reports/trends.h"

namespace {

// Ten figures of mean exactly `mean` and standard deviation about `sd`, drawn per night from a
// fixed generator (splitmix64 and Box-Muller: the same on every platform).
std::vector<double> night_figures(std::uint64_t night, double mean, double sd) {
  std::uint64_t state = 0x9e3779b97f4a7c15ULL * (night + 1);
  auto uniform = [&] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (static_cast<double>((z ^ (z >> 31)) >> 11) + 0.5) / 9007199254740992.0;
  };
  std::vector<double> x;
  for (int i = 0; i < 5; ++i) {
    const double r = std::sqrt(-2 * std::log(uniform())), t = 2 * M_PI * uniform();
    x.push_back(r * std::cos(t));
    x.push_back(r * std::sin(t));
  }
  double m = 0;
  for (double v : x) m += v / x.size();
  for (double& v : x) v = mean + sd * (v - m);  // the night's mean is exactly `mean`
  return x;
}

class TrendDistribution : public StoreFile {
 protected:
  // Night n's processes: one sample each, so a process's mean is its figure.
  void nights(int count, const std::function<std::vector<double>(int)>& figures) {
    build("h1");
    for (int n = 0; n < count; ++n) {
      const std::string run_id = fmt::format("r{:02}", n);
      run(run_id, "h1", {"c1"});
      const auto x = figures(n);
      double mean = 0;
      for (std::size_t p = 0; p < x.size(); ++p) {
        process(run_id, "c1", static_cast<int>(p), {x[p]});
        mean += x[p] / x.size();
      }
      aggregate(run_id, "c1", mean, true, static_cast<int>(x.size()));
    }
  }
  k3reports::Trends trends(const std::string& last_run) {
    const auto run = k3verdict::load_run(db(), last_run);
    k3reports::TrendWindow window;
    window.last = 30;
    return k3reports::load_trends(db(), run, window, k3verdict::RegressionConfig{});
  }
};

TEST_F(TrendDistribution, ASpreadDoublingIsNamedWhereTheMeanRuleSeesNothing) {
  nights(24, [](int n) { return night_figures(n, 100000, n < 12 ? 500 : 1000); });
  const auto t = trends("r23");
  ASSERT_EQ(t.series.size(), 1u);
  const auto& s = t.series[0];
  ASSERT_EQ(s.points.size(), 24u);
  EXPECT_EQ(s.points[0].process_ns.size(), 10u);
  EXPECT_TRUE(s.change_points.empty());  // every night's mean is 100 us
  ASSERT_EQ(s.distribution_changes.size(), 1u);
  const auto& c = s.distribution_changes[0];
  EXPECT_EQ(c.index, 12u);
  EXPECT_EQ(c.what.kind, k3stats::ChangeKind::kSpread);
  EXPECT_GT(c.what.spread.size, 1.5);
  EXPECT_LT(c.what.spread.size, 2.7);
  EXPECT_EQ(k3reports::distribution_change_text(c).rfind("spread x", 0), 0u);
}

TEST_F(TrendDistribution, ALevelStepIsNamedLevelByBothRules) {
  nights(24, [](int n) { return night_figures(n, n < 12 ? 100000 : 110000, 500); });
  const auto t = trends("r23");
  ASSERT_EQ(t.series.size(), 1u);
  const auto& s = t.series[0];
  ASSERT_EQ(s.change_points.size(), 1u);
  EXPECT_EQ(s.change_points[0].index, 12u);
  ASSERT_EQ(s.distribution_changes.size(), 1u);
  EXPECT_EQ(s.distribution_changes[0].index, 12u);
  EXPECT_EQ(s.distribution_changes[0].what.kind, k3stats::ChangeKind::kLevel);
  EXPECT_NEAR(s.distribution_changes[0].what.level.size, 1.1, 0.01);
}

TEST_F(TrendDistribution, NightsWithoutProcessFiguresAreLeftOutAndIndicesStayTheSeries) {
  // Nights 0..3 were stored with aggregates only (no process rows): the detector reads nights
  // 4..23, and names the change by the series' own index.
  build("h1");
  for (int n = 0; n < 24; ++n) {
    const std::string run_id = fmt::format("r{:02}", n);
    run(run_id, "h1", {"c1"});
    const auto x = night_figures(n, 100000, n < 14 ? 500 : 1000);
    if (n >= 4)
      for (std::size_t p = 0; p < x.size(); ++p) process(run_id, "c1", static_cast<int>(p), {x[p]});
    aggregate(run_id, "c1", 100000, true, 10);
  }
  const auto t = trends("r23");
  ASSERT_EQ(t.series.size(), 1u);
  const auto& s = t.series[0];
  EXPECT_TRUE(s.points[3].process_ns.empty());
  ASSERT_EQ(s.distribution_changes.size(), 1u);
  EXPECT_EQ(s.distribution_changes[0].index, 14u);
  EXPECT_EQ(s.distribution_changes[0].segment_begin, 4u);
  EXPECT_EQ(s.distribution_changes[0].segment_end, 24u);
}

}  // namespace
