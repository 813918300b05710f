// k3bench --table / K3_TUNING_TABLE: parameters come from the table's entry unless given on the
// command line, each with its source in the JSON; outputs are bitwise those of the same parameters
// given on the command line; a table for another board is refused with one line and the defaults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "k3k/table_rules.h"

#include "k3bench_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// FNV-1a 64 written from its specification (offset basis 14695981039346656037, prime 2^40 + 2^8 +
// 0xb3), independent of the example's copy; checked against the published test vectors below.
std::uint64_t fnv1a64_spec(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : bytes) h = (h ^ c) * ((std::uint64_t{1} << 40) + (1u << 8) + 0xb3);
  return h;
}

TEST(Fnv1a64Spec, MatchesThePublishedTestVectors) {
  EXPECT_EQ(fnv1a64_spec(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64_spec("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64_spec("foobar"), 0x85944171f73967e8ull);
}

class K3benchTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("k3bench_table_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // This machine as k3bench sees it: the fingerprint a table made here records.
  static json fingerprint() {
    const auto probe = k3test::run_k3bench(
        "--op residual_add --shape rows=1,dim=64 --reps 1 --warmup 0 "
        "--iterations 1 --check none --json");
    const auto tcm = k3test::run_k3bench("--tcm-status --json");
    const auto env = json::parse(probe.out)["environment"];
    const auto t = json::parse(tcm.out);
    const std::string backend = t.value("backend", "off");
    json marchid = env.value("marchid", json());
    if (marchid.is_string()) {
      std::string m = marchid.get<std::string>();
      for (auto& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      marchid = m;
    }
    return {{"marchid", marchid},
            {"vlen", env["vlenb"].is_number() ? json(env["vlenb"].get<int>() * 8) : json(nullptr)},
            {"cpu_model", "test"},
            {"cpus", env["cpus_allowed"].size()},
            {"tcm",
             {{"backend", backend},
              {"blocks", backend == "off" ? 0 : t["geometry"].value("blocks", 0)},
              {"block_bytes", backend == "off" ? 0 : t["geometry"].value("block_bytes", 0)}}}};
  }
  // The layer k3bench takes by default here.
  static std::string best_path() {
    const auto r = k3test::run_k3bench(
        "--op residual_add --shape rows=1,dim=64 --reps 1 --warmup 0 --iterations 1 "
        "--check none --json");
    return json::parse(r.out)["path"].get<std::string>();
  }
  std::string table(const json& fp, const std::string& path, const json& rules = nullptr) const {
    const std::string id = "linear_decode/" + path + "/k256/n96";
    json t = {{"schema", std::string(k3k::rules::kTuningTableSchema)},
              {"kernel_abi", k3k::rules::kKernelAbiVersion},
              {"created_at", "2026-11-30T23:45:43Z"},
              {"source", {{"objective", "time"}, {"proxy", false}, {"sessions", json::array()}}},
              {"board", {{"fingerprint", fp}}},
              {"entries",
               {{{"id", id},
                 {"op", "linear_decode"},
                 {"class", {{"path", path}, {"k", 256}, {"n", 96}}},
                 {"params", {{"tile_n", 32}, {"workers", 1}, {"tcm", "off"}}},
                 {"evidence", {{"mean", 1.0}, {"processes", 8}}}}}}};
    if (!rules.is_null()) t["rules"] = rules;
    const auto file = (dir_ / "table.json").string();
    std::ofstream(file) << t.dump(2);
    return file;
  }
  std::string output_bytes(const fs::path& dump) const {
    std::ifstream mf(dump / "manifest.json");
    const auto manifest = json::parse(mf);
    for (const auto& a : manifest["arrays"])
      if (a["name"] == "output") {
        std::ifstream f(dump / a["file"].get<std::string>(), std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
      }
    ADD_FAILURE() << "no output array in " << dump;
    return {};
  }
  fs::path dir_;
};

constexpr const char* kCase =
    "--op linear_decode --shape k=256,n=96 --reps 1 --min-time 0.001 --json";

// A shape without an entry takes the leaf of the op's rule (before the nearest class), and
// tuning.sources says each of its parameters came from the rule.
TEST_F(K3benchTable, AShapeWithoutAnEntryTakesTheRulesLeafAndSaysSo) {
  const std::string path = best_path();
  const json rules = {{{"op", "linear_decode"},
                       {"path", path},
                       {"nodes",
                        {{{"key", "n"}, {"below", 128}, {"then", 1}, {"else", 2}},
                         {{"params", {{"tile_n", 16}}}},
                         {{"params", {{"tile_n", 48}, {"workers", 1}}}}}}}};
  const std::string file = table(fingerprint(), path, rules);
  const auto r = k3test::run_k3bench(
      "--op linear_decode --shape k=256,n=192 --reps 1 --min-time 0.001 --json --table " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  const std::string leaf = "linear_decode/" + path + "/rule/2";
  EXPECT_EQ(j["tuning"]["entry"], leaf) << j["tuning"];
  EXPECT_EQ(j["tuning"]["sources"]["tile_n"], "rule " + leaf);
  EXPECT_EQ(j["tuning"]["sources"]["workers"], "rule " + leaf);
  EXPECT_EQ(j["tuning"]["sources"]["slab_rows"], "default");
  EXPECT_EQ(j["params"]["tile_n"], 48);
  // The entry's own class still wins over the rule.
  const auto own = k3test::run_k3bench(std::string(kCase) + " --table " + file);
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(json::parse(own.out)["tuning"]["sources"]["tile_n"],
            "table linear_decode/" + path + "/k256/n96");
}

TEST_F(K3benchTable, ParametersComeFromTheTableWithTheirSourceAndOutputsMatchTheCommandLine) {
  const std::string path = best_path();
  const std::string file = table(fingerprint(), path);
  const std::string id = "linear_decode/" + path + "/k256/n96";
  const auto with = k3test::run_k3bench(std::string(kCase) + " --params copies=1 --table " + file +
                                        " --dump " + (dir_ / "with").string());
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const auto j = json::parse(with.out);
  EXPECT_EQ(j["tuning"]["loaded"], true) << j["tuning"];
  EXPECT_EQ(j["tuning"]["entry"], id);
  EXPECT_EQ(j["tuning"]["sources"]["tile_n"], "table " + id);
  EXPECT_EQ(j["tuning"]["sources"]["workers"], "table " + id);
  EXPECT_EQ(j["tuning"]["sources"]["copies"], "command line");
  EXPECT_EQ(j["tuning"]["sources"]["slab_rows"], "default");
  EXPECT_EQ(j["params"]["tile_n"], 32);
  EXPECT_EQ(j["params"]["workers"], 1);
  EXPECT_EQ(j["params"]["tcm"]["use"], "off");

  // The same parameters on the command line: the same bits out.
  const auto given = k3test::run_k3bench(std::string(kCase) +
                                         " --params copies=1,tile_n=32,workers=1,tcm=off --dump " +
                                         (dir_ / "given").string());
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_FALSE(json::parse(given.out).contains("tuning"));
  const std::string a = output_bytes(dir_ / "with"), b = output_bytes(dir_ / "given");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);

  // The environment variable does what --table does; the command line still wins.
  const auto env = k3test::run_k3bench(std::string(kCase) + " --params copies=1,tile_n=64",
                                       "K3_TUNING_TABLE=" + file);
  ASSERT_EQ(env.exit_code, 0) << env.err;
  const auto e = json::parse(env.out);
  EXPECT_EQ(e["tuning"]["sources"]["tile_n"], "command line");
  EXPECT_EQ(e["tuning"]["sources"]["workers"], "table " + id);
  EXPECT_EQ(e["params"]["tile_n"], 64);
  EXPECT_EQ(e["params"]["workers"], 1);
}

TEST_F(K3benchTable, ATableForAnotherBoardIsRefusedWithOneLineAndTheDefaultsRun) {
  json fp = fingerprint();
  fp["cpus"] = fp["cpus"].get<int>() + 7;
  const std::string file = table(fp, best_path());
  const auto r = k3test::run_k3bench(std::string(kCase) + " --params copies=1 --table " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_EQ(j["tuning"]["loaded"], false);
  EXPECT_NE(j["tuning"]["refused"].get<std::string>().find("/board/fingerprint/cpus: made for"),
            std::string::npos);
  EXPECT_EQ(j["tuning"]["sources"]["tile_n"], "default");
  EXPECT_EQ(j["params"]["tile_n"], 64);
  EXPECT_NE(r.err.find("k3k: tuning table " + file + ": /board/fingerprint/cpus"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; using the built-in defaults\n"), std::string::npos) << r.err;
}

// The example engine (examples/engine): the same program, with and without a table; the table
// changes the parameters it names and nothing in the outputs.
TEST_F(K3benchTable, ExampleEngineRunsWithAndWithoutATable) {
  const std::string path = best_path();
  const std::string file = table(fingerprint(), path);
  auto run = [](const std::string& env) {
    static int calls = 0;
    const std::string out =
        (fs::temp_directory_path() /
         ("k3_engine_" + std::to_string(::getpid()) + "_" + std::to_string(++calls)))
            .string();
    const int rc = std::system(
        (env + " " + std::string(K3_EXAMPLE_ENGINE) + " --k 256 --n 96 --m 5 > " + out + " 2>&1")
            .c_str());
    std::ifstream f(out);
    std::string text((std::istreambuf_iterator<char>(f)), {});
    fs::remove(out);
    EXPECT_EQ(rc, 0) << text;
    return text;
  };
  const std::string plain = run("env -u K3_TUNING_TABLE");
  const std::string tuned = run("K3_TUNING_TABLE=" + file);
  EXPECT_NE(plain.find("table: none\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("decode: tile_n 64 (default), workers all (default)"), std::string::npos)
      << plain;
  EXPECT_NE(tuned.find("table: " + file + "\n"), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("layer: " + path + " (table entry linear_decode/" + path + "/k256/n96)"),
            std::string::npos)
      << tuned;
  EXPECT_NE(
      tuned.find("decode: tile_n 32 (table linear_decode/" + path + "/k256/n96), workers 1 (table"),
      std::string::npos)
      << tuned;
  EXPECT_NE(tuned.find("prefill: tile_n 64 (default)"), std::string::npos)
      << tuned;  // no prefill entry
  auto checksum = [](const std::string& text) { return text.substr(text.find("checksum:")); };
  ASSERT_NE(plain.find("checksum:"), std::string::npos);
  ASSERT_NE(tuned.find("checksum:"), std::string::npos);
  EXPECT_EQ(checksum(plain), checksum(tuned));

  // The printed checksums are FNV-1a of the outputs: hash the dumped floats here and compare.
  const std::string dump = (dir_ / "outputs.f32").string();
  ASSERT_EQ(std::system(("env -u K3_TUNING_TABLE " + std::string(K3_EXAMPLE_ENGINE) +
                         " --k 256 --n 96 --m 5 --dump " + dump + " >/dev/null")
                            .c_str()),
            0);
  std::ifstream f(dump, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  ASSERT_EQ(bytes.size(), (96 + 5 * 96) * sizeof(float));
  char expected[96];
  std::snprintf(expected, sizeof expected, "checksum: decode %016llx, prefill %016llx\n",
                static_cast<unsigned long long>(fnv1a64_spec(bytes.substr(0, 96 * sizeof(float)))),
                static_cast<unsigned long long>(fnv1a64_spec(bytes.substr(96 * sizeof(float)))));
  EXPECT_EQ(checksum(plain), expected);
}

// A model run takes its Linear tilings from the table (the nearest decode class here: the table has
// one decode entry) and its logits do not change.
TEST_F(K3benchTable, AModelRunUsesTheTableAndItsLogitsDoNotChange) {
  const std::string path = best_path();
  const std::string file = table(fingerprint(), path);
  auto run = [](const std::string& extra) {
    const auto r = k3test::run_k3bench("--model " + std::string(K3_TEST_MODELS_DIR) +
                                       "/tiny-qwen3.toml --pp 8 --tg 4 --reps 1 "
                                       "--warmup 0 --json --params workers=2 " +
                                       extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  };
  const auto plain = run("");
  const auto tuned = run("--table " + file);
  EXPECT_FALSE(plain.contains("tuning"));
  EXPECT_EQ(tuned["tuning"]["loaded"], true) << tuned["tuning"];
  ASSERT_FALSE(tuned["tuning"]["entries"].empty()) << tuned["tuning"];
  for (const auto& [shape, entry] : tuned["tuning"]["entries"].items()) {
    EXPECT_EQ(shape.rfind("linear_decode/", 0), 0u) << shape;
    EXPECT_EQ(entry, "linear_decode/" + path + "/k256/n96");
  }
  ASSERT_EQ(plain["results"].size(), tuned["results"].size());
  for (std::size_t t = 0; t < plain["results"].size(); ++t)
    EXPECT_EQ(plain["results"][t]["logits_checksum"], tuned["results"][t]["logits_checksum"]);
}

}  // namespace
