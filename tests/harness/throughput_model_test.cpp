// The modelled K3 tokens/s of `k3tune count --model` (harness/host/bench/throughput_model.h): the
// repository's facts load with a source each, the bounds follow the formula on hand-computed
// figures, and a fact without a source, an unknown key or a non-positive value is refused with
// its file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/host/bench/throughput_model.h"
#include "harness/host/bench/user_error.h"

namespace {

namespace fs = std::filesystem;

std::string write(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(p) << text;
  return p.string();
}

const char* kFacts = R"([throughput_model]
clock_ghz = 2.0
clock_ghz_source = "a"
cores = 4
cores_source = "b"
parallel_efficiency = 0.5
parallel_efficiency_source = "c"
scalar_ipc = 2.0
scalar_ipc_source = "d"
vector_cpi = 4.0
vector_cpi_source = "e"
ime2_cpi = 1.0
ime2_cpi_source = "f"
bandwidth_gbs = 10.0
bandwidth_gbs_source = "g"
)";

TEST(ThroughputModel, TheBoardFileHasEveryFactWithItsSource) {
  const auto f =
      k3bench::load_throughput_facts(std::string(K3TUNE_ROOT) + "/configs/boards/k3.toml");
  ASSERT_EQ(f.facts.size(), 7u);
  for (const auto& fact : f.facts) EXPECT_GT(fact.source.size(), 10u) << fact.name;
  EXPECT_EQ(f.cores, 8);
  EXPECT_GT(f.clock_ghz, 1.0);
}

TEST(ThroughputModel, BoundsFollowTheFormula) {
  const auto f = k3bench::load_throughput_facts(write("facts", kFacts));
  // 1000 scalar / 2 + 100 vector * 4 + 50 ime2 * 1 = 950 cycles; 2e9 * 4 * 0.5 / 950 tokens/s.
  const auto e = k3bench::estimate_throughput(f, {1000, 100, 50, 1e6});
  EXPECT_DOUBLE_EQ(e.cycles_per_token, 950);
  EXPECT_DOUBLE_EQ(e.compute_tokens_per_s, 4e9 / 950);
  EXPECT_DOUBLE_EQ(e.bandwidth_tokens_per_s, 1e4);  // 10 GB/s over 1 MB
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 1e4);
  EXPECT_EQ(e.bound, "bandwidth");
  const auto c = k3bench::estimate_throughput(f, {1000, 100, 50, 1e3});
  EXPECT_EQ(c.bound, "compute");
  EXPECT_DOUBLE_EQ(c.tokens_per_s, 4e9 / 950);
}

TEST(ThroughputModel, RefusesFactsWithoutSourcesOrValues) {
  auto error = [](const std::string& text) {
    const std::string file = write("bad", text);
    try {
      k3bench::load_throughput_facts(file);
    } catch (const k3bench::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string no_source = kFacts;
  no_source.erase(no_source.find("cores_source = \"b\"\n"), 19);
  EXPECT_NE(error(no_source).find(":4: throughput_model.cores_source: every fact names its source"),
            std::string::npos)
      << error(no_source);
  EXPECT_NE(error(std::string(kFacts) + "turbo = 1\n").find("throughput_model.turbo: unknown key"),
            std::string::npos);
  std::string zero = kFacts;
  zero.replace(zero.find("cores = 4"), 9, "cores = 0");
  EXPECT_NE(error(zero).find(":4: throughput_model.cores: expected a positive number"),
            std::string::npos)
      << error(zero);
  EXPECT_NE(error("[board]\nname = \"x\"\n").find("throughput_model: missing table"),
            std::string::npos);
}

}  // namespace
