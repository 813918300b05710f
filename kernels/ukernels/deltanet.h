// Microkernel contracts of the Gated DeltaNet ops (drivers/deltanet.cpp, drivers/deltanet_rows.cpp):
// the drivers own the checks, the chunking, the decay factors (double, shared by every layer), the
// task split and the threading; a layer provides the inner loops below.
#pragma once

#include <cstdint>

#include "ukernels/row_ops.h"

namespace k3k::ukernel {

// One chunk of C tokens of one value head, for one block of `cols` value dims [j0, j0 + cols).
// Per token t (< tokens) and column j, with S the state block (row i at state + i * state_stride):
//   W[t][j] = sum_i k_t[i] S[i][j],  R[t][j] = sum_i q_t[i] S[i][j]     (ascending i, one pass)
//   delta_t[j] = beta[t] * ((v_t[j] - e[t] * W[t][j]) - sum_{s<t} kk[t][s] delta_s[j])  (ascending s)
//   o_t[j] = e[t] * R[t][j] + sum_{s<=t} qk[t][s] delta_s[j]                           (ascending s)
//   S[i][j] = a_end * S[i][j] + sum_t khat[t][i] delta_t[j]                            (ascending t)
// The state is read twice (W/R, update) whatever C is. One token (C = 1, e = a_end = exp(g),
// qk = q.k, khat = k) is the decode step.
struct GdnChunk {
  int tokens = 0;  // C' <= chunk
  int k_dim = 0;
  int cols = 0;
  const float* q = nullptr;  // token t: q + t * q_stride (k_dim floats)
  std::int64_t q_stride = 0;
  const float* k = nullptr;
  std::int64_t k_stride = 0;
  const float* v = nullptr;  // token t: v + t * v_stride, already offset to column j0
  std::int64_t v_stride = 0;
  const float* beta = nullptr;  // [C'] this head's beta
  const float* e = nullptr;     // [C'] exp(G_t), G the chunk's cumulative log decay
  const float* kk = nullptr;    // [C'][ld] row t: exp(G_t - G_s) k_t.k_s for s < t
  const float* qk = nullptr;    // [C'][ld] row t: exp(G_t - G_s) q_t.k_s for s <= t
  int ld = 0;                   // row length of kk and qk
  const float* khat = nullptr;  // [C'][k_dim] exp(G_last - G_t) k_t
  float a_end = 1.0f;           // exp(G_last)
  float* state = nullptr;       // S[i][j0..] at state + i * state_stride
  std::int64_t state_stride = 0;
  float* out = nullptr;  // o_t[j0..] at out + t * out_stride
  std::int64_t out_stride = 0;
  float* scratch = nullptr;  // 3 * C' * cols floats (W, R, delta), 64-byte aligned
};

struct GatedDeltaNet {
  const char* name;  // e.g. "gated_deltanet-f32-chunk-cols-rvv"
  // Dot product of n floats, for the chunk's C x C products and q.k (the layer's reduction, whose
  // depth the reference's error model is given).
  float (*dot)(const float* a, const float* b, int n);
  void (*chunk_columns)(const GdnChunk& c);
};

struct GdnGates {
  const char* name;  // e.g. "gdn_gates-f32-rvv"
  // One token's heads: x = fl(a[h] + dt_bias[h]); g[h] = neg_a[h] * softplus(x) with
  // softplus(x) = max(x, 0) + log1p(exp(-|x|)); beta[h] = 1 / (1 + exp(-b[h])).
  void (*row)(const float* a, const float* b, const float* neg_a, const float* dt_bias, float* g,
              float* beta, int heads);
};

struct L2Norm {
  const char* name;  // e.g. "l2norm-f32-rvv"
  // y = fl(fl(x * inv) * scale), inv = 1 / sqrt(fl(sum x^2) + eps) (y may be x).
  void (*row)(const float* x, float* y, int dim, float eps, float scale);
};

struct CausalConv {
  const char* name;  // e.g. "causal_conv1d-f32-k4-rvv"
  // Channels [c0, c0 + n) of `tokens` tokens: window row r of token t is
  // (t + r < kernel - 1) ? state[(t + r) * ld] : x[(t + r - kernel + 1) * ld] (pointers already
  // offset to c0; ld = channels), acc = w[0] u_0 + ... ascending taps (w row j at w + j * ld),
  // y[t * ld] = silu(acc).
  void (*block)(const float* x, const float* state, const float* w, float* y, std::int64_t tokens,
                int kernel, std::int64_t ld, std::int64_t n);
};

struct GatedRmsnorm {
  const char* name;  // e.g. "gated_rmsnorm-f32-rvv"
  // y = fl(fl(fl(x * inv) * w) * silu(z)), inv the shared RMSNorm scalar (y may be x).
  void (*row)(const float* x, const float* z, const float* w, float* y, int dim, float eps);
};

struct SigmoidGate {
  const char* name;     // e.g. "sigmoid_gate-f32-rvv"
  ElementwiseFn range;  // out = x / (1 + exp(-gate))
};

}  // namespace k3k::ukernel
