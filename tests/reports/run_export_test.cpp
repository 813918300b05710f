// `k3tune db export --format gbench|bmf`: runs in the formats other tools read, checked with the
// readers themselves. Two runs of runners whose times are planted (tests/support/
// synthetic-k3bench.sh: 100 us per call and 150 us per call, +-0.5%), so the direction and size of
// the difference are known whatever else the machine runs:
//   - Google Benchmark's own compare.py (Debian's libbenchmark-tools, with its U test from
//     python3-scipy) reads both exports and names every cell with a +50% (and, the other way
//     round, a -33%) change; the documents carry what Google Benchmark's JSON reporter writes;
//   - the Bencher Metric Format export conforms to configs/schema/bmf.schema.json (Bencher's
//     documented schema), which refuses broken documents; its latency is the run's mean with its
//     95% interval as the database holds them.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "harness/host/stats/stats.h"
#include "harness/host/store/result_reads.h"
#include "harness/host/targets/process.h"
#include "report_test_support.h"
#include "reports/report_error.h"
#include "reports/run_export.h"
#include "tests/support/bench_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::reports {
namespace {

const std::string kTwoCells =
    measure_table(3, 3, "0.01") + decode_case("[{ n = 256, k = 512 }, { n = 512, k = 512 }]");

const std::vector<std::string> kNames = {"linear_decode/k=512,n=256", "linear_decode/k=512,n=512"};

class RunExport : public ReportTest {
 protected:
  json export_json(const std::string& format, const std::string& run) const {
    const fs::path out = dir_ / (format + "-" + run + ".json");
    const auto r = k3tune({"db", "export", "--format", format, "--run", run, "-o", out.string()});
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(read(out));
  }
  // compare.py's rows: benchmark name -> its "Time" column (relative change, or the p-value).
  std::map<std::string, std::vector<double>> compare(const std::string& a,
                                                     const std::string& b) const {
    const auto r = k3targets::run_process(
        {"/usr/bin/python3", "/usr/share/benchmark/compare.py", "--no-color", "benchmarks",
         (dir_ / ("gbench-" + a + ".json")).string(), (dir_ / ("gbench-" + b + ".json")).string()},
        k3targets::ProcessOptions::with_timeout(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::map<std::string, std::vector<double>> rows;
    std::istringstream in(r.out);
    std::string name, change;
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      if (words >> name >> change && (change[0] == '+' || change[0] == '-' || isdigit(change[0])))
        rows[name].push_back(std::stod(change));
    }
    return rows;
  }
  std::string base_, cand_;
};

TEST_F(RunExport, CompareDotPyReadsTwoExportedRunsAndNamesEachCellsPlantedSlowdown) {
  base_ = bench(kTwoCells);
  use_runner(slower_runner("k3bench-slower", 1.5));
  cand_ = bench(kTwoCells);
  const json a = export_json("gbench", base_);
  export_json("gbench", cand_);

  // The document as Google Benchmark's JSON reporter writes it.
  const json runs =
      json::parse(k3tune({"db", "export", "--table", "runs", "--format", "json"}).out);
  ASSERT_EQ(runs.size(), 2u);
  const auto& ctx = a.at("context");
  EXPECT_EQ(ctx.at("host_name"), runs[0].at("host"));
  EXPECT_GT(ctx.at("num_cpus").get<int>(), 0);
  EXPECT_EQ(ctx.at("library_build_type"), "release");
  EXPECT_EQ(ctx.at("k3tune").at("build_hash"), runs[0].at("build_hash"));
  EXPECT_EQ(ctx.at("k3tune").at("target"), "local");
  EXPECT_EQ(ctx.at("k3tune").at("run_uuid"), base_);
  for (const auto& name : kNames) {
    std::vector<double> real;
    std::map<std::string, json> aggregates;
    for (const auto& b : a.at("benchmarks")) {
      if (b.at("run_name") != name) continue;
      EXPECT_EQ(b.at("time_unit"), "ns");
      if (b.at("run_type") == "iteration") {
        EXPECT_EQ(b.at("name"), name);
        EXPECT_EQ(b.at("repetition_index").get<std::size_t>(), real.size());
        EXPECT_EQ(b.at("repetitions"), 9);  // 3 processes x 3 repetitions
        EXPECT_GT(b.at("iterations").get<long>(), 0);
        EXPECT_NEAR(b.at("real_time").get<double>(), kCallNs, kCallNs * 0.006);
        real.push_back(b.at("real_time"));
      } else {
        EXPECT_EQ(b.at("run_type"), "aggregate");
        EXPECT_EQ(b.at("name"), name + "_" + b.at("aggregate_name").get<std::string>());
        aggregates[b.at("aggregate_name")] = b;
      }
    }
    ASSERT_EQ(real.size(), 9u) << name;
    ASSERT_EQ(aggregates.size(), 4u) << name;
    EXPECT_DOUBLE_EQ(aggregates["mean"].at("real_time"), k3stats::mean(real));
    EXPECT_DOUBLE_EQ(aggregates["median"].at("real_time"), k3stats::median(real));
    EXPECT_DOUBLE_EQ(aggregates["stddev"].at("real_time"), k3stats::sample_stddev(real));
    EXPECT_EQ(aggregates["cv"].at("aggregate_unit"), "percentage");
    EXPECT_EQ(aggregates["mean"].at("iterations"), 9);
  }

  // compare.py: every cell named, every repetition +50% slower, significant by its U test.
  const auto slower = compare(base_, cand_);
  for (const auto& name : kNames) {
    ASSERT_EQ(slower.count(name), 1u) << name;
    ASSERT_EQ(slower.at(name).size(), 9u);
    for (double change : slower.at(name)) EXPECT_NEAR(change, 0.5, 0.02) << name;
    EXPECT_NEAR(slower.at(name + "_mean").at(0), 0.5, 0.01);
    EXPECT_LT(slower.at(name + "_pvalue").at(0), 0.05);
  }
  EXPECT_NEAR(slower.at("OVERALL_GEOMEAN").at(0), 0.5, 0.01);
  // And the other way round: faster by a third.
  const auto faster = compare(cand_, base_);
  for (const auto& name : kNames) EXPECT_NEAR(faster.at(name + "_mean").at(0), -1.0 / 3, 0.01);
}

TEST_F(RunExport, BencherMetricFormatConformsToTheSchemaWithTheRunsIntervals) {
  base_ = bench(kTwoCells);
  const json bmf = export_json("bmf", "latest");
  const std::string schema = std::string(K3TUNE_ROOT) + "/configs/schema/bmf.schema.json";
  EXPECT_TRUE(k3reports::schema_problems(bmf, schema).empty());
  // The run's aggregates as the store holds them (the figures every report prints).
  const auto db = open();
  const auto cells = k3store::run_cells(*db, base_);
  ASSERT_EQ(cells.size(), 2u);
  ASSERT_EQ(bmf.size(), 2u);
  for (const auto& row : cells) {
    const std::string name =
        "linear_decode/k=512,n=" + json::parse(row.cell.shape_json).at("n").dump();
    ASSERT_TRUE(bmf.contains(name)) << bmf.dump(2);
    ASSERT_TRUE(row.aggregate && row.aggregate->mean_ns && row.aggregate->ci_low_ns);
    const json& latency = bmf[name].at("latency");
    EXPECT_EQ(latency.at("value").get<double>(), *row.aggregate->mean_ns);
    EXPECT_EQ(latency.at("lower_value").get<double>(), *row.aggregate->ci_low_ns);
    EXPECT_EQ(latency.at("upper_value").get<double>(), *row.aggregate->ci_high_ns);
    EXPECT_LT(latency.at("lower_value").get<double>(), latency.at("value").get<double>());
    // A call's operations per second: the same figures through ops / time (interval swapped).
    const json& tp = bmf[name].at("throughput");
    const double ops = tp.at("value").get<double>() * latency.at("value").get<double>();
    EXPECT_NEAR(tp.at("lower_value").get<double>() * latency.at("upper_value").get<double>(), ops,
                ops * 1e-9);
    EXPECT_GT(bmf[name].at("bytes").at("value").get<double>(), 0);
  }
  // The schema refuses what Bencher would refuse.
  EXPECT_FALSE(
      k3reports::schema_problems(json::parse(R"({"x": {"latency": {"lower_value": 1}}})"), schema)
          .empty());
  EXPECT_FALSE(
      k3reports::schema_problems(json::parse(R"({"x": {"latency": {"value": "fast"}}})"), schema)
          .empty());
  EXPECT_FALSE(k3reports::schema_problems(json::parse(R"({"x": [1, 2]})"), schema).empty());
}

TEST_F(RunExport, BadInputIsOneLineAndWritesNothing) {
  base_ = bench(kTwoCells);
  const fs::path out = dir_ / "x.json";
  const std::vector<std::vector<std::string>> cases = {
      {"db", "export", "--format", "gbench", "--run", "no-such-run", "-o", out.string()},
      {"db", "export", "--format", "yaml", "--run", base_, "-o", out.string()},
      {"db", "export", "--format", "bmf", "--run", base_, "-o",
       (dir_ / "no/such/dir/x.json").string()},
      {"db", "export", "--format", "csv", "--run", base_, "-o", out.string()},
      {"db", "export", "--format", "gbench", "--table", "runs", "-o", out.string()}};
  const std::vector<std::string> names = {"no-such-run", "yaml", "no/such/dir", "--run", "--table"};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto r = k3tune(cases[i]);
    EXPECT_EQ(r.code, 2) << cases[i][3];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(names[i]), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
}

// A `k3tune count` run's figures are instructions per call (PerCall::instructions, the run's
// settings.metric): never a time in gbench, the "instructions" measure in BMF.
TEST_F(RunExport, InstructionCountsAreNeverTimes) {
  k3verdict::RunData run;
  run.run_uuid = "count-run";
  run.settings = {{"metric", "instructions per call"}};
  run.per_call = k3verdict::PerCall::of(run.settings);
  k3verdict::CellFigures cell;
  cell.op = "linear_decode";
  cell.label = "linear_decode k=64,n=128";
  cell.ok = true;
  cell.mean_ns = 123456;  // instructions per call, stored where the times go
  run.cells.push_back(cell);
  const auto db = open();
  try {
    k3reports::gbench_json(*db, run);
    ADD_FAILURE() << "a count run exported as times";
  } catch (const k3reports::ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("--format bmf"), std::string::npos) << e.what();
  }
  const json bmf = k3reports::bmf_json(run);
  EXPECT_EQ(bmf.dump(), R"({"linear_decode/k=64,n=128":{"instructions":{"value":123456.0}}})");
  EXPECT_TRUE(
      k3reports::schema_problems(bmf, std::string(K3TUNE_ROOT) + "/configs/schema/bmf.schema.json")
          .empty());
}

// A whole-model decode cell (`k3tune model`: 16 decode steps per call): its tokens per second
// with the run's interval of the time mapped through tokens / time, the ends swapped.
TEST_F(RunExport, AModelCellsTokensPerSecondCarryTheTimesInterval) {
  k3verdict::RunData run;
  k3verdict::CellFigures cell;
  cell.op = "model_tg";
  cell.shape = {{"hidden", 1024}, {"pp", 1}, {"tg", 16}};
  cell.label = "model_tg tg=16";
  cell.ok = true;
  cell.mean_ns = 8e6;  // 8 ms per call: 2000 tokens/s
  cell.ci_low_ns = 7.5e6;
  cell.ci_high_ns = 8.5e6;
  run.cells.push_back(cell);
  const json m = k3reports::bmf_json(run).at("model_tg/tg=16");
  EXPECT_DOUBLE_EQ(m.at("tokens_per_s").at("value").get<double>(), 16 / 8e-3);
  EXPECT_DOUBLE_EQ(m.at("tokens_per_s").at("lower_value").get<double>(), 16 / 8.5e-3);
  EXPECT_DOUBLE_EQ(m.at("tokens_per_s").at("upper_value").get<double>(), 16 / 7.5e-3);
  EXPECT_DOUBLE_EQ(m.at("latency").at("value").get<double>(), 8e6);
}

}  // namespace
}  // namespace k3test::reports
