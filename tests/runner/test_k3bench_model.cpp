// k3bench --model and the model_pp / model_tg / Gated DeltaNet ops through the real binary: the
// whole-model run on a small model (forward check, results, per-op breakdown summing to the wall
// time, logits checksums equal across repetitions and worker counts), bad model files, and the
// new ops' accuracy checks and published tunables.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

namespace {

const std::string kTiny = K3_TEST_MODELS_DIR "/tiny-qwen3.5.toml";

nlohmann::json model_run(const std::string& extra) {
  const auto r = k3test::run_k3bench("--model " + kTiny +
                                     " --pp 16 --tg 8 --reps 2 --warmup 1 --json " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(K3benchModel, WholeModelRunReportsSpeedBreakdownAndChecksums) {
  const auto j = model_run("--check-forward --params workers=2");
  EXPECT_EQ(j["schema"], "k3bench.model/1");
  EXPECT_TRUE(j["forward_check"]["pass"].get<bool>()) << j["forward_check"]["summary"];
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["test"], "pp16");
  EXPECT_EQ(j["results"][1]["test"], "tg8");
  for (const auto& t : j["results"]) {
    EXPECT_EQ(t["tokens_per_s"].size(), 2u);
    EXPECT_GT(t["mean_tokens_per_s"].get<double>(), 0.0);
    EXPECT_TRUE(t["identical_logits_every_repetition"].get<bool>());
    const auto& b = t["breakdown"];
    EXPECT_EQ(b["sum_check"], "ok") << b.dump();
    std::set<std::string> ops;
    for (const auto& o : b["ops"]) ops.insert(o["op"]);
    for (const char* op :
         {"gdn_core", "gdn_conv", "attention", "attn_gate", "lm_head", "embedding"})
      EXPECT_TRUE(ops.count(op)) << t["test"] << " lacks " << op;
  }
  EXPECT_GT(j["peak_rss_bytes"].get<double>(), 1e6);
  EXPECT_GT(j["weights"]["decode_bytes_per_token"].get<double>(), 0.0);
  // The same output for any worker count: identical checksums.
  const auto one = model_run("--params workers=1");
  for (int t = 0; t < 2; ++t)
    EXPECT_EQ(one["results"][t]["logits_checksum"], j["results"][t]["logits_checksum"]);
}

// llama-bench's depth (-d) and MNN llm_bench's prefill-then-generate (-pg): the tests start from
// a filled cache, and the pp+tg test is a prefill and its generation on one cache.
TEST(K3benchModel, DepthAndPrefillThenGenerate) {
  const auto run = [](const std::string& args) {
    const auto r = k3test::run_k3bench("--model " + kTiny + " --reps 2 --warmup 1 --json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto j = run("--pp 8 --tg 6 --depth 24 --pg 10,5");
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][0]["test"], "pp8@d24");
  EXPECT_EQ(j["results"][1]["test"], "tg6@d24");
  EXPECT_EQ(j["results"][2]["test"], "pp10+tg5@d24");
  EXPECT_EQ(j["params"]["depth"], 24);
  for (const auto& t : j["results"]) {
    EXPECT_EQ(t["depth"], 24) << t["test"];
    EXPECT_TRUE(t["identical_logits_every_repetition"].get<bool>()) << t["test"];
    EXPECT_EQ(t["breakdown"]["sum_check"], "ok") << t["test"];
  }
  const auto& pg = j["results"][2];
  EXPECT_EQ(pg["tokens"], 15);
  ASSERT_EQ(pg["prefill_seconds"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GT(pg["prefill_seconds"][i].get<double>(), 0.0);
    EXPECT_GT(pg["decode_seconds"][i].get<double>(), 0.0);
    EXPECT_NEAR(pg["prefill_seconds"][i].get<double>() + pg["decode_seconds"][i].get<double>(),
                pg["seconds"][i].get<double>(), 1e-12);
  }
  // Decode at depth D is decode after a D-token prompt; the context changes a prefill's logits.
  const auto plain = run("--pp 8 --tg 6 --tg-prompt 24");
  EXPECT_EQ(plain["results"][1]["logits_checksum"], j["results"][1]["logits_checksum"]);
  EXPECT_NE(plain["results"][0]["logits_checksum"], j["results"][0]["logits_checksum"]);
  // At depth 0, generating G after a P-token prefill on one cache is the decode test's run.
  const auto pg0 = run("--pp 0 --tg 0 --pg 10,5");
  const auto tg = run("--pp 0 --tg 5 --tg-prompt 10");
  ASSERT_EQ(pg0["results"].size(), 1u);
  EXPECT_EQ(pg0["results"][0]["test"], "pp10+tg5");
  EXPECT_EQ(pg0["results"][0]["logits_checksum"], tg["results"][0]["logits_checksum"]);
  // Bad values: one line, exit 2.
  for (const char* bad : {"--depth -1", "--pg 0,5", "--pg 4"}) {
    const auto r = k3test::run_k3bench("--model " + kTiny + " --pp 8 " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
  }
}

TEST(K3benchModel, TableOutputIsLlmBenchStyle) {
  const auto r = k3test::run_k3bench("--model " + kTiny + " --pp 8 --tg 0 --reps 1 --warmup 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| model | modelSize | backend | threads | test | t/s |"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| tiny-Qwen3.5 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| pp8 |"), std::string::npos) << r.out;
}

TEST(K3benchModel, BadModelIsOneLineAndExitTwo) {
  const auto unknown = k3test::run_k3bench("--model gpt-17");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown model 'gpt-17'"), std::string::npos) << unknown.err;
  const auto missing = k3test::run_k3bench("--model /nonexistent/m.toml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/m.toml: no such file"), std::string::npos)
      << missing.err;
  const auto big = k3test::run_k3bench("--model qwen3-4b --check-forward --pp 1 --tg 0");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("--check-forward: the float64 forward is for small models"),
            std::string::npos)
      << big.err;
}

TEST(K3benchModel, ModelOpsAreCheckedAgainstTheFloat64Forward) {
  const std::string dims =
      "hidden=128,intermediate=256,layers=4,q_heads=2,kv_heads=1,head_dim=64,rotary_dim=16,"
      "rope_theta=10000000,vocab=1000,attn_gate=1,full_attn_interval=4,lin_k_heads=2,lin_v_heads=4,"
      "lin_k_dim=32,lin_v_dim=32,conv_kernel=4";
  for (const std::string& op :
       {"model_pp --shape " + dims + ",pp=12", "model_tg --shape " + dims + ",pp=3,tg=5"}) {
    const auto r = k3test::run_k3bench(
        "--op " + op +
        " --params workers=2,kv_dtype=f32 --reps 2 --warmup 1 --iterations 1 --json");
    ASSERT_EQ(r.exit_code, 0) << op << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["accuracy"]["pass"].get<bool>());
    EXPECT_NE(j["accuracy"]["reference"].get<std::string>().find("float64 forward pass"),
              std::string::npos);
    EXPECT_EQ(j["params"]["breakdown"]["sum_check"], "ok");
    EXPECT_EQ(j["repetitions"].size(), 2u);
  }
}

TEST(K3benchModel, GatedDeltaNetOpsPassTheirReferences) {
  for (const std::string c :
       {"gdn_prefill --shape seq=70,k_heads=2,v_heads=4,k_dim=128,v_dim=128 --params chunk=16",
        "gdn_decode --shape k_heads=16,v_heads=16,k_dim=128,v_dim=128",
        "gdn_gates --shape tokens=33,heads=16", "l2norm --shape tokens=9,heads=16,dim=128",
        "causal_conv1d --shape tokens=21,channels=600", "gated_rmsnorm --shape rows=48,dim=128",
        "sigmoid_gate --shape rows=5,dim=2048"}) {
    const auto r = k3test::run_k3bench("--op " + c +
                                       " --reps 1 --warmup 1 --min-time 0.001 --check full --json");
    ASSERT_EQ(r.exit_code, 0) << c << ": " << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["accuracy"]["pass"].get<bool>()) << c;
  }
  // The chunk size is published as a tunable of gdn_prefill.
  const auto list = nlohmann::json::parse(k3test::run_k3bench("--list-ops --json").out);
  bool chunk = false;
  for (const auto& op : list)
    if (op["name"] == "gdn_prefill")
      for (const auto& p : op["params"])
        chunk = chunk || (p["name"] == "chunk" && p["range"][1] == 1024);
  EXPECT_TRUE(chunk);
}

}  // namespace
