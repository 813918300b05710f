// RVV prefill tile ("M4"): 4 activation rows share each unpacked weight K-step (driver:
// drivers/linear_prefill.cpp, task = tile_n output columns x one M4 group).
// Registers: 8 int16 m2 accumulators (4 rows x two halves) + the unpacked codes; the float
// accumulators of the 4 rows live in the driver's small L1 array between blocks.
#include "rvv/microkernels.h"
#include "rvv/w4b64_tile.h"

namespace k3k::rvv {

namespace {

// The float accumulators of the 4 rows live in `out` between blocks.
void prefill_m4_tile(const ukernel::PrefillTileArgs& t,
                     float out[ukernel::kMaxGroupRows][kW4RowTile]) {
  for (std::size_t i0 = 0; i0 < static_cast<std::size_t>(kW4RowTile);) {
    const std::size_t vl = __riscv_vsetvl_e16m2(kW4RowTile - i0);
    for (int r = 0; r < kPrefillRowsPerTask; ++r)
      __riscv_vse32_v_f32m4(out[r] + i0, __riscv_vfmv_v_f_f32m4(0.0f, vl), vl);
    for (std::int64_t b = 0; b < t.nb; ++b) {
      const std::uint8_t* cb = t.codes + b * 32 * kW4RowTile + i0;
      const std::int8_t* x0 = t.x + b * kPrefillRowsPerTask * 64;  // 4 rows x 64
      const std::int8_t* x1 = x0 + 64;
      const std::int8_t* x2 = x0 + 128;
      const std::int8_t* x3 = x0 + 192;
      vint16m2_t lo0 = __riscv_vmv_v_x_i16m2(0, vl), hi0 = lo0, lo1 = lo0, hi1 = lo0;
      vint16m2_t lo2 = lo0, hi2 = lo0, lo3 = lo0, hi3 = lo0;
      for (int j = 0; j < 32; ++j) {
        const vuint8m1_t c = __riscv_vle8_v_u8m1(cb + j * kW4RowTile, vl);
        const vint16m2_t q_low = low_codes(c, vl), q_high = high_codes(c, vl);
        lo0 = __riscv_vmacc_vx_i16m2(lo0, x0[j], q_low, vl);
        hi0 = __riscv_vmacc_vx_i16m2(hi0, x0[32 + j], q_high, vl);
        lo1 = __riscv_vmacc_vx_i16m2(lo1, x1[j], q_low, vl);
        hi1 = __riscv_vmacc_vx_i16m2(hi1, x1[32 + j], q_high, vl);
        lo2 = __riscv_vmacc_vx_i16m2(lo2, x2[j], q_low, vl);
        hi2 = __riscv_vmacc_vx_i16m2(hi2, x2[32 + j], q_high, vl);
        lo3 = __riscv_vmacc_vx_i16m2(lo3, x3[j], q_low, vl);
        hi3 = __riscv_vmacc_vx_i16m2(hi3, x3[32 + j], q_high, vl);
      }
      const float* sc = t.scale + b * kW4RowTile + i0;
      const float* be = t.beta + b * kW4RowTile + i0;
      auto sum_of = [&](int r) { return r < t.rows ? t.sums[r * t.nb + b] : 0; };
      auto update = [&](int r, vint16m2_t lo, vint16m2_t hi) {
        const vfloat32m4_t prev = __riscv_vle32_v_f32m4(out[r] + i0, vl);
        __riscv_vse32_v_f32m4(out[r] + i0, accumulate_block(prev, lo, hi, sc, be, sum_of(r), vl),
                              vl);
      };
      update(0, lo0, hi0);
      update(1, lo1, hi1);
      update(2, lo2, hi2);
      update(3, lo3, hi3);
    }
    i0 += vl;
  }
}

}  // namespace

std::unique_ptr<ukernel::PrefillTileBody> bind_linear_prefill_m4(const PackedActivations& a,
                                                                 const W4B64Packed& w,
                                                                 WorkerPool&) {
  return ukernel::bind_prefill_tile<prefill_m4_tile>(a, w);
}

}  // namespace k3k::rvv
