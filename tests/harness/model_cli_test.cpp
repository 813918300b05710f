// k3tune model end to end: the real k3tune drives real k3bench processes over a small model's
// whole-model cells into a real database (P x R samples, op model_pp / model_tg, the breakdown in
// each process's runner report), prints the llm_bench-style table, keeps published figures apart
// and labelled, and refuses a bad model before writing anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/host/bench/model_session.h"
#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(targets()) << "[targets.local]\nkind = \"local\"\nrunner = \"" +
                                    std::string(K3BENCH_PATH) + "\"\ntimeout_s = 120\n";
  }
  std::string db() const { return (dir_ / "results.db").string(); }
  std::string targets() const { return (dir_ / "targets.toml").string(); }
  k3targets::ProcessResult k3tune(std::vector<std::string> args) const {
    std::vector<std::string> argv = {K3TUNE_PATH, "--root",    K3TUNE_ROOT, "--db",
                                     db(),        "--targets", targets(),   "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    return k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(600));
  }
  std::int64_t count(const std::string& sql) const {
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  k3test::ScratchDir dir_{"k3tune_model_", k3test::ScratchDir::Name::kPerProcess};
};

TEST_F(ModelCli, SmallModelRunsIntoTheDatabase) {
  const auto r =
      k3tune({"model", "--model", std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.5.toml",
              "--pp", "8,16", "--tg", "4", "-P", "2", "-R", "2", "--params", "workers=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("| model | modelSize | backend | threads | test | t/s | 95% CI | processes |"),
      std::string::npos)
      << r.out;
  for (const char* test : {"| pp8 |", "| pp16 |", "| tg4 |"})
    EXPECT_NE(r.out.find(test), std::string::npos) << test << "\n" << r.out;
  EXPECT_NE(r.out.find("gdn_core"), std::string::npos) << r.out;  // the breakdown
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE op = 'model_pp'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE op = 'model_tg'"), 1);
  // P = 2 processes per cell; one the disturbance check flags (a loaded machine) is kept and
  // measured once more, so a cell has 2 to 4 processes, each with R = 2 samples and its breakdown.
  const auto processes = count("SELECT count(*) FROM processes");
  EXPECT_GE(processes, 3 * 2);
  EXPECT_LE(processes, 3 * 2 * 2);
  EXPECT_EQ(count("SELECT count(*) FROM samples"), processes * 2);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates WHERE status = 'ok'"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE runner_json LIKE '%\"breakdown\"%'"),
            processes);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE runner_json LIKE '%float64 forward pass%'"),
            3);
}

// llama-bench's depth and MNN's prefill-then-generate as cells: every test from a filled cache,
// the pp+tg test its own op with the prefill's share of each call in the runner report. --trace
// adds one traced run of the three tests, linked from the output.
TEST_F(ModelCli, DepthAndPrefillThenGenerateAreTheirOwnCells) {
  const std::string trace = (dir_ / "trace.json").string();
  const auto r =
      k3tune({"model", "--model", std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml",
              "--pp", "8", "--tg", "4", "--depth", "24", "--pg", "6,3", "-P", "2", "-R", "2",
              "--params", "workers=2", "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Trace of pp8@d24, tg4@d24, pp6+tg3@d24 (one untimed-by-the-sweep run, the "
                       "first repetition of each test): " +
                       trace),
            std::string::npos)
      << r.out;
  std::ifstream in(trace);
  const auto events = nlohmann::json::parse(in).at("traceEvents");
  int processes = 0, kernel_slices = 0;
  for (const auto& e : events) {
    processes += e["ph"] == "M" && e["name"] == "process_name";
    kernel_slices += e["ph"] == "X" && e["cat"] == "kernel";
  }
  EXPECT_EQ(processes, 3);
  EXPECT_GT(kernel_slices, 3 * 3 * 10);  // three tests, three layers, a dozen calls per layer
  for (const char* test : {"| pp8@d24 |", "| tg4@d24 |", "| pp6+tg3@d24 |"})
    EXPECT_NE(r.out.find(test), std::string::npos) << test << "\n" << r.out;
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE op = 'model_pg'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates WHERE status = 'ok'"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE shape_json LIKE '%\"depth\":24%'"), 2);
  EXPECT_GE(count("SELECT count(*) FROM processes WHERE runner_json LIKE '%prefill_s_per_call%'"),
            2);
  const auto bad = k3tune({"model", "--model", "qwen3-0.6b", "--pg", "512"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--pg: '512' is not P,G"), std::string::npos) << bad.err;
}

// Model-level A/B: a candidate runner whose swiglu calls take 20 us more per decode step against a
// baseline runner as --baseline-runner, in the same interleaved rounds: the decode test is 20%
// slower, and the change is attributed to swiglu (the largest contribution whose interval excludes
// zero, 20% of the baseline's wall time), the other ops and the glue at zero. Both runners are the
// real k3bench with planted times (tests/support/synthetic-k3bench.sh: 100 us per decode step split
// evenly over the op kinds and the glue, +-0.5% per repetition), so the truth is exact whatever
// else the machine runs; the rules' statistics are tested on the in-process synthetic runner.
TEST_F(ModelCli, ABAttributesAPlantedSlowdownToItsOp) {
  auto synthetic = [&](const std::string& name, const std::string& plant) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n"
                        << (plant.empty() ? "" : "K3BENCH_SYNTHETIC_PLANT=" + plant + " ")
                        << "exec bash '" + std::string(K3TUNE_ROOT) +
                               "/tests/support/synthetic-k3bench.sh' '"
                        << K3BENCH_PATH << "' 100000 \"$@\"\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  };
  const std::string candidate = synthetic("planted-k3bench", "swiglu:20000");
  const std::string baseline = synthetic("plain-k3bench", "");
  std::ofstream(targets()) << "[targets.local]\nkind = \"local\"\nrunner = \"" << candidate
                           << "\"\ntimeout_s = 120\n";
  const auto r =
      k3tune({"--json", "model", "--model",
              std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml", "--pp", "", "--tg",
              "4", "-P", "8", "-R", "3", "--params", "workers=1", "--baseline-runner", baseline});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["comparison"].size(), 1u) << j.dump();
  const auto& c = j["comparison"][0];
  EXPECT_EQ(c["test"], "tg4");
  EXPECT_EQ(c["rounds"].get<int>(), 8) << c.dump();  // nothing is disturbed
  EXPECT_NEAR(c["rel_diff"].get<double>(), 0.2, 0.01) << c.dump();
  EXPECT_NE(c["verdict"].get<std::string>().find("SLOWER"), std::string::npos) << c.dump();
  const auto& top = c["contributions"][0];
  EXPECT_EQ(top["op"], "swiglu") << c.dump();
  EXPECT_NEAR(top["share_of_wall"].get<double>(), 0.2, 1e-9) << c.dump();
  EXPECT_GT(top["ci95"][0].get<double>(), 0) << c.dump();
  double sum = 0;
  for (const auto& o : c["contributions"]) {
    sum += o["share_of_wall"].get<double>();
    if (o["op"] != "swiglu") {
      EXPECT_NEAR(o["share_of_wall"].get<double>(), 0, 1e-9) << o.dump();
    }
  }
  EXPECT_NEAR(sum, c["wall_change"].get<double>(), 1e-9) << c.dump();
  int builds = 0;
  for (const auto& row : j["results"]) {
    builds += row["build"] == "baseline";
    EXPECT_EQ(row["threads"], 1) << "--params workers=1 reached the cells";
  }
  EXPECT_EQ(builds, 1);
}

// A tuning table against the built-in defaults on one runner: every test twice in the same
// rounds, judged per test with the per-op attribution; the table's side loaded it and gave the
// model's Linears its entries, the defaults' side loaded nothing. Structure, not rates: with
// --no-remeasure a busy machine's disturbed processes still count, so all three rounds pair
// (re-measuring, a run beside heavy load once kept no pair at all).
TEST_F(ModelCli, TableAgainstTheDefaultsInTheSameRounds) {
  const std::string model = std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml";
  const std::string table = (dir_ / "T.json").string();
  const auto tune = k3tune({"tune", "--model", model, "--op", "linear_decode", "--strategy",
                            "random", "--budget", "2", "--processes", "2", "--out", table});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const auto r = k3tune({"--json", "model", "--model", model, "--pp", "", "--tg", "4", "-P", "3",
                         "-R", "2", "--params", "workers=1", "--table", table, "--no-remeasure"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["comparison"].size(), 1u) << j.dump();
  const auto& c = j["comparison"][0];
  EXPECT_EQ(c["test"], "tg4");
  EXPECT_EQ(c["rounds"].get<int>(), 3) << c.dump();
  EXPECT_FALSE(c["verdict"].get<std::string>().empty());
  double sum = 0;
  for (const auto& o : c["contributions"]) sum += o["share_of_wall"].get<double>();
  EXPECT_NEAR(sum, c["wall_change"].get<double>(), 1e-9) << c.dump();
  std::set<std::string> sides;
  for (const auto& row : j["results"]) sides.insert(row["build"].get<std::string>());
  EXPECT_EQ(sides, (std::set<std::string>{"defaults", "table"}));
  // What each side's runner did: the table's processes ran with --table and applied its entries.
  auto store = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
  auto s = store->prepare(
      "SELECT c.measure_json, p.runner_json FROM processes p JOIN cells c USING (cell_key) "
      "WHERE p.status = 'ok'");
  int with_table = 0, without = 0;
  while (s.step()) {
    const auto measure = nlohmann::json::parse(s.text(0));
    const auto runner = nlohmann::json::parse(s.text(1));
    if (measure.contains("table_sha256")) {
      ++with_table;
      EXPECT_FALSE(runner["params"].value("tuned_linears", nlohmann::json::object()).empty())
          << runner["params"].dump();
    } else {
      ++without;
      EXPECT_FALSE(runner["params"].contains("tuned_linears")) << runner["params"].dump();
    }
  }
  EXPECT_GE(with_table, 3);
  EXPECT_GE(without, 3);
}

TEST_F(ModelCli, BadTableComparisonsWriteNothing) {
  const std::string model = std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml";
  const auto missing = k3tune({"model", "--model", model, "--pp", "", "--tg", "2", "--table",
                               (dir_ / "none.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.json': no such file"), std::string::npos) << missing.err;
  const std::string table = (dir_ / "T.json").string();
  std::ofstream(table) << "{}";
  const auto both = k3tune({"model", "--model", model, "--pp", "", "--tg", "2", "--table", table,
                            "--baseline-runner", K3BENCH_PATH});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("one comparison at a time"), std::string::npos) << both.err;
  ::setenv("K3_TUNING_TABLE", table.c_str(), 1);
  const auto env = k3tune({"model", "--model", model, "--pp", "", "--tg", "2", "--table", table});
  ::unsetenv("K3_TUNING_TABLE");
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_NE(env.err.find("K3_TUNING_TABLE"), std::string::npos) << env.err;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(ModelCli, BadModelWritesNothing) {
  const auto r = k3tune({"model", "--model", "gpt-17"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown model 'gpt-17'"), std::string::npos) << r.err;
  const auto lengths = k3tune({"model", "--model", "qwen3-0.6b", "--pp", "64,x"});
  EXPECT_EQ(lengths.exit_code, 2);
  EXPECT_NE(lengths.err.find("--pp: 'x' is not a token count"), std::string::npos) << lengths.err;
  const auto trace =
      k3tune({"model", "--model", std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml",
              "--pp", "8", "--tg", "", "--trace", "/nonexistent/dir/t.json"});
  EXPECT_EQ(trace.exit_code, 2);
  EXPECT_NE(trace.err.find("--trace /nonexistent/dir/t.json: no directory /nonexistent/dir"),
            std::string::npos)
      << trace.err;
  EXPECT_FALSE(fs::exists(db()));
}

// Published figures are printed apart from ours, labelled as another machine's.
TEST(ModelTable, PublishedFiguresAreLabelledAndApart) {
  k3bench::ModelOutcome o;
  o.config =
      k3model::load_model_config(std::string(K3TUNE_ROOT) + "/configs/models/qwen3-0.6b.toml");
  for (const auto& f :
       k3bench::load_published(std::string(K3TUNE_ROOT) + "/configs/published/k3.toml"))
    if (f.model == o.config.id) o.published.push_back(f);
  k3bench::ModelRow row;
  row.test = "pp512";
  row.tokens = 512;
  row.ok = true;
  row.tps = 12.5;
  row.path = "generic";
  o.rows.push_back(row);
  const std::string md = k3bench::model_markdown(o, "local");
  const auto ours = md.find("| Qwen3-0.6B | 0.35 GiB | cpu generic | 0 | pp512 | 12.50 ± 0.00 |");
  const auto label = md.find("NOT measured by k3tune");
  const auto theirs = md.find("| Qwen3-0.6B | pp512 | MNN | HQQ W4B64 asym | 381.24 |");
  EXPECT_NE(ours, std::string::npos) << md;
  EXPECT_NE(label, std::string::npos) << md;
  EXPECT_NE(theirs, std::string::npos) << md;
  EXPECT_LT(ours, label);
  EXPECT_LT(label, theirs);
  const auto j = k3bench::model_json(o);
  EXPECT_EQ(j["published"][0]["measured_by"], "another party, on another machine (not k3tune)");
}

}  // namespace
