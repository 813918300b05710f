// Float64 references and bounds of the Gated DeltaNet row-wise ops: gates, L2 norm, causal
// convolution, gated RMSNorm and the sigmoid output gate. u = 2^-24, gamma_n = n u / (1 - n u).
// exp and log1p in a kernel are assumed within 2u relative (faithful; the RVV layer's vector exp
// is within 1.39u, rvv_math.h) unless stated otherwise.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/reference/deltanet.h"
#include "k3k/rounding.h"
#include "k3k/small_ops.h"

namespace k3k::reference {
namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

// RMS-style normalisation bound, relative to |y|, for a sum of squares with `depth` roundings per
// term, one addition of eps (and a division by dim for RMSNorm: one more rounding, counted), the
// square root, the reciprocal and two multiplications (see reference::rmsnorm_bound).
double norm_rel_bound(std::int64_t depth) {
  return (1.0 + gamma_f32(4)) / std::sqrt(1.0 - gamma_f32(static_cast<double>(depth + 2))) - 1.0 +
         0x1.0p-50;
}

std::int64_t generic_depth(int dim) {
  return (dim + kGenericReductionLanes - 1) / kGenericReductionLanes + 4;
}

}  // namespace

// Gates. The kernel forms x = fl(a + dt_bias) (mirrored exactly here), neg_a = float(-exp(a_log))
// in double (one rounding), softplus(x) = max(x, 0) + log1p(exp(-|x|)):
//   generic: expf, log1p within 2u each; log1p's condition number y / ((1+y) log1p(y)) <= 1, so
//     log1p(y(1+2u)) carries at most 2u more: the log1p term within 5u, the sum of two non-negative
//     terms one more rounding: 6u;
//   RVV: y = exp(-|x|) within 1.39u; s = y / (2 + y) within 5u; log1p(y) = 2 s P(s^2), P the
//     atanh series to s^16 (truncation below 1e-9 u for s <= 1/3), Horner of positive terms within
//     gamma_16 plus 0.4u from s^2: the term within 23u, the sum 24u.
// g = fl(neg_a * softplus): 24u + u + u, within gamma_27 |g|; results below 2^-126 (softplus of
// x < -87) may lose relative accuracy: + 2^-140 |neg_a| absolute.
// beta = 1 / fl(1 + exp(-b)): 1 + e^ = (1 + e)(1 + eta), |eta| <= 2u, then the addition and the
// division: within gamma_4 beta (+ 2^-149 for a subnormal result).
GatesReference gdn_gates(const float* a, std::int64_t a_stride, const float* b,
                         std::int64_t b_stride, std::span<const float> a_log,
                         std::span<const float> dt_bias, std::int64_t tokens, int heads) {
  if (tokens < 0 || heads < 1 || static_cast<int>(a_log.size()) != heads ||
      static_cast<int>(dt_bias.size()) != heads) {
    throw std::invalid_argument("reference::gdn_gates: bad tokens, heads, a_log or dt_bias size");
  }
  GatesReference r;
  const std::size_t n = static_cast<std::size_t>(tokens * heads);
  r.g.resize(n);
  r.g_bound.resize(n);
  r.beta.resize(n);
  r.beta_bound.resize(n);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const std::size_t i = static_cast<std::size_t>(t * heads + h);
      const float x = a[t * a_stride + h] + dt_bias[static_cast<std::size_t>(h)];  // fl(), mirrored
      const double A = std::exp(static_cast<double>(a_log[static_cast<std::size_t>(h)]));
      r.g[i] = -A * softplus(x);
      r.g_bound[i] = gamma_f32(27) * std::fabs(r.g[i]) + 0x1.0p-140 * A;
      r.beta[i] = sigmoid(b[t * b_stride + h]);
      r.beta_bound[i] = gamma_f32(4) * r.beta[i] + 0x1.0p-149;
    }
  }
  return r;
}

RowsReference l2norm(const float* x, std::int64_t x_stride, std::int64_t tokens, int heads, int dim,
                     float eps, float scale, std::int64_t sum_depth) {
  if (tokens < 0 || heads < 1 || dim < 1 || x_stride < std::int64_t(heads) * dim) {
    throw std::invalid_argument("reference::l2norm: bad tokens, heads, dim or stride");
  }
  if (sum_depth <= 0) sum_depth = generic_depth(dim);
  // l2norm has no division by dim: its chain is one rounding shorter than RMSNorm's.
  const double rel = norm_rel_bound(sum_depth);
  RowsReference r;
  r.out.resize(static_cast<std::size_t>(tokens * heads * dim));
  r.bound.resize(r.out.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const float* xr = x + t * x_stride + std::int64_t(h) * dim;
      double ss = 0.0;
      for (int i = 0; i < dim; ++i) ss += double(xr[i]) * xr[i];
      const double inv = 1.0 / std::sqrt(ss + eps) * scale;
      for (int i = 0; i < dim; ++i) {
        const std::size_t o = static_cast<std::size_t>((t * heads + h) * dim + i);
        r.out[o] = xr[i] * inv;
        r.bound[o] = rel * std::fabs(r.out[o]);
      }
    }
  }
  return r;
}

// Causal convolution. acc = sum_j w_j u_j summed in ascending taps from w_0 u_0: K terms,
// |acc~ - acc| <= gamma_K sum_j |w_j u_j| =: e_acc. silu is 1.0998-Lipschitz, and its evaluation
// fl(acc / fl(1 + exp(-acc))) is within gamma_4 |silu(acc~)| (the exp as 2u); hence
//   |y~ - y| <= 1.1 e_acc + gamma_4 (|y| + 1.1 e_acc)  (+ 2^-148 (1 + sum|w u|) near underflow).
// For acc < -88.72 exp overflows and the kernel returns -0: the error is |y| (< 1e-36 |acc|).
ConvReference causal_conv1d(std::span<const float> x, std::span<const float> weight,
                            std::span<const float> state, std::int64_t tokens, int channels,
                            int kernel) {
  if (tokens < 0 || channels < 1 || kernel < 1 ||
      static_cast<std::int64_t>(x.size()) != tokens * channels ||
      static_cast<std::int64_t>(weight.size()) != std::int64_t(kernel) * channels ||
      static_cast<std::int64_t>(state.size()) != std::int64_t(kernel - 1) * channels) {
    throw std::invalid_argument("reference::causal_conv1d: bad sizes");
  }
  const int hist = kernel - 1;
  auto input = [&](std::int64_t pos, int c) -> double {  // pos in [0, hist + tokens)
    return pos < hist ? state[static_cast<std::size_t>(pos * channels + c)]
                      : x[static_cast<std::size_t>((pos - hist) * channels + c)];
  };
  ConvReference r;
  r.out.resize(x.size());
  r.bound.resize(x.size());
  const double gk = gamma_f32(kernel);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < channels; ++c) {
      double acc = 0.0, mag = 0.0;
      for (int j = 0; j < kernel; ++j) {
        const double p = weight[static_cast<std::size_t>(j * channels + c)] * input(t + j, c);
        acc += p;
        mag += std::fabs(p);
      }
      const std::size_t o = static_cast<std::size_t>(t * channels + c);
      r.out[o] = silu(acc);
      const double e_acc = gk * mag;
      r.bound[o] = acc < -88.0 ? std::fabs(r.out[o]) + 1.1 * e_acc
                               : 1.1 * e_acc + gamma_f32(4) * (std::fabs(r.out[o]) + 1.1 * e_acc) +
                                     0x1.0p-148 * (1.0 + mag);
    }
  }
  r.state_out.resize(state.size());
  for (int p = 0; p < hist; ++p)
    for (int c = 0; c < channels; ++c)
      r.state_out[static_cast<std::size_t>(p * channels + c)] =
          static_cast<float>(input(tokens + p, c));
  return r;
}

// Gated RMSNorm: the RMSNorm chain (reference::rmsnorm_bound) times silu(z), whose evaluation is
// within gamma_4 relative, and one more multiplication: (1 + rel_rms)(1 + gamma_5) - 1. For
// z < -88.72 the kernel's silu is -0: the error is |y|.
RowsReference gated_rmsnorm(std::span<const float> x, std::span<const float> z,
                            std::span<const float> weight, std::int64_t rows, int dim, float eps,
                            std::int64_t sum_depth) {
  if (rows < 0 || dim < 1 || static_cast<std::int64_t>(x.size()) != rows * dim ||
      z.size() != x.size() || static_cast<int>(weight.size()) != dim) {
    throw std::invalid_argument("reference::gated_rmsnorm: bad sizes");
  }
  if (sum_depth <= 0) sum_depth = generic_depth(dim);
  const double rel = (1.0 + norm_rel_bound(sum_depth)) * (1.0 + gamma_f32(5)) - 1.0;
  RowsReference r;
  r.out.resize(x.size());
  r.bound.resize(x.size());
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* xr = x.data() + row * dim;
    double ss = 0.0;
    for (int i = 0; i < dim; ++i) ss += double(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) {
      const std::size_t o = static_cast<std::size_t>(row * dim + i);
      const double zi = z[o];
      r.out[o] = xr[i] * inv * weight[static_cast<std::size_t>(i)] * silu(zi);
      const double a = std::fabs(r.out[o]);
      r.bound[o] = (zi < -88.0 ? a : rel * a) +
                   0x1.0p-148 * (1.0 + std::fabs(xr[i] * inv * weight[static_cast<std::size_t>(i)]));
    }
  }
  return r;
}

// Sigmoid gate: fl(x / fl(1 + exp(-g))), within gamma_4 |out| (the exp as 2u); for g < -88.72
// the kernel returns +-0 and the error is |out| (< 1e-38 |x|).
RowsReference sigmoid_gate(std::span<const float> x, std::span<const float> gate) {
  if (x.size() != gate.size()) throw std::invalid_argument("reference::sigmoid_gate: sizes differ");
  RowsReference r;
  r.out.resize(x.size());
  r.bound.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    r.out[i] = x[i] * sigmoid(gate[i]);
    const double a = std::fabs(r.out[i]);
    r.bound[i] = (gate[i] < -88.0f ? a : gamma_f32(4) * a) + 0x1.0p-148;
  }
  return r;
}

}  // namespace k3k::reference
