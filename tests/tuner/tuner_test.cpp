// The tuner where the truth is known: search spaces (parsing, errors, constraints, counts), the
// strategies on synthetic objectives with seeded noise (optimum found, racing's error rate, the
// "within 2% with at most 25% of the measurements" target over many seeds), resumable sessions on
// a real SQLite file and tables against the JSON Schema. Gate fitting: gates_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/stats/binomial.h"
#include "harness/host/store/database.h"
#include "harness/host/store/tuning_sessions.h"
#include "tests/support/scratch_dir.h"
#include "tuner/gates.h"
#include "tuner/seed_table.h"
#include "tuner/space.h"
#include "tuner/strategy.h"
#include "tuner/table.h"
#include "tuner/tuning.h"

namespace fs = std::filesystem;

namespace {

// A catalog like the runner's --list-ops --json, for an op with the knobs the tests use.
k3bench::Catalog synthetic_catalog() {
  auto p = [](const char* name, const char* def, int lo, int hi) {
    return nlohmann::json{{"name", name},      {"type", "int"},  {"help", ""},
                          {"required", false}, {"default", def}, {"range", {lo, hi}}};
  };
  nlohmann::json op = {
      {"name", "synthetic"},
      {"shape_keys",
       {{{"name", "n"},
         {"type", "int"},
         {"help", ""},
         {"required", true},
         {"range", {1, 1 << 20}}}}},
      {"params",
       {p("a", "4", 1, 64), p("b", "4", 1, 64), p("c", "1", 1, 64), p("d", "1", 1, 64),
        nlohmann::json{{"name", "mode"},
                       {"type", "enum"},
                       {"help", ""},
                       {"required", false},
                       {"default", "x"},
                       {"choices", {"x", "y", "z"}}}}}};
  return k3bench::Catalog(nlohmann::json::array({op}));
}

class Tuner : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // A 4-knob space of 8 x 8 x 6 x 3 = 1152 configurations.
  k3tuner::SearchSpace big_space() {
    return k3tuner::SearchSpace::load(write("synthetic.toml", R"(
[space]
op = "synthetic"
[knobs.a]
values = [1, 2, 3, 4, 5, 6, 7, 8]
default = 4
[knobs.b]
range = [1, "lim"]
default = 4
[knobs.c]
values = [1, 2, 3, 4, 5, 6]
default = 1
[knobs.mode]
values = ["x", "y", "z"]
default = "x"
)"));
  }
  k3test::ScratchDir dir_{"k3tuner_"};
};

// A smooth objective with an interaction term; minimum 100 at a=6, b=3, c=4, mode=y.
double truth(const nlohmann::json& p) {
  const double a = p["a"].get<double>(), b = p["b"].get<double>(), c = p["c"].get<double>();
  const double mode = p["mode"] == "y" ? 0.0 : p["mode"] == "x" ? 0.04 : 0.09;
  return 100.0 * (1 + 0.02 * (a - 6) * (a - 6) + 0.03 * (b - 3) * (b - 3) +
                  0.015 * (c - 4) * (c - 4) + 0.004 * (a - 6) * (b - 3) + mode);
}

k3tuner::TuneRequest request(const k3tuner::SearchSpace& space, const k3bench::Catalog& catalog,
                             const std::string& s) {
  k3tuner::TuneRequest r;
  r.space = &space;
  r.catalog = &catalog;
  r.shape = {{"n", 64}};
  r.facts = {{"lim", 8}, {"n", 64}};
  r.strategy = s;
  return r;
}

TEST_F(Tuner, SpaceParsesCountsAndAppliesConstraints) {
  const auto space = k3tuner::SearchSpace::load(write("s.toml", R"(
[space]
op = "synthetic"
[knobs.a]
range = [1, "lim"]
scale = "pow2"
default = "lim"
[knobs.b]
values = [1, 2, 4]
[knobs.c]
values = [1, 2]
when = "a >= 4"
[knobs.mode]
values = ["x", "y"]
needs = "allow-y"
[derived]
ab = "a * b"
[constraints]
rules = ["ab <= 16", "mode == mode_x || b == 1"]
)"));
  const auto catalog = synthetic_catalog();
  space.check(catalog.op("synthetic", "t"), {{"lim", 8}, {"n", 1}});
  k3tuner::SpaceCounts counts;
  const auto configs = space.enumerate({{"lim", 8}, {"n", 1}}, {}, &counts);
  // a in {1, 2, 4, 8}, b in {1, 2, 4}, c in {1, 2}, mode in {x, y}: 48 combinations; c is held at
  // 1 when a < 4 (36 distinct); mode y needs the flag (18 left out); a*b <= 16 drops a=8,b=4.
  EXPECT_EQ(counts.product, 48u);
  EXPECT_EQ(counts.distinct, 36u);
  EXPECT_EQ(counts.excluded_by_flags, 18u);
  EXPECT_EQ(counts.valid, 16u);
  EXPECT_EQ(configs.front(),
            (nlohmann::json{{"a", 8}, {"b", 1}, {"c", 1}, {"mode", "x"}}));  // defaults first
  const auto with_flag = space.enumerate({{"lim", 8}, {"n", 1}}, {"allow-y"}, &counts);
  EXPECT_EQ(counts.excluded_by_flags, 0u);
  EXPECT_EQ(with_flag.size(), 16u + 6u);  // mode y only with b == 1: 6 more
}

TEST_F(Tuner, SpaceErrorsNameFileLineAndKey) {
  const auto catalog = synthetic_catalog();
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"[space]\nop = \"synthetic\"\n[knobs.a]\nvalues = [1, 99]\n",
       "a=99 is outside the allowed range"},
      {"[space]\nop = \"synthetic\"\n[knobs.nope]\nvalues = [1]\n", "has no parameter 'nope'"},
      {"[space]\nop = \"synthetic\"\n[knobs.a]\nvalues = [1]\n[constraints]\nrules = [\"a < "
       "typo\"]\n",
       ":6: constraints.rules"},
      {"[space]\nop = \"synthetic\"\n[knobs.a]\nvaleus = [1]\n",
       "s.toml:4: knobs.a.valeus: unknown key"},
      {"[space]\nop = \"synthetic\"\n[knobs.a]\n", "needs values = [...] or range"},
      {"[space]\nop = \"synthetic\"\n[knobs.a\n", "s.toml:3:"},
  };
  for (const auto& c : cases) {
    const std::string file = write("s.toml", c.text);
    try {
      k3tuner::SearchSpace::load(file).check(catalog.op("synthetic", "t"), {{"n", 1}});
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const k3bench::UserError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos)
          << "not one line: " << e.what();
    }
  }
}

TEST_F(Tuner, ExhaustiveFindsTheKnownOptimumWithoutNoise) {
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  k3tuner::SyntheticObjective objective(truth, 0.0, 1);
  const auto r =
      k3tuner::run_tuning(request(space, catalog, "exhaustive"), objective, nullptr, "s");
  ASSERT_NE(r.chosen, SIZE_MAX);
  EXPECT_EQ(r.candidates[r.chosen].config,
            (nlohmann::json{{"a", 6}, {"b", 3}, {"c", 4}, {"mode", "y"}}));
  EXPECT_EQ(r.measurements, 1152);  // exact objective: one each
  EXPECT_DOUBLE_EQ(r.evidence.mean, 100.0);
}

TEST_F(Tuner, CoordinateReachesWithinTwoPercentWithAQuarterOfTheMeasurementsOverSeeds) {
  // Noisy objective (3% log-normal per measurement), 5 measurements per configuration. Exhaustive
  // measures all 1152; coordinate descent must pick a configuration whose TRUE value is within 2%
  // of the true value of exhaustive's pick, using at most 25% of its measurements -- in every seed.
  // Random search under the same budget samples 1 configuration in 20 and cannot promise that
  // (about 6 of the 1152 are within 2%); what it must do is pick well among what it sampled.
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  int coordinate_ok = 0, random_ok = 0;
  const int seeds = 40;
  for (int seed = 1; seed <= seeds; ++seed) {
    auto run = [&](const std::string& strategy, int samples) {
      k3tuner::SyntheticObjective objective(truth, 0.03, static_cast<std::uint64_t>(seed));
      auto r = request(space, catalog, strategy);
      r.options.processes = 5;
      r.options.seed = static_cast<std::uint64_t>(seed);
      r.options.random_samples = samples;
      return k3tuner::run_tuning(r, objective, nullptr, "s");
    };
    const auto ex = run("exhaustive", 0);
    const double ex_truth = truth(ex.candidates[ex.chosen].config);
    const auto cd = run("coordinate", 0);
    const auto rs = run("random", 1152 / 4 / 5);
    EXPECT_LE(cd.measurements, ex.measurements / 4);
    EXPECT_LE(rs.measurements, ex.measurements / 4);
    coordinate_ok += truth(cd.candidates[cd.chosen].config) <= 1.02 * ex_truth;
    if (std::getenv("K3_TUNER_DEBUG"))
      std::fprintf(stderr, "seed %d ex %.2f cd %.2f (%d meas, %s) rs %.2f\n", seed, ex_truth,
                   truth(cd.candidates[cd.chosen].config), cd.measurements, cd.summary.c_str(),
                   truth(rs.candidates[rs.chosen].config));
    double sampled_best = 1e300;
    for (const auto& c : rs.candidates)
      if (c.measurements() > 0) sampled_best = std::min(sampled_best, truth(c.config));
    random_ok += truth(rs.candidates[rs.chosen].config) <= 1.02 * sampled_best;
  }
  EXPECT_EQ(coordinate_ok, seeds);
  EXPECT_GE(random_ok, seeds * 9 / 10);
}

TEST_F(Tuner, RacingDropsTheTrueBestNoMoreOftenThanItsStatedRate) {
  // 12 configurations, the best 3% faster than the next: over many seeds the true best must
  // survive the race in at least 1 - race_error of the runs (the rate's 99% interval).
  const auto space = k3tuner::SearchSpace::load(write("r.toml", R"(
[space]
op = "synthetic"
[knobs.a]
values = [1, 2, 3, 4, 5, 6]
[knobs.mode]
values = ["x", "y"]
)"));
  const auto catalog = synthetic_catalog();
  auto f = [](const nlohmann::json& p) {
    if (p["a"] == 3 && p["mode"] == "y") return 100.0;
    return 103.0 + 4.0 * std::abs(p["a"].get<int>() - 3) + (p["mode"] == "x" ? 5.0 : 0.0);
  };
  int dropped = 0, total = 0, measurements = 0;
  for (int seed = 1; seed <= 300; ++seed) {
    k3tuner::SyntheticObjective objective(f, 0.04, static_cast<std::uint64_t>(seed));
    auto r = request(space, catalog, "racing");
    r.options.race_error = 0.05;
    r.options.max_rounds = 12;
    const auto res = k3tuner::run_tuning(r, objective, nullptr, "s");
    const auto& chosen = res.candidates[res.chosen].config;
    dropped += !(chosen["a"] == 3 && chosen["mode"] == "y");
    measurements += res.measurements;
    ++total;
  }
  // Not choosing the best includes dropping it; the stated error bounds that.
  const auto rate = k3stats::clopper_pearson(dropped, total, 0.99);
  EXPECT_LE(rate.low, 0.05) << dropped << "/" << total;
  // And racing spends less than exhaustive's 12 x 12.
  EXPECT_LT(measurements / total, 12 * 12 * 3 / 4);
}

// A 16-configuration space (4 x 2 x 2), as the decode space is after its constraints: no strategy
// may spend more than exhaustive search's 16 x 5 measurements on it. Coordinate descent's three
// sweeps of 8-point lines plus its finals could cost 160 here (it spent 266 before), so it races.
TEST_F(Tuner, NoStrategySpendsMoreThanExhaustiveSearchOnASmallSpace) {
  const auto space = k3tuner::SearchSpace::load(write("small.toml", R"(
[space]
op = "synthetic"
[knobs.a]
values = [3, 4, 5, 6]
default = 4
[knobs.c]
values = [1, 4]
default = 1
[knobs.mode]
values = ["x", "y"]
default = "x"
)"));
  const auto catalog = synthetic_catalog();
  for (const std::string strategy : {"exhaustive", "coordinate", "racing", "random"}) {
    for (int seed = 1; seed <= 10; ++seed) {
      k3tuner::SyntheticObjective objective(truth, 0.03, static_cast<std::uint64_t>(seed));
      auto r = request(space, catalog, strategy);
      r.options.processes = 5;
      r.options.seed = static_cast<std::uint64_t>(seed);
      const auto res = k3tuner::run_tuning(r, objective, nullptr, "s");
      EXPECT_LE(res.measurements, 16 * 5) << strategy << " seed " << seed << ": " << res.summary;
      ASSERT_NE(res.chosen, SIZE_MAX);
      if (strategy == "coordinate") {
        EXPECT_NE(res.summary.find("raced instead"), std::string::npos) << res.summary;
      }
    }
  }
}

// The defaults 25% slower than the rest: racing used to drop them after two rounds, and the table
// entry's speed-up then came from two unpaired measurements ([0.16, 21.95] was seen). They stay in
// the race now, so the speed-up is paired over every round the race ran, and a strategy that left
// them behind (coordinate descent) measures them again beside its choice.
TEST_F(Tuner, TheChosenSpeedUpOverTheDefaultsComesFromEnoughPairedRounds) {
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  auto slow_defaults = [](const nlohmann::json& p) {
    const bool defaults = p["a"] == 4 && p["b"] == 4 && p["c"] == 1 && p["mode"] == "x";
    return truth(p) * (defaults ? 1.25 : 1.0);
  };
  for (const std::string strategy : {"racing", "coordinate"}) {
    int narrow = 0;
    for (int seed = 1; seed <= 10; ++seed) {
      k3tuner::SyntheticObjective objective(slow_defaults, 0.03, static_cast<std::uint64_t>(seed));
      auto r = request(space, catalog, strategy);
      r.options.processes = 5;
      r.options.seed = static_cast<std::uint64_t>(seed);
      if (strategy == "racing") {  // racing a 1152-point space: a narrower one, same knobs
        r.facts["lim"] = 4;
      }
      const auto res = k3tuner::run_tuning(r, objective, nullptr, "s");
      ASSERT_NE(res.chosen, SIZE_MAX);
      ASSERT_NE(res.chosen, res.defaults) << strategy;
      const auto& e = res.evidence;
      EXPECT_GE(e.paired_rounds, k3tuner::Evidence::kMinEvidenceRounds)
          << strategy << " " << res.summary;
      EXPECT_TRUE(e.conclusive());
      EXPECT_TRUE(e.paired);
      // The truth (1.25 x the defaults' own truth over the chosen one's) lies in the interval in
      // most seeds, and the interval is narrow enough to mean something.
      const double truth_ratio = slow_defaults(res.candidates[res.defaults].config) /
                                 slow_defaults(res.candidates[res.chosen].config);
      narrow += e.speedup_low <= truth_ratio && truth_ratio <= e.speedup_high &&
                e.speedup_high / e.speedup_low < 1.15;
    }
    EXPECT_GE(narrow, 8) << strategy;
  }
}

// tune --seed-table decides per knob whether another board's choice carries over: a knob depends on
// the facts its own expressions name and on those of every constraint it takes part in (through
// derived quantities too). On the decode space: workers on cpus, slab_rows on the TCM block size
// (2 * slab_bytes <= tcm_block_bytes, slab_bytes = slab_rows * row_bytes), tile_n on no board fact.
TEST_F(Tuner, SeedTablesHoldOnlyTheKnobsNoDifferingBoardFactTouches) {
  const auto space =
      k3tuner::SearchSpace::load(std::string(K3TUNE_ROOT) + "/configs/spaces/linear_decode.toml");
  const auto workers = k3tuner::knob_dependencies(space, "workers");
  EXPECT_TRUE(workers.contains("cpus"));
  const auto slab = k3tuner::knob_dependencies(space, "slab_rows");
  EXPECT_TRUE(slab.contains("tcm_block_bytes")) << nlohmann::json(slab).dump();
  const auto tile = k3tuner::knob_dependencies(space, "tile_n");
  EXPECT_TRUE(tile.contains("n"));
  EXPECT_FALSE(tile.contains("cpus") || tile.contains("vlen") || tile.contains("tcm_block_bytes"));

  const nlohmann::json a = {{"marchid", nullptr},
                            {"vlen", 1024},
                            {"cpus", 8},
                            {"tcm", {{"backend", "real"}, {"blocks", 8}, {"block_bytes", 393216}}}};
  nlohmann::json b = a;
  EXPECT_TRUE(k3tuner::differing_facts(a, b).empty());
  b["cpus"] = 4;
  b["tcm"]["block_bytes"] = 262144;
  const auto d = k3tuner::differing_facts(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d.at("cpus").contains("cpus"));
  EXPECT_TRUE(d.at("tcm").contains("tcm_block_bytes"));
}

TEST_F(Tuner, InterruptedTuningResumesToTheSameResultWithoutRemeasuring) {
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  auto db = k3store::open_database((dir_ / "t.db").string(), k3store::OpenMode::kCreateOrUpdate);
  k3store::TuningSessionStore store(*db);
  auto make = [&](const std::string& id) {
    k3store::TuningSessionRecord rec{id,          "test", "synthetic", "b",       "",
                                     "synthetic", "{}",   "",          "{}",      "coordinate",
                                     7,           0,      "synthetic", "running", ""};
    store.open(rec);
  };
  auto r = request(space, catalog, "coordinate");
  r.options.processes = 4;
  r.options.seed = 7;
  // Uninterrupted reference.
  make("ref");
  k3tuner::SyntheticObjective ref_objective(truth, 0.05, 7);
  const auto ref = k3tuner::run_tuning(r, ref_objective, &store, "ref");
  // Interrupted after 37 measurements, then resumed.
  make("resumed");
  k3tuner::SyntheticObjective first(truth, 0.05, 7);
  auto interrupted = r;
  interrupted.stop_after = 37;
  EXPECT_THROW(k3tuner::run_tuning(interrupted, first, &store, "resumed"),
               k3tuner::TuningInterrupted);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM tuning_measurements WHERE session_id = 'resumed'"),
            37);
  k3tuner::SyntheticObjective second(truth, 0.05, 7);
  const auto res = k3tuner::run_tuning(r, second, &store, "resumed");
  EXPECT_EQ(res.new_measurements, ref.measurements - 37);  // nothing measured twice
  EXPECT_EQ(second.measurements(), ref.measurements - 37);
  EXPECT_EQ(res.candidates[res.chosen].config, ref.candidates[ref.chosen].config);
  EXPECT_DOUBLE_EQ(res.evidence.mean, ref.evidence.mean);
  EXPECT_EQ(res.to_json().dump(), ref.to_json().dump());
}

TEST_F(Tuner, RejectedConfigurationsAreStoredWithTheirReasonAndNeverChosen) {
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  // The true optimum "breaks its accuracy bound".
  k3tuner::SyntheticObjective objective(truth, 0.0, 1, [](const nlohmann::json& p) {
    return p["a"] == 6 && p["b"] == 3 && p["c"] == 4 && p["mode"] == "y";
  });
  const auto r =
      k3tuner::run_tuning(request(space, catalog, "exhaustive"), objective, nullptr, "s");
  const auto& chosen = r.candidates[r.chosen];
  EXPECT_FALSE(chosen.rejected);
  EXPECT_NE(chosen.config, (nlohmann::json{{"a", 6}, {"b", 3}, {"c", 4}, {"mode", "y"}}));
  int rejected = 0;
  for (const auto& c : r.candidates)
    rejected += c.rejected && c.reason.find("accuracy") != std::string::npos;
  EXPECT_EQ(rejected, 1);
}

k3tuner::TargetFacts fake_target() {
  k3tuner::TargetFacts t;
  t.fingerprint = {{"marchid", "0x8000000041000002"},
                   {"vlen", 1024},
                   {"cpu_model", "SpacemiT K3"},
                   {"cpus", 8},
                   {"tcm", {{"backend", "real"}, {"blocks", 8}, {"block_bytes", 393216}}}};
  return t;
}

TEST_F(Tuner, WrittenTablesValidateAgainstTheSchemaAndDamageIsReported) {
  const auto space = big_space();
  const auto catalog = synthetic_catalog();
  k3tuner::SyntheticObjective objective(truth, 0.02, 3);
  auto req = request(space, catalog, "coordinate");
  const auto r = k3tuner::run_tuning(req, objective, nullptr, "s");
  k3tuner::TableSource src{"synthetic", false, false,   {},    "test",
                           "synthetic", "b",   "k3-01", "tiny"};
  const auto table = k3tuner::make_table(
      fake_target(), src, {{"synthetic", {{"n", 64}}, "s1", &r, &space, "units", "rvv"}},
      {{"tcm_decode", {{"use", "threshold"}, {"k_min", 2048}, {"b_min_bytes", 0}}}});
  const std::string schema = std::string(K3TUNE_ROOT) + "/configs/schema/tuning-table.schema.json";
  // The schema takes any op; the kernel library's loader only the ops a table may tune, and
  // validate says so (its verdict is the loader's).
  const auto synthetic = k3tuner::validate_table(table, schema);
  EXPECT_EQ(synthetic.schema_problems, 0u);
  EXPECT_EQ(synthetic.loader, "/entries/0/op: 'synthetic' is not an op a table may tune");
  EXPECT_EQ(table["entries"][0]["id"], "synthetic/rvv/n64");
  EXPECT_EQ(table["entries"][0]["params"], r.candidates[r.chosen].config);
  nlohmann::json real = table;
  real["entries"][0]["op"] = "linear_decode";
  real["entries"][0]["class"] = {{"path", "rvv"}, {"k", 2048}, {"n", 2048}};
  real["entries"][0]["id"] = k3tuner::entry_id("linear_decode", real["entries"][0]["class"]);
  real["entries"][0]["params"] = {{"tile_n", 64}, {"workers", 4}};
  EXPECT_EQ(real["entries"][0]["id"], "linear_decode/rvv/k2048/n2048");
  const auto valid = k3tuner::validate_table(real, schema);
  EXPECT_TRUE(valid.valid()) << (valid.lines().empty() ? "" : valid.lines().front());
  // Damage: each must be reported, with where.
  auto broken = [&](auto edit, const std::string& expect) {
    nlohmann::json t = real;
    edit(t);
    const auto problems = k3tuner::validate_table(t, schema).lines();
    ASSERT_FALSE(problems.empty()) << expect;
    bool found = false;
    for (const auto& p : problems) found = found || p.find(expect) != std::string::npos;
    EXPECT_TRUE(found) << expect << " in " << problems.front();
  };
  broken([](auto& t) { t.erase("kernel_abi"); }, "kernel_abi");
  broken([](auto& t) { t["kernel_abi"] = "1"; }, "kernel_abi");
  broken([](auto& t) { t["board"]["fingerprint"]["vlen"] = 64; }, "vlen");
  broken([](auto& t) { t["entries"][0]["class"]["k"] = 100; }, "k");
  broken([](auto& t) { t["entries"].push_back(t["entries"][0]); },
         "loader: /entries/1: a second entry for");
  // What the schema cannot see and a kernel refuses: a microkernel name of another op or layer,
  // slab_rows that is not whole weight tiles.
  broken(
      [](auto& t) {
        t["entries"][0]["params"]["ukernel"] = "linear_prefill-w4b64-srows-m4-e8m1-rvv";
      },
      "loader: /entries/0/params/ukernel: 'linear_prefill-w4b64-srows-m4-e8m1-rvv' is not a rvv "
      "linear_decode microkernel");
  broken([](auto& t) { t["entries"][0]["params"]["ukernel"] = "Linear_Decode"; },
         "is not a microkernel name");
  broken(
      [](auto& t) {
        t["entries"][0]["params"]["weight_rows"] = 64;
        t["entries"][0]["params"]["slab_rows"] = 96;
      },
      "loader: /entries/0/params/slab_rows: 96 is not a multiple of weight_rows (64)");
  broken([](auto& t) { t["entries"][0]["id"] = "other"; }, "does not match");
  broken([](auto& t) { t["entries"][0]["evidence"]["mean"] = -1; }, "mean");
  broken([](auto& t) { t["gates"]["tcm_decode"]["use"] = "sometimes"; }, "use");
  // decode_path: what tune-gates writes is valid for the schema and the loader alike; a threshold
  // without both bounds, or a bound out of range, is refused by both.
  k3tuner::GateRule fitted;
  fitted.use = "threshold";
  fitted.k_min = 1024;
  fitted.w_min = 2 << 20;
  fitted.shapes = 8;
  nlohmann::json gated = real;
  gated["gates"]["decode_path"] = fitted.to_json("decode_path");
  const auto with_gate = k3tuner::validate_table(gated, schema);
  EXPECT_TRUE(with_gate.valid()) << (with_gate.lines().empty() ? "" : with_gate.lines().front());
  real = gated;
  for (const char* bound :
       {"k_min", "w_min"}) {  // the schema's own verdict (if/then), not the loader's
    nlohmann::json t = gated;
    t["gates"]["decode_path"].erase(bound);
    EXPECT_GT(k3tuner::validate_table(t, schema).schema_problems, 0u) << bound;
  }
  broken([](auto& t) { t["gates"]["decode_path"].erase("w_min"); },
         "loader: /gates/decode_path/w_min: missing (use is threshold)");
  broken([](auto& t) { t["gates"]["decode_path"]["k_min"] = 0; },
         "loader: /gates/decode_path/k_min: out of range");
  broken([](auto& t) { t["gates"]["decode_path"]["w_min"] = std::int64_t{1} << 51; }, "w_min");
  broken([](auto& t) { t["gates"]["decode_path"]["n_min"] = 1; }, "n_min");
  broken([](auto& t) { t["kernel_abi"] = 99; }, "ABI");
  // show and diff say what changed.
  nlohmann::json other = table;
  other["entries"][0]["params"]["a"] = 1;
  EXPECT_NE(k3tuner::diff_tables(table, other).find("~ synthetic/rvv/n64"), std::string::npos);
  EXPECT_NE(k3tuner::show_table(table).find("synthetic/rvv/n64"), std::string::npos);
}

TEST_F(Tuner, ShapeClassesBucketPrefillMAndAttentionContext) {
  EXPECT_EQ(k3tuner::shape_class("linear_decode", "rvv", {{"n", 2048}, {"k", 1024}}),
            (nlohmann::json{{"path", "rvv"}, {"n", 2048}, {"k", 1024}}));
  EXPECT_EQ(k3tuner::shape_class("linear_prefill", "ime2",
                                 {{"m", 100}, {"n", 2048}, {"k", 1024}})["m_bucket"],
            128);
  EXPECT_EQ(k3tuner::shape_class("linear_prefill", "ime2",
                                 {{"m", 128}, {"n", 2048}, {"k", 1024}})["m_bucket"],
            128);
  const auto a = k3tuner::shape_class(
      "attn_decode", "rvv", {{"ctx", 1000}, {"q_heads", 16}, {"kv_heads", 8}, {"head_dim", 128}});
  EXPECT_EQ(a["ctx_bucket"], 1024);
  EXPECT_EQ(k3tuner::entry_id("attn_decode", a),
            "attn_decode/rvv/ctx_bucket1024/head_dim128/kv_heads8/q_heads16");
}

}  // namespace
