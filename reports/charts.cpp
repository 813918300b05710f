#include "reports/charts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace k3reports {
namespace {

using json = nlohmann::json;

const char* const kSchema =
    "https://vega.github.io/schema/vega-lite/v6.json";  // an id, not fetched

json finite_or_null(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}

// A chart with one row per value (18 px each), drawn as `layers`.
json row_chart(const json& values, int width, json layers) {
  return {{"$schema", kSchema},
          {"data", {{"values", values}}},
          {"width", width},
          {"height", {{"step", 18}}},
          {"layer", std::move(layers)}};
}

// A rule on each row from field `low` to field `high`: the 95% interval over the row's mark.
json ci_rule_layer(const char* name, const json& y, const char* low, const char* high) {
  return {
      {"name", name},
      {"mark", {{"type", "rule"}, {"color", "#222"}}},
      {"encoding",
       {{"y", y}, {"x", {{"field", low}, {"type", "quantitative"}}}, {"x2", {{"field", high}}}}}};
}

// A bar on each row from 1 to the row's speed-up (right of 1 is faster); `mark` adds to the bar.
json speedup_bars_layer(const char* name, const json& y, const json& mark, const char* title,
                        json tooltip) {
  json bar = {{"type", "bar"}, {"height", {{"band", 0.7}}}};
  bar.update(mark);
  return {{"name", name},
          {"mark", bar},
          {"encoding",
           {{"y", y},
            {"x",
             {{"field", "speedup"},
              {"type", "quantitative"},
              {"title", title},
              {"scale", {{"zero", false}}}}},
            {"x2", {{"datum", 1}}},
            {"tooltip", std::move(tooltip)}}}};
}

// Tooltip entries for `fields`, in order; those also in `numbers` shown with `format`.
json tooltip(std::initializer_list<const char*> fields, std::initializer_list<std::string> numbers,
             const char* format = ".3f") {
  json tips = json::array();
  for (const char* field : fields) {
    json tip = {{"field", field}};
    if (std::find(numbers.begin(), numbers.end(), field) != numbers.end()) tip["format"] = format;
    tips.push_back(std::move(tip));
  }
  return tips;
}

json outcome_color() {
  return {{"field", "outcome"},
          {"type", "nominal"},
          {"title", "verdict"},
          {"scale",
           {{"domain", {"regression", "improvement", "unchanged", "suspected (refuted)"}},
            {"range", {"#c0392b", "#27ae60", "#8e9aa6", "#e0a800"}}}}};
}

// Speed-up (baseline time / candidate time) per compared cell, bar from 1, CI whiskers.
Chart speedups_chart(const k3verdict::Verdict& v) {
  json values = json::array();
  int order = 0;
  std::vector<const k3verdict::CellVerdict*> cells;
  for (const auto& c : v.cells)
    if (c.timing.outcome != k3verdict::Outcome::kNotCompared) cells.push_back(&c);
  std::stable_sort(cells.begin(), cells.end(),
                   [](const k3verdict::CellVerdict* a, const k3verdict::CellVerdict* b) {
                     return a->op < b->op;
                   });
  for (const k3verdict::CellVerdict* c : cells) {
    std::string outcome = to_string(c->timing.outcome);
    if (c->timing.outcome == k3verdict::Outcome::kRegression && !c->timing_regression())
      outcome = "suspected (refuted)";
    values.push_back({{"label", c->label},
                      {"op", c->op},
                      {"order", order++},
                      {"speedup", c->timing.speedup.value},
                      {"low", c->timing.speedup.low},
                      {"high", finite_or_null(c->timing.speedup.high)},
                      {"outcome", outcome},
                      {"change", k3verdict::timing_text(c->timing)},
                      {"confirmation", to_string(c->timing.confirmation)}});
  }
  const json y = {{"field", "label"},
                  {"type", "nominal"},
                  {"title", nullptr},
                  {"sort", {{"field", "order"}}},
                  {"axis", {{"labelLimit", 420}}}};
  json bars = speedup_bars_layer(
      "speedup_bars", y, json::object(), "speed-up (baseline time / candidate time)",
      tooltip({"label", "change", "speedup", "low", "high", "confirmation"},
              {"speedup", "low", "high"}));
  bars["encoding"]["color"] = outcome_color();
  json spec = row_chart(values, 520,
                        {bars,
                         ci_rule_layer("speedup_ci", y, "low", "high"),
                         {{"name", "speedup_one"},
                          {"data", {{"values", json::array({json::object()})}}},
                          {"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"color", "#555"}}},
                          {"encoding", {{"x", {{"datum", 1}}}}}}});
  return {
      "chart-speedups", "speedups", "Speed-up per cell",
      "Baseline time / candidate time with its 95% interval (" +
          std::string(v.method == "welch-across-runs"
                          ? "Welch across runs; re-measured interleaved where confirmed or refuted"
                          : "paired rounds within one run") +
          "). Bars start at 1: right is faster.",
      spec};
}

// Without a verdict: time per call of every cell with its 95% CI.
Chart times_chart(const k3verdict::RunData& run) {
  json values = json::array();
  int order = 0;
  for (const auto& c : run.cells) {
    if (!c.ok || !c.mean_ns) continue;
    values.push_back(
        {{"label", c.label},
         {"op", c.op},
         {"order", order++},
         {"mean_us", *c.mean_ns / 1e3},
         // A log axis cannot show an interval reaching zero: its low end is drawn at 1% of the
         // mean.
         {"low_us", std::max(c.ci_low_ns.value_or(*c.mean_ns), *c.mean_ns / 100) / 1e3},
         {"high_us", c.ci_high_ns ? json(*c.ci_high_ns / 1e3) : json(*c.mean_ns / 1e3)},
         {"processes", c.processes}});
  }
  const json y = {
      {"field", "label"},
      {"type", "nominal"},
      {"title", nullptr},
      {"sort", nullptr},  // the run's order; a sort field in two layers makes Vega-Lite warn
      {"axis", {{"labelLimit", 420}}}};
  // Points, not bars: a bar on a log axis starts at zero, which has no position.
  const json points = {{"name", "time_points"},
                       {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
                       {"encoding",
                        {{"y", y},
                         {"x",
                          {{"field", "mean_us"},
                           {"type", "quantitative"},
                           {"title", "time per call (us)"},
                           {"scale", {{"type", "log"}}}}},
                         {"color", {{"field", "op"}, {"type", "nominal"}}},
                         {"tooltip", tooltip({"label", "mean_us", "low_us", "high_us", "processes"},
                                             {"mean_us", "low_us", "high_us"})}}}};
  json spec = row_chart(values, 520, {points, ci_rule_layer("time_ci", y, "low_us", "high_us")});
  return {"chart-times", "speedups", "Time per call",
          "No baseline: mean time per call with its 95% interval (log scale).", spec};
}

Chart trends_chart(const Trends& t, const k3verdict::PerCall& per_call) {
  TrendChartLayout layout;
  layout.per_call = per_call;
  layout.caption = std::string(per_call.instructions ? "Instructions" : "Mean time") +
                   " per call with its 95% interval in each run of the window (" + t.window +
                   "); red dashed lines mark change points.";
  return trend_chart(t.series, layout);
}

Chart roofline_chart(const Roofline& r) {
  json points = json::array();
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const auto& p : r.points) {
    points.push_back({{"kind", "kernel"},
                      {"label", p.label},
                      {"op", p.op},
                      {"path", p.path},
                      {"intensity", p.intensity},
                      {"gops", p.gops},
                      {"gbps", p.gbps},
                      {"mean_us", p.mean_ns / 1e3}});
    x_lo = std::min(x_lo, p.intensity);
    x_hi = std::max(x_hi, p.intensity);
    y_lo = std::min(y_lo, p.gops);
    y_hi = std::max(y_hi, p.gops);
  }
  if (!std::isfinite(x_lo)) x_lo = 0.1, x_hi = 10, y_lo = 0.1, y_hi = 10;
  // The domain reaches every compute ceiling and the ridge points of the bandwidth ceilings with
  // the measured compute ceilings, so each line crosses the chart.
  double top = y_hi;
  for (const auto& c : r.ceilings) {
    if (c.kind == "compute") top = std::max(top, c.value);
  }
  for (const auto& c : r.ceilings) {
    if (c.kind != "bandwidth") continue;
    y_lo = std::min(y_lo, c.value * x_lo);
  }
  x_lo /= 4;
  x_hi *= 4;
  for (const auto& c : r.ceilings)
    if (c.kind == "bandwidth") x_hi = std::max(x_hi, std::min(top / c.value * 2, x_hi * 1e3));
  y_lo /= 4;
  top *= 2;
  json ceilings = json::array();
  for (const auto& c : r.ceilings) {
    const std::string name =
        fmt::format("{} ({:.1f} {})", c.name, c.value, c.kind == "bandwidth" ? "GB/s" : "GOPS");
    for (const double x : {x_lo, x_hi}) {
      const double y = c.kind == "bandwidth" ? c.value * x : c.value;
      ceilings.push_back({{"kind", "ceiling"},
                          {"ceiling", name},
                          {"origin", c.origin},
                          {"intensity", x},
                          {"gops", std::clamp(y, y_lo, top)},
                          {"source", c.source}});
    }
  }
  const json xs = {{"field", "intensity"},
                   {"type", "quantitative"},
                   {"title", "arithmetic intensity (operations per byte)"},
                   {"scale", {{"type", "log"}, {"domain", {x_lo, x_hi}}}}};
  const json ys = {{"field", "gops"},
                   {"type", "quantitative"},
                   {"title", "GOPS"},
                   {"scale", {{"type", "log"}, {"domain", {y_lo, top}}}}};
  json layer = json::array();
  if (!ceilings.empty()) {
    layer.push_back(
        {{"name", "roof_ceilings"},
         {"data", {{"values", ceilings}}},
         {"mark", {{"type", "line"}, {"clip", true}, {"strokeWidth", 2}}},
         {"encoding",
          {{"x", xs},
           {"y", ys},
           {"color",
            {{"field", "ceiling"},
             {"type", "nominal"},
             {"title", "ceilings"},
             {"legend", {{"orient", "bottom"}, {"columns", 1}, {"labelLimit", 500}}}}},
           {"strokeDash", {{"field", "origin"}, {"type", "nominal"}, {"title", "origin"}}},
           {"tooltip", {{{"field", "ceiling"}}, {{"field", "origin"}}, {{"field", "source"}}}}}}});
  }
  layer.push_back({{"name", "roof_points"},
                   {"data", {{"values", points}}},
                   {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}, {"clip", true}}},
                   {"encoding",
                    {{"x", xs},
                     {"y", ys},
                     {"shape", {{"field", "op"}, {"type", "nominal"}, {"title", "op"}}},
                     {"fill",
                      {{"field", "op"},
                       {"type", "nominal"},
                       {"title", "op"},
                       {"scale", {{"scheme", "dark2"}}}}},
                     {"tooltip",
                      {{{"field", "label"}},
                       {{"field", "path"}},
                       {{"field", "gops"}, {"format", ".2f"}},
                       {{"field", "gbps"}, {"format", ".2f"}},
                       {{"field", "intensity"}, {"format", ".3g"}},
                       {{"field", "mean_us"}, {"format", ".3f"}}}}}}});
  json spec = {{"$schema", kSchema},
               {"width", 620},
               {"height", 380},
               {"layer", layer},
               {"resolve", {{"legend", {{"color", "independent"}}}}}};
  std::string caption =
      "Each kernel's achieved GOPS against its operations per byte; lines are the ceilings: " +
      std::string(r.board.empty() ? "no board file matched" : "published figures of " + r.board) +
      (r.probe ? ", and what k3tune probe measured on this target" : "") + ".";
  return {"chart-roofline", "roofline", "Roofline", caption, spec};
}

Chart heatmap_chart(const Heatmap& h, int index) {
  json values = json::array();
  for (const auto& c : h.cells) {
    values.push_back({{"x", c.x},
                      {"y", c.y},
                      {"relative", c.mean_ns ? json(c.relative) : json(nullptr)},
                      {"mean_us", c.mean_ns ? json(*c.mean_ns / 1e3) : json(nullptr)},
                      {"measured", c.measured},
                      {"rejected", c.rejected},
                      {"reason", c.rejected_reason},
                      {"text", c.mean_ns ? fmt::format("{:.2f}{}", c.relative, c.best ? " *" : "")
                                         : "rejected"}});
  }
  const json x = {{"field", "x"}, {"type", "ordinal"}, {"title", h.x_knob}, {"sort", h.x_values}};
  const json y = {{"field", "y"},
                  {"type", "ordinal"},
                  {"title", h.y_knob.empty() ? "" : h.y_knob},
                  {"sort", h.y_values}};
  json spec = {
      {"$schema", kSchema},
      {"data", {{"values", values}}},
      {"width", {{"step", 46}}},
      {"height", {{"step", 30}}},
      {"layer",
       {{{"name", "heat_rejected"},  // no time to colour: Vega-Lite would drop them from heat_cells
         {"transform", json::array({{{"filter", "datum.relative === null"}}})},
         {"mark", {{"type", "rect"}, {"stroke", "white"}, {"color", "#cfcfcf"}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"tooltip",
            {{{"field", "x"}, {"title", h.x_knob}},
             {{"field", "y"}, {"title", h.y_knob.empty() ? "-" : h.y_knob}},
             {{"field", "rejected"}},
             {{"field", "reason"}}}}}}},
        {{"name", "heat_cells"},
         {"transform", json::array({{{"filter", "datum.relative !== null"}}})},
         {"mark", {{"type", "rect"}, {"stroke", "white"}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"color",
            {{"field", "relative"},
             {"type", "quantitative"},
             {"title", "time / best"},
             {"scale", {{"scheme", "viridis"}, {"reverse", true}}}}},
           {"tooltip",
            {{{"field", "x"}, {"title", h.x_knob}},
             {{"field", "y"}, {"title", h.y_knob.empty() ? "-" : h.y_knob}},
             {{"field", "mean_us"}, {"format", ".3f"}},
             {{"field", "relative"}, {"format", ".3f"}},
             {{"field", "measured"}},
             {{"field", "rejected"}},
             {{"field", "reason"}}}}}}},
        {{"name", "heat_text"},
         {"mark", {{"type", "text"}, {"fontSize", 10}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"text", {{"field", "text"}}},
           {"color",
            {{"condition",
              {{"test", "datum.relative !== null && datum.relative > 1.3"}, {"value", "white"}}},
             {"value", "black"}}}}}}}}};
  return {
      fmt::format("chart-heatmap-{}", index), "tuning",
      fmt::format("{} {}: {} x {}", h.op, h.shape, h.x_knob, h.y_knob.empty() ? "-" : h.y_knob),
      fmt::format(
          "Session {}: the fastest measured point for each pair of values, as a multiple of the "
          "shape's fastest (* marks it); {} measured, {} rejected points.",
          h.session_id.substr(0, 12), h.measured, h.rejected),
      spec};
}

Chart table_chart(const TuningTable& t, int index) {
  json values = json::array();
  for (const auto& e : t.table.value("entries", json::array())) {
    const EntryEvidence ev = evidence_of(e);
    if (!ev.speedup) continue;
    values.push_back({{"id", e.is_object() ? e.value("id", "?") : "?"},
                      {"speedup", *ev.speedup},
                      {"low", ev.speedup_low.value_or(*ev.speedup)},
                      {"high", ev.speedup_high.value_or(*ev.speedup)},
                      {"processes", ev.processes.value_or(0)}});
  }
  const json y = {
      {"field", "id"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 400}}}};
  json spec = row_chart(
      values, 420,
      {speedup_bars_layer(
           "table_bars", y, {{"color", "#2c6fbb"}}, "speed-up over the defaults",
           tooltip({"id", "speedup", "low", "high", "processes"}, {"speedup", "low", "high"})),
       ci_rule_layer("table_ci", y, "low", "high")});
  return {
      fmt::format("chart-table-{}", index), "tables",
      fmt::format("Table {} ({})", t.table_id.substr(0, 12), t.path.empty() ? "no path" : t.path),
      "The selected configuration of each entry: its speed-up over the built-in defaults with the "
      "95% interval "
      "(the table's own evidence).",
      spec};
}

}  // namespace

Chart trend_chart(const std::vector<TrendSeries>& series, const TrendChartLayout& layout) {
  // Times are drawn in microseconds, counts as they are.
  const double scale = layout.per_call.instructions ? 1 : 1e3;
  json values = json::array();
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      values.push_back(
          {{"kind", "point"},
           {"series", s.label},
           {"t", p.started_at},
           {"run", p.run_uuid.substr(0, 12)},
           {"build", p.build_hash.substr(0, 12)},
           {"mean", p.mean_ns / scale},
           {"low", p.ci_low_ns ? json(*p.ci_low_ns / scale) : json(p.mean_ns / scale)},
           {"high", p.ci_high_ns ? json(*p.ci_high_ns / scale) : json(p.mean_ns / scale)}});
    }
    for (const auto& c : s.change_points) {
      values.push_back(
          {{"kind", "change"},
           {"series", s.label},
           {"t", s.points[c.index].started_at},
           {"change",
            layout.per_call.instructions
                ? fmt::format("{:+.2f}% (exact: beyond twice the jitter)", 100 * c.rel_change)
                : fmt::format("{:+.1f}% (p {:.2g})", 100 * c.rel_change, c.p_value)}});
    }
  }
  const json x = {{"field", "t"}, {"type", "temporal"}, {"title", "run start (UTC)"}};
  auto only = [](const char* kind) {
    return json{{"filter", fmt::format("datum.kind === '{}'", kind)}};
  };
  const std::string unit = layout.per_call.instructions ? "instructions per call" : "us per call";
  const char* format = layout.per_call.instructions ? ".0f" : ".3f";
  json trend_tips =
      tooltip({"run", "build", "t", "mean", "low", "high"}, {"mean", "low", "high"}, format);
  trend_tips[2] = {{"field", "t"}, {"type", "temporal"}, {"format", "%Y-%m-%d %H:%M"}};
  json layer = {
      {{"name", "trend_lines"},
       {"transform", json::array({only("point")})},
       {"mark", {{"type", "line"}, {"color", "#2c6fbb"}}},
       {"encoding",
        {{"x", x},
         {"y",
          {{"field", "mean"},
           {"type", "quantitative"},
           {"title", unit},
           {"scale", {{"zero", false}}}}}}}},
      {{"name", "trend_ci"},
       {"transform", json::array({only("point")})},
       {"mark", {{"type", "rule"}, {"color", "#7fa7d9"}}},
       {"encoding",
        {{"x", x},
         {"y", {{"field", "low"}, {"type", "quantitative"}}},
         {"y2", {{"field", "high"}}}}}},
      {{"name", "trend_points"},
       {"transform", json::array({only("point")})},
       {"mark", {{"type", "point"}, {"filled", true}, {"color", "#2c6fbb"}}},
       {"encoding",
        {{"x", x}, {"y", {{"field", "mean"}, {"type", "quantitative"}}}, {"tooltip", trend_tips}}}},
      {{"name", "trend_changes"},
       {"transform", json::array({only("change")})},
       {"mark",
        {{"type", "rule"}, {"color", "#c0392b"}, {"strokeDash", {5, 3}}, {"strokeWidth", 2}}},
       {"encoding", {{"x", x}, {"tooltip", {{{"field", "change"}}}}}}}};
  json spec = {{"$schema", kSchema},
               {"data", {{"values", values}}},
               {"facet",
                {{"field", "series"},
                 {"type", "nominal"},
                 {"title", nullptr},
                 {"header", {{"labelLimit", 300}, {"labelFontSize", 11}}}}},
               {"columns", layout.columns},
               {"spec", {{"width", layout.width}, {"height", layout.height}, {"layer", layer}}},
               {"resolve", {{"scale", {{"y", "independent"}}}}}};
  return {layout.id, layout.section, layout.title, layout.caption, spec};
}

std::vector<Chart> report_charts(const Report& r) {
  std::vector<Chart> charts;
  bool compared = false;
  if (r.verdict)
    for (const auto& c : r.verdict->cells)
      compared = compared || c.timing.outcome != k3verdict::Outcome::kNotCompared;
  charts.push_back(compared ? speedups_chart(*r.verdict) : times_chart(r.run));
  if (!r.trends.series.empty()) charts.push_back(trends_chart(r.trends, r.run.per_call));
  charts.push_back(roofline_chart(r.roofline));
  int i = 0;
  for (const auto& h : r.tuning.heatmaps) charts.push_back(heatmap_chart(h, i++));
  i = 0;
  for (const auto& t : r.tuning.tables)
    if (t.table.is_object()) charts.push_back(table_chart(t, i++));
  return charts;
}

}  // namespace k3reports
