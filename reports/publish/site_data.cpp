#include "reports/publish/site_data.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/change_points.h"
#include "harness/host/verdict/run_data.h"
#include "harness/host/verdict/value_text.h"
#include "harness/host/verdict/verdict.h"
#include "tuner/table.h"

namespace k3publish {
namespace {

using nlohmann::json;

std::optional<int> opt_int(k3store::Statement& s, int col) {
  return s.is_null(col) ? std::nullopt : std::optional<int>(static_cast<int>(s.integer(col)));
}

std::vector<SiteNight> load_nights(k3store::Connection& db,
                                   std::map<std::string, std::string>& dirs) {
  std::vector<SiteNight> nights;
  auto s = db.prepare(
      "SELECT n.nightly_id, n.profile, n.dir, n.started_at, coalesce(n.finished_at, ''), n.status,"
      " n.exit_code, coalesce(n.host_build_hash, ''), coalesce(b.source_revision, ''),"
      " coalesce(n.verdict_run_uuid, '') FROM nightlies n"
      " LEFT JOIN builds b ON b.build_hash = n.host_build_hash ORDER BY n.started_at, n.rowid");
  std::map<std::string, std::size_t> index;
  while (s.step()) {
    SiteNight n;
    n.nightly_id = s.text(0);
    n.profile = s.text(1);
    dirs[n.nightly_id] = s.text(2);
    n.started_at = s.text(3);
    n.finished_at = s.text(4);
    n.status = s.text(5);
    n.exit_code = opt_int(s, 6);
    n.host_build_hash = s.text(7);
    n.source_revision = s.text(8);
    n.verdict_run_uuid = s.text(9);
    index[n.nightly_id] = nights.size();
    nights.push_back(std::move(n));
  }
  auto steps = db.prepare(
      "SELECT nightly_id, step, status, exit_code, wall_s FROM nightly_steps"
      " ORDER BY nightly_id, seq, step");
  while (steps.step()) {
    auto it = index.find(steps.text(0));
    if (it == index.end()) continue;
    SiteStep st{steps.text(1), steps.text(2), opt_int(steps, 3), std::nullopt};
    if (!steps.is_null(4)) st.wall_s = steps.real(4);
    nights[it->second].steps.push_back(std::move(st));
  }
  return nights;
}

std::vector<SiteRun> load_runs(k3store::Connection& db) {
  std::vector<SiteRun> runs;
  auto s = db.prepare(
      "SELECT r.run_uuid, r.command, r.target, r.build_hash, coalesce(b.source_revision, ''),"
      " r.started_at, r.status, CASE WHEN json_valid(r.settings_json)"
      " THEN coalesce(json_extract(r.settings_json, '$.metric'), '') ELSE '' END"
      " FROM runs r LEFT JOIN builds b ON b.build_hash = r.build_hash"
      " ORDER BY r.started_at, r.rowid");
  std::unordered_map<std::string, std::size_t> index;
  while (s.step()) {
    SiteRun r;
    r.run_uuid = s.text(0);
    r.command = s.text(1);
    r.target = s.text(2);
    r.build_hash = s.text(3);
    r.source_revision = s.text(4);
    r.started_at = s.text(5);
    r.status = s.text(6);
    r.counts = k3verdict::PerCall::of(json{{"metric", s.text(7)}}).instructions;
    index[r.run_uuid] = runs.size();
    runs.push_back(std::move(r));
  }
  auto cells = db.prepare(
      "SELECT a.run_uuid, c.target, sum(a.status = 'ok'), sum(a.status = 'failed')"
      " FROM aggregates a JOIN cells c ON c.cell_key = a.cell_key GROUP BY a.run_uuid, c.target");
  while (cells.step()) {
    auto it = index.find(cells.text(0));
    if (it == index.end()) continue;
    SiteRun& r = runs[it->second];
    r.boards.insert(cells.text(1));
    r.cells_ok += static_cast<int>(cells.integer(2));
    r.cells_failed += static_cast<int>(cells.integer(3));
  }
  return runs;
}

// A run belongs to the nightly that was running when it started: from the night's start to its
// end (or, for a night that never finished, to the next night's start).
void assign_runs_to_nights(std::vector<SiteNight>& nights, std::vector<SiteRun>& runs) {
  for (std::size_t i = 0; i < nights.size(); ++i) {
    SiteNight& n = nights[i];
    const std::string end = !n.finished_at.empty()  ? n.finished_at
                            : i + 1 < nights.size() ? nights[i + 1].started_at
                                                    : std::string("\x7f");
    auto first =
        std::lower_bound(runs.begin(), runs.end(), n.started_at,
                         [](const SiteRun& r, const std::string& t) { return r.started_at < t; });
    for (auto r = first; r != runs.end() && r->started_at <= end; ++r) {
      if (!r->nightly_id.empty()) continue;  // an earlier night's window reached it
      r->nightly_id = n.nightly_id;
      n.runs.push_back(r->run_uuid);
      n.boards.insert(r->boards.begin(), r->boards.end());
    }
  }
}

// Labels of a page's series: the parameters and settings whose values differ among them (the rest
// are the page's own op and shape, or the same everywhere).
void label_series(History& h) {
  std::map<std::string, std::set<std::string>> values;
  std::vector<json> keys;
  for (const auto& s : h.series) {
    keys.push_back(json::parse(s.config_key));
    for (const char* part : {"params", "settings"})
      for (const auto& [k, v] : keys.back()[part].items())
        values[k].insert(k3verdict::value_text(v));
  }
  for (std::size_t i = 0; i < h.series.size(); ++i) {
    std::string label;
    for (const char* part : {"params", "settings"})
      for (const auto& [k, v] : keys[i][part].items())
        if (values[k].size() > 1)
          label += (label.empty() ? "" : ",") + k + "=" + k3verdict::value_text(v);
    h.series[i].label = label.empty() ? h.op + " " + h.shape : label;
  }
  // A key some series lack can leave two labels equal; the chart facets by label, so those name
  // every parameter and setting instead.
  std::map<std::string, int> uses;
  for (const auto& s : h.series) ++uses[s.label];
  for (std::size_t i = 0; i < h.series.size(); ++i) {
    if (uses[h.series[i].label] < 2) continue;
    h.series[i].label = keys[i]["params"].dump() + " " + keys[i]["settings"].dump();
  }
}

std::vector<k3reports::ChangePoint> count_changes(const k3reports::TrendSeries& s) {
  std::vector<k3reports::ChangePoint> out;
  auto jitter = [](const k3reports::TrendPoint& p) {
    return p.ci_low_ns && p.ci_high_ns ? std::max(0.0, (*p.ci_high_ns - *p.ci_low_ns) / 2) : 0.0;
  };
  for (std::size_t i = 1; i < s.points.size(); ++i) {
    const auto& a = s.points[i - 1];
    const auto& b = s.points[i];
    const auto v = k3verdict::exact_count_verdict(a.mean_ns, jitter(a), b.mean_ns, jitter(b));
    if (v.outcome != k3verdict::Outcome::kUnchanged) out.push_back({i, v.cmp.rel_diff, 0.0});
  }
  return out;
}

std::vector<History> load_histories(k3store::Connection& db, const std::vector<SiteRun>& runs,
                                    const k3verdict::RegressionConfig& rules) {
  std::unordered_map<std::string, bool> counts_run;
  for (const auto& r : runs) counts_run[r.run_uuid] = r.counts;
  // Every figure of a run's own build (the baseline build of an A/B run is the previous night's
  // figure, already in its own run), in time order.
  auto s = db.prepare(
      "SELECT r.run_uuid, r.started_at, r.build_hash, c.target, c.op, c.shape_json, c.params_json,"
      " c.measure_json, a.mean_ns, a.ci_low_ns, a.ci_high_ns, a.processes"
      " FROM aggregates a JOIN runs r ON r.run_uuid = a.run_uuid"
      " JOIN cells c ON c.cell_key = a.cell_key AND c.build_hash = r.build_hash"
      " WHERE a.status = 'ok' AND a.mean_ns IS NOT NULL ORDER BY r.started_at, r.rowid");
  struct Identity {
    std::size_t history = 0;
    std::string config_key;
  };
  std::unordered_map<std::string, Identity> identities;  // the cell's text columns -> identity
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> pages;
  std::vector<History> histories;
  std::vector<std::map<std::string, k3reports::TrendSeries>> series;
  while (s.step()) {
    const std::string text = s.text(3) + '\x1f' + s.text(4) + '\x1f' + s.text(5) + '\x1f' +
                             s.text(6) + '\x1f' + s.text(7);
    auto id = identities.find(text);
    if (id == identities.end()) {
      const json shape = json::parse(s.text(5)), params = json::parse(s.text(6)),
                 measure = json::parse(s.text(7));
      const auto page = std::make_tuple(s.text(3), s.text(4), k3verdict::shape_text(shape));
      auto p = pages.find(page);
      if (p == pages.end()) {
        p = pages.emplace(page, histories.size()).first;
        History h;
        h.target = std::get<0>(page);
        h.op = std::get<1>(page);
        h.shape = std::get<2>(page);
        h.counts = counts_run[s.text(0)];
        histories.push_back(std::move(h));
        series.emplace_back();
      }
      id = identities
               .emplace(text, Identity{p->second, k3verdict::config_key(s.text(3), s.text(4), shape,
                                                                        params, measure)})
               .first;
    }
    auto& by_key = series[id->second.history];
    auto it = by_key.find(id->second.config_key);
    if (it == by_key.end()) {
      k3reports::TrendSeries t;
      t.config_key = id->second.config_key;
      t.op = histories[id->second.history].op;
      t.shape = histories[id->second.history].shape;
      it = by_key.emplace(id->second.config_key, std::move(t)).first;
    }
    k3reports::TrendPoint p;
    p.run_uuid = s.text(0);
    p.started_at = s.text(1);
    p.build_hash = s.text(2);
    p.mean_ns = s.real(8);
    if (!s.is_null(9)) p.ci_low_ns = s.real(9);
    if (!s.is_null(10)) p.ci_high_ns = s.real(10);
    p.processes = static_cast<int>(s.integer(11));
    it->second.points.push_back(std::move(p));
  }
  for (std::size_t i = 0; i < histories.size(); ++i) {
    History& h = histories[i];
    for (auto& [key, t] : series[i]) {
      if (h.counts) {
        t.change_points = count_changes(t);
      } else {
        std::vector<double> means;
        for (const auto& p : t.points) means.push_back(p.mean_ns);
        t.change_points =
            k3reports::find_change_points(means, rules.alpha, rules.min_effect_for(h.op));
      }
      h.series.push_back(std::move(t));
    }
    label_series(h);
    std::stable_sort(h.series.begin(), h.series.end(), [](const auto& a, const auto& b) {
      return a.points.size() != b.points.size() ? a.points.size() > b.points.size()
                                                : a.label < b.label;
    });
  }
  std::sort(histories.begin(), histories.end(), [](const History& a, const History& b) {
    return std::tie(a.counts, a.target, a.op, a.shape) <
           std::tie(b.counts, b.target, b.op, b.shape);
  });
  return histories;
}

std::vector<TableHistory> load_tables(k3store::Connection& db,
                                      const std::map<std::string, std::string>& night_dirs) {
  namespace fs = std::filesystem;
  std::map<std::string, TableHistory> by_name;
  std::map<std::string, json> previous;  // name -> the previous version's JSON
  auto s = db.prepare(
      "SELECT table_id, created_at, coalesce(path, ''), table_json FROM tuning_tables"
      " ORDER BY created_at, rowid");
  while (s.step()) {
    TableVersion v;
    v.table_id = s.text(0);
    v.created_at = s.text(1);
    v.path = s.text(2);
    const std::string name = v.path.empty() ? "unnamed" : fs::path(v.path).stem().string();
    // A nightly writes its tables under its own folder (<dir>/tables/<name>.json).
    const std::string table_path = fs::path(v.path).lexically_normal().string();
    for (const auto& [id, dir] : night_dirs)
      if (!dir.empty() &&
          table_path.rfind((fs::path(dir) / "").lexically_normal().string(), 0) == 0)
        v.nightly_id = id;
    const json table = json::parse(s.text(3), nullptr, false);
    if (table.is_object() && table.contains("entries") && table["entries"].is_array())
      v.entries = static_cast<int>(table["entries"].size());
    auto prev = previous.find(name);
    if (prev != previous.end()) {
      try {
        v.diff = k3tuner::diff_tables(prev->second, table);
        // Only the closing count: nothing added, removed or changed.
        v.changed = std::count(v.diff.begin(), v.diff.end(), '\n') > 1;
      } catch (const std::exception& e) {
        v.diff = fmt::format("not comparable ({})\n", e.what());
      }
    }
    previous[name] = table;
    auto& h = by_name[name];
    h.name = name;
    h.versions.push_back(std::move(v));
  }
  std::vector<TableHistory> out;
  for (auto& [name, h] : by_name) out.push_back(std::move(h));
  return out;
}

}  // namespace

std::size_t History::points() const {
  std::size_t n = 0;
  for (const auto& s : series) n += s.points.size();
  return n;
}

std::string SiteNight::verdict() const {
  auto steps_with = [&](auto pred) {
    std::string names;
    for (const auto& s : steps)
      if (pred(s)) names += (names.empty() ? "" : ", ") + s.step;
    return names;
  };
  if (status == "regression")
    return "REGRESSION: " + steps_with([](const SiteStep& s) { return s.exit_code == 4; });
  if (status == "failed")
    return "a step failed: " + steps_with([](const SiteStep& s) { return s.status == "failed"; });
  if (status == "running") return "not finished (running, or stopped: k3tune nightly --resume)";
  if (exit_code == 3) return "no regression; cells failed or boards were quarantined";
  const bool judged = !steps_with([](const SiteStep& s) {
                         return s.status == "done" && (s.step.rfind("verdict", 0) == 0 ||
                                                       s.step.rfind("count-verdict-", 0) == 0 ||
                                                       s.step.rfind("board-judge-", 0) == 0);
                       }).empty();
  return judged ? "no regression" : "ok (no verdict step)";
}

// The bisections that chased a night's regression (k3tune bisect --from-nightly, or the full
// profile's bisect step): each one a note on that night's page, with what it found.
void attach_bisections(k3store::Connection& db, std::vector<SiteNight>& nights) {
  std::map<std::string, SiteNight*> by_id;
  for (auto& n : nights) by_id[n.nightly_id] = &n;
  auto s = db.prepare(
      "SELECT b.nightly_id, b.status, coalesce(b.first_bad, ''), coalesce(b.range_json, '[]'),"
      " b.good_revision, b.bad_revision, b.metric, b.commits,"
      " (SELECT count(DISTINCT seq) FROM bisection_probes p WHERE p.bisection_id = b.bisection_id),"
      " (SELECT count(DISTINCT seq) FROM bisection_probes p WHERE p.bisection_id = b.bisection_id"
      "  AND p.outcome = 'skip')"
      " FROM bisections b WHERE b.nightly_id IS NOT NULL ORDER BY b.started_at");
  while (s.step()) {
    const auto it = by_id.find(s.text(0));
    if (it == by_id.end()) continue;
    const std::string status = s.text(1);
    const auto range = json::parse(s.text(3), nullptr, false);
    std::string found = status == "found"   ? "first bad commit " + s.text(2).substr(0, 12)
                        : status == "range" ? fmt::format("hidden by skips in {} commits",
                                                          range.is_array() ? range.size() : 0)
                                            : status;
    it->second->notes.push_back(
        {"bisection (" + s.text(6) + ")",
         fmt::format("{}: {}..{}, {} commits, {} probes ({} skipped)", found,
                     s.text(4).substr(0, 12), s.text(5).substr(0, 12), s.integer(7), s.integer(8),
                     s.integer(9)),
         ""});
  }
}

SiteData load_site(k3store::Connection& db, const k3verdict::RegressionConfig& rules) {
  SiteData site;
  site.db_path = db.path();
  std::map<std::string, std::string> night_dirs;
  site.nights = load_nights(db, night_dirs);
  site.runs = load_runs(db);
  assign_runs_to_nights(site.nights, site.runs);
  attach_bisections(db, site.nights);
  site.histories = load_histories(db, site.runs, rules);
  site.tables = load_tables(db, night_dirs);
  return site;
}

}  // namespace k3publish
