// The three blocks of a layer: full attention (Qwen3, and Qwen3.5's gated variant), the Gated
// DeltaNet block (Qwen3.5 linear attention) and the SwiGLU MLP. Each reads the residual stream x_,
// writes x_ + block(x_) through the last Linear's residual epilogue into x_next_ and swaps.
#include <cmath>
#include <cstring>

#include "harness/runner/model/forward.h"
#include "k3k/attention.h"
#include "k3k/deltanet.h"
#include "k3k/kv_cache.h"
#include "k3k/small_ops.h"
#include "k3k/traffic.h"

namespace k3runner::model {
namespace {

std::span<float> rows(k3k::AlignedBuffer<float>& b, std::int64_t rows, std::int64_t cols) {
  return {b.data(), static_cast<std::size_t>(rows * cols)};
}

// The L2 norm's eps of HF's Gated DeltaNet (l2norm(x, eps=1e-6)).
constexpr float kL2Eps = 1e-6f;

}  // namespace

void Forward::attention_block(int layer, std::int64_t t) {
  const LayerWeights& l = w_.layers[static_cast<std::size_t>(layer)];
  k3k::KvCache& cache =
      caches_[static_cast<std::size_t>(cache_of_[static_cast<std::size_t>(layer)])];
  const std::int64_t hd = c_.hidden, d = c_.head_dim, qn = c_.attn_dim(), kvn = c_.kv_dim();
  const float eps = static_cast<float>(c_.rms_eps);
  timer_.time(Op::kNorm, k3k::rowwise_traffic(t * hd, 1, hd), [&] {
    k3k::rmsnorm(path_, rows(x_, t, hd), l.input_norm.span(), rows(h_, t, hd), t, c_.hidden, eps,
                 pool_);
  });
  const k3k::PackedActivations& a = quantize(h_.data(), t, hd);
  linear(Op::kAttnProj, a, l.attn.q, q_.data());
  linear(Op::kAttnProj, a, l.attn.k, k_.data());
  linear(Op::kAttnProj, a, l.attn.v, v_.data());
  float* query = q_.data();
  if (c_.attn_output_gate) {
    // q_proj gives [t][head][query (d) | gate (d)]: the kernels want [t][head][d] of each.
    timer_.time(Op::kAttnSplit, k3k::rowwise_traffic(2 * t * qn, 1), [&] {
      for (std::int64_t r = 0; r < t * c_.q_heads; ++r) {
        std::memcpy(query_.data() + r * d, q_.data() + 2 * r * d, d * sizeof(float));
        std::memcpy(gate_.data() + r * d, q_.data() + (2 * r + 1) * d, d * sizeof(float));
      }
    });
    query = query_.data();
  }
  const std::span<float> q(query, static_cast<std::size_t>(t * qn));
  if (c_.qk_norm) {
    timer_.time(Op::kQkNorm, k3k::rowwise_traffic(t * (qn + kvn), 1, 2 * d), [&] {
      k3k::rmsnorm(path_, q, l.attn.q_norm.span(), q, t * c_.q_heads, c_.head_dim, eps, pool_);
      k3k::rmsnorm(path_, rows(k_, t, kvn), l.attn.k_norm.span(), rows(k_, t, kvn), t * c_.kv_heads,
                   c_.head_dim, eps, pool_);
    });
  }
  timer_.time(Op::kKvAppend, k3k::kv_append_traffic(cache, t), [&] {
    if (t == 1)
      k3k::kv_append_one(path_, cache, rows(k_, 1, kvn), rows(v_, 1, kvn), pool_);
    else
      k3k::kv_append(path_, cache, rows(k_, t, kvn), rows(v_, t, kvn), t, pool_);
  });
  timer_.time(Op::kAttention, k3k::attention_traffic(cache, t, c_.q_heads), [&] {
    if (t == 1)
      k3k::attention_decode(path_, cache, q, c_.q_heads, rows(attn_, 1, qn), pool_,
                            params_.attention_decode);
    else
      k3k::attention_prefill(path_, cache, q, t, c_.q_heads, rows(attn_, t, qn), pool_,
                             params_.attention_prefill);
  });
  if (c_.attn_output_gate) {
    timer_.time(Op::kAttnGate, k3k::rowwise_traffic(t * qn, 2), [&] {
      k3k::sigmoid_gate(path_, rows(attn_, t, qn), rows(gate_, t, qn), rows(attn_, t, qn), pool_);
    });
  }
  linear(Op::kAttnOut, quantize(attn_.data(), t, qn), l.attn.o, x_next_.data(), x_.data());
  swap_residual();
}

void Forward::deltanet_block(int layer, std::int64_t t) {
  const LayerWeights& l = w_.layers[static_cast<std::size_t>(layer)];
  const int s = state_of_[static_cast<std::size_t>(layer)];
  k3k::AlignedBuffer<float>& state = gdn_state_[static_cast<std::size_t>(s)];
  k3k::AlignedBuffer<float>& conv_state = conv_state_[static_cast<std::size_t>(s)];
  const std::int64_t hd = c_.hidden, cd = c_.conv_dim(), vd = c_.lin_value_dim(),
                     kd = c_.lin_key_dim();
  const int hv = c_.lin_v_heads;
  timer_.time(Op::kNorm, k3k::rowwise_traffic(t * hd, 1, hd), [&] {
    k3k::rmsnorm(path_, rows(x_, t, hd), l.input_norm.span(), rows(h_, t, hd), t, c_.hidden,
                 static_cast<float>(c_.rms_eps), pool_);
  });
  const k3k::PackedActivations& a = quantize(h_.data(), t, hd);
  linear(Op::kGdnProj, a, l.gdn.qkv, mixed_.data());
  linear(Op::kGdnProj, a, l.gdn.z, z_.data());
  linear(Op::kGdnProj, a, l.gdn.a, a_.data());
  linear(Op::kGdnProj, a, l.gdn.b, b_.data());
  timer_.time(Op::kGdnConv, k3k::conv_traffic(t, cd, c_.conv_kernel), [&] {
    k3k::causal_conv1d(path_, rows(mixed_, t, cd), l.gdn.conv.span(), conv_state.span(),
                       rows(conv_out_, t, cd), t, static_cast<int>(cd), c_.conv_kernel, pool_);
  });
  timer_.time(Op::kGdnL2Norm, k3k::rowwise_traffic(2 * t * kd, 1), [&] {
    k3k::l2norm(path_, conv_out_.data(), cd, conv_out_.data(), cd, t, c_.lin_k_heads, c_.lin_k_dim,
                kL2Eps, static_cast<float>(1.0 / std::sqrt(double(c_.lin_k_dim))), pool_);
    k3k::l2norm(path_, conv_out_.data() + kd, cd, conv_out_.data() + kd, cd, t, c_.lin_k_heads,
                c_.lin_k_dim, kL2Eps, 1.0f, pool_);
  });
  timer_.time(Op::kGdnGates, k3k::rowwise_traffic(2 * t * hv, 2, 2 * hv), [&] {
    k3k::gdn_gates(path_, a_.data(), hv, b_.data(), hv, l.gdn.a_log.span(), l.gdn.dt_bias.span(),
                   rows(g_, t, hv), rows(beta_, t, hv), t, hv, pool_);
  });
  const k3k::GdnDims dims{c_.lin_k_heads, c_.lin_v_heads, c_.lin_k_dim, c_.lin_v_dim};
  const k3k::GdnInputs in{
      conv_out_.data(), cd,          conv_out_.data() + kd, cd, conv_out_.data() + 2 * kd, cd,
      g_.data(),        beta_.data()};
  timer_.time(Op::kGdnCore, k3k::gdn_traffic(dims, t, params_.gdn_prefill.chunk), [&] {
    if (t == 1)
      k3k::gdn_decode(path_, dims, in, state.span(), rows(core_, 1, vd), pool_, params_.gdn_decode);
    else
      k3k::gdn_prefill(path_, dims, t, in, state.span(), rows(core_, t, vd), pool_,
                       params_.gdn_prefill);
  });
  timer_.time(Op::kGdnNorm, k3k::rowwise_traffic(t * vd, 2, c_.lin_v_dim), [&] {
    k3k::gated_rmsnorm(path_, rows(core_, t, vd), rows(z_, t, vd), l.gdn.norm.span(),
                       rows(core_, t, vd), t * hv, c_.lin_v_dim, static_cast<float>(c_.rms_eps),
                       pool_);
  });
  linear(Op::kGdnOut, quantize(core_.data(), t, vd), l.gdn.out, x_next_.data(), x_.data());
  swap_residual();
}

void Forward::mlp_block(int layer, std::int64_t t) {
  const LayerWeights& l = w_.layers[static_cast<std::size_t>(layer)];
  const std::int64_t hd = c_.hidden, in = c_.intermediate;
  timer_.time(Op::kNorm, k3k::rowwise_traffic(t * hd, 1, hd), [&] {
    k3k::rmsnorm(path_, rows(x_, t, hd), l.post_norm.span(), rows(h_, t, hd), t, c_.hidden,
                 static_cast<float>(c_.rms_eps), pool_);
  });
  const k3k::PackedActivations& a = quantize(h_.data(), t, hd);
  linear(Op::kMlpGateUp, a, l.gate, mlp_gate_.data());
  linear(Op::kMlpGateUp, a, l.up, mlp_up_.data());
  timer_.time(Op::kSwiglu, k3k::rowwise_traffic(t * in, 2), [&] {
    k3k::swiglu(path_, rows(mlp_gate_, t, in), rows(mlp_up_, t, in), rows(mlp_gate_, t, in), t, in,
                pool_);
  });
  linear(Op::kMlpDown, quantize(mlp_gate_.data(), t, in), l.down, x_next_.data(), x_.data());
  swap_residual();
}

}  // namespace k3runner::model
