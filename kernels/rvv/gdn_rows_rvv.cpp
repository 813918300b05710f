// RVV row-wise microkernels of the Gated DeltaNet layer and the attention output gate (drivers:
// drivers/deltanet_rows.cpp). exp is the vector exp of rvv_math.h (within 1.39 u).
//
// Gates: softplus(x) = max(x, 0) + log1p(y), y = exp(-|x|) in (0, 1], with
// log1p(y) = 2 atanh(s) = 2 s (1 + s^2/3 + ... + s^16/17), s = y / (2 + y) <= 1/3: the series'
// truncation is below 1e-9 u and its Horner evaluation (positive terms) within ~23 u, the bound
// reference::gdn_gates assumes. beta = 1 / (1 + exp(-b)).
// L2 norm and gated RMSNorm: the sum of squares is the shared RVV reduction (rvv_math.h dot), the
// scalar step the shared expression; the rest one vfmul per factor (and silu = z / (1 + exp(-z))).
// Convolution: per channel strip and token, the taps in ascending order (vfmul, then vfmacc).
#include <riscv_vector.h>

#include "common/l2_inverse.h"
#include "common/rms_inverse.h"
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {
namespace {

using vf = vfloat32m4_t;

inline vf vsilu(vf x, std::size_t vl) {
  const vf e = rvv_detail::vexp(__riscv_vfneg_v_f32m4(x, vl), vl);
  return __riscv_vfdiv_vv_f32m4(x, __riscv_vfadd_vf_f32m4(e, 1.0f, vl), vl);
}

inline vf vlog1p_unit(vf y, std::size_t vl) {  // y in [0, 1]
  const vf s = __riscv_vfdiv_vv_f32m4(y, __riscv_vfadd_vf_f32m4(y, 2.0f, vl), vl);
  const vf s2 = __riscv_vfmul_vv_f32m4(s, s, vl);
  vf p = __riscv_vfmv_v_f_f32m4(1.0f / 17.0f, vl);
  for (const float coef : {1.0f / 15.0f, 1.0f / 13.0f, 1.0f / 11.0f, 1.0f / 9.0f, 1.0f / 7.0f,
                           1.0f / 5.0f, 1.0f / 3.0f, 1.0f}) {
    p = __riscv_vfmadd_vv_f32m4(p, s2, __riscv_vfmv_v_f_f32m4(coef, vl), vl);
  }
  return __riscv_vfmul_vf_f32m4(__riscv_vfmul_vv_f32m4(s, p, vl), 2.0f, vl);
}

}  // namespace

void gdn_gates_row(const float* a, const float* b, const float* neg_a, const float* dt_bias,
                   float* g, float* beta, int heads) {
  for (int h = 0; h < heads;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(heads - h));
    const vf x = __riscv_vfadd_vv_f32m4(__riscv_vle32_v_f32m4(a + h, vl),
                                        __riscv_vle32_v_f32m4(dt_bias + h, vl), vl);
    const vf y = rvv_detail::vexp(__riscv_vfneg_v_f32m4(__riscv_vfabs_v_f32m4(x, vl), vl), vl);
    const vf sp = __riscv_vfadd_vv_f32m4(__riscv_vfmax_vf_f32m4(x, 0.0f, vl), vlog1p_unit(y, vl), vl);
    __riscv_vse32_v_f32m4(g + h, __riscv_vfmul_vv_f32m4(__riscv_vle32_v_f32m4(neg_a + h, vl), sp, vl),
                          vl);
    const vf e = rvv_detail::vexp(__riscv_vfneg_v_f32m4(__riscv_vle32_v_f32m4(b + h, vl), vl), vl);
    __riscv_vse32_v_f32m4(beta + h, __riscv_vfrdiv_vf_f32m4(__riscv_vfadd_vf_f32m4(e, 1.0f, vl), 1.0f, vl),
                          vl);
    h += static_cast<int>(vl);
  }
}

void l2norm_row(const float* x, float* y, int dim, float eps, float scale) {
  const float inv = detail::l2_inverse(rvv_detail::dot(x, x, dim), eps);
  for (int i = 0; i < dim;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(dim - i));
    const vfloat32m8_t xi = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), inv, vl);
    __riscv_vse32_v_f32m8(y + i, __riscv_vfmul_vf_f32m8(xi, scale, vl), vl);
    i += static_cast<int>(vl);
  }
}

void causal_conv_block(const float* x, const float* state, const float* w, float* y,
                       std::int64_t tokens, int kernel, std::int64_t ld, std::int64_t n) {
  const int hist = kernel - 1;
  for (std::int64_t c = 0; c < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - c));
    for (std::int64_t t = 0; t < tokens; ++t) {
      vf acc = __riscv_vfmv_v_f_f32m4(0.0f, vl);
      for (int j = 0; j < kernel; ++j) {
        const std::int64_t pos = t + j;
        const float* u = pos < hist ? state + pos * ld : x + (pos - hist) * ld;
        const vf wj = __riscv_vle32_v_f32m4(w + j * ld + c, vl);
        const vf uj = __riscv_vle32_v_f32m4(u + c, vl);
        acc = j == 0 ? __riscv_vfmul_vv_f32m4(wj, uj, vl) : __riscv_vfmacc_vv_f32m4(acc, wj, uj, vl);
      }
      __riscv_vse32_v_f32m4(y + t * ld + c, vsilu(acc, vl), vl);
    }
    c += static_cast<std::int64_t>(vl);
  }
}

void gated_rmsnorm_row(const float* x, const float* z, const float* w, float* y, int dim,
                       float eps) {
  const float inv = detail::rms_inverse(rvv_detail::dot(x, x, dim), dim, eps);
  for (int i = 0; i < dim;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(dim - i));
    const vf xw = __riscv_vfmul_vv_f32m4(
        __riscv_vfmul_vf_f32m4(__riscv_vle32_v_f32m4(x + i, vl), inv, vl),
        __riscv_vle32_v_f32m4(w + i, vl), vl);
    __riscv_vse32_v_f32m4(y + i, __riscv_vfmul_vv_f32m4(xw, vsilu(__riscv_vle32_v_f32m4(z + i, vl), vl), vl),
                          vl);
    i += static_cast<int>(vl);
  }
}

void sigmoid_gate_range(const float* x, const float* gate, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    const vf e = rvv_detail::vexp(__riscv_vfneg_v_f32m4(__riscv_vle32_v_f32m4(gate + i, vl), vl), vl);
    __riscv_vse32_v_f32m4(out + i,
                          __riscv_vfdiv_vv_f32m4(__riscv_vle32_v_f32m4(x + i, vl),
                                                 __riscv_vfadd_vf_f32m4(e, 1.0f, vl), vl),
                          vl);
    i += static_cast<int>(vl);
  }
}

}  // namespace k3k::rvv
