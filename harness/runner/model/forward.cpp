#include "harness/runner/model/forward.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "harness/runner/model/trace_recorder.h"
#include "k3k/embedding.h"
#include "k3k/fp16.h"
#include "k3k/rope.h"
#include "k3k/seeded_random.h"
#include "k3k/small_ops.h"
#include "k3k/traffic.h"

namespace k3runner::model {
namespace {

k3k::AlignedBuffer<float> buffer(std::int64_t rows, std::int64_t cols) {
  return k3k::AlignedBuffer<float>(
      static_cast<std::size_t>(std::max<std::int64_t>(rows * cols, 1)));
}

// K3BENCH_PLANT_OP_WORK=<op>:<spins> (a test hook; op_timer.h).
void plant_from_env(OpTimer& timer) {
  const char* env = std::getenv("K3BENCH_PLANT_OP_WORK");
  if (env == nullptr || *env == '\0') return;
  const std::string text = env;
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i) {
    if (name == op_name(static_cast<Op>(i)) && colon != std::string::npos) {
      timer.plant(static_cast<Op>(i), std::stoull(text.substr(colon + 1)));
      return;
    }
  }
  throw std::invalid_argument("K3BENCH_PLANT_OP_WORK: '" + text + "' is not <op>:<spins>");
}

}  // namespace

void planted_work(std::uint64_t spins) {
  // A dependent chain the compiler cannot shorten (the result is kept in a volatile).
  static volatile std::uint64_t sink = 0;
  std::uint64_t x = sink + 1;
  for (std::uint64_t i = 0; i < spins; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  sink = x;
}

Forward::Forward(const k3model::ModelConfig& c, const ModelWeights& w, const ModelParams& params,
                 k3k::KernelPath path, k3k::WorkerPool& pool, std::int64_t max_prompt,
                 std::int64_t capacity)
    : c_(c),
      w_(w),
      params_(params),
      path_(path),
      pool_(pool),
      max_prompt_(std::max<std::int64_t>(1, max_prompt)) {
  if (capacity < max_prompt_) throw std::invalid_argument("Forward: capacity below the prompt");
  plant_from_env(timer_);
  auto tiling = [&](const k3k::W4B64Packed& m) {
    if (m.n <= 0) return;
    Tilings t{params_.linear_for(false, m.n, m.k), params_.linear_for(true, m.n, m.k), {}};
    if (params_.tcm_workspace != nullptr)
      t.tcm = k3k::decide_tcm_decode(path_, m, params_.tcm_workspace, params_.tcm_decode,
                                     pool_.size());
    tilings_[&m] = t;
  };
  tiling(w_.output_head());
  for (int i = 0; i < c_.layers; ++i) {
    const LayerWeights& l = w_.layers[static_cast<std::size_t>(i)];
    for (const auto* m : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.gdn.qkv, &l.gdn.z,
                          &l.gdn.a, &l.gdn.b, &l.gdn.out, &l.gate, &l.up, &l.down})
      tiling(*m);
    if (l.linear) {
      cache_of_.push_back(-1);
      state_of_.push_back(static_cast<int>(gdn_state_.size()));
      gdn_state_.emplace_back(
          static_cast<std::size_t>(std::int64_t(c_.lin_v_heads) * c_.lin_k_dim * c_.lin_v_dim));
      conv_state_.emplace_back(
          static_cast<std::size_t>(std::int64_t(c_.conv_kernel - 1) * c_.conv_dim()));
    } else {
      state_of_.push_back(-1);
      cache_of_.push_back(static_cast<int>(caches_.size()));
      caches_.emplace_back(k3k::KvCacheConfig{c_.kv_heads,
                                              c_.head_dim,
                                              capacity,
                                              params_.kv_dtype,
                                              false,
                                              {c_.rotary_dim, c_.rope_theta}});
    }
  }
  const std::int64_t t = max_prompt_, hd = c_.hidden;
  x_ = buffer(t, hd);
  x_next_ = buffer(t, hd);
  h_ = buffer(t, hd);
  mlp_gate_ = buffer(t, c_.intermediate);
  mlp_up_ = buffer(t, c_.intermediate);
  if (c_.full_layers() > 0) {
    q_ = buffer(t, c_.q_proj_n());
    k_ = buffer(t, c_.kv_dim());
    v_ = buffer(t, c_.kv_dim());
    query_ = buffer(t, c_.attn_dim());
    gate_ = buffer(t, c_.attn_dim());
    attn_ = buffer(t, c_.attn_dim());
  }
  if (c_.linear_layers() > 0) {
    mixed_ = buffer(t, c_.conv_dim());
    conv_out_ = buffer(t, c_.conv_dim());
    z_ = buffer(t, c_.lin_value_dim());
    a_ = buffer(t, c_.lin_v_heads);
    b_ = buffer(t, c_.lin_v_heads);
    g_ = buffer(t, c_.lin_v_heads);
    beta_ = buffer(t, c_.lin_v_heads);
    core_ = buffer(t, c_.lin_value_dim());
  }
  last_ = buffer(1, hd);
  logits_ = buffer(1, c_.vocab);
  one_token_.resize(1);
}

std::int64_t Forward::state_bytes() const {
  std::int64_t b = 0;
  for (const auto& cache : caches_) b += static_cast<std::int64_t>(cache.bytes());
  for (const auto& s : gdn_state_) b += static_cast<std::int64_t>(s.size_bytes());
  for (const auto& s : conv_state_) b += static_cast<std::int64_t>(s.size_bytes());
  return b;
}

std::pair<int, int> Forward::tcm_linears() const {
  int on = 0;
  for (const auto& [w, t] : tilings_) on += t.tcm.use_tcm ? 1 : 0;
  return {on, static_cast<int>(tilings_.size())};
}

void Forward::reset() {
  timer_.time(Op::kStateReset, [&] {
    for (auto& cache : caches_) cache.reset();
    for (auto& s : gdn_state_) std::fill(s.begin(), s.end(), 0.0f);
    for (auto& s : conv_state_) std::fill(s.begin(), s.end(), 0.0f);
  });
  position_ = 0;
}

void Forward::snapshot() {
  snap_.position = position_;
  snap_.lengths.clear();
  for (const auto& cache : caches_) snap_.lengths.push_back(cache.length());
  snap_.gdn.clear();
  snap_.conv.clear();
  for (const auto& s : gdn_state_)
    snap_.gdn.push_back(k3k::AlignedBuffer<float>::copy_of(s.span()));
  for (const auto& s : conv_state_)
    snap_.conv.push_back(k3k::AlignedBuffer<float>::copy_of(s.span()));
}

void Forward::restore() {
  timer_.time(Op::kStateReset, [&] {
    for (std::size_t i = 0; i < caches_.size(); ++i) caches_[i].set_length(snap_.lengths[i]);
    for (std::size_t i = 0; i < gdn_state_.size(); ++i)
      std::memcpy(gdn_state_[i].data(), snap_.gdn[i].data(), gdn_state_[i].size_bytes());
    for (std::size_t i = 0; i < conv_state_.size(); ++i)
      std::memcpy(conv_state_[i].data(), snap_.conv[i].data(), conv_state_[i].size_bytes());
  });
  position_ = snap_.position;
}

void Forward::fill_synthetic(std::int64_t tokens, std::uint64_t seed) {
  reset();
  k3k::SeededRandom rng(seed);
  // Values a prefill could leave: K and V of unit scale, small recurrent and convolution states.
  auto fill = [&rng](std::span<float> s, double scale) {
    for (float& x : s) x = static_cast<float>(rng.uniform(-scale, scale));
  };
  for (auto& cache : caches_) {
    if (tokens > cache.capacity())
      throw std::invalid_argument("Forward::fill_synthetic: " + std::to_string(tokens) +
                                  " tokens, the caches hold " + std::to_string(cache.capacity()));
    if (cache.dtype() == k3k::KvDtype::f16) {
      auto fill16 = [&rng](k3k::fp16_t* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
          p[i] = k3k::fp32_to_fp16(static_cast<float>(rng.uniform(-1, 1)));
      };
      fill16(cache.k_f16(), cache.k_elements());
      fill16(cache.v_f16(), cache.v_elements());
    } else {
      fill(std::span(cache.k_f32(), cache.k_elements()), 1.0);
      fill(std::span(cache.v_f32(), cache.v_elements()), 1.0);
    }
    cache.set_length(tokens);
    // As prefill_in_batches leaves it: the last batch's RoPE table kept (the decode step's append
    // frees it, which a count includes).
    if (tokens > 0) {
      const std::int64_t last = (tokens - 1) / max_prompt_ * max_prompt_;
      cache.keep_append_rope_table(
          std::make_shared<const k3k::RopeTable>(cache.rope(), last, tokens - last, pool_));
    }
  }
  for (auto& s : gdn_state_) fill(s.span(), 0.05);
  for (auto& s : conv_state_) fill(s.span(), 0.5);
  position_ = tokens;
}

const k3k::PackedActivations& Forward::quantize(const float* x, std::int64_t m, std::int64_t k) {
  auto it = packs_.find({m, k});
  if (it == packs_.end()) {
    it = packs_
             .emplace(std::make_pair(m, k),
                      k3k::make_packed_activations(m, k,
                                                   m == 1 ? k3k::ActivationLayout::kRowK256
                                                          : k3k::ActivationLayout::kRowsM4))
             .first;
  }
  k3k::PackedActivations& p = it->second;
  timer_.time(Op::kQuantize, k3k::quantize_pack_traffic(p), [&] {
    if (m == 1)
      k3k::quantize_pack_decode(path_, x, p);
    else
      k3k::quantize_pack_prefill(path_, x, p, pool_);
  });
  return p;
}

void Forward::linear(Op op, const k3k::PackedActivations& a, const k3k::W4B64Packed& w, float* out,
                     const float* residual) {
  k3k::LinearEpilogue ep;
  ep.residual = residual;
  const Tilings& t = tilings_.at(&w);
  timer_.time(op, k3k::linear_traffic(a, w, ep), [&] {
    if (a.m == 1) {
      k3k::LinearDecodeOptions options;  // the TCM pipeline where this matrix's gate said yes
      if (t.tcm.use_tcm) {
        options.tcm_workspace = params_.tcm_workspace;
        options.tcm_params = &params_.tcm_decode;
        options.tcm_gate = &t.tcm;
      }
      k3k::linear_decode_w4b64(path_, a, w, ep, out, pool_, t.decode, options);
    } else
      k3k::linear_prefill_w4b64(path_, a, w, ep, out, pool_, t.prefill);
  });
}

std::span<const float> Forward::prefill(std::span<const std::int32_t> tokens) {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  if (n < 1 || n > max_prompt_) {
    throw std::invalid_argument("Forward::prefill: " + std::to_string(n) + " tokens (1 to " +
                                std::to_string(max_prompt_) + " supported)");
  }
  timer_.time(Op::kEmbedding, k3k::embedding_traffic(w_.embedding, n), [&] {
    k3k::embedding_lookup_w4b64(path_, w_.embedding, tokens.data(), n, x_.data(), pool_);
  });
  return forward(n);
}

std::span<const float> Forward::prefill_in_batches(std::span<const std::int32_t> tokens) {
  std::span<const float> logits;
  for (std::size_t at = 0; at < tokens.size(); at += static_cast<std::size_t>(max_prompt_))
    logits = prefill(tokens.subspan(at, std::min(tokens.size() - at,
                                                  static_cast<std::size_t>(max_prompt_))));
  return logits;
}

std::span<const float> Forward::decode(std::int32_t token) {
  one_token_[0] = token;
  timer_.time(Op::kEmbedding, k3k::embedding_traffic(w_.embedding, 1), [&] {
    k3k::embedding_lookup_w4b64(path_, w_.embedding, one_token_.data(), 1, x_.data(), pool_);
  });
  return forward(1);
}

std::span<const float> Forward::forward(std::int64_t tokens) {
  for (int i = 0; i < c_.layers; ++i) {
    timer_.set_layer(i);
    if (w_.layers[static_cast<std::size_t>(i)].linear)
      deltanet_block(i, tokens);
    else
      attention_block(i, tokens);
    mlp_block(i, tokens);
  }
  timer_.set_layer(-1);
  final_logits(tokens);
  position_ += tokens;
  if (TraceRecorder* trace = timer_.trace())
    trace->context(position_, OpTimer::nanos(OpTimer::Clock::now()));
  return logits_.span();
}

void Forward::final_logits(std::int64_t tokens) {
  const std::int64_t hd = c_.hidden;
  timer_.time(Op::kNorm, k3k::rowwise_traffic(hd, 1, hd), [&] {
    k3k::rmsnorm(path_, std::span(x_.data() + (tokens - 1) * hd, static_cast<std::size_t>(hd)),
                 w_.final_norm.span(), last_.span(), 1, c_.hidden, static_cast<float>(c_.rms_eps),
                 pool_);
  });
  linear(Op::kLmHead, quantize(last_.data(), 1, hd), w_.output_head(), logits_.data());
}

std::int32_t Forward::argmax() {
  std::int64_t best = 0;
  timer_.time(Op::kSample, k3k::argmax_traffic(c_.vocab),
              [&] { best = k3k::argmax(path_, logits_.span()); });
  return static_cast<std::int32_t>(best);
}

const char* op_name(Op op) {
  static const char* const kNames[] = {
      "embedding",  "norm",      "quantize",  "attn_proj", "qk_norm",    "attn_split",
      "kv_append",  "attention", "attn_gate", "attn_out",  "gdn_proj",   "gdn_conv",
      "gdn_l2norm", "gdn_gates", "gdn_core",  "gdn_norm",  "gdn_out",    "mlp_gate_up",
      "swiglu",     "mlp_down",  "lm_head",   "sample",    "state_reset"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(Op::kCount));
  return kNames[static_cast<int>(op)];
}

}  // namespace k3runner::model
