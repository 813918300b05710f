// `k3tune publish DIR`: one static site over the whole results database (site_pages.h lists its
// pages), written incrementally into DIR (site_writer.h). Self-contained like report.html: nothing
// is fetched when a page is opened; the chart library is one local file in DIR shared by the pages
// that draw charts.
#pragma once

#include <string>

#include "reports/publish/site_writer.h"

namespace k3publish {

struct PublishRequest {
  std::string db_path, out_dir;
  std::string rules_file;  // change points' minimum effects (configs/regression.toml)
  std::string js_dir;      // the vendored Vega scripts (reports/html.h)
  std::string generator;   // "k3tune 0.1.0"
};

struct PublishOutcome {
  WriteOutcome write;
  std::size_t nights = 0, runs = 0, histories = 0, tables = 0, figures = 0;
  double read_s = 0, render_s = 0, write_s = 0, total_s = 0;
};

// PublishInputError (bad input: the folder holds something else), k3store::StoreError (not a
// k3tune database) or k3reports::ReportError (bad rules, missing chart scripts, unwritable
// folder), each before anything is written.
PublishOutcome publish(const PublishRequest& request);

}  // namespace k3publish
