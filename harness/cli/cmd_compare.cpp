// `k3tune compare RUN_A RUN_B`: for every configuration measured in both runs (same target, op,
// shape, params; builds may differ), Welch's t-test on process means plus the minimum effect size.
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "database.h"
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

}  // namespace

void add_compare_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string a, b;
    k3stats::CompareOptions opt;
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
  cmd->callback([&ctx, args] {
    auto db = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
    std::string run_a, run_b;
    const auto a = run_cells(*db, args->a, run_a);
    const auto b = run_cells(*db, args->b, run_b);
    nlohmann::json rows = nlohmann::json::array();
    if (!ctx.json) {
      fmt::print("A = {}\nB = {}\n{:<70} {:>11} {:>11} {:>8} {:>8}  {}\n", run_a, run_b, "cell",
                 "A mean us", "B mean us", "B/A-1", "p", "verdict");
    }
    int compared = 0;
    for (const auto& [key, ca] : a) {
      auto it = b.find(key);
      if (it == b.end()) continue;
      if (ca.process_means.size() < 2 || it->second.process_means.size() < 2) continue;
      const auto c =
          k3stats::compare_processes(ca.process_means, it->second.process_means, args->opt);
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
                      {"verdict", k3stats::to_string(c.verdict)}});
      if (!ctx.json) {
        std::string label = ca.label;
        std::erase(label, '"');
        if (label.size() > 70) label.resize(70);
        fmt::print("{:<70} {:>11.3f} {:>11.3f} {:>+7.2f}% {:>8.3g}  {}\n", label, c.mean_a / 1e3,
                   c.mean_b / 1e3, 100 * c.rel_diff, c.p_value, k3stats::to_string(c.verdict));
      }
    }
    if (ctx.json) {
      std::cout << nlohmann::json{{"run_a", run_a},
                                  {"run_b", run_b},
                                  {"alpha", args->opt.alpha},
                                  {"min_effect", args->opt.min_effect},
                                  {"cells", rows}}
                       .dump(2)
                << "\n";
    } else if (compared == 0) {
      fmt::print("no configuration was measured (with >= 2 processes) in both runs\n");
    }
  });
}

}  // namespace k3tune
