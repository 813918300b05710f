// The benchmark sweep: C cells x P processes, interleaved by rounds (round p runs process p of
// every cell in grid order: A B C A B C ...), so slow drifts (thermal, frequency, other tenants)
// hit every configuration alike instead of biasing whichever ran last. Nothing is randomised; the
// order is recorded (runs.order_json, processes.order_index). Each finished process is committed
// with its samples at once; a cell's aggregate is written when its last process finishes.
#pragma once

#include <string>
#include <vector>

#include "grid.h"
#include "results.h"
#include "sqlite.h"
#include "stats.h"
#include "target.h"

namespace k3tune {

struct SweepOptions {
  MeasureSettings settings;
  double timeout_s = 0;  // per runner process (0: the target's timeout_s)
  bool resume = false;   // skip measured cells; adopt processes of interrupted runs
  bool progress = true;
  k3stats::CellSummaryOptions stats;
  std::string command_line;
};

struct CellOutcome {
  CellSpec spec;
  std::string cell_key;
  std::string skipped;  // non-empty: not measured in this run, and why
  int adopted = 0;      // processes taken over from interrupted runs
  bool has_aggregate = false;
  k3store::AggregateRecord aggregate;
  std::vector<double> process_means;
};

struct SweepReport {
  std::string run_uuid;
  std::vector<CellOutcome> cells;
  int processes_run = 0, processes_failed = 0;
  double wall_s = 0;        // sweep wall time (runner processes + k3tune's own work)
  double child_wall_s = 0;  // sum of runner process wall times
  double kernel_s = 0;      // sum of measured kernel time
  int failed_cells() const;
};

// The cell identity: target, op, shape, params, build and measurement settings.
std::string cell_key(const k3targets::Target& target, const CellSpec& cell,
                     const std::string& build_hash, const MeasureSettings& settings);

SweepReport run_sweep(k3store::Connection& db, const k3targets::Target& target,
                      const std::string& build_hash, const std::vector<CellSpec>& cells,
                      const SweepOptions& options);

// Aggregate of one cell from its per-process repetition times (shared with compare and selfcheck).
k3store::AggregateRecord aggregate_of(const std::vector<std::vector<double>>& per_process,
                                      const k3stats::CellSummaryOptions& opt);

std::string new_uuid();

}  // namespace k3tune
