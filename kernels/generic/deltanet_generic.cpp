// Generic Gated DeltaNet chunk microkernel (contract: ukernels/deltanet.h GdnChunk). Every loop
// runs over a contiguous row of value columns (the innermost j), so compilers vectorise it without
// reassociation; the sums over key dims, tokens and earlier pseudo-values are sequential per
// column, in the contract's order.
#include <algorithm>

#include "generic/lanes_dot.h"
#include "generic/microkernels.h"

namespace k3k::generic {

float gdn_dot(const float* a, const float* b, int n) { return dot_lanes(a, b, n); }

void gdn_chunk_columns(const ukernel::GdnChunk& c) {
  const int C = c.tokens, n = c.cols;
  float* __restrict W = c.scratch;
  float* __restrict R = W + std::int64_t(C) * n;
  float* __restrict D = R + std::int64_t(C) * n;
  std::fill(W, W + 2 * std::int64_t(C) * n, 0.0f);
  // W = K S, R = Q S: one pass over the state rows.
  for (int i = 0; i < c.k_dim; ++i) {
    const float* __restrict s = c.state + i * c.state_stride;
    for (int t = 0; t < C; ++t) {
      const float kt = c.k[t * c.k_stride + i], qt = c.q[t * c.q_stride + i];
      float* __restrict w = W + std::int64_t(t) * n;
      float* __restrict r = R + std::int64_t(t) * n;
      for (int j = 0; j < n; ++j) {
        w[j] += kt * s[j];
        r[j] += qt * s[j];
      }
    }
  }
  // Pseudo-values by forward substitution, then the outputs.
  for (int t = 0; t < C; ++t) {
    float* __restrict d = D + std::int64_t(t) * n;
    const float* __restrict v = c.v + t * c.v_stride;
    const float* __restrict w = W + std::int64_t(t) * n;
    const float e = c.e[t];
    for (int j = 0; j < n; ++j) d[j] = v[j] - e * w[j];
    for (int s = 0; s < t; ++s) {
      const float a = c.kk[std::int64_t(t) * c.ld + s];
      const float* __restrict ds = D + std::int64_t(s) * n;
      for (int j = 0; j < n; ++j) d[j] -= a * ds[j];
    }
    const float b = c.beta[t];
    for (int j = 0; j < n; ++j) d[j] *= b;
  }
  for (int t = 0; t < C; ++t) {
    float* __restrict o = c.out + t * c.out_stride;
    const float* __restrict r = R + std::int64_t(t) * n;
    const float e = c.e[t];
    for (int j = 0; j < n; ++j) o[j] = e * r[j];
    for (int s = 0; s <= t; ++s) {
      const float a = c.qk[std::int64_t(t) * c.ld + s];
      const float* __restrict ds = D + std::int64_t(s) * n;
      for (int j = 0; j < n; ++j) o[j] += a * ds[j];
    }
  }
  // State update: S = a_end S + sum_t khat_t delta_t^T.
  for (int i = 0; i < c.k_dim; ++i) {
    float* __restrict s = c.state + i * c.state_stride;
    for (int j = 0; j < n; ++j) s[j] *= c.a_end;
    for (int t = 0; t < C; ++t) {
      const float kh = c.khat[std::int64_t(t) * c.k_dim + i];
      const float* __restrict dt = D + std::int64_t(t) * n;
      for (int j = 0; j < n; ++j) s[j] += kh * dt[j];
    }
  }
}

}  // namespace k3k::generic
