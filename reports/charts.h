// The report's charts as Vega-Lite specifications with their data inline (no URL, nothing
// fetched): speed-ups with 95% CI whiskers (or, without a verdict, time per call with CI), trends
// per configuration over runs with change points, the roofline, tuning heat maps over two knobs,
// and each selected table's evidence. Geometry is Vega-Lite's: the specs say which field goes on
// which axis, the library lays out and draws the SVG.
//
// Every drawn layer carries a `name`; Vega renders it as an SVG group of class "<name>_marks"
// whose children are the drawn elements (the browser test counts them).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.h"

namespace k3reports {

struct Chart {
  std::string id;       // DOM id of its container
  std::string section;  // "speedups", "trends", "roofline", "tuning", "tables"
  std::string title, caption;
  nlohmann::json spec;  // Vega-Lite
};

std::vector<Chart> report_charts(const Report& report);

// Trend charts: a facet per series, the mean per call with its 95% interval over time (run start
// on the x axis), change points as red dashed rules. Layers: trend_lines, trend_ci, trend_points
// (one mark per point), trend_changes (one per change point).
struct TrendChartLayout {
  std::string id = "chart-trends", section = "trends", title = "Trends over runs", caption;
  int columns = 3, width = 260, height = 110;
  k3verdict::PerCall per_call;  // microseconds per call, or instructions per call
};
Chart trend_chart(const std::vector<TrendSeries>& series, const TrendChartLayout& layout);

}  // namespace k3reports
