// The exact byte verdict of two instruction-count runs, through the store: the runner's own byte
// accounting (traffic.by_source.streamed of the counted process) is kept with each count, and a
// candidate that streams more bytes per call is a regression with its delta, whatever its
// instruction count did -- here a planted second read of one weight matrix, at equal instructions.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/host/bench/instruction_count.h"
#include "harness/host/bench/model_count.h"
#include "harness/host/store/database.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/run_data.h"
#include "harness/host/verdict/verdict.h"
#include "reports/markdown.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

// A counted decode case as k3tune count stores it: `weights` bytes of packed codes, their metadata
// and the activations, per call, from the runner's traffic object.
k3bench::CountResult counted(const std::string& runner, double instructions, double weights) {
  k3bench::CountResult r;
  r.c.runner = runner;
  r.c.path = "rvv";
  r.c.op = "linear_decode";
  r.c.shape = "n=2048,k=2048";
  r.c.vlen = 1024;
  r.path_taken = "rvv";
  r.instructions = instructions;
  r.other = instructions;
  r.jitter = 50;
  const double metadata = 2048.0 * 2048 / 64 * 4;  // an fp16 (beta, scale) pair per block of 64
  r.runner_json = {
      {"traffic",
       {{"weight_bytes", weights + metadata},
        {"activation_bytes", 2048 * 4.0 * 2},
        {"ops", 2.0 * 2048 * 2048},
        {"by_source",
         {{"weights", weights},
          {"metadata", metadata},
          {"kv_read", 0.0},
          {"kv_write", 0.0},
          {"state", 0.0},
          {"activations", 2048 * 4.0 * 2},
          {"streamed", weights + metadata},
          {"total", weights + metadata + 2048 * 4.0 * 2}}}}}};
  return r;
}

class ExactBytes : public ::testing::Test {
 protected:
  // A runner file of its own content: store_counts names the build by its SHA-256.
  std::string runner(const std::string& name) const {
    const fs::path p = dir_ / name;
    std::ofstream(p) << name;
    return p.string();
  }
  k3test::ScratchDir dir_{"k3_exact_bytes_", k3test::ScratchDir::Name::kPerProcess};
};

TEST_F(ExactBytes, AnExtraWeightReadIsARegressionWithItsDeltaAtEqualInstructions) {
  auto db = k3store::open_database((dir_ / "r.db").string(), k3store::OpenMode::kCreateOrUpdate);
  const double codes = 2048.0 * 2048 / 2;  // 4-bit codes
  const std::string base =
      k3bench::store_counts(*db, "k3tune count", {counted(runner("good"), 1.0e6, codes)});
  const std::string same =
      k3bench::store_counts(*db, "k3tune count", {counted(runner("same"), 1.0e6 + 20, codes)});
  // The planted change: the weights read twice (the instruction count unchanged: a second pass
  // of the same loads would add instructions too, which is exactly why bytes are judged apart).
  const std::string twice =
      k3bench::store_counts(*db, "k3tune count", {counted(runner("twice"), 1.0e6, 2 * codes)});
  const k3verdict::RegressionConfig rules;
  const auto base_run = k3verdict::load_run(*db, base);

  const auto clean = k3verdict::compare_runs(base_run, k3verdict::load_run(*db, same), rules, {});
  ASSERT_EQ(clean.method, "exact-counts");
  ASSERT_EQ(clean.cells.size(), 1u);
  ASSERT_TRUE(clean.cells[0].bytes.has_value());
  EXPECT_EQ(clean.cells[0].bytes->delta(), 0);
  EXPECT_EQ(clean.regressions(), 0);

  const auto flagged = k3verdict::compare_runs(base_run, k3verdict::load_run(*db, twice), rules, {});
  ASSERT_EQ(flagged.cells.size(), 1u);
  const auto& cell = flagged.cells[0];
  EXPECT_EQ(cell.timing.outcome, k3verdict::Outcome::kUnchanged);  // instructions identical
  ASSERT_TRUE(cell.bytes.has_value());
  EXPECT_EQ(cell.bytes->delta(), codes);
  EXPECT_TRUE(cell.bytes_regression());
  EXPECT_EQ(flagged.regressions(), 1);
  EXPECT_EQ(flagged.bytes_regressions(), 1);
  const auto j = k3verdict::to_json(flagged);
  EXPECT_EQ(j["cells"][0]["streamed_bytes"]["delta"], codes);
  EXPECT_EQ(j["counts"]["bytes_regressions"], 1);
  // The report's (and compare's) verdict section shows it with its delta.
  const std::string md = k3reports::verdict_markdown(flagged);
  EXPECT_NE(md.find("### Bytes streamed per call"), std::string::npos) << md;
  EXPECT_NE(md.find("+2097152"), std::string::npos) << md;
  EXPECT_NE(md.find("MORE BYTES"), std::string::npos) << md;
}

// A whole-model count (k3tune count --model) is judged on its bytes per token too: a decode step
// whose KV cache is read twice streams more at equal instructions, and is a regression.
TEST_F(ExactBytes, AWholeModelDecodeStepThatReadsMoreKvIsARegression) {
  auto db = k3store::open_database((dir_ / "m.db").string(), k3store::OpenMode::kCreateOrUpdate);
  auto model_count = [&](const std::string& name, double kv_read) {
    k3bench::ModelCountResult r;
    r.c = {runner(name), "rvv", "configs/models/qwen3-0.6b.toml", "qwen3-0.6b", 8, 512, 1024};
    r.path_taken = "rvv";
    r.prefill.test = "pp8";
    r.prefill.tokens = 8;
    r.prefill.other = 2.0e7;
    r.decode.test = "tg1";
    r.decode.tokens = 1;
    r.decode.other = 1.3e7;
    r.decode.bytes.weights = 2.0e8;
    r.decode.bytes.metadata = 2.0e8 / 32 * 4 / 2;
    r.decode.bytes.kv_read = kv_read;
    r.decode.bytes.activations = 1.0e5;
    r.prefill.bytes = r.decode.bytes;
    r.runner_json = nlohmann::json::object();
    return k3bench::store_counts(*db, "k3tune count", k3bench::model_count_results(r));
  };
  const double kv = 28.0 * 512 * 8 * 128 * 2 * 2;  // K and V of 28 layers, fp16, at depth 512
  const std::string base = model_count("once", kv);
  const std::string twice = model_count("twice", 2 * kv);
  const auto v = k3verdict::compare_runs(k3verdict::load_run(*db, base),
                                         k3verdict::load_run(*db, twice), {}, {});
  ASSERT_EQ(v.method, "exact-counts");
  ASSERT_EQ(v.cells.size(), 2u);  // model_prefill and model_decode
  for (const auto& cell : v.cells) {
    EXPECT_EQ(cell.timing.outcome, k3verdict::Outcome::kUnchanged) << cell.label;
    ASSERT_TRUE(cell.bytes.has_value()) << cell.label;
    // The prefill's figure is per token of its 8: the same extra KV read spread over them.
    EXPECT_DOUBLE_EQ(cell.bytes->delta(), cell.op == "model_decode" ? kv : kv / 8) << cell.label;
    EXPECT_TRUE(cell.bytes_regression()) << cell.label;
  }
  EXPECT_EQ(v.bytes_regressions(), 2);
}

}  // namespace
