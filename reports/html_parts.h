// The pieces every k3tune HTML page is made of: escaping, JSON inside <script>, table rows, chart
// containers, the shared style and the script that renders a page's Vega-Lite charts. Used by
// report.html (html.cpp) and by the pages of `k3tune publish` (reports/publish), so both look and
// render the same way.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/charts.h"

namespace k3reports::html {

// Text as HTML (element content or a quoted attribute value).
std::string esc(const std::string& s);
// JSON inside a <script> element: '<', '>' and '&' only occur inside JSON strings, where their
// \u escapes mean the same, so no "</script>" can end the element early.
std::string script_json(const nlohmann::json& j);
// A table row of cells that are already HTML; `cls` is the row's class ("bad", "good", "").
std::string row(std::initializer_list<std::string> cells, const std::string& cls = "");
std::string row(const std::vector<std::string>& cells, const std::string& cls = "");
// A header row of plain-text titles.
std::string head(std::initializer_list<std::string> cells);
// Two columns of plain text: name, value.
std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows);
// A chart's figure with its caption and the empty container the render script fills.
std::string chart_div(const Chart& c);

// The pages' style sheet (inside <style>).
extern const char* const kStyle;
// Renders every chart listed in the page's <script type="application/json" id="k3-charts">
// ([{id, spec}]) into its container as SVG with the page's vega and vegaLite globals; the body's
// data-charts says when all are done ("ok" or "error"); errors go to the console.
extern const char* const kRenderScript;

}  // namespace k3reports::html
