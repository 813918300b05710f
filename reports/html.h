// report.html: one self-contained file. Everything it shows is inside it -- the Vega and Vega-Lite
// scripts (vendored from the npm registry by scripts/setup.sh into build/third_party/js, inlined
// here), each chart's Vega-Lite spec with its data, the report's JSON, the styles -- so opening it
// fetches nothing but the file itself. Charts are rendered to inline SVG when the page loads.
#pragma once

#include <string>

#include "reports/report.h"

namespace k3reports {

// The vendored scripts: <js_dir>/node_modules/{vega,vega-lite}/build/*.min.js.
struct VendoredScripts {
  std::string vega, vega_lite;                  // the scripts
  std::string vega_version, vega_lite_version;  // from their package.json
};
// ReportError naming the missing file and the fix (scripts/setup.sh) when absent.
VendoredScripts load_vendored_scripts(const std::string& js_dir);

std::string report_html(const Report& report, const std::string& js_dir);

// Puts a night at the head of a page report_html() wrote, for the nightly that runs after the
// report: `night_html` (rendered, with its own <h1>) becomes section `nightly` first on the page,
// the page is titled `title`, and the run's own <h1> becomes an <h2> "Tonight's bench run: ...".
// Returns false, and changes nothing, when the page already has a night or is not one of these.
bool lead_with_night(std::string& page, const std::string& title, const std::string& night_html);

}  // namespace k3reports
