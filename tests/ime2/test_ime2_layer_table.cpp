// The IME2 layer's microkernel table (kernels/ime2/layer_ime2.cpp): its own Linear kernels and
// weight packing, and the RVV layer's microkernels for every other op. The qemu runs of the IME2
// trees rely on this to sweep only the ops that differ over the Ime2/ layer (tests/CMakeLists.txt):
// if the IME2 layer ever takes its own kernel for another op, this fails and the filter must let
// that op's Ime2/ instances run.
#include <gtest/gtest.h>

#include <string>

#include "dispatch/layers.h"

namespace {

TEST(Ime2LayerTable, EveryOpButLinearQuantiseAndEmbeddingRunsTheRvvMicrokernels) {
  const k3k::dispatch::Layer* ime2 = k3k::dispatch::find_layer(k3k::KernelPath::kIme2);
  const k3k::dispatch::Layer* rvv = k3k::dispatch::find_layer(k3k::KernelPath::kRvv);
  ASSERT_NE(ime2, nullptr);
  ASSERT_NE(rvv, nullptr);
  const auto& a = ime2->kernels();
  const auto& b = rvv->kernels();
  auto same = [](const char* op, const char* x, const char* y) {
    EXPECT_STREQ(x, y) << op;
    EXPECT_NE(std::string(x).find("-rvv"), std::string::npos) << op << ": " << x;
  };
  same("attention_prefill", a.attention_prefill.name, b.attention_prefill.name);
  same("attention_decode", a.attention_decode.name, b.attention_decode.name);
  same("kv_append", a.kv_append.name, b.kv_append.name);
  same("rmsnorm", a.rmsnorm.name, b.rmsnorm.name);
  same("swiglu", a.swiglu.name, b.swiglu.name);
  same("residual_add", a.residual_add.name, b.residual_add.name);
  same("gated_deltanet", a.gated_deltanet.name, b.gated_deltanet.name);
  same("gdn_gates", a.gdn_gates.name, b.gdn_gates.name);
  same("l2norm", a.l2norm.name, b.l2norm.name);
  same("causal_conv", a.causal_conv.name, b.causal_conv.name);
  same("gated_rmsnorm", a.gated_rmsnorm.name, b.gated_rmsnorm.name);
  same("sigmoid_gate", a.sigmoid_gate.name, b.sigmoid_gate.name);
  // And the Linear kernels are its own.
  EXPECT_NE(std::string(a.weight_packing.name), std::string(b.weight_packing.name));
}

}  // namespace
