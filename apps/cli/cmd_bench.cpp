// `k3tune bench`: parse options, run the sweep (k3::bench), print the cells, the A/B verdicts when
// a baseline runner was measured alongside, and where the wall time went.
#include <cmath>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/farm_work.h"
#include "apps/cli/measuring_place.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/bench/defaults.h"
#include "harness/host/farmbench/farm_sweep.h"
#include "harness/host/stats/stats.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/verdict.h"
#include "reports/report.h"
#include "reports/report_error.h"

namespace k3cli {
namespace {

// Parameter keys (and measurement settings) whose values differ among the cells of the same op:
// worth a column. (Cells of other ops have other keys.)
std::string varying(const std::vector<k3bench::CellOutcome>& cells, const k3bench::CellOutcome& c,
                    const k3bench::MeasureSettings& base) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.spec.params.items()) {
    for (const auto& o : cells) {
      if (o.spec.op == c.spec.op && o.spec.params.value(k, nlohmann::json()) != v) {
        keys.push_back(k);
        break;
      }
    }
  }
  std::string out;
  for (const auto& k : keys)
    out += (out.empty() ? "" : ",") + k + "=" + k3params::value_text(c.spec.params[k]);
  const std::string diff = c.spec.settings_diff(base);
  if (!diff.empty()) out += (out.empty() ? "" : ",") + diff;
  return out;
}

std::string pct(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}%", *v * 100) : "-";
}

void print_cells(const k3bench::BenchOutcome& b, double wide_ci) {
  const k3bench::SweepReport& r = b.report;
  fmt::print("{:<46} {:<20} {:>5} {:>11} {:>8} {:>7} {:>11} {:>3}  {}\n", "cell", "params", "P",
             "mean us", "CI95 +-", "CV", "median us", "out", "notes");
  for (const auto& c : r.cells) {
    std::string params = varying(r.cells, c, b.settings);
    const std::string& label = b.builds[c.build].label;
    if (!label.empty()) params += (params.empty() ? "" : ",") + label;
    const auto& a = c.aggregate;
    if (!c.skipped.empty()) {
      fmt::print("{:<46} {:<20} {:>5} {:>11} {:>8} {:>7} {:>11} {:>3}  skipped: {}\n",
                 c.spec.label(), params, "-", "-", "-", "-", "-", "-", c.skipped);
      continue;
    }
    if (!c.has_aggregate || !a.ok) {
      fmt::print("{:<46} {:<20} {:>5} {:>11} {:>8} {:>7} {:>11} {:>3}  FAILED: {}\n",
                 c.spec.label(), params, "-", "-", "-", "-", "-", "-", a.reason);
      continue;
    }
    std::string notes;
    if (a.wide_ci) notes += fmt::format("WIDE CI (> {:.0f}%) ", wide_ci * 100);
    if (a.stop_reason.starts_with("max")) notes += "max processes reached ";
    if (c.disturbed > 0) notes += fmt::format("{} disturbed process(es) re-measured ", c.disturbed);
    if (c.adopted > 0) notes += fmt::format("resumed ({} earlier processes) ", c.adopted);
    fmt::print("{:<46} {:<20} {:>5} {:>11.3f} {:>8} {:>7} {:>11.3f} {:>3}  {}\n", c.spec.label(),
               params, a.processes, *a.mean_ns / 1e3, pct(a.ci_rel_half_width), pct(a.cv_between),
               *a.median_ns / 1e3, a.outliers, notes);
  }
}

// Baseline (A) vs candidate (B), cell by cell: the same verdict `k3tune report` gives this run
// (k3verdict::compare_within_run over the stored run: the paired t-test on per-round log ratios,
// the op's minimum effect from configs/regression.toml raised to the target's noise floor), so
// bench and report can never disagree.
nlohmann::json ab_verdicts(const k3bench::BenchOutcome& b, const std::string& db_path,
                           const std::string& root, bool print) {
  nlohmann::json rows = nlohmann::json::array();
  if (b.builds.size() != 2) return rows;
  // The run stays with the verdict: its cells' keys name the rule that ended each cell's rounds.
  const auto judged =
      k3reports::judge_within_run(db_path, b.report.run_uuid, root + "/configs/regression.toml");
  const k3verdict::Verdict& v = judged->verdict;
  if (print) {
    fmt::print(
        "\nbaseline {} vs candidate {} ({} on per-round log ratios, alpha {}; minimum effect per "
        "op "
        "from {}{})\n",
        b.builds[0].build_hash.substr(0, 12), b.builds[1].build_hash.substr(0, 12),
        v.config.estimator == k3stats::PairedEstimator::kHodgesLehmann
            ? "Hodges-Lehmann shift, Wilcoxon signed-rank"
            : "mean, paired t",
        v.config.alpha, v.config.source,
        v.noise_floor
            ? fmt::format(", raised to the noise floor {:.1f}%", 100 * v.noise_floor->noise_floor)
            : "");
    fmt::print("  {}\n", b.pairing.text());
  }
  // Which rule ended each cell's rounds (--mde: the MDE reached, the wall-time budget, the
  // ceiling).
  std::map<std::string, std::string> ended_by;
  for (const auto& c : b.report.cells)
    if (c.has_aggregate) ended_by[c.cell_key] = c.aggregate.stop_reason;
  for (const auto& c : v.cells) {
    const auto& t = c.timing;
    std::string text = k3verdict::timing_text(t);
    if (b.rounds.target_mde > 0 && c.b != nullptr && ended_by.count(c.b->cell_key))
      text += fmt::format("; rounds ended by: {}", ended_by[c.b->cell_key]);
    rows.push_back(
        {{"cell", c.label},
         {"baseline_mean_ns", t.cmp.mean_a},
         {"candidate_mean_ns", t.cmp.mean_b},
         {"rel_diff", t.cmp.rel_diff},
         {"p_value", t.cmp.p_value},
         {"minimum_detectable_effect", t.cmp.mde},
         {"threshold", t.threshold},
         {"verdict", k3verdict::to_string(t.outcome)},
         {"verdict_text", text},
         {"rounds_ended_by",
          c.b != nullptr && ended_by.count(c.b->cell_key) ? ended_by[c.b->cell_key] : ""}});
    if (print) {
      fmt::print("  {:<52} {:>10.3f} {:>10.3f} {:>+7.2f}%  p {:<8.3g} {}\n", c.label,
                 t.cmp.mean_a / 1e3, t.cmp.mean_b / 1e3, 100 * t.cmp.rel_diff, t.cmp.p_value, text);
    }
  }
  return rows;
}

nlohmann::json overhead_json(const k3bench::BenchOutcome& b) {
  const k3bench::SweepReport& r = b.report;
  const double wall = b.total_wall_s;
  // A cold weight cache is filled once per shape and machine, in the set-up of the first
  // process that needs it: a one-time cost, shown apart from the overhead every run pays.
  const double overhead = wall - r.kernel_s - r.warmup_s - r.cache_build_s;
  return {{"total_wall_s", wall},
          {"kernel_s", r.kernel_s},
          {"warmup_s", r.warmup_s},
          {"cache_build_s", r.cache_build_s},
          {"cache_build_fraction", wall > 0 ? r.cache_build_s / wall : 0.0},
          {"overhead_s", overhead},
          {"kernel_fraction", wall > 0 ? r.kernel_s / wall : 0.0},
          {"warmup_fraction", wall > 0 ? r.warmup_s / wall : 0.0},
          {"overhead_fraction", wall > 0 ? overhead / wall : 0.0},
          {"runner_setup_s", r.runner_setup_s},
          {"accuracy_check_s", r.check_s},
          {"runner_wall_s", r.child_wall_s},
          {"k3tune_s", wall - r.child_wall_s}};
}

nlohmann::json report_json(const k3bench::BenchOutcome& b, const std::string& db_path,
                           const std::string& root) {
  const k3bench::SweepReport& r = b.report;
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) {
    nlohmann::json j = {{"op", c.spec.op},
                        {"shape", c.spec.shape},
                        {"params", c.spec.params},
                        {"measure", c.spec.settings.to_json()},
                        {"role", c.spec.role},
                        {"build", b.builds[c.build].build_hash},
                        {"build_label", b.builds[c.build].label},
                        {"cell_key", c.cell_key},
                        {"adopted_processes", c.adopted},
                        {"disturbed_processes", c.disturbed}};
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
      j["stop_reason"] = a.stop_reason;
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
  nlohmann::json builds = nlohmann::json::array();
  for (const auto& bd : b.builds)
    builds.push_back(
        {{"build_hash", bd.build_hash}, {"label", bd.label}, {"runner", bd.target->runner_path()}});
  nlohmann::json out = {{"schema", k3bench::schema_id(k3bench::ChildOutput::kBench)},
                        {"run_uuid", r.run_uuid},
                        {"target", b.builds.back().target->name()},
                        {"build_hash", b.builds.back().build_hash},
                        {"builds", builds},
                        {"measure", b.settings.to_json()},
                        {"processes",
                         {{"min", b.rounds.min_processes},
                          {"max", b.rounds.max_processes},
                          {"target_ci", b.rounds.target_ci}}},
                        {"cells", cells},
                        {"comparisons", ab_verdicts(b, db_path, root, false)},
                        {"failed_cells", r.failed_cells()},
                        {"overhead", overhead_json(b)}};
  if (b.builds.size() == 2) out["build_pairing"] = b.pairing.to_json();
  return out;
}

// --mde X, or --mde alone: the smallest minimum effect of the requested ops in the regression
// rules (the effect the verdict must be able to see). The sequential rule keeps only the
// signed-rank test exact: the rules must use it.
double mde_target(const std::string& text, const k3bench::BenchRequest& r,
                  const std::string& root) {
  const std::string rules = root + "/configs/regression.toml";
  k3verdict::RegressionConfig config;
  try {
    config = k3verdict::load_regression_config(rules);
  } catch (const k3reports::ReportError& e) {
    throw k3bench::UserError(e.what());
  }
  if (config.estimator != k3stats::PairedEstimator::kHodgesLehmann)
    throw k3bench::UserError(fmt::format(
        "--mde: {} sets estimator = \"mean\"; adding rounds until the MDE is reached keeps only "
        "the signed-rank test exact (estimator = \"hodges-lehmann\")",
        rules));
  if (!text.empty()) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !(x > 0 && x < 1))
      throw k3bench::UserError(
          fmt::format("--mde {}: expected a fraction in (0, 1), e.g. 0.03", text));
    return x;
  }
  double x = r.grid.ops.empty() ? config.min_effect : 1.0;
  for (const auto& op : r.grid.ops) x = std::min(x, config.min_effect_for(op));
  if (!(x > 0))
    throw k3bench::UserError(
        fmt::format("--mde: the minimum effect in {} is 0; give the effect (--mde 0.03)", rules));
  return x;
}

void print_overhead(const k3bench::BenchOutcome& b, const std::string& db_path) {
  const k3bench::SweepReport& r = b.report;
  const auto o = overhead_json(b);
  fmt::print("run {} on {}: {} cells, {} runner processes ({} failed, {} disturbed), database {}\n",
             r.run_uuid, b.builds.back().target->name(), r.cells.size(), r.processes_run,
             r.processes_failed, r.processes_disturbed, db_path);
  fmt::print(
      "wall {:.2f} s = kernel {:.2f} s ({:.1f}%) + warm-up {:.2f} s ({:.1f}%) + overhead {:.2f} s "
      "({:.1f}%: "
      "runner set-up {:.2f} s, accuracy check {:.2f} s, start/exit/transfer {:.2f} s, k3tune "
      "{:.2f} s){}\n",
      o["total_wall_s"].get<double>(), r.kernel_s, 100 * o["kernel_fraction"].get<double>(),
      r.warmup_s, 100 * o["warmup_fraction"].get<double>(), o["overhead_s"].get<double>(),
      100 * o["overhead_fraction"].get<double>(), r.runner_setup_s - r.cache_build_s, r.check_s,
      std::max(0.0, r.child_wall_s - r.kernel_s - r.warmup_s - r.runner_setup_s - r.check_s),
      o["k3tune_s"].get<double>(),
      r.cache_build_s > 0
          ? fmt::format(" + weight cache filled once (cold) {:.2f} s ({:.1f}%)", r.cache_build_s,
                        100 * o["cache_build_fraction"].get<double>())
          : "");
}

struct BenchArgs {
  std::string target = "local";
  k3bench::BenchRequest request;
  k3farmbench::FarmBenchRequest farm;  // with --farm: everything but the BenchRequest
  std::string shard;
  std::string cells;        // --cells (hidden): what a Slurm job of this bench measures
  std::string reservation;  // --reservation: a Slurm farm's jobs run in this reservation
  std::string mde;          // --mde [X]: "" with the flag alone (the rules' minimum effect)
  std::string build_pairing = "auto";  // --build-pairing auto | rounds
  std::map<std::string, std::string> settings;  // the measurement settings given (kSettings)
};

// Measurement settings given on the command line win over a config's [measure] table.
struct SettingOption {
  const char* flag;
  const char* key;
  const char* help;
};
const SettingOption kSettings[] = {
    {"-R,--reps", "repetitions", "measured repetitions per process (default 5)"},
    {"--warmup", "warmup", "untimed calls before measuring (default 2; they also calibrate)"},
    {"--min-time", "min_time_s", "seconds per repetition (default 0.2)"},
    {"--iterations", "iterations",
     "fixed calls per repetition (default 0: calibrated once per cell)"},
    {"--path", "path", "kernel layer: auto|generic|rvv|ime2"},
    {"--check", "check", "runner accuracy check: sample|full|none"},
    {"--cpus", "cpus", "runner thread placement: auto|none|LIST"},
    {"--pool-wait", "pool_wait", "idle workers: spin|park"},
    {"--huge-pages", "huge_pages", "huge-page backed large buffers: on|off"},
    {"--weight-load", "weight_load", "weight cache loading: read|mmap"},
};

// --farm and what goes with it: where the cells are measured.
void add_farm_options(CLI::App* cmd, BenchArgs& a) {
  auto* farm = cmd->add_option("--farm", a.farm.farm,
                               "measure on a board farm instead: a farm file, or 'local' (host + "
                               "qemu boards); the cells are "
                               "spread over the healthy boards");
  cmd->add_option("--board", a.farm.boards, "with --farm: only these boards (repeatable)")
      ->needs(farm);
  cmd->add_option("--tag", a.farm.tags, "with --farm: only boards with every tag (repeatable)")
      ->needs(farm);
  cmd->add_option("--shard", a.shard,
                  "with --farm: i/n, this share of the cells (position mod n), for CI matrix jobs")
      ->needs(farm);
  cmd->add_option("--cells", a.cells,
                  "with --farm: only these positions of the canonical cell list (0,3,5)")
      ->needs(farm)
      ->group("");  // set by a Slurm farm's controller for its jobs
  cmd->add_option("--reservation", a.reservation,
                  "with --farm on a Slurm farm: submit the jobs into this Slurm reservation "
                  "(overrides the farm file's)")
      ->needs(farm);
  cmd->add_flag("--shared-queue", a.farm.shared_queue,
                "with --farm: jobs running this same command on this database share one queue of "
                "cells (each cell measured by one job)")
      ->needs(farm);
  cmd->add_option("--lease-wait", a.farm.lease_wait_s,
                  "with --farm: seconds to wait for a board another controller holds (0: skip it)")
      ->needs(farm)
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--cells-per-probe", a.farm.cells_per_probe,
                  "with --farm: cells measured between two health probes of a board")
      ->needs(farm)
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
}

// The cells (ops, shapes, grids, models), the process plan and the A/B baseline.
void add_grid_options(CLI::App* cmd, BenchArgs& a) {
  k3bench::BenchRequest& rq = a.request;
  cmd->add_option("--op", rq.grid.ops, "op (repeatable); with --model: only these ops");
  cmd->add_option("--shape", rq.grid.shapes, "shape k=v,... (repeatable)");
  cmd->add_option("--params", rq.grid.params,
                  "fixed parameters k=v,... (op parameters or measurement settings)");
  cmd->add_option(
      "--grid", rq.grid.grid,
      "swept key=v1,v2,... (repeatable; cartesian product); op parameters or measurement settings "
      "such as path, huge_pages, cpus, pool_wait, warmup");
  cmd->add_option("--config", rq.grid.config,
                  "bench config TOML ([measure], [[case]] op/shapes/params/grid/model)");
  cmd->add_option("--model", rq.grid.model, "all shapes of configs/models/NAME.toml");
  cmd->add_option("-P,--processes", rq.plan.processes,
                  fmt::format("runner processes per cell at least (default {})",
                              k3bench::defaults::kMinProcesses))
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-processes", rq.plan.max_processes,
                  fmt::format("adaptive ceiling per cell (default {} with --target-ci, else = -P)",
                              k3bench::defaults::kMaxProcesses))
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--target-ci", rq.plan.target_ci,
                  fmt::format("add interleaved rounds until the 95% CI half-width is below this "
                              "fraction of the mean "
                              "(default {}; 0: exactly -P processes)",
                              k3bench::defaults::kTargetCi))
      ->check(CLI::Range(0.0, 0.99));
  auto* mde = cmd->add_option("--mde", a.mde,
                              "A/B: add interleaved rounds until the minimum detectable effect is "
                              "at most this fraction (alone: the smallest minimum effect of the "
                              "ops in configs/regression.toml), or --mde-budget ends")
                  ->expected(0, 1);
  cmd->add_option("--mde-budget", rq.plan.mde_budget_s,
                  fmt::format("with --mde: seconds of rounds at most (default {:.0f})",
                              k3bench::defaults::kMdeBudgetS))
      ->check(CLI::PositiveNumber)
      ->needs(mde);
  cmd->add_option(
      "--baseline-runner", rq.baseline_runner,
      "a kept runner binary measured interleaved (A B A B) with the target's, for an A/B verdict");
  cmd->add_option("--baseline-build", rq.baseline_build,
                  "the same, by build hash (prefix) from the database");
  cmd->add_option("--build-pairing", a.build_pairing,
                  "A/B: auto (default): both builds inside each runner process where the "
                  "baseline's kernel plugin loads into the runner under test, else separate "
                  "processes; rounds: always separate processes")
      ->check(CLI::IsMember({"auto", "rounds"}));
}

void run_bench_command(const AppContext& ctx, BenchArgs& a, const CLI::App& cmd) {
  k3bench::BenchRequest r = a.request;
  for (const auto& s : kSettings) {
    const std::string first_flag = std::string(s.flag).substr(std::string(s.flag).rfind(',') + 1);
    if (cmd.get_option(first_flag)->count() == 0) continue;
    r.settings.set(s.key, a.settings.at(s.key), first_flag);
    r.settings_given.push_back(s.key);
  }
  r.command_line = "k3tune bench";
  for (const auto* o : cmd.get_options())
    if (o->count() > 0 && o->get_name() != "--help")
      for (const auto& v : o->results()) r.command_line += " " + o->get_name() + " " + v;
  r.db_path = ctx.db_path();
  r.progress = !ctx.quiet;
  if (cmd.get_option("--mde")->count() > 0) r.plan.mde = mde_target(a.mde, r, ctx.root);
  r.build_pairing = k3bench::parse_build_pairing_mode(a.build_pairing);
  const bool ab = !r.baseline_runner.empty() || !r.baseline_build.empty();
  std::unique_ptr<MeasuringPlace> place;
  if (!a.farm.farm.empty() && ab) {
    // A paired A/B on a board: one board (the first of --board/--tag that can be taken) runs
    // both runners in the same rounds, the baseline installed next to its own.
    if (!a.shard.empty())
      throw k3bench::UserError("--shard: not with --baseline-runner (one board measures both)");
    const auto [farm, scheduler] = k3scheduler::open_farm(a.farm.farm, ctx.caller());
    const auto boards = k3scheduler::choose_boards(farm, a.farm.boards, a.farm.tags);
    if (relay_job(
            scheduler->run_as_one_job({"bench", {"--reservation"}, {}, boards, a.reservation})))
      return;
    PlaceArgs where;
    where.farm = a.farm.farm;
    where.boards = a.farm.boards;
    where.tags = a.farm.tags;
    where.lease_wait_s = a.farm.lease_wait_s;
    where.target_option = cmd.get_option("--target");
    place = std::make_unique<MeasuringPlace>(ctx, where);
  } else if (!a.farm.farm.empty()) {
    if (cmd.get_option("--target")->count() > 0)
      throw k3bench::UserError("--target and --farm: measure on one or the other");
    k3farmbench::FarmBenchRequest f = a.farm;
    f.bench = r;
    if (!a.shard.empty()) f.shard = k3farmbench::parse_shard(a.shard);
    if (!a.cells.empty()) f.shard.positions = k3farmbench::parse_cell_positions(a.cells);
    const auto [farm, scheduler] = k3scheduler::open_farm(f.farm, ctx.caller());
    report_work(*scheduler->run_cells(f, a.reservation), ctx.json);
    return;
  }
  std::unique_ptr<k3targets::Target> own;
  if (!place) own = ctx.target(a.target);
  const k3bench::BenchOutcome b = k3bench::run_bench(place ? place->target() : *own, ctx.root, r);
  if (ctx.json) {
    std::cout << report_json(b, r.db_path, ctx.root).dump(2) << "\n";
  } else {
    print_cells(b, r.wide_ci);
    ab_verdicts(b, r.db_path, ctx.root, true);
    print_overhead(b, r.db_path);
  }
  if (b.report.failed_cells() > 0) exit_code() = kCellsFailed;
}

}  // namespace

void add_bench_command(CLI::App& app, AppContext& ctx) {
  auto a = std::make_shared<BenchArgs>();
  k3bench::BenchRequest& rq = a->request;
  auto* cmd = app.add_subcommand(
      "bench", "measure ops x shapes x parameter grids on a target into the database");
  cmd->add_option("--target", a->target, "target name from the targets file")
      ->capture_default_str();
  add_farm_options(cmd, *a);
  add_grid_options(cmd, *a);
  for (const auto& s : kSettings) cmd->add_option(s.flag, a->settings[s.key], s.help);
  cmd->add_option("--timeout", rq.timeout_s,
                  "seconds per runner process (default: the target's timeout_s)");
  cmd->add_flag("--resume", rq.resume,
                "skip cells already measured for this build, target and parameters");
  cmd->add_flag("!--no-remeasure", rq.remeasure_disturbed,
                "keep disturbed processes as they are instead of measuring the cell once more");
  cmd->add_option("--wide-ci", rq.wide_ci,
                  "warn when the 95% CI half-width exceeds this fraction of the mean")
      ->capture_default_str();
  cmd->callback([&ctx, a, cmd] { run_bench_command(ctx, *a, *cmd); });
}

}  // namespace k3cli
