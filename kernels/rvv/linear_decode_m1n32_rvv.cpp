// RVV decode tile ("M1"): one activation row against one 32-row weight tile. Per strip of rows the
// block accumulators live in registers across the whole K loop; the weights stream once.
#include "rvv/microkernels.h"
#include "rvv/w4b64_tile.h"

namespace k3k::rvv {

void linear_decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta,
                            const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                            float acc_rows[kW4RowTile]) {
  for (std::size_t i0 = 0; i0 < static_cast<std::size_t>(kW4RowTile);) {
    const std::size_t vl = __riscv_vsetvl_e16m2(kW4RowTile - i0);
    vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::uint8_t* cb = codes + b * 32 * kW4RowTile + i0;
      const std::int8_t* xb = x + b * 64;
      vint16m2_t lo = __riscv_vmv_v_x_i16m2(0, vl), hi = __riscv_vmv_v_x_i16m2(0, vl);
      for (int j = 0; j < 32; ++j) {
        const vuint8m1_t c = __riscv_vle8_v_u8m1(cb + j * kW4RowTile, vl);
        const vint16m2_t q_low = low_codes(c, vl), q_high = high_codes(c, vl);
        lo = __riscv_vmacc_vx_i16m2(lo, xb[j], q_low, vl);
        hi = __riscv_vmacc_vx_i16m2(hi, xb[32 + j], q_high, vl);
      }
      acc = accumulate_block(acc, lo, hi, scale + b * kW4RowTile + i0, beta + b * kW4RowTile + i0,
                             sums[b], vl);
    }
    __riscv_vse32_v_f32m4(acc_rows + i0, acc, vl);
    i0 += vl;
  }
}

}  // namespace k3k::rvv
