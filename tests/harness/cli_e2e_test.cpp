// k3tune end to end: the real k3tune binary drives real k3bench processes into a real SQLite file.
// Covers counts and provenance, resume after a mid-sweep kill, failed cells (crash, timeout),
// bad input (nothing written), the IME2 build message, and the qemu-user target.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../support/stale_tcm_lock.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"
#include "harness_cli_fixture.h"

namespace fs = std::filesystem;

namespace {

using k3test::HarnessCli;

TEST_F(HarnessCli, LocalSweepFillsRunsCellsSamplesAndProvenance) {
  auto args = tiny_grid();
  args.insert(args.begin(), "bench");
  args.insert(args.end(), {"-P", "2", "-R", "3"});
  const auto r = k3tune(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("overhead"), std::string::npos);
  EXPECT_NE(r.out.find("warm-up"), std::string::npos);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM cells"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE status = 'ok'"), 8);
  EXPECT_EQ(count("SELECT count(*) FROM samples"), 4 * 2 * 3);
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM aggregates WHERE status = 'ok' AND processes = 2 AND samples = 6"),
      4);
  EXPECT_EQ(
      count("SELECT count(*) FROM builds WHERE length(build_hash) = 64 AND compiler <> '' AND "
            "source_revision <> '' AND flags <> ''"),
      1);
  // What the scheduler and the hypervisor took is kept per repetition of every process.
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE "
                  "json_array_length(runner_json, '$.scheduling.run_delay_ns') = 3 AND "
                  "json_array_length(runner_json, '$.scheduling.steal_ns') = 3"),
            8);
  EXPECT_EQ(
      count("SELECT count(*) FROM processes, json_each(runner_json, '$.scheduling.run_delay_ns') "
            "WHERE typeof(value) = 'null' OR value < 0"),
      0);
  // Interleaving: round 0 covers all four cells before any cell's second process.
  EXPECT_EQ(count("SELECT max(order_index) FROM processes WHERE process_index = 0"), 3);
  EXPECT_EQ(count("SELECT min(order_index) FROM processes WHERE process_index = 1"), 4);
  const auto check = k3tune({"db", "check"});
  EXPECT_EQ(check.code, 0) << check.out;
  // --json output is machine-readable and complete.
  const auto j = k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "-P",
                         "2", "-R", "2", "--min-time", "0.001", "--no-remeasure"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["cells"][0]["status"], "ok");
  EXPECT_EQ(doc["cells"][0]["process_means_ns"].size(), 2u);
  EXPECT_GT(doc["overhead"]["kernel_s"].get<double>(), 0.0);
  // ... and follows its published form (the nightly reads it through that schema).
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kBench, doc),
            std::vector<std::string>{});
}

TEST_F(HarnessCli, AColdWeightCacheIsFilledOnceAndShownApartFromTheOverhead) {
  const std::string cache = "K3BENCH_CACHE_DIR=" + (dir_ / "weights").string();
  auto bench = [&] {
    const auto r = k3tune({"--json", "bench", "--op", "linear_decode", "--shape", "n=512,k=1024",
                           "--params", "workers=1", "-P", "2", "-R", "2", "--min-time", "0.005",
                           "--no-remeasure", "--target-ci", "0"},
                          {cache});
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("overhead");
  };
  const auto cold = bench();
  const auto warm = bench();
  // The first run generates, quantises, packs and writes the weights (once, in the first
  // process); the second finds them all. The overhead excludes the fill either way.
  EXPECT_GT(cold["cache_build_s"].get<double>(), 0.0);
  EXPECT_EQ(warm["cache_build_s"].get<double>(), 0.0);
  for (const auto* o : {&cold, &warm}) {
    const double parts = (*o)["kernel_s"].get<double>() + (*o)["warmup_s"].get<double>() +
                         (*o)["cache_build_s"].get<double>() + (*o)["overhead_s"].get<double>();
    EXPECT_NEAR(parts, (*o)["total_wall_s"].get<double>(), 1e-6);
  }
  EXPECT_LE(cold["cache_build_s"].get<double>(), cold["runner_setup_s"].get<double>());
}

TEST_F(HarnessCli, FirstProcessCalibratesAndTheOthersReuseItsCallCount) {
  const auto r =
      k3tune({"bench", "--op", "linear_decode", "--shape", "n=64,k=128", "--params",
              "workers=1,copies=1", "-P", "3", "-R", "2", "--min-time", "0.01", "--no-remeasure"});
  ASSERT_EQ(r.code, 0) << r.err;
  // One call count for the whole cell, chosen by the first process's warm-up.
  EXPECT_EQ(count("SELECT count(DISTINCT iterations) FROM samples"), 1);
  EXPECT_GT(count("SELECT min(iterations) FROM samples"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE json_extract(runner_json, "
                  "'$.calibration.source') = "
                  "'calibration pass'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE json_extract(runner_json, "
                  "'$.calibration.source') = 'given'"),
            2);
  // Where the wall time went is stored with the run.
  EXPECT_EQ(
      count("SELECT count(*) FROM runs WHERE warmup_s > 0 AND overhead_s > 0 AND kernel_s > 0"), 1);
}

TEST_F(HarnessCli, BaselineRunnerIsMeasuredInterleavedWithAVerdictPerCell) {
  // A second build: the same runner with bytes appended (a different SHA-256, the same code).
  const fs::path baseline = dir_ / "k3bench-baseline";
  k3test::copy_as_other_build(baseline);
  const auto r = k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256",
                         "--shape", "rows=4,dim=256", "-P", "3", "-R", "2", "--min-time", "0.002",
                         "--no-remeasure", "--baseline-runner", baseline.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["builds"].size(), 2u);
  EXPECT_EQ(doc["builds"][0]["label"], "baseline");
  EXPECT_EQ(count("SELECT count(*) FROM builds"), 2);
  EXPECT_EQ(count("SELECT count(DISTINCT build_hash) FROM cells"), 2);
  // A B A B: within each round, each cell's baseline process runs right before its candidate's.
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM processes p JOIN cells c USING (cell_key) WHERE p.order_index % 2 "
          "= 0"
          " AND c.build_hash = (SELECT build_hash FROM builds WHERE binary_path LIKE '%baseline')"),
      6);
  ASSERT_EQ(doc["comparisons"].size(), 2u);
  // One verdict: bench prints for each cell exactly what `k3tune report` decides for the same run.
  const auto rep = k3tune({"--json", "report", doc["run_uuid"].get<std::string>(), "--no-html",
                           "--no-keep", "-o", (dir_ / "report").string()});
  ASSERT_TRUE(rep.code == 0 || rep.code == 4)
      << rep.err;  // 4: a (false) regression on a noisy machine
  const auto verdict = nlohmann::json::parse(rep.out)["verdict"];
  ASSERT_EQ(verdict["cells"].size(), 2u) << verdict;
  for (const auto& c : doc["comparisons"]) {
    EXPECT_TRUE(c.contains("minimum_detectable_effect"));
    EXPECT_TRUE(c["verdict"] == "unchanged" || c["verdict"] == "regression" ||
                c["verdict"] == "improvement")
        << c;
    bool found = false;
    for (const auto& r : verdict["cells"]) {
      if (r["label"] != c["cell"]) continue;
      found = true;
      EXPECT_EQ(r["timing"]["outcome"], c["verdict"]);
      EXPECT_EQ(r["timing"]["text"], c["verdict_text"]);
      EXPECT_EQ(r["timing"]["threshold"], c["threshold"]);
    }
    EXPECT_TRUE(found) << c;
  }
  // The same binary as its own baseline is refused before anything is written.
  const auto same = k3tune(
      {"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "--baseline-runner", K3BENCH_PATH});
  EXPECT_EQ(same.code, 2);
  EXPECT_NE(same.err.find("same binary"), std::string::npos) << same.err;
}

TEST_F(HarnessCli, MdeAddsRoundsUntilTheEffectIsDetectableAndSaysWhatEndedThem) {
  const fs::path baseline = dir_ / "k3bench-baseline";
  k3test::copy_as_other_build(baseline);
  // A loose target (50%) is normally reached after the first rounds -- on a loaded machine it
  // may not be, before the budget or the ceiling: whichever rule ended the rounds, the
  // comparison says which (when the rounds end is the rule's, tested exactly on the synthetic
  // runner: HarnessRounds.TargetMdeStopsOnTheMagnitudesAfterACompleteRound). A budget of a
  // fraction of a second with an unreachable target always ends the rounds by the clock.
  const auto loose = k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256",
                             "-R", "2", "--min-time", "0.002", "--no-remeasure",
                             "--baseline-runner", baseline.string(), "--mde", "0.5"});
  ASSERT_EQ(loose.code, 0) << loose.err;
  const auto a = nlohmann::json::parse(loose.out)["comparisons"][0];
  const std::string ended = a["rounds_ended_by"];
  EXPECT_TRUE(ended == "MDE within target" || ended == "wall-time budget (MDE not reached)" ||
              ended == "max processes (MDE not reached)")
      << a;
  EXPECT_NE(a["verdict_text"].get<std::string>().find("Hodges-Lehmann/Wilcoxon"), std::string::npos)
      << a;
  EXPECT_NE(a["verdict_text"].get<std::string>().find("rounds ended by: " + ended),
            std::string::npos)
      << a;
  const auto tight =
      k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "-R", "2",
              "--min-time", "0.002", "--no-remeasure", "--baseline-runner", baseline.string(),
              "--mde", "0.0001", "--mde-budget", "0.5"});
  ASSERT_EQ(tight.code, 0) << tight.err;
  const auto b = nlohmann::json::parse(tight.out)["comparisons"][0];
  EXPECT_EQ(b["rounds_ended_by"], "wall-time budget (MDE not reached)") << b;
  // Bad input: no baseline, or not a fraction: one line, exit 2, nothing measured.
  const auto alone =
      k3tune({"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "--mde", "0.03"});
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.err.find("--mde: needs an A/B comparison"), std::string::npos) << alone.err;
  const auto bad = k3tune({"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "--mde", "3%",
                           "--baseline-runner", baseline.string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--mde 3%: expected a fraction"), std::string::npos) << bad.err;
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 2);
}

// selfcheck stats --within-processes on the real runner: both designs judged in the same trials,
// the within-process one from processes whose repetitions carry their sides, each spending
// exactly its processes (a disturbed one replaced at most twice per process asked for). What the
// trials detect on this machine depends on what else it runs (a two-worker kernel under a
// parallel ctest slows with the load more than the one-thread extra work): measuring it is the
// selfcheck's job, so here only the plumbing is checked -- every figure reported, in range, for
// the trials asked. The detection of an injected slowdown is checked on the synthetic runner,
// where its size is exact (below, and the in-process tests of measurement_test.cpp).
TEST_F(HarnessCli, SelfcheckMeasuresTheWithinProcessDesignNextToTheRounds) {
  const auto r = k3tune({"--json", "-q", "selfcheck", "stats", "--cell", "rmsnorm rows=1,dim=256",
                         "--trials", "2", "--slowdown", "0.5", "--within-processes", "6",
                         "--within-mde", "0", "--min-time", "0.002", "--no-store"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("within_process")) << r.out;
  const auto& w = j["within_process"];
  EXPECT_EQ(w["processes_per_verdict"], 6);
  EXPECT_EQ(w["mean_processes_per_verdict"], 6.0);  // --within-mde 0: a fixed count
  EXPECT_EQ(w["max_processes"], 0);
  EXPECT_EQ(w["repetitions_per_side"], 5);
  EXPECT_EQ(w["false_positive_rate"]["trials"], 2);
  for (const auto* design : {&w, &j}) {
    const auto& d = (*design)["detection_rate"]["50%"];
    EXPECT_EQ(d["trials"], 2) << d;
    EXPECT_GE(d["count"].get<int>(), 0) << d;
    EXPECT_LE(d["count"].get<int>(), 2) << d;
    if (d.contains("measured_mean")) {  // a design that detected nothing has no measured size
      EXPECT_TRUE(std::isfinite(d["measured_mean"].get<double>())) << d;
    }
  }
  EXPECT_GE(w["processes"].get<int>(), 2 * 2 * 6);
  EXPECT_LE(w["processes"].get<int>(), 2 * 2 * 6 * 3);
  EXPECT_GT(w["verdict_wall_s"].get<double>(), 0);
  EXPECT_TRUE(j["cells"][0].contains("within_process"));
  // Without the option the design is absent, not reported as zeros.
  const auto plain =
      k3tune({"--json", "-q", "selfcheck", "stats", "--cell", "rmsnorm rows=1,dim=256", "--trials",
              "1", "--slowdown", "0.5", "--min-time", "0.002", "--no-store"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("within_process"));
}

// selfcheck stats --build-pair on the real runner: its own build directory holds both plugins;
// the build pair is judged in the same trials, from processes whose repetitions alternate this
// build and the plugin's (k3bench --build-b). Plumbing only, as above: the planted size the
// plugin reports, the trials, the processes spent.
TEST_F(HarnessCli, SelfcheckMeasuresTheBuildPairWithinOneProcess) {
  const auto r = k3tune({"--json", "-q", "selfcheck", "stats", "--cell", "rmsnorm rows=1,dim=256",
                         "--trials", "2", "--slowdown", "0.5", "--within-processes", "6",
                         "--within-mde", "0", "--min-time", "0.002", "--no-store",
                         "--build-pair", "runner"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("build_pair")) << r.out;
  const auto& b = j["build_pair"];
  EXPECT_EQ(b["processes_per_verdict"], 6);
  EXPECT_EQ(b["false_positive_rate"]["trials"], 2);
  ASSERT_TRUE(b["detection_rate"].contains("3%")) << b;  // the planted build's own size
  EXPECT_EQ(b["detection_rate"]["3%"]["trials"], 2);
  EXPECT_GE(b["processes"].get<int>(), 1 + 2 * 2 * 6);
  EXPECT_LE(b["processes"].get<int>(), 1 + 2 * 2 * 6 * 3);
  EXPECT_TRUE(j["cells"][0].contains("build_pair"));
  // The build pair is a within-process design: without its budget, one line.
  const auto bad = k3tune({"-q", "selfcheck", "stats", "--cell", "rmsnorm rows=1,dim=256",
                           "--trials", "1", "--no-store", "--build-pair", "runner"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err,
            "k3tune: --build-pair: the builds are compared within one process: give "
            "--within-processes N\n");
}

// The same command on the synthetic runner (the noise the factor study measured on the shared
// VM; seeded), where the injected 50% is exact: both designs detect it in every trial, and the
// within design measures it within its noise.
TEST_F(HarnessCli, SelfcheckOnTheSyntheticRunnerDetectsAnExactInjectionInEveryTrial) {
  const auto r = k3tune({"--json", "-q", "selfcheck", "stats", "--synthetic", "--cell",
                         "rmsnorm rows=1,dim=256", "--trials", "50", "--slowdown", "0.5",
                         "--within-processes", "6", "--within-mde", "0", "--no-store"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["detection_rate"]["50%"]["count"], 50) << j["detection_rate"];
  const auto& w = j["within_process"]["detection_rate"]["50%"];
  EXPECT_EQ(w["count"], 50) << w;
  EXPECT_NEAR(w["measured_mean"].get<double>(), 0.5, 0.05) << w;
}

TEST_F(HarnessCli, TargetCiAddsRoundsOnlyUntilTheIntervalIsNarrow) {
  // The two-stage count: 3 processes first, then as many as their spread asks for (at most 8). A
  // loose target may be met by the first stage on a quiet machine; whatever the machine does, the
  // count and the stop reason must agree.
  const auto r =
      k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "-P", "3",
              "--max-processes", "8", "--target-ci", "0.5", "-R", "2", "--min-time", "0.002"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto cell = nlohmann::json::parse(r.out)["cells"][0];
  const int counted = cell["processes"].get<int>(),
            disturbed = cell["disturbed_processes"].get<int>();
  EXPECT_GE(counted + disturbed, 3);
  EXPECT_LE(counted + disturbed, 8 + 1);  // + one re-measure of a disturbed process
  if (cell["stop_reason"] == "CI within target") {
    EXPECT_LT(counted, 8);
  } else {
    EXPECT_EQ(cell["stop_reason"].get<std::string>().rfind("max processes", 0), 0u) << cell.dump();
  }
  // An unreachable target stops at the ceiling and says so.
  const auto tight =
      k3tune({"--json", "bench", "--op", "rmsnorm", "--shape", "rows=2,dim=256", "-P", "2",
              "--max-processes", "4", "--target-ci", "0.000001", "-R", "2", "--min-time", "0.002"});
  ASSERT_EQ(tight.code, 0) << tight.err;
  const auto t = nlohmann::json::parse(tight.out)["cells"][0];
  EXPECT_GE(t["processes"].get<int>() + t["disturbed_processes"].get<int>(), 4);
  EXPECT_EQ(t["stop_reason"].get<std::string>().rfind("max processes", 0), 0u) << t.dump();
}

TEST_F(HarnessCli, KilledSweepKeepsSamplesAndResumeMeasuresOnlyWhatIsMissing) {
  auto args = tiny_grid();
  args.insert(args.begin(), "bench");
  args.insert(args.end(), {"-P", "3", "-R", "2"});
  // Killed while running its 7th runner process (cells 0..3 have 1 process, cells 0,1 have 2).
  const auto killed = k3tune(args, {"K3TUNE_TEST_KILL_AFTER=6"});
  EXPECT_EQ(killed.code, 128 + 9) << killed.err;
  EXPECT_EQ(count("SELECT count(*) FROM processes"), 6);
  EXPECT_EQ(count("SELECT count(*) FROM samples"), 12);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'running'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates"), 0);

  args.push_back("--resume");
  const auto resumed = k3tune(args);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(count("SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
  // Only the missing 6 processes ran in the second run; nothing was measured twice.
  EXPECT_EQ(count("SELECT count(*) FROM processes p JOIN runs r USING (run_uuid) WHERE r.status = "
                  "'finished'"),
            6);
  EXPECT_EQ(count("SELECT count(*) FROM processes"), 12);
  EXPECT_EQ(count("SELECT count(*) FROM samples"), 24);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates WHERE status = 'ok' AND processes = 3"), 4);
  EXPECT_EQ(k3tune({"db", "check"}).code, 0);

  // A second resume has nothing left to do.
  const auto again = k3tune(args);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(count("SELECT count(*) FROM processes"), 12);
  EXPECT_NE(again.out.find("already measured"), std::string::npos);
}

TEST_F(HarnessCli, CrashedAndHungRunnersAreFailedCellsAndTheSweepContinues) {
  // k = 100 is not a multiple of 64: the runner exits 3 (unsupported) for that cell only.
  const auto r = k3tune({"bench", "--op", "linear_decode", "--shape", "n=64,k=100", "--shape",
                         "n=64,k=128", "--params", "workers=1,copies=1", "-P", "2", "-R", "2",
                         "--min-time", "0.001", "--no-remeasure"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM aggregates WHERE status = 'failed' AND reason LIKE 'exit code 3%'"),
      1);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates WHERE status = 'ok'"), 1);
  // A timeout far below the runner's run time: killed, recorded, next cell still measured.
  const auto t =
      k3tune({"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "--shape", "rows=2,dim=256",
              "-P", "2", "-R", "3", "--min-time", "0.5", "--timeout", "0.3", "--no-remeasure"});
  EXPECT_EQ(t.code, 3);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE reason LIKE 'timeout%'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates WHERE reason LIKE 'timeout%'"), 2);
}

TEST_F(HarnessCli, BadInputIsOneLineAndWritesNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  std::ofstream(dir_ / "bad.toml")
      << "[[case]]\nop = \"linear_decode\"\nshapes = [{ n = 64, k = 128 }]\n"
         "grid = { workers = 3 }\n";
  std::ofstream(dir_ / "broken.toml") << "[[case]]\nop = \"linear_decode\nshapes = []\n";
  const std::string bad = (dir_ / "bad.toml").string(), broken = (dir_ / "broken.toml").string();
  const std::vector<Case> cases = {
      {{"bench", "--target", "nowhere", "--op", "rmsnorm", "--shape", "rows=1,dim=64"},
       "unknown target 'nowhere'"},
      {{"bench", "--op", "no_such_op", "--shape", "n=1"}, "unknown op 'no_such_op'"},
      {{"bench", "--model", "gpt-17"}, "unknown model 'gpt-17'"},
      {{"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=64,bogus=3"}, "unknown key 'bogus'"},
      {{"bench", "--config", bad}, bad + ":4: case.grid.workers: expected a non-empty array"},
      {{"bench", "--config", broken}, broken + ":2:"},
      {{"db", "check"}, "no such k3tune database"},
  };
  for (const auto& c : cases) {
    const auto r = k3tune(c.args);
    EXPECT_EQ(r.code, 2) << c.expect;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << "got: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(db())) << c.expect;
  }
  // A file that is not a k3tune database is refused and left byte-for-byte alone.
  std::ofstream(db()) << "precious notes\n";
  const auto r =
      k3tune({"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=64", "-P", "1", "-R", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a k3tune database"), std::string::npos) << r.err;
  std::ifstream f(db());
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious notes\n");
  // --db naming a directory: one usage line, not an internal error, and nothing created in it.
  const fs::path folder = dir_ / "a-folder";
  fs::create_directories(folder);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"db", "check"},
        std::vector<std::string>{"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=64", "-P", "1",
                                 "-R", "1"}}) {
    std::vector<std::string> argv = {K3TUNE_PATH,     "--root",    K3TUNE_ROOT, "--db",
                                     folder.string(), "--targets", targets()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto d = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(120));
    EXPECT_EQ(d.exit_code, 2) << d.err;
    EXPECT_EQ(d.err, "k3tune: " + folder.string() + ": a directory, not a k3tune database file\n");
    EXPECT_TRUE(fs::is_empty(folder));
  }
}

TEST_F(HarnessCli, UnknownBuildVariantIsRejectedAndWritesNothing) {
  const auto r = k3tune({"build", "--variant", "avx512"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("avx512"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(HarnessCli, ModelShapeListsExpandAndValidate) {
  // Every model file's derived cells run through bench (-P 1 -R 1 on the cheapest op keeps it
  // quick; model_config_test validates every derived cell against the catalog).
  for (const char* model : {"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3.5-0.8b", "qwen3.5-2b"}) {
    const auto r = k3tune({"--json", "bench", "--model", model, "--op", "rmsnorm", "-P", "1", "-R",
                           "1", "--min-time", "0.001"});
    ASSERT_EQ(r.code, 0) << model << ": " << r.err;
    EXPECT_GE(nlohmann::json::parse(r.out)["cells"].size(), 2u) << model;
  }
}

// qemu-user target (label "slow": builds the riscv64 runner through `k3tune build --variant rvv`
// when build/k3tune-rvv does not have one yet).
TEST_F(HarnessCli, QemuSweepEndToEnd) {
  if (!fs::exists(rvv_runner())) {
    const auto b = k3tune({"build", "--variant", "rvv", "-j", "1"});
    ASSERT_EQ(b.code, 0) << b.err.substr(b.err.size() > 2000 ? b.err.size() - 2000 : 0);
  }
  const auto r = k3tune({"bench", "--target", "qemu", "--op", "linear_decode", "--shape",
                         "n=64,k=128", "--grid", "tile_n=32,64", "--params", "workers=1,copies=1",
                         "-P", "2", "-R", "2", "--min-time", "0.001", "--warmup", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE target = 'qemu' AND status = 'finished'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE target = 'qemu'"), 2);
  // Exactly 2 cells x 2 processes x 2 repetitions: on a qemu target a process flagged
  // disturbed (its thread CPU time lags its wall time under the emulator) is not measured again.
  EXPECT_EQ(count("SELECT count(*) FROM samples"), 2 * 2 * 2);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE runner_json LIKE '%\"target_arch\": "
                  "\"riscv64\"%' OR "
                  "runner_json LIKE '%\"target_arch\":\"riscv64\"%'"),
            4);
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM builds WHERE length(build_hash) = 64 AND compiler LIKE '%clang%'"),
      1);
}

TEST_F(HarnessCli, TcmStaleLockIsReportedByProbeAndReleasedOnlyByTheCommand) {
  // A killed run's lock, through the vendor-library test double: a child takes block 2 and dies.
  const std::string state = (dir_ / "tcm.state").string();
  ASSERT_GT(k3test::leave_stale_tcm_lock(K3_FAKE_SPINE_TCM, state, 2), 0);
  const std::vector<std::string> env = {"K3_TCM_LIBRARY=" + std::string(K3_FAKE_SPINE_TCM),
                                        "FAKE_SPINE_TCM_STATE=" + state};

  const auto probe = k3tune({"--json", "probe", "--target", "local", "--mib", "8"}, env);
  ASSERT_EQ(probe.code, 0) << probe.err;
  const auto p = nlohmann::json::parse(probe.out);
  EXPECT_EQ(p["tcm"]["backend"], "real");
  EXPECT_EQ(p["tcm"]["stale_blocks"], nlohmann::json::array({2}));
  EXPECT_NE(p["tcm_backend"].get<std::string>().find("STALE"), std::string::npos);
  // TCM bandwidth figures from the tcm_bw op (the stale block 2 is not one the probe's workers
  // use).
  for (const char* mode : {"copy_in", "read", "dram_read"}) {
    EXPECT_TRUE(p["tcm_bw_gbps"][mode].is_number())
        << mode << ": " << p["tcm_bw_gbps"][mode].dump();
  }
  // probe and status report; neither releases.
  const auto st = k3tune({"--json", "tcm", "status", "--target", "local"}, env);
  ASSERT_EQ(st.code, 0) << st.err;
  EXPECT_EQ(nlohmann::json::parse(st.out)["stale_blocks"], nlohmann::json::array({2}));
  const auto rel = k3tune({"tcm", "release", "--target", "local"}, env);
  ASSERT_EQ(rel.code, 0) << rel.err;
  EXPECT_NE(rel.out.find("block 2: released"), std::string::npos) << rel.out;
  const auto after = k3tune({"--json", "tcm", "status", "--target", "local"}, env);
  EXPECT_TRUE(nlohmann::json::parse(after.out)["stale_blocks"].empty()) << after.out;
}

}  // namespace
