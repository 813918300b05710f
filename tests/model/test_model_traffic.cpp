// Bytes per token of the whole-model forward, from the kernels' own accounting (k3k/traffic.h,
// summed per op by the forward's timer), against an independent recomputation from the model
// config: a decode step at a depth streams every weight it reads at 4.5 bits (codes and fp16 pairs;
// rows padded to the layer's tiles), the fp16 KV cache at depth + 1 and the new token's K and V,
// and the recurrent and convolution states read and written; a prefill of T tokens reads the
// weights once and writes T tokens' K and V. Exact on every layer this binary runs (host: generic;
// qemu: the RVV layer's row tiles too). The tiny test models run everywhere; the five model configs
// (configs/models) run on the host under their own label (ModelTrafficConfigs, label model-extra).
// Weights are zero matrices of the real shapes: the accounting does not depend on the values.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/common/model/model_config.h"
#include "harness/runner/model/forward.h"
#include "harness/runner/model/model_weights.h"
#include "k3k/dispatch.h"
#include "k3k/linear.h"
#include "model_layers.h"

namespace {

using namespace k3runner::model;

k3k::WorkerPool& pool() {
  static k3k::WorkerPool p(2);
  return p;
}

// The bytes the config implies, by source (doubles: exact below 2^53).
struct Expected {
  double weights = 0, metadata = 0, kv_read = 0, kv_write = 0, state = 0;
};

// Every matrix a decode step reads once (N x K), the lm_head included; the embedding row apart.
std::vector<std::pair<std::int64_t, std::int64_t>> decode_matrices(const k3model::ModelConfig& c) {
  std::vector<std::pair<std::int64_t, std::int64_t>> m;
  const std::int64_t h = c.hidden;
  for (int i = 0; i < c.layers; ++i) {
    if (c.is_linear(i)) {
      for (const std::int64_t n : {c.conv_dim(), c.lin_value_dim(), std::int64_t(c.lin_v_heads),
                                   std::int64_t(c.lin_v_heads)})
        m.emplace_back(n, h);
      m.emplace_back(h, c.lin_value_dim());
    } else {
      m.emplace_back(c.q_proj_n(), h);
      m.emplace_back(c.kv_dim(), h);
      m.emplace_back(c.kv_dim(), h);
      m.emplace_back(h, c.attn_dim());
    }
    m.emplace_back(c.intermediate, h);
    m.emplace_back(c.intermediate, h);
    m.emplace_back(h, c.intermediate);
  }
  m.emplace_back(c.vocab, h);  // lm_head (the tied embedding, or its own matrix)
  return m;
}

// Weights at 4 bits and pairs at 4 bytes per 64, rows padded to the layer's row tiles (what the
// packing stores and the kernels read); the looked-up embedding row once per token.
void add_weights(Expected& e, const k3model::ModelConfig& c, k3k::KernelPath path, double passes,
                 std::int64_t tokens) {
  for (const auto& [n, k] : decode_matrices(c)) {
    const std::int64_t rows = k3k::default_weight_rows(path, n, k);
    const double padded = double((n + rows - 1) / rows * rows);
    e.weights += passes * padded * double(k) / 2;
    e.metadata += passes * padded * double(k) / 16;
  }
  e.weights += double(tokens) * c.hidden / 2;  // the embedding rows looked up
  e.metadata += double(tokens) * c.hidden / 16;
}

void add_states(Expected& e, const k3model::ModelConfig& c, double state_passes) {
  const double state = double(c.lin_v_heads) * c.lin_k_dim * c.lin_v_dim * 4;
  const double conv = double(c.conv_kernel - 1) * double(c.conv_dim()) * 4;
  e.state += c.linear_layers() * (state_passes * state + 2 * conv);
}

void expect_bytes(const k3k::Traffic& got, const Expected& want, const std::string& what) {
  EXPECT_EQ(double(got.weights), want.weights) << what;
  EXPECT_EQ(double(got.metadata), want.metadata) << what;
  EXPECT_EQ(double(got.kv_read), want.kv_read) << what;
  EXPECT_EQ(double(got.kv_write), want.kv_write) << what;
  EXPECT_EQ(double(got.state), want.state) << what;
}

// A decode step at `depth` and a prefill of `pp` tokens (empty caches) of `config` on each layer.
// model_shapes: the floor holds to 1% (a tiny test model's 2-head matrices pad to whole tiles).
void check_config(const k3model::ModelConfig& c, std::int64_t depth, std::int64_t pp,
                  bool model_shapes) {
  const double fp16_kv = 2.0 * double(c.kv_dim()) * 2;  // K and V of one token, fp16 (the default)
  for (const k3k::KernelPath path : k3test::model_layers()) {
    const std::string what = c.id + " " + k3k::to_string(path);
    const ModelWeights w = make_synthetic_weights(c, {1, 0, /*zero=*/true}, path, pool());
    ModelParams params;  // fp16 KV, the forward's default
    ASSERT_EQ(params.kv_dtype, k3k::KvDtype::f16);
    Forward fwd(c, w, params, path, pool(), pp, depth + pp + 1);
    fwd.fill_synthetic(depth, 5);
    fwd.timer().clear();
    fwd.decode(3);
    Expected d;
    add_weights(d, c, path, 1, 1);
    d.kv_read = c.full_layers() * fp16_kv * double(depth + 1);
    d.kv_write = c.full_layers() * fp16_kv;
    add_states(d, c, 2);
    const k3k::Traffic step = fwd.timer().total_bytes();
    expect_bytes(step, d, what + " decode at depth " + std::to_string(depth));
    // The floor: all of the above is weights at 4.5 bits + fp16 KV + states; what the step
    // streams is it to within the row tiles' padding (< 1% on the model shapes).
    const double floor = 9.0 / 16 * double(c.body_params() + c.embedding_params() + c.hidden) +
                         d.kv_read + d.kv_write + d.state;
    if (model_shapes) {
      EXPECT_LE(double(step.streamed()), 1.01 * floor) << what;
    }
    EXPECT_GE(double(step.streamed()), floor) << what;
    std::printf("  %-16s %-7s decode @%-5lld streamed %12lld B/token, floor %12.0f (+%.3f%%)\n",
                c.id.c_str(), k3k::to_string(path), static_cast<long long>(depth),
                static_cast<long long>(step.streamed()), floor,
                100.0 * (double(step.streamed()) / floor - 1));

    fwd.reset();
    fwd.timer().clear();
    std::vector<std::int32_t> prompt(static_cast<std::size_t>(pp), 7);
    fwd.prefill(prompt);
    Expected p;
    add_weights(p, c, path, 1, pp);
    p.kv_read = c.full_layers() * fp16_kv * double(pp);
    p.kv_write = c.full_layers() * fp16_kv * double(pp);
    // Gated DeltaNet: one token is a decode step (state read and written), more a chunked prefill
    // (read, read, written per chunk).
    const int chunk = params.gdn_prefill.chunk;
    add_states(p, c, pp == 1 ? 2.0 : 3.0 * double((pp + chunk - 1) / chunk));
    expect_bytes(fwd.timer().total_bytes(), p, what + " prefill of " + std::to_string(pp));
  }
}

TEST(ModelTraffic, BytesPerTokenOfTheTinyModelsAreTheirConfigsOwn) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3.5"}) {
    const auto c =
        k3model::load_model_config(std::string(K3_TEST_MODELS_DIR) + "/" + name + ".toml");
    check_config(c, 40, 9, false);
    check_config(c, 3, 1, false);
  }
}

// The five model configs, at the depths the decode figures are quoted at.
TEST(ModelTrafficConfigs, BytesPerTokenOfEveryModelConfigAreItsOwn) {
  for (const auto& entry : std::filesystem::directory_iterator(K3_MODEL_CONFIGS_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    const auto c = k3model::load_model_config(entry.path().string());
    for (const std::int64_t depth : {512, 4096}) check_config(c, depth, 2, true);
  }
}

}  // namespace
