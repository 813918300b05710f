// `k3tune compare RUN_A RUN_B`: for every configuration measured in both runs (same target, op,
// shape, params; builds may differ), Welch's t-test on process means plus the minimum effect size,
// and the minimum detectable effect of each comparison ("unchanged within +-x%"). The smallest
// difference ever called a change is the larger of --min-effect and the target's measured noise
// floor (`selfcheck stats`) on the CPU model the runs were taken on.
// Runs from different times on a machine that changes are not comparable as they stand: the
// dependable A/B is `bench --baseline-runner`, which measures both builds interleaved.
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "database.h"
#include "defaults.h"
#include "results.h"
#include "stats.h"

namespace k3tune {
namespace {

struct RunCell {
  std::string label;
  std::vector<double> process_means;
};

// Process means of every successfully aggregated cell of a run (run id prefix accepted), keyed by
// the configuration (target, op, shape, params) rather than the cell key, which includes the build.
std::map<std::string, RunCell> run_cells(k3store::Connection& db, const std::string& run_prefix,
                                         std::string& run) {
  auto find = db.prepare("SELECT run_uuid FROM runs WHERE run_uuid LIKE ?1 || '%'");
  find.bind(1, run_prefix);
  std::vector<std::string> matches;
  while (find.step()) matches.push_back(find.text(0));
  if (matches.size() != 1) {
    throw UserError(fmt::format("compare: run '{}' matches {} runs in the database", run_prefix,
                                matches.size()));
  }
  run = matches.front();
  auto s = db.prepare(
      "SELECT c.target || ' ' || c.op || ' ' || c.shape_json || ' ' || c.params_json, c.op, "
      "c.shape_json,"
      " c.params_json, p.run_uuid, p.process_index, avg(x.ns)"
      " FROM aggregates a JOIN cells c USING (cell_key)"
      " JOIN processes p ON p.cell_key = a.cell_key AND p.status = 'ok'"
      "   AND (p.disturbed = 0 OR a.processes = 0 OR a.excluded_processes = 0)"
      "   AND (p.run_uuid = a.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%')"
      " JOIN samples x ON x.run_uuid = p.run_uuid AND x.cell_key = p.cell_key AND x.process_index "
      "= p.process_index"
      " WHERE a.run_uuid = ?1 AND a.status = 'ok'"
      " GROUP BY a.cell_key, p.run_uuid, p.process_index");
  s.bind(1, run);
  std::map<std::string, RunCell> out;
  while (s.step()) {
    auto& c = out[s.text(0)];
    c.label = s.text(1) + " " + s.text(2) + " " + s.text(3);
    c.process_means.push_back(s.real(6));
  }
  return out;
}

// Target and CPU model a run was measured on (from its first process's environment).
std::pair<std::string, std::string> run_machine(k3store::Connection& db, const std::string& run) {
  auto s = db.prepare(
      "SELECT r.target, json_extract(p.runner_json, '$.environment.cpu_model') FROM runs r"
      " JOIN processes p USING (run_uuid) WHERE r.run_uuid = ?1 AND p.status = 'ok' LIMIT 1");
  s.bind(1, run);
  if (!s.step()) return {"", ""};
  return {s.text(0), s.is_null(1) ? "" : s.text(1)};
}

}  // namespace

void add_compare_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string a, b;
    k3stats::CompareOptions opt;
    bool ignore_noise_floor = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "compare", "A/B: Welch's t-test on process means + minimum effect size, per cell");
  cmd->add_option("run_a", args->a, "baseline run id (prefix)")->required();
  cmd->add_option("run_b", args->b, "candidate run id (prefix)")->required();
  cmd->add_option("--alpha", args->opt.alpha, "significance level")->capture_default_str();
  cmd->add_option("--min-effect", args->opt.min_effect,
                  "smallest relative difference worth calling")
      ->capture_default_str();
  cmd->add_flag("--ignore-noise-floor", args->ignore_noise_floor,
                "use --min-effect alone, not the target's measured noise floor");
  cmd->callback([&ctx, args] {
    auto db = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
    std::string run_a, run_b;
    const auto a = run_cells(*db, args->a, run_a);
    const auto b = run_cells(*db, args->b, run_b);
    k3stats::CompareOptions opt = args->opt;
    nlohmann::json floor_json = nullptr;
    const auto [target, cpu] = run_machine(*db, run_b);
    if (!args->ignore_noise_floor) {
      if (auto floor = k3store::latest_noise_floor(*db, target, cpu)) {
        floor_json = {{"target", floor->target},
                      {"cpu_model", floor->cpu_model},
                      {"noise_floor", floor->noise_floor},
                      {"measured_at", floor->measured_at},
                      {"op", floor->op}};
        opt.min_effect = std::max(opt.min_effect, floor->noise_floor);
      }
    }
    nlohmann::json rows = nlohmann::json::array();
    if (!ctx.json) {
      fmt::print("A = {}\nB = {}\n", run_a, run_b);
      if (!floor_json.is_null()) {
        fmt::print(
            "noise floor of {} on {}: {:.2f}% (selfcheck {}); differences below {:.2f}% are never "
            "called\n",
            target, cpu, 100 * floor_json["noise_floor"].get<double>(),
            floor_json["measured_at"].get<std::string>(), 100 * opt.min_effect);
      }
      fmt::print("{:<70} {:>11} {:>11} {:>8} {:>8}  {}\n", "cell", "A mean us", "B mean us",
                 "B/A-1", "p", "verdict");
    }
    int compared = 0;
    for (const auto& [key, ca] : a) {
      auto it = b.find(key);
      if (it == b.end()) continue;
      if (ca.process_means.size() < 2 || it->second.process_means.size() < 2) continue;
      const auto c = k3stats::compare_processes(ca.process_means, it->second.process_means, opt);
      const std::string verdict_text =
          c.verdict == k3stats::Comparison::Verdict::kNoDifference
              ? fmt::format("unchanged within +-{:.1f}%", 100 * std::max(c.mde, opt.min_effect))
          : c.verdict == k3stats::Comparison::Verdict::kBSlower ? "B SLOWER"
                                                                : "B faster";
      ++compared;
      rows.push_back({{"cell", ca.label},
                      {"mean_a_ns", c.mean_a},
                      {"mean_b_ns", c.mean_b},
                      {"rel_diff", c.rel_diff},
                      {"t", c.t},
                      {"df", c.df},
                      {"p_value", c.p_value},
                      {"significant", c.significant},
                      {"meaningful", c.meaningful},
                      {"minimum_detectable_effect", c.mde},
                      {"processes", {ca.process_means.size(), it->second.process_means.size()}},
                      {"verdict", k3stats::to_string(c.verdict)},
                      {"verdict_text", verdict_text}});
      if (!ctx.json) {
        std::string label = ca.label;
        std::erase(label, '"');
        if (label.size() > 70) label.resize(70);
        fmt::print("{:<70} {:>11.3f} {:>11.3f} {:>+7.2f}% {:>8.3g}  {}\n", label, c.mean_a / 1e3,
                   c.mean_b / 1e3, 100 * c.rel_diff, c.p_value, verdict_text);
      }
    }
    if (ctx.json) {
      std::cout << nlohmann::json{{"run_a", run_a},
                                  {"run_b", run_b},
                                  {"alpha", opt.alpha},
                                  {"min_effect", opt.min_effect},
                                  {"noise_floor", floor_json},
                                  {"cells", rows}}
                       .dump(2)
                << "\n";
    } else if (compared == 0) {
      fmt::print("no configuration was measured (with >= 2 processes) in both runs\n");
    }
  });
}

}  // namespace k3tune
