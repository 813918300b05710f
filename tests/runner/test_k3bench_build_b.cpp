// k3bench --build-b: a second build's kernel plugin loaded beside this build, one process
// alternating the two builds' cases. Checked here: both sides run and are checked against the
// reference, the second build's identity and dispatch are reported, and every way of failing to
// load one is a single line with exit 2. Speeds are not asserted (the selfcheck measures the
// paired design's rates); only the plumbing is.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

#ifdef K3BENCH_PLUGIN

using k3test::run_k3bench;
using nlohmann::json;

namespace {

const std::string kDecode =
    "--op linear_decode --shape n=96,k=256 --params workers=2,copies=2 --warmup 1 "
    "--iterations 2 --json";

int stderr_lines(const std::string& err) {
  return static_cast<int>(std::count(err.begin(), err.end(), '\n'));
}

TEST(K3benchBuildB, TwoBuildsAlternateInsideOneProcessAndBothAreChecked) {
  const auto r = run_k3bench(kDecode + " --reps 6 --check full --build-b " + K3BENCH_PLUGIN);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  std::string order;
  for (const auto& rep : j["repetitions"]) order += rep.at("side").get<std::string>();
  EXPECT_EQ(order, "ABBAAB");
  EXPECT_TRUE(j.contains("summary_b"));
  // Both builds' outputs were compared with the float64 reference, and the same source on the
  // same path gives the same bits.
  EXPECT_TRUE(j["accuracy"]["pass"]);
  EXPECT_TRUE(j["accuracy_b"]["pass"]);
  EXPECT_EQ(j["accuracy_b"]["checked"], j["accuracy"]["checked"]);
  ASSERT_TRUE(j["accuracy_b"]["output_checksum"].is_object());
  EXPECT_EQ(j["accuracy_b"]["output_checksum"], j["accuracy"]["output_checksum"]);
  // B ran the parameters A was given, on the path its own build chose.
  EXPECT_EQ(j["params_b"]["workers"], j["params"]["workers"]);
  EXPECT_EQ(j["params_b"]["copies"], 2);
  EXPECT_EQ(j["traffic_b"], j["traffic"]);
  const json& b = j["build_b"];
  EXPECT_EQ(b["plugin"], K3BENCH_PLUGIN);
  EXPECT_EQ(b["interface_version"], 1);
  EXPECT_EQ(b["path"], j["path"]);
  EXPECT_EQ(b["dispatch"]["path"], j["dispatch"]["path"]);
  EXPECT_EQ(b["build"]["runner"]["source_revision"], j["environment"]["runner"]["source_revision"]);
  EXPECT_EQ(b["build"]["build"]["planted_slowdown_percent"], 0);
}

TEST(K3benchBuildB, TheSecondBuildTakesParamsBWhenGiven) {
  const auto r =
      run_k3bench(kDecode + " --reps 2 --params-b workers=1,copies=1 --build-b " + K3BENCH_PLUGIN);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["params"]["workers"], 2);
  EXPECT_EQ(j["params_b"]["workers"], 1);
  EXPECT_EQ(j["params_b"]["copies"], 1);
  EXPECT_TRUE(j["accuracy_b"]["pass"]);
}

// The planted build is the same source with a slowdown compiled in: it says so, and its outputs
// are this build's bit for bit (the delay is outside the kernels).
TEST(K3benchBuildB, ThePlantedBuildNamesItsSlowdownAndKeepsTheOutputs) {
  const auto r = run_k3bench(kDecode + " --reps 2 --build-b " + K3BENCH_PLUGIN_PLANTED);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_GT(j["build_b"]["build"]["build"]["planted_slowdown_percent"].get<int>(), 0);
  EXPECT_EQ(j["accuracy_b"]["output_checksum"], j["accuracy"]["output_checksum"]);
}

// The host's probe before a paired A/B: the facts document names the build the plugin brings,
// which for this tree's plugin is this runner's own.
TEST(K3benchBuildB, FactsNameThePluginsBuild) {
  const auto r = run_k3bench(std::string("--facts --json --build-b ") + K3BENCH_PLUGIN);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["build_b"]["plugin"], K3BENCH_PLUGIN);
  EXPECT_EQ(j["build_b"]["interface_version"], 1);
  EXPECT_EQ(j["build_b"]["build"]["runner"], j["environment"]["runner"]);
  EXPECT_EQ(j["build_b"]["build"]["build"]["flags"], j["environment"]["build"]["flags"]);
  EXPECT_EQ(j["build_b"]["build"]["build"]["planted_slowdown_percent"], 0);
  const auto planted =
      run_k3bench(std::string("--facts --json --build-b ") + K3BENCH_PLUGIN_PLANTED);
  ASSERT_EQ(planted.exit_code, 0) << planted.err;
  EXPECT_GT(json::parse(planted.out)["build_b"]["build"]["build"]["planted_slowdown_percent"], 0);
}

struct Refusal {
  std::string args, line;
};

TEST(K3benchBuildB, APluginThatCannotServeIsRefusedInOneLine) {
  const std::string decode = "--op linear_decode --shape n=96,k=256 --reps 1 --build-b ";
  const std::vector<Refusal> refusals = {
      {decode + "/nonexistent/libk3bench_plugin.so",
       "k3bench: --build-b: /nonexistent/libk3bench_plugin.so: not loadable as a kernel plugin: "},
      {decode + K3_FAKE_SPINE_TCM,
       std::string("k3bench: --build-b: ") + K3_FAKE_SPINE_TCM +
           ": not a kernel plugin (no k3bench_plugin_interface symbol)"},
      {decode + K3BENCH_PLUGIN_OTHER_INTERFACE, std::string("k3bench: --build-b: ") +
                                                    K3BENCH_PLUGIN_OTHER_INTERFACE +
                                                    ": kernel plugin interface version 2 (size "},
      // The second build validates its own case, in k3bench's words.
      {decode + K3BENCH_PLUGIN + " --params-b tile=3",
       "k3bench: --build-b: --params: unknown key 'tile'"},
      {"--model qwen3-0.6b --tg 1 --pp 0 --build-b " + std::string(K3BENCH_PLUGIN),
       "k3bench: --build-b: one op's cases only, not with --model"},
      // The host's probe refuses as a measurement would.
      {"--facts --json --build-b " + std::string(K3BENCH_PLUGIN_OTHER_INTERFACE),
       std::string("k3bench: --build-b: ") + K3BENCH_PLUGIN_OTHER_INTERFACE +
           ": kernel plugin interface version 2 (size "},
  };
  for (const Refusal& f : refusals) {
    SCOPED_TRACE(f.args);
    const auto r = run_k3bench(f.args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(stderr_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind(f.line, 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace

#endif  // K3BENCH_PLUGIN
