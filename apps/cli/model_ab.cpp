#include "apps/cli/model_ab.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/host/bench/model_runs.h"
#include "harness/host/stats/stats.h"
#include "harness/host/store/database.h"
#include "harness/host/store/result_reads.h"
#include "harness/host/verdict/verdict.h"
#include "reports/report.h"

namespace k3cli {
namespace {

// round (process_index) -> the process's breakdown (runner_json.params.breakdown), for the
// processes the cell's figures count (a disturbed process measured again is left out, as the
// verdict leaves it out).
std::map<int, nlohmann::json> breakdowns(k3store::Connection& db, const std::string& run_uuid,
                                         const k3verdict::CellFigures& cell) {
  const std::string& cell_key = cell.cell_key;
  const std::set<int> counted(cell.process_rounds.begin(), cell.process_rounds.end());
  std::map<int, nlohmann::json> out;
  for (const auto& p : k3store::ok_process_reports(db, run_uuid, cell_key)) {
    const auto& j = p.runner;
    if (!counted.contains(p.process_index)) continue;
    if (!j.is_object() || !j.contains("params") || !j["params"].contains("breakdown")) continue;
    out[p.process_index] = j["params"]["breakdown"];
  }
  return out;
}

std::map<std::string, double> op_seconds(const nlohmann::json& breakdown) {
  std::map<std::string, double> out;
  double sum = 0;
  for (const auto& o : breakdown.value("ops", nlohmann::json::array())) {
    out[o.value("op", "")] += o.value("seconds_per_call", 0.0);
    sum += o.value("seconds_per_call", 0.0);
  }
  out["glue"] = breakdown.value("wall_s_per_call", 0.0) - sum;
  return out;
}

// Mean and 95% t interval of per-round differences, over the baseline's mean wall time.
OpContribution summarize(const std::string& op, const std::vector<double>& x, double base_wall) {
  OpContribution c{op};
  const double n = static_cast<double>(x.size());
  for (double v : x) c.mean += v / n;
  double ss = 0;
  for (double v : x) ss += (v - c.mean) * (v - c.mean);
  const double half =
      x.size() >= 2 ? k3stats::t_critical(0.95, n - 1) * std::sqrt(ss / (n - 1) / n) : 0;
  c.ci_low = (c.mean - half) / base_wall;
  c.ci_high = (c.mean + half) / base_wall;
  c.mean /= base_wall;
  return c;
}

}  // namespace

std::vector<ModelAbRow> model_ab(const std::string& db_path, const k3reports::JudgedRun& judged) {
  const k3verdict::Verdict& v = judged.verdict;
  const std::string& run_uuid = judged.run.run_uuid;
  auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
  std::vector<ModelAbRow> rows;
  for (const auto& c : v.cells) {
    if (c.a == nullptr || c.b == nullptr) continue;
    ModelAbRow r;
    std::map<std::string, std::string> shape;
    for (const auto& [key, value] : c.a->shape.items())
      shape[key] = value.is_string() ? value.get<std::string>() : value.dump();
    r.test = k3bench::model_test_name(c.op, shape);
    r.verdict = k3verdict::timing_text(c.timing);
    r.rel_diff = c.timing.cmp.rel_diff;
    r.p_value = c.timing.cmp.p_value;
    r.mde = c.timing.cmp.mde;
    const auto a = breakdowns(*db, run_uuid, *c.a);
    const auto b = breakdowns(*db, run_uuid, *c.b);
    // Per round, each op's seconds per call, candidate minus baseline (paired: same round).
    std::map<std::string, std::vector<double>> per_op;
    double base_wall = 0, cand_wall = 0;
    for (const auto& [round, ba] : a) {
      const auto it = b.find(round);
      if (it == b.end()) continue;
      auto sa = op_seconds(ba), sb = op_seconds(it->second);
      for (const auto& [op, s] : sb) sa.try_emplace(op, 0.0);
      for (const auto& [op, s] : sa) per_op[op].push_back(sb[op] - s);
      base_wall += ba.value("wall_s_per_call", 0.0);
      cand_wall += it->second.value("wall_s_per_call", 0.0);
      ++r.rounds;
    }
    if (r.rounds > 0 && base_wall > 0) {
      r.wall_change = (cand_wall - base_wall) / base_wall;
      for (const auto& [op, x] : per_op) r.ops.push_back(summarize(op, x, base_wall / r.rounds));
    }
    // Contributions whose interval excludes zero first, each group by size: a disturbed round
    // can make an op's mean large and its interval wide, which says nothing.
    auto clear = [](const OpContribution& o) { return o.ci_low > 0 || o.ci_high < 0; };
    std::sort(r.ops.begin(), r.ops.end(), [&](const auto& x, const auto& y) {
      if (clear(x) != clear(y)) return clear(x);
      return std::abs(x.mean) > std::abs(y.mean);
    });
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string model_ab_markdown(const std::vector<ModelAbRow>& rows, const std::string& baseline,
                              const std::string& candidate, const std::string& design) {
  std::string s = fmt::format(
      "\nbaseline {} vs candidate {}, {} (the paired test of the rules on per-round log "
      "ratios):\n\n| test | verdict | change | p | MDE | rounds |\n|---|---|---:|---:|---:|---:|\n",
      baseline, candidate, design.empty() ? "measured in the same rounds" : design);
  for (const auto& r : rows)
    s += fmt::format("| {} | {} | {:+.2f}% | {:.3g} | {:.1f}% | {} |\n", r.test, r.verdict,
                     100 * r.rel_diff, r.p_value, 100 * r.mde, r.rounds);
  for (const auto& r : rows) {
    if (r.rounds == 0) continue;
    s += fmt::format(
        "\n{}: where the change went (the op's time per call, candidate minus baseline in the same "
        "round, mean of {} rounds with its 95% interval, over the baseline's mean wall time; they "
        "sum to the wall time's {:+.2f}%)\n",
        r.test, r.rounds, 100 * r.wall_change);
    for (const auto& o : r.ops)
      s += fmt::format("  {:<12} {:>+7.2f}%  [{:+.2f}%, {:+.2f}%]\n", o.op, 100 * o.mean,
                       100 * o.ci_low, 100 * o.ci_high);
  }
  return s;
}

nlohmann::json model_ab_json(const std::vector<ModelAbRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : r.ops)
      ops.push_back({{"op", o.op}, {"share_of_wall", o.mean}, {"ci95", {o.ci_low, o.ci_high}}});
    out.push_back({{"test", r.test},
                   {"verdict", r.verdict},
                   {"rel_diff", r.rel_diff},
                   {"p_value", r.p_value},
                   {"minimum_detectable_effect", r.mde},
                   {"rounds", r.rounds},
                   {"wall_change", r.wall_change},
                   {"contributions", ops}});
  }
  return out;
}

}  // namespace k3cli
