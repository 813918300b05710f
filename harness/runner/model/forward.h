// The forward pass of a Qwen3 / Qwen3.5 model over the kernel library: embedding, every layer
// (RMSNorm, projections, QK norm, RoPE through the KV cache, attention with its optional output
// gate -- or the Gated DeltaNet block with its convolution and recurrent state --, the SwiGLU MLP,
// residuals fused into the Linear epilogues), the final norm and the (tied) lm_head. Prefill takes
// the prompt in one batch and returns the last token's logits; decode takes one token at a time,
// growing the KV caches and advancing the recurrent states. Every kernel call is timed by op kind
// (op_timer.h). All buffers are made at construction: the calls allocate nothing but the
// activation packs of a new prompt length (first call only).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <unordered_map>
#include <vector>

#include "k3k/aligned_buffer.h"
#include "k3k/dispatch.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/worker_pool.h"
#include "harness/common/model/model_config.h"
#include "harness/runner/model/model_params.h"
#include "harness/runner/model/model_weights.h"
#include "harness/runner/model/op_timer.h"

namespace k3runner::model {

class Forward {
 public:
  // max_prompt: the longest prefill; capacity: the longest context (prompt + decode steps).
  Forward(const k3model::ModelConfig& config, const ModelWeights& weights,
          const ModelParams& params, k3k::KernelPath path, k3k::WorkerPool& pool,
          std::int64_t max_prompt, std::int64_t capacity);

  // Forgets every token: caches rewound, recurrent and convolution states zeroed (timed).
  void reset();
  // Keeps / brings back the current position and states (a decode run restarts from a prompt).
  void snapshot();
  void restore();

  std::span<const float> prefill(std::span<const std::int32_t> tokens);
  // A context longer than the longest prefill batch (a depth filled before a test): prefill calls
  // of at most max_prompt tokens each.
  std::span<const float> prefill_in_batches(std::span<const std::int32_t> tokens);
  std::span<const float> decode(std::int32_t token);
  // Instead of a prefill: `tokens` positions of seeded values in every KV cache, recurrent and
  // convolution state, in no time (untimed). For instruction counts of a step at a depth, which
  // do not depend on the values in the caches: prefilling 512 tokens costs minutes under qemu.
  void fill_synthetic(std::int64_t tokens, std::uint64_t seed);
  // Greedy choice over the last logits (timed as kSample).
  std::int32_t argmax();

  std::int64_t position() const { return position_; }
  // The logits of the last prefill or decode call.
  std::span<const float> logits() const { return logits_.span(); }
  OpTimer& timer() { return timer_; }
  const k3k::KernelPath& path() const { return path_; }
  // Bytes of the KV caches and recurrent states.
  std::int64_t state_bytes() const;
  // Decode Linears that run the TCM pipeline (their gate said yes), of all decode Linears.
  std::pair<int, int> tcm_linears() const;

 private:
  struct Tilings {
    k3k::LinearTiling prefill, decode;
    k3k::TcmGateDecision tcm;  // the decode call's TCM gate (use_tcm false without a workspace)
  };
  std::span<const float> forward(std::int64_t tokens);
  void attention_block(int layer, std::int64_t tokens);
  void deltanet_block(int layer, std::int64_t tokens);
  void mlp_block(int layer, std::int64_t tokens);
  void final_logits(std::int64_t tokens);
  const k3k::PackedActivations& quantize(const float* x, std::int64_t m, std::int64_t k);
  // out = x W^T (+ residual), prefill or decode kernel by m.
  void linear(Op op, const k3k::PackedActivations& a, const k3k::W4B64Packed& w, float* out,
              const float* residual = nullptr);
  void swap_residual() { std::swap(x_, x_next_); }

  const k3model::ModelConfig& c_;
  const ModelWeights& w_;
  ModelParams params_;
  k3k::KernelPath path_;
  k3k::WorkerPool& pool_;
  std::int64_t max_prompt_;
  OpTimer timer_;
  std::int64_t position_ = 0;

  std::unordered_map<const k3k::W4B64Packed*, Tilings> tilings_;
  std::map<std::pair<std::int64_t, std::int64_t>, k3k::PackedActivations> packs_;

  // Per layer: a KV cache (full attention) or the recurrent and convolution states.
  std::vector<k3k::KvCache> caches_;
  std::vector<int> cache_of_;  // layer -> index in caches_ (-1: linear layer)
  std::vector<k3k::AlignedBuffer<float>> gdn_state_, conv_state_;
  std::vector<int> state_of_;  // layer -> index in gdn_state_ (-1: full attention)
  struct Snapshot {
    std::int64_t position = 0;
    std::vector<std::int64_t> lengths;
    std::vector<k3k::AlignedBuffer<float>> gdn, conv;
  } snap_;

  // Activations, [max_prompt][.] each.
  k3k::AlignedBuffer<float> x_, x_next_, h_, q_, k_, v_, query_, gate_, attn_;
  k3k::AlignedBuffer<float> mixed_, conv_out_, z_, a_, b_, g_, beta_, core_;
  k3k::AlignedBuffer<float> mlp_gate_, mlp_up_, last_, logits_;
  std::vector<std::int32_t> one_token_;
};

}  // namespace k3runner::model
