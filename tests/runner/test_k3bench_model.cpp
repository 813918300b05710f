// k3bench --model and the model_pp / model_tg / Gated DeltaNet ops through the real binary: the
// whole-model run on a small model (forward check, results, per-op breakdown summing to the wall
// time, logits checksums equal across repetitions and worker counts), bad model files, and the
// new ops' accuracy checks and published tunables.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

namespace {

const std::string kTiny = std::string(K3_TEST_MODELS_DIR) + "/tiny-qwen3.5.toml";

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

// --trace: a Chrome trace-event file parsed back. Each test is a process; the kernel calls of
// every layer are slices on the caller's track, each worker's share of the parallel regions a
// slice on its own track inside the kernel call that ran it; the context counter ends at the
// tokens the test put in the cache; only the first measured repetition is recorded.
TEST(K3benchModel, TraceHoldsEveryLayersKernelCallsAndEachWorkersShare) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("k3_trace_" + std::to_string(::getpid()) + ".json"))
                               .string();
  const auto j = model_run("--params workers=2 --trace " + path);
  ASSERT_TRUE(j.contains("trace")) << j.dump();
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);
  const int layers = std::stoi(j["model"]["dims"]["layers"].get<std::string>());
  std::map<int, std::string> tests;  // pid -> name
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") tests[e["pid"]] = e["args"]["name"];
  ASSERT_EQ(tests.size(), 2u);
  EXPECT_EQ(tests[1], "pp16");
  EXPECT_EQ(tests[2], "tg8");
  for (const auto& [pid, name] : tests) {
    std::set<int> layer_seen, worker_tracks;
    std::vector<std::pair<double, double>> calls;
    double kernel_us = 0, last_context = 0;
    int workers_inside = 0, worker_slices = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["pid"] != pid) continue;
      if (e["ph"] == "X" && e["cat"] == "kernel") {
        calls.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
        kernel_us += e["dur"].get<double>();
        if (e["args"].contains("layer")) layer_seen.insert(e["args"]["layer"].get<int>());
      }
      if (e["ph"] == "C") last_context = e["args"]["tokens"].get<double>();
    }
    for (const auto& e : trace["traceEvents"]) {
      if (e["pid"] != pid || e["ph"] != "X" || e["cat"] != "worker") continue;
      ++worker_slices;
      worker_tracks.insert(e["tid"].get<int>());
      const double b = e["ts"].get<double>(), f = b + e["dur"].get<double>();
      for (const auto& [cb, cf] : calls) {
        if (b >= cb - 0.01 && f <= cf + 0.01) {
          ++workers_inside;
          break;
        }
      }
    }
    EXPECT_EQ(static_cast<int>(layer_seen.size()), layers) << name;
    EXPECT_EQ(worker_tracks, (std::set<int>{1, 2})) << name;  // tid 1 + worker
    EXPECT_EQ(workers_inside, worker_slices) << name << ": a worker slice outside every call";
    // One repetition: the kernel calls take no longer than the measured repetitions' mean + spread.
    const auto& result = j["results"][pid - 1];
    double longest = 0;
    for (const auto& sec : result["seconds"]) longest = std::max(longest, sec.get<double>());
    EXPECT_LE(kernel_us * 1e-6, 3 * longest) << name;
    EXPECT_EQ(last_context, name == "pp16" ? 16 : 1 + 8) << name;
  }
  const auto bad = k3test::run_k3bench("--model " + kTiny +
                                       " --pp 8 --tg 0 --reps 1 --trace /nonexistent/dir/t.json");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("/nonexistent/dir/t.json"), std::string::npos) << bad.err;
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

// --tcm on (the emulated backend): every decode Linear runs the TCM pipeline, and the trace shows
// its stages on the workers' tracks -- each worker of a pair copies and computes slabs (its copy of
// a slab before its partner's compute of it), waits at the pair barrier, all inside its share of
// the call -- while the logits stay those of the DRAM path.
TEST(K3benchModel, TraceShowsTheTcmPipelinesStagesPerWorkerPair) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("k3_tcm_trace_" + std::to_string(::getpid()) + ".json"))
                               .string();
  const std::string run =
      "--model " + kTiny + " --pp 4 --tg 2 --reps 1 --warmup 0 --json --params workers=2";
  const auto on = k3test::run_k3bench(run + " --tcm on --tcm-backend emulated --trace " + path);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const auto off = k3test::run_k3bench(run + " --tcm off");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const auto j = nlohmann::json::parse(on.out), k = nlohmann::json::parse(off.out);
  EXPECT_EQ(j["tcm"]["backend"], "emulated");
  EXPECT_GT(j["tcm"]["decode_linears"].get<int>(), 0);
  EXPECT_EQ(j["tcm"]["decode_linears_on_tcm"], j["tcm"]["decode_linears"]);
  EXPECT_EQ(k["tcm"]["use"], "off");
  EXPECT_EQ(k["tcm"]["decode_linears_on_tcm"], 0);
  for (int t = 0; t < 2; ++t)
    EXPECT_EQ(j["results"][t]["logits_checksum"], k["results"][t]["logits_checksum"]) << t;
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  std::map<std::string, int> stages;
  std::map<int, std::set<int>> lanes;                               // tid -> lanes
  std::map<std::pair<int, std::int64_t>, double> copied, computed;  // (pid, slab) -> end / start
  int inside = 0, all = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "tcm") continue;
    ++all;
    const std::string name = e["name"];
    ++stages[name];
    lanes[e["tid"].get<int>()].insert(e["args"]["lane"].get<int>());
    const double b = e["ts"].get<double>(), f = b + e["dur"].get<double>();
    for (const auto& w : trace["traceEvents"]) {
      if (w["ph"] == "X" && w["cat"] == "worker" && w["pid"] == e["pid"] && w["tid"] == e["tid"] &&
          b >= w["ts"].get<double>() - 0.01 &&
          f <= w["ts"].get<double>() + w["dur"].get<double>() + 0.01) {
        ++inside;
        break;
      }
    }
  }
  EXPECT_GT(stages["tcm_copy"], 0);
  EXPECT_EQ(stages["tcm_copy"], stages["tcm_compute"]);  // every slab copied is computed
  EXPECT_GT(stages["pair_wait"], 0);
  EXPECT_EQ(lanes, (std::map<int, std::set<int>>{{1, {0}}, {2, {0}}}));  // two workers, one pair
  EXPECT_EQ(inside, all) << "a stage outside its worker's share of a call";
}

// --count-marks (for k3tune count --model) reports its tests and region layout; with a synthetic
// context (seeded caches and recurrent states) the decode step still runs on the hybrid model.
TEST(K3benchModel, CountMarksDescribeTheirRegions) {
  const auto r = k3test::run_k3bench("--model " + kTiny +
                                     " --pp 8 --tg 1 --tg-prompt 12 --context-fill synthetic "
                                     "--count-marks --reps 1 --warmup 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& marks = j.at("count_marks");
  EXPECT_EQ(marks.at("syscall"), 0x4b33);
  ASSERT_EQ(marks.at("tests").size(), 2u);
  EXPECT_EQ(marks["tests"][0]["name"], "pp8");
  EXPECT_EQ(marks["tests"][1]["name"], "tg1");
  EXPECT_EQ(marks.at("ops").size(), marks.at("regions_per_test").get<std::size_t>());
  const auto& ops = marks.at("ops");
  ASSERT_GE(ops.size(), 2u);
  EXPECT_EQ(ops[ops.size() - 2], "glue");
  EXPECT_EQ(ops.back(), "timer");
  EXPECT_EQ(j["params"]["context_fill"], "synthetic");
  EXPECT_EQ(j["results"][1]["depth"], 12);
  const auto reps =
      k3test::run_k3bench("--model " + kTiny + " --pp 8 --tg 0 --count-marks --reps 2");
  EXPECT_EQ(reps.exit_code, 2);
  EXPECT_NE(reps.err.find("--count-marks: one repetition and no warm-up"), std::string::npos)
      << reps.err;
}

// The whole model's weights cache is invisible in the results: without a cache, cold, warm, and
// over a damaged cache file (truncated: regenerated), the logits are the same bits; another seed
// is another file and other logits.
TEST(K3benchModel, WeightCacheGivesTheGeneratedWeights) {
  const auto base = std::filesystem::temp_directory_path() /
                    ("k3bench_model_cache_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(base);
  const auto cache = base / "cache";
  auto run = [&](const std::string& dir, const std::string& params) {
    const auto r = k3test::run_k3bench(
        "--model " + kTiny + " --pp 8 --tg 2 --reps 1 --warmup 0 --json --params " + params,
        "K3BENCH_CACHE_DIR=" + dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    return j["results"][0]["logits_checksum"].dump() + j["results"][1]["logits_checksum"].dump();
  };
  auto model_files = [&] {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(cache))
      if (e.path().filename().string().rfind("model-", 0) == 0) files.push_back(e.path());
    return files;
  };
  const std::string uncached = run("off", "workers=2");
  EXPECT_EQ(run(cache.string(), "workers=2"), uncached);  // cold: generated and stored
  ASSERT_EQ(model_files().size(), 1u);
  EXPECT_EQ(run(cache.string(), "workers=2"), uncached);  // warm: read back
  const auto file = model_files().front();
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  EXPECT_EQ(run(cache.string(), "workers=2"), uncached);  // damaged: regenerated
  EXPECT_NE(run(cache.string(), "workers=2,weight_seed=7"), uncached);
  EXPECT_EQ(model_files().size(), 2u);
  std::filesystem::remove_all(base);
}
