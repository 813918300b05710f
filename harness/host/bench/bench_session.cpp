#include "harness/host/bench/bench_session.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/defaults.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/runner_facts.h"

namespace k3bench {
namespace {

bool build_known(const std::string& db_path, const std::string& hash) {
  // Anything but a non-empty regular file goes to open_database, which refuses it in one line.
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return false;
  if (std::filesystem::is_regular_file(db_path, ec) && std::filesystem::file_size(db_path, ec) == 0)
    return false;
  auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
  return k3store::find_build(*db, hash).has_value();
}

// The baseline's runner: a path given, or the binary recorded for a build hash (which must still
// be on disk with that hash: a rebuilt file is a different build).
std::string baseline_path(const BenchRequest& r) {
  if (!r.baseline_runner.empty()) {
    if (!std::filesystem::exists(r.baseline_runner))
      throw UserError(fmt::format("--baseline-runner: {}: no such file", r.baseline_runner));
    return r.baseline_runner;
  }
  if (!std::filesystem::exists(r.db_path))
    throw UserError(
        fmt::format("--baseline-build: {}: no database to look the build up in", r.db_path));
  auto db = k3store::open_database(r.db_path, k3store::OpenMode::kReadOnly);
  const auto matches = k3store::builds_with_prefix(*db, r.baseline_build);
  if (matches.size() != 1) {
    throw UserError(fmt::format("--baseline-build: '{}' matches {} builds in {}", r.baseline_build,
                                matches.size(), r.db_path));
  }
  const std::string& hash = matches.front().build_hash;
  const std::string& path = matches.front().binary_path;
  if (!std::filesystem::exists(path) || sha256_file(path) != hash) {
    throw UserError(
        fmt::format("--baseline-build {}: its binary {} is gone or was rebuilt (keep a copy: "
                    "--baseline-runner PATH)",
                    hash.substr(0, 12), path));
  }
  return path;
}

}  // namespace

k3targets::RunnerFacts runner_facts(const k3targets::Target& target) {
  try {
    return k3targets::read_runner_facts(target);
  } catch (const k3targets::FactsError& e) {
    throw UserError(e.what());
  }
}

k3store::BuildRecord build_from_runner(const k3targets::Target& target, const std::string& hash) {
  return build_from_facts(target, hash, runner_facts(target));
}

k3store::BuildRecord build_from_facts(const k3targets::Target& target, const std::string& hash,
                                      const k3targets::RunnerFacts& facts) {
  k3store::BuildRecord b;
  b.build_hash = hash;
  b.variant = target.config().variant;
  b.binary_path = target.runner_path();
  b.compiler = facts.compiler;
  b.flags = facts.build_flags;
  b.cmake_options_json = nlohmann::json{
      {"CMAKE_BUILD_TYPE", facts.build_type},
      {"target_arch",
       facts.target_arch}}.dump();
  b.source_revision = facts.source_revision;
  b.source_dirty = facts.source_dirty();
  b.recorded_by = "runner report";
  return b;
}

RoundsOptions rounds_from_plan(const ProcessPlan& plan, bool remeasure_disturbed) {
  RoundsOptions r;
  r.min_processes = plan.processes > 0 ? plan.processes : defaults::kMinProcesses;
  // A process count without a CI target is a fixed count (the seed's `-P 3 -R 5`); only a target
  // CI, given or by default, makes it a minimum.
  r.target_ci = plan.target_ci >= 0  ? plan.target_ci
                : plan.processes > 0 ? 0.0
                                     : defaults::kTargetCi;
  // A fixed -P without a target CI means exactly P processes; an adaptive run goes up to the max.
  r.max_processes = plan.max_processes > 0 ? plan.max_processes
                    : r.target_ci > 0      ? std::max(defaults::kMaxProcesses, r.min_processes)
                                           : r.min_processes;
  if (r.max_processes < r.min_processes) {
    throw UserError(fmt::format("--max-processes {} is below --processes {}", r.max_processes,
                                r.min_processes));
  }
  r.remeasure_disturbed = remeasure_disturbed;
  if (plan.mde > 0) {
    r.target_mde = plan.mde;
    r.target_ci = 0;  // the MDE, not Stein's N, decides when to stop
    r.max_processes = plan.max_processes > 0
                          ? plan.max_processes
                          : std::max(defaults::kMdeMaxProcesses, r.min_processes);
  }
  return r;
}

BenchOutcome run_bench(const k3targets::Target& target, const std::string& root,
                       const BenchRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  BenchOutcome out;
  const Catalog catalog = Catalog::from_target(target);
  out.settings = request.settings;
  ProcessPlan plan = request.plan;
  const std::vector<CellSpec> cells = expand_grid(request.grid, catalog, root + "/configs/models",
                                                  out.settings, plan, request.settings_given);
  // Under qemu-user the times measure the emulator, never a board, and its threads' CPU time runs
  // behind their wall time (the translator), so every short repetition looks "preempted":
  // re-measuring spends processes on noise that carries no information. The flags stay recorded.
  out.rounds = rounds_from_plan(plan, request.remeasure_disturbed && !target.emulated());
  // A table setting is a path the runner opens: it exists where k3tune runs, not on a board.
  if (!target.runs_here())
    for (const CellSpec& c : cells)
      if (!c.settings.table.empty())
        throw UserError(
            fmt::format("table={}: a tuning table is read where the runner runs: a "
                        "local or qemu target (not {})",
                        c.settings.table, target.name()));

  // The builds: an optional baseline first (A), then the runner under test (B).
  std::vector<std::pair<const k3targets::Target*, std::string>> runners;
  if (!request.baseline_runner.empty() || !request.baseline_build.empty()) {
    // The same place running the baseline's binary (a farm board installs it next to its own).
    out.baseline_targets.push_back(
        target.with_runner(std::filesystem::absolute(baseline_path(request)).string()));
    runners.emplace_back(out.baseline_targets.back().get(), "baseline");
  }
  runners.emplace_back(&target, runners.empty() ? "" : "candidate");
  std::vector<k3store::BuildRecord> new_builds;
  // The baseline's facts serve its build record and the pairing's check: read once.
  std::optional<k3targets::RunnerFacts> baseline_facts;
  for (const auto& [t, label] : runners) {
    const std::string hash = sha256_file(t->runner_path());
    if (!out.builds.empty() && out.builds.front().build_hash == hash) {
      throw UserError(
          fmt::format("--baseline-runner {} is the same binary as the runner under test "
                      "(sha256 {})",
                      t->runner_path(), hash.substr(0, 12)));
    }
    const bool baseline = label == "baseline";
    const bool known = build_known(request.db_path, hash);
    std::optional<k3targets::RunnerFacts> facts;
    if (!known || baseline) facts = runner_facts(*t);
    if (!known) new_builds.push_back(build_from_facts(*t, hash, *facts));
    if (baseline) baseline_facts = std::move(facts);
    out.builds.push_back({t, hash, label});
  }

  if (plan.mde > 0 && out.builds.size() < 2)
    throw UserError("--mde: needs an A/B comparison (--baseline-runner or --baseline-build)");
  if (out.builds.size() == 2)
    out.pairing = decide_build_pairing(target, *out.builds.front().target, *baseline_facts, cells,
                                       request.build_pairing);
  // Everything is validated: from here on the database is written.
  auto db = k3store::open_for_writing(request.db_path);
  for (const auto& b : new_builds) k3store::upsert_build(*db, b);
  SweepOptions opt;
  opt.rounds = out.rounds;
  // A/B: stop on the interval of the per-round ratios.
  opt.rounds.paired = out.builds.size() > 1 || request.pair_tables;
  opt.pair_tables = request.pair_tables;
  opt.build_pairing = out.pairing;
  if (plan.mde > 0)
    opt.wall_budget_s = plan.mde_budget_s > 0 ? plan.mde_budget_s : defaults::kMdeBudgetS;
  opt.timeout_s = request.timeout_s;
  opt.resume = request.resume;
  opt.progress = request.progress;
  opt.stats.wide_ci_threshold = request.wide_ci;
  opt.command_line = request.command_line;
  out.report = run_sweep(*db, out.builds, cells, opt);
  out.total_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace k3bench
