// RVV row-wise microkernels (driver: drivers/row_ops.cpp).
//
// RMSNorm: per row the sum of squares is the shared RVV reduction (rvv_math.h dot: e32m4 vfmacc
// lanes, fold to m1, one vfredusum; reference::rvv_dot_depth(dim, vlenb) roundings per term, the
// sum_depth to pass to reference::rmsnorm_bound), the scalar 1/sqrt(ss/dim + eps) is the shared
// expression, and y = fl(fl(x * inv) * w) is two e32m8 vfmul per strip (LMUL m8: x, w and y are 24
// registers in a purely streaming loop). Only the sum of squares' order differs from the generic
// layer.
//
// SwiGLU: out = (g / (1 + exp(-g))) * up with the generic layer's operation sequence, exp replaced
// by the vector exp of rvv_math.h (within 1 ulp, relative error <= 1.39 * 2^-24: inside the
// faithful-expf assumption of reference::swiglu_bound; overflow to +inf for g < -88.72 gives -0
// like the generic layer). LMUL m4, the exp's: g, up and the exp temporaries stay within the
// register file.
//
// Residual add: one vfadd per e32m8 strip (LMUL m8: a purely streaming loop, a and b are 16
// registers, fewest vsetvl per element). One correctly rounded addition per element, as in the
// generic layer, so the results are bitwise identical to it.
//
// Argmax: two streaming passes at e32m8 (a vector of 256 logits per instruction at VLEN 1024):
// the maximum (vfmax into lanes that start at -inf, tail undisturbed: a NaN loses to any number,
// as it does in the generic comparison; one vfredmax), then the first index equal to it (vmfeq +
// vfirst per strip, stopping at the first hit). The same index as the generic layer's: the first
// of the largest non-NaN values (-0 and +0 compare equal in both).
#include <riscv_vector.h>

#include <cmath>

#include "common/rms_inverse.h"
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

void rmsnorm_row(const float* xr, const float* w, float* yr, int dim, float eps) {
  const float inv = detail::rms_inverse(rvv_detail::dot(xr, xr, dim), dim, eps);
  for (int i = 0; i < dim;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(dim - i));
    const vfloat32m8_t xi = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(xr + i, vl), inv, vl);
    __riscv_vse32_v_f32m8(yr + i, __riscv_vfmul_vv_f32m8(xi, __riscv_vle32_v_f32m8(w + i, vl), vl),
                          vl);
    i += static_cast<int>(vl);
  }
}

void swiglu_range(const float* gp, const float* up, float* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    const vfloat32m4_t g = __riscv_vle32_v_f32m4(gp + i, vl);
    const vfloat32m4_t e = rvv_detail::vexp(__riscv_vfneg_v_f32m4(g, vl), vl);
    const vfloat32m4_t silu = __riscv_vfdiv_vv_f32m4(g, __riscv_vfadd_vf_f32m4(e, 1.0f, vl), vl);
    __riscv_vse32_v_f32m4(o + i,
                          __riscv_vfmul_vv_f32m4(silu, __riscv_vle32_v_f32m4(up + i, vl), vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
}

std::int64_t argmax_range(const float* x, std::int64_t n) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m8();
  vfloat32m8_t m = __riscv_vfmv_v_f_f32m8(-INFINITY, vlmax);
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    m = __riscv_vfmax_vv_f32m8_tu(m, m, __riscv_vle32_v_f32m8(x + i, vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
  const float best = __riscv_vfmv_f_s_f32m1_f32(
      __riscv_vfredmax_vs_f32m8_f32m1(m, __riscv_vfmv_s_f_f32m1(-INFINITY, 1), vlmax));
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    const long at = __riscv_vfirst_m_b4(
        __riscv_vmfeq_vf_f32m8_b4(__riscv_vle32_v_f32m8(x + i, vl), best, vl), vl);
    if (at >= 0) return i + at;
    i += static_cast<std::int64_t>(vl);
  }
  return -1;  // every value NaN
}

void residual_add_range(const float* a, const float* b, float* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    __riscv_vse32_v_f32m8(o + i,
                          __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(a + i, vl),
                                                 __riscv_vle32_v_f32m8(b + i, vl), vl),
                          vl);
    i += static_cast<std::int64_t>(vl);
  }
}

}  // namespace k3k::rvv
