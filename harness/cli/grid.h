// The benchmark grid: ops x shapes x parameter grids, from the command line, from a bench config
// file, or from a model's shape list (configs/models/NAME.toml), each expanded to canonical cells.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog.h"

namespace k3tune {

struct CellSpec {
  std::string op;
  nlohmann::json shape, params;  // canonical typed objects (catalog-normalised, defaults filled)
  std::string role;              // e.g. "q_proj" for model shapes; informational
  std::string label() const;     // "linear_decode n=96,k=256 [workers=2]" for progress and tables
};

struct MeasureSettings {
  int processes = 3;
  int repetitions = 5;
  int warmup = 2;
  double min_time_s = 0.2;       // per repetition
  std::int64_t iterations = 0;   // fixed calls per repetition instead of min_time (0: automatic)
  std::string check = "sample";  // the runner's accuracy check before timing
  std::string path = "auto";     // kernel layer requested from the runner
  double extra_work_ns = 0;      // calibrated extra work per call (selfcheck only)
  nlohmann::json to_json() const;
  // The runner arguments that measure `cell` with these settings.
  std::vector<std::string> runner_args(const CellSpec& cell) const;
};

struct GridRequest {
  std::vector<std::string> ops;     // --op (repeatable)
  std::vector<std::string> shapes;  // --shape k=v,... (repeatable)
  std::vector<std::string> grid;    // --grid key=v1,v2,... (repeatable): a cartesian product
  std::string params;               // --params k=v,... fixed for every cell
  std::string config;               // --config FILE (TOML)
  std::string model;                // --model NAME (configs/models/NAME.toml); --op filters it
};

// Throws UserError (file:line: key: what for TOML files) on any bad input.
std::vector<CellSpec> expand_grid(const GridRequest& request, const Catalog& catalog,
                                  const std::string& models_dir, MeasureSettings& settings);

}  // namespace k3tune
