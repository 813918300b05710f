#include "reports/tuning.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/host/store/tuning_sessions.h"
#include "harness/host/store/tuning_tables.h"
#include "harness/host/verdict/value_text.h"

namespace k3reports {
namespace {

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
  if (ev.contains("conclusive") && ev["conclusive"].is_boolean())
    e.conclusive = ev["conclusive"].get<bool>();
  if (ev.contains("paired_rounds") && ev["paired_rounds"].is_number_integer())
    e.paired_rounds = ev["paired_rounds"].get<int>();
  if (e.processes && *e.processes < static_cast<int>(k3stats::kMinProcessesForInterval))
    e.ci_low = e.ci_high = std::nullopt;
  if (!e.conclusive) e.speedup_low = e.speedup_high = std::nullopt;
  return e;
}

std::string evidence_interval_text(const EntryEvidence& e) {
  if (e.ci_low && e.ci_high)
    return evidence_value_text(e, e.ci_low) + " .. " + evidence_value_text(e, e.ci_high);
  return e.processes && *e.processes < static_cast<int>(k3stats::kMinProcessesForInterval)
             ? k3verdict::too_few_for_an_interval(*e.processes, "process", "processes")
             : "-";
}

std::string speedup_interval_text(const EntryEvidence& e, const char* open, const char* close) {
  if (e.speedup_low && e.speedup_high)
    return fmt::format("{}{:.3f}, {:.3f}{}", open, *e.speedup_low, *e.speedup_high, close);
  return e.conclusive ? ""
                      : "(" +
                            k3verdict::too_few_for_an_interval(e.paired_rounds, "paired round",
                                                               "paired rounds") +
                            ")";
}

std::string evidence_value_text(const EntryEvidence& e, const std::optional<double>& value) {
  if (!value) return "-";
  if (e.unit.empty() || e.unit == "ns per call") return fmt::format("{:.3f} us", *value / 1e3);
  return fmt::format("{:.4g} {}", *value, e.unit);
}

TuningData load_tuning(k3store::Connection& db, const k3verdict::RunData& run, const std::string& until,
                       int max_sessions) {
  TuningData t;
  if (!k3store::has_tuning_rows(db)) {
    t.note =
        "no tuning sessions: this database has no tuning tables (the tuner has not written to it)";
    return t;
  }
  t.available = true;
  for (const auto& row :
       k3store::tuning_sessions(db, run.target, until, static_cast<std::int64_t>(max_sessions))) {
    t.sessions.push_back({.session_id = row.session_id,
                          .created_at = row.created_at,
                          .finished_at = row.finished_at,
                          .command = row.command,
                          .op = row.op,
                          .model = row.model,
                          .strategy = row.strategy,
                          .objective = row.objective,
                          .status = row.status,
                          .budget = row.budget});
  }
  // A table can draw on several sessions (sessions_json): it is listed once, under the first.
  std::set<std::string> listed;
  for (auto& session : t.sessions) {
    std::map<std::string, std::vector<Point>> by_shape;
    std::string op = session.op;
    for (const auto& row : k3store::tuning_points(db, session.session_id)) {
      Point p;
      p.config = nlohmann::json::parse(row.config_json, nullptr, false);
      if (!p.config.is_object()) continue;
      p.measured = row.status == "measured";
      p.reason = row.reason;
      p.mean_ns = row.mean_ns;
      if (op.empty()) op = row.op;
      session.measured += p.measured;
      session.rejected += !p.measured;
      const auto shape = nlohmann::json::parse(row.shape_json, nullptr, false);
      by_shape[shape.is_object() ? k3verdict::shape_text(shape) : row.shape_json].push_back(
          std::move(p));
    }
    for (auto& h : heatmaps_of(session.session_id, op, by_shape))
      t.heatmaps.push_back(std::move(h));
    for (const auto& row : k3store::tables_of_session(db, session.session_id)) {
      TuningTable tt;
      tt.table_id = row.table_id;
      if (!listed.insert(tt.table_id).second) continue;
      tt.created_at = row.created_at;
      tt.path = row.path;
      tt.table = nlohmann::json::parse(row.table_json, nullptr, false);
      if (tt.table.is_discarded()) tt.table = nullptr;
      const auto sessions = nlohmann::json::parse(row.sessions_json, nullptr, false);
      if (sessions.is_array())
        for (const auto& id : sessions)
          if (id.is_string()) tt.sessions.push_back(id.get<std::string>());
      t.tables.push_back(std::move(tt));
    }
  }
  t.note = t.sessions.empty()
               ? fmt::format("no tuning sessions of target {} up to {}", run.target, until)
               : fmt::format("{} tuning session(s) of target {} up to {}", t.sessions.size(),
                             run.target, until);
  return t;
}

}  // namespace k3reports
