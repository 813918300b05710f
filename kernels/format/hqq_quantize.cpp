// HQQ W4 block-64 asymmetric quantisation, following the algorithm MNN's exporter runs
// (hqq_quantizer.py): only the zero point is optimised, so it ends up a float.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/w4b64.h"

namespace k3k {

namespace {

constexpr double kLpNorm = 0.7;
constexpr double kBetaStart = 10.0;
constexpr double kBetaGrowth = 1.01;
constexpr int kMaxCode = 15;

// Generalised soft-threshold for the lp "norm" with p < 1 (HQQ's shrink_lp_op).
double shrink_lp(double x, double beta) {
  const double ax = std::fabs(x);
  if (ax == 0.0) return 0.0;
  const double shrunk = ax - std::pow(ax, kLpNorm - 1.0) / beta;
  return shrunk > 0.0 ? std::copysign(shrunk, x) : 0.0;
}

struct BlockQuant {
  double quant_scale;  // codes = round(w * quant_scale + zero)
  double zero;
};

BlockQuant quantize_block(const float* w, std::uint8_t* codes, int iterations) {
  double lo = w[0], hi = w[0];
  for (int i = 1; i < kW4BlockK; ++i) {
    lo = std::min<double>(lo, w[i]);
    hi = std::max<double>(hi, w[i]);
  }
  if (hi - lo < 1e-30) {
    // Constant block: all codes 8 and the value carried by beta (see dequant formula; to fp16).
    std::fill(codes, codes + kW4BlockK, 8);
    return {1.0, 8.0 - lo};
  }
  const double qs = kMaxCode / (hi - lo);
  double zero = std::round(-lo * qs);
  auto quantize = [&](double z) {
    for (int i = 0; i < kW4BlockK; ++i) {
      codes[i] = static_cast<std::uint8_t>(std::clamp(std::round(w[i] * qs + z), 0.0, 15.0));
    }
  };
  auto mean_abs_error = [&](double z) {
    double e = 0.0;
    for (int i = 0; i < kW4BlockK; ++i) e += std::fabs(w[i] - (codes[i] - z) / qs);
    return e / kW4BlockK;
  };

  quantize(zero);
  double best_zero = zero;
  double best_error = mean_abs_error(zero);
  double beta = kBetaStart;
  for (int it = 0; it < iterations; ++it) {
    // Proximal step: shrink the residual, then re-fit the zero in closed form.
    double zsum = 0.0;
    for (int i = 0; i < kW4BlockK; ++i) {
      const double residual = w[i] - (codes[i] - zero) / qs;
      const double we = shrink_lp(residual, beta);
      zsum += codes[i] - (w[i] - we) * qs;
    }
    zero = zsum / kW4BlockK;
    beta *= kBetaGrowth;
    quantize(zero);
    const double err = mean_abs_error(zero);
    if (err < best_error) {
      best_error = err;
      best_zero = zero;
    } else {
      break;
    }
  }
  quantize(best_zero);
  return {qs, best_zero};
}

}  // namespace

W4B64Storage quantize_w4b64_hqq(std::span<const float> weights, std::int64_t n, std::int64_t k,
                                int iterations) {
  if (n <= 0 || k <= 0 || k % kW4BlockK != 0) {
    throw std::invalid_argument("quantize_w4b64_hqq: K must be a positive multiple of 64, got " +
                                std::to_string(k));
  }
  if (static_cast<std::int64_t>(weights.size()) != n * k) {
    throw std::invalid_argument("quantize_w4b64_hqq: weights size does not match N*K");
  }
  W4B64Storage s;
  s.n = n;
  s.k = k;
  const std::int64_t nb = k / kW4BlockK;
  s.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(n * k / 2));
  s.alpha = AlignedBuffer<float>(static_cast<std::size_t>(n * nb * 2));
  std::uint8_t block_codes[kW4BlockK];
  for (std::int64_t row = 0; row < n; ++row) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const float* w = weights.data() + row * k + b * kW4BlockK;
      const BlockQuant q = quantize_block(w, block_codes, iterations);
      // The pairs as fp16 values (what the packed layouts hold): s rounded first, beta from it.
      const double scale = w4b64_pair_value(static_cast<float>(1.0 / q.quant_scale));
      const double beta = w4b64_pair_value(static_cast<float>(scale * (8.0 - q.zero)));
      s.alpha[static_cast<std::size_t>((row * nb + b) * 2)] = static_cast<float>(beta);
      s.alpha[static_cast<std::size_t>((row * nb + b) * 2 + 1)] = static_cast<float>(scale);
      std::uint8_t* dst = s.codes.data() + row * (k / 2) + b * (kW4BlockK / 2);
      for (int i = 0; i < kW4BlockK; i += 2) {
        dst[i / 2] = static_cast<std::uint8_t>((block_codes[i] << 4) | block_codes[i + 1]);
      }
    }
  }
  return s;
}

}  // namespace k3k
