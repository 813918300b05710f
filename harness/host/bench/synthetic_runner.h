// A runner whose times come from a known noise model, for checking the statistics where the truth
// is known: each process draws its own level (log-normal, sd `between`), on top of the machine's
// slow drift (a log-normal AR(1) factor shared by consecutive processes: sd `drift`, correlation
// `drift_correlation` from one process to the next -- measured on the shared VM: about 5% and
// 0.6), and each repetition adds its own noise (log-normal, sd `within`). A cell's true per-call
// time is `base_ns` plus its settings' extra_work_ns -- exactly the slowdown the selfcheck injects
// on a real runner -- so the size of every difference is known. Seeded: the same seed gives the
// same draws.
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
