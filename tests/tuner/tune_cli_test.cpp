// `k3tune tune` end to end: the real k3tune binary tunes with real k3bench processes (on the host,
// and under qemu-user with the instruction-count plugin), writes tables that are then validated
// by `k3tune table validate` against the published JSON Schema, resumes without re-measuring, and
// verifies a table against the defaults. The measurement cache, replay, held-out rules and seed
// tables are in tune_cli_cache_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tune_cli_fixture.h"

namespace {

// A space of about 10^12 points: --explain counts it without enumerating (and returns at once),
// and tuning it refuses with one line instead of expanding it.
TEST_F(TuneCli, ExplainCountsAHugeSpaceWithoutEnumeratingAndTuningRefusesIt) {
  write_space(space_table("linear_decode", "test: far too many points", "local") + R"([knobs.tile_n]
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
  // repetitions inside each process: one cell (the defaults, with the table's parameters as side
  // B), each process reporting both parameter sets and sides A B B A; --mde 0 counts exactly two.
  const auto before = count("SELECT count(*) FROM processes");
  const auto verify = k3tune({"--json", "table", "verify", "--table", table, "--processes", "2",
                              "-R", "2", "--min-time", "0.002", "--mde", "0"});
  ASSERT_TRUE(verify.code == 0 || verify.code == 1) << verify.err;
  const auto v = nlohmann::json::parse(verify.out);
  ASSERT_EQ(v["entries"].size(), 1u) << verify.err;
  EXPECT_EQ(v["design"], "within");
  EXPECT_EQ(v["entries"][0]["stop_reason"], "fixed count");
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
  // The budget set by the effect to be seen: after the first 2 processes, one more at a time until
  // the sign-free MDE is at most --mde. The signed-rank test cannot reject below 6 pairs at 5%, so
  // a loose target is reached at the sixth process exactly; one no process can reach stops at the
  // ceiling. Either way the verdict says which rule ended it.
  auto adaptive = [&](const char* mde, const char* most) {
    const auto r = k3tune({"--json", "table", "verify", "--table", table, "--processes", "2", "-R",
                           "2", "--min-time", "0.002", "--mde", mde, "--max-processes", most});
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.err;
    return nlohmann::json::parse(r.out)["entries"].at(0);
  };
  const auto loose = adaptive("0.95", "12");
  EXPECT_EQ(loose["evidence"]["processes"], 6) << loose;
  EXPECT_EQ(loose["stop_reason"].get<std::string>().rfind("sign-free MDE", 0), 0u) << loose;
  EXPECT_DOUBLE_EQ(loose["mde_target"].get<double>(), 0.95);
  const auto unreachable = adaptive("0.0001", "7");
  EXPECT_EQ(unreachable["evidence"]["processes"], 7) << unreachable;
  EXPECT_EQ(unreachable["stop_reason"].get<std::string>().rfind("max processes (7;", 0), 0u)
      << unreachable;
  const auto rounds_mde =
      k3tune({"table", "verify", "--table", table, "--design", "rounds", "--mde", "0.05"});
  EXPECT_EQ(rounds_mde.code, 2);
  EXPECT_NE(rounds_mde.err.find("--mde: adds processes of the within design only"),
            std::string::npos)
      << rounds_mde.err;
  const auto verified = count("SELECT count(*) FROM processes") - before;
  EXPECT_GE(verified, 6 + 6 + 7);  // 2 within, 2 a side in rounds, then 6 and 7 within
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
              "--processes", "2", "-R", "2", "--min-time", "0.002", "--mde", "0"});
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
// runner marks its calls, and the count is the marked calls' of one process, nothing of the
// runner's own work around them). Attention prefill's query tile x
// key block: 12 x 9 = 108 configurations whose counts differ by up to a third. Coordinate descent
// (a hill climb along each line, exact objectives need nothing more) must land within 2% of the
// exhaustive best using at most a quarter of its measurements.
const std::string kQemuSpace =
    k3test::space_table("attn_prefill", "test: query tile and key block, one worker", "qemu") +
    R"([knobs.q_tile]
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
  ASSERT_TRUE(
      fs::exists(std::string(K3TUNE_ROOT) + "/build/third_party/qemu-plugin/libinsn_count.so"))
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
