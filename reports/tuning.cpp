#include "reports/tuning.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/host/verdict/value_text.h"

namespace k3reports {
namespace {

// Whether the tuner has written here: the tables exist in every schema-5 database, so only rows
// say it (a database of another tool could lack the tables altogether).
bool has_tables(k3store::Connection& db) {
  if (db.scalar_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                    " ('tuning_sessions', 'tuning_points', 'tuning_tables')") != 3)
    return false;
  return db.scalar_int("SELECT count(*) FROM tuning_sessions") + db.scalar_int("SELECT count(*) FROM tuning_tables") > 0;
}

// Numbers in numeric order, then the rest as text.
void sort_values(std::vector<std::string>& values) {
  auto number = [](const std::string& s, double& out) {
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return !s.empty() && end == s.c_str() + s.size();
  };
  std::sort(values.begin(), values.end(), [&](const std::string& a, const std::string& b) {
    double x = 0, y = 0;
    const bool na = number(a, x), nb = number(b, y);
    if (na && nb) return x < y;
    if (na != nb) return na;
    return a < b;
  });
}

struct Point {
  nlohmann::json config;
  bool measured = false;
  std::optional<double> mean_ns;
  std::string reason;
};

std::vector<Heatmap> heatmaps_of(const std::string& session, const std::string& op,
                                 const std::map<std::string, std::vector<Point>>& by_shape) {
  std::vector<Heatmap> out;
  for (const auto& [shape, points] : by_shape) {
    // Knob -> value -> measured points with it. The axes are the two knobs with the most values;
    // between knobs with as many, the one explored more evenly (its rarest value on more points:
    // a knob varied at one point only says little), then by name.
    std::map<std::string, std::map<std::string, int>> values;
    for (const auto& p : points)
      for (const auto& [k, v] : p.config.items())
        if (p.measured) ++values[k][k3verdict::value_text(v)];
    auto rarest = [&](const std::string& k) {
      int n = 0;
      for (const auto& [v, count] : values[k]) n = n == 0 ? count : std::min(n, count);
      return n;
    };
    std::vector<std::string> knobs;
    for (const auto& [k, vs] : values)
      if (vs.size() >= 2) knobs.push_back(k);
    if (knobs.empty()) continue;
    std::sort(knobs.begin(), knobs.end(), [&](const std::string& a, const std::string& b) {
      if (values[a].size() != values[b].size()) return values[a].size() > values[b].size();
      if (rarest(a) != rarest(b)) return rarest(a) > rarest(b);
      return a < b;
    });
    Heatmap h;
    h.session_id = session;
    h.op = op;
    h.shape = shape;
    h.x_knob = knobs[0];
    h.y_knob = knobs.size() > 1 ? knobs[1] : "";
    double best = 0;
    for (const auto& p : points)
      if (p.measured && p.mean_ns && (best == 0 || *p.mean_ns < best)) best = *p.mean_ns;
    std::map<std::pair<std::string, std::string>, HeatCell> cells;
    std::set<std::string> xs, ys;
    for (const auto& p : points) {
      const std::string x = p.config.contains(h.x_knob) ? k3verdict::value_text(p.config[h.x_knob]) : "-";
      const std::string y = h.y_knob.empty()              ? "all"
                            : p.config.contains(h.y_knob) ? k3verdict::value_text(p.config[h.y_knob])
                                                          : "-";
      xs.insert(x);
      ys.insert(y);
      HeatCell& c = cells[{x, y}];
      c.x = x;
      c.y = y;
      if (p.measured && p.mean_ns) {
        ++c.measured;
        ++h.measured;
        if (!c.mean_ns || *p.mean_ns < *c.mean_ns) c.mean_ns = p.mean_ns;
      } else {
        ++c.rejected;
        ++h.rejected;
        if (c.rejected_reason.empty()) c.rejected_reason = p.reason;
      }
    }
    h.x_values.assign(xs.begin(), xs.end());
    h.y_values.assign(ys.begin(), ys.end());
    sort_values(h.x_values);
    sort_values(h.y_values);
    for (auto& [key, c] : cells) {
      if (c.mean_ns && best > 0) {
        c.relative = *c.mean_ns / best;
        c.best = *c.mean_ns == best;
      }
      h.cells.push_back(c);
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

EntryEvidence evidence_of(const nlohmann::json& entry) {
  EntryEvidence e;
  const auto ev = entry.is_object() ? entry.value("evidence", nlohmann::json::object())
                                    : nlohmann::json::object();
  if (!ev.is_object()) return e;
  auto num = [&](const nlohmann::json& v) {
    return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
  };
  auto field = [&](const char* key) { return ev.contains(key) ? num(ev[key]) : std::nullopt; };
  auto interval = [&](const char* key, std::optional<double>& low, std::optional<double>& high) {
    if (!ev.contains(key) || !ev[key].is_array() || ev[key].size() != 2) return;
    low = num(ev[key][0]);
    high = num(ev[key][1]);
  };
  e.mean = field("mean");
  e.default_mean = field("default_mean");
  e.speedup = field("speedup");
  interval("ci95", e.ci_low, e.ci_high);
  interval("speedup_ci95", e.speedup_low, e.speedup_high);
  if (ev.contains("processes") && ev["processes"].is_number_integer())
    e.processes = ev["processes"].get<int>();
  if (ev.contains("unit") && ev["unit"].is_string()) e.unit = ev["unit"].get<std::string>();
  return e;
}

std::string evidence_value_text(const EntryEvidence& e, const std::optional<double>& value) {
  if (!value) return "-";
  if (e.unit.empty() || e.unit == "ns per call") return fmt::format("{:.3f} us", *value / 1e3);
  return fmt::format("{:.4g} {}", *value, e.unit);
}

TuningData load_tuning(k3store::Connection& db, const k3verdict::RunData& run, const std::string& until,
                       int max_sessions) {
  TuningData t;
  if (!has_tables(db)) {
    t.note =
        "no tuning sessions: this database has no tuning tables (the tuner has not written to it)";
    return t;
  }
  t.available = true;
  auto s = db.prepare(
      "SELECT session_id, created_at, coalesce(finished_at, ''), coalesce(command, ''),"
      " coalesce(op, ''), coalesce(model, ''), coalesce(strategy, ''), coalesce(objective, ''),"
      " coalesce(status, ''), budget FROM tuning_sessions WHERE target = ?1 AND created_at <= ?2"
      " ORDER BY created_at DESC LIMIT ?3");
  s.bind(1, run.target).bind(2, until).bind(3, static_cast<std::int64_t>(max_sessions));
  while (s.step()) {
    TuningSession x;
    x.session_id = s.text(0);
    x.created_at = s.text(1);
    x.finished_at = s.text(2);
    x.command = s.text(3);
    x.op = s.text(4);
    x.model = s.text(5);
    x.strategy = s.text(6);
    x.objective = s.text(7);
    x.status = s.text(8);
    if (!s.is_null(9)) x.budget = s.real(9);
    t.sessions.push_back(x);
  }
  auto points = db.prepare(
      "SELECT shape_json, config_json, status, coalesce(reason, ''), mean_ns, op"
      " FROM tuning_points WHERE session_id = ?1 ORDER BY point_key");
  // A table can draw on several sessions (sessions_json): it is listed once, under the first.
  auto tables = db.prepare(
      "SELECT t.table_id, t.created_at, coalesce(t.path, ''), t.table_json, t.sessions_json"
      " FROM tuning_tables t WHERE EXISTS (SELECT 1 FROM json_each(t.sessions_json) s"
      " WHERE s.value = ?1) ORDER BY t.created_at");
  std::set<std::string> listed;
  for (auto& session : t.sessions) {
    std::map<std::string, std::vector<Point>> by_shape;
    std::string op = session.op;
    points.bind(1, session.session_id);
    while (points.step()) {
      Point p;
      p.config = nlohmann::json::parse(points.text(1), nullptr, false);
      if (!p.config.is_object()) continue;
      p.measured = points.text(2) == "measured";
      p.reason = points.text(3);
      if (!points.is_null(4)) p.mean_ns = points.real(4);
      if (op.empty()) op = points.text(5);
      session.measured += p.measured;
      session.rejected += !p.measured;
      const auto shape = nlohmann::json::parse(points.text(0), nullptr, false);
      by_shape[shape.is_object() ? k3verdict::shape_text(shape) : points.text(0)].push_back(std::move(p));
    }
    points.reset();
    for (auto& h : heatmaps_of(session.session_id, op, by_shape))
      t.heatmaps.push_back(std::move(h));
    tables.bind(1, session.session_id);
    while (tables.step()) {
      TuningTable tt;
      tt.table_id = tables.text(0);
      if (!listed.insert(tt.table_id).second) continue;
      tt.created_at = tables.text(1);
      tt.path = tables.text(2);
      tt.table = nlohmann::json::parse(tables.text(3), nullptr, false);
      if (tt.table.is_discarded()) tt.table = nullptr;
      const auto sessions = nlohmann::json::parse(tables.text(4), nullptr, false);
      if (sessions.is_array())
        for (const auto& id : sessions)
          if (id.is_string()) tt.sessions.push_back(id.get<std::string>());
      t.tables.push_back(std::move(tt));
    }
    tables.reset();
  }
  t.note = t.sessions.empty()
               ? fmt::format("no tuning sessions of target {} up to {}", run.target, until)
               : fmt::format("{} tuning session(s) of target {} up to {}", t.sessions.size(),
                             run.target, until);
  return t;
}

}  // namespace k3reports
