#include "reports/trends.h"

#include <algorithm>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "reports/report_error.h"

namespace k3reports {
namespace {

// Timestamps are stored as YYYY-MM-DDTHH:MM:SSZ, so bounds compare as text; a bare date as the
// upper bound means the end of that day.
std::string bound(const std::string& text, const char* option, bool upper) {
  static const std::regex date(R"(\d{4}-\d{2}-\d{2})");
  static const std::regex stamp(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  if (std::regex_match(text, stamp)) return text;
  if (std::regex_match(text, date)) return text + (upper ? "T23:59:59Z" : "T00:00:00Z");
  throw ReportError(fmt::format("{}: '{}' is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)",
                                option, text));
}

}  // namespace

std::string window_until(const TrendWindow& window, const k3verdict::RunData& run) {
  return window.until.empty() ? run.started_at : bound(window.until, "--until", true);
}

Trends load_trends(k3store::Connection& db, const k3verdict::RunData& run, const TrendWindow& window,
                   const k3verdict::RegressionConfig& config) {
  Trends t;
  const std::string since = window.since.empty() ? "" : bound(window.since, "--since", false);
  const std::string until = window_until(window, run);
  auto runs = db.prepare(
      "SELECT run_uuid FROM runs WHERE target = ?1 AND started_at <= ?2 AND started_at >= ?3"
      " ORDER BY started_at DESC, rowid DESC LIMIT ?4");
  runs.bind(1, run.target).bind(2, until).bind(3, since);
  runs.bind(4,
            static_cast<std::int64_t>(window.since.empty() ? std::max(window.last, 1) : 1000000));
  while (runs.step()) t.runs.push_back(runs.text(0));
  if (std::find(t.runs.begin(), t.runs.end(), run.run_uuid) == t.runs.end())
    t.runs.push_back(run.run_uuid);
  std::reverse(t.runs.begin(), t.runs.end());
  t.window = window.since.empty() ? fmt::format("the last {} runs on target {} up to {}",
                                                t.runs.size(), run.target, until)
                                  : fmt::format("{} runs on target {} from {} to {}", t.runs.size(),
                                                run.target, since, until);

  std::map<std::string, TrendSeries> by_key;
  for (const auto& c : run.cells) {
    if (c.build_hash != run.build_hash) continue;
    TrendSeries s;
    s.config_key = c.config_key;
    s.label = c.label;
    s.op = c.op;
    s.model = c.model;
    s.shape = k3verdict::shape_text(c.shape);
    by_key.emplace(c.config_key, std::move(s));
  }
  auto cells = db.prepare(
      "SELECT r.run_uuid, r.started_at, r.build_hash, c.op, c.shape_json, c.params_json,"
      " c.measure_json, a.mean_ns, a.ci_low_ns, a.ci_high_ns, a.processes"
      " FROM runs r JOIN aggregates a ON a.run_uuid = r.run_uuid AND a.status = 'ok'"
      " JOIN cells c ON c.cell_key = a.cell_key AND c.build_hash = r.build_hash"
      " WHERE r.run_uuid = ?1");
  for (const auto& id : t.runs) {
    cells.bind(1, id);
    while (cells.step()) {
      const std::string key =
          k3verdict::config_key(run.target, cells.text(3), nlohmann::json::parse(cells.text(4)),
                     nlohmann::json::parse(cells.text(5)), nlohmann::json::parse(cells.text(6)));
      auto it = by_key.find(key);
      if (it == by_key.end() || cells.is_null(7)) continue;
      TrendPoint p;
      p.run_uuid = cells.text(0);
      p.started_at = cells.text(1);
      p.build_hash = cells.text(2);
      p.mean_ns = cells.real(7);
      if (!cells.is_null(8)) p.ci_low_ns = cells.real(8);
      if (!cells.is_null(9)) p.ci_high_ns = cells.real(9);
      p.processes = static_cast<int>(cells.integer(10));
      it->second.points.push_back(p);
    }
    cells.reset();
  }
  for (auto& [key, s] : by_key) {
    std::vector<double> means;
    for (const auto& p : s.points) means.push_back(p.mean_ns);
    s.change_points = find_change_points(means, config.alpha, config.min_effect_for(s.op));
    t.series.push_back(std::move(s));
  }
  std::sort(t.series.begin(), t.series.end(),
            [](const TrendSeries& a, const TrendSeries& b) { return a.label < b.label; });
  return t;
}

}  // namespace k3reports
