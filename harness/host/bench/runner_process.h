// One runner process for one cell: spawn on the target with a timeout, parse the runner's JSON,
// turn it into samples (outliers flagged within the process, disturbances as the runner saw them),
// or into a failure with its reason. ProcessExecutor is the seam the sweep measures through: the
// real one runs k3bench on a build's target; the synthetic one (synthetic_runner.h) draws times
// from a known noise model so the statistics can be checked where the truth is known.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/grid.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/target.h"

namespace k3bench {

struct ProcessOutcome {
  bool ok = false;
  std::optional<int> exit_code;
  std::string reason;  // why it failed
  std::int64_t wall_ns = 0;
  double kernel_ns = 0;  // sum over repetitions of ns per call x calls: time inside the kernel
  double warmup_s = 0;   // warm-up and calibration calls
  std::int64_t iterations = 0;  // calls per repetition the runner used (its calibration, or given)
  bool disturbed = false;       // some repetition was disturbed (see the samples' flags)
  std::vector<k3store::SampleRecord> samples;
  std::string path;       // kernel layer the runner took
  nlohmann::json timing;  // the runner's split: setup_s, check_s, warmup_s, measured_s, total_s
  nlohmann::json runner;  // dispatch, accuracy, params used, traffic, counters, environment
  // Each sample's side when the process alternates two sides ('A' / 'B': alternating extra work
  // or a second parameter set, MeasureSettings::alternate_extra_work / params_b), else empty.
  std::string sides;
  double mean_ns() const;
  // The within-process comparison: the geometric means of the A and of the B repetitions. False
  // when the samples carry no sides or a side has none.
  bool side_means(double& a_ns, double& b_ns) const;
};

// A build of the runner to measure on: its target (which says where and how it runs) and the
// SHA-256 of its binary (the build identity in the database).
struct SweepBuild {
  const k3targets::Target* target = nullptr;
  std::string build_hash;
  std::string label;  // "" for a single build; "baseline" / "candidate" when two are compared
};

class ProcessExecutor {
 public:
  virtual ~ProcessExecutor() = default;
  // Runs process `process_index` of `cell` on `build`; `iterations` > 0 fixes the calls per
  // repetition (0: the runner calibrates); only accuracy-checked when `check_accuracy`.
  virtual ProcessOutcome run(const SweepBuild& build, const CellSpec& cell, int process_index,
                             bool check_accuracy, std::int64_t iterations, double timeout_s) = 0;
};

// Runs the real runner of each build on its target.
class RunnerExecutor final : public ProcessExecutor {
 public:
  ProcessOutcome run(const SweepBuild& build, const CellSpec& cell, int process_index,
                     bool check_accuracy, std::int64_t iterations, double timeout_s) override;
};

// A process that measured two builds (k3bench --build-b) as two processes of one round: side A's
// repetitions for the runner's own build, side B's for the plugin's, each with its own dispatch,
// accuracy, parameters and traffic (B's from the result's *_b fields). The wall and warm-up time
// are split evenly; each side's timing says it shared its process. Needs the sides of every sample.
std::pair<ProcessOutcome, ProcessOutcome> split_build_sides(const ProcessOutcome& both);

// Parses a runner's JSON result (exposed for the synthetic runner and tests).
ProcessOutcome outcome_from_runner_json(const std::string& out, int expected_repetitions);

ProcessOutcome run_cell_process(const k3targets::Target& target, const CellSpec& cell,
                                const k3targets::ProcessOptions& options,
                                bool check_accuracy = true, std::int64_t iterations = 0);

}  // namespace k3bench
