// write_site (reports/publish/site_writer.h) on a real folder: publish overwrites or removes only
// what it wrote itself and nobody changed since, and never writes through a symbolic link that
// leads out of the site folder; what it leaves is said in one line per file. And a history is one
// unit: times and instruction counts of one (target, op, shape) get a page each.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "publish_test_support.h"
#include "publish_year_db.h"
#include "reports/publish/site_writer.h"

namespace {
namespace fs = std::filesystem;

using k3test::publish::read;

class PublishWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("k3publish_writer_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  k3publish::WriteOutcome write(const std::vector<k3publish::SiteFile>& files) {
    return k3publish::write_site(site(), files, "k3tune test");
  }
  fs::path site() const { return root_ / "site"; }
  fs::path root_;
};

bool says(const k3publish::WriteOutcome& w, const std::string& path, const std::string& why) {
  for (const auto& line : w.left)
    if (line.rfind(path + ": ", 0) == 0 && line.find(why) != std::string::npos) return true;
  return false;
}

TEST_F(PublishWriter, AnEditedPageIsNeitherOverwrittenNorRemoved) {
  write({{"index.html", "index 1"}, {"a.html", "a 1"}, {"b.html", "b 1"}, {"c.html", "c 1"}});
  std::ofstream(site() / "a.html") << "a, edited by hand";
  std::ofstream(site() / "b.html") << "b, edited by hand";
  // The next site changes a, drops b and c (c untouched since publish wrote it).
  const auto w = write({{"index.html", "index 2"}, {"a.html", "a 2"}});
  EXPECT_EQ(read(site() / "a.html"), "a, edited by hand");
  EXPECT_EQ(read(site() / "b.html"), "b, edited by hand");
  EXPECT_FALSE(fs::exists(site() / "c.html"));
  EXPECT_EQ(read(site() / "index.html"), "index 2");
  EXPECT_EQ(w.removed, 1u);
  EXPECT_EQ(w.written, 1u);
  ASSERT_EQ(w.left.size(), 2u);
  EXPECT_TRUE(says(w, "a.html", "changed since publish wrote it: left as it is")) << w.left[0];
  EXPECT_TRUE(says(w, "b.html", "changed since publish wrote it: not removed")) << w.left[1];
  // The manifest no longer vouches for a.html: the next publish leaves it too, now as not its own.
  const auto again = write({{"index.html", "index 2"}, {"a.html", "a 3"}});
  EXPECT_EQ(read(site() / "a.html"), "a, edited by hand");
  EXPECT_TRUE(says(again, "a.html", "not written by publish"));
}

TEST_F(PublishWriter, AFileTheManifestDoesNotListIsLeft) {
  write({{"index.html", "index 1"}});
  std::ofstream(site() / "notes.html") << "someone's notes";
  const auto w = write({{"index.html", "index 1"}, {"notes.html", "a page of the site"}});
  EXPECT_EQ(read(site() / "notes.html"), "someone's notes");
  EXPECT_TRUE(says(w, "notes.html", "not written by publish (the manifest does not list it)"));
  // Once its owner removes it, publish writes the page.
  fs::remove(site() / "notes.html");
  const auto after = write({{"index.html", "index 1"}, {"notes.html", "a page of the site"}});
  EXPECT_TRUE(after.left.empty());
  EXPECT_EQ(read(site() / "notes.html"), "a page of the site");
}

TEST_F(PublishWriter, NothingIsWrittenThroughALinkOutOfTheSite) {
  fs::create_directories(root_ / "elsewhere");
  std::ofstream(root_ / "elsewhere" / "vega.js") << "not the site's";
  write({{"index.html", "index 1"}});
  fs::create_directory_symlink(root_ / "elsewhere", site() / "assets");
  const auto w = write({{"index.html", "index 1"}, {"assets/vega.js", "the chart library"}});
  EXPECT_EQ(read(root_ / "elsewhere" / "vega.js"), "not the site's");
  EXPECT_TRUE(says(w, "assets/vega.js", "a symbolic link on its way leads out of the site folder"));
  EXPECT_EQ(w.written, 0u);
}

TEST_F(PublishWriter, ALinkInsideTheSiteIsFollowed) {
  write({{"index.html", "index 1"}});
  fs::create_directories(site() / "real");
  fs::create_directory_symlink(site() / "real", site() / "assets");
  const auto w = write({{"index.html", "index 1"}, {"assets/vega.js", "the chart library"}});
  EXPECT_TRUE(w.left.empty());
  EXPECT_EQ(read(site() / "real" / "vega.js"), "the chart library");
}

// The nightly's count targets are named qemu-vlen<N>, and a timed bench can use that name: its
// times and the counts of the same cell must not share a series, an axis or an index row.
TEST_F(PublishWriter, TimesAndCountsOfOneCellNeverShareAHistory) {
  const std::string db = (root_ / "results.db").string();
  k3test::publish::add_nights(db, 0, 3);
  k3test::publish::add_timed_run_on_a_count_target(db, 2);
  ASSERT_FALSE(k3test::publish::publish_json(db, site()).empty());
  const std::regex title("<title>linear_decode [^<]*n=1024[^<]* on qemu-vlen1024</title>");
  int counts = 0, times = 0;
  for (const auto& f : k3test::publish::files_of(site())) {
    if (f.rfind("history/", 0) != 0) continue;
    const std::string page = read(site() / f);
    if (!std::regex_search(page, title)) continue;
    const bool count_column = page.find("<th>count ") != std::string::npos;
    const bool time_column = page.find("<th>mean ") != std::string::npos;
    EXPECT_NE(count_column, time_column) << f << ": one unit per page";
    counts += count_column;
    times += time_column;
  }
  EXPECT_EQ(counts, 1);
  EXPECT_EQ(times, 1);
}

}  // namespace
