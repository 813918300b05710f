// report.html opened in a real browser: Debian's chromium, headless with a fresh profile, driven
// by tests/reports/browser_check.js (playwright-core over the DevTools protocol, plus chromium's
// own net log). The report is of real runs of the real k3bench (a baseline and a candidate build,
// so every chart has data: speed-ups, trends, roofline) with a tuning session and table in the
// tuner's tables (heat map, table chart). Asserted: no console message or page error, nothing
// fetched but the file itself, every chart rendered with drawn marks, a PNG screenshot saved into
// the test output directory. No browser, no node or no driver: the test fails.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "browser_support.h"
#include "report_test_support.h"
#include "tests/support/bench_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::reports {
namespace {

const std::string kCases = measure_table(4, 2, "0.002") +
                           decode_case("[{ n = 256, k = 512 }, { n = 512, k = 512 }]") +
                           R"toml([[case]]
op = "rmsnorm"
shapes = [{ rows = 4, dim = 1024 }]
params = { workers = 1 }
)toml";

// A landscape over workers x tile_n for linear_decode, one point rejected, and the table it chose.
void plant_tuning(k3store::Connection& c) {
  create_tuning_tables(c);
  add_tuning_session(c, "tune-browser", "2000-01-01T00:00:00Z", "local", "linear_decode");
  auto point = c.prepare(
      "INSERT INTO tuning_points(session_id, point_key, op, shape_json, config_json, status, "
      "reason,"
      " processes, mean_ns) VALUES ('tune-browser', ?1, 'linear_decode', "
      "'{\"k\":2048,\"n\":2048}', ?2, ?3, ?4, 3, ?5)");
  int key = 0;
  for (int workers : {1, 2, 4})
    for (int tile : {32, 64, 128, 256}) {
      const bool rejected = tile == 256 && workers == 4;
      point.bind(1, fmt::format("p{}", key++));
      point.bind(2, json{{"workers", workers}, {"tile_n", tile}}.dump());
      point.bind(3, std::string(rejected ? "rejected" : "measured"));
      point.bind(4, std::string(rejected ? "two slabs do not fit a TCM block" : ""));
      if (rejected)
        point.bind_null(5);
      else
        point.bind(5, 4e5 / workers + 100.0 * std::abs(tile - 64));
      point.run();
    }
  add_tuning_table(c, "browser-table", "2000-01-01T01:00:00Z", {"tune-browser"},
                   decode_table_entry(1e5, 1.4));
}

class ReportBrowser : public ReportTest {};

TEST_F(ReportBrowser, HtmlLoadsOfflineAndDrawsEveryChart) {
  const std::string base = bench(kCases);
  use_runner(copy_of_runner("k3bench-candidate"));
  const std::string cand = bench(kCases);
  plant_tuning(*open());
  const fs::path out = dir_ / "report";
  const auto r = k3tune({"report", cand, "--baseline", base, "-o", out.string()});
  // Two builds of the same code: clean, or (rarely, on a shared machine) a chance slowdown.
  ASSERT_TRUE(r.code == 0 || r.code == 4) << r.err;
  ASSERT_TRUE(fs::exists(out / "report.html"));

  // Kept for inspection with the screenshot, in the test output directory.
  const fs::path keep = fs::path(K3_TEST_OUTPUT_DIR) / "report-browser";
  fs::create_directories(keep);
  fs::copy_file(out / "report.html", keep / "report.html", fs::copy_options::overwrite_existing);
  const json result = check_in_browser(keep / "report.html", keep, "report.png");
  ASSERT_FALSE(result.empty());

  EXPECT_EQ(result["console"], json::array())
      << "console messages or page errors: " << result["console"].dump(1);
  const std::string url = "file://" + fs::absolute(keep / "report.html").string();
  EXPECT_EQ(result["requests"], json::array({url})) << "the page fetched more than itself";
  // The file itself is read by the browser's file loader, outside the network stack: the net log
  // must hold no request a document made (the negative test below shows that one would appear).
  EXPECT_EQ(result["netlog"], json::array()) << "chromium's net log shows requests the page made";
  EXPECT_EQ(result["body_charts"], "ok");

  // Every chart the report declares was drawn: its container rendered, with marks in each layer.
  const json doc = json::parse(read(out / "report.json"));
  std::map<std::string, std::vector<std::string>> expected = {
      {"chart-speedups", {"speedup_bars_marks", "speedup_ci_marks", "speedup_one_marks"}},
      {"chart-trends", {"trend_lines_marks", "trend_points_marks"}},
      {"chart-roofline", {"roof_ceilings_marks", "roof_points_marks"}},
      {"chart-heatmap-0", {"heat_cells_marks", "heat_rejected_marks", "heat_text_marks"}},
      {"chart-table-0", {"table_bars_marks", "table_ci_marks"}}};
  std::set<std::string> seen;
  for (const auto& chart : result["charts"]) {
    const std::string id = chart["id"];
    seen.insert(id);
    EXPECT_EQ(chart["rendered"], "ok") << id;
    EXPECT_GE(chart["svg"].get<int>(), 1) << id;
    for (const auto& marks : expected[id])
      EXPECT_GT(chart["marks"].value(marks, 0), 0) << id << " " << marks;
  }
  for (const auto& [id, marks] : expected) EXPECT_TRUE(seen.count(id)) << id << " missing";
  EXPECT_EQ(seen.size(), expected.size());
  // The counts match the data: a bar per compared cell, a point per roofline kernel, a heat cell
  // per (tile_n, workers) pair, a point per run in each trend series.
  const auto charts = result["charts"];
  auto marks_of = [&](const std::string& id, const std::string& name) {
    for (const auto& c : charts)
      if (c["id"] == id) return c["marks"].value(name, 0);
    return 0;
  };
  EXPECT_EQ(marks_of("chart-speedups", "speedup_bars_marks"),
            static_cast<int>(doc["verdict"]["cells"].size()));
  EXPECT_EQ(marks_of("chart-roofline", "roof_points_marks"),
            static_cast<int>(doc["roofline"]["points"].size()));
  EXPECT_EQ(marks_of("chart-heatmap-0", "heat_cells_marks"),
            11);  // 3 workers x 4 tile_n, one rejected
  EXPECT_EQ(marks_of("chart-heatmap-0", "heat_rejected_marks"), 1);
  EXPECT_EQ(marks_of("chart-heatmap-0", "heat_text_marks"), 12);
  int trend_points = 0;
  for (const auto& series : doc["trends"]["series"])
    trend_points += static_cast<int>(series["points"].size());
  EXPECT_EQ(trend_points, 2 * 3) << "three configurations, each in both runs";
  EXPECT_EQ(marks_of("chart-trends", "trend_points_marks"), trend_points);

  // The screenshot: a real PNG of the whole page.
  const fs::path png = result["screenshot"].get<std::string>();
  EXPECT_EQ(png, keep / "report.png");
  const std::string bytes = read(png);
  ASSERT_GT(bytes.size(), 20000u) << png;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

// A run reported on its own (no baseline, no tuning tables): time per call instead of speed-ups.
TEST_F(ReportBrowser, ARunWithoutBaselineDrawsItsTimes) {
  const std::string run = bench(kCases);
  const fs::path keep = fs::path(K3_TEST_OUTPUT_DIR) / "report-browser-single";
  const auto r = k3tune({"report", run, "-o", keep.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = check_in_browser(keep / "report.html", keep, "report.png");
  ASSERT_FALSE(result.empty());
  EXPECT_EQ(result["console"], json::array()) << result["console"].dump(1);
  EXPECT_EQ(result["requests"].size(), 1u) << result["requests"];
  EXPECT_EQ(result["netlog"], json::array());
  EXPECT_EQ(result["body_charts"], "ok");
  std::set<std::string> ids;
  for (const auto& chart : result["charts"]) {
    ids.insert(chart["id"].get<std::string>());
    EXPECT_EQ(chart["rendered"], "ok") << chart["id"];
  }
  EXPECT_EQ(ids, (std::set<std::string>{"chart-times", "chart-trends", "chart-roofline"}));
  for (const auto& chart : result["charts"]) {
    if (chart["id"] != "chart-times") continue;
    EXPECT_EQ(chart["marks"].value("time_points_marks", 0), 3) << chart["marks"];  // one per cell
    EXPECT_EQ(chart["marks"].value("time_ci_marks", 0), 3) << chart["marks"];
  }
}

// The check itself notices a page that reaches for the network and one whose chart fails: a
// report with an <img> from a remote host and a broken chart must be caught.
TEST_F(ReportBrowser, TheCheckCatchesFetchesAndBrokenCharts) {
  const fs::path keep = fs::path(K3_TEST_OUTPUT_DIR) / "report-browser-negative";
  fs::create_directories(keep);
  std::ofstream(keep / "bad.html")
      << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>"
         "<img src=\"http://127.0.0.1:9/pixel.png\"><div class=\"chart\" id=\"chart-x\"></div>"
         "<script>console.error('chart-x: no spec'); "
         "document.getElementById('chart-x').dataset.rendered = 'error';"
         "document.body.dataset.charts = 'error';</script></body></html>";
  const json result = check_in_browser(keep / "bad.html", keep, "bad.png");
  ASSERT_FALSE(result.empty());
  EXPECT_EQ(result["body_charts"], "error");
  EXPECT_NE(result["console"].dump().find("chart-x: no spec"), std::string::npos)
      << result["console"];
  EXPECT_NE(result["requests"].dump().find("http://127.0.0.1:9/pixel.png"), std::string::npos)
      << result["requests"];
  EXPECT_NE(result["netlog"].dump().find("http://127.0.0.1:9/pixel.png"), std::string::npos)
      << result["netlog"];
  ASSERT_EQ(result["charts"].size(), 1u);
  EXPECT_EQ(result["charts"][0]["rendered"], "error");
}

}  // namespace
}  // namespace k3test::reports
