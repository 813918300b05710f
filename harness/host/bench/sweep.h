// The benchmark sweep: cells x builds, measured by runner processes in interleaved rounds (round p
// runs process p of every unit still measuring, in grid order, builds alternating within a cell:
// A B A B ...), so slow drifts (thermal, frequency, other tenants) hit every configuration alike
// instead of biasing whichever ran last. How many processes each cell gets is the round planner's
// (rounds.h): a fixed count, or adaptive until the CI is narrow enough. The first process of a
// cell calibrates the calls per repetition and the others reuse that count, so no process spends
// time on estimation. Nothing is randomised; the order is recorded (runs.order_json,
// processes.order_index). Each finished process is committed with its samples at once; a cell's
// aggregate is written when it stops.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "harness/host/bench/build_pairing.h"
#include "harness/host/bench/grid.h"
#include "harness/host/bench/rounds.h"
#include "harness/host/bench/runner_process.h"
#include "harness/host/stats/stats.h"
#include "harness/host/store/database_access.h"
#include "harness/host/store/results.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/targets/target.h"

namespace k3bench {

struct SweepOptions {
  RoundsOptions rounds;
  double timeout_s = 0;  // per runner process (0: each build target's timeout_s)
  bool resume = false;   // skip measured cells; adopt processes of interrupted runs
  bool progress = true;
  k3stats::CellSummaryOptions stats;
  std::string command_line;
  std::string run_uuid;                 // "" : a fresh one (farm sweeps name their batch runs)
  ProcessExecutor* executor = nullptr;  // null: the real runner of each build
  // > 0: start no new round after this many seconds; the units still measuring end with the stop
  // reason "wall-time budget (MDE not reached)" (bench --mde).
  double wall_budget_s = 0;
  // Cells that differ only in their table setting form one group (a table against the defaults:
  // their processes alternate in the same rounds and a disturbed round is replaced on both).
  bool pair_tables = false;
  // How two builds are compared (build_pairing.h). Within one process: each round runs one
  // process per cell, the candidate's (builds[1]) runner with the baseline's plugin (builds[0]),
  // its A repetitions recorded as the candidate's process and its B repetitions as the
  // baseline's, both with the round's process index; twice the repetitions, so each side keeps a
  // process's worth. Stored with the run's settings either way.
  BuildPairing build_pairing;
};

struct CellOutcome {
  CellSpec spec;
  std::size_t build = 0;  // index into the sweep's builds
  std::string cell_key;
  std::string skipped;  // non-empty: not measured in this run, and why
  int adopted = 0;      // processes taken over from interrupted runs
  int disturbed = 0;    // processes kept but not counted (disturbed repetitions)
  bool has_aggregate = false;
  k3store::AggregateRecord aggregate;
  std::vector<double> process_means;  // of the counted processes, in order
  std::vector<int> process_rounds;    // the round (process index) of each, for pairing A with B
};

struct SweepReport {
  std::string run_uuid;
  std::vector<CellOutcome> cells;  // cells x builds, cell-major
  int processes_run = 0, processes_failed = 0, processes_disturbed = 0;
  double wall_s = 0;          // sweep wall time (runner processes + k3tune's own work)
  double child_wall_s = 0;    // sum of runner process wall times
  double kernel_s = 0;        // sum of measured kernel time (repetitions x calls)
  double warmup_s = 0;        // warm-up and calibration calls
  double check_s = 0;         // accuracy checks (first process of each cell)
  double runner_setup_s = 0;  // runner start-up to the first call: inputs, packing, copies
  double cache_build_s = 0;   // of which filling a cold weight cache (once per shape and machine)
  // One line when the machine was busy (at least half of the processes, and more than
  // kDisturbedNotes, disturbed; "" otherwise): said once, instead of a note per process.
  std::string busy_machine;
  int failed_cells() const;
};

// Disturbed processes noted one by one before the rest are summed up in one line at the end.
inline constexpr int kDisturbedNotes = 3;

// The one line for a sweep whose processes were mostly disturbed, or ""
// (SweepReport::busy_machine).
std::string busy_machine_line(int processes_run, int processes_disturbed,
                              const std::set<std::string>& flags);

// The cell identity: target, op, shape, params, build and measurement settings.
std::string cell_key(const k3targets::Target& target, const CellSpec& cell,
                     const std::string& build_hash);

// The means of two cells of one group (a baseline and a candidate) from the rounds both counted,
// aligned round by round: the input of the paired A/B test.
std::pair<std::vector<double>, std::vector<double>> paired_means(const CellOutcome& a,
                                                                 const CellOutcome& b);

SweepReport run_sweep(k3store::Connection& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& options);
// The same through `db`: a farm board's thread hands its rows to the controller's one writer
// (database_writer.h); a process counts as committed once the writer says so.
SweepReport run_sweep(k3store::DatabaseAccess& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& options);

// Aggregate of one cell from its per-process repetition times (shared with compare and selfcheck).
k3store::AggregateRecord aggregate_of(const std::vector<std::vector<double>>& per_process,
                                      const k3stats::CellSummaryOptions& opt);

std::string new_uuid();

}  // namespace k3bench
