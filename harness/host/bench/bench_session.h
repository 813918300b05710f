// One `k3tune bench` run as a library call: validate the grid against the runner's catalog, record
// the build(s) -- the runner under test and, optionally, a kept baseline runner measured
// interleaved with it -- then run the sweep into the database. Printing is the caller's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/host/bench/build_pairing.h"
#include "harness/host/bench/grid.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/targets/runner_facts.h"
#include "harness/host/targets/target.h"

namespace k3bench {

struct BenchRequest {
  GridRequest grid;
  MeasureSettings settings;                 // defaults, with command-line values applied
  std::vector<std::string> settings_given;  // measurement keys given on the command line
  ProcessPlan plan;                         // process counts from the command line
  std::string baseline_runner;              // a second runner binary measured A B A B
  std::string baseline_build;               // ... or a build hash from the database
  // Both builds in one process where they allow it (build_pairing.h), or always rounds.
  BuildPairingMode build_pairing = BuildPairingMode::kAuto;
  // A tuning table against the defaults (model --table): the cells that differ only in their
  // table setting are one paired group, measured in the same rounds like two builds.
  bool pair_tables = false;
  double timeout_s = 0;
  bool resume = false;
  bool remeasure_disturbed = true;
  double wide_ci = 0.05;
  bool progress = true;
  std::string command_line;
  std::string db_path;
};

struct BenchOutcome {
  SweepReport report;
  std::vector<SweepBuild> builds;  // [baseline,] candidate
  std::vector<std::unique_ptr<k3targets::Target>> baseline_targets;
  BuildPairing pairing;      // how the two builds were compared (an A/B only)
  MeasureSettings settings;  // the sweep's defaults after the config file
  RoundsOptions rounds;
  double total_wall_s = 0;  // the whole command, catalog query and database included
};

BenchOutcome run_bench(const k3targets::Target& target, const std::string& root,
                       const BenchRequest& request);

// Process counts from the command line's plan: fixed (-P without a target CI) or adaptive
// (Stein's two stages up to the maximum). Throws UserError when the maximum is below the minimum.
RoundsOptions rounds_from_plan(const ProcessPlan& plan, bool remeasure_disturbed);

// A build row for a runner k3tune did not build itself, from what the runner reports about itself.
k3store::BuildRecord build_from_runner(const k3targets::Target& target, const std::string& hash);
// The same from facts already read (k3bench --facts); runner_facts reads them (UserError when the
// runner cannot say).
k3store::BuildRecord build_from_facts(const k3targets::Target& target, const std::string& hash,
                                      const k3targets::RunnerFacts& facts);
k3targets::RunnerFacts runner_facts(const k3targets::Target& target);

}  // namespace k3bench
