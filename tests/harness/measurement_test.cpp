// The measurement protocol where the truth is known: the round planner and the sweep driven by a
// seeded synthetic-noise runner (process levels and repetition noise from known log-normal
// distributions, slowdowns of exactly known size), and the disturbance rule on fixture readings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "harness/host/store/database.h"
#include "harness/runner/disturbance.h"
#include "harness/host/store/results.h"
#include "harness/host/bench/rounds.h"
#include "harness/host/bench/selfcheck.h"
#include "harness/host/stats/sequential.h"
#include "harness/host/stats/stats.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/synthetic_runner.h"

namespace fs = std::filesystem;

namespace {

k3bench::CellSpec synthetic_cell(double extra_work_ns = 0) {
  k3bench::CellSpec c;
  c.op = "synthetic";
  c.shape = {{"n", 1}};
  c.params = nlohmann::json::object();
  c.settings.extra_work_ns = extra_work_ns;
  return c;
}

TEST(HarnessRounds, FixedCountRunsExactlyMinProcesses) {
  k3bench::RoundPlanner p({0, 1}, {.min_processes = 3, .max_processes = 3});
  int rounds = 0;
  for (auto r = p.next_round(); !r.empty(); r = p.next_round(), ++rounds)
    for (auto u : r) p.record_ok(u, 100.0 + u, false);
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(p.unit(0).processes, 3);
  EXPECT_EQ(p.unit(1).stop_reason, "fixed count");
}

TEST(HarnessRounds, AdaptiveRoundsStopAtTheRequestedInterval) {
  // Seeded synthetic runner, 4% between-process spread, target 2%: every unit ends with its
  // two-stage interval (t_{m-1} s_m / sqrt(N), Stein) within the target, or at the ceiling with
  // the reason saying so.
  k3bench::SyntheticExecutor exec({.base_ns = 1e5, .between = 0.04, .within = 0.005}, 7);
  for (int seed = 0; seed < 50; ++seed) {
    k3bench::RoundPlanner p({0, 0, 0}, {.min_processes = 3, .max_processes = 40, .target_ci = 0.02});
    const auto cell = synthetic_cell();
    for (auto r = p.next_round(); !r.empty(); r = p.next_round())
      for (auto u : r)
        if (!p.unit(u).done) p.record_ok(u, exec.run({}, cell, 0, false, 0, 0).mean_ns(), false);
    for (std::size_t u = 0; u < 3; ++u) {
      const auto& unit = p.unit(u);
      if (unit.stop_reason == "CI within target") {
        const std::vector<double> first(unit.clean_means.begin(), unit.clean_means.begin() + 3);
        const double s_m = k3stats::sample_stddev(first) / k3stats::mean(first);
        EXPECT_LE(k3stats::t_critical(0.95, 2) * s_m / std::sqrt(double(unit.clean_means.size())),
                  0.02);
        EXPECT_GE(static_cast<int>(unit.clean_means.size()), unit.planned_total);
      } else {
        EXPECT_EQ(unit.processes, 40) << unit.stop_reason;
      }
      EXPECT_GE(unit.processes, 3);
    }
    // One group: its units stop together, in the same round (the round may end early for the
    // units after the one whose process completed the group).
    EXPECT_LE(p.unit(0).processes - p.unit(2).processes, 1);
    EXPECT_GE(p.unit(0).processes, p.unit(2).processes);
  }
}

TEST(HarnessRounds, DisturbedProcessIsKeptNotCountedAndMeasuredOnceMore) {
  k3bench::RoundPlanner p({0}, {.min_processes = 3, .max_processes = 3});
  p.record_ok(0, 100, false);
  p.record_ok(0, 100, true);  // disturbed: one more process is granted
  p.record_ok(0, 101, false);
  EXPECT_FALSE(p.unit(0).done);
  p.record_ok(0, 102, true);  // a second disturbance gets no further re-measure
  EXPECT_TRUE(p.unit(0).done);
  EXPECT_EQ(p.unit(0).clean_means.size(), 2u);
  EXPECT_EQ(p.unit(0).disturbed, 2);
}

TEST(HarnessRounds, FailedUnitStopsAloneAndItsGroupGoesOn) {
  k3bench::RoundPlanner p({0, 0}, {.min_processes = 2, .max_processes = 2});
  p.record_failure(0, "timeout");
  EXPECT_TRUE(p.unit(0).done);
  EXPECT_FALSE(p.unit(1).done);
  p.record_ok(1, 1, false);
  p.record_ok(1, 1, false);
  EXPECT_TRUE(p.unit(1).done);
}

TEST(HarnessSelfcheck, SyntheticVerdictsHoldTheNominalFalsePositiveRate) {
  // The truth is known: A and A' are the same distribution, A+x is exactly x slower. The machine
  // model is the shared VM's: 2% independent process spread on a 5% drift with correlation 0.6
  // between consecutive processes. Over 1500 trials the false-positive rate of the full verdict
  // (significant AND at least the minimum effect) must not exceed alpha = 5% beyond chance (the
  // rate's 99% interval starts below 5%), and a 10% slowdown must be found nearly always.
  k3bench::SyntheticExecutor exec(
      {.base_ns = 1e5, .between = 0.02, .within = 0.005, .drift = 0.05, .drift_correlation = 0.6},
      2026);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 1500;
  opt.slowdowns = {0.05, 0.10};
  opt.rounds = {.min_processes = 5, .max_processes = 16, .target_ci = 0.03};
  const auto r = k3bench::run_selfcheck(exec, {}, opt);
  EXPECT_EQ(r.trials, 1500);
  EXPECT_LE(
      k3stats::clopper_pearson(r.false_positives.successes, r.false_positives.trials, 0.99).low,
      0.05);
  EXPECT_GT(r.detections[1].rate.rate, 0.95);
  EXPECT_NEAR(r.detections[1].measured_mean, 0.10, 0.01);
  // The noise floor is the spread of the paired A' - A estimate: with n rounds it is about the
  // per-round ratio's spread over sqrt(n), which the drift barely touches (it cancels within a
  // round): 0.02 * sqrt(2) / sqrt(n) plus what the drift moves between neighbours.
  const double n = r.cells[0].mean_processes;
  EXPECT_LT(r.noise_floor, 0.05 * std::sqrt(2.0 / n));  // well under the unpaired spread
  EXPECT_GT(r.noise_floor, 0.02 * std::sqrt(2.0 / n) * 0.7);
}

TEST(HarnessSelfcheck, SyntheticFalsePositivesOverManySeedsWithoutMinimumEffect) {
  // With the minimum effect off, the test alone must reject at its nominal 5% (over seeds).
  int fp = 0, trials = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    k3bench::SyntheticExecutor exec(
        {.base_ns = 1e5, .between = 0.03, .within = 0.01, .drift = 0.05, .drift_correlation = 0.6},
        seed);
    k3bench::SelfcheckOptions opt;
    opt.cells = {synthetic_cell()};
    opt.trials = 500;
    opt.slowdowns = {};
    opt.compare.min_effect = 0;
    opt.rounds = {.min_processes = 3, .max_processes = 10, .target_ci = 0.03};
    const auto r = k3bench::run_selfcheck(exec, {}, opt);
    fp += r.false_positives.successes;
    trials += r.false_positives.trials;
  }
  const auto rate = k3stats::clopper_pearson(fp, trials, 0.99);
  EXPECT_LE(rate.low, 0.05) << fp << "/" << trials;
  EXPECT_GE(rate.high, 0.05) << fp << "/"
                             << trials;  // and not far below it either: the test is not crippled
}

class HarnessSweepSynthetic : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("k3tune_synth_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(HarnessSweepSynthetic, DisturbedProcessesAreStoredFlaggedAndLeftOutOfTheAggregate) {
  auto db = k3store::open_database((dir_ / "r.db").string(), k3store::OpenMode::kCreateOrUpdate);
  k3store::upsert_build(*db, {"b", "host", "/x", "c", "", "{}", "r", std::nullopt, "test"});
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = "local";
  tc.runner = "/bin/true";
  auto target = k3targets::make_target(tc, "/");
  k3bench::SyntheticExecutor exec(
      {.base_ns = 1e5, .between = 0.03, .within = 0.01, .disturbed_probability = 0.3}, 3);
  k3bench::SweepOptions opt;
  opt.rounds = {.min_processes = 4, .max_processes = 4};
  opt.progress = false;
  opt.executor = &exec;
  std::vector<k3bench::CellSpec> cells;
  for (int i = 0; i < 6; ++i) {
    auto c = synthetic_cell(1000.0 * i);
    c.shape = {{"n", i}};
    cells.push_back(c);
  }
  const auto r = k3bench::run_sweep(*db, {{target.get(), "b", ""}}, cells, opt);
  int disturbed = 0;
  for (const auto& c : r.cells) {
    ASSERT_TRUE(c.aggregate.ok);
    disturbed += c.disturbed;
    // A cell with a disturbed process got exactly one more process; the disturbed ones are stored
    // but not counted.
    const auto total =
        db->scalar_int("SELECT count(*) FROM processes WHERE cell_key = '" + c.cell_key + "'");
    EXPECT_EQ(total, 4 + (c.disturbed > 0 ? 1 : 0));
    EXPECT_EQ(c.aggregate.processes + c.aggregate.excluded_processes, total);
    EXPECT_EQ(c.aggregate.excluded_processes, c.disturbed);
  }
  EXPECT_GT(disturbed, 0);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM processes WHERE disturbed = 1"), disturbed);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM samples WHERE flags IS NOT NULL"), disturbed);
}

TEST(HarnessDisturbance, RuleOnFixtureReadings) {
  const nlohmann::json steady = {{"cpufreq_khz", {{"8", 1800000}, {"9", 1800000}}},
                                 {"thermal_c", {{"3", 55.0}}}};
  nlohmann::json throttled = steady;
  throttled["cpufreq_khz"]["9"] = 1600000;
  nlohmann::json hot = steady;
  hot["thermal_c"]["3"] = 58.5;
  nlohmann::json warm = steady;
  warm["thermal_c"]["3"] = 56.0;
  using V = std::vector<std::string>;
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 8, 0, true), V{});
  EXPECT_EQ(k3runner::disturbances(steady, throttled, 8, 8, 0, true), V{"frequency-change"});
  EXPECT_EQ(k3runner::disturbances(steady, hot, 8, 8, 0, true), V{"thermal-rise"});
  EXPECT_EQ(k3runner::disturbances(steady, warm, 8, 8, 0, true), V{});  // within 2 C
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 9, 0, true), V{"cpu-migration"});
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 8, 2, true), V{"cpu-migration"});
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 9, 3, false), V{});  // unpinned threads move
  // The calling thread ran 80% of the repetition: preempted. 95%: fine. Unknown (-1): not judged.
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 8, 0, true, 0.8), V{"preempted"});
  EXPECT_EQ(k3runner::disturbances(steady, steady, 8, 8, 0, true, 0.95), V{});
  // A VM without cpufreq or thermal files: nothing to compare, nothing flagged.
  EXPECT_EQ(
      k3runner::disturbances(nlohmann::json::object(), nlohmann::json::object(), -1, -1, -1, false),
      V{});
}

}  // namespace
