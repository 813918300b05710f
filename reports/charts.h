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

}  // namespace k3reports
