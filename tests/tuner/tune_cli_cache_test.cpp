// `k3tune tune` end to end, what makes measurements reusable: the measurement cache of exact
// counts, replaying strategies on stored counts and processes, held-out rules for shapes without
// an entry, seed tables from another board, and counts that do not depend on the weight cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "tune_cli_fixture.h"

// Exact counts are taken once per runner build, op, shape, parameters and emulated CPU: a session
// over a space with one more value counts only the new configuration, another strategy counts
// nothing, and a replay runs no process and writes nothing -- a configuration never counted is
// reported as such, not measured.
TEST_F(TuneCli, TheMeasurementCacheCountsEachConfigurationOnceAndReplaysStrategiesOnIt) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(
      fs::exists(std::string(K3TUNE_ROOT) + "/build/third_party/qemu-plugin/libinsn_count.so"))
      << "the counting plugin is missing: bash scripts/build-qemu-plugin.sh";
  auto space = [&](const std::string& values) {
    write_space(
        "[space]\nop = \"linear_decode\"\nmeaningful_on = [\"qemu\"]\n[knobs.tile_n]\nvalues = [" +
        values + "]\ndefault = 64\n");
  };
  auto tune = [&](const std::string& strategy, bool replay) {
    std::vector<std::string> args = {
        "--json",      "tune",          "--target",
        "qemu",        "--spaces",      spaces(),
        "--op",        "linear_decode", "--shape",
        "n=128,k=256", "--params",      "workers=1",
        "--objective", "instructions",  "--strategy",
        strategy,      "--out",         (dir_ / (strategy + ".json")).string()};
    if (replay) args.push_back("--replay");
    const auto r = k3tune(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out)["jobs"].at(0);
  };
  space("32, 64");
  const auto first = tune("exhaustive", false);
  EXPECT_EQ(first["measurements_new"], 2);
  EXPECT_EQ(first["cache_hits"], 0);
  EXPECT_EQ(count("SELECT count(*) FROM exact_measurements"), 2);

  // One more value: a new session (the space is part of its identity) that counts one
  // configuration.
  space("32, 64, 128");
  const auto second = tune("exhaustive", false);
  EXPECT_EQ(second["result"]["measurements"], 3);
  EXPECT_EQ(second["measurements_new"], 3);
  EXPECT_EQ(second["cache_hits"], 2);
  EXPECT_EQ(count("SELECT count(*) FROM exact_measurements"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions"), 2);
  // The cached figures are the counted ones, exactly (a count is deterministic).
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM tuning_measurements a JOIN tuning_measurements b USING (point_key)"
          " WHERE a.session_id < b.session_id AND a.value != b.value"),
      0);

  // Replays: the live session's choice again, and another strategy, with nothing run or written.
  const auto sessions = count("SELECT count(*) FROM tuning_sessions");
  const auto replayed = tune("exhaustive", true);
  EXPECT_EQ(replayed["result"]["chosen"], second["result"]["chosen"]);
  EXPECT_EQ(replayed["result"]["evidence"]["mean_ns"], second["result"]["evidence"]["mean_ns"]);
  EXPECT_EQ(replayed["cache_hits"], 3);
  EXPECT_EQ(replayed["unavailable"], 0);
  const auto racing = tune("racing", true);
  EXPECT_EQ(racing["result"]["chosen"], second["result"]["chosen"]);
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions"), sessions);
  EXPECT_EQ(count("SELECT count(*) FROM exact_measurements"), 3);
  EXPECT_FALSE(fs::exists(dir_ / "racing.json")) << "a replay wrote a table";

  // A value never counted: the replay says so and leaves it out.
  space("32, 64, 128, 96");
  const auto partial = tune("exhaustive", true);
  EXPECT_EQ(partial["unavailable"], 1);
  EXPECT_EQ(partial["result"]["rejected"], 1);
  EXPECT_EQ(partial["result"]["chosen"], second["result"]["chosen"]);
  EXPECT_EQ(count("SELECT count(*) FROM exact_measurements"), 3);
}

// The held-out evaluation at CI size, on exact counts (deterministic): five small decode shapes
// under qemu, rows per packed tile searched; leave-one-shape-out, the rule fitted on the others is
// never worse than the nearest class on average. The table the same shapes give (every count now
// from the cache) carries the rule, and `table explain` says a shape between them gets its leaf.
TEST_F(TuneCli, HeldOutRuleIsNeverWorseThanTheNearestClassOnAverageOnExactCounts) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(
      fs::exists(std::string(K3TUNE_ROOT) + "/build/third_party/qemu-plugin/libinsn_count.so"))
      << "the counting plugin is missing: bash scripts/build-qemu-plugin.sh";
  write_space(
      "[space]\nop = \"linear_decode\"\nmeaningful_on = [\"qemu\"]\n[knobs.weight_rows]\n"
      "values = [0, 64, 128]\ndefault = 0\n[constraints]\nrules = [\"weight_rows <= n\"]\n");
  const std::string table = (dir_ / "t.json").string();
  auto tune = [&](bool heldout) {
    std::vector<std::string> args = {"--json",     "tune",       "--target",    "qemu",
                                     "--spaces",   spaces(),     "--op",        "linear_decode",
                                     "--params",   "workers=1",  "--objective", "instructions",
                                     "--strategy", "exhaustive", "--out",       table};
    for (const char* s :
         {"k=256,n=128", "k=512,n=128", "k=256,n=384", "k=512,n=384", "k=1024,n=256"})
      args.insert(args.end(), {"--shape", s});
    if (heldout) args.push_back("--heldout");
    const auto r = k3tune(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto h = tune(true);
  ASSERT_EQ(h["heldout"].size(), 1u) << h.dump();
  const auto& g = h["heldout"][0];
  ASSERT_EQ(g["shapes"].size(), 5u);
  std::cout << g.dump() << "\n";
  EXPECT_LE(g["mean"]["rule"].get<double>(), g["mean"]["nearest"].get<double>() + 1e-12)
      << g.dump();
  // The landscape is not flat: the defaults lose somewhere, or the test could not fail.
  EXPECT_GT(g["worst"]["defaults"].get<double>(), 0.0) << g.dump();
  EXPECT_FALSE(fs::exists(table)) << "--heldout wrote a table";

  const auto t = tune(false);
  int counted = 0;
  for (const auto& j : t["jobs"])
    counted += j["measurements_new"].get<int>() - j["cache_hits"].get<int>();
  EXPECT_EQ(counted, 0) << "the second run counted again";
  const auto written = read_json(table);
  ASSERT_EQ(written["rules"].size(), 1u) << written.dump();
  EXPECT_EQ(written["schema"], "k3tune.tuning-table/2");
  EXPECT_EQ(k3tune({"table", "validate", table}).code, 0);
  const auto x = k3tune(
      {"--json", "table", "explain", table, "--op", "linear_decode", "--shape", "k=384,n=320"});
  ASSERT_EQ(x.code, 0) << x.err;
  const auto answer = nlohmann::json::parse(x.out).at(0);
  EXPECT_EQ(answer["how"], "rule") << answer;
  EXPECT_EQ(answer["entry"].get<std::string>().find("linear_decode/rvv/rule/"), 0u) << answer;
  const auto own = nlohmann::json::parse(k3tune({"--json", "table", "explain", table, "--op",
                                                 "linear_decode", "--shape", "k=512,n=384"})
                                             .out);
  EXPECT_EQ(own.at(0)["how"], "entry");

  // --suggest on the stored counts: the shapes to measure next, none of them measured already.
  auto args = std::vector<std::string>{"--json",     "tune",       "--target",    "qemu",
                                       "--spaces",   spaces(),     "--op",        "linear_decode",
                                       "--params",   "workers=1",  "--objective", "instructions",
                                       "--strategy", "exhaustive", "--replay",    "--suggest",
                                       "3"};
  for (const char* s : {"k=256,n=128", "k=512,n=128", "k=256,n=384", "k=512,n=384", "k=1024,n=256"})
    args.insert(args.end(), {"--shape", s});
  const auto sg = k3tune(args);
  ASSERT_EQ(sg.code, 0) << sg.err;
  const auto suggested = nlohmann::json::parse(sg.out)["suggestions"].at(0)["shapes"];
  ASSERT_EQ(suggested.size(), 3u) << sg.out;
  for (const auto& s : suggested) {
    EXPECT_EQ(s["shape"].get<std::string>().find("k=256,n=128"), std::string::npos);
    EXPECT_GT(s["distance_log2"].get<double>(), 0) << s;
  }
  EXPECT_GE(suggested[0]["predicted_loss"].get<double>(),
            suggested[2]["predicted_loss"].get<double>());
  EXPECT_EQ(
      k3tune({"tune", "--op", "linear_decode", "--shape", "k=256,n=128", "--suggest", "-1"}).code,
      2);
}

// A time replay serves the processes earlier sessions of this build and target stored, in order:
// exhaustive search replayed chooses what the live one chose, racing runs on the same evidence,
// and no process is started.
TEST_F(TuneCli, ATimeReplayRunsStrategiesOnStoredProcessesOnly) {
  write_space(kSmallSpace);
  auto tune = [&](const std::string& strategy, bool replay) {
    std::vector<std::string> a = {"--json",       "tune",
                                  "--spaces",     spaces(),
                                  "--op",         "linear_decode",
                                  "--shape",      "k=128,n=64",
                                  "--params",     "copies=1",
                                  "--processes",  "3",
                                  "-R",           "2",
                                  "--min-time",   "0.002",
                                  "--max-rounds", "3",
                                  "--strategy",   strategy,
                                  "--out",        (dir_ / (strategy + ".json")).string()};
    if (replay) a.push_back("--replay");
    return a;
  };
  const auto live = k3tune(tune("exhaustive", false));
  ASSERT_EQ(live.code, 0) << live.err;
  const auto live_job = nlohmann::json::parse(live.out)["jobs"].at(0);
  const auto processes = count("SELECT count(*) FROM processes");
  const auto again = k3tune(tune("exhaustive", true));
  ASSERT_EQ(again.code, 0) << again.err;
  const auto job = nlohmann::json::parse(again.out)["jobs"].at(0);
  EXPECT_EQ(job["result"]["chosen"], live_job["result"]["chosen"]);
  EXPECT_DOUBLE_EQ(job["result"]["evidence"]["mean_ns"].get<double>(),
                   live_job["result"]["evidence"]["mean_ns"].get<double>());
  const auto raced = k3tune(tune("racing", true));
  ASSERT_EQ(raced.code, 0) << raced.err;
  const auto race = nlohmann::json::parse(raced.out)["jobs"].at(0);
  EXPECT_GT(race["result"]["measurements"].get<int>(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM processes"), processes) << "a replay ran processes";
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions"), 1);
  EXPECT_FALSE(fs::exists(dir_ / "racing.json")) << "a replay wrote a table";
  // Bad use is one line: replay needs a database to read.
  fs::remove(db());
  const auto none = k3tune(tune("racing", true));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no database to replay from"), std::string::npos) << none.err;
}

// A table carried to another board: with the seed's own fingerprint every knob is held (the seed's
// point is verified against the defaults, nothing else measured); on a board with other CPUs the
// worker count, whose range is [1, cpus], is searched while the tile width stays the seed's.
TEST_F(TuneCli, ASeedTableHoldsWhatTheBoardsDifferingFactsDoNotTouch) {
  write_space(kSmallSpace);
  auto tune = [&](const std::string& out, const std::string& seed) {
    std::vector<std::string> a = {
        "--json",        "tune",       "--spaces",   spaces(),   "--op",
        "linear_decode", "--shape",    "k=128,n=64", "--params", "copies=1",
        "--processes",   "2",          "-R",         "2",        "--min-time",
        "0.002",         "--strategy", "exhaustive", "--out",    (dir_ / out).string()};
    if (!seed.empty()) a.insert(a.end(), {"--seed-table", seed});
    const auto r = k3tune(a);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out)["jobs"].at(0);
  };
  const auto base = tune("seed.json", "");
  ASSERT_EQ(base["result"]["space"]["valid"], 4);
  auto seed = read_json(dir_ / "seed.json");
  const auto chosen = seed["entries"][0]["params"];

  const auto same = tune("same.json", (dir_ / "seed.json").string());
  EXPECT_EQ(same["seed"]["held"]["tile_n"], chosen["tile_n"]) << same.dump();
  EXPECT_EQ(same["seed"]["held"]["workers"], chosen["workers"]) << same.dump();
  EXPECT_TRUE(same["seed"]["searched"].empty());
  // Measured: the seed's point and the defaults (one point when the seed chose the defaults).
  EXPECT_LE(count("SELECT count(DISTINCT point_key) FROM tuning_measurements m JOIN "
                  "tuning_sessions s USING "
                  "(session_id) WHERE s.session_id = '" +
                  same["session"].get<std::string>() + "'"),
            2);
  const auto t = read_json(dir_ / "same.json");
  EXPECT_EQ(t["source"]["seed"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(t["source"]["seed"]["differing_facts"].empty());
  EXPECT_EQ(k3tune({"table", "validate", (dir_ / "same.json").string()}).code, 0);

  // The seed as if made on a board with 64 CPUs: workers is searched, tile_n held.
  seed["board"]["fingerprint"]["cpus"] = 64;
  std::ofstream(dir_ / "other.json") << seed.dump(2);
  const auto other = tune("carried.json", (dir_ / "other.json").string());
  EXPECT_EQ(other["seed"]["held"], nlohmann::json({{"tile_n", chosen["tile_n"]}})) << other.dump();
  EXPECT_EQ(other["seed"]["searched"], nlohmann::json({"workers"}));
  // The held tile width, or the defaults: they are a candidate too (the evidence's reference), and
  // on a noisy machine they may win.
  EXPECT_TRUE(other["result"]["chosen"]["tile_n"] == chosen["tile_n"] ||
              other["result"]["chosen"] == other["result"]["defaults"])
      << other["result"].dump();
  EXPECT_EQ(read_json(dir_ / "carried.json")["source"]["seed"]["differing_facts"],
            nlohmann::json({"cpus"}));

  const auto bad = k3tune({"tune", "--spaces", spaces(), "--op", "linear_decode", "--shape",
                           "k=128,n=64", "--seed-table", (dir_ / "missing.json").string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// The instruction objective counts a process's marked calls (runners without marks: a 1-call
// process subtracted from a 9-call one). With the runner's weight cache the first process of a
// cold cache generates, packs and writes the weights while later ones only read them, which once
// made the difference negative. A process that filled the cache is run again, so the counts with
// a cold cache are those without any cache (every process generating), and the cache ends up
// filled (later counts skip the 20 s of generating the weights of a large shape under qemu).
TEST_F(TuneCli, InstructionCountsDoNotDependOnTheWeightCache) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(
      fs::exists(std::string(K3TUNE_ROOT) + "/build/third_party/qemu-plugin/libinsn_count.so"))
      << "the counting plugin is missing: bash scripts/build-qemu-plugin.sh";
  write_space(space_table("linear_decode", "test: tile width, one worker", "qemu") +
              R"([knobs.tile_n]
values = [32, 64]
default = 64
)");
  // One database per run: the measurement cache would otherwise answer the second run.
  auto counts_with = [&](const std::string& cache_dir, const std::string& name) {
    ::setenv("K3BENCH_CACHE_DIR", cache_dir.c_str(), 1);
    const auto r = k3targets::run_process({K3TUNE_PATH,
                                           "--root",
                                           K3TUNE_ROOT,
                                           "--db",
                                           (dir_ / (name + ".db")).string(),
                                           "--targets",
                                           (dir_ / "targets.toml").string(),
                                           "-q",
                                           "--json",
                                           "tune",
                                           "--target",
                                           "qemu",
                                           "--spaces",
                                           spaces(),
                                           "--op",
                                           "linear_decode",
                                           "--shape",
                                           "n=128,k=256",
                                           "--params",
                                           "workers=1",
                                           "--objective",
                                           "instructions",
                                           "--strategy",
                                           "exhaustive"},
                                          k3targets::ProcessOptions::with_timeout(1800));
    ::unsetenv("K3BENCH_CACHE_DIR");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, double> by_config;
    auto db =
        k3store::open_database((dir_ / (name + ".db")).string(), k3store::OpenMode::kReadOnly);
    auto rows =
        db->prepare("SELECT config_json, mean_ns FROM tuning_points WHERE status = 'measured'");
    while (rows.step()) by_config[rows.text(0)] = rows.real(1);
    return by_config;
  };
  const fs::path cache = dir_ / "weight-cache";  // empty: the first process fills it
  const auto cold = counts_with(cache.string(), "cold");
  const auto none = counts_with("off", "none");
  EXPECT_TRUE(fs::exists(cache) && !fs::is_empty(cache)) << "the weight cache was not filled";
  ASSERT_EQ(cold.size(), 2u);
  ASSERT_EQ(none.size(), 2u);
  // Equal to the instruction: the runner marks its calls and the objective counts them apart from
  // the rest of the process, whose set-up the cache mode changes (a cold-cache process counted
  // would be off by millions: 1,300 instructions per weight filling the cache).
  for (const auto& [config, per_call] : cold)
    EXPECT_EQ(per_call, none.at(config)) << config << ": cold cache against none";
  // 128 x 256 weights at ~0.1-0.3 instructions each, plus the activation quantisation: thousands
  // of instructions per call, never the negative difference of a cold-cache pair.
  for (const auto& [config, per_call] : cold) EXPECT_GT(per_call, 1000) << config;
}
