#include "reports/html.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "reports/charts.h"
#include "reports/html_parts.h"
#include "reports/markdown.h"
#include "reports/report_error.h"
#include "harness/host/verdict/value_text.h"

namespace k3reports {

using namespace html;  // the shared page pieces (html_parts.h)

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ReportError(fmt::format(
        "{}: missing (HTML pages need the vendored Vega scripts: run scripts/setup.sh or give "
        "--js DIR; report --no-html writes none)",
        path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string verdict_section(const Report& r) {
  std::string out = "<section id=\"verdict\"><h2>Verdict</h2>\n";
  if (!r.verdict) return out + "<p>" + esc(r.verdict_note) + ".</p></section>\n";
  const k3verdict::Verdict& v = *r.verdict;
  out += fmt::format("<p class=\"banner {}\">{}</p>\n", v.regressions() > 0 ? "bad" : "good",
                     esc(verdict_headline(v)));
  out += "<table><thead>" +
         head({"cell", std::string("baseline ") + v.per_call.unit(),
               std::string("candidate ") + v.per_call.unit(), "change", "p", "verdict",
               "confirmation", "err/bound", "output"}) +
         "</thead><tbody>\n";
  for (const auto& c : v.cells) {
    const auto& a = c.accuracy;
    std::string acc =
        a.ratio_a && a.ratio_b ? fmt::format("{:.3g} &rarr; {:.3g}", *a.ratio_a, *a.ratio_b) : "-";
    if (a.ratio_flagged) acc = "<b>" + acc + "</b>";
    const std::string output = a.checksum_flagged    ? "<b>changed</b>"
                               : a.checksum_required ? "identical"
                                                     : "-";
    const bool compared = c.timing.outcome != k3verdict::Outcome::kNotCompared;
    std::string confirmation = to_string(c.timing.confirmation);
    if (!c.timing.confirm_note.empty()) confirmation += ": " + c.timing.confirm_note;
    out +=
        row({esc(c.label), compared ? v.per_call.text(c.timing.cmp.mean_a) : "-",
             compared ? v.per_call.text(c.timing.cmp.mean_b) : "-",
             compared ? fmt::format("{:+.2f}%", 100 * c.timing.cmp.rel_diff) : "-",
             compared && c.timing.exact ? fmt::format("exact (+-{:.0f})", c.timing.exact->tolerance)
             : compared                 ? fmt::format("{:.2g}", c.timing.cmp.p_value)
                                        : "-",
             esc(k3verdict::timing_text(c.timing)), esc(confirmation), acc, output},
            c.regression()                              ? "bad"
            : c.timing.outcome == k3verdict::Outcome::kImprovement ? "good"
                                                        : "");
  }
  out += "</tbody></table>\n";
  if (!v.failed.empty()) {
    out += "<h3>Failed cells</h3><ul>\n";
    for (const auto& f : v.failed)
      out += "<li>" + esc(f.label + " (" + f.side + "): " + f.reason) + "</li>\n";
    out += "</ul>\n";
  }
  return out + "</section>\n";
}

std::string figures_section(const k3verdict::RunData& run) {
  std::string out = "<section id=\"figures\"><h2>Figures</h2><table><thead>" +
                    head({"cell", "model", "path", "P", std::string("mean ") + run.per_call.unit(),
                          std::string("95% CI ") + run.per_call.unit(), "CV", "GB/s", "GOPS",
                          "err/bound", "output fnv1a64"}) +
                    "</thead><tbody>\n";
  for (const auto& c : run.cells) {
    if (!c.ok) {
      out += row({esc(c.label), esc(c.model), esc(c.path), "-", "FAILED", esc(c.reason), "", "", "",
                  "", ""},
                 "bad");
      continue;
    }
    out += row({esc(c.label), esc(c.model), esc(c.path), std::to_string(c.processes),
                run.per_call.text(c.mean_ns),
                run.per_call.interval(c.ci_low_ns, c.ci_high_ns, c.processes),
                c.cv_between ? fmt::format("{:.1f}%", 100 * *c.cv_between) : "-",
                run.per_call.rate(c.bytes_per_call, c.mean_ns),
                run.per_call.rate(c.ops_per_call, c.mean_ns),
                c.error_to_bound ? fmt::format("{:.2g}", *c.error_to_bound) : "-",
                "<code>" + esc(c.output_checksum) + "</code>"});
  }
  return out + "</tbody></table></section>\n";
}

std::string roofline_section(const Report& r, const std::vector<Chart>& charts) {
  std::string out = "<section id=\"roofline\"><h2>Roofline</h2>\n";
  for (const auto& c : charts)
    if (c.section == "roofline") out += chart_div(c);
  for (const auto& n : r.roofline.notes) out += "<p class=\"note\">" + esc(n) + "</p>\n";
  out += "<table><thead>" + head({"ceiling", "value", "origin", "source"}) + "</thead><tbody>\n";
  for (const auto& c : r.roofline.ceilings)
    out += row({esc(c.name),
                fmt::format("{:.1f} {}", c.value, c.kind == "bandwidth" ? "GB/s" : "GOPS"),
                esc(c.origin), esc(c.source)});
  return out + "</tbody></table>" +
         (r.roofline.board_file.empty()
              ? ""
              : "<p>Board file: <code>" + esc(r.roofline.board_file) + "</code></p>") +
         "</section>\n";
}

std::string tuning_section(const Report& r, const std::vector<Chart>& charts) {
  std::string out = "<section id=\"tuning\"><h2>Tuning</h2>\n<p>" + esc(r.tuning.note) + ".</p>\n";
  if (!r.tuning.sessions.empty()) {
    out += "<table><thead>" +
           head({"session", "created", "op", "model", "strategy", "objective", "status", "measured",
                 "rejected"}) +
           "</thead><tbody>\n";
    for (const auto& s : r.tuning.sessions)
      out += row({"<code>" + esc(s.session_id.substr(0, 12)) + "</code>", esc(s.created_at),
                  esc(s.op), esc(s.model), esc(s.strategy), esc(s.objective), esc(s.status),
                  std::to_string(s.measured), std::to_string(s.rejected)});
    out += "</tbody></table>\n";
  }
  for (const auto& c : charts)
    if (c.section == "tuning") out += chart_div(c);
  if (!r.tuning.tables.empty()) out += "<h3>Selected tables</h3>\n";
  for (const auto& c : charts)
    if (c.section == "tables") out += chart_div(c);
  for (const auto& t : r.tuning.tables) {
    std::string sessions;
    for (const auto& id : t.sessions) sessions += (sessions.empty() ? "" : ", ") + id.substr(0, 12);
    out += fmt::format(
        "<h4>Table <code>{}</code> {} <span class=\"note\">(sessions {})</span></h4>\n",
        esc(t.table_id.substr(0, 12)), esc(t.path), esc(sessions.empty() ? "-" : sessions));
    if (!t.table.is_object() || !t.table.contains("entries") || !t.table["entries"].is_array()) {
      out += "<p class=\"note\">not a readable tuning table</p>\n";
      continue;
    }
    out += "<table><thead>" +
           head({"entry", "params", "mean", "95% CI", "processes", "defaults", "speed-up"}) +
           "</thead><tbody>\n";
    for (const auto& e : t.table["entries"]) {
      const EntryEvidence ev = evidence_of(e);
      const bool is_object = e.is_object();
      out += row({esc(is_object ? e.value("id", "?") : "?"),
                  "<code>" +
                      esc(is_object ? e.value("params", nlohmann::json::object()).dump() : "{}") +
                      "</code>",
                  esc(evidence_value_text(ev, ev.mean)), esc(evidence_interval_text(ev)),
                  ev.processes ? std::to_string(*ev.processes) : "-",
                  esc(evidence_value_text(ev, ev.default_mean)),
                  ev.speedup ? esc(fmt::format("{:.3f} {}", *ev.speedup, speedup_interval_text(ev)))
                             : "-"});
    }
    out += "</tbody></table>\n";
  }
  return out + "</section>\n";
}

std::string run_provenance(const k3verdict::RunData& run, const char* title) {
  std::string out = fmt::format("<h3>{}</h3>\n", title);
  auto opt_s = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f} s", *v) : "-"; };
  out += kv_table(
      {{"run", run.run_uuid},
       {"command", run.command},
       {"target", run.target},
       {"host", run.host},
       {"started / finished", run.started_at + " / " + run.finished_at + " (" + run.status + ")"},
       {"wall / kernel / warm-up / overhead", opt_s(run.wall_s) + " / " + opt_s(run.kernel_s) +
                                                  " / " + opt_s(run.warmup_s) + " / " +
                                                  opt_s(run.overhead_s)},
       {"processes", fmt::format("{} ok, {} failed, {} disturbed", run.processes_ok,
                                 run.processes_failed, run.processes_disturbed)},
       {"process plan", run.settings.dump()}});
  out += "<table><thead>" +
         head({"build", "label", "variant", "compiler", "flags", "source revision", "dirty",
               "recorded by", "binary"}) +
         "</thead><tbody>\n";
  for (const auto& b : run.builds)
    out += row({"<code>" + esc(b.build_hash) + "</code>", esc(b.label), esc(b.variant),
                esc(b.compiler), esc(b.flags), esc(b.source_revision),
                b.source_dirty ? (*b.source_dirty ? "yes" : "no") : "?", esc(b.recorded_by),
                esc(b.binary_path)});
  out += "</tbody></table>\n";
  if (run.environment.is_object()) {
    std::vector<std::pair<std::string, std::string>> env;
    for (const auto& [k, v] : run.environment.items())
      if (k != "readings_before" && k != "readings_after")
        env.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    out += "<details><summary>environment of the first process</summary>" + kv_table(env) +
           "</details>\n";
  }
  return out;
}

}  // namespace

VendoredScripts load_vendored_scripts(const std::string& js_dir) {
  namespace fs = std::filesystem;
  const fs::path modules = fs::path(js_dir) / "node_modules";
  VendoredScripts s;
  s.vega = read_file((modules / "vega/build/vega.min.js").string());
  s.vega_lite = read_file((modules / "vega-lite/build/vega-lite.min.js").string());
  auto version = [&](const char* package) {
    const auto j = nlohmann::json::parse(read_file((modules / package / "package.json").string()),
                                         nullptr, false);
    return j.is_object() ? j.value("version", "?") : "?";
  };
  s.vega_version = version("vega");
  s.vega_lite_version = version("vega-lite");
  for (const std::string* script : {&s.vega, &s.vega_lite}) {
    if (script->find("</script") != std::string::npos)
      throw ReportError(
          fmt::format("{}: a vendored script contains '</script' and cannot be inlined", js_dir));
  }
  return s;
}

bool lead_with_night(std::string& page, const std::string& title, const std::string& night_html) {
  const std::string h1 = "<h1>k3tune report: run ";
  const auto head = page.find(h1);
  const auto head_end = head == std::string::npos ? head : page.find("</h1>", head);
  const auto title_at = page.find("<title>");
  const auto title_end = title_at == std::string::npos ? title_at : page.find("</title>", title_at);
  if (head_end == std::string::npos || title_end == std::string::npos ||
      page.find("<section id=\"nightly\">") != std::string::npos)
    return false;
  const std::string run = page.substr(head + h1.size(), head_end - head - h1.size());
  page.replace(head, head_end + 5 - head,
               "<section id=\"nightly\">\n" + night_html +
                   "</section>\n<h2>Tonight's bench run: run " + run + "</h2>");
  page.replace(title_at, title_end + 8 - title_at, "<title>" + esc(title) + "</title>");
  return true;
}

std::string report_html(const Report& r, const std::string& js_dir) {
  const VendoredScripts js = load_vendored_scripts(js_dir);
  const std::vector<Chart> charts = report_charts(r);
  nlohmann::json chart_specs = nlohmann::json::array();
  for (const auto& c : charts)
    chart_specs.push_back({{"id", c.id}, {"section", c.section}, {"spec", c.spec}});

  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>k3tune report {}</title>\n", esc(r.run.run_uuid.substr(0, 12)));
  out += "<meta name=\"generator\" content=\"" + esc(r.generator) + "\">\n<style>" +
         std::string(kStyle) + "</style>\n";
  out += fmt::format(
      "<!-- Vega {} and Vega-Lite {} (BSD-3-Clause, https://vega.github.io), inlined -->\n",
      js.vega_version, js.vega_lite_version);
  out +=
      "<script>" + js.vega + "</script>\n<script>" + js.vega_lite + "</script>\n</head>\n<body>\n";
  out += fmt::format("<h1>k3tune report: run <code>{}</code></h1>\n", esc(r.run.run_uuid));
  out += fmt::format(
      "<p>target <b>{}</b> on {} &middot; {} &middot; {}{}</p>\n", esc(r.run.target),
      esc(r.run.host), esc(r.run.started_at), esc(r.run.command),
      r.baseline ? " &middot; baseline run <code>" + esc(r.baseline->run_uuid) + "</code>" : "");
  out += verdict_section(r);
  out += "<section id=\"speedups\"><h2>Speed-ups</h2>\n";
  for (const auto& c : charts)
    if (c.section == "speedups") out += chart_div(c);
  out += "</section>\n" + figures_section(r.run);
  out += "<section id=\"trends\"><h2>Trends</h2>\n";
  bool trend_chart = false;
  for (const auto& c : charts)
    if (c.section == "trends") out += chart_div(c), trend_chart = true;
  if (!trend_chart) out += "<p class=\"note\">No series to draw.</p>\n";
  out += "</section>\n" + roofline_section(r, charts) + tuning_section(r, charts);
  out += "<section id=\"provenance\"><h2>Environment and provenance</h2>\n" +
         run_provenance(r.run, "This run");
  if (r.baseline) out += run_provenance(*r.baseline, "Baseline run");
  std::vector<std::pair<std::string, std::string>> report_rows = {
      {"generated", r.generated_at + " by " + r.generator},
      {"command", r.command_line},
      {"database", r.db_path},
      {"regression rules", r.rules_file},
      {"board files", r.boards_dir},
      {"charts",
       fmt::format("Vega {} / Vega-Lite {}, inlined", js.vega_version, js.vega_lite_version)}};
  for (const auto& n : r.runner_notes) report_rows.emplace_back("kept runner", n);
  out += "<h3>This report</h3>\n" + kv_table(report_rows) + "</section>\n";
  out += "<script type=\"application/json\" id=\"k3-report\">" + script_json(report_json(r)) +
         "</script>\n";
  out += "<script type=\"application/json\" id=\"k3-charts\">" + script_json(chart_specs) +
         "</script>\n";
  out += "<script>" + std::string(kRenderScript) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace k3reports
