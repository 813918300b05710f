// k3tune bisect end to end over a scratch git repository of this project: HEAD cloned into a
// temporary folder, then commits added on top whose source differs where a probe's rebuild touches
// one file (the runner's main.cpp, the rest ccache hits): the default of k3bench's extra-work hook
// (--extra-work-spins: a dependent integer chain after every timed call, real work, not a sleep)
// raised a little (thousands more instructions per call, a timing change far below half the
// slowdown) and, later, a lot (a large slowdown); one commit that does not build (#error) and one
// whose runner aborts at start, each mended by the next commit. The time bisection must name the
// planted commit in about log2(N) probes plus the skips, report both skips, store every probe, and
// find it again from a nightly whose verdict run is that regression's A/B (--from-nightly) -- the
// timed ones checked against their own probes' verdicts, which are the machine's; the
// instruction-count bisection (riscv64 runner per commit, under qemu-user with the counting
// plugin) must name the count commit on a short history. Bad input (unknown revision, equal
// revisions, good not an ancestor, a case the good runner does not know) is one line, exit 2,
// nothing built or stored.
//
// The timed runs count disturbed processes as they are (--no-remeasure): on a shared 2-CPU
// machine most short processes are preempted, and the planted slowdown (about +300%) dwarfs that.
//
// Size: K3_TEST_SIZE=reduced (CI) bisects 6 commits with the two broken ones where the search
// meets them; the full size (label bisect) 10. Both print the table and the wall time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/child_output.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/targets/process.h"
#include "tests/support/git_scratch.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kCase = "linear_decode n=1024,k=1024 workers=1";
constexpr const char* kMain = "harness/runner/main.cpp";
constexpr const char* kLinearOps = "harness/runner/ops/linear_ops.cpp";
constexpr const char* kSpinsDefault = "std::uint64_t extra_work_spins = 0;";

bool reduced() {
  const char* s = std::getenv("K3_TEST_SIZE");
  return s != nullptr && std::string(s) == "reduced";
}

class BisectCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("k3tune_bisect_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "targets.toml")
        << "[targets.local]\nkind = \"local\"\nvariant = \"host\"\ntimeout_s = 120\n";
    // The project at HEAD (committed state), and the riscv64 dependencies the rvv preset needs
    // (built by a script into the checkout, not in git).
    const auto clone =
        k3targets::run_process({"git", "clone", "-q", "--shared", K3TUNE_ROOT, repo()},
                               k3targets::ProcessOptions::with_timeout(300));
    ASSERT_TRUE(clone.ok()) << clone.err;
    fs::create_directories(fs::path(repo()) / "build");
    fs::create_directory_symlink(fs::path(K3TUNE_ROOT) / "build" / "third_party",
                                 fs::path(repo()) / "build" / "third_party");
    good_ = git({"rev-parse", "HEAD"});
  }
  static void TearDownTestSuite() {
    if (std::getenv("K3_BISECT_TEST_KEEP") != nullptr) return;  // to look into a failure
    fs::remove_all(dir_);
  }
  static std::string repo() { return (dir_ / "repo").string(); }
  static std::string db() { return (dir_ / "results.db").string(); }
  static std::string git(std::vector<std::string> args) { return k3test::git_in(repo(), args); }
  // Rewrites `from` to `to` in a file of the scratch repository (which must contain it) and
  // commits.
  static std::string commit_edit(const std::string& file, const std::string& from,
                                 const std::string& to, const std::string& message) {
    const fs::path p = fs::path(repo()) / file;
    std::ifstream in(p);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from << " not in " << file;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    std::ofstream(p) << text;
    git({"commit", "-q", "-a", "-m", message});
    return git({"rev-parse", "HEAD"});
  }
  static std::string commit_doc(const std::string& line) {
    std::ofstream(fs::path(repo()) / "docs" / "bisect-scratch.md", std::ios::app) << line << "\n";
    git({"add", "docs/bisect-scratch.md"});
    git({"commit", "-q", "-m", line});
    return git({"rev-parse", "HEAD"});
  }
  static std::string spins(int n) { return fmt::format("std::uint64_t extra_work_spins = {};", n); }
  static k3targets::ProcessResult k3tune(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        K3TUNE_PATH, "--root", repo(), "--db", db(), "--targets", (dir_ / "targets.toml").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(3000));
  }
  static std::int64_t count(const std::string& sql) {
    if (!fs::exists(db())) return 0;
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }

  static fs::path dir_;
  static std::string good_;
};
fs::path BisectCli::dir_;
std::string BisectCli::good_;

TEST_F(BisectCli, BadInputIsOneLineExit2NothingBuiltOrStored) {
  const std::string c = commit_doc("a commit to name as bad");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--good", "no-such-rev", "--bad", c, "--case", kCase},
       "--good no-such-rev: no such revision"},
      {{"--good", good_, "--bad", "0123456789abcdef", "--case", kCase}, "no such revision"},
      {{"--good", c, "--bad", c, "--case", kCase}, "the same commit"},
      {{"--good", c, "--bad", good_, "--case", kCase}, "is not an ancestor of"},
      {{"--good", good_, "--bad", c, "--case", "linear_decode"}, "not \"<op> <shape> [params]\""},
      {{"--from-nightly", (dir_ / "no-such-night").string()}, "no such folder"},
      {{"--good", good_, "--bad", c, "--case", kCase, "-R", "many"}, "--reps"},
      {{"--from-nightly", repo(), "--good", good_}, "not with --good"},
  };
  for (const auto& k : cases) {
    std::vector<std::string> args = {"bisect"};
    args.insert(args.end(), k.args.begin(), k.args.end());
    const auto r = k3tune(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(k.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "bisect")) << "nothing built";
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 0) << "nothing measured";
  // A case the good revision's runner does not know: its runner is built (to read its catalog),
  // nothing is measured or stored.
  const auto r = k3tune({"-q", "bisect", "--good", good_, "--bad", c, "--case", "no_such_op n=1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--case 'no_such_op n=1': unknown at the good revision"), std::string::npos)
      << r.err;
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM bisections"), 0);
  git({"reset", "-q", "--hard", good_});
}

// full size: good - notes - COUNT - notes - notes - BROKEN - mended - CRASH - mended - SLOW - notes
// reduced:    good - COUNT - notes - BROKEN - mended but CRASH - mended - SLOW
// (the search's middles meet both broken commits in either layout).
TEST_F(BisectCli, FindsThePlantedSlowdownAroundSkippedCommits) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> commits;
  std::string count_commit, count_bad, slow_commit, broken, crash;
  const std::string main_line = "int main(int argc, char** argv) {";
  const std::string error_line = "#error planted build failure\n" + main_line;
  const std::string abort_line = main_line + "\n  std::abort();";
  if (!reduced()) commits.push_back(commit_doc("notes 1"));
  commits.push_back(
      count_commit = commit_edit(kMain, kSpinsDefault, spins(5000), "more work per call (count)"));
  commits.push_back(count_bad = commit_doc("notes 2"));
  if (!reduced()) commits.push_back(commit_doc("notes 3"));
  commits.push_back(broken = commit_edit(kMain, main_line, error_line, "broken"));
  if (reduced()) {
    commits.push_back(
        crash = commit_edit(kMain, error_line, abort_line, "mended, but the runner aborts"));
  } else {
    commits.push_back(commit_edit(kMain, error_line, main_line, "mended"));
    commits.push_back(crash = commit_edit(kMain, main_line, abort_line, "aborts"));
  }
  commits.push_back(commit_edit(kMain, abort_line, main_line, "mended again"));
  // The timed slowdown lives in the op's driver, which both builds' kernel plugins carry: a probe
  // pairs the two commits inside one runner process, where the runner's own options (main.cpp's
  // extra work) are the candidate's for both sides and could not tell the commits apart.
  commits.push_back(slow_commit = commit_edit(
                        kLinearOps, "k3k::quantize_pack_decode(path_, a_.data(), act_);",
                        "for (int again = 0; again < 400; ++again) "
                        "k3k::quantize_pack_decode(path_, a_.data(), act_);",
                        "much more work per call"));
  if (!reduced()) commits.push_back(commit_doc("notes 4"));
  const std::string bad = commits.back();

  // Which commit a timed bisection names follows its probes' verdicts, timed on this machine
  // (the planted slowdown is some forty-fold, yet a verdict of real timings stays the machine's):
  // the command must name what its own probes imply -- the candidates after the last commit its
  // probes judged good and no later than the first one judged bad. The search itself is checked
  // against a brute force on exact verdicts (BisectSearch.*), and the instruction-count
  // bisection below, exact, must name its planted commit.
  std::map<std::string, int> position = {{good_, -1}};
  for (std::size_t i = 0; i < commits.size(); ++i) position[commits[i]] = static_cast<int>(i);
  auto expect_named_by_its_probes = [&](const nlohmann::json& b, const std::string& what) {
    int last_good = -1, first_bad = static_cast<int>(commits.size());
    for (const auto& p : b["probes"]) {
      if (p["outcome"] == "good") last_good = std::max(last_good, position.at(p["commit"]));
      if (p["outcome"] == "bad") first_bad = std::min(first_bad, position.at(p["commit"]));
    }
    ASSERT_FALSE(b["candidates"].empty()) << what << b.dump();
    if (last_good >= first_bad) return;  // verdicts that contradict each other name nothing sure
    for (const auto& c : b["candidates"]) {
      EXPECT_GT(position.at(c), last_good) << what << b.dump();
      EXPECT_LE(position.at(c), first_bad) << what << b.dump();
    }
    if (b["candidates"] != nlohmann::json::array({slow_commit}))
      std::cout << what << ": the timed probes named " << b["candidates"].dump()
                << ", not the planted " << slow_commit << "\n";
  };
  const auto r = k3tune({"--json", "bisect", "--good", good_, "--bad", bad, "--case", kCase, "-P",
                         "6", "-R", "3", "--min-time", "0.02", "--no-remeasure", "-j", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kBisect, j),
            std::vector<std::string>{});
  EXPECT_EQ(j["status"], "found") << r.err;
  expect_named_by_its_probes(j, "bisect");
  EXPECT_EQ(j["commits"], commits.size());
  // Both broken commits were met and skipped, each with its reason.
  std::map<std::string, std::string> skipped;
  for (const auto& p : j["probes"])
    if (p["outcome"] == "skip") skipped[p["commit"]] = p["reason"];
  ASSERT_EQ(skipped.size(), 2u) << r.err;
  EXPECT_NE(skipped[broken].find("does not build"), std::string::npos) << skipped[broken];
  EXPECT_NE(skipped[crash].find("the runner failed"), std::string::npos) << skipped[crash];
  // About log2(N) probes: the bad revision, ceil(log2 N) decisions, and the skips.
  const int n = static_cast<int>(commits.size());
  const int probes = static_cast<int>(j["probes"].size());
  EXPECT_LE(probes, 1 + static_cast<int>(std::ceil(std::log2(n))) + 2) << r.err;
  // Every probe's effect has its interval, and its outcome is its effect against half the chased
  // one.
  const double chased = j["chased"][0]["effect"];
  for (const auto& p : j["probes"]) {
    if (p["outcome"] == "skip") continue;
    const auto& e = p["cases"][0];
    EXPECT_LE(e["ci95"][0].get<double>(), e["effect"].get<double>());
    EXPECT_GE(e["ci95"][1].get<double>(), e["effect"].get<double>());
    EXPECT_EQ(p["outcome"] == "bad", e["effect"].get<double>() >= chased / 2) << p.dump();
  }
  // Stored: the bisection and one row per probe (and case).
  EXPECT_EQ(count(fmt::format(
                "SELECT count(*) FROM bisections WHERE status = 'found' AND first_bad = '{}'",
                j["candidates"][0].get<std::string>())),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM bisection_probes"), probes);
  EXPECT_EQ(count("SELECT count(*) FROM bisection_probes WHERE outcome = 'skip'"), 2);
  // A second bisection reuses every runner (builds by revision, failures by their logs): the
  // table it prints is what the closing note shows.
  const auto again = k3tune({"bisect", "--good", good_, "--bad", bad, "--case", kCase, "-P", "6",
                             "-R", "3", "--min-time", "0.02", "--no-remeasure"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("building"), std::string::npos) << again.err;
  EXPECT_NE(again.out.find("first bad commit: "), std::string::npos) << again.out;
  std::cout << again.out;
  std::cout << fmt::format(
      "time bisection over {} commits: {} probes, {:.0f} s wall (both runs)\n", n, probes,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  // The same regression as a nightly's verdict would hold it: a nightly whose verdict run is the
  // bad revision's A/B (the good runner against the bad one, interleaved). --from-nightly takes
  // the revisions from the two builds' provenance and the case from the regressed cell (its
  // parameters as measured, defaults filled in), and finds the same commit (runners reused).
  {
    const fs::path night = dir_ / "nightly" / "n1";
    fs::create_directories(night);
    auto c = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
    k3store::begin_nightly(*c,
                           {"n1", "full", night.string(), "", "running", std::nullopt, "", "", ""});
    k3store::finish_nightly(*c, "n1", "regression", 4, "", j["chased"][0]["run_uuid"]);
  }
  const auto night_run =
      k3tune({"--json", "bisect", "--from-nightly", (dir_ / "nightly" / "n1").string(), "-P", "6",
              "-R", "3", "--min-time", "0.02", "--no-remeasure"});
  ASSERT_EQ(night_run.exit_code, 0) << night_run.err << night_run.out;
  const auto nj = nlohmann::json::parse(night_run.out);
  EXPECT_EQ(nj["good"], good_);
  EXPECT_EQ(nj["bad"], bad);
  expect_named_by_its_probes(nj, "bisect --from-nightly");
  EXPECT_NE(nj["chased"][0]["case"].get<std::string>().find("linear_decode k=1024,n=1024 "),
            std::string::npos);
  EXPECT_EQ(count("SELECT count(*) FROM bisections WHERE nightly_id = 'n1'"), 1);

  // Instruction counts over a short history (good .. the notes after the count commit: 2 or 3
  // commits): the riscv64 runner of each probe counted under qemu-user, the exact rule decides.
  const auto c0 = std::chrono::steady_clock::now();
  const auto counts =
      k3tune({"--json", "bisect", "--instructions", "--vlen", "256", "--good", good_, "--bad",
              count_bad, "--case", "linear_decode n=128,k=256", "-j", "2"});
  ASSERT_EQ(counts.exit_code, 0) << counts.err << counts.out;
  const auto cj = nlohmann::json::parse(counts.out);
  EXPECT_EQ(cj["status"], "found") << counts.err;
  EXPECT_EQ(cj["candidates"], nlohmann::json::array({count_commit})) << counts.err;
  // 5000 more spins per call: more than 5000 instructions, beyond the tolerance.
  EXPECT_GT(cj["chased"][0]["delta"].get<double>(), 5000.0);
  EXPECT_GT(cj["chased"][0]["delta"].get<double>(), cj["chased"][0]["tolerance"].get<double>());
  std::cout << counts.err;
  std::cout << fmt::format(
      "count bisection: {:.0f} s wall\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count());
}

}  // namespace
