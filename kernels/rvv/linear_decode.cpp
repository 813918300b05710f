// RVV decode Linear ("M1"): one activation row against 32-row weight tiles. Per strip of rows the
// block accumulators live in registers across the whole K loop; the weights stream once.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_decode_tile.h"
#include "generic/linear_epilogue.h"
#include "k3k/rvv.h"
#include "rvv/w4b64_tile.h"

namespace k3k::rvv {

void decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta, const std::int8_t* x,
                     const std::int32_t* sums, std::int64_t nb, float acc_rows[kW4RowTile]) {
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
      acc = accumulate_block(acc, lo, hi, scale + b * kW4RowTile + i0, beta + b * kW4RowTile + i0, sums[b], vl);
    }
    __riscv_vse32_v_f32m4(acc_rows + i0, acc, vl);
    i0 += vl;
  }
}

void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling) {
  generic::validate_linear_args("rvv::linear_decode_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument("rvv::linear_decode_w4b64: activations must be one row in the K256 (decode) layout");
  }
  const std::int64_t n = w.n, nb = w.blocks_per_row();
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;
  const std::int8_t* x = a.codes.data();
  const std::int32_t* sums = a.block_sum.data();
  const float sa = a.scale[0];

  pool.parallel_for(col_tiles, [&](std::int64_t task, int) {
    const std::int64_t col0 = task * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    float acc_rows[kW4RowTile];
    for (std::int64_t t = col0 / kW4RowTile; t * kW4RowTile < col1; ++t) {
      decode_row_tile(w.codes.data() + t * nb * 32 * kW4RowTile, w.scale.data() + t * nb * kW4RowTile,
                      w.beta.data() + t * nb * kW4RowTile, x, sums, nb, acc_rows);
      const std::int64_t lo = std::max(col0, t * kW4RowTile);
      const std::int64_t hi = std::min(col1, (t + 1) * kW4RowTile);
      for (std::int64_t col = lo; col < hi; ++col) {
        generic::store_linear_output(ep, out, 1, n, 0, col, sa, acc_rows[col - t * kW4RowTile]);
      }
    }
  });
  generic::zero_c4_padding(ep, out, 1, n);
}

}  // namespace k3k::rvv
