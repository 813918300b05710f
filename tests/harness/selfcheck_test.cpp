// The selfcheck's designs where the truth is known (the seeded synthetic-noise runner): the
// rounds' false positives under drift and heavy tails, sequential rounds, the reported MDE against
// detection, the within-process design and its MDE budget, the build pair, and the priced budget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "harness/host/bench/selfcheck.h"
#include "harness/host/bench/synthetic_runner.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/stats/binomial.h"
#include "harness/host/stats/stats.h"
#include "synthetic_cell.h"

namespace {

using k3test::synthetic_cell;

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

// The false positives of the test alone (minimum effect 0) over `trials` A-vs-A trials at bench's
// default budget, under a noise model, with the given paired estimator.
k3stats::Proportion synthetic_false_positives(const k3bench::NoiseModel& noise,
                                              k3stats::PairedEstimator estimator, int trials,
                                              std::uint64_t seed) {
  k3bench::SyntheticExecutor exec(noise, seed);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = trials;
  opt.slowdowns = {};
  opt.compare.min_effect = 0;
  opt.compare.estimator = estimator;
  opt.rounds = {.min_processes = 5, .max_processes = 16, .target_ci = 0.03};
  return k3bench::run_selfcheck(exec, {}, opt).false_positives;
}

TEST(HarnessSelfcheck, HodgesLehmannHoldsTheNominalRateUnderHeavyTailsAndDrift) {
  // The default verdict (Hodges-Lehmann shift, Wilcoxon signed-rank) on the VM's noise model with
  // heavy-tailed process levels (Student t, 2 df: infinite variance), with 5% of processes hit by
  // a one-sided burst, and with a drift that pairing cancels only in part: its false-positive rate
  // must be nominal within a tight interval: over 6000 trials its 95% interval (about +-0.55
  // points) must reach 5% from below, end under 6%, and start above 3% (not crippled). The mean's
  // t-test under the same contamination is shown to reject too often -- why it is not the default
  // (docs/measurement.md).
  const k3bench::NoiseModel vm{
      .base_ns = 1e5, .between = 0.035, .within = 0.005, .drift = 0.05, .drift_correlation = 0.98};
  k3bench::NoiseModel t2 = vm, burst = vm, drift = vm;
  t2.between_df = 2;
  burst.contamination = 0.05;
  burst.contamination_scale = 0.3;
  drift.drift_correlation = 0.6;
  for (const auto& [name, noise] :
       {std::pair{"t2", t2}, std::pair{"burst", burst}, std::pair{"drift", drift}}) {
    const auto fp =
        synthetic_false_positives(noise, k3stats::PairedEstimator::kHodgesLehmann, 6000, 11);
    std::printf("  %s: %d/%d false positives (95%% CI %.2f%%..%.2f%%)\n", name, fp.successes,
                fp.trials, 100 * fp.low, 100 * fp.high);
    EXPECT_LE(fp.low, 0.05) << name;   // not above the nominal rate beyond chance
    EXPECT_LT(fp.high, 0.06) << name;  // and shown to be under 6%
    EXPECT_GT(fp.low, 0.03) << name;   // and not crippled
  }
  const auto mean_t = synthetic_false_positives(burst, k3stats::PairedEstimator::kMeanT, 2000, 11);
  EXPECT_GT(mean_t.low, 0.05) << mean_t.successes << "/" << mean_t.trials;
}

TEST(HarnessSelfcheck, SequentialRoundsToATargetMdeKeepTheNominalRate) {
  // bench --mde: rounds are added one at a time until the signed-rank test's minimum detectable
  // effect, from the magnitudes of the per-round log ratios only, is at most 3% -- a look after
  // every round. Because the rule never looks at the signs, the test's null distribution stays
  // exact: over 4000 A-vs-A trials under the VM's noise with heavy tails (Student t, 2 df) the
  // false-positive rate's 95% interval must reach 5% from below and end under 6.5%. And the MDE it
  // stops at must mean what it says: a slowdown of exactly the target is detected in about 80% of
  // trials (power 0.8), and every group that stopped on the MDE has reached it.
  k3bench::NoiseModel noise{.base_ns = 1e5,
                            .between = 0.035,
                            .within = 0.005,
                            .drift = 0.05,
                            .drift_correlation = 0.98,
                            .between_df = 2};
  k3bench::SyntheticExecutor exec(noise, 5);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 4000;
  opt.slowdowns = {};
  opt.compare.min_effect = 0;
  opt.rounds = {.min_processes = 5, .max_processes = 400, .target_mde = 0.03};
  const auto null = k3bench::run_selfcheck(exec, {}, opt);
  const auto& fp = null.false_positives;
  std::printf(
      "  sequential to MDE 3%%: %d/%d false positives (95%% CI %.2f%%..%.2f%%), %.1f rounds\n",
      fp.successes, fp.trials, 100 * fp.low, 100 * fp.high, null.cells[0].mean_processes);
  EXPECT_LE(fp.low, 0.05);
  EXPECT_LT(fp.high, 0.065);
  EXPECT_EQ(null.cells[0].processes_at_max, 0);

  k3bench::SyntheticExecutor exec2(noise, 6);
  opt.trials = 500;
  opt.slowdowns = {0.03};
  const auto power = k3bench::run_selfcheck(exec2, {}, opt);
  const auto& det = power.detections[0].rate;
  std::printf("  +3%% detected in %d/%d (95%% CI %.1f%%..%.1f%%)\n", det.successes, det.trials,
              100 * det.low, 100 * det.high);
  EXPECT_GT(det.rate, 0.7);
  EXPECT_LT(det.rate, 0.95);
}

TEST(HarnessSelfcheck, ReportedMdePredictsTheDetectionOfEveryInjectedSlowdown) {
  // A machine whose drift decorrelates within a few processes (8% drift, correlation 0.6 between
  // neighbours, 1% independent spread). The selfcheck's minimum detectable effect is measured on
  // the A-vs-A' pair; it must describe the injected pairs too: every slowdown at least the
  // reported MDE is detected in about 80% of trials or more (power 0.8; the 95% interval must
  // reach 80%). With the configurations in a fixed order in every round, the +10% pair sat four
  // processes from A while A' was next to it: the mean's MDE read 6.5% and +10% was found in only
  // 67% of these 2000 trials (the prefill anomaly of a real VM: +10% found less often than +3%).
  for (const auto estimator :
       {k3stats::PairedEstimator::kMeanT, k3stats::PairedEstimator::kHodgesLehmann}) {
    k3bench::SyntheticExecutor exec(
        {.base_ns = 1e5, .between = 0.01, .within = 0.005, .drift = 0.08, .drift_correlation = 0.6},
        3);
    k3bench::SelfcheckOptions opt;
    opt.cells = {synthetic_cell()};
    opt.trials = 2000;
    opt.compare.estimator = estimator;
    opt.rounds = {.min_processes = 5, .max_processes = 16, .target_ci = 0.03};
    const auto r = k3bench::run_selfcheck(exec, {}, opt);
    for (const auto& d : r.detections) {
      std::printf("  %s: +%.0f%% detected %.1f%% (MDE %.1f%%)\n", k3stats::to_string(estimator),
                  100 * d.injected, 100 * d.rate.rate, 100 * r.minimum_detectable_effect);
      if (d.injected >= r.minimum_detectable_effect) {
        EXPECT_GE(d.rate.high, 0.8) << k3stats::to_string(estimator) << " +" << d.injected;
      }
    }
    // Larger slowdowns are never found less often.
    EXPECT_LE(r.detections[0].rate.rate, r.detections[1].rate.rate);
    EXPECT_LE(r.detections[1].rate.rate, r.detections[2].rate.rate);
  }
}

TEST(HarnessSelfcheck, WithinProcessPairsCancelTheProcessSpreadAndHoldTheNominalRate) {
  // A machine whose processes differ a lot (8% independent spread on a slow 5% drift) and whose
  // repetitions vary by 2% within a process. Both sides of the within-process design share each
  // process's level, so its MDE must be a fraction of the between-process design's, and with the
  // minimum effect off its A-vs-A verdicts must still reject at the signed-rank test's nominal
  // level (exact at 8 processes: 3.9%), neither above 5% beyond chance nor crippled.
  k3bench::SyntheticExecutor exec(
      {.base_ns = 1e5, .between = 0.08, .within = 0.02, .drift = 0.05, .drift_correlation = 0.98},
      7);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 3000;
  opt.slowdowns = {0.03};
  opt.compare.min_effect = 0;
  opt.within_processes = 8;
  opt.rounds = {.min_processes = 5, .max_processes = 16, .target_ci = 0.03};
  const auto r = k3bench::run_selfcheck(exec, {}, opt);
  const auto& w = r.within;
  std::printf(
      "  within: false positives %.2f%%, +3%% detected %.1f%%, MDE %.2f%%; between: "
      "+3%% detected %.1f%%, MDE %.2f%%\n",
      100 * w.false_positives.rate, 100 * w.detections[0].rate.rate,
      100 * w.minimum_detectable_effect, 100 * r.detections[0].rate.rate,
      100 * r.minimum_detectable_effect);
  const auto rate =
      k3stats::clopper_pearson(w.false_positives.successes, w.false_positives.trials, 0.99);
  EXPECT_LE(rate.low, 0.05);
  EXPECT_GE(rate.high, 0.039);
  EXPECT_LT(w.minimum_detectable_effect, r.minimum_detectable_effect / 3);
  EXPECT_GT(w.detections[0].rate.rate, 0.9);
  EXPECT_LT(r.detections[0].rate.rate, 0.5);
  EXPECT_NEAR(w.detections[0].measured_mean, 0.03, 0.005);
  EXPECT_EQ(w.processes, 3000 * 2 * 8);  // A vs A and +3%, 8 processes each
}

TEST(HarnessSelfcheck, WithinProcessBudgetSetByTheMdeKeepsTheTestExact) {
  // table verify's rule: after 6 processes, one more until the signed-rank test's MDE from the
  // magnitudes of the per-process log ratios is at most 1%, or 24. The rule never looks at the
  // signs, so under A = B the signs stay fair coins at whatever count it stops and the level stays
  // the test's own (at most 5%; 3.1% at 6 pairs, 3.9% at 8, a little under 5% above). A rule that
  // stopped on a significant result would inflate it well beyond. The A-vs-A verdicts stop at
  // varying counts between the first look and the ceiling; a 3% slowdown keeps the magnitudes
  // near 3%, runs to the ceiling and is found.
  k3bench::SyntheticExecutor exec(
      {.base_ns = 1e5, .between = 0.08, .within = 0.02, .drift = 0.05, .drift_correlation = 0.98},
      17);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 3000;
  opt.slowdowns = {0.03};
  opt.compare.min_effect = 0;
  opt.within_processes = 6;
  opt.within_mde = 0.01;
  opt.within_max_processes = 24;
  opt.rounds = {.min_processes = 3, .max_processes = 3};
  const auto r = k3bench::run_selfcheck(exec, {}, opt);
  const auto& w = r.within;
  std::printf(
      "  within, MDE budget: false positives %.2f%%, +3%% detected %.1f%%, %.1f processes "
      "per verdict, MDE %.2f%%\n",
      100 * w.false_positives.rate, 100 * w.detections[0].rate.rate, w.mean_processes_per_verdict,
      100 * w.minimum_detectable_effect);
  const auto rate =
      k3stats::clopper_pearson(w.false_positives.successes, w.false_positives.trials, 0.99);
  EXPECT_LE(rate.low, 0.05);
  EXPECT_GE(rate.high, 0.031);
  EXPECT_GT(w.detections[0].rate.rate, 0.99);
  EXPECT_EQ(w.mde_target, 0.01);
  EXPECT_EQ(w.max_processes, 24);
  // A vs A stops between the first look and the ceiling; the slowdown always runs to 24.
  EXPECT_GT(w.mean_processes_per_verdict, (6.0 + 24.0) / 2 + 1);
  EXPECT_LT(w.mean_processes_per_verdict, 24.0);
  EXPECT_LT(w.minimum_detectable_effect, 0.0125);
}

TEST(HarnessSelfcheck, TheBuildPairFindsThePlantedBuildAtTheWithinDesignsResolution) {
  // Two builds in one process (k3bench --build-b) on the synthetic machine: the second build is
  // the first unless its file is the planted one, which is 3% slower (its size reported by the
  // probe process, as the real planted plugin reports it). Both sides share each process's level,
  // so the build pair resolves what the rounds cannot: at the signed-rank test's nominal level
  // across the same source built twice, the planted 3% found in nearly every trial and measured
  // at its size.
  k3bench::SyntheticExecutor exec(
      {.base_ns = 1e5, .between = 0.08, .within = 0.02, .drift = 0.05, .drift_correlation = 0.98},
      23);
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 2000;
  opt.slowdowns = {0.03};
  opt.compare.min_effect = 0;
  opt.within_processes = 8;
  opt.build_pair_plugin = "build/runner/libk3bench_plugin.so";
  opt.build_pair_planted = "build/runner/libk3bench_plugin_planted.so";
  opt.rounds = {.min_processes = 3, .max_processes = 3};
  const auto r = k3bench::run_selfcheck(exec, {}, opt);
  const auto& b = r.builds;
  std::printf("  build pair: false positives %.2f%%, planted +3%% detected %.1f%%, MDE %.2f%%\n",
              100 * b.false_positives.rate, 100 * b.detections.at(0).rate.rate,
              100 * b.minimum_detectable_effect);
  ASSERT_EQ(b.detections.size(), 1u);
  EXPECT_DOUBLE_EQ(b.detections[0].injected, 0.03);
  const auto rate =
      k3stats::clopper_pearson(b.false_positives.successes, b.false_positives.trials, 0.99);
  EXPECT_LE(rate.low, 0.05);
  EXPECT_GE(rate.high, 0.039);
  EXPECT_GT(b.detections[0].rate.rate, 0.9);
  EXPECT_NEAR(b.detections[0].measured_mean, 0.03, 0.005);
  EXPECT_LT(b.minimum_detectable_effect, r.minimum_detectable_effect / 3);
  EXPECT_EQ(b.processes, 1 + 2000 * 2 * 8);  // the probe, then A vs A and planted, 8 each
  EXPECT_EQ(r.cells.at(0).builds.processes, b.processes);
  // The within design of one build ran beside it in the same trials (within_processes > 0).
  EXPECT_EQ(r.within.processes, 8 * 2 * 2000);
  // A second build that plants nothing cannot stand for the planted one.
  opt.trials = 1;
  opt.build_pair_planted = opt.build_pair_plugin;
  try {
    k3bench::run_selfcheck(exec, {}, opt);
    ADD_FAILURE() << "a build pair without a planted slowdown was accepted";
  } catch (const k3bench::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "selfcheck: --build-pair: build/runner/libk3bench_plugin.so: plants no slowdown "
              "(its build.planted_slowdown_percent; build libk3bench_plugin_planted.so)");
  }
}

TEST(HarnessSelfcheck, PricedProcessCountReachesTheTargetMde) {
  // Where the budget cannot reach a 5% MDE the selfcheck prices it: MDE x sqrt(processes) is
  // about constant, so the processes a 5% MDE needs follow from the measured MDE. Measuring again
  // with that count (fixed, no two-stage) must give an MDE of about 5% -- at most a little above
  // (the extrapolation keeps the first stage's wider t quantile, so it errs on the safe side).
  const k3bench::NoiseModel noise{
      .base_ns = 1e5, .between = 0.08, .within = 0.005, .drift = 0.05, .drift_correlation = 0.98};
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 200;
  opt.target_mde = 0.05;
  opt.rounds = {.min_processes = 5, .max_processes = 16, .target_ci = 0.03};
  k3bench::SyntheticExecutor first(noise, 11);
  const auto at_budget = k3bench::run_selfcheck(first, {}, opt);
  const auto& cell = at_budget.cells.at(0);
  ASSERT_GT(cell.minimum_detectable_effect, 0.07) << "the budget should not reach 5% here";
  const int priced = static_cast<int>(std::ceil(cell.processes_for_target_mde));
  EXPECT_GT(priced, 16);
  opt.rounds = {.min_processes = priced, .max_processes = priced, .target_ci = 0};
  k3bench::SyntheticExecutor second(noise, 12);
  const auto at_priced = k3bench::run_selfcheck(second, {}, opt);
  std::printf("  MDE %.2f%% at 5..16 processes -> %d processes priced -> MDE %.2f%%\n",
              100 * cell.minimum_detectable_effect, priced,
              100 * at_priced.minimum_detectable_effect);
  EXPECT_LE(at_priced.minimum_detectable_effect, 0.05 * 1.05);
  EXPECT_GE(at_priced.minimum_detectable_effect, 0.05 * 0.8);
}

TEST(HarnessSelfcheck, TheBuildPairAloneIsPricedAtTheTargetMde) {
  // selfcheck stats --only-build-pair (whole-model cells, where a rounds trial of five
  // configurations would cost minutes): only the build pair's processes run, the rounds figures
  // stay empty, and the price of a target MDE (1% here) is the processes per verdict that
  // measuring again at that count confirms.
  const k3bench::NoiseModel noise{
      .base_ns = 1e5, .between = 0.08, .within = 0.02, .drift = 0.05, .drift_correlation = 0.98};
  k3bench::SelfcheckOptions opt;
  opt.cells = {synthetic_cell()};
  opt.trials = 300;
  opt.compare.min_effect = 0;
  opt.target_mde = 0.01;
  opt.within_processes = 10;
  opt.injected_designs = false;
  opt.build_pair_plugin = "build/runner/libk3bench_plugin.so";
  opt.build_pair_planted = "build/runner/libk3bench_plugin_planted.so";
  k3bench::SyntheticExecutor first(noise, 31);
  const auto r = k3bench::run_selfcheck(first, {}, opt);
  const auto& b = r.builds;
  EXPECT_EQ(r.within.processes, 0);
  EXPECT_FALSE(r.cells.at(0).rounds_measured);
  EXPECT_EQ(r.false_positives.trials, 0);
  EXPECT_EQ(r.processes, 1 + b.processes);  // the calibration process, then the build pair's
  EXPECT_EQ(b.processes, 1 + 300 * 2 * 10);  // its probe, then A vs A and planted, 10 each
  ASSERT_GT(b.minimum_detectable_effect, 0.012) << "10 processes should not reach 1% here";
  EXPECT_NEAR(b.processes_for_target_mde,
              10 * std::pow(b.minimum_detectable_effect / 0.01, 2), 1e-9);
  EXPECT_NEAR(b.verdict_wall_s_for_target_mde / b.verdict_wall_s,
              std::pow(b.minimum_detectable_effect / 0.01, 2), 1e-9);
  const int priced = static_cast<int>(std::ceil(b.processes_for_target_mde));
  opt.within_processes = priced;
  opt.trials = 100;
  k3bench::SyntheticExecutor second(noise, 32);
  const auto again = k3bench::run_selfcheck(second, {}, opt);
  std::printf("  build pair: MDE %.2f%% at 10 processes -> %d priced -> MDE %.2f%%\n",
              100 * b.minimum_detectable_effect, priced,
              100 * again.builds.minimum_detectable_effect);
  EXPECT_LE(again.builds.minimum_detectable_effect, 0.01 * 1.1);
  EXPECT_GE(again.builds.minimum_detectable_effect, 0.01 * 0.8);
}

}  // namespace
