// `k3tune nightly` end to end at reduced size (label nightly): the smoke profile (the quick
// profile's host steps: deploy + probe, bench on the farm, a tuning campaign on the farm and the
// table verified on its board, verdict bench, counts, report) on a one-board local farm running
// this tree's k3bench (a farm file, not the built-in
// farm: one bench step, "bench", shares the cells among its boards). The first attempt is killed
// (SIGKILL to its whole process group) while the bench step measures; `--resume DIR` finishes
// it, keeps what was measured (adopted, not measured again) and leaves every artifact.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "browser_support.h"
#include "farm_test_support.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;

class Nightly : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(tmp_ / "farm.toml",
               std::string("[farm]\nname = \"one-local\"\n[boards.host]\nkind = \"local\"\n") +
                   "runner = \"" + K3BENCH_PATH + "\"\nvariant = \"host\"\nwork_dir = \"" +
                   (tmp_ / "host") + "\"\ntimeout_s = 300\n");
    write_file(tmp_ / "targets.toml", std::string("[targets.local]\nkind = \"local\"\n") +
                                          "variant = \"host\"\nrunner = \"" + K3BENCH_PATH +
                                          "\"\ntimeout_s = 300\n");
  }
  std::vector<std::string> argv(const std::vector<std::string>& args) const {
    std::vector<std::string> a{K3TUNE_PATH, "--root",    K3TUNE_ROOT,           "--db",
                               db(),        "--targets", tmp_ / "targets.toml", "nightly"};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }
  std::string db() const { return tmp_ / "results.db"; }
  std::int64_t count(const std::string& sql) const {
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  TempDir tmp_;
};

TEST_F(Nightly, KilledDuringTheBenchAndResumedFinishesKeepingWhatWasMeasured) {
  const std::string dir = tmp_ / "nightly/n1";
  const auto t0 = std::chrono::steady_clock::now();
  // First attempt, in its own process group; killed once the bench has committed a process.
  const int out = ::open((tmp_ / "first.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const pid_t pid = k3targets::spawn_in_group(
      argv({"--profile", "smoke", "--farm", tmp_ / "farm.toml", "--no-build", "--dir", dir}), -1,
      out, out);
  close(out);
  ASSERT_GT(pid, 0);
  bool killed = false;
  for (int i = 0; i < 3000 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      if (fs::exists(db()) &&
          count("SELECT count(*) FROM nightly_steps WHERE step = 'bench' AND status = "
                "'running'") == 1 &&
          count("SELECT count(*) FROM processes WHERE status = 'ok'") >= 1) {
        kill(-pid, SIGKILL);
        killed = true;
      }
    } catch (const std::exception&) {  // the database is being created
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(killed) << read_file(tmp_ / "first.out");
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a runner in flight finishes alone
  const auto processes_at_kill = count("SELECT count(*) FROM processes WHERE status = 'ok'");
  const auto samples_at_kill = count("SELECT count(*) FROM samples");
  EXPECT_EQ(count("SELECT count(*) FROM nightly_steps WHERE step = 'bench' AND status = 'done'"),
            0);

  const auto r =
      k3targets::run_process(argv({"--resume", dir}), k3targets::ProcessOptions::with_timeout(900));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf(
      "nightly smoke: killed with %lld processes / %lld samples stored; resumed and "
      "finished with %lld samples; %.0f s in all\n",
      static_cast<long long>(processes_at_kill), static_cast<long long>(samples_at_kill),
      static_cast<long long>(count("SELECT count(*) FROM samples")), wall);
  EXPECT_NE(r.out.find("deploy-probe: done earlier, skipped"), std::string::npos) << r.out;
  // Nothing measured before the kill is lost; the bench's processes from the killed attempt are
  // counted in its cells (adopted), not measured again.
  EXPECT_GE(count("SELECT count(*) FROM samples"), samples_at_kill);
  EXPECT_GE(count("SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
  EXPECT_GE(count("SELECT count(*) FROM aggregates a WHERE a.status = 'ok' AND EXISTS (SELECT 1 "
                  "FROM runs r WHERE r.status = 'interrupted' AND a.source_runs LIKE '%' || "
                  "r.run_uuid || '%')"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM nightly_steps WHERE status <> 'done'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM nightlies WHERE status = 'ok' AND exit_code = 0 AND "
                  "host_build_hash IS NOT NULL"),
            1);
  for (const char* f : {"summary.md", "report.html", "report.json", "nightly.md",
                        "tables/farm.json", "logs/bench.json"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  // Tuned on the farm's board (natively: timed) and verified there.
  const auto table = nlohmann::json::parse(read_file(dir + "/tables/farm.json"));
  EXPECT_EQ(table["board"]["name"], "host");
  EXPECT_EQ(table["source"]["objective"], "time");
  EXPECT_EQ(
      count("SELECT count(*) FROM nightly_steps WHERE step = 'verify-farm' AND status = 'done'"),
      1);
  const std::string summary = read_file(dir + "/summary.md");
  EXPECT_NE(summary.find("# Nightly n1 (smoke profile"), std::string::npos) << summary;
  EXPECT_NE(r.out.find("database " + db()), std::string::npos) << r.out;
  // Resuming a finished nightly runs nothing.
  const auto again =
      k3targets::run_process(argv({"--resume", dir}), k3targets::ProcessOptions::with_timeout(300));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("] report: k3tune"), std::string::npos) << again.out;
}

TEST_F(Nightly, BadInputIsOneLineAndRunsNothing) {
  auto r = k3targets::run_process(argv({"--profile", "nope"}),
                                  k3targets::ProcessOptions::with_timeout(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "k3tune: --profile: unknown profile 'nope' (quick, full, smoke)\n");
  r = k3targets::run_process(argv({"--resume", tmp_ / "nowhere"}),
                             k3targets::ProcessOptions::with_timeout(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nowhere: not a nightly directory (no nightly.json)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(db()));
}

}  // namespace

// Instruction counts every night, judged by the exact rule: the first nightly has nothing to
// compare with (the count verdict is skipped, said so); a second, same code, counts exactly the
// same (no jitter) and is "identical", and the nightly exits 0; a
// third whose runner does planted extra work per call (K3BENCH_EXTRA_WORK_SPINS, a fixed number of
// busy-loop steps after every call) counts more instructions: a regression with its exact delta,
// and the nightly exits 4.
TEST_F(Nightly, InstructionCountsAreJudgedAgainstThePreviousNightlyByTheExactRule) {
  auto night = [&](const std::string& id, const std::vector<std::string>& env) {
    std::vector<std::string> a = {"env"};
    a.insert(a.end(), env.begin(), env.end());
    const auto n = argv({"--profile", "smoke", "--farm", tmp_ / "farm.toml", "--no-build", "--dir",
                         tmp_ / ("nightly/" + id)});
    a.insert(a.end(), n.begin(), n.end());
    return k3targets::run_process(a, k3targets::ProcessOptions::with_timeout(900));
  };
  const auto first = night("n1", {});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("count-verdict-rvv: skipped: no earlier nightly counted the rvv runner"),
            std::string::npos)
      << first.out;
  const auto rows = nlohmann::json::parse(read_file(tmp_ / "nightly/n1/logs/count.json"));
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0]["path"], "rvv");
  EXPECT_GT(rows[0]["instructions_per_call"].get<double>(), 128 * 64 / 64) << rows.dump();
  // The first night's page leads with the night, rendered: its heading, then tonight's counts (a
  // table with the figure: there is no verdict yet), the steps, and only then the bench run.
  {
    const std::string page = read_file(tmp_ / "nightly/n1/report.html");
    const auto night = page.find("<section id=\"nightly\">\n<h1>Nightly n1 (smoke profile");
    const auto counts = page.find("<h2>Tonight's instruction counts</h2>\n<table>");
    const auto steps = page.find("<h2>Steps</h2>\n<table>");
    const auto run = page.find("<h2>Tonight's bench run: run ");
    const auto verdict = page.find("<section id=\"verdict\">");
    EXPECT_NE(night, std::string::npos) << page.substr(0, 4000);
    EXPECT_TRUE(night < counts && counts < steps && steps < run && run < verdict)
        << night << " " << counts << " " << steps << " " << run << " " << verdict;
    EXPECT_NE(
        page.find(fmt::format(">{:.0f}</td>", rows[0]["instructions_per_call"].get<double>())),
        std::string::npos);
    EXPECT_EQ(page.find("|---|"), std::string::npos);  // no raw Markdown table left
    EXPECT_NE(page.find("<title>k3tune nightly n1</title>"), std::string::npos);
    // The same page as a reader sees it, in Debian's chromium: no error, the night's headings
    // first and in order, its tables rendered as tables (cells, not pipes), tonight's count there.
    const auto shown = k3test::check_in_browser(tmp_ / "nightly/n1/report.html",
                                                tmp_ / "nightly/browser", "nightly-n1.png");
    EXPECT_EQ(shown["console"], nlohmann::json::array()) << shown["console"].dump(1);
    std::vector<std::string> headings;
    for (const auto& h : shown["headings"])
      headings.push_back(
          fmt::format("h{} {}", h["level"].get<int>(), h["text"].get<std::string>()));
    ASSERT_GE(headings.size(), 4u) << shown["headings"].dump(1);
    for (const auto& h : headings) std::printf("n1 page: %s\n", h.c_str());
    EXPECT_EQ(headings[0].rfind("h1 Nightly n1 (smoke profile", 0), 0u) << headings[0];
    const auto at = [&](const std::string& prefix) {
      for (std::size_t i = 0; i < headings.size(); ++i)
        if (headings[i].rfind(prefix, 0) == 0) return static_cast<long>(i);
      return -1L;
    };
    const long counts_at = at("h2 Tonight's instruction counts"), steps_at = at("h2 Steps"),
               run_at = at("h2 Tonight's bench run: run ");
    EXPECT_TRUE(0 < counts_at && counts_at < steps_at && steps_at < run_at)
        << counts_at << " " << steps_at << " " << run_at << "\n"
        << shown["headings"].dump(1);
    bool counts_table = false;
    for (const auto& t : shown["tables"]) {
      for (const auto& row : t["rows"])
        for (const auto& cell : row)
          EXPECT_EQ(cell.get<std::string>().find("|"), std::string::npos) << t.dump();
      if (t["under"] != "Tonight's instruction counts") continue;
      counts_table = true;
      EXPECT_EQ(t["header"], nlohmann::json({"runner", "VLEN", "op", "shape",
                                             "instructions per call", "+- jitter"}));
      ASSERT_EQ(t["rows"].size(), 1u) << t.dump();
      EXPECT_EQ(t["rows"][0][0], "rvv");
      EXPECT_EQ(t["rows"][0][4],
                fmt::format("{:.0f}", rows[0]["instructions_per_call"].get<double>()));
    }
    EXPECT_TRUE(counts_table) << shown["tables"].dump(1);
    // The site is published after the night, beside it, and the summary links it.
    EXPECT_TRUE(fs::exists(tmp_ / "nightly/site/index.html"));
    EXPECT_NE(read_file(tmp_ / "nightly/n1/summary.md")
                  .find("Site: " + (tmp_ / "nightly/site/index.html")),
              std::string::npos);
  }

  const auto second = night("n2", {});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  const std::string same = read_file(tmp_ / "nightly/n2/summary.md");
  EXPECT_NE(same.find("## Instruction counts, rvv runner: exact verdict against nightly n1"),
            std::string::npos)
      << same;
  EXPECT_NE(same.find("1 identical"), std::string::npos) << same;
  EXPECT_NE(second.out.find("instruction counts: no increase against nightly n1"),
            std::string::npos)
      << second.out;
  // The same build counts the same on both nights, to the instruction, with no jitter.
  const auto n1_rows = nlohmann::json::parse(read_file(tmp_ / "nightly/n1/logs/count.json"));
  const auto n2_rows = nlohmann::json::parse(read_file(tmp_ / "nightly/n2/logs/count.json"));
  ASSERT_EQ(n1_rows.size(), n2_rows.size());
  for (std::size_t i = 0; i < n1_rows.size(); ++i) {
    EXPECT_EQ(n1_rows[i]["instructions_per_call"], n2_rows[i]["instructions_per_call"]) << i;
    EXPECT_EQ(n2_rows[i]["jitter"].get<double>(), 0) << n2_rows[i].dump();
  }
  // Tonight's table against last night's of the same name (table diff).
  EXPECT_NE(same.find("## Tables against nightly n1"), std::string::npos) << same;
  EXPECT_NE(same.find("farm.json:\n\n```\n"), std::string::npos) << same;
  EXPECT_NE(same.find("entries unchanged"), std::string::npos) << same;

  const auto planted = night("n3", {"K3BENCH_EXTRA_WORK_SPINS=50000"});
  EXPECT_EQ(planted.exit_code, 4) << planted.out << planted.err;
  EXPECT_NE(planted.out.find("REGRESSION against the previous nightly: count-verdict-rvv"),
            std::string::npos)
      << planted.out;
  const auto n2 = nlohmann::json::parse(read_file(tmp_ / "nightly/n2/logs/count.json"))[0];
  const auto n3 = nlohmann::json::parse(read_file(tmp_ / "nightly/n3/logs/count.json"))[0];
  const double delta =
      n3["instructions_per_call"].get<double>() - n2["instructions_per_call"].get<double>();
  EXPECT_GT(delta, 2 * std::max(n2["jitter"].get<double>(), n3["jitter"].get<double>()));
  const std::string more = read_file(tmp_ / "nightly/n3/summary.md");
  EXPECT_NE(more.find("against nightly n2"), std::string::npos) << more;
  EXPECT_NE(more.find("### More instructions"), std::string::npos) << more;
  EXPECT_NE(more.find(fmt::format(" {:+.0f} |", delta)), std::string::npos)
      << delta << " " << n2.dump() << " " << n3.dump() << "\n"
      << more;
  EXPECT_EQ(count("SELECT count(*) FROM nightlies WHERE nightly_id = 'n3' AND status = "
                  "'regression' AND exit_code = 4"),
            1);
  // report.json covers the night: the count verdict is there, a regression against n2.
  const auto report = nlohmann::json::parse(read_file(tmp_ / "nightly/n3/report.json"));
  EXPECT_EQ(report["nightly"]["exit_code"], 4);
  EXPECT_EQ(report["nightly"]["instruction_counts"]["rvv"]["verdict"], "regression")
      << report["nightly"].dump();
  EXPECT_EQ(report["nightly"]["instruction_counts"]["rvv"]["against"], "n2");
  const std::string page = read_file(tmp_ / "nightly/n3/report.html");
  EXPECT_NE(page.find("<section id=\"nightly\">\n<h1>Nightly n3"), std::string::npos);
  EXPECT_NE(page.find("<h2>Instruction counts, rvv runner: exact verdict against nightly n2</h2>"),
            std::string::npos);
}

// On a farm file each board fingerprint is judged on a board: tonight's board runner against the
// previous nightly's (kept by build hash), interleaved in the same rounds on that board. The first
// night has nothing to compare with (measured, kept); the second night's runner takes 30% longer
// per call: the board's verdict flags it, its section in summary.md names the slower cell, and
// the nightly exits 4. Both runners are the real k3bench with planted times
// (tests/support/synthetic-k3bench.sh: 100 us and 130 us per call, +-0.5%), so the verdict is
// exact whatever else the machine runs: this tests the board judge's plumbing, not the noise.
TEST_F(Nightly, ABoardsRunnerSlowerThanLastNightsIsFlaggedOnThatBoard) {
  auto farm_with = [&](const std::string& runner) {
    write_file(tmp_ / "farm.toml",
               std::string("[farm]\nname = \"one-local\"\n[boards.host]\nkind = \"local\"\n") +
                   "runner = \"" + runner + "\"\nvariant = \"host\"\nwork_dir = \"" +
                   (tmp_ / "host") + "\"\ntimeout_s = 300\n");
  };
  auto night = [&](const std::string& id) {
    return k3targets::run_process(argv({"--profile", "smoke", "--farm", tmp_ / "farm.toml",
                                        "--no-build", "--dir", tmp_ / ("nightly/" + id)}),
                                  k3targets::ProcessOptions::with_timeout(900));
  };
  auto synthetic = [&](const std::string& name, double ns) {
    write_file(tmp_ / name,
               fmt::format("#!/bin/sh\nexec bash '{}/tests/support/synthetic-k3bench.sh' "
                           "'{}' {} \"$@\"\n",
                           K3TUNE_ROOT, K3BENCH_PATH, ns));
    fs::permissions(tmp_ / name, fs::perms::owner_all);
    return tmp_ / name;
  };
  // Last night's runner (the board deploys it by its hash).
  farm_with(synthetic("k3bench-yesterday", 100000));
  const auto first = night("n1");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(
      first.out.find("board-judge-host: skipped: measured without a baseline: no earlier nightly"),
      std::string::npos)
      << first.out;
  // Tonight's: 30% slower per call.
  farm_with(synthetic("k3bench-tonight", 130000));
  const auto second = night("n2");
  EXPECT_EQ(second.exit_code, 4) << second.out << second.err;
  EXPECT_NE(second.out.find("REGRESSION against the previous nightly: board-judge-host"),
            std::string::npos)
      << second.out;
  const std::string summary = read_file(tmp_ / "nightly/n2/summary.md");
  EXPECT_NE(
      summary.find("## Board host: tonight's runner against the previous nightly's, on the board"),
      std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1 REGRESSION (1 slower"), std::string::npos) << summary;
  EXPECT_NE(summary.find("### Slower"), std::string::npos) << summary;
  // Both runners were measured on the board in one run, last night's from the kept copy.
  const auto detail =
      nlohmann::json::parse(read_file(tmp_ / "nightly/n2/logs/board-verdict-host.json"));
  ASSERT_EQ(detail["builds"].size(), 2u) << detail.dump();
  EXPECT_EQ(detail["builds"][0]["label"], "baseline");
  EXPECT_NE(detail["builds"][0]["runner"].get<std::string>().find("runners/"), std::string::npos)
      << detail["builds"][0].dump();
}
