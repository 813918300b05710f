#include "reports/publish/site_pages.h"

#include "reports/distribution_trend.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/provenance.h"
#include "harness/host/verdict/value_text.h"
#include "reports/charts.h"
#include "reports/html_parts.h"

namespace k3publish {
namespace {

using namespace k3reports::html;
using nlohmann::json;

// File-name form of a name: letters, digits, '.', '-', '_' kept, '=' dropped, the rest '_'.
std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')
      out += c;
    else if (c != '=')
      out += '_';
  }
  return out.empty() ? "_" : out;
}

std::string short_id(const std::string& id) {
  return id.substr(0, 12);
}

std::string run_anchor(const std::string& run_uuid) {
  return "run-" + slug(run_uuid);
}

std::string run_page(const SiteRun& r) {
  return r.nightly_id.empty() ? "runs/" + slug(r.run_uuid) + ".html"
                              : night_page(r.nightly_id) + "#" + run_anchor(r.run_uuid);
}

std::string table_page(const std::string& name) {
  return "tables/" + slug(name) + ".html";
}

// A link from a page at `depth` folders below the site's root to `target` (a site path).
std::string link(int depth, const std::string& target, const std::string& text) {
  std::string prefix;
  for (int i = 0; i < depth; ++i) prefix += "../";
  return "<a href=\"" + esc(prefix + target) + "\">" + text + "</a>";
}

std::string code(const std::string& s) {
  return "<code>" + esc(s) + "</code>";
}

std::string build_text(const std::string& hash, const std::string& revision) {
  if (hash.empty()) return "-";
  return code(short_id(hash)) + (revision.empty() ? "" : " @ " + code(revision.substr(0, 12)));
}

std::string joined(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "-" : out;
}

std::string figure_text(const k3reports::TrendPoint& p, bool counts) {
  const k3verdict::PerCall unit{counts};
  std::string out = unit.text(p.mean_ns) + " " + unit.unit();
  const std::string interval = unit.interval(p.ci_low_ns, p.ci_high_ns, p.processes);
  if (interval != "-") out += " (" + interval + ")";
  return out;
}

std::string change_text(const k3reports::ChangePoint& c, bool counts) {
  return counts ? fmt::format("{:+.2f}% (exact)", 100 * c.rel_change)
                : fmt::format("{:+.1f}% (p {:.2g})", 100 * c.rel_change, c.p_value);
}

struct Scripts {
  std::string vega, vega_lite;  // site paths
};

// A whole page: the chart library only where the page draws a chart.
std::string page(const std::string& title, int depth, const std::string& body, const json& charts,
                 const Scripts& scripts, const std::string& generator) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                    esc(title) + "</title>\n<meta name=\"generator\" content=\"" + esc(generator) +
                    "\">\n<style>" + kStyle + "</style>\n";
  if (!charts.empty()) {
    std::string prefix;
    for (int i = 0; i < depth; ++i) prefix += "../";
    out += "<script src=\"" + esc(prefix + scripts.vega) + "\"></script>\n<script src=\"" +
           esc(prefix + scripts.vega_lite) + "\"></script>\n";
  }
  out += "</head>\n<body>\n<nav>" + link(depth, "index.html", "all nights and runs") + "</nav>\n";
  out += body;
  out += "<script type=\"application/json\" id=\"k3-charts\">" + script_json(charts) +
         "</script>\n<script>" + kRenderScript + "</script>\n</body></html>\n";
  return out;
}

// Where each run's figures are: run -> (history, series, point) so a run's section can list them.
struct FigureRef {
  std::size_t history, series, point;
};

class SiteRenderer {
 public:
  SiteRenderer(const SiteData& site, const Scripts& scripts, std::string generator)
      : site_(site), scripts_(scripts), generator_(std::move(generator)) {
    for (std::size_t h = 0; h < site.histories.size(); ++h) {
      const auto& series = site.histories[h].series;
      for (std::size_t s = 0; s < series.size(); ++s) {
        for (std::size_t p = 0; p < series[s].points.size(); ++p)
          figures_[series[s].points[p].run_uuid].push_back({h, s, p});
        for (const auto& c : series[s].change_points) {
          changes_at_[{h, s, c.index}] = &c;
          ++changes_in_run_[series[s].points[c.index].run_uuid];
        }
      }
    }
    for (const auto& r : site.runs) runs_[r.run_uuid] = &r;
  }

  std::vector<SiteFile> pages() const {
    std::vector<SiteFile> out;
    out.push_back({"index.html", index_page()});
    for (std::size_t i = 0; i < site_.nights.size(); ++i)
      out.push_back({night_page(site_.nights[i].nightly_id), night(i)});
    for (const auto& r : site_.runs)
      if (r.nightly_id.empty()) out.push_back({run_page(r), run_alone(r)});
    for (const auto& h : site_.histories) out.push_back({history_page(h), history(h)});
    for (const auto& t : site_.tables) out.push_back({table_page(t.name), table(t)});
    return out;
  }

 private:
  int changes_in(const std::string& run_uuid) const {
    auto it = changes_in_run_.find(run_uuid);
    return it == changes_in_run_.end() ? 0 : it->second;
  }

  std::string night_verdict_row(const SiteNight& n) const {
    int changes = 0;
    for (const auto& r : n.runs) changes += changes_in(r);
    return row({link(0, night_page(n.nightly_id), esc(n.nightly_id)), esc(n.started_at),
                esc(n.profile), esc(n.verdict()), n.exit_code ? std::to_string(*n.exit_code) : "-",
                build_text(n.host_build_hash, n.source_revision), esc(joined(n.boards)),
                std::to_string(n.runs.size()), changes ? std::to_string(changes) : ""},
               n.status == "regression" || n.status == "failed" ? "bad" : "");
  }

  std::string index_page() const {
    std::string b = "<h1>k3tune: every night and every run</h1>\n";
    b += fmt::format("<p>Database {}: {} nights, {} runs, {} histories, {} tables.</p>\n",
                     code(site_.db_path), site_.nights.size(), site_.runs.size(),
                     site_.histories.size(), site_.tables.size());
    b += "<section id=\"nights\"><h2>Nights</h2>\n<table><thead>" +
         head({"night", "started", "profile", "verdict", "exit", "host build", "boards", "runs",
               "change points"}) +
         "</thead><tbody>\n";
    for (auto n = site_.nights.rbegin(); n != site_.nights.rend(); ++n) b += night_verdict_row(*n);
    b += "</tbody></table></section>\n";

    b += "<section id=\"runs\"><h2>Other runs</h2>\n<table><thead>" +
         head({"run", "started", "command", "target", "boards", "build", "status", "cells ok",
               "failed", "change points"}) +
         "</thead><tbody>\n";
    for (auto r = site_.runs.rbegin(); r != site_.runs.rend(); ++r) {
      if (!r->nightly_id.empty()) continue;
      b += row(
          {link(0, run_page(*r), code(short_id(r->run_uuid))), esc(r->started_at), esc(r->command),
           esc(r->target), esc(joined(r->boards)), build_text(r->build_hash, r->source_revision),
           esc(r->status), std::to_string(r->cells_ok), std::to_string(r->cells_failed),
           changes_in(r->run_uuid) ? std::to_string(changes_in(r->run_uuid)) : ""},
          r->cells_failed > 0 ? "bad" : "");
    }
    b += "</tbody></table></section>\n";

    for (const bool counts : {false, true}) {
      b += counts ? "<section id=\"counts\"><h2>Instruction counts per op and VLEN</h2>\n"
                  : "<section id=\"histories\"><h2>Histories</h2>\n";
      b += "<table><thead>" +
           head({counts ? "VLEN (target)" : "target", "op", "shape", "configurations", "runs",
                 "latest", "last change point"}) +
           "</thead><tbody>\n";
      for (const auto& h : site_.histories) {
        if (h.counts != counts || h.series.empty()) continue;
        const auto& s = h.series.front();
        std::string last_change = "-";
        for (const auto& t : h.series)
          for (const auto& c : t.change_points)
            if (last_change == "-" || t.points[c.index].started_at > last_change)
              last_change = t.points[c.index].started_at;
        b += row({esc(h.target), esc(h.op), link(0, history_page(h), esc(h.shape)),
                  std::to_string(h.series.size()), std::to_string(s.points.size()),
                  esc(figure_text(s.points.back(), h.counts)), esc(last_change)});
      }
      b += "</tbody></table></section>\n";
    }

    b += "<section id=\"tables\"><h2>Tuning tables</h2>\n<table><thead>" +
         head({"table", "versions", "changed", "latest"}) + "</thead><tbody>\n";
    for (const auto& t : site_.tables) {
      const auto changed = std::count_if(t.versions.begin() + 1, t.versions.end(),
                                         [](const TableVersion& v) { return v.changed; });
      b += row({link(0, table_page(t.name), esc(t.name)), std::to_string(t.versions.size()),
                std::to_string(changed), esc(t.versions.back().created_at)});
    }
    b += "</tbody></table></section>\n";
    return page("k3tune: every night and every run", 0, b, json::array(), scripts_, generator_);
  }

  // A run's provenance and every figure it measured, each linked to its history.
  std::string run_section(const SiteRun& r) const {
    std::string b =
        "<section id=\"" + run_anchor(r.run_uuid) + "\"><h3>Run " + code(r.run_uuid) + "</h3>\n";
    b += kv_table(
        {{"command", r.command},
         {"target", r.target + (r.boards.empty() ? "" : " (cells on " + joined(r.boards) + ")")},
         {"build", r.build_hash + (r.source_revision.empty() ? "" : " @ " + r.source_revision)},
         {"started", r.started_at},
         {"status", r.status},
         {"cells", fmt::format("{} ok, {} failed", r.cells_ok, r.cells_failed)}});
    auto it = figures_.find(r.run_uuid);
    if (it == figures_.end()) return b + "<p class=\"note\">No figures.</p></section>\n";
    b += "<table><thead>" + head({"history", "configuration", "figure", "change point here"}) +
         "</thead><tbody>\n";
    for (const auto& f : it->second) {
      const History& h = site_.histories[f.history];
      const auto& s = h.series[f.series];
      auto c = changes_at_.find({f.history, f.series, f.point});
      b += row({link(1, history_page(h), esc(h.target + " " + h.op + " " + h.shape)), esc(s.label),
                esc(figure_text(s.points[f.point], h.counts)),
                // The size of the step is on the history page: it moves as later runs join the
                // segment after it, and a night's page should not change every night for that.
                c == changes_at_.end()      ? ""
                : c->second->rel_change > 0 ? "<b>change point: slower</b>"
                                            : "<b>change point: faster</b>"},
               c == changes_at_.end()      ? ""
               : c->second->rel_change > 0 ? "bad"
                                           : "good");
    }
    return b + "</tbody></table></section>\n";
  }

  std::string night(std::size_t i) const {
    const SiteNight& n = site_.nights[i];
    std::string b = "<h1>Nightly " + code(n.nightly_id) + "</h1>\n<nav>";
    if (i > 0) b += link(1, night_page(site_.nights[i - 1].nightly_id), "&larr; previous night");
    if (i + 1 < site_.nights.size())
      b += link(1, night_page(site_.nights[i + 1].nightly_id), "next night &rarr;");
    b += "</nav>\n";
    const bool bad = n.status == "regression" || n.status == "failed";
    b += fmt::format("<p class=\"banner {}\">{}</p>\n", bad ? "bad" : "good", esc(n.verdict()));
    std::string verdict_run = "-";
    if (auto r = runs_.find(n.verdict_run_uuid); r != runs_.end())
      verdict_run = link(1, run_page(*r->second), code(short_id(n.verdict_run_uuid)));
    b += "<table class=\"kv\"><tbody>\n";
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"profile", esc(n.profile)},
             {"started / finished",
              esc(n.started_at + " / " + (n.finished_at.empty() ? "-" : n.finished_at))},
             {"status", esc(n.status)},
             {"exit code", n.exit_code ? std::to_string(*n.exit_code) : "-"},
             {"host build", build_text(n.host_build_hash, n.source_revision)},
             {"verdict run", verdict_run},
             {"boards", esc(joined(n.boards))}})
      b += "<tr><th>" + esc(k) + "</th><td>" + v + "</td></tr>\n";
    b += "</tbody></table>\n";
    if (!n.notes.empty()) {
      b += "<section id=\"notes\"><h2>Explained by</h2><ul>\n";
      for (const auto& note : n.notes)
        b += "<li><b>" + esc(note.title) + "</b> " +
             (note.href.empty() ? esc(note.text) : link(1, note.href, esc(note.text))) + "</li>\n";
      b += "</ul></section>\n";
    }
    b += "<section id=\"steps\"><h2>Steps</h2>\n<table><thead>" +
         head({"step", "status", "exit", "wall s"}) + "</thead><tbody>\n";
    for (const auto& s : n.steps)
      b += row({esc(s.step), esc(s.status), s.exit_code ? std::to_string(*s.exit_code) : "-",
                s.wall_s ? fmt::format("{:.1f}", *s.wall_s) : "-"},
               s.status == "failed" || s.exit_code == 4 ? "bad" : "");
    b += "</tbody></table></section>\n";
    std::string tables;
    for (const auto& t : site_.tables)
      for (const auto& v : t.versions)
        if (v.nightly_id == n.nightly_id) tables += table_version(t.name, v, 1, false);
    if (!tables.empty())
      b += "<section id=\"tables\"><h2>Tables written</h2>\n" + tables + "</section>\n";
    b += "<section id=\"runs\"><h2>Runs</h2>\n";
    for (const auto& id : n.runs) b += run_section(*runs_.at(id));
    b += "</section>\n";
    return page("k3tune nightly " + n.nightly_id, 1, b, json::array(), scripts_, generator_);
  }

  std::string run_alone(const SiteRun& r) const {
    return page("k3tune run " + short_id(r.run_uuid), 1,
                "<h1>Run " + code(r.run_uuid) + "</h1>\n" + run_section(r), json::array(), scripts_,
                generator_);
  }

  std::string history(const History& h) const {
    const k3verdict::PerCall unit{h.counts};
    std::string b = "<h1>" + esc(h.op + " " + h.shape) + " on " + esc(h.target) + "</h1>\n";
    b += fmt::format(
        "<p>{} of every run that measured it: {} configuration(s), {} figures. Change "
        "points: {}.</p>\n",
        h.counts ? "Instructions per call" : "Mean time per call with its 95% interval",
        h.series.size(), h.points(),
        h.counts ? "a step beyond twice the larger jitter between successive runs "
                   "(the exact rule of the count verdict)"
                 : "optimal partitioning of the run means, each step kept when Welch's "
                   "test passes and it reaches the op's minimum effect");
    std::vector<k3reports::TrendSeries> drawn;  // the series with the most runs, within the caps
    std::size_t drawn_points = 0;
    for (const auto& t : h.series) {
      if (!drawn.empty() &&
          (drawn.size() == kMaxChartSeries || drawn_points + t.points.size() > kMaxPagePoints))
        break;
      drawn.push_back(t);
      drawn_points += t.points.size();
    }
    k3reports::TrendChartLayout layout;
    layout.id = "chart-history";
    layout.section = "history";
    layout.title = "History";
    layout.caption = drawn.size() < h.series.size()
                         ? fmt::format(
                               "The {} configurations with the most runs of {}; red dashed "
                               "lines mark change points.",
                               drawn.size(), h.series.size())
                         : "Red dashed lines mark change points.";
    layout.columns = 1;
    layout.width = 1000;
    layout.height = 170;
    layout.per_call = unit;
    const k3reports::Chart chart = k3reports::trend_chart(drawn, layout);
    b += chart_div(chart);

    b += "<section id=\"changes\"><h2>Change points</h2>\n<table><thead>" +
         head({"configuration", "run", "started", "before", "after", "change"}) +
         "</thead><tbody>\n";
    for (const auto& s : h.series)
      for (const auto& c : s.change_points) {
        const auto& p = s.points[c.index];
        b += row({esc(s.label), run_link(p.run_uuid), esc(p.started_at),
                  esc(figure_text(s.points[c.index - 1], h.counts)), esc(figure_text(p, h.counts)),
                  esc(change_text(c, h.counts))},
                 c.rel_change > 0 ? "bad" : "good");
      }
    b += "</tbody></table></section>\n";
    if (!h.counts) b += distribution_section(h);

    b += "<section id=\"series\"><h2>Every run</h2>\n";
    for (std::size_t i = 0; i < drawn.size(); ++i) {
      const auto& s = h.series[i];
      b += fmt::format("<details{}><summary>{}: {} runs, latest {}</summary>\n",
                       i == 0 ? " open" : "", esc(s.label), s.points.size(),
                       esc(figure_text(s.points.back(), h.counts)));
      b +=
          "<table><thead>" +
          head({"started", "run", "build", std::string(h.counts ? "count " : "mean ") + unit.unit(),
                h.counts ? "+- jitter" : "95% CI us", "processes"}) +
          "</thead><tbody>\n";
      for (auto p = s.points.rbegin(); p != s.points.rend(); ++p)
        b += row({esc(p->started_at), run_link(p->run_uuid), code(short_id(p->build_hash)),
                  unit.text(p->mean_ns), unit.interval(p->ci_low_ns, p->ci_high_ns, p->processes),
                  std::to_string(p->processes)});
      b += "</tbody></table></details>\n";
    }
    if (drawn.size() < h.series.size()) {  // the page stays small: the rest in one line each
      b += fmt::format("<h3>{} more configurations</h3>\n<table><thead>",
                       h.series.size() - drawn.size()) +
           head({"configuration", "runs", "latest", "change points"}) + "</thead><tbody>\n";
      for (std::size_t i = drawn.size(); i < h.series.size(); ++i) {
        const auto& s = h.series[i];
        b += row({esc(s.label), std::to_string(s.points.size()),
                  esc(figure_text(s.points.back(), h.counts)),
                  std::to_string(s.change_points.size())});
      }
      b += "</tbody></table>\n";
    }
    b += "</section>\n";
    const json charts =
        json::array({{{"id", chart.id}, {"section", chart.section}, {"spec", chart.spec}}});
    return page(h.op + " " + h.shape + " on " + h.target, 1, b, charts, scripts_, generator_);
  }

  // What the mean rule cannot see: the distribution of the process times changed (its spread, its
  // shape: a second mode) with the mean about the same, or its level (reported by both rules).
  std::string distribution_section(const History& h) const {
    std::string b =
        "<section id=\"distribution-changes\"><h2>Changes of the distribution</h2>\n"
        "<p>E-divisive means over each run's process times: a change names what moved (level, "
        "spread or shape) and its size.</p>\n<table><thead>" +
        head({"configuration", "run", "started", "kind", "change", "level", "spread"}) +
        "</thead><tbody>\n";
    for (const auto& s : h.series)
      for (const auto& c : s.distribution_changes) {
        const auto& p = s.points[c.index];
        b += row({esc(s.label), run_link(p.run_uuid), esc(p.started_at),
                  k3stats::to_string(c.what.kind), esc(k3reports::distribution_change_text(c)),
                  fmt::format("x{:.3g} (p {:.2g})", c.what.level.size, c.what.level.p_value),
                  fmt::format("x{:.3g} (p {:.2g})", c.what.spread.size, c.what.spread.p_value)});
      }
    return b + "</tbody></table></section>\n";
  }

  std::string run_link(const std::string& run_uuid) const {
    auto r = runs_.find(run_uuid);
    return r == runs_.end() ? code(short_id(run_uuid))
                            : link(1, run_page(*r->second), code(short_id(run_uuid)));
  }

  std::string table_version(const std::string& name, const TableVersion& v, int depth,
                            bool with_night) const {
    std::string b = "<h3>" + link(depth, table_page(name), esc(name)) + " " +
                    code(short_id(v.table_id)) + " <span class=\"note\">" + esc(v.created_at) +
                    ", " + std::to_string(v.entries) + " entries";
    if (with_night && !v.nightly_id.empty())
      b += ", night " + link(depth, night_page(v.nightly_id), esc(v.nightly_id));
    b += "</span></h3>\n";
    if (v.diff.empty()) return b + "<p class=\"note\">The first version.</p>\n";
    if (!v.changed) return b + "<p class=\"note\">Unchanged: " + esc(v.diff) + "</p>\n";
    return b + "<pre>" + esc(v.diff) + "</pre>\n";
  }

  std::string table(const TableHistory& t) const {
    std::string b = "<h1>Tuning table " + esc(t.name) + "</h1>\n<p>" +
                    std::to_string(t.versions.size()) +
                    " versions, newest first, each with <code>k3tune table diff</code> against the "
                    "version before.</p>\n";
    for (auto v = t.versions.rbegin(); v != t.versions.rend(); ++v)
      b += table_version(t.name, *v, 1, true);
    return page("k3tune table " + t.name, 1, b, json::array(), scripts_, generator_);
  }

  const SiteData& site_;
  Scripts scripts_;
  std::string generator_;
  std::unordered_map<std::string, std::vector<FigureRef>> figures_;
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, const k3reports::ChangePoint*>
      changes_at_;
  std::unordered_map<std::string, int> changes_in_run_;
  std::unordered_map<std::string, const SiteRun*> runs_;
};

}  // namespace

std::string night_page(const std::string& nightly_id) {
  return "nights/" + slug(nightly_id) + ".html";
}

std::string history_page(const History& h) {
  const std::string key = h.target + '\x1f' + h.op + '\x1f' + h.shape +
                          (h.counts ? "\x1f"
                                      "counts"
                                    : "");
  return "history/" + slug(h.target) + "--" + slug(h.op) + "--" + slug(h.shape) + "--" +
         k3bench::sha256_text(key).substr(0, 8) + ".html";
}

std::vector<SiteFile> render_site(const SiteData& site, const k3reports::VendoredScripts& js,
                                  const std::string& generator) {
  // Versioned names: a new library version is a new file, never a changed one under an old name.
  const Scripts scripts{"assets/vega-" + slug(js.vega_version) + ".min.js",
                        "assets/vega-lite-" + slug(js.vega_lite_version) + ".min.js"};
  std::vector<SiteFile> files = SiteRenderer(site, scripts, generator).pages();
  files.push_back({scripts.vega, js.vega});
  files.push_back({scripts.vega_lite, js.vega_lite});
  return files;
}

}  // namespace k3publish
