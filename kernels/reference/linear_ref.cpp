#include <algorithm>
#include <cmath>

#include "k3k/reference/linear.h"
#include "k3k/rounding.h"

namespace k3k::reference {

QuantizedRows quantize_rows(const float* a, std::int64_t m, std::int64_t k) {
  QuantizedRows q;
  q.m = m;
  q.k = k;
  q.codes.resize(static_cast<std::size_t>(m * k));
  q.scale.resize(static_cast<std::size_t>(m));
  q.unrounded.resize(static_cast<std::size_t>(m * k));
  for (std::int64_t r = 0; r < m; ++r) {
    double absmax = 0.0;
    for (std::int64_t i = 0; i < k; ++i) absmax = std::max(absmax, std::fabs(double(a[r * k + i])));
    const double sa = absmax / 127.0;
    q.scale[static_cast<std::size_t>(r)] = sa;
    for (std::int64_t i = 0; i < k; ++i) {
      const double x = sa > 0.0 ? double(a[r * k + i]) / sa : 0.0;
      q.unrounded[static_cast<std::size_t>(r * k + i)] = x;
      q.codes[static_cast<std::size_t>(r * k + i)] =
          static_cast<std::int8_t>(std::clamp(std::nearbyint(x), -127.0, 127.0));
    }
  }
  return q;
}

std::vector<std::int8_t> unpack_codes(const PackedActivations& a) {
  std::vector<std::int8_t> codes(static_cast<std::size_t>(a.m * a.k));
  for (std::int64_t r = 0; r < a.m; ++r)
    for (std::int64_t i = 0; i < a.k; ++i) codes[static_cast<std::size_t>(r * a.k + i)] = a.code(r, i);
  return codes;
}

// Bound derivation (u = 2^-24, gamma_n = n u / (1 - n u)).
// Exact value: Y = sa * sum_b t_b + bias + residual, t_b = s_b * D_b + beta_b * S_b, with D_b, S_b
// integers of magnitude < 2^17, hence exact in float. The kernel evaluates, per block,
//   fl(fl(s_b * D_b) + fl(beta_b * S_b))           -> relative error <= gamma_2 on |s D| + |beta S|
// accumulates nb such terms in sequence            -> adds gamma_{nb-1} * sum_b |t_b|-magnitudes
// (a fused multiply-add only removes roundings, so the bound also covers FMA contraction), then
//   fl(sa * acc), fl(+ bias), fl(+ residual)        -> three more roundings.
// Collecting terms: |y - Y| <= gamma_{nb+4} * (sa * sum_b (|s_b D_b| + |beta_b S_b|) + |bias| + |res|).
// The float64 reference itself errs by ~K * 2^-53 relative, four orders below; one extra u of the
// magnitude covers it. Clamp is 1-Lipschitz, so the bound survives it unchanged.
LinearResult linear_w4b64(const W4B64Storage& w, const std::int8_t* codes, const float* sa,
                          std::int64_t m, const float* bias, const float* residual,
                          float clamp_min, float clamp_max) {
  const std::int64_t n = w.n, k = w.k, nb = w.blocks_per_row();
  LinearResult r;
  r.m = m;
  r.n = n;
  r.y.resize(static_cast<std::size_t>(m * n));
  r.bound.resize(static_cast<std::size_t>(m * n));
  const double g = gamma_f32(static_cast<double>(nb + 5));
  for (std::int64_t row = 0; row < m; ++row) {
    const std::int8_t* x = codes + row * k;
    for (std::int64_t col = 0; col < n; ++col) {
      double y = 0.0, magnitude = 0.0;
      for (std::int64_t b = 0; b < nb; ++b) {
        std::int64_t d = 0, s = 0;
        for (int j = 0; j < kW4BlockK; ++j) {
          const std::int64_t kk = b * kW4BlockK + j;
          d += std::int64_t(x[kk]) * (std::int64_t(w.code(col, kk)) - 8);
          s += x[kk];
        }
        // The pairs as the packed layouts hold them (fp16): the values the kernels compute with.
        const double sd = double(w4b64_pair_value(w.scale(col, b))) * double(d);
        const double bs = double(w4b64_pair_value(w.beta(col, b))) * double(s);
        y += sd + bs;
        magnitude += std::fabs(sd) + std::fabs(bs);
      }
      y *= double(sa[row]);
      magnitude *= std::fabs(double(sa[row]));
      if (bias != nullptr) {
        y += bias[col];
        magnitude += std::fabs(double(bias[col]));
      }
      if (residual != nullptr) {
        y += residual[row * n + col];
        magnitude += std::fabs(double(residual[row * n + col]));
      }
      y = std::min(std::max(y, double(clamp_min)), double(clamp_max));
      r.y[static_cast<std::size_t>(row * n + col)] = y;
      // The smallest positive float is added so that exact-zero outputs tolerate denormal noise.
      r.bound[static_cast<std::size_t>(row * n + col)] = g * magnitude + 0x1.0p-149;
    }
  }
  return r;
}

std::vector<double> linear_unquantized_activations(const W4B64Storage& w, const float* a, std::int64_t m) {
  const std::int64_t n = w.n, k = w.k;
  std::vector<double> y(static_cast<std::size_t>(m * n));
  std::vector<double> wrow(static_cast<std::size_t>(k));
  for (std::int64_t col = 0; col < n; ++col) {
    dequantize_w4b64_row(w, col, wrow.data());
    for (std::int64_t row = 0; row < m; ++row) {
      double acc = 0.0;
      for (std::int64_t i = 0; i < k; ++i) acc += double(a[row * k + i]) * wrow[static_cast<std::size_t>(i)];
      y[static_cast<std::size_t>(row * n + col)] = acc;
    }
  }
  return y;
}

// Bound: the kernel computes fl(fl(s * (q-8)) + beta); q-8 is exact, so two roundings:
// |err| <= gamma_2 * (|s (q-8)| + |beta|).
LinearResult embedding_lookup(const W4B64Storage& table, const std::int32_t* tokens, std::int64_t count) {
  const std::int64_t k = table.k;
  LinearResult r;
  r.m = count;
  r.n = k;
  r.y.resize(static_cast<std::size_t>(count * k));
  r.bound.resize(static_cast<std::size_t>(count * k));
  const double g = gamma_f32(2.0);
  for (std::int64_t t = 0; t < count; ++t) {
    const std::int64_t row = tokens[t];
    for (std::int64_t i = 0; i < k; ++i) {
      const double s = w4b64_pair_value(table.scale(row, i / kW4BlockK));
      const double beta = w4b64_pair_value(table.beta(row, i / kW4BlockK));
      const double q = double(table.code(row, i)) - 8.0;
      r.y[static_cast<std::size_t>(t * k + i)] = s * q + beta;
      r.bound[static_cast<std::size_t>(t * k + i)] = g * (std::fabs(s * q) + std::fabs(beta)) + 0x1.0p-149;
    }
  }
  return r;
}

std::vector<float> to_row_major(const float* out, OutputLayout layout, std::int64_t m, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(m * n));
  for (std::int64_t row = 0; row < m; ++row)
    for (std::int64_t col = 0; col < n; ++col)
      v[static_cast<std::size_t>(row * n + col)] = out[output_index(layout, m, n, row, col)];
  return v;
}

}  // namespace k3k::reference
