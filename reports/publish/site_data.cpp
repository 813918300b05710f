#include "reports/publish/site_data.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/store/bisections.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/store/result_reads.h"
#include "harness/host/store/tuning_tables.h"
#include "harness/host/verdict/run_data.h"
#include "harness/host/verdict/value_text.h"
#include "harness/host/verdict/verdict.h"
#include "reports/change_points.h"
#include "reports/distribution_trend.h"
#include "tuner/table.h"

namespace k3publish {
namespace {

using nlohmann::json;

std::vector<SiteNight> load_nights(k3store::Connection& db,
                                   std::map<std::string, std::string>& dirs) {
  std::vector<SiteNight> nights;
  std::map<std::string, std::size_t> index;
  for (const auto& row : k3store::all_nightlies(db)) {
    SiteNight n;
    n.nightly_id = row.nightly_id;
    n.profile = row.profile;
    dirs[n.nightly_id] = row.dir;
    n.started_at = row.started_at;
    n.finished_at = row.finished_at;
    n.status = row.status;
    n.exit_code = row.exit_code;
    n.host_build_hash = row.host_build_hash;
    n.source_revision = row.host_revision;
    n.verdict_run_uuid = row.verdict_run_uuid;
    index[n.nightly_id] = nights.size();
    nights.push_back(std::move(n));
  }
  for (const auto& step : k3store::all_nightly_steps(db)) {
    auto it = index.find(step.nightly_id);
    if (it == index.end()) continue;
    nights[it->second].steps.push_back({step.step, step.status, step.exit_code, step.wall_s});
  }
  return nights;
}

// The metric of a run's settings ("" when it names none).
std::string metric_of(const std::string& settings_json) {
  const auto settings = json::parse(settings_json, nullptr, false);
  if (!settings.is_object() || !settings.contains("metric") || settings["metric"].is_null())
    return "";
  const auto& metric = settings["metric"];
  return metric.is_string() ? metric.get<std::string>() : metric.dump();
}

std::vector<SiteRun> load_runs(k3store::Connection& db) {
  std::map<std::string, std::string> revisions;  // build hash -> source revision
  for (const auto& b : k3store::all_builds(db)) revisions[b.build_hash] = b.source_revision;
  std::vector<SiteRun> runs;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& row : k3store::all_runs(db)) {
    SiteRun r;
    r.run_uuid = row.run_uuid;
    r.command = row.command;
    r.target = row.target;
    r.build_hash = row.build_hash;
    if (auto it = revisions.find(row.build_hash); it != revisions.end())
      r.source_revision = it->second;
    r.started_at = row.started_at;
    r.status = row.status;
    r.counts = k3verdict::PerCall::of(json{{"metric", metric_of(row.settings_json)}}).instructions;
    index[r.run_uuid] = runs.size();
    runs.push_back(std::move(r));
  }
  for (const auto& counts : k3store::aggregate_counts(db)) {
    auto it = index.find(counts.run_uuid);
    if (it == index.end()) continue;
    SiteRun& r = runs[it->second];
    r.boards.insert(counts.target);
    r.cells_ok += counts.ok;
    r.cells_failed += counts.failed;
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
  struct Identity {
    std::size_t history = 0;
    std::string config_key;
  };
  std::unordered_map<std::string, Identity> identities;  // the cell's text columns -> identity
  // A page per (target, op, shape) and unit: instruction counts and times of the same cell (the
  // nightly's count step and a timed bench on one target name) never share a series or an axis.
  std::map<std::tuple<std::string, std::string, std::string, bool>, std::size_t> pages;
  std::vector<History> histories;
  std::vector<std::map<std::string, k3reports::TrendSeries>> series;
  // The counted processes' times of each timed run, read once per run.
  std::unordered_map<std::string, std::map<std::string, std::vector<double>>> process_ns;
  for (const auto& row : k3store::all_points(db)) {
    const bool counts = counts_run[row.run_uuid];
    const std::string text = std::string(counts ? "counts" : "time") + '\x1f' + row.target +
                             '\x1f' + row.op + '\x1f' + row.shape_json + '\x1f' + row.params_json +
                             '\x1f' + row.measure_json;
    auto id = identities.find(text);
    if (id == identities.end()) {
      const json shape = json::parse(row.shape_json), params = json::parse(row.params_json),
                 measure = json::parse(row.measure_json);
      const auto page = std::make_tuple(row.target, row.op, k3verdict::shape_text(shape), counts);
      auto p = pages.find(page);
      if (p == pages.end()) {
        p = pages.emplace(page, histories.size()).first;
        History h;
        h.target = std::get<0>(page);
        h.op = std::get<1>(page);
        h.shape = std::get<2>(page);
        h.counts = counts;
        histories.push_back(std::move(h));
        series.emplace_back();
      }
      id = identities
               .emplace(text, Identity{p->second, k3verdict::config_key(row.target, row.op, shape,
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
    p.run_uuid = row.run_uuid;
    p.started_at = row.started_at;
    p.build_hash = row.build_hash;
    p.mean_ns = row.mean_ns.value_or(0);  // all_points: every point has a mean
    if (k3verdict::PerCall{counts}.shows_interval(row.processes)) {
      p.ci_low_ns = row.ci_low_ns;
      p.ci_high_ns = row.ci_high_ns;
    }
    p.processes = row.processes;
    if (!counts) {
      auto run = process_ns.find(row.run_uuid);
      if (run == process_ns.end())
        run = process_ns.emplace(row.run_uuid, k3reports::process_means_by_cell(db, row.run_uuid))
                  .first;
      if (auto m = run->second.find(row.cell_key); m != run->second.end()) p.process_ns = m->second;
    }
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
        t.distribution_changes =
            k3reports::find_trend_distribution_changes(t, rules.alpha, rules.min_effect_for(h.op));
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
  for (const auto& row : k3store::all_tuning_tables(db)) {
    TableVersion v;
    v.table_id = row.table_id;
    v.created_at = row.created_at;
    v.path = row.path;
    const std::string name = v.path.empty() ? "unnamed" : fs::path(v.path).stem().string();
    // A nightly writes its tables under its own folder (<dir>/tables/<name>.json).
    const std::string table_path = fs::path(v.path).lexically_normal().string();
    for (const auto& [id, dir] : night_dirs)
      if (!dir.empty() &&
          table_path.rfind((fs::path(dir) / "").lexically_normal().string(), 0) == 0)
        v.nightly_id = id;
    const json table = json::parse(row.table_json, nullptr, false);
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
  for (const auto& x : k3store::nightly_bisections(db)) {
    const auto& b = x.bisection;
    const auto it = by_id.find(b.nightly_id);
    if (it == by_id.end()) continue;
    const auto range = json::parse(b.range_json, nullptr, false);
    std::string found = b.status == "found"   ? "first bad commit " + b.first_bad.substr(0, 12)
                        : b.status == "range" ? fmt::format("hidden by skips in {} commits",
                                                            range.is_array() ? range.size() : 0)
                                              : b.status;
    it->second->notes.push_back(
        {"bisection (" + b.metric + ")",
         fmt::format("{}: {}..{}, {} commits, {} probes ({} skipped)", found,
                     b.good_revision.substr(0, 12), b.bad_revision.substr(0, 12), b.commits,
                     x.probed, x.skipped),
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
