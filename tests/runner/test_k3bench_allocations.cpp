// k3bench --count-marks reports each call's heap allocations (the executable's operator new
// counts them): a kernel call that allocated would count a different number of instructions with
// the heap's layout, which moves with the runner's path and everything start-up did.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

namespace {

std::vector<double> call_allocations(const std::string& op, const std::string& shape) {
  const auto r = k3test::run_k3bench("--op " + op + " --shape " + shape +
                                     " --count-marks --json --check none --reps 2 --iterations 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::vector<double> out;
  for (const auto& call : j.at("count_marks").at("calls"))
    out.push_back(call.at("allocations").get<double>());
  return out;
}

// Every op's calls after its first allocate nothing: scratch is the thread's, grown by the first
// call and kept, and the Linear bodies live in a slot of the binding thread.
TEST(K3benchAllocations, KernelCallsAllocateNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"quant_pack_prefill", "m=8,k=128"},
      {"quant_pack_decode", "k=256"},
      {"linear_prefill", "m=8,n=64,k=128"},
      {"linear_decode", "n=64,k=128"},
      {"attn_prefill", "seq=8,past=8,q_heads=4,kv_heads=2,head_dim=64,kv_dtype=f16"},
      {"attn_decode", "ctx=64,q_heads=4,kv_heads=2,head_dim=64"},
      {"kv_append", "tokens=8,kv_heads=2,head_dim=64,kv_dtype=f16"},
      {"rmsnorm", "rows=4,dim=256"},
      {"embedding", "tokens=4,vocab=64,dim=128"},
      {"gdn_prefill", "seq=16,k_heads=2,v_heads=4,k_dim=64,v_dim=64"},
      {"gdn_decode", "k_heads=2,v_heads=4,k_dim=64,v_dim=64"},
      {"gdn_gates", "tokens=4,heads=8"},
      {"causal_conv1d", "tokens=4,channels=64"},
  };
  for (const auto& [op, shape] : cases) {
    const std::vector<double> calls = call_allocations(op, shape);
    ASSERT_GE(calls.size(), 3u) << op;
    // The first call may grow the thread's scratch; none after it allocates.
    for (std::size_t i = 1; i < calls.size(); ++i)
      EXPECT_EQ(calls[i], 0) << op << " " << shape << ", call " << i;
  }
}

// The counter sees allocations where there are some: a model's first forward creates its
// activation packs (one per Linear shape) and grows its scratch; later forwards, prefill or decode
// steps (whose RoPE table is rebuilt in the storage of one no cache reads any more), allocate
// nothing.
TEST(K3benchAllocations, AModelsFirstForwardAllocatesAndLaterOnesDoNot) {
  const std::string model =
      "hidden=128,intermediate=256,layers=2,q_heads=4,kv_heads=2,head_dim=32,rotary_dim=32,"
      "rope_theta=10000,vocab=256";
  for (const auto& [op, tokens] : std::vector<std::pair<std::string, std::string>>{
           {"model_pp", "pp=8"}, {"model_tg", "tg=2"}}) {
    const std::vector<double> calls = call_allocations(op, model + "," + tokens);
    ASSERT_GE(calls.size(), 3u) << op;
    EXPECT_GT(calls[0], 0) << op;
    for (std::size_t i = 1; i < calls.size(); ++i) EXPECT_EQ(calls[i], 0) << op << ", call " << i;
  }
}

}  // namespace
