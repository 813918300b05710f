// k3tune: the harness CLI. Builds runner variants, probes targets, runs interleaved multi-process
// benchmark sweeps into an SQLite database, compares results, and checks its own statistics.
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "apps/cli/app_context.h"
#include "harness/host/farm/board.h"
#include "harness/host/farm/open_files.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/targets/build_presets.h"
#include "harness/host/targets/runner_facts.h"

namespace k3cli {

int& exit_code() {
  static int code = kOk;
  return code;
}

std::string AppContext::db_path() const {
  if (!db.empty()) return db;
  const char* env_db = std::getenv("K3TUNE_DB");
  return env_db ? env_db : root + "/results/k3tune.db";
}

std::string AppContext::targets_path() const {
  return targets_file.empty() ? root + "/configs/targets.toml" : targets_file;
}

std::unique_ptr<k3targets::Target> AppContext::target(const std::string& name) const {
  std::map<std::string, k3targets::TargetConfig> configs;
  const std::string targets_file = targets_path();
  try {
    configs = k3targets::load_target_configs(targets_file);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
  auto it = configs.find(name);
  if (it == configs.end()) {
    std::string known;
    for (const auto& [n, c] : configs) known += (known.empty() ? "" : ", ") + n;
    throw k3bench::UserError(
        fmt::format("--target: unknown target '{}' (known in {}: {})", name, targets_file, known));
  }
  try {
    return k3targets::make_target(it->second, root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

}  // namespace k3cli

int main(int argc, char** argv) {
  using namespace k3cli;
  // Soft open-file limit up to the hard one, for this process and all it starts: a farm of many
  // boards holds ~10 descriptors per board (farm commands refuse a farm beyond the hard limit).
  k3farm::raise_open_file_limit();
  AppContext ctx;
  const char* env_root = std::getenv("K3TUNE_ROOT");
  ctx.root = env_root ? env_root : K3TUNE_SOURCE_DIR;
  ctx.argv.assign(argv, argv + argc);
  CLI::App app{"k3tune: autotuning and benchmarking harness for the SpacemiT K3"};
  app.footer(
      "Exit codes: 0 ok; 1 problems found (doctor, db check; bisect: not reproduced); 2 bad input "
      "(nothing written); "
      "3 bench finished but some cells failed (report, compare: cells of the run failed); "
      "4 report, compare: regressions in the verdict; 5 report, compare: no report could be "
      "produced.\nEnvironment: K3TUNE_ROOT (source tree), K3TUNE_DB "
      "(database).");
  app.require_subcommand(1);
  app.add_option("--root", ctx.root, "source tree (configs/, build trees)")->capture_default_str();
  app.add_option("--db", ctx.db,
                 "results database (default: $K3TUNE_DB or <root>/results/k3tune.db)");
  app.add_option("--targets", ctx.targets_file,
                 "targets file (default: <root>/configs/targets.toml)");
  app.add_flag("--json", ctx.json, "machine-readable JSON on stdout");
  app.add_flag("-q,--quiet", ctx.quiet, "no progress line");
  add_doctor_command(app, ctx);
  add_build_command(app, ctx);
  add_probe_command(app, ctx);
  add_tcm_command(app, ctx);
  add_bench_command(app, ctx);
  add_db_command(app, ctx);
  add_compare_command(app, ctx);
  add_selfcheck_command(app, ctx);
  add_tune_command(app, ctx);
  add_tune_gates_command(app, ctx);
  add_count_command(app, ctx);
  add_table_command(app, ctx);
  add_farm_command(app, ctx);
  add_report_command(app, ctx);
  add_publish_command(app, ctx);
  add_model_command(app, ctx);
  add_nightly_command(app, ctx);
  add_bisect_command(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3bench::UserError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3store::StoreError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3targets::PresetError& e) {  // CMakePresets.json or a variant it lacks
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3targets::FactsError& e) {  // a runner that cannot describe itself
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (
      const k3targets::TargetLost& e) {  // a farm board lost mid-command: measured work is kept
    std::cerr << "k3tune: " << e.what() << "\n";
    return kCellsFailed;
  } catch (const k3farm::ControllerFailure& e) {  // this machine's fault, not a board's
    std::cerr << "k3tune: " << e.what() << "\n";
    return kProblems;
  } catch (const std::exception& e) {
    std::cerr << "k3tune: internal error: " << e.what() << "\n";
    return kProblems;
  }
  return exit_code();
}
