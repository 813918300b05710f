// The Linear direct epilogue over a tile of outputs (ukernel::StoreTileFn), row by row, each row's
// contiguous outputs in LMUL-8 strips: y = sa * acc, + bias, + residual, then the clamp as
// compare-and-merge. Per output these are detail::store_linear_output's operations in its order, so
// the bits are the scalar epilogue's: the multiply and the adds round separately (no fused form),
// and the clamp is std::min(std::max(y, lo), hi) as written, not vfmax/vfmin (those return the
// bound for a NaN y and order -0 below +0; std::max(y, lo) returns y unless y < lo).
#include <riscv_vector.h>

#include <limits>

#include "common/linear_epilogue.h"
#include "rvv/microkernels.h"

namespace k3k::rvv {

namespace {

// Rows of contiguous outputs `row_step` apart; one instantiation per epilogue shape, so the strip
// loop has no branch.
template <bool kBias, bool kResidual, bool kClamp>
inline __attribute__((always_inline)) void store_rows(const LinearEpilogue& ep, float* out,
                                                      const float* bias, const float* residual,
                                                      std::int64_t row_step, int rows,
                                                      std::int64_t count, const float* sa,
                                                      const float* acc, std::int64_t acc_stride) {
  const float lo = ep.clamp_min, hi = ep.clamp_max;
  for (int r = 0; r < rows; ++r, out += row_step, acc += acc_stride) {
    const float s = sa[r];
    if constexpr (kResidual) {
      if (r > 0) residual += row_step;
    }
    for (std::int64_t i = 0; i < count;) {
      const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(count - i));
      vfloat32m8_t y = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(acc + i, vl), s, vl);
      if constexpr (kBias) y = __riscv_vfadd_vv_f32m8(y, __riscv_vle32_v_f32m8(bias + i, vl), vl);
      if constexpr (kResidual) {
        y = __riscv_vfadd_vv_f32m8(y, __riscv_vle32_v_f32m8(residual + i, vl), vl);
      }
      if constexpr (kClamp) {
        y = __riscv_vfmerge_vfm_f32m8(y, lo, __riscv_vmflt_vf_f32m8_b4(y, lo, vl), vl);
        y = __riscv_vfmerge_vfm_f32m8(y, hi, __riscv_vmfgt_vf_f32m8_b4(y, hi, vl), vl);
      }
      __riscv_vse32_v_f32m8(out + i, y, vl);
      i += static_cast<std::int64_t>(vl);
    }
  }
}

}  // namespace

void store_linear_tile(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                       std::int64_t row0, int rows, std::int64_t col0, std::int64_t count,
                       const float* sa, const float* acc, std::int64_t acc_stride) {
  if (ep.layout != OutputLayout::kRowMajor && m != 1) {  // C4 with several rows: strided outputs
    detail::store_linear_tile(ep, out, m, n, row0, rows, col0, count, sa, acc, acc_stride);
    return;
  }
  // Row-major rows are n apart; C4 here has one row. Infinite bounds never compare true: the
  // clamp is the identity, bit for bit (NaN included), and is skipped.
  const bool clamp = ep.clamp_min != -std::numeric_limits<float>::infinity() ||
                     ep.clamp_max != std::numeric_limits<float>::infinity();
  const std::int64_t at = m == 1 ? col0 : row0 * n + col0;  // both layouts with one row
  const float* bias = ep.bias != nullptr ? ep.bias + col0 : nullptr;
  const float* residual = ep.residual != nullptr ? ep.residual + at : nullptr;
  out += at;
  switch ((bias != nullptr ? 4 : 0) | (residual != nullptr ? 2 : 0) | (clamp ? 1 : 0)) {
    case 0:
      return store_rows<false, false, false>(ep, out, bias, residual, n, rows, count, sa, acc,
                                             acc_stride);
    case 1:
      return store_rows<false, false, true>(ep, out, bias, residual, n, rows, count, sa, acc,
                                            acc_stride);
    case 2:
      return store_rows<false, true, false>(ep, out, bias, residual, n, rows, count, sa, acc,
                                            acc_stride);
    case 3:
      return store_rows<false, true, true>(ep, out, bias, residual, n, rows, count, sa, acc,
                                           acc_stride);
    case 4:
      return store_rows<true, false, false>(ep, out, bias, residual, n, rows, count, sa, acc,
                                            acc_stride);
    case 5:
      return store_rows<true, false, true>(ep, out, bias, residual, n, rows, count, sa, acc,
                                           acc_stride);
    case 6:
      return store_rows<true, true, false>(ep, out, bias, residual, n, rows, count, sa, acc,
                                           acc_stride);
    default:
      return store_rows<true, true, true>(ep, out, bias, residual, n, rows, count, sa, acc,
                                          acc_stride);
  }
}

}  // namespace k3k::rvv
