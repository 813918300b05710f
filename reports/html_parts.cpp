#include "reports/html_parts.h"

#include <fmt/format.h>

namespace k3reports::html {

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_json(const nlohmann::json& j) {
  std::string out;
  for (char c : j.dump()) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

std::string row(const std::vector<std::string>& cells, const std::string& cls) {
  std::string out = cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">";
  for (const auto& c : cells) out += "<td>" + c + "</td>";
  return out + "</tr>\n";
}

std::string row(std::initializer_list<std::string> cells, const std::string& cls) {
  return row(std::vector<std::string>(cells), cls);
}

std::string head(std::initializer_list<std::string> cells) {
  std::string out = "<tr>";
  for (const auto& c : cells) out += "<th>" + esc(c) + "</th>";
  return out + "</tr>\n";
}

std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table class=\"kv\"><tbody>\n";
  for (const auto& [k, v] : rows)
    out += "<tr><th>" + esc(k) + "</th><td>" + esc(v) + "</td></tr>\n";
  return out + "</tbody></table>\n";
}

std::string chart_div(const Chart& c) {
  return fmt::format(
      "<figure><figcaption><b>{}</b> {}</figcaption><div class=\"chart\" id=\"{}\" "
      "data-chart=\"{}\"></div></figure>\n",
      esc(c.title), esc(c.caption), c.id, c.section);
}

const char* const kStyle = R"css(
body { font: 14px/1.45 system-ui, "DejaVu Sans", sans-serif; margin: 1.5em 2em; color: #1d232a; max-width: 1400px; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #d5dbe1; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; font-size: 12.5px; }
th, td { border: 1px solid #d5dbe1; padding: 2px 6px; text-align: left; vertical-align: top; }
td { font-variant-numeric: tabular-nums; } thead th { background: #eef1f4; }
tr.bad td { background: #fbe4e1; } tr.good td { background: #e3f4e8; }
.banner { font-size: 1.15em; font-weight: 600; padding: .45em .8em; border-radius: 4px; display: inline-block; }
.banner.bad { background: #c0392b; color: white; } .banner.good { background: #27ae60; color: white; }
.note { color: #6b7580; } figure { margin: 1em 0; } figcaption { margin-bottom: .3em; color: #3b444d; }
table.kv th { background: #f5f7f9; white-space: nowrap; } code { font-size: 12px; }
.chart[data-rendered="error"] { border: 2px solid #c0392b; padding: 4px; }
nav { margin: .3em 0 1em; } nav a { margin-right: 1em; }
)css";

const char* const kRenderScript = R"js(
(function () {
  const charts = JSON.parse(document.getElementById('k3-charts').textContent);
  let pending = charts.length, failed = 0;
  const done = () => { if (--pending <= 0) document.body.dataset.charts = failed ? 'error' : 'ok'; };
  if (pending === 0) { document.body.dataset.charts = 'ok'; return; }
  for (const chart of charts) {
    const el = document.getElementById(chart.id);
    try {
      const compiled = vegaLite.compile(chart.spec).spec;
      const view = new vega.View(vega.parse(compiled), { renderer: 'svg', container: el, hover: true });
      view.runAsync().then(() => { el.dataset.rendered = 'ok'; done(); })
        .catch((e) => { failed++; el.dataset.rendered = 'error'; console.error(chart.id + ': ' + e); done(); });
    } catch (e) {
      failed++; el.dataset.rendered = 'error'; console.error(chart.id + ': ' + e); done();
    }
  }
})();
)js";

}  // namespace k3reports::html
