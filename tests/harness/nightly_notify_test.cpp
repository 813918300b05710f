// The nightly's notify hook (apps/nightly/notify.h), on real reports of runners whose times are
// planted (tests/support/synthetic-k3bench.sh: 100 us and 150 us per call, +-0.5%), so which
// verdicts are regressions is known whatever else the machine runs:
//   - an interleaved A/B run (bench --baseline-runner, as the nightly's verdict bench) of a build
//     50% slower: its report's regression is confirmed; the hook gets the payload and summary
//     paths, the payload names the cell with its effect and interval, the bisection's suspect
//     commit and the links; the "notify" step row records it;
//   - the same slowdown judged across two separate runs without --confirm: suspected, not
//     confirmed: the hook is not run;
//   - boards quarantined, no regression: the quieter "board_fault" message;
//   - a hook that exits 1 and one that hangs (with a child of its own): one line each, the hang
//     killed with its child at the timeout, nothing thrown (the night's exit code is the
//     caller's, untouched).
// Fast (label harness): a few seconds of planted-time runs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/nightly/notify.h"
#include "farm_test_support.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "tests/support/bench_config.h"

namespace {

using namespace k3farm_test;
using nlohmann::json;

const std::string kSweep =
    k3test::measure_table(4, 3, "0.01") + k3test::decode_case("[{ n = 256, k = 512 }]");

class NotifyHook : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(night_);
    write_file(tmp_ / "sweep.toml", kSweep);
    // A hook that records its arguments and the payload it was given.
    write_file(tmp_ / "record.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + tmp_ / "args" +
                                       "'\nfor a; do prev=$last; last=$a; done\ncp \"$prev\" '" +
                                       tmp_ / "got.json" + "'\ncp \"$last\" '" + tmp_ / "got.md" +
                                       "'\necho recorded\n");
    fs::permissions(tmp_ / "record.sh", fs::perms::owner_all);
  }
  std::string runner(const std::string& name, double ns) const {
    const std::string p = tmp_ / name;
    write_file(p, "#!/bin/sh\nexec bash '" + std::string(K3TUNE_ROOT) +
                      "/tests/support/synthetic-k3bench.sh' '" + K3BENCH_PATH + "' " +
                      std::to_string(ns) + " \"$@\"\n");
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
  k3targets::ProcessResult k3tune(const std::string& runner, std::vector<std::string> args) const {
    write_file(tmp_ / "targets.toml",
               "[targets.local]\nkind = \"local\"\nrunner = \"" + runner + "\"\ntimeout_s = 120\n");
    std::vector<std::string> a{K3TUNE_PATH, "--root",    K3TUNE_ROOT,           "--db",
                               db(),        "--targets", tmp_ / "targets.toml", "-q"};
    a.insert(a.end(), args.begin(), args.end());
    return k3targets::run_process(a, k3targets::ProcessOptions::with_timeout(300));
  }
  std::string bench(const std::string& runner, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"--json", "bench", "--config", tmp_ / "sweep.toml"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = k3tune(runner, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("run_uuid");
  }
  k3nightly::NotifyConfig config(const std::string& hook, double timeout_s = 30) const {
    write_file(tmp_ / "nightly.toml",
               "notify = [\"" + hook + "\", \"--channel\", \"k3\"]\nnotify_timeout_s = " +
                   std::to_string(timeout_s) + "\nsite_url = \"https://k3.example/site/\"\n");
    return k3nightly::load_notify_config(tmp_ / "nightly.toml");
  }
  k3nightly::NightFacts night(int exit_code) const {
    k3nightly::NightFacts n;
    n.id = "n1";
    n.dir = night_;
    n.profile = "smoke";
    n.farm = "local";
    n.status = exit_code == 4 ? "regression" : "ok";
    n.verdict = "tonight's verdict line";
    n.exit_code = exit_code;
    return n;
  }
  std::unique_ptr<k3store::Connection> open_db() const {
    auto c = k3store::open_for_writing(db());
    k3store::begin_nightly(*c, {"n1", "smoke", night_, "", "running", std::nullopt, "", "", ""});
    return c;
  }
  std::string db() const { return tmp_ / "results.db"; }
  TempDir tmp_;
  std::string night_ = tmp_ / "night";
};

TEST_F(NotifyHook, AConfirmedRegressionSendsItsCellsEffectSuspectAndLinks) {
  // Tonight's build 50% slower, measured interleaved with last night's: a confirmed regression.
  const std::string run =
      bench(runner("k3bench-new", 150000), {"--baseline-runner", runner("k3bench-old", 100000)});
  const auto report =
      k3tune(runner("k3bench-new", 150000), {"report", run, "--no-html", "-o", night_});
  ASSERT_EQ(report.exit_code, 4) << report.out << report.err;
  // The bisect step's output, as `k3tune bisect --json` prints it.
  fs::create_directories(night_ + "/logs");
  write_file(night_ + "/logs/bisect.json",
             R"({"bisection_id": "b1", "good": "aaa111", "bad": "bbb222", "status": "found",
                 "why": "", "candidates": ["ccc333"]})");
  k3nightly::NightFacts n = night(4);
  n.exit_codes = {{"report", 4}, {"bisect", 0}};
  auto db = open_db();
  k3nightly::notify_after_night(config(tmp_ / "record.sh"), n, *db, 12);

  const std::string args = read_file(tmp_ / "args");
  EXPECT_EQ(args, "--channel\nk3\n" + night_ + "/notify/payload.json\n" + night_ +
                      "/notify/summary.md\n");
  const json p = json::parse(read_file(tmp_ / "got.json"));
  EXPECT_EQ(p.at("kind"), "regression");
  EXPECT_EQ(p.at("night").at("id"), "n1");
  EXPECT_EQ(p.at("night").at("exit_code"), 4);
  EXPECT_EQ(p.at("verdict"), "tonight's verdict line");
  ASSERT_EQ(p.at("regressed_cells").size(), 1u) << p.dump(2);
  const json& cell = p["regressed_cells"][0];
  EXPECT_EQ(cell.at("op"), "linear_decode");
  EXPECT_EQ(cell.at("source"), "verdict");
  EXPECT_EQ(cell.at("confirmation"), "interleaved");
  const json& e = cell.at("effect");
  EXPECT_NEAR(e.at("slowdown").get<double>(), 0.5, 0.02);
  EXPECT_LT(e.at("slowdown_ci95")[0].get<double>(), e.at("slowdown").get<double>());
  EXPECT_GT(e.at("slowdown_ci95")[1].get<double>(), e.at("slowdown").get<double>());
  EXPECT_GT(e.at("slowdown_ci95")[0].get<double>(), 0.4);
  EXPECT_EQ(p.at("suspect_commit"), "ccc333");
  EXPECT_EQ(p.at("bisection").at("bisection_id"), "b1");
  EXPECT_EQ(p.at("links").at("report"), night_ + "/report.html");
  EXPECT_EQ(p.at("links").at("site"), "https://k3.example/site/");
  const std::string md = read_file(tmp_ / "got.md");
  EXPECT_NE(md.find("confirmed regression"), std::string::npos) << md;
  EXPECT_NE(md.find("linear_decode"), std::string::npos) << md;
  EXPECT_NE(md.find("`ccc333`"), std::string::npos) << md;
  EXPECT_NE(md.find("Report: " + night_ + "/report.html"), std::string::npos) << md;
  EXPECT_NE(md.find("site: https://k3.example/site/"), std::string::npos) << md;
  const auto step = k3store::find_step(*db, "n1", "notify");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->status, "done");
  EXPECT_EQ(json::parse(step->detail_json).at("kind"), "regression");
  // Resumed, the night does not send it twice.
  fs::remove(tmp_ / "got.json");
  k3nightly::notify_after_night(config(tmp_ / "record.sh"), n, *db, 12);
  EXPECT_FALSE(fs::exists(tmp_ / "got.json"));
}

TEST_F(NotifyHook, ASuspectedRegressionOfTwoSeparateRunsSendsNothing) {
  const std::string base = bench(runner("k3bench-old", 100000));
  const std::string cand = bench(runner("k3bench-new", 150000));
  const auto report = k3tune(runner("k3bench-new", 150000),
                             {"report", cand, "--baseline", base, "--no-html", "-o", night_});
  ASSERT_EQ(report.exit_code, 4) << report.out << report.err;  // counted, but only suspected
  const json verdict = json::parse(read_file(night_ + "/report.json")).at("verdict");
  ASSERT_EQ(verdict.at("cells")[0].at("timing").at("confirmation"), "not-asked");
  k3nightly::NightFacts n = night(4);
  n.exit_codes = {{"report", 4}};
  EXPECT_FALSE(k3nightly::night_notice(n, config(tmp_ / "record.sh")));
  auto db = open_db();
  k3nightly::notify_after_night(config(tmp_ / "record.sh"), n, *db, 12);
  EXPECT_FALSE(fs::exists(tmp_ / "args"));
  EXPECT_FALSE(k3store::find_step(*db, "n1", "notify"));
}

TEST_F(NotifyHook, QuarantinedBoardsSendTheQuieterBoardFaultMessage) {
  k3nightly::NightFacts n = night(3);
  // A farm bench's detail (farm_sweep_outcome.cpp): the boards it quarantined and why.
  n.details = {{"bench",
                {{"quarantined",
                  {{"b2", {{"fault", "unreachable"}, {"reason", "ssh: connection refused"}}}}}}}};
  n.exit_codes = {{"bench", 3}};
  auto db = open_db();
  k3nightly::notify_after_night(config(tmp_ / "record.sh"), n, *db, 5);
  const json p = json::parse(read_file(tmp_ / "got.json"));
  EXPECT_EQ(p.at("kind"), "board_fault");
  EXPECT_FALSE(p.contains("regressed_cells"));
  ASSERT_EQ(p.at("boards").size(), 1u);
  EXPECT_EQ(p["boards"][0].at("board"), "b2");
  EXPECT_EQ(p["boards"][0].at("fault"), "unreachable");
  EXPECT_NE(read_file(tmp_ / "got.md").find("b2 (bench): ssh: connection refused"),
            std::string::npos);
  // Nothing wrong at all: nothing sent.
  EXPECT_FALSE(k3nightly::night_notice(night(0), config(tmp_ / "record.sh")));
}

TEST_F(NotifyHook, AFailingOrHangingHookIsOneLineAndKilledWithItsChildren) {
  k3nightly::NightFacts n = night(3);
  n.details = {
      {"bench", {{"quarantined", {{"b2", {{"fault", "hung"}, {"reason", "no answer"}}}}}}}};
  const auto notice = k3nightly::night_notice(n, config(tmp_ / "record.sh"));
  ASSERT_TRUE(notice);

  write_file(tmp_ / "fail.sh", "#!/bin/sh\necho 'bot: 401 unauthorized' >&2\nexit 1\n");
  fs::permissions(tmp_ / "fail.sh", fs::perms::owner_all);
  const auto failed = k3nightly::send_notice(config(tmp_ / "fail.sh"), *notice, night_);
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.line.find('\n'), std::string::npos);
  EXPECT_NE(failed.line.find("401 unauthorized"), std::string::npos) << failed.line;

  // A hook that starts a child and then hangs: both gone once the timeout has passed.
  write_file(tmp_ / "hang.sh",
             "#!/bin/sh\nsleep 300 &\necho $! > \"" + tmp_ / "child.pid" + "\"\nsleep 300\n");
  fs::permissions(tmp_ / "hang.sh", fs::perms::owner_all);
  auto db = open_db();
  const auto t0 = std::chrono::steady_clock::now();
  k3nightly::notify_after_night(config(tmp_ / "hang.sh", 1), n, *db, 5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 30);
  const auto step = k3store::find_step(*db, "n1", "notify");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->status, "failed");
  EXPECT_EQ(json::parse(step->detail_json).at("status"), "timed-out");
  const pid_t child = std::stoi(read_file(tmp_ / "child.pid"));
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = kill(child, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the hook's child " << child << " outlived the timeout";
}

// `k3tune nightly --config FILE` end to end, on a night that fails fast for a board fault (its one
// board's runner does not exist: deploy + probe finds it faulty, the bench has no board): the hook
// hangs and is killed at its timeout, or exits 1, and the night's exit code is the one it has
// without a hook.
TEST_F(NotifyHook, TheNightsExitCodeIsTheSameWithAHookThatHangsOrFails) {
  write_file(tmp_ / "farm.toml",
             "[farm]\nname = \"dead\"\n[boards.host]\nkind = \"local\"\n"
             "runner = \"" +
                 tmp_ / "no-such-k3bench" + "\"\nvariant = \"host\"\nwork_dir = \"" +
                 tmp_ / "host" + "\"\ntimeout_s = 60\n");
  write_file(tmp_ / "hang.sh", "#!/bin/sh\ncp \"$1\" '" + tmp_ / "seen.json" + "'\nsleep 300\n");
  write_file(tmp_ / "fail.sh", "#!/bin/sh\nexit 1\n");
  fs::permissions(tmp_ / "hang.sh", fs::perms::owner_all);
  fs::permissions(tmp_ / "fail.sh", fs::perms::owner_all);
  const auto nightly = [&](const std::string& dir, const std::string& hook) {
    std::vector<std::string> args{"nightly",          "--profile",  "smoke", "--farm",
                                  tmp_ / "farm.toml", "--no-build", "--dir", tmp_ / dir};
    if (!hook.empty()) {
      write_file(tmp_ / (dir + ".toml"), "notify = [\"./" + hook + "\"]\nnotify_timeout_s = 2\n");
      args.insert(args.end(), {"--config", tmp_ / (dir + ".toml")});
    }
    return k3tune(K3BENCH_PATH, args);
  };
  const auto plain = nightly("plain", "");
  ASSERT_NE(plain.exit_code, 0) << plain.out << plain.err;
  const auto t0 = std::chrono::steady_clock::now();
  const auto hung = nightly("hung", "hang.sh");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
  EXPECT_EQ(hung.exit_code, plain.exit_code) << hung.out << hung.err;
  EXPECT_NE(hung.out.find("notify: the hook failed to send the board_fault notice: timeout"),
            std::string::npos)
      << hung.out;
  EXPECT_EQ(json::parse(read_file(tmp_ / "seen.json")).at("kind"), "board_fault");
  const auto failed = nightly("failed", "fail.sh");
  EXPECT_EQ(failed.exit_code, plain.exit_code) << failed.out << failed.err;
  EXPECT_NE(failed.out.find("exit code 1"), std::string::npos) << failed.out;
}

TEST_F(NotifyHook, BadConfigurationIsOneLineNamingTheKey) {
  const auto refused = [&](const std::string& text, const std::string& names) {
    write_file(tmp_ / "bad.toml", text);
    try {
      k3nightly::load_notify_config(tmp_ / "bad.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(names), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  refused("notify = []\n", "notify");
  refused("notify = [\"a\", 3]\n", "notify");
  refused("notify = [\"a\"]\nnotify_timeout_s = 0\n", "notify_timeout_s");
  refused("notify = [\"a\"]\nnotfy_timeout_s = 3\n", "notfy_timeout_s");
  refused("notify = \n", "bad.toml");
}

}  // namespace
