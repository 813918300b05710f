// Writes and reads of measurement results: builds, runs, cells, processes with their samples
// (one transaction per finished process, so a crash loses at most the process in flight) and
// per-cell aggregates; plus the queries --resume needs.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct BuildRecord {
  std::string build_hash, variant, binary_path, compiler, flags, cmake_options_json = "{}",
                                                                 source_revision;
  std::optional<bool> source_dirty;
  std::string recorded_by;  // "k3tune build" or "runner report"
  std::string created_at = {};  // read only: set when the row is first written
};
// A record from `k3tune build` replaces one that bench derived from a runner report.
void upsert_build(Connection& c, const BuildRecord& b);
std::optional<BuildRecord> find_build(Connection& c, const std::string& build_hash);
// The builds whose hash starts with `hash_prefix` (a build named by its first characters).
std::vector<BuildRecord> builds_with_prefix(Connection& c, const std::string& hash_prefix);
// The clean builds (source_dirty = 0) of a source revision and variant.
std::vector<BuildRecord> clean_builds(Connection& c, const std::string& source_revision,
                                      const std::string& variant);
std::vector<BuildRecord> all_builds(Connection& c);

struct RunRecord {
  std::string run_uuid, command, target, build_hash, host, order_json;
  int processes = 0, repetitions = 0, warmup = 0;
  std::string settings_json = "{}";  // process plan, builds compared
  // Read only (insert_run starts a run 'running' now; finish_run and mark_interrupted end it).
  std::string started_at = {}, finished_at = {};  // finished_at "" while running
  std::string status = {};                        // running | finished | interrupted
  std::optional<double> wall_s = {}, kernel_s = {}, warmup_s = {}, overhead_s = {};
};
void insert_run(Connection& c, const RunRecord& r);
// wall = kernel + warm-up + overhead (runner start-up, set-up, accuracy check, transfer, k3tune).
void finish_run(Connection& c, const std::string& run_uuid, double wall_s, double kernel_s,
                double warmup_s);

struct CellRecord {
  std::string cell_key, target, op, shape_json, params_json, build_hash, measure_json;
};
void insert_cell(Connection& c, const CellRecord& cell);  // no-op when the cell exists

struct SampleRecord {
  double ns = 0, cpu_ns = 0;
  std::int64_t iterations = 0;
  std::map<std::string, double> counters;  // cycles, instructions, cache_misses, stalled_cycles_*,
                                           // cpu_migrations, context_switches (per call)
  bool outlier = false;
  std::vector<std::string> flags;  // disturbances around the repetition ("frequency-change", ...)
};
struct ProcessRecord {
  std::string run_uuid, cell_key;
  int process_index = 0, order_index = 0;
  bool ok = false;
  std::optional<int> exit_code;
  std::string reason, path, runner_json;
  std::int64_t wall_ns = 0;
  double kernel_ns = 0;
  bool disturbed = false;   // a repetition was disturbed: kept, not counted in the aggregate
  std::string timing_json;  // the runner's split of its own wall time
  std::vector<SampleRecord> samples;
};
// The process row and all its samples in one transaction.
void insert_process(Connection& c, const ProcessRecord& p);

struct AggregateRecord {
  std::string run_uuid, cell_key;
  bool ok = false;
  std::string reason, source_runs_json = "[]", method;
  int processes = 0, samples = 0, outliers = 0;
  int excluded_processes = 0;  // disturbed processes left out of every figure
  std::string stop_reason;     // why the sweep stopped measuring the cell
  bool wide_ci = false;
  std::optional<double> mean_ns, ci_low_ns, ci_high_ns, ci_rel_half_width, cv_between, cv_all,
      min_ns, median_ns;
};
void insert_aggregate(Connection& c, const AggregateRecord& a);

// --resume support.
bool cell_has_ok_aggregate(Connection& c, const std::string& cell_key);
struct ProcessRef {
  std::string run_uuid;
  int process_index = 0;
};
// Successful processes of the cell measured by runs that never aggregated it (interrupted sweeps).
std::vector<ProcessRef> orphan_processes(Connection& c, const std::string& cell_key);
// Per-repetition times (ns) of the given processes of a cell, in repetition order.
std::vector<std::vector<double>> process_times(Connection& c, const std::string& cell_key,
                                               const std::vector<ProcessRef>& processes);
// Runs left 'running' by a killed k3tune become 'interrupted' once a resume adopts their data.
void mark_interrupted(Connection& c, const std::string& run_uuid);

// Whether a process of the cell was disturbed (by reference).
struct ProcessState {
  bool disturbed = false;
  std::int64_t iterations = 0;  // calls per repetition (its first sample's)
};
ProcessState process_state(Connection& c, const std::string& cell_key, const ProcessRef& p);

// The measured noise floor of a target (k3tune selfcheck stats).
struct NoiseFloorRecord {
  std::string target, cpu_model, op, shape_json, measured_at;
  int trials = 0;
  double mean_processes = 0, noise_floor = 0, abs_diff_q95 = 0;
  std::optional<double> minimum_detectable_effect;
  std::string settings_json = "{}";
};
void insert_noise_floor(Connection& c, const NoiseFloorRecord& r);
// The most recent noise floor of a target on a CPU model (any op), or nothing.
std::optional<NoiseFloorRecord> latest_noise_floor(Connection& c, const std::string& target,
                                                   const std::string& cpu_model);

std::int64_t sample_count(Connection& c);

std::string now_utc();
// The same with microseconds ("2026-12-02T23:10:04.123456Z"), for rows whose order within one
// second matters; sorts as text like now_utc().
std::string now_utc_us();
// A moment in the same form, whole seconds (".000000Z"): the bound of a query on such rows
// ("events since midnight", "since the night began").
std::string utc_us_at(std::time_t t);

}  // namespace k3store
