// report.json: everything the Markdown and the HTML show, for other tools. Times in ns per call,
// bandwidths in GB/s (1e9 bytes/s), throughput in GOPS (1e9 operations/s).
#include <cmath>

#include "reports/distribution_trend.h"
#include "reports/report.h"

namespace k3reports {
namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json build_json(const k3verdict::BuildInfo& b) {
  return {
      {"build_hash", b.build_hash},
      {"label", b.label},
      {"variant", b.variant},
      {"binary_path", b.binary_path},
      {"compiler", b.compiler},
      {"flags", b.flags},
      {"cmake_options", nlohmann::json::parse(b.cmake_options, nullptr, false).is_discarded()
                            ? nlohmann::json(b.cmake_options)
                            : nlohmann::json::parse(b.cmake_options)},
      {"source_revision", b.source_revision},
      {"source_dirty", b.source_dirty ? nlohmann::json(*b.source_dirty) : nlohmann::json(nullptr)},
      {"recorded_by", b.recorded_by},
      {"created_at", b.created_at}};
}

// Per-call figures keep their *_ns names in every run; `per_call_unit` of the run says whether
// they are nanoseconds or instructions (count runs), and rates exist only for timed runs.
nlohmann::json cell_json(const k3verdict::CellFigures& c, const k3verdict::PerCall& per_call) {
  nlohmann::json j = {{"label", c.label},
                      {"op", c.op},
                      {"model", c.model},
                      {"shape", c.shape},
                      {"params", c.params},
                      {"measure", c.measure},
                      {"build_hash", c.build_hash},
                      {"cell_key", c.cell_key},
                      {"path", c.path},
                      {"status", c.ok ? "ok" : "failed"},
                      {"reason", c.reason},
                      {"processes", c.processes},
                      {"excluded_processes", c.excluded_processes},
                      {"mean_ns", opt(c.mean_ns)},
                      {"ci95_ns", {opt(c.ci_low_ns), opt(c.ci_high_ns)}},
                      {"cv_between_processes", opt(c.cv_between)},
                      {"median_ns", opt(c.median_ns)},
                      {"min_ns", opt(c.min_ns)},
                      {"wide_ci", c.wide_ci},
                      {"process_means_ns", c.process_means},
                      {"error_to_bound", opt(c.error_to_bound)},
                      {"max_abs_err", opt(c.max_abs_err)},
                      {"accuracy_pass", c.accuracy_pass ? nlohmann::json(*c.accuracy_pass)
                                                        : nlohmann::json(nullptr)},
                      {"output_checksum", c.output_checksum},
                      {"bytes_per_call", opt(c.bytes_per_call)},
                      {"ops_per_call", opt(c.ops_per_call)}};
  if (!per_call.instructions && c.mean_ns && c.bytes_per_call)
    j["gbps"] = *c.bytes_per_call / *c.mean_ns;
  if (!per_call.instructions && c.mean_ns && c.ops_per_call)
    j["gops"] = *c.ops_per_call / *c.mean_ns;
  return j;
}

nlohmann::json run_json(const k3verdict::RunData& r) {
  nlohmann::json builds = nlohmann::json::array(), cells = nlohmann::json::array();
  for (const auto& b : r.builds) builds.push_back(build_json(b));
  for (const auto& c : r.cells) cells.push_back(cell_json(c, r.per_call));
  return {{"run_uuid", r.run_uuid},
          {"per_call_unit", r.per_call.instructions ? "instructions" : "ns"},
          {"command", r.command},
          {"target", r.target},
          {"build_hash", r.build_hash},
          {"host", r.host},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"status", r.status},
          {"model", r.model},
          {"wall_s", opt(r.wall_s)},
          {"kernel_s", opt(r.kernel_s)},
          {"warmup_s", opt(r.warmup_s)},
          {"overhead_s", opt(r.overhead_s)},
          {"settings", r.settings},
          {"cpu_model", r.cpu_model},
          {"marchid", r.marchid},
          {"arch", r.arch},
          {"environment", r.environment},
          {"processes",
           {{"ok", r.processes_ok},
            {"failed", r.processes_failed},
            {"disturbed", r.processes_disturbed}}},
          {"builds", builds},
          {"cells", cells}};
}

nlohmann::json trends_json(const Trends& t) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : t.series) {
    nlohmann::json points = nlohmann::json::array(), changes = nlohmann::json::array();
    for (const auto& p : s.points) {
      points.push_back({{"run_uuid", p.run_uuid},
                        {"started_at", p.started_at},
                        {"build_hash", p.build_hash},
                        {"mean_ns", p.mean_ns},
                        {"ci95_ns", {opt(p.ci_low_ns), opt(p.ci_high_ns)}},
                        {"processes", p.processes}});
    }
    for (const auto& c : s.change_points) {
      changes.push_back({{"index", c.index},
                         {"run_uuid", s.points[c.index].run_uuid},
                         {"started_at", s.points[c.index].started_at},
                         {"rel_change", c.rel_change},
                         {"p_value", c.p_value}});
    }
    nlohmann::json distribution = nlohmann::json::array();
    for (const auto& c : s.distribution_changes) {
      const auto& w = c.what;
      auto component = [](const k3stats::ChangeComponent& x) {
        return nlohmann::json{{"size", x.size}, {"p_value", x.p_value}, {"passes", x.passes}};
      };
      distribution.push_back({{"index", c.index},
                              {"run_uuid", s.points[c.index].run_uuid},
                              {"started_at", s.points[c.index].started_at},
                              {"kind", k3stats::to_string(w.kind)},
                              {"split_p_value", c.p_value},
                              {"level", component(w.level)},
                              {"spread", component(w.spread)},
                              {"shape", component(w.shape)},
                              {"text", distribution_change_text(c)}});
    }
    series.push_back({{"label", s.label},
                      {"op", s.op},
                      {"model", s.model},
                      {"shape", s.shape},
                      {"points", points},
                      {"change_points", changes},
                      {"distribution_changes", distribution}});
  }
  return {{"window", t.window}, {"runs", t.runs}, {"series", series}};
}

nlohmann::json ceiling_json(const Ceiling& c) {
  return {{"name", c.name},
          {"kind", c.kind},
          {"value", c.value},
          {"origin", c.origin},
          {"source", c.source}};
}

nlohmann::json roofline_json(const Roofline& r) {
  nlohmann::json ceilings = nlohmann::json::array(), points = nlohmann::json::array();
  for (const auto& c : r.ceilings) ceilings.push_back(ceiling_json(c));
  for (const auto& p : r.points) {
    points.push_back({{"label", p.label},
                      {"op", p.op},
                      {"path", p.path},
                      {"intensity", p.intensity},
                      {"gops", p.gops},
                      {"gbps", p.gbps},
                      {"mean_ns", p.mean_ns}});
  }
  nlohmann::json probe = nullptr;
  if (r.probe) {
    probe = {{"target", r.probe->target},
             {"cpu_model", r.probe->cpu_model},
             {"measured_at", r.probe->measured_at},
             {"host", r.probe->host},
             {"build_hash", r.probe->build_hash},
             {"membw_read_gbps", opt(r.probe->membw_read_gbps)},
             {"peak_f32_gflops", opt(r.probe->peak_f32_gflops)},
             {"peak_i16_gops", opt(r.probe->peak_i16_gops)}};
  }
  return {{"board", r.board},     {"board_file", r.board_file}, {"notes", r.notes},
          {"ceilings", ceilings}, {"points", points},           {"probe", probe}};
}

nlohmann::json tuning_json(const TuningData& t) {
  nlohmann::json sessions = nlohmann::json::array(), maps = nlohmann::json::array(),
                 tables = nlohmann::json::array();
  for (const auto& s : t.sessions) {
    sessions.push_back({{"session_id", s.session_id},
                        {"created_at", s.created_at},
                        {"finished_at", s.finished_at},
                        {"command", s.command},
                        {"op", s.op},
                        {"model", s.model},
                        {"strategy", s.strategy},
                        {"objective", s.objective},
                        {"status", s.status},
                        {"budget", opt(s.budget)},
                        {"points", {{"measured", s.measured}, {"rejected", s.rejected}}}});
  }
  for (const auto& h : t.heatmaps) {
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& c : h.cells) {
      cells.push_back({{"x", c.x},
                       {"y", c.y},
                       {"mean_ns", opt(c.mean_ns)},
                       {"relative", c.relative},
                       {"measured", c.measured},
                       {"rejected", c.rejected},
                       {"rejected_reason", c.rejected_reason},
                       {"best", c.best}});
    }
    maps.push_back({{"session_id", h.session_id},
                    {"op", h.op},
                    {"shape", h.shape},
                    {"x_knob", h.x_knob},
                    {"y_knob", h.y_knob},
                    {"x_values", h.x_values},
                    {"y_values", h.y_values},
                    {"measured", h.measured},
                    {"rejected", h.rejected},
                    {"cells", cells}});
  }
  for (const auto& tt : t.tables) {
    tables.push_back({{"table_id", tt.table_id},
                      {"sessions", tt.sessions},
                      {"created_at", tt.created_at},
                      {"path", tt.path},
                      {"table", tt.table}});
  }
  return {{"available", t.available},
          {"note", t.note},
          {"sessions", sessions},
          {"heatmaps", maps},
          {"tables", tables}};
}

}  // namespace

nlohmann::json report_json(const Report& r) {
  return {{"schema", "k3tune.report/1"},
          {"generated_at", r.generated_at},
          {"generator", r.generator},
          {"command", r.command_line},
          {"database", r.db_path},
          {"rules", r.rules_file},
          {"boards", r.boards_dir},
          {"exit_code", r.exit_code()},
          {"run", run_json(r.run)},
          {"baseline", r.baseline ? run_json(*r.baseline) : nlohmann::json(nullptr)},
          {"verdict", r.verdict ? to_json(*r.verdict) : nlohmann::json(nullptr)},
          {"verdict_note", r.verdict_note},
          {"trends", trends_json(r.trends)},
          {"roofline", roofline_json(r.roofline)},
          {"tuning", tuning_json(r.tuning)},
          {"runner_notes", r.runner_notes}};
}

}  // namespace k3reports
