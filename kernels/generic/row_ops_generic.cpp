// Generic row-wise microkernels: RMSNorm (sum of squares by the fixed-order 16-lane dot), SwiGLU
// (scalar expf), the residual add and the argmax (one scalar pass).
#include <cmath>

#include "common/rms_inverse.h"
#include "generic/lanes_dot.h"
#include "generic/microkernels.h"

namespace k3k::generic {

void rmsnorm_row(const float* x, const float* w, float* y, int dim, float eps) {
  const float inv = detail::rms_inverse(dot_lanes(x, x, dim), dim, eps);
  for (int i = 0; i < dim; ++i) y[i] = (x[i] * inv) * w[i];
}

void swiglu_range(const float* g, const float* u, float* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = std::exp(-g[i]);  // +inf for g < ~-88.7: silu -> -0, error |silu| < 1e-36
    o[i] = (g[i] / (1.0f + e)) * u[i];
  }
}

void residual_add_range(const float* a, const float* b, float* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
}

std::int64_t argmax_range(const float* x, std::int64_t n) {
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[best])) best = i;
  return best;
}

}  // namespace k3k::generic
