// `k3tune tune` end to end: the real k3tune binary tunes with real k3bench processes (on the host,
// and under qemu-user with the instruction-count plugin), writes tables that are then validated
// by `k3tune table validate` against the published JSON Schema, and resumes without re-measuring.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"

namespace fs = std::filesystem;

namespace {

struct Cmd {
  int code;
  std::string out, err;
};

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("k3tune_tune_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "spaces");
    std::ofstream(dir_ / "targets.toml")
        << "[targets.local]\nkind = \"local\"\nrunner = \"" K3BENCH_PATH "\"\ntimeout_s = 120\n"
        << "[targets.qemu]\nkind = \"qemu\"\nvlen = 256\nrunner = \"" << rvv_runner()
        << "\"\ntimeout_s = 600\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string rvv_runner() { return K3TUNE_ROOT "/build/rvv/harness/runner/k3bench"; }
  std::string db() const { return (dir_ / "results.db").string(); }
  std::string spaces() const { return (dir_ / "spaces").string(); }
  void write_space(const std::string& text, const std::string& op = "linear_decode") const {
    std::ofstream(dir_ / "spaces" / (op + ".toml")) << text;
  }

  Cmd k3tune(std::vector<std::string> args) const {
    std::vector<std::string> argv = {K3TUNE_PATH,
                                     "--root",
                                     K3TUNE_ROOT,
                                     "--db",
                                     db(),
                                     "--targets",
                                     (dir_ / "targets.toml").string(),
                                     "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(1800));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::int64_t count(const std::string& sql) const {
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  static nlohmann::json read_json(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  }
  fs::path dir_;
};

// Two tile widths x two worker counts on the host.
constexpr const char* kSmallSpace = R"(
[space]
op = "linear_decode"
description = "test: tile width and workers"
meaningful_on = ["local"]
[knobs.workers]
range = [1, "cpus"]
default = "cpus"
[knobs.tile_n]
values = [32, 64]
default = 64
[constraints]
rules = ["tile_n <= n"]
)";

// A space of about 10^12 points: --explain counts it without enumerating (and returns at once),
// and tuning it refuses with one line instead of expanding it.
TEST_F(TuneCli, ExplainCountsAHugeSpaceWithoutEnumeratingAndTuningRefusesIt) {
  write_space(R"(
[space]
op = "linear_decode"
description = "test: far too many points"
meaningful_on = ["local"]
[knobs.tile_n]
range = [1, 1000000]
default = 64
[knobs.prefetch]
range = [0, 999999]
default = 0
)");
  const std::vector<std::string> args = {"tune",          "--spaces", spaces(),    "--op",
                                         "linear_decode", "--shape",  "k=128,n=64"};
  auto explain = args;
  explain.insert(explain.begin(), "--json");
  explain.push_back("--explain");
  const auto e = k3tune(explain);
  ASSERT_EQ(e.code, 0) << e.err;
  const auto space = nlohmann::json::parse(e.out)["jobs"].at(0)["result"]["space"];
  EXPECT_EQ(space["product"], std::uint64_t{1000000} * 1000000);
  EXPECT_EQ(space["enumerated"], false);
  EXPECT_FALSE(space.contains("valid"));
  auto text = args;
  text.push_back("--explain");
  const auto t = k3tune(text);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("1000000000000 combinations, more than the 1000000 a search enumerates"),
            std::string::npos)
      << t.out;
  const auto tune = k3tune(args);
  EXPECT_EQ(tune.code, 2) << tune.out << tune.err;
  EXPECT_NE(
      tune.err.find(
          "linear_decode.toml: 1000000000000 combinations of knob values, more than the 1000000"),
      std::string::npos)
      << tune.err;
  EXPECT_EQ(std::count(tune.err.begin(), tune.err.end(), '\n'), 1) << tune.err;
}

TEST_F(TuneCli, LocalTuneWritesATableThatValidatesAndAResumeMeasuresNothing) {
  write_space(kSmallSpace);
  const std::string table = (dir_ / "local.json").string();
  const std::vector<std::string> tune = {
      "--json",      "tune",       "--spaces", spaces(),   "--op",       "linear_decode",
      "--shape",     "k=128,n=64", "--params", "copies=1", "--strategy", "exhaustive",
      "--processes", "2",          "-R",       "2",        "--min-time", "0.002",
      "--out",       table};
  const auto first = k3tune(tune);
  ASSERT_EQ(first.code, 0) << first.err;
  const auto out = nlohmann::json::parse(first.out);
  const auto& job = out["jobs"].at(0);
  EXPECT_EQ(job["result"]["space"]["valid"], 4);
  // 4 configurations x 2 processes; a process the disturbance check flagged (a loaded machine) is
  // kept and measured once more.
  const auto measured = count("SELECT count(*) FROM tuning_measurements");
  EXPECT_GE(measured, 4 * 2);
  EXPECT_LE(measured, 4 * 2 * 2);
  EXPECT_EQ(job["measurements_new"], measured);
  EXPECT_TRUE(out["table_problems"].empty());
  // Every measurement is a real process in the database, and the session's points are stored.
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE status = 'ok'"), measured);
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions WHERE status = 'finished'"), 1);

  const auto t = read_json(table);
  ASSERT_EQ(t["entries"].size(), 1u);
  const auto& e = t["entries"][0];
  EXPECT_EQ(e["op"], "linear_decode");
  EXPECT_EQ(e["class"]["k"], 128);
  EXPECT_EQ(e["class"]["n"], 64);
  EXPECT_NE(e["class"]["path"], "auto");  // the layer the runner resolved, never "auto"
  EXPECT_EQ(e["params"]["tile_n"], job["result"]["chosen"]["tile_n"]);
  EXPECT_GE(e["evidence"]["processes"], 2);
  EXPECT_GT(e["evidence"]["mean"].get<double>(), 0);
  const auto validate = k3tune({"table", "validate", table});
  EXPECT_EQ(validate.code, 0) << validate.err;
  // table explain: the kernel library's own lookup, and the rule that gave it. The tuned shape gets
  // its entry; n=48 has no class of its own and gets the nearest (|log2(64/48)| = 0.415); another
  // op gets the kernel defaults; a bad shape is one line.
  const std::string layer = e["class"]["path"];
  auto explain = [&](const std::string& op, const std::string& shape) {
    const auto r = k3tune({"--json", "table", "explain", table, "--op", op, "--shape", shape});
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out).at(0);
  };
  const auto own = explain("linear_decode", "k=128,n=64");
  EXPECT_EQ(own["how"], "entry");
  EXPECT_EQ(own["path"], layer);
  EXPECT_EQ(own["entry"], e["id"]);
  EXPECT_EQ(own["params"], e["params"]);
  const auto near = explain("linear_decode", "k=128,n=48");
  EXPECT_EQ(near["how"], "nearest");
  EXPECT_EQ(near["entry"], e["id"]);
  EXPECT_NEAR(near["distance_log2"].get<double>(), std::log2(64.0 / 48.0), 1e-9);
  EXPECT_EQ(explain("linear_prefill", "m=4,k=128,n=64")["how"], "defaults");
  const auto bad_shape =
      k3tune({"table", "explain", table, "--op", "linear_decode", "--shape", "k=128,q=1"});
  EXPECT_EQ(bad_shape.code, 2);
  EXPECT_NE(bad_shape.err.find("'q' is not a shape key"), std::string::npos) << bad_shape.err;

  // The same command again: the session resumes and nothing is measured.
  const auto again = k3tune(tune);
  ASSERT_EQ(again.code, 0) << again.err;
  const auto job2 = nlohmann::json::parse(again.out)["jobs"].at(0);
  EXPECT_TRUE(job2["resumed"].get<bool>());
  EXPECT_EQ(job2["measurements_new"], 0);
  EXPECT_EQ(job2["result"]["chosen"], job["result"]["chosen"]);
  EXPECT_EQ(count("SELECT count(*) FROM processes"), measured);

  // table verify: the table's choice against the defaults. By default both sides alternate
  // repetitions inside each of two processes: one cell (the defaults, with the table's parameters
  // as side B), each process reporting both parameter sets and sides A B B A.
  const auto before = count("SELECT count(*) FROM processes");
  const auto verify = k3tune({"--json", "table", "verify", "--table", table, "--processes", "2",
                              "-R", "2", "--min-time", "0.002"});
  ASSERT_TRUE(verify.code == 0 || verify.code == 1) << verify.err;
  const auto v = nlohmann::json::parse(verify.out);
  ASSERT_EQ(v["entries"].size(), 1u) << verify.err;
  EXPECT_EQ(v["design"], "within");
  auto expect_verdict = [&](const nlohmann::json& entry, int code) {
    const std::string verdict = entry["verdict"];
    EXPECT_TRUE(verdict == "faster" || verdict == "no difference" || verdict == "slower")
        << verdict;
    EXPECT_EQ(code, verdict == "slower" ? 1 : 0);
    EXPECT_EQ(entry["evidence"]["processes"], 2);
    EXPECT_EQ(entry["evidence"]["paired_rounds"], 2);
    EXPECT_TRUE(entry["evidence"]["paired"].get<bool>());
    const auto& ev = entry["evidence"];  // the table's mean with its interval
    EXPECT_LE(ev["ci95_ns"][0].get<double>(), ev["mean_ns"].get<double>()) << ev;
    EXPECT_GE(ev["ci95_ns"][1].get<double>(), ev["mean_ns"].get<double>()) << ev;
  };
  expect_verdict(v["entries"][0], verify.code);
  const std::string run = v["run"];
  EXPECT_EQ(count("SELECT count(DISTINCT cell_key) FROM processes WHERE run_uuid = '" + run + "'"),
            1);
  bool table_chose_defaults = true;  // the tuned knobs are the defaults' (A's) in every process
  {
    auto store = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    auto q = store->prepare(
        "SELECT runner_json FROM processes WHERE run_uuid = ? AND status = 'ok' "
        "ORDER BY process_index");
    q.bind(1, run);
    int processes = 0;
    while (q.step()) {
      const auto doc = nlohmann::json::parse(q.text(0));
      for (const char* knob : {"tile_n", "workers"})
        table_chose_defaults = table_chose_defaults && doc["params"][knob] == doc["params_b"][knob];
      EXPECT_EQ(doc.at("params_b").at("tile_n"), e["params"]["tile_n"]) << doc.dump();
      // The first process checks both cases against the reference; the others time only.
      if (processes++ == 0) {
        EXPECT_TRUE(doc.at("accuracy_b").at("pass").get<bool>()) << doc.dump();
      }
    }
    EXPECT_GE(processes, 2);  // disturbed ones are kept too
  }
  // The rounds design: one process per side and round, two cells (one when the table chose the
  // defaults).
  const auto rounds = k3tune({"--json", "table", "verify", "--table", table, "--processes", "2",
                              "-R", "2", "--min-time", "0.002", "--design", "rounds"});
  ASSERT_TRUE(rounds.code == 0 || rounds.code == 1) << rounds.err;
  const auto r = nlohmann::json::parse(rounds.out);
  EXPECT_EQ(r["design"], "rounds");
  expect_verdict(r["entries"].at(0), rounds.code);
  EXPECT_EQ(count("SELECT count(DISTINCT cell_key) FROM processes WHERE run_uuid = '" +
                  r["run"].get<std::string>() + "'"),
            table_chose_defaults ? 1 : 2);
  const auto verified = count("SELECT count(*) FROM processes") - before;
  EXPECT_GE(verified, 6);  // 2 within, 2 a side in rounds (disturbed ones are not counted)
  // Made for another board: refused before anything runs.
  auto elsewhere = t;
  elsewhere["board"]["fingerprint"]["cpus"] = 64;
  std::ofstream(dir_ / "elsewhere.json") << elsewhere.dump(2);
  const auto refused = k3tune({"table", "verify", "--table", (dir_ / "elsewhere.json").string()});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("/board/fingerprint/cpus: the table was made for 64"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(count("SELECT count(*) FROM processes") - before, verified);

  // A table whose choice is the defaults measures one cell, A against A.
  auto defaults_chosen = t;
  defaults_chosen["entries"][0]["params"] = nlohmann::json::object();
  std::ofstream(dir_ / "defaults.json") << defaults_chosen.dump(2);
  const auto same_before = count("SELECT count(*) FROM processes");
  const auto same =
      k3tune({"--json", "table", "verify", "--table", (dir_ / "defaults.json").string(),
              "--processes", "2", "-R", "2", "--min-time", "0.002"});
  ASSERT_TRUE(same.code == 0 || same.code == 1) << same.err;
  const auto same_out = nlohmann::json::parse(same.out);
  EXPECT_EQ(same_out["entries"].at(0)["evidence"]["processes"], 2) << same.out;
  EXPECT_GE(count("SELECT count(*) FROM processes") - same_before, 2);
  EXPECT_EQ(count("SELECT count(DISTINCT cell_key) FROM processes WHERE run_uuid = '" +
                  same_out["run"].get<std::string>() + "'"),
            1);

  // A damaged table is refused with the field named.
  auto damaged = t;
  damaged["entries"][0]["evidence"].erase("mean");
  damaged["entries"][0]["class"]["k"] = 100;  // not a multiple of the 64-wide quantisation block
  std::ofstream(dir_ / "damaged.json") << damaged.dump(2);
  const auto bad = k3tune({"table", "validate", (dir_ / "damaged.json").string()});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("[entries][0][class][k]: Value should be a multiple of 64"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("[entries][0][evidence]: Missing required property 'mean'"),
            std::string::npos)
      << bad.err;
  // And the kernel library's own verdict: the first problem that makes the loader refuse it.
  EXPECT_NE(bad.err.find("damaged.json: loader: /entries/0/class/k: 100 is not a multiple of 64\n"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 3) << bad.err;
}

// tune-gates: an unknown gate, and a layer gate where the target has no IME2 layer (the host), are
// one line each and exit 2; the table named by --table is not written.
TEST_F(TuneCli, GateCommandsRefuseAnUnknownGateAndALayerGateWithoutIme2) {
  const auto bogus = k3tune({"tune-gates", "--gate", "decode", "--objective", "instructions"});
  EXPECT_EQ(bogus.code, 2);
  EXPECT_NE(bogus.err.find("--gate: 'decode' is not tcm_decode, decode_path or prefill_path"),
            std::string::npos)
      << bogus.err;
  EXPECT_EQ(std::count(bogus.err.begin(), bogus.err.end(), '\n'), 1) << bogus.err;
  for (const char* gate : {"decode_path", "prefill_path"}) {
    const auto r = k3tune({"tune-gates", "--gate", gate, "--force", "--k", "256", "--n", "64"});
    EXPECT_EQ(r.code, 2) << gate;
    EXPECT_NE(r.err.find(std::string("tune-gates --gate ") + gate +
                         ": target local has no usable IME2 layer"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(TuneCli, BadSpaceIsOneLineNamingTheFileAndChangesNothing) {
  write_space(kSmallSpace);
  const std::vector<std::string> tune = {"tune",
                                         "--spaces",
                                         spaces(),
                                         "--op",
                                         "linear_decode",
                                         "--shape",
                                         "k=128,n=64",
                                         "--params",
                                         "copies=1",
                                         "--strategy",
                                         "exhaustive",
                                         "--processes",
                                         "1",
                                         "-R",
                                         "1",
                                         "--min-time",
                                         "0.002",
                                         "--out",
                                         (dir_ / "t.json").string()};
  ASSERT_EQ(k3tune(tune).code, 0);
  const auto processes = count("SELECT count(*) FROM processes");
  // A knob the runner does not have.
  std::string text = kSmallSpace;
  text += "[knobs.tile_m]\nvalues = [1, 2]\ndefault = 1\n";
  write_space(text);
  fs::remove(dir_ / "t.json");
  const auto r = k3tune(tune);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("linear_decode.toml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tile_m"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(count("SELECT count(*) FROM processes"), processes);
  EXPECT_FALSE(fs::exists(dir_ / "t.json"));
  // Timing under qemu is refused: its wall time says nothing about a board.
  const auto q = k3tune({"tune", "--target", "qemu", "--spaces", spaces(), "--op", "linear_decode",
                         "--shape", "k=128,n=64"});
  EXPECT_EQ(q.code, 2);
  EXPECT_NE(q.err.find("--objective instructions"), std::string::npos) << q.err;
  // Nothing to tune: no op of the command has a space.
  const auto none =
      k3tune({"tune", "--spaces", spaces(), "--op", "quant_pack_decode", "--shape", "k=256"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--op: no search space for any of its ops (quant_pack_decode) in "),
            std::string::npos)
      << none.err;
  EXPECT_EQ(count("SELECT count(*) FROM processes"), processes);
}

// Under qemu-user the objective is the instruction count of one call (a deterministic proxy: the
// timed calls' counts are exact; a few hundred instructions of timer reads per process are not,
// which the difference of nine calls and one dilutes to < 0.01%). Attention prefill's query tile x
// key block: 12 x 9 = 108 configurations whose counts differ by up to a third. Coordinate descent
// (a hill climb along each line, exact objectives need nothing more) must land within 2% of the
// exhaustive best using at most a quarter of its measurements.
constexpr const char* kQemuSpace = R"(
[space]
op = "attn_prefill"
description = "test: query tile and key block, one worker"
meaningful_on = ["qemu"]
[knobs.q_tile]
values = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
default = 16
[knobs.kv_block]
values = [8, 16, 24, 32, 48, 64, 96, 128, 256]
default = 64
[constraints]
rules = ["q_tile <= seq"]
)";

TEST_F(TuneCli, QemuInstructionCountCoordinateFindsTheExhaustiveBestWithAQuarterOfItsMeasurements) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(fs::exists(K3TUNE_ROOT "/build/third_party/qemu-plugin/libinsn_count.so"))
      << "the counting plugin is missing: bash scripts/build-qemu-plugin.sh";
  write_space(kQemuSpace, "attn_prefill");
  auto tune = [&](const std::string& strategy) {
    const std::string table = (dir_ / (strategy + ".json")).string();
    const auto r =
        k3tune({"--json", "tune", "--target", "qemu", "--spaces", spaces(), "--op", "attn_prefill",
                "--shape", "seq=64,head_dim=64,q_heads=2,kv_heads=1", "--params", "workers=1",
                "--objective", "instructions", "--strategy", strategy, "--out", table});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(k3tune({"table", "validate", table}).code, 0) << strategy;
    EXPECT_EQ(read_json(table)["source"]["objective"], "instructions");
    return nlohmann::json::parse(r.out)["jobs"].at(0)["result"];
  };
  const auto exhaustive = tune("exhaustive");
  const auto coordinate = tune("coordinate");
  ASSERT_EQ(exhaustive["space"]["valid"], 108);
  EXPECT_EQ(exhaustive["measurements"], 108);
  EXPECT_EQ(exhaustive["rejected"], 0);
  const double best = exhaustive["evidence"]["mean_ns"].get<double>();
  const double found = coordinate["evidence"]["mean_ns"].get<double>();
  EXPECT_GT(best, 1e5);  // a real per-call count, not the difference of two noisy totals
  // The space is not flat: within 2% must mean something.
  const auto worst = count(
      "SELECT max(value) FROM tuning_measurements m JOIN tuning_sessions s USING(session_id) "
      "WHERE s.strategy = 'exhaustive'");
  EXPECT_GT(double(worst), best * 1.2);
  EXPECT_LE(found, best * 1.02) << coordinate["chosen"] << " vs " << exhaustive["chosen"];
  EXPECT_LE(coordinate["measurements"].get<int>() * 4, exhaustive["measurements"].get<int>())
      << coordinate["summary"];
}

}  // namespace

// Exact counts are taken once per runner build, op, shape, parameters and emulated CPU: a session
// over a space with one more value counts only the new configuration, another strategy counts
// nothing, and a replay runs no process and writes nothing -- a configuration never counted is
// reported as such, not measured.
TEST_F(TuneCli, TheMeasurementCacheCountsEachConfigurationOnceAndReplaysStrategiesOnIt) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(fs::exists(K3TUNE_ROOT "/build/third_party/qemu-plugin/libinsn_count.so"))
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
  ASSERT_TRUE(fs::exists(K3TUNE_ROOT "/build/third_party/qemu-plugin/libinsn_count.so"))
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

// The instruction objective subtracts a 1-call process from a 9-call one; with the runner's weight
// cache the first process of a cold cache generates, packs and writes the weights while the second
// only reads them, which once made the difference negative. A process that filled the cache is
// run again, so the counts with a cold cache are those without any cache (every process
// generating), and the cache ends up filled (later counts skip the 20 s of generating the weights
// of a large shape under qemu).
TEST_F(TuneCli, InstructionCountsDoNotDependOnTheWeightCache) {
  ASSERT_TRUE(fs::exists(rvv_runner()))
      << rvv_runner() << " missing (scripts/test.sh builds build/rvv)";
  ASSERT_TRUE(fs::exists(K3TUNE_ROOT "/build/third_party/qemu-plugin/libinsn_count.so"))
      << "the counting plugin is missing: bash scripts/build-qemu-plugin.sh";
  write_space(R"(
[space]
op = "linear_decode"
description = "test: tile width, one worker"
meaningful_on = ["qemu"]
[knobs.tile_n]
values = [32, 64]
default = 64
)");
  // One database per run: the measurement cache would otherwise answer the second run.
  auto counts_with = [&](const std::string& cache_dir, const std::string& name) {
    ::setenv("K3BENCH_CACHE_DIR", cache_dir.c_str(), 1);
    const auto r = k3targets::run_process(
        {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", (dir_ / (name + ".db")).string(), "--targets",
         (dir_ / "targets.toml").string(), "-q", "--json", "tune", "--target", "qemu", "--spaces",
         spaces(), "--op", "linear_decode", "--shape", "n=128,k=256", "--params", "workers=1",
         "--objective", "instructions", "--strategy", "exhaustive"},
        k3targets::ProcessOptions::with_timeout(1800));
    ::unsetenv("K3BENCH_CACHE_DIR");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, double> by_config;
    auto db = k3store::open_database((dir_ / (name + ".db")).string(), k3store::OpenMode::kReadOnly);
    auto rows = db->prepare("SELECT config_json, mean_ns FROM tuning_points WHERE status = 'measured'");
    while (rows.step()) by_config[rows.text(0)] = rows.real(1);
    return by_config;
  };
  const fs::path cache = dir_ / "weight-cache";  // empty: the first process fills it
  const auto cold = counts_with(cache.string(), "cold");
  const auto none = counts_with("off", "none");
  EXPECT_TRUE(fs::exists(cache) && !fs::is_empty(cache)) << "the weight cache was not filled";
  ASSERT_EQ(cold.size(), 2u);
  ASSERT_EQ(none.size(), 2u);
  // Equal up to the per-process jitter (a few hundred instructions of timer and start-up reads,
  // divided by the eight calls of the difference; about +-50 per call seen here). A cold-cache
  // process counted would be off by millions: 1,300 instructions per weight filling the cache.
  for (const auto& [config, per_call] : cold)
    EXPECT_NEAR(per_call, none.at(config), 200) << config << ": cold cache against none";
  // 128 x 256 weights at ~0.1-0.3 instructions each, plus the activation quantisation: thousands
  // of instructions per call, never the negative difference of a cold-cache pair.
  for (const auto& [config, per_call] : cold) EXPECT_GT(per_call, 1000) << config;
}
