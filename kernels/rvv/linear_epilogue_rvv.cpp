// The Linear direct epilogue over a span of contiguous outputs (ukernel::StoreSpanFn), in LMUL-8
// strips: y = sa * acc, + bias, + residual, then the clamp as compare-and-merge. Per output these
// are detail::store_linear_output's operations in its order, so the bits are the scalar
// epilogue's: the multiply and the adds round separately (no fused form), and the clamp is
// std::min(std::max(y, lo), hi) as written, not vfmax/vfmin (those return the bound for a NaN y and
// order -0 below +0; std::max(y, lo) returns y unless y < lo).
#include <riscv_vector.h>

#include <limits>

#include "common/linear_epilogue.h"
#include "rvv/microkernels.h"

namespace k3k::rvv {

void store_linear_span(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                       std::int64_t row, std::int64_t col0, std::int64_t count, float sa,
                       const float* acc) {
  if (ep.layout != OutputLayout::kRowMajor && m != 1) {  // C4 with several rows: strided outputs
    detail::store_linear_span(ep, out, m, n, row, col0, count, sa, acc);
    return;
  }
  const std::int64_t at = output_index(ep.layout, m, n, row, col0);  // outputs at..at+count-1
  const float* bias = ep.bias != nullptr ? ep.bias + col0 : nullptr;
  const float* residual = ep.residual != nullptr ? ep.residual + at : nullptr;
  const float lo = ep.clamp_min, hi = ep.clamp_max;
  // Infinite bounds never compare true: the clamp is the identity, bit for bit (NaN included).
  const bool clamp = lo != -std::numeric_limits<float>::infinity() ||
                     hi != std::numeric_limits<float>::infinity();
  float* dst = out + at;
  for (std::int64_t i = 0; i < count;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(count - i));
    vfloat32m8_t y = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(acc + i, vl), sa, vl);
    if (bias != nullptr) y = __riscv_vfadd_vv_f32m8(y, __riscv_vle32_v_f32m8(bias + i, vl), vl);
    if (residual != nullptr) {
      y = __riscv_vfadd_vv_f32m8(y, __riscv_vle32_v_f32m8(residual + i, vl), vl);
    }
    if (clamp) {
      y = __riscv_vfmerge_vfm_f32m8(y, lo, __riscv_vmflt_vf_f32m8_b4(y, lo, vl), vl);
      y = __riscv_vfmerge_vfm_f32m8(y, hi, __riscv_vmfgt_vf_f32m8_b4(y, hi, vl), vl);
    }
    __riscv_vse32_v_f32m8(dst + i, y, vl);
    i += static_cast<std::int64_t>(vl);
  }
}

}  // namespace k3k::rvv
