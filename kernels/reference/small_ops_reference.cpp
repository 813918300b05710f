#include <cmath>
#include <sstream>
#include <stdexcept>

#include "k3k/reference/small_ops.h"
#include "k3k/rounding.h"
#include "reference_checks.h"

namespace k3k::reference {

using detail::fail;

std::vector<double> rmsnorm(std::span<const float> x, std::span<const float> weight,
                            std::int64_t rows, int dim, float eps) {
  if (rows < 0 || dim <= 0 || static_cast<std::int64_t>(x.size()) != rows * dim ||
      static_cast<std::int64_t>(weight.size()) != dim) {
    fail("reference::rmsnorm: bad shape: x.size() (", x.size(), "), weight.size() (", weight.size(),
         "), rows (", rows, "), dim (", dim, ")");
  }
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * dim;
    double ss = 0.0;
    for (int i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(ss / dim + static_cast<double>(eps));
    for (int i = 0; i < dim; ++i) {
      y[static_cast<std::size_t>(r * dim + i)] =
          static_cast<double>(xr[i]) * inv * weight[static_cast<std::size_t>(i)];
    }
  }
  return y;
}

// RMSNorm bound, per element relative to |y|. Kernel (generic): ss^ = sum of squares with
// sum_depth roundings per term (all terms >= 0, so ss^ = ss (1 + theta), |theta| <= gamma_depth);
// t = fl(fl(ss^ / dim) + eps) = (ss/dim + eps)(1 + theta'), |theta'| <= gamma_{depth+2} (eps >= 0
// is exact, every term positive); r = fl(1 / fl(sqrt(t))) and y = fl(fl(x r) w): four more
// roundings d3..d6 entering as (1+d4)(1+d5)(1+d6)/(1+d3), within 1 + gamma_4 (Higham lemma 3.1).
// The square root halves theta': (1+theta')^{-1/2} <= (1 - gamma_{depth+2})^{-1/2}. Hence
//     |y^ - y| <= ((1 + gamma_4) / sqrt(1 - gamma_{depth+2}) - 1) |y|   (+ 2^-50 |y| for the
// double reference). Assumes no overflow/underflow in ss (|x| within ~[1e-18, 1e18]).
std::vector<double> rmsnorm_bound(std::span<const double> ref, int dim, std::int64_t sum_depth) {
  if (dim <= 0) fail("reference::rmsnorm_bound: dim (", dim, ") must be positive");
  if (sum_depth <= 0) sum_depth = (dim + kGenericReductionLanes - 1) / kGenericReductionLanes + 4;
  const double rel =
      (1.0 + gamma_f32(4)) / std::sqrt(1.0 - gamma_f32(static_cast<double>(sum_depth + 2))) - 1.0 +
      0x1.0p-50;
  std::vector<double> bound(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) bound[i] = rel * std::fabs(ref[i]);
  return bound;
}

std::vector<double> swiglu(std::span<const float> gate, std::span<const float> up) {
  if (gate.size() != up.size()) {
    fail("reference::swiglu: gate.size() (", gate.size(), ") != up.size() (", up.size(), ")");
  }
  std::vector<double> out(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    out[i] = g / (1.0 + std::exp(-g)) * static_cast<double>(up[i]);
  }
  return out;
}

// SwiGLU bound. Kernel: e = expf(-g) (assumed faithful: e^ = e (1 + eps), |eps| <= 2u),
// t = fl(1 + e^), s = fl(g / t), out = fl(s * up). Since e/(1+e) < 1,
//   1 + e^ = (1 + e)(1 + eta) with |eta| <= 2u, so t = (1 + e)(1 + eta)(1 + d1) and
//   out^ = out (1 + d2)(1 + d3) / ((1 + eta)(1 + d1)):  |out^ - out| <= gamma_5 |out|
// (eta counts as two roundings in lemma 3.1). If -g > 88.72 (expf overflows to +inf) the kernel
// returns +-0 and the error is |out| itself (< 1e-36 |up|). Subnormal intermediates add at most
// 2^-149 (1 + |up|) absolute per rounding (two of them: s and out); the double reference adds
// < 2^-50 |out|.
std::vector<double> swiglu_bound(std::span<const float> gate, std::span<const float> up,
                                 std::span<const double> ref) {
  if (gate.size() != up.size() || gate.size() != ref.size()) {
    fail("reference::swiglu_bound: sizes differ: gate (", gate.size(), "), up (", up.size(),
         "), ref (", ref.size(), ")");
  }
  std::vector<double> bound(ref.size());
  const double rel = gamma_f32(5) + 0x1.0p-50;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double a = std::fabs(ref[i]);
    const bool overflow = -static_cast<double>(gate[i]) > 88.72;
    bound[i] =
        (overflow ? a : rel * a) + 0x1.0p-148 * (1.0 + std::fabs(static_cast<double>(up[i])));
  }
  return bound;
}

std::vector<double> residual_add(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) {
    fail("reference::residual_add: a.size() (", a.size(), ") != b.size() (", b.size(), ")");
  }
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = static_cast<double>(a[i]) + b[i];  // exact
  return out;
}

// Residual add bound: one correctly rounded float addition of an exactly representable (in
// double) sum: |fl(a + b) - (a + b)| <= u |a + b| (exact when the result is subnormal).
std::vector<double> residual_add_bound(std::span<const double> ref) {
  std::vector<double> bound(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) bound[i] = kUnitRoundoffF32 * std::fabs(ref[i]);
  return bound;
}

}  // namespace k3k::reference
