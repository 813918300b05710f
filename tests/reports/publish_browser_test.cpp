// The published site in a real browser (Debian's chromium, headless, fresh profile, through
// tests/reports/browser_check.js): the index, a night, a timed history with a planted step, an
// instruction-count history with a planted increase, a run outside the nights and the table page,
// from a site of 100 generated nights. Each page: no console message or page error; every request
// (DevTools protocol and chromium's net log) a file inside the site's folder; its chart rendered,
// with one point mark per figure of the series in the database and one change-point rule per
// planted change; every link resolving to a file of the site. Screenshots stay in
// <build>/tests/publish-browser/.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "browser_support.h"
#include "harness/host/store/database.h"
#include "publish_test_support.h"
#include "publish_year_db.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::publish {
namespace {

// The stored figures of one (target, op, shape) configuration, counted in the database itself.
int figures_in_database(const std::string& db, const std::string& target, const std::string& op,
                        const std::string& shape_json) {
  auto c = k3store::open_database(db, k3store::OpenMode::kReadOnly);
  auto s = c->prepare(
      "SELECT count(*) FROM aggregates a JOIN cells c ON c.cell_key = a.cell_key"
      " WHERE c.target = ?1 AND c.op = ?2 AND c.shape_json = ?3 AND a.status = 'ok'");
  s.bind(1, target).bind(2, op).bind(3, shape_json);
  return s.step() ? static_cast<int>(s.integer(0)) : -1;
}

TEST(PublishBrowser, EveryKindOfPageLoadsOfflineDrawsItsDataAndLinksResolve) {
  constexpr int kNights = 100;
  const fs::path keep = fs::path(K3_TEST_OUTPUT_DIR) / "publish-browser";
  fs::remove_all(keep);
  fs::create_directories(keep);
  const std::string db = (keep / "results.db").string();
  // Two stretches of the generator's year, 50 nights each: 185..234 with the planted step (night
  // 200) and 285..334 with the planted count increase (night 300); hand-made runs at 210, 300, 330.
  add_nights(db, kStepNight - 15, kStepNight + 35);
  add_nights(db, kCountNight - 15, kCountNight + 35);
  const fs::path site = keep / "site";
  ASSERT_FALSE(publish_json(db, site).empty());
  const std::string root = "file://" + fs::canonical(site).string() + "/";

  const std::string step_page = page_starting(site, "history/local--linear_decode--k1024_n1024--");
  const std::string count_page =
      page_starting(site, "history/qemu-vlen1024--linear_decode--k1024_n1024--");
  std::string run_page;
  for (const auto& f : files_of(site))
    if (run_page.empty() && f.starts_with("runs/")) run_page = f;
  ASSERT_FALSE(step_page.empty());
  ASSERT_FALSE(count_page.empty());
  ASSERT_FALSE(run_page.empty());
  struct Page {
    std::string path;
    int points = 0, changes = 0;  // marks its chart must draw (0: a page without a chart)
  };
  const std::vector<Page> pages = {
      {"index.html"},
      {"nights/" + night_id(kStepNight) + ".html"},
      {step_page, figures_in_database(db, "local", kStepOp, R"({"k":1024,"n":1024})"), 1},
      {count_page, figures_in_database(db, "qemu-vlen1024", kStepOp, R"({"k":1024,"n":1024})"), 1},
      {run_page},
      {"tables/local.html"}};
  ASSERT_EQ(pages[2].points, kNights);
  ASSERT_EQ(pages[3].points, 2 * kNights) << "the RVV and the IME2 series";
  for (const auto& p : pages) {
    SCOPED_TRACE(p.path);
    const std::string shot = fs::path(p.path).stem().string().substr(0, 40) + ".png";
    const json r = check_in_browser(site / p.path, keep, shot);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r["console"], json::array()) << r["console"].dump(1);
    EXPECT_EQ(r["body_charts"], "ok");
    ASSERT_GE(r["requests"].size(), 1u);
    EXPECT_EQ(r["requests"][0], root + p.path);
    for (const auto& url : r["requests"])
      EXPECT_EQ(url.get<std::string>().rfind(root, 0), 0u) << "a request outside the site: " << url;
    for (const auto& url : r["netlog"])
      EXPECT_EQ(url.get<std::string>().rfind(root, 0), 0u)
          << "net log: a request outside the site: " << url;
    // A page with a chart loads the two shared scripts, and nothing else.
    EXPECT_EQ(r["requests"].size(), p.points > 0 ? 3u : 1u) << r["requests"];
    EXPECT_EQ(r["charts"].size(), p.points > 0 ? 1u : 0u);
    for (const auto& c : r["charts"]) {
      EXPECT_EQ(c["rendered"], "ok");
      EXPECT_EQ(c["marks"].value("trend_points_marks", 0), p.points) << c["marks"];
      EXPECT_EQ(c["marks"].value("trend_changes_marks", 0), p.changes) << c["marks"];
    }
    EXPECT_FALSE(r["links"].empty());
    for (const auto& link : r["links"]) {
      const std::string url = link.get<std::string>();
      ASSERT_EQ(url.rfind(root, 0), 0u) << "a link outside the site: " << url;
      const std::string file =
          url.substr(root.size(), url.find('#') == std::string::npos ? std::string::npos
                                                                     : url.find('#') - root.size());
      EXPECT_TRUE(fs::is_regular_file(site / file)) << "a link to nothing: " << url;
    }
  }
}

}  // namespace
}  // namespace k3test::publish
