#include "reports/trends.h"

#include <algorithm>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "harness/host/store/result_reads.h"
#include "harness/host/verdict/value_text.h"
#include "reports/distribution_trend.h"
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

Trends load_trends(k3store::Connection& db, const k3verdict::RunData& run,
                   const TrendWindow& window, const k3verdict::RegressionConfig& config) {
  Trends t;
  const std::string since = window.since.empty() ? "" : bound(window.since, "--since", false);
  const std::string until = window_until(window, run);
  t.runs = k3store::runs_in_window(
      db, run.target, since, until,
      static_cast<std::int64_t>(window.since.empty() ? std::max(window.last, 1) : 1000000));
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
  for (const auto& id : t.runs) {
    const auto process_ns = process_means_by_cell(db, id);
    for (const auto& point : k3store::run_points(db, id)) {
      const std::string key = k3verdict::config_key(
          run.target, point.op, nlohmann::json::parse(point.shape_json),
          nlohmann::json::parse(point.params_json), nlohmann::json::parse(point.measure_json));
      auto it = by_key.find(key);
      if (it == by_key.end() || !point.mean_ns) continue;
      TrendPoint p;
      p.run_uuid = point.run_uuid;
      p.started_at = point.started_at;
      p.build_hash = point.build_hash;
      p.mean_ns = *point.mean_ns;
      if (k3verdict::PerCall::of(nlohmann::json::parse(point.measure_json))
              .shows_interval(point.processes)) {
        p.ci_low_ns = point.ci_low_ns;
        p.ci_high_ns = point.ci_high_ns;
      }
      p.processes = point.processes;
      if (auto m = process_ns.find(point.cell_key); m != process_ns.end()) p.process_ns = m->second;
      it->second.points.push_back(p);
    }
  }
  for (auto& [key, s] : by_key) {
    std::vector<double> means;
    for (const auto& p : s.points) means.push_back(p.mean_ns);
    s.change_points = find_change_points(means, config.alpha, config.min_effect_for(s.op));
    s.distribution_changes =
        find_trend_distribution_changes(s, config.alpha, config.min_effect_for(s.op));
    t.series.push_back(std::move(s));
  }
  std::sort(t.series.begin(), t.series.end(),
            [](const TrendSeries& a, const TrendSeries& b) { return a.label < b.label; });
  return t;
}

}  // namespace k3reports
