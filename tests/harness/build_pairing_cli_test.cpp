// bench --baseline-runner between two real builds: inside one process when the baseline's kernel
// plugin lies beside its runner (the runner under test loads it: k3bench --build-b), in separate
// processes of the same rounds otherwise, and the verdict says which and why. Plumbing and
// stored structure only: whether the paired design finds a planted slowdown is the selfcheck's
// (selfcheck stats --build-pair) and the synthetic test's (BuildPairingSweep.*).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness_cli_fixture.h"

namespace fs = std::filesystem;

namespace {

using k3test::HarnessCli;

// This tree's plugin ("" in a tree built without one: the sanitizer trees).
std::string own_plugin() {
  const fs::path p = fs::path(K3BENCH_PATH).parent_path() / "libk3bench_plugin.so";
  return fs::exists(p) ? p.string() : "";
}

std::vector<std::string> ab_args(const fs::path& baseline) {
  return {"--json",
          "bench",
          "--op",
          "rmsnorm",
          "--shape",
          "rows=1,dim=256",
          "--shape",
          "rows=4,dim=256",
          "-P",
          "3",
          "-R",
          "2",
          "--min-time",
          "0.002",
          "--no-remeasure",
          "--baseline-runner",
          baseline.string()};
}

TEST_F(HarnessCli, BaselineWithItsPluginIsMeasuredInsideEachProcess) {
  const fs::path dir = dir_ / "baseline-tree";
  fs::create_directories(dir);
  k3test::copy_as_other_build(dir / "k3bench");
  const std::string plugin = own_plugin();
  if (!plugin.empty()) fs::copy_file(plugin, dir / "libk3bench_plugin.so");
  const auto r = k3tune(ab_args(dir / "k3bench"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  if (plugin.empty()) {
    // A runner that cannot load a plugin keeps the rounds, and says why.
    EXPECT_EQ(doc["build_pairing"]["design"], "rounds") << doc["build_pairing"];
    EXPECT_NE(doc["build_pairing"]["why"].get<std::string>().find("no libk3bench_plugin.so"),
              std::string::npos)
        << doc["build_pairing"];
    return;
  }
  ASSERT_EQ(doc["build_pairing"]["design"], "within-process") << doc["build_pairing"];
  // Two cells x two builds x three processes, but only six runner processes: each stored pair
  // shares its round and its place in the run's order, and each side keeps -R repetitions.
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE status = 'ok'"), 12);
  EXPECT_EQ(count("SELECT count(DISTINCT order_index) FROM processes"), 6);
  EXPECT_EQ(count("SELECT count(*) FROM samples"), 12 * 2);
  EXPECT_EQ(count("SELECT count(*) FROM processes p JOIN cells c USING (cell_key) JOIN builds b "
                  "USING (build_hash) WHERE b.binary_path LIKE '%baseline-tree/k3bench' AND "
                  "json_extract(p.runner_json, '$.within_process.side') = 'B'"),
            6);
  // Both sides were checked against the reference in the first process of each cell, each with
  // its own build's dispatch.
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE json_extract(runner_json, "
                  "'$.accuracy.pass') = 1 AND json_extract(runner_json, '$.dispatch.path') <> ''"),
            4);
  ASSERT_EQ(doc["comparisons"].size(), 2u);
  // The stored run says how it measured, and the report's verdict says so.
  const auto rep = k3tune({"--json", "report", doc["run_uuid"].get<std::string>(), "--no-html",
                           "--no-keep", "-o", (dir_ / "report").string()});
  ASSERT_TRUE(rep.code == 0 || rep.code == 4) << rep.err;  // 4: a (false) regression
  const auto verdict = nlohmann::json::parse(rep.out)["verdict"];
  EXPECT_EQ(verdict["method"], "paired-within-process") << verdict["method"];
  EXPECT_NE(verdict["design"].get<std::string>().find("k3bench --build-b"), std::string::npos);
}

TEST_F(HarnessCli, BaselineWithoutAPluginOrAskedForRoundsKeepsSeparateProcesses) {
  k3test::copy_as_other_build(dir_ / "k3bench-baseline");
  const auto bare = k3tune(ab_args(dir_ / "k3bench-baseline"));
  ASSERT_EQ(bare.code, 0) << bare.err;
  const auto doc = nlohmann::json::parse(bare.out);
  EXPECT_EQ(doc["build_pairing"]["design"], "rounds");
  EXPECT_NE(doc["build_pairing"]["why"].get<std::string>().find("no libk3bench_plugin.so beside"),
            std::string::npos)
      << doc["build_pairing"];
  EXPECT_EQ(count("SELECT count(DISTINCT order_index) FROM processes"), 12);
  // Asked for: rounds even where the plugin would load.
  const fs::path dir = dir_ / "baseline-tree";
  fs::create_directories(dir);
  k3test::copy_as_other_build(dir / "k3bench");
  if (!own_plugin().empty()) fs::copy_file(own_plugin(), dir / "libk3bench_plugin.so");
  auto args = ab_args(dir / "k3bench");
  args.insert(args.end(), {"--build-pairing", "rounds"});
  const auto asked = k3tune(args);
  ASSERT_EQ(asked.code, 0) << asked.err;
  EXPECT_EQ(nlohmann::json::parse(asked.out)["build_pairing"]["why"], "--build-pairing rounds");
  // A plugin that is not the baseline runner's build (the planted one here) is a reason for
  // rounds, said in one line.
  if (!own_plugin().empty()) {
    const fs::path planted = fs::path(own_plugin()).parent_path() / "libk3bench_plugin_planted.so";
    fs::copy_file(planted, dir / "libk3bench_plugin.so", fs::copy_options::overwrite_existing);
    const auto other = k3tune(ab_args(dir / "k3bench"));
    ASSERT_EQ(other.code, 0) << other.err;
    const auto pairing = nlohmann::json::parse(other.out)["build_pairing"];
    EXPECT_EQ(pairing["design"], "rounds");
    EXPECT_NE(pairing["why"].get<std::string>().find("planted slowdown"), std::string::npos)
        << pairing;
  }
  // Bad input: one line, exit 2.
  const auto bad =
      k3tune({"bench", "--op", "rmsnorm", "--shape", "rows=1,dim=256", "--baseline-runner",
              (dir / "k3bench").string(), "--build-pairing", "sometimes"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--build-pairing"), std::string::npos) << bad.err;
}

}  // namespace
