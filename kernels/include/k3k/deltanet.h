// Gated DeltaNet, the linear attention of Qwen3.5 (the dispatched ops; KernelPath: k3k/dispatch.h).
// One linear-attention layer runs, per token t (HF Qwen3_5GatedDeltaNet / FLA chunk_gated_delta_rule):
//
//   mixed = in_proj_qkv(x)                       [T][2*k_heads*k_dim + v_heads*v_dim]
//   mixed = causal_conv1d(mixed) (kernel 4, SiLU, rolling state)          -> causal_conv1d
//   q, k, v = split(mixed);  q = l2norm(q) / sqrt(k_dim);  k = l2norm(k)  -> l2norm
//   g = -exp(A_log) * softplus(in_proj_a(x) + dt_bias);  beta = sigmoid(in_proj_b(x)) -> gdn_gates
//   per value head h (keys of key head h / (v_heads / k_heads)), state S[k_dim][v_dim]:
//       S = exp(g_t) S;  delta = beta_t (v_t - k_t^T S);  S += k_t delta^T;  o_t = q_t^T S
//                                                  -> gdn_decode (one token), gdn_prefill (chunked)
//   o = rmsnorm(o) * w * silu(in_proj_z(x))  per (token, value head)      -> gated_rmsnorm
//   y = out_proj(o)
// The full-attention layers of Qwen3.5 gate their output: attn * sigmoid(gate) -> sigmoid_gate.
//
// Layouts: activations are [tokens][heads][dim] fp32; q/k/v may live inside a wider row (the conv
// output [q | k | v] of each token), so the recurrence ops take a token stride per tensor. The
// recurrent state is [v_heads][k_dim][v_dim] fp32 (row i = key dim, contiguous over value dims).
//
// Every op makes each task own disjoint outputs computed in a fixed order, so results are bitwise
// identical for every WorkerPool size (and, for the recurrence, every column block width); only
// the chunk size of gdn_prefill changes the rounding. Bounds: k3k/reference/deltanet.h.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/dispatch.h"
#include "k3k/worker_pool.h"

namespace k3k {

// Head counts and sizes of one linear-attention layer (Qwen3.5: 16, 16, 128, 128).
struct GdnDims {
  int k_heads = 0;  // query/key heads; v_heads must be a multiple (value head h reads key head
                    // h / (v_heads / k_heads), the GQA-style expansion of FLA)
  int v_heads = 0;
  int k_dim = 0;
  int v_dim = 0;
  std::int64_t state_floats() const { return std::int64_t(v_heads) * k_dim * v_dim; }
};

// The recurrence's per-token inputs: token t, head h of q starts at q + t * q_stride + h * k_dim
// (likewise k with k_dim, v with v_dim); strides are in floats and at least heads * dim.
// q must already be L2-normalised and scaled (l2norm with scale 1/sqrt(k_dim)), k L2-normalised;
// g is the log of the per-step decay (<= 0), beta in [0, 1]; g and beta are [tokens][v_heads].
// (The error bounds assume exp(g) <= 1 and beta |k|^2 <= 2, which make one step non-expansive;
// the reference measures the actual contraction, so other inputs get a correct, looser bound.)
struct GdnInputs {
  const float* q = nullptr;
  std::int64_t q_stride = 0;
  const float* k = nullptr;
  std::int64_t k_stride = 0;
  const float* v = nullptr;
  std::int64_t v_stride = 0;
  const float* g = nullptr;
  const float* beta = nullptr;
};

// Prefill tiling. The tokens are processed in chunks of `chunk`: per chunk and value head the
// decays (double cumulative sums, each factor rounded once) and the chunk's C x C key-key and
// query-key products are formed once; then per (value head, block of `columns` value dims) the
// chunk's state products (K S and Q S, one pass over S), the pseudo-values delta by forward
// substitution, the outputs and the state update (one more pass over S). `chunk` changes the
// rounding (and the work: ~3 k_dim v_dim + chunk (k_dim + v_dim) multiply-adds per token and
// head); `columns` only the task split.
struct GdnPrefillTiling {
  int chunk = 64;
  int columns = 64;
};
// Decode: one token; a task is (value head, block of `columns` value dims).
struct GdnDecodeTiling {
  int columns = 64;
};

// Throw std::invalid_argument naming the bad field.
void validate(const GdnDims& dims, const char* op);
void validate(const GdnPrefillTiling& tiling, const char* op);
void validate(const GdnDecodeTiling& tiling, const char* op);

// The recurrence over `tokens` tokens from `state` (updated in place); out: [tokens][v_heads][v_dim].
void gdn_prefill(KernelPath path, const GdnDims& dims, std::int64_t tokens, const GdnInputs& in,
                 std::span<float> state, std::span<float> out, WorkerPool& pool,
                 const GdnPrefillTiling& tiling = {});
// One token (in holds token 0): S = exp(g) S + k delta^T, o = exp(g) q^T S_old + (q.k) delta.
void gdn_decode(KernelPath path, const GdnDims& dims, const GdnInputs& in, std::span<float> state,
                std::span<float> out, WorkerPool& pool, const GdnDecodeTiling& tiling = {});

// Gates, per token t and value head h:
//   g[t][h] = -exp(a_log[h]) * softplus(fl(a[t][h] + dt_bias[h])),  beta[t][h] = sigmoid(b[t][h]).
// a, b: [tokens][heads] with row stride a_stride / b_stride (Linear outputs may be padded);
// g, beta: [tokens][heads]. exp(a_log) is formed in double and rounded once (shared by layers).
void gdn_gates(KernelPath path, const float* a, std::int64_t a_stride, const float* b,
               std::int64_t b_stride, std::span<const float> a_log, std::span<const float> dt_bias,
               std::span<float> g, std::span<float> beta, std::int64_t tokens, int heads,
               WorkerPool& pool);

// y = x / sqrt(sum(x^2) + eps) * scale per (token, head) row of dim; x rows at
// x + t * x_stride + h * dim, y likewise with y_stride (y may be x: in place).
void l2norm(KernelPath path, const float* x, std::int64_t x_stride, float* y,
            std::int64_t y_stride, std::int64_t tokens, int heads, int dim, float eps, float scale,
            WorkerPool& pool);

// Depthwise causal convolution with `kernel` taps, then SiLU, over [tokens][channels]:
//   y[t][c] = silu( sum_{j < kernel} w[j][c] * u[t - kernel + 1 + j][c] )
// where u is the token sequence preceded by the rolling state: state is [kernel-1][channels], row
// 0 the oldest input, and afterwards holds the last kernel-1 inputs. Weights are tap-major
// [kernel][channels] (HF's conv1d.weight[c][0][j] transposed). The taps are summed in ascending j.
// x and y are distinct.
void causal_conv1d(KernelPath path, std::span<const float> x, std::span<const float> weight,
                   std::span<float> state, std::span<float> y, std::int64_t tokens, int channels,
                   int kernel, WorkerPool& pool);

// y = (x / sqrt(mean(x^2) + eps)) * w * silu(z) per row of dim (Qwen3.5 RMSNormGated):
// x, z, y: [rows][dim] (y may be x), w: [dim].
void gated_rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> z,
                   std::span<const float> weight, std::span<float> y, std::int64_t rows, int dim,
                   float eps, WorkerPool& pool);

// out = x * sigmoid(gate) elementwise (the attention output gate); out may be x.
void sigmoid_gate(KernelPath path, std::span<const float> x, std::span<const float> gate,
                  std::span<float> out, WorkerPool& pool);

}  // namespace k3k
