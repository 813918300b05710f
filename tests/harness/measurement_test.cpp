// The measurement protocol where the truth is known: the round planner and the sweep driven by a
// seeded synthetic-noise runner (process levels and repetition noise from known log-normal
// distributions, slowdowns of exactly known size), and the disturbance rule on fixture readings.
// The selfcheck's designs on the same runner: selfcheck_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "harness/host/bench/rounds.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/synthetic_runner.h"
#include "harness/host/stats/sequential.h"
#include "harness/host/stats/signed_rank.h"
#include "harness/host/stats/stats.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/runner/disturbance.h"
#include "synthetic_cell.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using k3test::synthetic_cell;

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
    k3bench::RoundPlanner p({0, 0, 0},
                            {.min_processes = 3, .max_processes = 40, .target_ci = 0.02});
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

// An A/B group replaces every round with a disturbed process by a round of the whole group, up to
// the first stage's count: a busy machine's A/B (A disturbed in rounds 0 and 1, B in round 2)
// still gets its three pairs; one replacement process per unit left it one pair, no verdict.
TEST(HarnessRounds, DisturbedRoundsOfAPairAreReplacedUntilThePairsAreComplete) {
  k3bench::RoundPlanner p({0, 0}, {.min_processes = 3, .max_processes = 3, .paired = true});
  const std::set<std::pair<std::size_t, int>> disturbed = {{0, 0}, {0, 1}, {1, 2}};
  int rounds = 0;
  for (; !p.next_round().empty(); ++rounds) {
    ASSERT_LT(rounds, 6) << "at most min_processes replacement rounds";
    for (std::size_t u : p.next_round()) p.record_ok(u, 100.0 + u, disturbed.contains({u, rounds}));
  }
  EXPECT_EQ(rounds, 6);
  EXPECT_EQ(p.unit(0).processes, 6);
  EXPECT_EQ(p.unit(1).processes, 6);
  EXPECT_EQ(p.paired_means(0, 1).first.size(), 3u);
  // Bounded: a machine that disturbs every process ends after 3 + 3 rounds, with no pair.
  k3bench::RoundPlanner busy({0, 0}, {.min_processes = 3, .max_processes = 3, .paired = true});
  for (rounds = 0; !busy.next_round().empty(); ++rounds) {
    ASSERT_LT(rounds, 6);
    for (std::size_t u : busy.next_round()) busy.record_ok(u, 100.0, true);
  }
  EXPECT_EQ(rounds, 6);
  EXPECT_TRUE(busy.paired_means(0, 1).first.empty());
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

class HarnessSweepSynthetic : public ::testing::Test {
 protected:
  k3test::ScratchDir dir_{"k3tune_synth_", k3test::ScratchDir::Name::kPerProcess};
};

TEST_F(HarnessSweepSynthetic, DisturbedProcessesAreStoredFlaggedAndLeftOutOfTheAggregate) {
  auto db = k3store::open_database((dir_ / "r.db").string(), k3store::OpenMode::kCreateOrUpdate);
  k3store::upsert_build(*db, {"b", "host", "/x", "c", "", "{}", "r", std::nullopt, "test"});
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = k3targets::TargetKind::kLocal;
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

// A busy machine is one line, not a note per process: the sweep notes the first few disturbed
// processes and sums up the rest, and when at least half were disturbed it says the machine was
// busy, with how many and what was seen.
TEST_F(HarnessSweepSynthetic, ABusyMachineIsSaidInOneLine) {
  EXPECT_EQ(k3bench::busy_machine_line(20, k3bench::kDisturbedNotes, {"steal"}), "");
  EXPECT_EQ(k3bench::busy_machine_line(20, 9, {"steal"}), "");  // fewer than half
  EXPECT_EQ(k3bench::busy_machine_line(20, 10, {"run-delay", "steal"}),
            "k3tune: note: the machine was busy: 10 of 20 runner processes were disturbed "
            "(run-delay, steal); the figures rest on the undisturbed ones (or, where none was, on "
            "all of them: see each cell's notes); measure again on a quieter machine for tighter "
            "figures");
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = k3targets::TargetKind::kLocal;
  tc.runner = "/bin/true";
  auto target = k3targets::make_target(tc, "/");
  for (const double p : {0.0, 0.9}) {
    SCOPED_TRACE(p);
    auto db = k3store::open_database((dir_ / ("busy" + std::to_string(p) + ".db")).string(),
                                     k3store::OpenMode::kCreateOrUpdate);
    k3store::upsert_build(*db, {"b", "host", "/x", "c", "", "{}", "r", std::nullopt, "test"});
    k3bench::SyntheticExecutor exec(
        {.base_ns = 1e5, .between = 0.03, .within = 0.01, .disturbed_probability = p}, 5);
    k3bench::SweepOptions opt;
    opt.rounds = {.min_processes = 4, .max_processes = 4};
    opt.progress = false;
    opt.executor = &exec;
    const auto r = k3bench::run_sweep(*db, {{target.get(), "b", ""}}, {synthetic_cell(0)}, opt);
    if (p == 0) {
      EXPECT_EQ(r.processes_disturbed, 0);
      EXPECT_EQ(r.busy_machine, "");
    } else {
      ASSERT_GT(r.processes_disturbed, k3bench::kDisturbedNotes);
      EXPECT_EQ(r.busy_machine, k3bench::busy_machine_line(r.processes_run, r.processes_disturbed,
                                                           {"frequency-change"}));
    }
  }
}

// A table against the defaults (pair_tables): the two cells that differ only in their table are
// one group, so they run in the same rounds and every disturbed round is replaced on both sides,
// up to three replacement rounds: each comparison keeps its three pairs unless the cap is reached.
// As two groups (one replacement process per side), the same machine left comparisons with fewer.
TEST_F(HarnessSweepSynthetic, ATableAndTheDefaultsArePairedRoundByRound) {
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = k3targets::TargetKind::kLocal;
  tc.runner = "/bin/true";
  auto target = k3targets::make_target(tc, "/");
  std::vector<k3bench::CellSpec> cells;
  for (int i = 0; i < 8; ++i) {
    for (const char* table : {"", "/t.json"}) {
      auto c = synthetic_cell(0);
      c.shape = {{"n", i}};
      c.settings.table = table;
      cells.push_back(c);
    }
  }
  auto sweep = [&](bool pair_tables, const char* db_name) {
    auto db = k3store::open_database((dir_ / db_name).string(), k3store::OpenMode::kCreateOrUpdate);
    k3store::upsert_build(*db, {"b", "host", "/x", "c", "", "{}", "r", std::nullopt, "test"});
    k3bench::SyntheticExecutor exec(
        {.base_ns = 1e5, .between = 0.03, .within = 0.01, .disturbed_probability = 0.25}, 7);
    k3bench::SweepOptions opt;
    opt.rounds = {.min_processes = 3, .max_processes = 3, .paired = pair_tables};
    opt.pair_tables = pair_tables;
    opt.progress = false;
    opt.executor = &exec;
    return k3bench::run_sweep(*db, {{target.get(), "b", ""}}, cells, opt);
  };
  const auto paired = sweep(true, "paired.db"), apart = sweep(false, "apart.db");
  ASSERT_EQ(paired.cells.size(), 16u);
  int disturbed = 0, short_apart = 0;
  for (std::size_t i = 0; i < paired.cells.size(); i += 2) {
    const auto &defaults = paired.cells[i], &table = paired.cells[i + 1];
    disturbed += defaults.disturbed + table.disturbed;
    const std::size_t rounds = defaults.process_rounds.size() + defaults.disturbed;
    EXPECT_EQ(rounds, table.process_rounds.size() + table.disturbed);  // the same rounds
    const std::size_t pairs = k3bench::paired_means(defaults, table).first.size();
    EXPECT_TRUE(pairs == 3 || rounds == 6)
        << "n=" << i / 2 << ": " << pairs << " pairs in " << rounds << " rounds";
    short_apart += k3bench::paired_means(apart.cells[i], apart.cells[i + 1]).first.size() < pairs;
  }
  EXPECT_GT(disturbed, 4);
  EXPECT_GT(short_apart, 0) << "the grouping made no difference on this machine model";
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

TEST(HarnessRounds, TargetMdeStopsOnTheMagnitudesAfterACompleteRound) {
  // Two units, per-round ratios alternating +-2% (|d| = 0.0198 every round): the group stops at the
  // first complete round whose sign-free MDE is within 3%, never mid-round, with that reason.
  k3bench::RoundPlanner p(
      {0, 0}, {.min_processes = 5, .max_processes = 100, .paired = true, .target_mde = 0.03});
  int rounds = 0;
  for (auto r = p.next_round(); !r.empty(); r = p.next_round(), ++rounds)
    for (auto u : r)
      if (!p.unit(u).done) p.record_ok(u, u == 0 ? 100.0 : (rounds % 2 ? 102.0 : 98.0), false);
  EXPECT_EQ(p.unit(0).stop_reason, "MDE within target");
  EXPECT_EQ(p.unit(0).processes, p.unit(1).processes);
  EXPECT_LE(p.group_mde(0), 0.03);
  std::vector<double> one_fewer;
  for (int r = 0; r + 1 < rounds; ++r) one_fewer.push_back(std::log(r % 2 ? 1.02 : 0.98));
  EXPECT_GT(k3stats::signed_rank_mde_from_magnitudes(one_fewer, 0.05, 0.8), 0.03);
  // A budget ends what is still measuring, with its reason.
  k3bench::RoundPlanner q(
      {0, 0}, {.min_processes = 5, .max_processes = 100, .paired = true, .target_mde = 0.001});
  q.record_ok(0, 100, false);
  q.record_ok(1, 100, false);
  q.end_all("wall-time budget (MDE not reached)");
  EXPECT_TRUE(q.next_round().empty());
  EXPECT_EQ(q.unit(1).stop_reason, "wall-time budget (MDE not reached)");
}

namespace {

// Two builds inside one process (SweepOptions::build_pairing within): one runner process per
// cell and round, its two sides stored as the two builds' processes of that round, each with the
// cell's repetitions; the per-round ratio is then the within-process one, free of the
// process-to-process spread. The synthetic plugin named "planted" is exactly 3% slower (B: the
// baseline here), so the candidate's side must come out 3% faster round by round.
TEST_F(HarnessSweepSynthetic, TwoBuildsInOneProcessArePairedWithinEachProcess) {
  auto db = k3store::open_database((dir_ / "pair.db").string(), k3store::OpenMode::kCreateOrUpdate);
  for (const char* hash : {"base", "cand"})
    k3store::upsert_build(*db, {hash, "host", "/x", "c", "", "{}", "r", std::nullopt, "test"});
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = k3targets::TargetKind::kLocal;
  tc.runner = "/bin/true";
  auto target = k3targets::make_target(tc, "/");
  // A large spread between processes (8%), a small one within (0.5%).
  k3bench::SyntheticExecutor exec({.base_ns = 1e5, .between = 0.08, .within = 0.005}, 11);
  k3bench::SweepOptions opt;
  opt.rounds = {.min_processes = 6, .max_processes = 6, .paired = true};
  opt.progress = false;
  opt.executor = &exec;
  opt.build_pairing = {"/builds/old/libk3bench_plugin_planted.so", "a synthetic plugin"};
  auto cell = synthetic_cell(0);
  cell.settings.repetitions = 10;
  const auto r = k3bench::run_sweep(
      *db, {{target.get(), "base", "baseline"}, {target.get(), "cand", "candidate"}}, {cell}, opt);
  EXPECT_EQ(exec.processes_run(), 6);
  EXPECT_EQ(r.processes_run, 6);
  ASSERT_EQ(r.cells.size(), 2u);
  for (const auto& c : r.cells) {
    ASSERT_TRUE(c.aggregate.ok) << c.aggregate.reason;
    EXPECT_EQ(c.aggregate.processes, 6);
    EXPECT_EQ(c.aggregate.samples, 6 * 10);
  }
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM processes"), 12);
  EXPECT_EQ(db->scalar_int("SELECT count(DISTINCT order_index) FROM processes"), 6);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM processes WHERE json_extract(runner_json, "
                           "'$.within_process.side') = 'B' AND cell_key = '" +
                           r.cells[0].cell_key + "'"),
            6);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM runs WHERE json_extract(settings_json, "
                           "'$.build_pairing.design') = 'within-process'"),
            1);
  const auto [base, cand] = k3bench::paired_means(r.cells[0], r.cells[1]);
  ASSERT_EQ(base.size(), 6u);
  for (std::size_t i = 0; i < base.size(); ++i)
    // Within a process the two sides differ by the planted 3% and the repetition noise only
    // (0.5% per repetition, ten per side: about 0.16% on a side's mean).
    EXPECT_NEAR(std::log(cand[i] / base[i]), -std::log(1.03), 0.012) << "round " << i;
}

}  // namespace
