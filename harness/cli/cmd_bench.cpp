// `k3tune bench`: validate the grid against the runner's catalog, record the build, run the
// interleaved sweep into the database, print the cells and the harness overhead.
#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "catalog.h"
#include "database.h"
#include "grid.h"
#include "provenance.h"
#include "results.h"
#include "sweep.h"

namespace k3tune {
namespace {

struct BenchArgs {
  std::string target = "local";
  GridRequest grid;
  MeasureSettings settings;
  double timeout_s = 0;
  bool resume = false;
  double wide_ci = 0.05;
  int processes = 0, repetitions = 0;  // 0: from the config file or the defaults
};

// A build row for a runner k3tune did not build itself, from what the runner reports about itself.
k3store::BuildRecord build_from_runner(const k3targets::Target& target, const std::string& hash) {
  const auto r = target.run({"--op", "residual_add", "--shape", "rows=1,dim=64", "--reps", "1",
                             "--warmup", "0", "--iterations", "1", "--check", "none", "--json"},
                            k3targets::ProcessOptions::with_timeout(target.config().timeout_s));
  if (!r.ok()) {
    throw UserError(fmt::format("target {}: the runner does not run: {}", target.name(),
                                r.failure_reason(target.config().timeout_s)));
  }
  const auto env = nlohmann::json::parse(r.out).at("environment");
  const std::string rev = env["runner"].value("source_revision", "unknown");
  k3store::BuildRecord b;
  b.build_hash = hash;
  b.variant = target.config().variant;
  b.binary_path = target.runner_path();
  b.compiler = env["build"].value("compiler", "unknown");
  b.flags = env["build"].value("flags", "");
  b.cmake_options_json = nlohmann::json{{"CMAKE_BUILD_TYPE", env["build"].value("build_type", "")},
                                        {"target_arch", env["build"].value("target_arch", "")}}
                             .dump();
  b.source_revision = rev;
  b.source_dirty = rev.ends_with("-dirty");
  b.recorded_by = "runner report";
  return b;
}

bool build_known(const std::string& db_path, const std::string& hash) {
  if (!std::filesystem::exists(db_path) || std::filesystem::file_size(db_path) == 0) return false;
  auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
  return k3store::find_build(*db, hash).has_value();
}

// Parameter keys whose values differ among cells: the ones worth a column.
std::vector<std::string> varying_params(const std::vector<CellOutcome>& cells) {
  std::vector<std::string> keys;
  if (cells.empty()) return keys;
  for (const auto& [k, v] : cells.front().spec.params.items()) {
    for (const auto& c : cells) {
      if (c.spec.params.value(k, nlohmann::json()) != v) {
        keys.push_back(k);
        break;
      }
    }
  }
  return keys;
}

void print_table(const SweepReport& r, double wide_ci) {
  const auto keys = varying_params(r.cells);
  fmt::print("{:<46} {:<18} {:>11} {:>8} {:>7} {:>11} {:>11} {:>4}  {}\n", "cell", "params",
             "mean us", "CI95 +-", "CV", "min us", "median us", "out", "notes");
  for (const auto& c : r.cells) {
    std::string params;
    for (const auto& k : keys)
      params += (params.empty() ? "" : ",") + k + "=" + c.spec.params[k].dump();
    std::erase(params, '"');
    const auto& a = c.aggregate;
    if (!c.skipped.empty()) {
      fmt::print("{:<46} {:<18} {:>11} {:>8} {:>7} {:>11} {:>11} {:>4}  skipped: {}\n",
                 c.spec.label(), params, "-", "-", "-", "-", "-", "-", c.skipped);
    } else if (!c.has_aggregate || !a.ok) {
      fmt::print("{:<46} {:<18} {:>11} {:>8} {:>7} {:>11} {:>11} {:>4}  FAILED: {}\n",
                 c.spec.label(), params, "-", "-", "-", "-", "-", "-", a.reason);
    } else {
      std::string notes;
      if (a.wide_ci) notes += fmt::format("WIDE CI (> {:.0f}%) ", wide_ci * 100);
      if (c.adopted > 0) notes += fmt::format("resumed ({} earlier processes) ", c.adopted);
      fmt::print("{:<46} {:<18} {:>11.3f} {:>7.2f}% {:>6.2f}% {:>11.3f} {:>11.3f} {:>4}  {}\n",
                 c.spec.label(), params, *a.mean_ns / 1e3,
                 a.ci_rel_half_width ? *a.ci_rel_half_width * 100 : 0.0, *a.cv_between * 100,
                 *a.min_ns / 1e3, *a.median_ns / 1e3, a.outliers, notes);
    }
  }
}

nlohmann::json report_json(const SweepReport& r, const std::string& target,
                           const std::string& build_hash, const MeasureSettings& s,
                           double total_wall_s) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) {
    nlohmann::json j = {{"op", c.spec.op},         {"shape", c.spec.shape},
                        {"params", c.spec.params}, {"role", c.spec.role},
                        {"cell_key", c.cell_key},  {"adopted_processes", c.adopted}};
    if (!c.skipped.empty()) {
      j["status"] = "skipped";
      j["reason"] = c.skipped;
    } else {
      const auto& a = c.aggregate;
      j["status"] = a.ok ? "ok" : "failed";
      if (!a.ok) j["reason"] = a.reason;
      auto opt = [](const std::optional<double>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      };
      j["processes"] = a.processes;
      j["samples"] = a.samples;
      j["mean_ns"] = opt(a.mean_ns);
      j["ci95_low_ns"] = opt(a.ci_low_ns);
      j["ci95_high_ns"] = opt(a.ci_high_ns);
      j["ci95_rel_half_width"] = opt(a.ci_rel_half_width);
      j["cv_between_processes"] = opt(a.cv_between);
      j["cv_all_repetitions"] = opt(a.cv_all);
      j["min_ns"] = opt(a.min_ns);
      j["median_ns"] = opt(a.median_ns);
      j["outliers_flagged"] = a.outliers;
      j["wide_ci"] = a.wide_ci;
      j["process_means_ns"] = c.process_means;
    }
    cells.push_back(j);
  }
  return {{"run_uuid", r.run_uuid},
          {"target", target},
          {"build_hash", build_hash},
          {"measure", s.to_json()},
          {"processes", s.processes},
          {"cells", cells},
          {"failed_cells", r.failed_cells()},
          {"overhead",
           {{"total_wall_s", total_wall_s},
            {"runner_wall_s", r.child_wall_s},
            {"kernel_s", r.kernel_s},
            {"overhead_fraction", total_wall_s > 0 ? 1.0 - r.kernel_s / total_wall_s : 0.0}}}};
}

void run_bench(const AppContext& ctx, BenchArgs a, const std::string& command_line) {
  const auto start = std::chrono::steady_clock::now();
  auto target = ctx.target(a.target);
  const Catalog catalog = Catalog::from_target(*target);
  std::vector<CellSpec> cells = expand_grid(a.grid, catalog, ctx.models_dir(), a.settings);
  if (a.processes > 0) a.settings.processes = a.processes;
  if (a.repetitions > 0) a.settings.repetitions = a.repetitions;
  const std::string hash = sha256_file(target->runner_path());
  std::optional<k3store::BuildRecord> build;
  if (!build_known(ctx.db_path(), hash)) build = build_from_runner(*target, hash);

  // Everything is validated: from here on the database is written.
  std::filesystem::create_directories(std::filesystem::absolute(ctx.db_path()).parent_path());
  auto db = k3store::open_database(ctx.db_path(), k3store::OpenMode::kCreateOrUpdate);
  if (build) k3store::upsert_build(*db, *build);
  SweepOptions opt;
  opt.settings = a.settings;
  opt.timeout_s = a.timeout_s;
  opt.resume = a.resume;
  opt.progress = !ctx.quiet;
  opt.stats.wide_ci_threshold = a.wide_ci;
  opt.command_line = command_line;
  const SweepReport r = run_sweep(*db, *target, hash, cells, opt);
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ctx.json) {
    std::cout << report_json(r, target->name(), hash, a.settings, total).dump(2) << "\n";
  } else {
    print_table(r, a.wide_ci);
    fmt::print("run {} on {}: {} cells, {} runner processes ({} failed), database {}\n", r.run_uuid,
               target->name(), r.cells.size(), r.processes_run, r.processes_failed, ctx.db_path());
    fmt::print(
        "harness overhead: kernels {:.2f} s of {:.2f} s wall = {:.1f}% overhead (runner start-up, "
        "set-up and "
        "accuracy check {:.2f} s; k3tune {:.2f} s)\n",
        r.kernel_s, total, total > 0 ? 100.0 * (1.0 - r.kernel_s / total) : 0.0,
        r.child_wall_s - r.kernel_s, total - r.child_wall_s);
  }
  if (r.failed_cells() > 0) exit_code() = kCellsFailed;
}

}  // namespace

void add_bench_command(CLI::App& app, AppContext& ctx) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "measure ops x shapes x parameter grids on a target into the database");
  cmd->add_option("--target", a->target, "target name from the targets file")
      ->capture_default_str();
  cmd->add_option("--op", a->grid.ops, "op (repeatable); with --model: only these ops");
  cmd->add_option("--shape", a->grid.shapes, "shape k=v,... (repeatable)");
  cmd->add_option("--params", a->grid.params, "fixed parameters k=v,...");
  cmd->add_option("--grid", a->grid.grid,
                  "swept parameter key=v1,v2,... (repeatable; cartesian product)");
  cmd->add_option("--config", a->grid.config,
                  "bench config TOML ([measure], [[case]] op/shapes/params/grid/model)");
  cmd->add_option("--model", a->grid.model, "all shapes of configs/models/NAME.toml");
  cmd->add_option("-P,--processes", a->processes,
                  "independent runner processes per cell (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-R,--reps", a->repetitions, "measured repetitions per process (default 5)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", a->settings.warmup, "untimed calls before measuring")
      ->capture_default_str();
  cmd->add_option("--min-time", a->settings.min_time_s, "seconds per repetition")
      ->capture_default_str();
  cmd->add_option("--iterations", a->settings.iterations,
                  "fixed calls per repetition (0: automatic)");
  cmd->add_option("--path", a->settings.path, "kernel layer: auto|generic|rvv|ime2")
      ->check(CLI::IsMember({"auto", "generic", "rvv", "ime2"}))
      ->capture_default_str();
  cmd->add_option("--check", a->settings.check, "runner accuracy check: sample|full|none")
      ->check(CLI::IsMember({"sample", "full", "none"}))
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s,
                  "seconds per runner process (default: the target's timeout_s)");
  cmd->add_flag("--resume", a->resume,
                "skip cells already measured for this build, target and parameters");
  cmd->add_option("--wide-ci", a->wide_ci,
                  "warn when the 95% CI half-width exceeds this fraction of the mean")
      ->capture_default_str();
  cmd->callback([&ctx, a, cmd] {
    std::string line = "k3tune bench";
    for (const auto& s : cmd->remaining()) line += " " + s;
    for (const auto* o : cmd->get_options()) {
      if (o->count() > 0 && o->get_name() != "--help") {
        for (const auto& r : o->results()) line += " " + o->get_name() + " " + r;
      }
    }
    run_bench(ctx, *a, line);
  });
}

}  // namespace k3tune
