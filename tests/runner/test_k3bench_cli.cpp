// k3bench's command line: op listing, result document, exit codes per error class.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

using k3test::run_k3bench;
using nlohmann::json;

namespace {

const char* kSmallDecode =
    "--op linear_decode --shape n=96,k=256 --params workers=2,copies=2 --reps 3 --warmup 1 "
    "--min-time 0.001";

// A two-sided result's repetitions: their sides in order, and each side's times, sorted.
struct Sides {
  std::string order;
  std::vector<double> a, b;
};
Sides split_sides(const json& result) {
  Sides s;
  for (const auto& rep : result["repetitions"]) {
    s.order += rep.at("side").get<std::string>();
    (rep["side"] == "B" ? s.b : s.a).push_back(rep["ns"].get<double>());
  }
  std::sort(s.a.begin(), s.a.end());
  std::sort(s.b.begin(), s.b.end());
  return s;
}

TEST(K3benchCli, ListOpsJsonDeclaresShapeKeysAndParams) {
  auto r = run_k3bench("--list-ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json ops = json::parse(r.out);
  bool found = false;
  for (const auto& op : ops) {
    if (op["name"] != "linear_decode") continue;
    found = true;
    std::vector<std::string> keys;
    for (const auto& k : op["shape_keys"]) keys.push_back(k["name"]);
    EXPECT_EQ(keys, (std::vector<std::string>{"n", "k"}));
    bool has_workers = false;
    for (const auto& p : op["params"]) {
      if (p["name"] == "workers") {
        has_workers = true;
        EXPECT_EQ(p["type"], "int");
        EXPECT_EQ(p["range"][0], 1);
        EXPECT_TRUE(p.contains("default"));
      }
    }
    EXPECT_TRUE(has_workers);
  }
  EXPECT_TRUE(found);
  for (const char* name : {"quant_pack_prefill", "quant_pack_decode", "linear_prefill", "membw"}) {
    bool present = false;
    for (const auto& op : ops) present = present || op["name"] == name;
    EXPECT_TRUE(present) << name;
  }
}

TEST(K3benchCli, DecodeResultDocument) {
  auto r = run_k3bench(std::string(kSmallDecode) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["op"], "linear_decode");
  EXPECT_EQ(j["path"], "generic");  // the host build has no RVV layer
  EXPECT_EQ(j["dispatch"]["requested"], "auto");
  EXPECT_NE(j["dispatch"]["reason"].get<std::string>().find("rvv layer not compiled"),
            std::string::npos);
  // Only IME2 emulation builds run a path as software models; the generic layer is real code.
  ASSERT_TRUE(j["dispatch"]["emulated"].is_boolean());
  EXPECT_FALSE(j["dispatch"]["emulated"].get<bool>());
  EXPECT_EQ(j["shape"]["n"], 96);
  EXPECT_EQ(j["params"]["workers"], 2);
  EXPECT_EQ(j["params"]["copies"], 2);
  ASSERT_EQ(j["repetitions"].size(), 3u);
  for (const auto& rep : j["repetitions"]) {
    EXPECT_GT(rep["ns"].get<double>(), 0.0);
    EXPECT_GE(rep["iterations"].get<long long>(), 1);
  }
  // Weights per call: 96 rows of 256 codes at 4 bits + an fp16 (beta, scale) pair per 64-block.
  EXPECT_EQ(j["traffic"]["weight_bytes"], 96 * 128 + 96 * 4 * 4);
  EXPECT_EQ(j["traffic"]["ops"], 2 * 96 * 256);
  EXPECT_TRUE(j["accuracy"]["pass"]);
  EXPECT_EQ(j["accuracy"]["checked"], 96);
  EXPECT_LE(j["accuracy"]["worst_error_to_bound"].get<double>(), 1.0);
  const auto& env = j["environment"];
  for (const char* key : {"cpu_model", "cpus_allowed", "vlenb", "runner", "build",
                          "readings_before", "readings_after"}) {
    EXPECT_TRUE(env.contains(key)) << key;
  }
  EXPECT_FALSE(env["build"]["compiler"].get<std::string>().empty());
  EXPECT_GT(j["summary"]["weight_gbps"].get<double>(), 0.0);
}

// The within-process comparison of the statistics self-check: with --extra-work-sides abba the
// repetitions alternate A B, B A, ... and say so, and the extra work is B's; without the option
// no repetition carries a side. (That only B's calls run the work is checked exactly, in
// instructions, under qemu: CountCli.AlternatingExtraWorkIsSideBsAloneToTheInstruction; a timing
// comparison here would fail whenever the machine slows A's repetitions.)
TEST(K3benchCli, AlternatingExtraWorkRunsOnlyOnSideBInPairsABThenBA) {
  const std::string args =
      "--op linear_decode --shape n=96,k=256 --params workers=1 --reps 8 --warmup 1 "
      "--iterations 20 --check none --extra-work-spins 200000 --json";
  auto r = run_k3bench(args + " --extra-work-sides abba");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["extra_work"]["sides"], "abba");
  const Sides sides = split_sides(j);
  EXPECT_EQ(sides.order, "ABBAABBA");
  const std::vector<double>&a = sides.a, &b = sides.b;
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(j["extra_work"]["spins"], 200000);

  auto plain = run_k3bench(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json p = json::parse(plain.out);
  EXPECT_EQ(p["extra_work"]["sides"], "all");
  for (const auto& rep : p["repetitions"]) EXPECT_FALSE(rep.contains("side"));
}

// A second parameter set (--params-b): one process alternates two cases of one op and shape,
// A B, B A, ... A triad over the same arrays moves three times the bytes of a read (two streams
// read, one written), so every B repetition is well over 1.5 times the A ones; the summary is
// side A's alone and summary_b side B's, and both cases were checked.
TEST(K3benchCli, ASecondParameterSetAlternatesWithTheFirstInsideTheProcess) {
  auto r = run_k3bench(
      "--op membw --shape mib=16 --params workers=1,mode=read --params-b workers=1,mode=triad "
      "--reps 8 --warmup 1 --iterations 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["params"]["mode"], "read");
  EXPECT_EQ(j["params_b"]["mode"], "triad");
  EXPECT_EQ(j["params_b"]["workers"], 1);
  EXPECT_TRUE(j["accuracy"]["pass"]);
  EXPECT_TRUE(j["accuracy_b"]["pass"]);
  EXPECT_GT(j["traffic_b"]["weight_bytes"].get<double>() +
                j["traffic_b"]["activation_bytes"].get<double>(),
            2 * (j["traffic"]["weight_bytes"].get<double>() +
                 j["traffic"]["activation_bytes"].get<double>()));
  const Sides sides = split_sides(j);
  EXPECT_EQ(sides.order, "ABBAABBA");
  const std::vector<double>&a = sides.a, &b = sides.b;
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_GT(b[1], 1.5 * a[2]) << "B's second-fastest against A's second-slowest";
  EXPECT_DOUBLE_EQ(j["summary"]["median_ns"].get<double>(), 0.5 * (a[1] + a[2]));
  EXPECT_DOUBLE_EQ(j["summary_b"]["median_ns"].get<double>(), 0.5 * (b[1] + b[2]));
  EXPECT_DOUBLE_EQ(j["summary"]["max_ns"].get<double>(), a[3]);

  // Keys not given in --params-b are the op's defaults (workers=2), not --params'.
  auto defaults = run_k3bench(
      "--op membw --shape mib=1 --params workers=1 --params-b mode=read --reps 2 --iterations 1 "
      "--check none --json");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.err;
  EXPECT_EQ(json::parse(defaults.out)["params_b"]["workers"], 2);
}

TEST(K3benchCli, PrefillC4WithResidualAndClampPassesFullCheck) {
  auto r = run_k3bench(
      "--op linear_prefill --shape m=5,n=37,k=192 --params "
      "workers=3,layout=c4,residual=1,clamp=1,tile_n=7 "
      "--check full --reps 1 --min-time 0.001 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["accuracy"]["pass"]);
  EXPECT_EQ(j["accuracy"]["checked"], 5 * 37);
  EXPECT_EQ(j["params"]["layout"], "c4");
}

struct BadInput {
  const char* args;
  int exit_code;
  const char* message_part;
};

// Readable test names: the expected exit code and message, alphanumerics only.
std::string bad_input_name(const ::testing::TestParamInfo<BadInput>& info) {
  std::string name = "exit" + std::to_string(info.param.exit_code) + "_";
  for (const char* p = info.param.message_part; *p; ++p)
    name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
  return name + "_" + std::to_string(info.index);
}

class K3benchBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(K3benchBadInput, OneLineErrorAndDocumentedExitCode) {
  const auto& c = GetParam();
  auto r = run_k3bench(c.args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(c.message_part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, K3benchBadInput,
    ::testing::Values(
        BadInput{"--op no_such_op", 2, "unknown op 'no_such_op'"},
        BadInput{"--op linear_decode --shape n=64", 2, "missing required key 'k'"},
        BadInput{"--op linear_decode --shape n=64,k=64,x=1", 2, "unknown key 'x'"},
        BadInput{"--op linear_decode --shape n=64,k=abc", 2, "k='abc' is not an integer"},
        BadInput{"--op linear_decode --shape n=64,k=64 --params workers=0", 2,
                 "workers=0 is outside"},
        BadInput{"--op linear_decode --shape n=64,k=64 --params layout=zigzag", 2,
                 "layout='zigzag'"},
        BadInput{"--op linear_decode --shape n=64,k=64 --reps 0", 2, "--reps"},
        BadInput{"--op linear_decode --shape n=64,k=64 --params-b tile=3", 2,
                 "--params-b: unknown key 'tile'"},
        BadInput{
            "--op linear_decode --shape n=64,k=64 --params-b workers=1 --extra-work-sides abba", 2,
            "--params-b: alternates the repetitions already"},
        BadInput{"--bogus-flag", 2, "bogus"},
        BadInput{"--op linear_decode --shape n=64,k=100", 3, "k=100 is not a multiple of 64"},
        BadInput{"--op linear_decode --shape n=0,k=64", 3, "n=0 is outside"},
        BadInput{"--op linear_prefill --shape m=1048576,n=1048576,k=1048512", 3, "GiB"},
        BadInput{"--op linear_decode --shape n=64,k=64 --path ime2", 3, "ime2 layer not compiled"},
        BadInput{"--op linear_decode --shape n=64,k=64 --path avx", 2, "--path"},
        BadInput{"--selftest ime2", 3, "--selftest ime2: ime2 layer not compiled"},
        BadInput{"--selftest avx", 2, "--selftest"}),
    bad_input_name);

TEST(K3benchCli, AccuracyFailureIsReportedWithExitCode4) {
  auto r = run_k3bench(std::string(kSmallDecode) + " --json", "K3BENCH_FAULT=perturb-output");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const json j = json::parse(r.out);
  EXPECT_FALSE(j["accuracy"]["pass"]);
  EXPECT_GT(j["accuracy"]["worst_error_to_bound"].get<double>(), 1.0);
  EXPECT_TRUE(j["repetitions"].empty());  // a wrong kernel is not timed
  EXPECT_NE(r.err.find("accuracy failure"), std::string::npos);
}

TEST(K3benchCli, HelpDocumentsExitCodes) {
  auto r = run_k3bench("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"2  usage", "3  unsupported", "4  accuracy failure", "5  internal error"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

}  // namespace
