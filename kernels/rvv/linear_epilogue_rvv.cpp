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
  if (static_cast<std::size_t>(count) <= __riscv_vsetvlmax_e32m8()) {
    // One strip per row (a prefill task's span, a decode span at VLEN 1024): vl and the bias are
    // the same for every row, so the row loop is the strip's operations and three pointer steps.
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(count));
    vfloat32m8_t b = __riscv_vundefined_f32m8();
    if constexpr (kBias) b = __riscv_vle32_v_f32m8(bias, vl);
    for (int r = 0; r < rows; ++r, out += row_step, acc += acc_stride) {
      vfloat32m8_t y = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(acc, vl), sa[r], vl);
      if constexpr (kBias) y = __riscv_vfadd_vv_f32m8(y, b, vl);
      if constexpr (kResidual) {
        y = __riscv_vfadd_vv_f32m8(y, __riscv_vle32_v_f32m8(residual, vl), vl);
        residual += row_step;
      }
      if constexpr (kClamp) {
        y = __riscv_vfmerge_vfm_f32m8(y, lo, __riscv_vmflt_vf_f32m8_b4(y, lo, vl), vl);
        y = __riscv_vfmerge_vfm_f32m8(y, hi, __riscv_vmfgt_vf_f32m8_b4(y, hi, vl), vl);
      }
      __riscv_vse32_v_f32m8(out, y, vl);
    }
    return;
  }
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

// One epilogue shape over row-major rows (or the one row of C4): what bind_store_linear_tile
// hands the driver for a call.
template <bool kBias, bool kResidual, bool kClamp>
void store_tile(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                std::int64_t row0, int rows, std::int64_t col0, std::int64_t count, const float* sa,
                const float* acc, std::int64_t acc_stride) {
  (void)m;
  const std::int64_t at = row0 * n + col0;  // row0 is 0 when M is 1 (C4's contiguous case)
  store_rows<kBias, kResidual, kClamp>(ep, out + at, kBias ? ep.bias + col0 : nullptr,
                                       kResidual ? ep.residual + at : nullptr, n, rows, count, sa,
                                       acc, acc_stride);
}

// By (bias, residual, clamp) as bits 2, 1, 0.
constexpr ukernel::StoreTileFn kStoreTile[8] = {
    store_tile<false, false, false>, store_tile<false, false, true>, store_tile<false, true, false>,
    store_tile<false, true, true>,   store_tile<true, false, false>, store_tile<true, false, true>,
    store_tile<true, true, false>,   store_tile<true, true, true>,
};

}  // namespace

ukernel::StoreTileFn bind_store_linear_tile(const LinearEpilogue& ep, std::int64_t m) {
  // C4 with several rows spreads a row's outputs 4 apart: the scalar loop.
  if (ep.layout != OutputLayout::kRowMajor && m != 1) return detail::store_linear_tile;
  // Infinite bounds never compare true: the clamp is then the identity, bit for bit (NaN
  // included), and is skipped.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const bool clamp = ep.clamp_min != -kInf || ep.clamp_max != kInf;
  return kStoreTile[(ep.bias != nullptr ? 4 : 0) | (ep.residual != nullptr ? 2 : 0) |
                    (clamp ? 1 : 0)];
}

}  // namespace k3k::rvv
