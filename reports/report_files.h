// The three files of a report: summary.md, report.json and the self-contained report.html, each
// written by its own writer (markdown.h, report_json, html.h) from the report's data (report.h).
#pragma once

#include <string>
#include <vector>

#include "reports/report.h"

namespace k3reports {

// Writes summary.md, report.json and (unless request.html is false) report.html into the output
// directory; returns the paths written. ReportError when a file cannot be written.
std::vector<std::string> write_report(const Report& report, const ReportRequest& request);

}  // namespace k3reports
