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

// A history page draws at most this many series (the ones with the most runs); the others are
// listed with their latest figure. With one point per night a drawn series adds ~150 bytes a
// night, so a page stays within a few MB even after years.
inline constexpr std::size_t kMaxChartSeries = 24;

std::vector<SiteFile> render_site(const SiteData& site, const k3reports::VendoredScripts& js,
                                  const std::string& generator);

// Where a page of the site lives (relative to the folder).
std::string night_page(const std::string& nightly_id);
std::string history_page(const History& h);

}  // namespace k3publish
