// Generic row-wise microkernels of the Gated DeltaNet layer and the attention output gate: gates
// (libm exp/log1p), L2 norm and gated RMSNorm (sum of squares by the fixed 16-lane dot), the causal
// convolution (taps summed in ascending order) and the sigmoid gate.
#include <algorithm>
#include <cmath>

#include "common/l2_inverse.h"
#include "common/rms_inverse.h"
#include "generic/lanes_dot.h"
#include "generic/microkernels.h"

namespace k3k::generic {
namespace {

// silu(x) = x / (1 + exp(-x)); exp overflows to +inf for x < ~-88.7 and gives -0.
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

void gdn_gates_row(const float* a, const float* b, const float* neg_a, const float* dt_bias,
                   float* g, float* beta, int heads) {
  for (int h = 0; h < heads; ++h) {
    const float x = a[h] + dt_bias[h];
    const float softplus = std::max(x, 0.0f) + std::log1p(std::exp(-std::fabs(x)));
    g[h] = neg_a[h] * softplus;
    beta[h] = 1.0f / (1.0f + std::exp(-b[h]));
  }
}

void l2norm_row(const float* x, float* y, int dim, float eps, float scale) {
  const float inv = detail::l2_inverse(dot_lanes(x, x, dim), eps);
  for (int i = 0; i < dim; ++i) y[i] = (x[i] * inv) * scale;
}

void causal_conv_block(const float* x, const float* state, const float* w, float* y,
                       std::int64_t tokens, int kernel, std::int64_t ld, std::int64_t n) {
  const int hist = kernel - 1;
  for (std::int64_t t = 0; t < tokens; ++t) {
    float* __restrict yt = y + t * ld;
    for (int j = 0; j < kernel; ++j) {
      const std::int64_t pos = t + j;  // position in [state; x]
      const float* __restrict u = pos < hist ? state + pos * ld : x + (pos - hist) * ld;
      const float* __restrict wj = w + j * ld;
      if (j == 0) {
        for (std::int64_t c = 0; c < n; ++c) yt[c] = wj[c] * u[c];
      } else {
        for (std::int64_t c = 0; c < n; ++c) yt[c] += wj[c] * u[c];
      }
    }
    for (std::int64_t c = 0; c < n; ++c) yt[c] = silu(yt[c]);
  }
}

void gated_rmsnorm_row(const float* x, const float* z, const float* w, float* y, int dim,
                       float eps) {
  const float inv = detail::rms_inverse(dot_lanes(x, x, dim), dim, eps);
  for (int i = 0; i < dim; ++i) y[i] = ((x[i] * inv) * w[i]) * silu(z[i]);
}

void sigmoid_gate_range(const float* x, const float* gate, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = x[i] / (1.0f + std::exp(-gate[i]));
}

}  // namespace k3k::generic
