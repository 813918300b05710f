// What every k3tune subcommand shares: the source root, the database path, the targets file,
// output mode, and the error type whose message is printed as the one line a user sees.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/scheduler/scheduler.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/targets/target.h"

namespace k3cli {

// Exit codes (also in --help).
enum Exit : int {
  kOk = 0,
  kProblems = 1,
  kUsage = 2,
  kCellsFailed = 3,
  kRegressions = 4,
  kReportFailed = 5
};

struct AppContext {
  std::string root;               // source tree: configs/, build trees, scripts/
  std::string db;                 // results database
  std::string targets_file;       // default <root>/configs/targets.toml
  bool json = false;              // machine output on stdout
  bool quiet = false;             // no progress line even on a terminal
  std::vector<std::string> argv;  // the command line as given (a Slurm job re-runs its bench part)

  std::string models_dir() const { return root + "/configs/models"; }
  std::string db_path() const;       // --db, else $K3TUNE_DB, else <root>/results/k3tune.db
  std::string targets_path() const;  // --targets, else <root>/configs/targets.toml
  // Loads the named target from targets_file; UserError listing known names when unknown.
  std::unique_ptr<k3targets::Target> target(const std::string& name) const;
  // This process as a farm's scheduler sees it (a job runs its subcommand again).
  k3scheduler::Caller caller() const { return {root, db_path(), targets_file, argv, json, quiet}; }
};

// k3tune's global options (into `ctx`), its footer and every subcommand; `ctx` outlives the parse
// and the callbacks. main() parses with it, and so does the launcher's round-trip test.
void add_k3tune_cli(CLI::App& app, AppContext& ctx);

// Each subcommand registers itself; `ctx` outlives the parse and the callbacks.
void add_doctor_command(CLI::App& app, AppContext& ctx);
void add_build_command(CLI::App& app, AppContext& ctx);
void add_probe_command(CLI::App& app, AppContext& ctx);
void add_tcm_command(CLI::App& app, AppContext& ctx);
void add_bench_command(CLI::App& app, AppContext& ctx);
void add_db_command(CLI::App& app, AppContext& ctx);
void add_compare_command(CLI::App& app, AppContext& ctx);
void add_selfcheck_command(CLI::App& app, AppContext& ctx);
void add_tune_command(CLI::App& app, AppContext& ctx);
void add_tune_gates_command(CLI::App& app, AppContext& ctx);
void add_table_command(CLI::App& app, AppContext& ctx);
// `table verify`, registered by add_table_command under `table`.
void add_table_verify_command(CLI::App* table, AppContext& ctx);
void add_farm_command(CLI::App& app, AppContext& ctx);
void add_report_command(CLI::App& app, AppContext& ctx);
void add_publish_command(CLI::App& app, AppContext& ctx);
void add_model_command(CLI::App& app, AppContext& ctx);
void add_nightly_command(CLI::App& app, AppContext& ctx);
void add_bisect_command(CLI::App& app, AppContext& ctx);
void add_count_command(CLI::App& app, AppContext& ctx);

// The result code a subcommand callback leaves for main() to return.
int& exit_code();

}  // namespace k3cli
