// Which earlier night a nightly compares with (apps/nightly/revision_ancestry.h): the
// choice over a scratch git repository with a main line and a branch, against real git, and the
// choice rule on its own (newest ancestor; unknown ancestry only as a fallback; never a night known
// not to be an ancestor), with the earlier nights read from a real database.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "apps/nightly/revision_ancestry.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/process.h"
#include "tests/support/git_scratch.h"
#include "tests/support/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using k3nightly::Ancestry;

struct FarmNightlyAncestry : ::testing::Test {
  k3test::ScratchDir dir{"k3ancestry-", k3test::ScratchDir::Name::kPerProcess};
  void SetUp() override { fs::create_directories(dir / "repo"); }
  std::string repo() const { return (dir / "repo").string(); }
  std::string git(std::vector<std::string> args) const { return k3test::git_in(repo(), args); }
  std::string commit(const std::string& text) {
    std::ofstream(dir / "repo" / "f.txt") << text;
    git({"add", "f.txt"});
    git({"commit", "-q", "-m", text});
    return git({"rev-parse", "HEAD"});
  }
};

// main: a - b - c;  branch from b: x.  Tonight on the branch (x): b and a are ancestors, c is not.
TEST_F(FarmNightlyAncestry, AncestorsAreTheSameLineAndTheMergeBase) {
  git({"init", "-q", "-b", "main"});
  const std::string a = commit("a"), b = commit("b");
  git({"checkout", "-q", "-b", "topic"});
  const std::string x = commit("x");
  git({"checkout", "-q", "main"});
  const std::string c = commit("c");
  EXPECT_EQ(k3nightly::head_revision(repo()), c);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), a, c), Ancestry::kAncestor);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), c, c), Ancestry::kAncestor);  // the same build
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), x, c), Ancestry::kNotAncestor);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), c, x), Ancestry::kNotAncestor);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), b, x), Ancestry::kAncestor);  // the merge base
  // Stored revisions are 12-digit and may carry the dirty mark.
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), b.substr(0, 12) + "-dirty", x),
            Ancestry::kAncestor);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), "0123456789ab", x), Ancestry::kUnknown);
  EXPECT_EQ(k3nightly::revision_ancestry(repo(), "unknown", x), Ancestry::kUnknown);
  EXPECT_EQ(k3nightly::head_revision((dir / "nowhere").string()), "");

  // Nights newest first: c (main, after the branch point), b, a. Tonight on the branch: b.
  const auto db_path = (dir / "r.db").string();
  auto db = k3store::open_database(db_path, k3store::OpenMode::kCreateOrUpdate);
  int night = 0;
  for (const std::string& rev : {a, b, c}) {
    k3store::BuildRecord build;
    build.build_hash = "hash-" + rev.substr(0, 12);
    build.variant = "host";
    build.binary_path = "/bin/true";
    build.source_revision = rev.substr(0, 12);
    build.recorded_by = "test";
    k3store::upsert_build(*db, build);
    k3store::NightlyRow row;
    row.nightly_id = "night-" + std::to_string(++night);
    row.profile = "quick";
    row.dir = dir.path().string();
    k3store::begin_nightly(*db, row);
    k3store::finish_nightly(*db, row.nightly_id, "ok", 0, build.build_hash, "");
  }
  const auto earlier = k3store::earlier_nightlies(*db, "tonight");
  ASSERT_EQ(earlier.size(), 3u);
  EXPECT_EQ(earlier[0].nightly_id, "night-3");  // newest first
  std::vector<std::string> revisions;
  for (const auto& n : earlier) revisions.push_back(n.host_revision);
  const auto on_branch = k3nightly::newest_ancestor(
      revisions, [&](const std::string& r) { return k3nightly::revision_ancestry(repo(), r, x); });
  ASSERT_TRUE(on_branch.index);
  EXPECT_EQ(earlier[*on_branch.index].nightly_id, "night-2") << on_branch.note;
  EXPECT_NE(on_branch.note.find("1 newer night(s) passed over"), std::string::npos)
      << on_branch.note;
  const auto on_main = k3nightly::newest_ancestor(
      revisions, [&](const std::string& r) { return k3nightly::revision_ancestry(repo(), r, c); });
  ASSERT_TRUE(on_main.index);
  EXPECT_EQ(earlier[*on_main.index].nightly_id, "night-3");
}

TEST(FarmNightlyAncestryRule, UnknownOnlyAsAFallbackAndNeverANonAncestor) {
  const std::map<std::string, Ancestry> kind = {{"later", Ancestry::kNotAncestor},
                                                {"lost", Ancestry::kUnknown},
                                                {"old", Ancestry::kAncestor}};
  auto classify = [&](const std::string& r) { return kind.at(r); };
  EXPECT_EQ(k3nightly::newest_ancestor({"later", "lost", "old"}, classify).index, 2u);
  const auto fallback = k3nightly::newest_ancestor({"later", "lost"}, classify);
  EXPECT_EQ(fallback.index, 1u);
  EXPECT_NE(fallback.note.find("cannot tell"), std::string::npos) << fallback.note;
  EXPECT_FALSE(k3nightly::newest_ancestor({"later"}, classify).index);
  EXPECT_FALSE(k3nightly::newest_ancestor({}, classify).index);
}

}  // namespace
