// One run as the reports see it, read from the results database: the run's provenance (command,
// target, host, builds with compiler, flags and source revision, the environment its runner saw)
// and, per cell, the figures a verdict needs: the counted process means with their rounds, the
// aggregate (mean, 95% CI, CV), the runner's accuracy block of the cell's checked process (worst
// error/bound ratio, output checksum) and the work of one call (bytes, operations) for the
// roofline. Times are nanoseconds per call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"
#include "harness/host/verdict/value_text.h"

namespace k3verdict {

struct BuildInfo {
  std::string build_hash, label;  // label: "" for a run of one build, else baseline / candidate
  std::string variant, binary_path, compiler, flags, cmake_options, source_revision, recorded_by,
      created_at;
  std::optional<bool> source_dirty;
};

struct CellFigures {
  std::string config_key;  // identity across runs and builds: target, op, shape, params, and the
                           // measurement settings that change what is measured (path, cpus, ...)
  std::string cell_key, build_hash, target, op, label, model;
  nlohmann::json shape, params, measure;
  bool ok = false;
  std::string reason;  // why the cell failed (or was not finished)
  int processes = 0, excluded_processes = 0;
  std::optional<double> mean_ns, ci_low_ns, ci_high_ns, cv_between, median_ns, min_ns;
  bool wide_ci = false;
  std::vector<double> process_means;  // counted processes, in round order
  std::vector<int> process_rounds;    // process_index of each (the round it ran in)
  std::string path;                   // kernel layer the runner took
  // From the runner JSON of the cell's accuracy-checked process.
  std::optional<double> error_to_bound, max_abs_err;
  std::optional<bool> accuracy_pass;
  std::string output_checksum;  // FNV-1a 64 hex, "" when the runner gave none
  std::optional<double> bytes_per_call, ops_per_call;
  // What a call streams from memory (weights, their metadata, KV cache read and written, states:
  // traffic.by_source.streamed; a whole-model count's phase: its bytes_per_token.streamed), from
  // the kernels' own accounting: exact, a function of the op, shape, parameters and path, so two
  // counts of the same case compare without a tolerance.
  std::optional<double> streamed_bytes;
};

struct RunData {
  std::string run_uuid, command, target, build_hash, host, started_at, finished_at, status;
  std::string model;  // --model of the command line, "" when none
  std::optional<double> wall_s, kernel_s, warmup_s, overhead_s;
  nlohmann::json settings;     // process plan and builds compared (runs.settings_json)
  PerCall per_call;            // what the per-call figures (mean_ns, ...) hold
  nlohmann::json environment;  // of the run's first successful process
  std::string cpu_model, marchid, arch;
  std::vector<BuildInfo> builds;  // every build measured in the run; the run's own build last
  std::vector<CellFigures> cells;
  int processes_ok = 0, processes_failed = 0, processes_disturbed = 0;

  const BuildInfo* build(const std::string& hash) const;
  // The label of a build within this run ("" for a run of one build).
  std::string build_label(const std::string& hash) const;
};

// The run whose id starts with `run_prefix` (VerdictError when none or several match).
RunData load_run(k3store::Connection& db, const std::string& run_prefix);
// The latest run in the database (VerdictError when there is none).
std::string latest_run(k3store::Connection& db);
// The most recent run before `run` on the same target sharing at least one configuration with
// it, or "" when there is none.
std::string previous_comparable_run(k3store::Connection& db, const RunData& run);

// "--model NAME" of a command line, or "".
std::string model_of_command(const std::string& command);
// The configuration identity (see CellFigures::config_key) and its readable label parts.
std::string config_key(const std::string& target, const std::string& op,
                       const nlohmann::json& shape, const nlohmann::json& params,
                       const nlohmann::json& measure);
std::string shape_text(const nlohmann::json& shape);  // "n=2048,k=2048"

}  // namespace k3verdict
