// The runner's self-description and the build-variant table: `k3bench --facts --json` parsed by
// k3targets::parse_runner_facts agrees with what the same runner reports in a result and in
// --tcm-status (the readers it replaced); a broken document is refused naming its field; and
// CMakePresets.json, read by k3targets::load_build_presets, is the table CMake itself lists, with
// the variants k3tune build knows and the trees the tests and `k3tune count` use.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/host/targets/build_presets.h"
#include "harness/host/targets/process.h"
#include "harness/host/targets/runner_facts.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string run_ok(const std::vector<std::string>& argv) {
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(120));
  EXPECT_TRUE(r.ok()) << argv[0] << ": " << r.failure_reason(120) << r.err;
  return r.out;
}

std::string facts_text() {
  return run_ok({K3BENCH_PATH, "--facts", "--json"});
}

// The facts document with one change applied, as text.
std::string edited(const std::function<void(json&)>& change) {
  json doc = json::parse(facts_text());
  change(doc);
  return doc.dump();
}

std::string parse_error(const std::string& text) {
  try {
    k3targets::parse_runner_facts(text);
  } catch (const k3targets::FactsError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(RunnerFacts, TheHostRunnerDescribesItselfAsItsResultsAndTcmStatusDo) {
  const auto f = k3targets::parse_runner_facts(facts_text());
  // What a measured case reports about its environment and dispatch (the old probe).
  const json result = json::parse(
      run_ok({K3BENCH_PATH, "--op", "residual_add", "--shape", "rows=1,dim=64", "--reps", "1",
              "--warmup", "0", "--iterations", "1", "--check", "none", "--json"}));
  const json& env = result.at("environment");
  EXPECT_EQ(f.cpu_model, env.at("cpu_model").get<std::string>());
  EXPECT_EQ(f.cpus_allowed, env.at("cpus_allowed").get<std::vector<int>>());
  EXPECT_EQ(f.cpus(), static_cast<int>(env.at("cpus_allowed").size()));
  EXPECT_EQ(f.cpus_online, env.at("cpus_online").get<int>());
  EXPECT_EQ(f.vlen_bits.has_value(), env.at("vlenb").is_number());
  EXPECT_EQ(f.runner_version, env["runner"].at("version").get<std::string>());
  EXPECT_EQ(f.source_revision, env["runner"].at("source_revision").get<std::string>());
  EXPECT_EQ(f.compiler, env["build"].at("compiler").get<std::string>());
  EXPECT_EQ(f.build_type, env["build"].at("build_type").get<std::string>());
  EXPECT_EQ(f.build_flags, env["build"].at("flags").get<std::string>());
  EXPECT_EQ(f.target_arch, env["build"].at("target_arch").get<std::string>());
  EXPECT_EQ(f.path, result.at("dispatch").at("path").get<std::string>());
  EXPECT_EQ(f.path_emulated, result.at("dispatch").at("emulated").get<bool>());
  // A host build has no IME2 layer: the gate is closed and says why, as --path ime2 does.
  EXPECT_FALSE(f.ime2_open);
  const auto forced = k3targets::run_process(
      {K3BENCH_PATH, "--op", "residual_add", "--shape", "rows=1,dim=64", "--path", "ime2", "--reps",
       "1", "--iterations", "1", "--check", "none", "--json"},
      k3targets::ProcessOptions::with_timeout(120));
  EXPECT_EQ(forced.exit_code, 3);
  EXPECT_NE(forced.err.find(f.ime2_reason), std::string::npos)
      << forced.err << " / " << f.ime2_reason;
  // The TCM part is --tcm-status's document.
  const json tcm = json::parse(run_ok({K3BENCH_PATH, "--tcm-status", "--json"}));
  EXPECT_EQ(f.tcm_backend, tcm.at("backend").get<std::string>());
  EXPECT_EQ(f.tcm_reason, tcm.at("reason").get<std::string>());
  EXPECT_EQ(f.document.at("tcm"), tcm);
  if (f.tcm_backend != "off") {
    EXPECT_EQ(f.tcm_blocks, tcm["geometry"].at("blocks").get<int>());
    EXPECT_EQ(f.tcm_block_bytes, tcm["geometry"].at("block_bytes").get<long long>());
  }
}

TEST(RunnerFacts, TheReadableFormNamesTheSameFacts) {
  const auto f = k3targets::parse_runner_facts(facts_text());
  const std::string text = run_ok({K3BENCH_PATH, "--facts"});
  EXPECT_NE(text.find("cpu       " + f.cpu_model), std::string::npos) << text;
  EXPECT_NE(text.find("path      " + f.path), std::string::npos) << text;
  EXPECT_NE(text.find("ime2 gate closed: " + f.ime2_reason), std::string::npos) << text;
  EXPECT_NE(text.find("tcm       " + f.tcm_backend), std::string::npos) << text;
}

TEST(RunnerFacts, ABrokenDocumentIsRefusedNamingItsField) {
  EXPECT_EQ(parse_error(edited([](json& d) { d["environment"].erase("cpu_model"); })),
            "runner facts: no field 'environment.cpu_model'");
  EXPECT_EQ(parse_error(edited([](json& d) { d["dispatch"]["path"] = 7; })),
            "runner facts: field 'dispatch.path' has the wrong type (number)");
  EXPECT_EQ(parse_error(edited([](json& d) { d["ime2_gate"] = "open"; })),
            "runner facts: no field 'ime2_gate.open'");
  EXPECT_EQ(parse_error(edited([](json& d) { d["facts_version"] = 2; })),
            "runner facts: facts_version 2 (this k3tune reads 1): runner and k3tune are from "
            "different versions");
  EXPECT_EQ(parse_error(edited([](json& d) { d.erase("facts_version"); })),
            "runner facts: no field 'facts_version'");
  EXPECT_EQ(parse_error("k3bench: unknown option --facts").rfind("runner facts: not JSON", 0), 0u);
  // A document from a board: marchid is lower-cased, VLEN in bits.
  const auto board = k3targets::parse_runner_facts(edited([](json& d) {
    d["environment"]["marchid"] = "0x8000000058000002";
    d["environment"]["vlenb"] = 128;
    d["tcm"] = {{"requested", "auto"},
                {"reason", "vendor library"},
                {"backend", "real"},
                {"geometry", {{"blocks", 8}, {"block_bytes", 262144}}},
                {"stale_blocks", {3}}};
  }));
  EXPECT_EQ(board.marchid, "0x8000000058000002");
  EXPECT_EQ(board.vlen_bits, 1024);
  EXPECT_EQ(board.tcm_blocks, 8);
  EXPECT_EQ(board.tcm_block_bytes, 262144);
  EXPECT_EQ(board.tcm_stale_blocks, std::vector<int>{3});
}

TEST(BuildPresets, CMakeListsTheSameVisiblePresetsAsTheReader) {
  const auto listed =
      run_ok({"sh", "-c", "cd '" + std::string(K3TUNE_ROOT) + "' && cmake --list-presets"});
  const auto presets = k3targets::load_build_presets(K3TUNE_ROOT);
  std::size_t quoted = 0;
  for (std::size_t at = listed.find('"'); at != std::string::npos; at = listed.find('"', at + 1))
    ++quoted;
  EXPECT_EQ(quoted, 2 * presets.size()) << listed;  // CMake quotes each visible preset's name
  for (const auto& p : presets)
    EXPECT_NE(listed.find("\"" + p.name + "\""), std::string::npos) << p.name << "\n" << listed;
}

TEST(BuildPresets, TheRunnerVariantsAndTheTestTreesAreTheOnesEveryoneUses) {
  const std::string root = K3TUNE_ROOT;
  EXPECT_EQ(
      k3targets::runner_variants(root),
      (std::vector<std::string>{"host", "rvv", "ime2", "ime2-emu", "rvv-dynamic", "ime2-dynamic"}));
  for (const auto& v : k3targets::runner_variants(root)) {
    const auto p = k3targets::find_build_preset(root, v);
    EXPECT_EQ(p.binary_dir, root + "/build/k3tune-" + v);
    EXPECT_EQ(p.cache.at("CMAKE_BUILD_TYPE"), "Release") << v;
    EXPECT_EQ(p.cache.at("K3_BUILD_TESTS"), "OFF") << v;
    EXPECT_EQ(k3targets::variant_runner(root, v), p.binary_dir + "/harness/runner/k3bench");
    const bool ime2 = v.starts_with("ime2");
    EXPECT_EQ(p.cache.count("K3_ENABLE_IME2") ? p.cache.at("K3_ENABLE_IME2") : "OFF",
              ime2 ? "ON" : "OFF")
        << v;
    if (ime2) {
      EXPECT_EQ(p.cache.at("K3_IME2_EMULATION"), v == "ime2-emu" ? "ON" : "OFF") << v;
    }
    const std::string toolchain = v == "host" ? ""
                                  : v.ends_with("-dynamic")
                                      ? root + "/cmake/riscv64-linux-gnu-dynamic.cmake"
                                      : root + "/cmake/riscv64-linux-clang.cmake";
    EXPECT_EQ(p.toolchain_file, toolchain) << v;
  }
  // The trees the test suite builds are the ones these tests were configured with.
  EXPECT_EQ(k3targets::runner_binary(k3targets::find_build_preset(root, "test-rvv").binary_dir),
            K3_COUNT_RVV_RUNNER);
  EXPECT_EQ(
      k3targets::runner_binary(k3targets::find_build_preset(root, "test-ime2-emu").binary_dir),
      K3_COUNT_IME2_RUNNER);
  EXPECT_EQ(k3targets::find_build_preset(root, "test-rvv-dynamic").binary_dir, K3_FARM_RISCV_TREE);
  // `k3tune count` counts the rvv path with the RVV tree and the ime2 path with the emulation tree.
  std::map<std::string, std::string> count;
  for (const auto& p : k3targets::load_build_presets(root))
    if (!p.count_path.empty()) count[p.count_path] = p.name;
  EXPECT_EQ(count,
            (std::map<std::string, std::string>{{"rvv", "test-rvv"}, {"ime2", "test-ime2-emu"}}));
  // A test tree is not a runner variant.
  try {
    k3targets::variant_runner(root, "test-rvv");
    ADD_FAILURE() << "test-rvv taken as a runner variant";
  } catch (const k3targets::PresetError& e) {
    EXPECT_NE(std::string(e.what()).find("'test-rvv' is not a runner variant"), std::string::npos);
  }
}

TEST(BuildPresets, InheritanceFollowsCMakesOrderAndFaultsAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("k3presets_" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& text) { std::ofstream(dir / "CMakePresets.json") << text; };
  write(R"({"version": 6, "configurePresets": [
    {"name": "a", "hidden": true, "cacheVariables": {"X": "a", "Y": "a"}, "binaryDir": "${sourceDir}/a"},
    {"name": "b", "hidden": true, "cacheVariables": {"X": "b", "Z": "b"}, "toolchainFile": "${sourceDir}/t.cmake",
     "vendor": {"k3tune": {"kind": "runner"}}},
    {"name": "c", "inherits": ["a", "b"], "cacheVariables": {"Y": "c"}},
    {"name": "d", "inherits": "b", "binaryDir": "${sourceDir}/out/${presetName}"}]})");
  const auto presets = k3targets::load_build_presets(dir.string());
  ASSERT_EQ(presets.size(), 2u);  // hidden ones are not presets of their own
  const auto& c = presets[0];
  EXPECT_EQ(c.cache, (std::map<std::string, std::string>{{"X", "a"}, {"Y", "c"}, {"Z", "b"}}));
  EXPECT_EQ(c.binary_dir, dir.string() + "/a");
  EXPECT_EQ(c.toolchain_file, dir.string() + "/t.cmake");
  EXPECT_EQ(c.kind, "runner");
  EXPECT_EQ(presets[1].binary_dir, dir.string() + "/out/d");
  auto error = [&](const std::string& text) -> std::string {
    write(text);
    try {
      k3targets::load_build_presets(dir.string());
    } catch (const k3targets::PresetError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const std::string file = (dir / "CMakePresets.json").string();
  EXPECT_EQ(error(R"({"configurePresets": [{"name": "x", "inherits": "y", "binaryDir": "b"}]})"),
            file + ": preset 'y' is inherited but not defined");
  EXPECT_EQ(error(R"({"configurePresets": [{"name": "x", "inherits": "x", "binaryDir": "b"}]})"),
            file + ": preset 'x' inherits itself");
  EXPECT_EQ(error(R"({"configurePresets": [{"name": "x"}]})"),
            file + ": preset 'x' has no binaryDir");
  EXPECT_EQ(
      error(
          R"({"configurePresets": [{"name": "x", "binaryDir": "b"}, {"name": "x", "binaryDir": "b"}]})"),
      file + ": preset 'x' is defined twice");
  EXPECT_EQ(error("{").rfind(file + ": not JSON", 0), 0u);
  write(R"({"configurePresets": [{"name": "x", "binaryDir": "b"}]})");
  try {
    k3targets::find_build_preset(dir.string(), "avx512");
    ADD_FAILURE() << "an unknown preset was found";
  } catch (const k3targets::PresetError& e) {
    EXPECT_EQ(std::string(e.what()), file + ": no preset 'avx512' (known: x)");
  }
  fs::remove_all(dir);
}
