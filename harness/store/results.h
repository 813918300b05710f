// Writes and reads of measurement results: builds, runs, cells, processes with their samples
// (one transaction per finished process, so a crash loses at most the process in flight) and
// per-cell aggregates; plus the queries --resume needs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sqlite.h"

namespace k3store {

struct BuildRecord {
  std::string build_hash, variant, binary_path, compiler, flags, cmake_options_json = "{}",
                                                                 source_revision;
  std::optional<bool> source_dirty;
  std::string recorded_by;  // "k3tune build" or "runner report"
};
// A record from `k3tune build` replaces one that bench derived from a runner report.
void upsert_build(Connection& c, const BuildRecord& b);
std::optional<BuildRecord> find_build(Connection& c, const std::string& build_hash);

struct RunRecord {
  std::string run_uuid, command, target, build_hash, host, order_json;
  int processes = 0, repetitions = 0, warmup = 0;
};
void insert_run(Connection& c, const RunRecord& r);
void finish_run(Connection& c, const std::string& run_uuid, double wall_s, double kernel_s);

struct CellRecord {
  std::string cell_key, target, op, shape_json, params_json, build_hash, measure_json;
};
void insert_cell(Connection& c, const CellRecord& cell);  // no-op when the cell exists

struct SampleRecord {
  double ns = 0, cpu_ns = 0;
  std::int64_t iterations = 0;
  std::map<std::string, double> counters;  // cycles, instructions, cache_misses, stalled_cycles_*
  bool outlier = false;
};
struct ProcessRecord {
  std::string run_uuid, cell_key;
  int process_index = 0, order_index = 0;
  bool ok = false;
  std::optional<int> exit_code;
  std::string reason, path, runner_json;
  std::int64_t wall_ns = 0;
  double kernel_ns = 0;
  std::vector<SampleRecord> samples;
};
// The process row and all its samples in one transaction.
void insert_process(Connection& c, const ProcessRecord& p);

struct AggregateRecord {
  std::string run_uuid, cell_key;
  bool ok = false;
  std::string reason, source_runs_json = "[]", method;
  int processes = 0, samples = 0, outliers = 0;
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

std::string now_utc();

}  // namespace k3store
