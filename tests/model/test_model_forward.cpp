// The whole-model forward pass on small model configs (tests/data/models): the kernels' forward
// against the float64 reference forward on every layer this binary and CPU can run (host: generic;
// riscv64 under qemu-user: generic and RVV at the VLEN it runs at), a wrong model caught, logits
// independent of the worker count, weights independent of it too, decode replay after restore,
// and several Gated DeltaNet chunk sizes. Runs in seconds (host and qemu).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "harness/common/model/model_config.h"
#include "harness/runner/model/forward.h"
#include "harness/runner/model/model_check.h"
#include "harness/runner/model/model_weights.h"
#include "harness/runner/model/reference_forward.h"
#include "k3k/dispatch.h"
#include "model_layers.h"

namespace {

using namespace k3runner::model;

k3model::ModelConfig tiny(const char* name) {
  return k3model::load_model_config(std::string(K3_TEST_MODELS_DIR) + "/" + name + ".toml");
}

k3k::WorkerPool& pool(int n) {
  static k3k::WorkerPool p1(1), p2(2), p3(3);
  return n == 1 ? p1 : n == 2 ? p2 : p3;
}

// On the generic layer the fixed seeds below give runs without an int8 code on a rounding
// boundary (deterministic: the generic layer's order of operations is fixed), so those must also
// be float-exact; the RVV layer's other summation order may cross a boundary somewhere, so there
// only the check's tolerance applies.
void expect_check(const char* model, k3k::KernelPath path, int chunk) {
  const auto c = tiny(model);
  const ModelWeights w = make_synthetic_weights(c, {3, 0}, path, pool(2));
  ModelParams p;
  p.gdn_prefill.chunk = chunk;
  const ForwardCheck r = check_forward(c, w, path, pool(2), p, 12, 6, 5);
  std::printf("  %-14s %-7s chunk %-3d %s\n", model, k3k::to_string(path), chunk,
              r.summary().c_str());
  EXPECT_TRUE(r.pass) << model << " " << k3k::to_string(path) << ": " << r.summary();
  if (path == k3k::KernelPath::kGeneric) {
    EXPECT_TRUE(r.float_exact) << model << ": " << r.summary();
  }
}

TEST(ModelForward, TinyHybridMatchesTheFloat64Forward) {
  for (const auto path : k3test::model_layers()) {
    expect_check("tiny-qwen3.5", path, 64);
    expect_check("tiny-qwen3.5", path, 4);  // three chunks of the 12-token prompt
  }
}

TEST(ModelForward, TinyDenseMatchesTheFloat64Forward) {
  for (const auto path : k3test::model_layers()) expect_check("tiny-qwen3", path, 64);
}

// The worst step error of the kernels' forward (config c, weights w) against the quantising
// reference run with a deliberately wrong model (config rc, weights rw).
double error_against(const k3model::ModelConfig& c, const ModelWeights& w,
                     const k3model::ModelConfig& rc, const ModelWeights& rw) {
  ModelParams p;
  p.kv_dtype = k3k::KvDtype::f32;
  Forward f(c, w, p, k3k::KernelPath::kGeneric, pool(2), 12, 18);
  const auto tokens = prompt_tokens(12, c.vocab, 5);
  std::vector<std::vector<float>> got;
  std::vector<std::int32_t> fed;
  const auto first = f.prefill(tokens);
  got.emplace_back(first.begin(), first.end());
  for (int s = 0; s < 6; ++s) {
    fed.push_back(f.argmax());
    const auto l = f.decode(fed.back());
    got.emplace_back(l.begin(), l.end());
  }
  const auto ref = reference_logits(rc, rw, tokens, fed, {true});
  double worst = 0;
  for (std::size_t s = 0; s < got.size(); ++s) worst = std::max(worst, logit_error(got[s], ref[s]));
  return worst;
}

// The check sees a wrong op: the reference runs a model with the wrong RoPE base, RoPE over the
// whole head instead of Qwen3.5's partial rotation, or other Gated DeltaNet decays (A_log + 0.5
// in every linear-attention layer). This run has no int8 code on a rounding boundary (its error
// against the right model is float rounding), so the float-exact tolerance applies: each wrong
// model must exceed it 100-fold. Wrong decays are also past the check's pass tolerance.
TEST(ModelForward, AWrongModelIsCaught) {
  const auto c = tiny("tiny-qwen3.5");
  const ModelWeights w = make_synthetic_weights(c, {3, 0}, k3k::KernelPath::kGeneric, pool(2));
  const double right = error_against(c, w, c, w);
  std::printf("  right model          error %.3g (float-exact tolerance %g)\n", right,
              kFloatTolerance);
  EXPECT_LT(right, kFloatTolerance);
  auto theta = c;
  theta.rope_theta = 1e4;
  auto rotary = c;
  rotary.rotary_dim = c.head_dim;
  ModelWeights decay = make_synthetic_weights(c, {3, 0}, k3k::KernelPath::kGeneric, pool(2));
  for (auto& l : decay.layers)
    for (auto& a : l.gdn.a_log) a += 0.5f;
  const double decays = error_against(c, w, c, decay);
  for (const auto& [what, err] :
       {std::pair{"rope theta", error_against(c, w, theta, w)},
        std::pair{"full rotation", error_against(c, w, rotary, w)}, std::pair{"decays", decays}}) {
    std::printf("  wrong %-14s error %.3g\n", what, err);
    EXPECT_GT(err, 100 * kFloatTolerance) << what;
  }
  EXPECT_GT(decays, kQuantizedTolerance);
}

std::vector<float> run(const k3model::ModelConfig& c, const ModelWeights& w, k3k::KernelPath path,
                       k3k::WorkerPool& p) {
  Forward f(c, w, {}, path, p, 10, 14);
  const auto tokens = prompt_tokens(10, c.vocab, 9);
  std::vector<float> out;
  auto keep = [&](std::span<const float> l) { out.insert(out.end(), l.begin(), l.end()); };
  keep(f.prefill(tokens));
  for (int i = 0; i < 4; ++i) keep(f.decode(f.argmax()));
  return out;
}

TEST(ModelForward, SameLogitsForAnyWorkerCount) {
  for (const char* model : {"tiny-qwen3.5", "tiny-qwen3"}) {
    const auto c = tiny(model);
    for (const auto path : k3test::model_layers()) {
      const ModelWeights w = make_synthetic_weights(c, {3, 0}, path, pool(1));
      const auto base = run(c, w, path, pool(1));
      for (int n : {2, 3}) {
        const auto other = run(c, w, path, pool(n));
        ASSERT_EQ(base.size(), other.size());
        EXPECT_EQ(std::memcmp(base.data(), other.data(), base.size() * sizeof(float)), 0)
            << model << " " << k3k::to_string(path) << " with " << n << " workers";
      }
    }
  }
}

TEST(ModelForward, WeightsDoNotDependOnTheWorkerCount) {
  const auto a = synthetic_matrix(100, 192, 42, 0.02, 0, pool(1));
  const auto b = synthetic_matrix(100, 192, 42, 0.02, 0, pool(3));
  const auto other = synthetic_matrix(100, 192, 43, 0.02, 0, pool(3));
  ASSERT_EQ(a.codes.size(), b.codes.size());
  EXPECT_EQ(std::memcmp(a.codes.data(), b.codes.data(), a.codes.size()), 0);
  EXPECT_EQ(std::memcmp(a.pairs.data(), b.pairs.data(), a.pairs.size_bytes()), 0);
  EXPECT_NE(std::memcmp(a.codes.data(), other.codes.data(), a.codes.size()), 0);
  EXPECT_EQ(a.row_tiles(), 4);  // 100 rows: the last tile padded
}

TEST(ModelForward, RestoreReplaysTheDecode) {
  const auto c = tiny("tiny-qwen3.5");
  const ModelWeights w = make_synthetic_weights(c, {3, 0}, k3k::KernelPath::kGeneric, pool(2));
  Forward f(c, w, {}, k3k::KernelPath::kGeneric, pool(2), 8, 16);
  const auto tokens = prompt_tokens(8, c.vocab, 1);
  f.prefill(tokens);
  f.snapshot();
  auto decode3 = [&] {
    std::vector<float> out;
    for (int i = 0; i < 3; ++i) {
      const auto l = f.decode(f.argmax());
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  const auto first = decode3();
  f.restore();
  EXPECT_EQ(f.position(), 8);
  const auto again = decode3();
  EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
  f.reset();
  f.prefill(tokens);
  const auto fresh = decode3();
  EXPECT_EQ(std::memcmp(first.data(), fresh.data(), first.size() * sizeof(float)), 0);
}

TEST(ModelForward, PromptLongerThanPlannedIsRefused) {
  const auto c = tiny("tiny-qwen3");
  const ModelWeights w = make_synthetic_weights(c, {3, 0}, k3k::KernelPath::kGeneric, pool(1));
  Forward f(c, w, {}, k3k::KernelPath::kGeneric, pool(1), 4, 8);
  const auto tokens = prompt_tokens(5, c.vocab, 1);
  EXPECT_THROW(f.prefill(tokens), std::invalid_argument);
}

}  // namespace
