// The pages of a published site, rendered from SiteData (site_data.h) as text, nothing written:
//   index.html                 every night and every other run, each configuration's history page,
//                              the instruction counts per op x VLEN, the tables
//   nights/<id>.html           a night: verdict, exit code, steps, build, boards, its runs with
//                              every figure (linked to its history), the tables it wrote and what
//                              changed in them
//   runs/<run id>.html         a run outside any night, the same way
//   history/<target--op--shape--hash>.html
//                              the full history of one (target or board, op, shape): means with
//                              95% intervals of every run, the change points, a chart
//   tables/<name>.html         one table night by night with `table diff` against the version
//   before assets/vega-<v>.min.js, assets/vega-lite-<v>.min.js
//                              the chart library, once for every page that draws a chart
// Pages hold no time of publishing or other varying text: a page's bytes change only when what it
// shows changes, which is what makes publishing incremental (site_writer.h).
#pragma once

#include <string>
#include <vector>

#include "reports/html.h"
#include "reports/publish/site_data.h"

namespace k3publish {

struct SiteFile {
  std::string path;  // relative to the site's folder, '/'-separated
  std::string content;
};

// A history page draws and lists run by run the series with the most runs, at most
// kMaxChartSeries of them and kMaxPagePoints figures in all (the first series always); the others
// get a line each (runs, latest figure, change points). A drawn figure costs about 400 bytes (chart
// data and table row), so no page passes about 3.5 MB: 24 series of a nightly figure for a year, or
// one for twenty years.
inline constexpr std::size_t kMaxChartSeries = 24;
inline constexpr std::size_t kMaxPagePoints = 8000;

std::vector<SiteFile> render_site(const SiteData& site, const k3reports::VendoredScripts& js,
                                  const std::string& generator);

// Where a page of the site lives (relative to the folder).
std::string night_page(const std::string& nightly_id);
std::string history_page(const History& h);

}  // namespace k3publish
