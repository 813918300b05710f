#include <cmath>
#include <sstream>
#include <stdexcept>

#include "k3k/reference/attention.h"
#include "k3k/rounding.h"

namespace k3k::reference {

void rope_rotate(const RopeConfig& rope, std::int64_t pos, const float* x, int head_dim,
                 double* out, double* out_abs) {
  const int half = rope.rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    // Same double angle as the kernels' RopeTable (k3k::rope_inv_freq, pos * inv_freq).
    const double angle = static_cast<double>(pos) * rope_inv_freq(rope, i);
    const double c = std::cos(angle);
    const double s = std::sin(angle);
    const double a = x[i];
    const double b = x[i + half];
    out[i] = a * c - b * s;
    out[i + half] = b * c + a * s;
    if (out_abs != nullptr) {
      out_abs[i] = std::fabs(a) * std::fabs(c) + std::fabs(b) * std::fabs(s);
      out_abs[i + half] = std::fabs(b) * std::fabs(c) + std::fabs(a) * std::fabs(s);
    }
  }
  for (int d = 2 * half; d < head_dim; ++d) {
    out[d] = x[d];
    if (out_abs != nullptr) out_abs[d] = std::fabs(static_cast<double>(x[d]));
  }
}

namespace {

void check_rope_args(std::size_t size, std::int64_t tokens, int heads, int head_dim,
                     std::int64_t first_pos, const RopeConfig& rope, const char* op) {
  validate_rope(rope, head_dim, op);
  if (tokens < 0 || heads <= 0 || first_pos < 0 ||
      static_cast<std::int64_t>(size) != tokens * heads * head_dim) {
    std::ostringstream os;
    os << op << ": bad shape: size (" << size << "), tokens (" << tokens << "), heads (" << heads
       << "), head_dim (" << head_dim << "), first_pos (" << first_pos << ")";
    throw std::invalid_argument(os.str());
  }
}

// Bound on |rope_rotate (kernel, float) - rope_rotate (reference, double)| for one component.
//
// Kernel: c = fl(C), s = fl(S) where C, S are the double cos/sin of the double angle (the same
// values the reference uses: same formula, same libm), so |c - C| <= u|C|, |s - S| <= u|S|.
// A rotated component is y^ = fl(fl(a c) - fl(b s)) (or + for the second half), hence
//   y^ = (a C (1+d1)(1+d2) - b S (1+d3)(1+d4)) (1+d5),  |d_i| <= u,
//   |y^ - y| <= gamma_3 (|a||C| + |b||S|) = gamma_3 * abs      (Higham lemma 3.1),
// where abs is the rotation magnitude from rope_rotate. The double reference itself is within
// 2 * 2^-53 * abs of the exact a C - b S; 2^-50 * abs covers it. Pass-through dims are copied: 0.
// (An FMA-contracted kernel has fewer roundings and stays inside the same bound.)
double rope_component_bound(double abs) {
  return (gamma_f32(3) + 0x1.0p-50) * abs;
}

}  // namespace

std::vector<double> rope(std::span<const float> x, std::int64_t tokens, int heads, int head_dim,
                         std::int64_t first_pos, const RopeConfig& cfg) {
  check_rope_args(x.size(), tokens, heads, head_dim, first_pos, cfg, "reference::rope");
  std::vector<double> out(x.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const std::int64_t off = (t * heads + h) * head_dim;
      rope_rotate(cfg, first_pos + t, x.data() + off, head_dim, out.data() + off, nullptr);
    }
  }
  return out;
}

std::vector<double> rope_bound(std::span<const float> x, std::int64_t tokens, int heads,
                               int head_dim, std::int64_t first_pos, const RopeConfig& cfg) {
  check_rope_args(x.size(), tokens, heads, head_dim, first_pos, cfg, "reference::rope_bound");
  std::vector<double> bound(x.size());
  std::vector<double> rot(static_cast<std::size_t>(head_dim));
  std::vector<double> abs(static_cast<std::size_t>(head_dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const std::int64_t off = (t * heads + h) * head_dim;
      rope_rotate(cfg, first_pos + t, x.data() + off, head_dim, rot.data(), abs.data());
      for (int d = 0; d < head_dim; ++d) {
        bound[static_cast<std::size_t>(off + d)] =
            d < cfg.rotary_dim ? rope_component_bound(abs[static_cast<std::size_t>(d)]) : 0.0;
      }
    }
  }
  return bound;
}

std::vector<double> kv_stored_k_bound(std::span<const float> k, std::int64_t tokens, int heads,
                                      int head_dim, std::int64_t first_pos, const RopeConfig& cfg,
                                      KvDtype dtype) {
  std::vector<double> bound = rope_bound(k, tokens, heads, head_dim, first_pos, cfg);
  if (dtype == KvDtype::f32) return bound;
  // fp16 storage rounds the float-rotated y^ to nearest binary16: |h - y^| <= u16 |y^| in the
  // normal range and <= 2^-25 (half the subnormal spacing) below it; |y^| <= |y| + rope bound.
  const std::vector<double> ref = rope(k, tokens, heads, head_dim, first_pos, cfg);
  for (std::size_t i = 0; i < bound.size(); ++i) {
    bound[i] += kUnitRoundoffF16 * (std::fabs(ref[i]) + bound[i]) + 0x1.0p-25;
  }
  return bound;
}

}  // namespace k3k::reference
