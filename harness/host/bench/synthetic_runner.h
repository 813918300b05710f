// A runner whose times come from a known noise model, for checking the statistics where the truth
// is known: each process draws its own level (log-normal, sd `between`), on top of the machine's
// slow drift (a log-normal AR(1) factor shared by consecutive processes: sd `drift`, correlation
// `drift_correlation` from one process to the next -- measured on the shared VM: about 5% and
// 0.6), and each repetition adds its own noise (log-normal, sd `within`). A cell's true per-call
// time is `base_ns` plus its settings' extra_work_ns -- exactly the slowdown the selfcheck injects
// on a real runner -- so the size of every difference is known. Seeded: the same seed gives the
// same draws.
//
// Heavy tails, for the robust verdicts: with `between_df` > 0 a process's log level is `between`
// times a Student t variate with that many degrees of freedom (2-3: the rare far-off process of a
// shared machine; sd is infinite at 2), and with `contamination` > 0 a process is, with that
// probability, slowed by a further log factor |N(0, contamination_scale)| (another tenant's burst:
// one-sided, as real disturbances are).
#pragma once

#include <cstdint>
#include <random>

#include "harness/host/bench/runner_process.h"

namespace k3bench {

struct NoiseModel {
  double base_ns = 100000;
  double between = 0.05;             // sd of log process level
  double within = 0.01;              // sd of log repetition noise
  double disturbed_probability = 0;  // chance that a process reports a disturbed repetition
  double drift = 0;                  // sd of the log drift factor (stationary)
  double drift_correlation = 0;      // its correlation between consecutive processes
  double between_df = 0;             // > 0: Student t process levels with these degrees of freedom
  double contamination = 0;          // chance that a process is slowed by a disturbance
  double contamination_scale = 0.2;  // sd of the disturbance's log factor (one-sided)
  // A second build (MeasureSettings::build_b) is this one unless its file name says "planted"
  // (libk3bench_plugin_planted.so): then its calls are this much slower, as the real planted
  // build's are, and the process reports it as the real runner does (build_b).
  double planted_build = 0.03;
};

class SyntheticExecutor final : public ProcessExecutor {
 public:
  SyntheticExecutor(NoiseModel model, std::uint64_t seed) : model_(model), rng_(seed) {}
  ProcessOutcome run(const SweepBuild& build, const CellSpec& cell, int process_index,
                     bool check_accuracy, std::int64_t iterations, double timeout_s) override;
  int processes_run() const { return processes_; }

 private:
  NoiseModel model_;
  std::mt19937_64 rng_;
  int processes_ = 0;
  double drift_state_ = 0;  // log drift factor of the last process
};

}  // namespace k3bench
