// One runner process for one cell: spawn on the target with a timeout, parse the runner's JSON,
// turn it into samples (outliers flagged within the process), or into a failure with its reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grid.h"
#include "results.h"
#include "target.h"

namespace k3tune {

struct ProcessOutcome {
  bool ok = false;
  std::optional<int> exit_code;
  std::string reason;  // why it failed
  std::int64_t wall_ns = 0;
  double kernel_ns = 0;  // sum over repetitions of ns per call x calls: time inside the kernel
  std::vector<k3store::SampleRecord> samples;
  std::string path;       // kernel layer the runner took
  nlohmann::json runner;  // dispatch, accuracy, params used, traffic, counters, environment
  double mean_ns() const;
};

ProcessOutcome run_cell_process(const k3targets::Target& target, const CellSpec& cell,
                                const MeasureSettings& settings,
                                const k3targets::ProcessOptions& options,
                                bool check_accuracy = true);

}  // namespace k3tune
