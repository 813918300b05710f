// `k3tune selfcheck stats`: what the measurement protocol can see on a target, measured rather than
// assumed. Each trial measures, per representative cell, five configurations interleaved with the
// default (adaptive) process budget: A, A' (the same), and A with +3%, +5% and +10% calibrated
// extra work per call. The A/B test's verdict on A vs A' is a false positive when it calls a
// change; on A vs A+x it is a detection when it calls B slower. Rates come with exact binomial
// intervals; the noise floor is the spread of the relative A-vs-A difference at that budget, and
// the minimum detectable effect is the median over trials of the A-vs-A comparison's MDE at power
// 0.8.
//
// The within-process design is measured in the same trials, next to it: A and B are the two sides
// of every process (repetitions alternate A B, B A, ... with the extra work on side B; k3bench
// --extra-work-sides abba), each process gives one paired ratio of its B and A repetitions, and
// the same paired test judges a fixed number of processes. The spread between processes, most of
// the spread on a shared machine, is then common to both sides. The build pair applies it to two
// builds (k3bench --build-b: the second build's kernel plugin in a link namespace of its own):
// A against the same source built twice, and A against a build with a slowdown compiled in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/host/bench/grid.h"
#include "harness/host/bench/rounds.h"
#include "harness/host/bench/runner_process.h"
#include "harness/host/stats/binomial.h"
#include "harness/host/stats/stats.h"

namespace k3bench {

struct SelfcheckOptions {
  std::vector<CellSpec> cells;  // representative cells, measured with their own settings
  int trials = 40;              // in all: trial t measures cell t mod cells
  std::vector<double> slowdowns = {0.03, 0.05, 0.10};
  RoundsOptions rounds;  // the budget each configuration gets (the bench default)
  k3stats::CompareOptions compare;
  double time_budget_s = 0;  // > 0: start no new trial after this long (the report says so)
  double timeout_s = 300;    // per runner process
  double target_mde = 0.05;  // the effect the report prices in processes and wall time
  // Processes per within-process verdict; 0: that design is not measured (no verdict of bench or
  // tune uses it yet). The signed-rank test needs 6 for p < 0.05 at all; 8 is the CLI's choice.
  int within_processes = 0;
  // The within design's budget as table verify sets it: after within_processes, one more process
  // of a configuration at a time until the signed-rank test's sign-free MDE (from the magnitudes
  // of its per-process log ratios) is at most within_mde, or within_max_processes. 0: exactly
  // within_processes.
  double within_mde = 0;
  int within_max_processes = 16;
  // The build pair (k3bench --build-b), measured with the within design's budget when both are
  // set: A against the runner's own kernel plugin (the same source built twice, loaded in two link
  // namespaces: A vs A across builds), and A against the planted build (a slowdown compiled in; its
  // size is what that plugin reports). Paths where the runner runs; empty: not measured.
  std::string build_pair_plugin, build_pair_planted;
  // false: the build pair alone, neither the rounds design nor the within design of injected
  // extra work (five configurations a trial between them): for whole-model cells, where one
  // process takes seconds. Needs the build pair.
  bool injected_designs = true;
};

struct Detection {
  double injected = 0;       // relative slowdown added
  double extra_work_ns = 0;  // per call, on this cell
  k3stats::Proportion rate;  // trials whose verdict was "B slower"
  double measured_mean = 0;  // mean measured relative difference
};

// The within-process design's figures (of one cell, or pooled).
struct WithinProcessSelfcheck {
  k3stats::Proportion false_positives;
  std::vector<Detection> detections;
  std::vector<double> aa_differences;    // relative B - A of the A-vs-A comparison per trial
  double noise_floor = 0;                // sd of aa_differences
  double minimum_detectable_effect = 0;  // median per-trial MDE (A vs A)
  int processes_per_verdict = 0;       // the first look (all of them with a fixed count)
  double mde_target = 0;               // SelfcheckOptions::within_mde
  int max_processes = 0;               // SelfcheckOptions::within_max_processes, when adaptive
  double mean_processes_per_verdict = 0;  // counted processes per verdict, over all verdicts
  int repetitions_per_side = 0;
  int processes = 0;          // runner processes spent on this design
  double verdict_wall_s = 0;  // mean wall time of one verdict's processes
  // What an MDE of SelfcheckOptions::target_mde would cost in this design: the MDE shrinks as
  // 1/sqrt(processes), so mean_processes_per_verdict x (MDE / target)^2 processes per
  // configuration, verdict_wall_s scaled likewise; 0 when no MDE was measured.
  double processes_for_target_mde = 0;
  double verdict_wall_s_for_target_mde = 0;
};

struct CellSelfcheck {
  CellSpec cell;
  bool rounds_measured = true;  // SelfcheckOptions::injected_designs: the figures below are its
  double base_ns = 0;     // per call, from the calibration process
  std::string cpu_model;  // as the runner reported it (noise floors are kept per target and CPU)
  std::int64_t iterations = 0;
  int trials = 0;
  k3stats::Proportion false_positives;
  std::vector<Detection> detections;
  std::vector<double> aa_differences;  // relative A' - A per trial
  double noise_floor = 0;              // sd of aa_differences
  double abs_diff_q95 = 0;
  double minimum_detectable_effect = 0;  // median per-trial MDE (A vs A')
  double mean_processes = 0;             // per configuration and trial
  int processes = 0;                     // runner processes spent on this cell
  int processes_at_max = 0;              // configuration-trials that stopped at the ceiling
  double process_wall_s = 0;  // trial wall time per counted process (re-measured ones included)
  // What a minimum detectable effect of `target_mde` would cost here: the MDE shrinks as
  // 1/sqrt(processes), so mean_processes x (MDE / target)^2 processes per configuration, and an
  // A/B verdict (two configurations) takes twice that many processes of process_wall_s each.
  double processes_for_target_mde = 0;
  double verdict_wall_s_for_target_mde = 0;
  double verdict_wall_s = 0;  // mean wall time of one A/B verdict's processes (both sides)
  WithinProcessSelfcheck within;
  WithinProcessSelfcheck builds;  // the build pair (SelfcheckOptions::build_pair_plugin)
};

struct SelfcheckResult {
  std::vector<CellSelfcheck> cells;
  int trials = 0;  // completed on every cell
  bool cut_by_time_budget = false;
  k3stats::Proportion false_positives;   // pooled over cells
  std::vector<Detection> detections;     // pooled over cells
  double noise_floor = 0;                // the largest of the cells'
  double minimum_detectable_effect = 0;  // the largest of the cells'
  int processes = 0;
  double wall_s = 0;
  // The whole selfcheck (its trials, five configurations each) at the processes a minimum
  // detectable effect of target_mde needs on every cell.
  double wall_s_for_target_mde = 0;
  WithinProcessSelfcheck within;  // pooled; MDE and noise floor the largest of the cells'
  WithinProcessSelfcheck builds;  // the build pair, pooled likewise
};

// progress(done trials, total trials, note)
SelfcheckResult run_selfcheck(
    ProcessExecutor& executor, const SweepBuild& build, const SelfcheckOptions& options,
    const std::function<void(int, int, const std::string&)>& progress = {});

}  // namespace k3bench
