#include "reports/publish/publish.h"

#include <chrono>

#include "harness/host/store/database.h"
#include "reports/html.h"
#include "harness/host/verdict/regression_config.h"

namespace k3publish {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

PublishOutcome publish(const PublishRequest& rq) {
  const auto start = Clock::now();
  // Everything that can refuse comes first: nothing is written unless all of it passes.
  check_publish_dir(rq.out_dir);
  const k3verdict::RegressionConfig rules = rq.rules_file.empty()
                                                ? k3verdict::RegressionConfig{}
                                                : k3verdict::load_regression_config(rq.rules_file);
  const k3reports::VendoredScripts js = k3reports::load_vendored_scripts(rq.js_dir);
  auto db = k3store::open_database(rq.db_path, k3store::OpenMode::kReadOnly);

  PublishOutcome o;
  const SiteData site = load_site(*db, rules);
  db.reset();
  o.read_s = seconds_since(start);
  o.nights = site.nights.size();
  o.runs = site.runs.size();
  o.histories = site.histories.size();
  o.tables = site.tables.size();
  for (const auto& h : site.histories) o.figures += h.points();

  const auto render_start = Clock::now();
  const std::vector<SiteFile> files = render_site(site, js, rq.generator);
  o.render_s = seconds_since(render_start);
  const auto write_start = Clock::now();
  o.write = write_site(rq.out_dir, files, rq.generator);
  o.write_s = seconds_since(write_start);
  o.total_s = seconds_since(start);
  return o;
}

}  // namespace k3publish
