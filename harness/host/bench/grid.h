// The benchmark grid: ops x shapes x parameter grids, from the command line, from a bench config
// file, or from a model's dimensions (configs/models/NAME.toml: its op cells, or its whole-model
// prefill/decode cells), each expanded to canonical cells.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/measure_settings.h"
#include "harness/host/bench/model_runs.h"

namespace k3bench {

struct CellSpec {
  std::string op;
  nlohmann::json shape, params;  // canonical typed objects (catalog-normalised, defaults filled)
  MeasureSettings settings;      // how it is measured (sweep defaults, plus per-cell grid keys)
  std::string role;              // e.g. "q_proj" for model shapes; informational
  std::string label() const;     // "linear_decode n=96,k=256 (q_proj)" for progress and tables
  // The settings that differ from `base`, as "k=v,..." ("" when none): what a table must show.
  std::string settings_diff(const MeasureSettings& base) const;
};

// How many processes a cell gets: from a config's [measure] table or the command line.
struct ProcessPlan {
  int processes = 0;      // 0: the default
  int max_processes = 0;  // 0: the default
  double target_ci = -1;  // < 0: the default; 0: off (fixed process count)
  // > 0 (A/B only): sequential rounds until the signed-rank test's minimum detectable effect is at
  // most this (instead of Stein's N), or the wall-time budget ends (RoundsOptions::target_mde).
  double mde = 0;
  double mde_budget_s = 0;  // 0: the default
};

struct GridRequest {
  std::vector<std::string> ops;     // --op (repeatable)
  std::vector<std::string> shapes;  // --shape k=v,... (repeatable)
  std::vector<std::string> grid;    // --grid key=v1,v2,... (repeatable): a cartesian product
  std::string params;               // --params k=v,... fixed for every cell
  std::string config;               // --config FILE (TOML)
  std::string model;                // --model NAME (configs/models/NAME.toml); --op filters it
  ModelRuns model_runs;             // non-empty: the model's whole-model cells (k3tune model)
};

// Throws UserError (file:line: key: what for TOML files) on any bad input. `settings` are the
// defaults; a config's [measure] table changes them only where the command line did not
// (`given_on_command_line` names those keys), and its process keys fill `plan` likewise.
std::vector<CellSpec> expand_grid(const GridRequest& request, const Catalog& catalog,
                                  const std::string& models_dir, MeasureSettings& settings,
                                  ProcessPlan& plan,
                                  const std::vector<std::string>& given_on_command_line = {});

}  // namespace k3bench
