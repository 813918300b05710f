// IME2 W4A8 core: int8 activations split into nibbles (x = 16 * sx4(x >> 4) + (x & 15)) against
// unsigned 4-bit codes, two int4 matmuls per K-step (vmadotu for the low nibbles, vmadotsu for the
// high ones), then in RVV: D = 16*hi + lo - 8*S (exact int32), t = s*D + beta*S, acc += t.
// Bounds per block and 8x8 tile: |lo| <= 64*15*15 = 14400, |hi| <= 64*8*15 = 7680, |D| < 2^17:
// exact in int32 and in float.
#include "ime2/linear_w4a8.h"

#include <riscv_vector.h>

#include "ime2/ime2_insn.h"
#include "ime2/w4b64_ime2_layout.h"

namespace k3k::ime2::detail {

namespace {

constexpr std::size_t kLanes = 64;  // C tile lanes (8 x 8 int32 / float, e32m2 at VLEN 1024)

// One A-image unit from 8 rows x 64 int8 codes: rows 0..3 at `lower` (lower_rows of them, 64 bytes
// apart), rows 4..7 at `upper` (4 rows, or null for zeros); sums[8] the rows' block sums.
void write_image(const std::int8_t* lower, int lower_rows, const std::int8_t* upper, const std::int32_t* sums,
                 std::uint8_t* dst) {
  const vuint64m2_t zero = __riscv_vmv_v_x_u64m2(0, 32);
  const vuint64m2_t r0 =
      __riscv_vle64_v_u64m2_tu(zero, reinterpret_cast<const std::uint64_t*>(lower), 8 * lower_rows);
  const vuint64m2_t r1 = upper ? __riscv_vle64_v_u64m2(reinterpret_cast<const std::uint64_t*>(upper), 32) : zero;
  vuint64m4_t rows = __riscv_vundefined_u64m4();
  rows = __riscv_vset_v_u64m2_u64m4(rows, 0, r0);
  rows = __riscv_vset_v_u64m2_u64m4(rows, 1, r1);
  const vuint64m4_t idx = __riscv_vle64_v_u64m4(kChunkGather.data(), 64);
  const vuint8m4_t chunks = __riscv_vreinterpret_v_u64m4_u8m4(__riscv_vrgather_vv_u64m4(rows, idx, 64));
  for (int ks = 0; ks < 2; ++ks) {
    const vuint8m1_t p = ks == 0 ? __riscv_vget_v_u8m4_u8m1(chunks, 0) : __riscv_vget_v_u8m4_u8m1(chunks, 1);
    const vuint8m1_t q = ks == 0 ? __riscv_vget_v_u8m4_u8m1(chunks, 2) : __riscv_vget_v_u8m4_u8m1(chunks, 3);
    const vuint8m1_t lo = __riscv_vor_vv_u8m1(__riscv_vand_vx_u8m1(p, 0x0F, kRegBytes),
                                              __riscv_vsll_vx_u8m1(q, 4, kRegBytes), kRegBytes);
    const vuint8m1_t hi = __riscv_vor_vv_u8m1(__riscv_vsrl_vx_u8m1(p, 4, kRegBytes),
                                              __riscv_vand_vx_u8m1(q, 0xF0, kRegBytes), kRegBytes);
    __riscv_vse8_v_u8m1(dst + ks * 2 * kRegBytes, lo, kRegBytes);
    __riscv_vse8_v_u8m1(dst + ks * 2 * kRegBytes + kRegBytes, hi, kRegBytes);
  }
  auto* s8 = reinterpret_cast<std::int32_t*>(dst + kImageSumsOffset);
  auto* sf = reinterpret_cast<float*>(dst + kImageSumsFOffset);
  for (std::size_t p = 0; p < kLanes; ++p) {
    s8[p] = 8 * sums[p / 8];
    sf[p] = static_cast<float>(sums[p / 8]);
  }
}

// Lane p of the result = v[p % 8] (a per-column value spread over the 8 rows of a C tile).
inline vfloat32m2_t per_column(const float* v, vuint32m2_t col_idx) {
  return __riscv_vrgather_vv_f32m2(__riscv_vle32_v_f32m2(v, 8), col_idx, kLanes);
}

// One block of one 8x8 tile: acc += s*D + beta*S.
inline vfloat32m2_t block_tile(vfloat32m2_t acc, const std::uint8_t* img, const std::uint8_t* b_unit, int sub,
                               const float* scale, const float* beta, vuint32m2_t col_idx) {
  vint32m2_t lo = __riscv_vmv_v_x_i32m2(0, kLanes), hi = lo;
  const vuint8m1_t a_lo0 = __riscv_vle8_v_u8m1(img, kRegBytes);
  const vuint8m1_t a_hi0 = __riscv_vle8_v_u8m1(img + kRegBytes, kRegBytes);
  const vuint8m1_t a_lo1 = __riscv_vle8_v_u8m1(img + 2 * kRegBytes, kRegBytes);
  const vuint8m1_t a_hi1 = __riscv_vle8_v_u8m1(img + 3 * kRegBytes, kRegBytes);
  const vuint8m1_t b0 = __riscv_vle8_v_u8m1(b_unit + sub * kRegBytes, kRegBytes);
  const vuint8m1_t b1 = __riscv_vle8_v_u8m1(b_unit + kHalfUnitBytes + sub * kRegBytes, kRegBytes);
  w4a8_block(lo, hi, a_lo0, a_hi0, a_lo1, a_hi1, b0, b1);
  vint32m2_t d = __riscv_vadd_vv_i32m2(__riscv_vsll_vx_i32m2(hi, 4, kLanes), lo, kLanes);
  d = __riscv_vsub_vv_i32m2(d, __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(img + kImageSumsOffset), kLanes), kLanes);
  const vfloat32m2_t df = __riscv_vfcvt_f_x_v_f32m2(d, kLanes);  // |D| < 2^17: exact
  const vfloat32m2_t sf = __riscv_vle32_v_f32m2(reinterpret_cast<const float*>(img + kImageSumsFOffset), kLanes);
  vfloat32m2_t t = __riscv_vfmul_vv_f32m2(per_column(scale + 8 * sub, col_idx), df, kLanes);
  t = __riscv_vfmacc_vv_f32m2(t, sf, per_column(beta + 8 * sub, col_idx), kLanes);
  return __riscv_vfadd_vv_f32m2(acc, t, kLanes);
}

// kRowTile32 unit -> IME2 order (the same permutation as pack_w4b64), in registers.
inline void transpose_unit(const std::uint8_t* src, std::uint8_t* dst, vuint16m8_t idx) {
  for (int h = 0; h < 2; ++h) {
    const vuint8m4_t x = __riscv_vle8_v_u8m4(src + h * kHalfUnitBytes, kHalfUnitBytes);
    __riscv_vse8_v_u8m4(dst + h * kHalfUnitBytes, __riscv_vrgatherei16_vv_u8m4(x, idx, kHalfUnitBytes),
                        kHalfUnitBytes);
  }
}

}  // namespace

AlignedBuffer<std::uint8_t> make_images_decode(const PackedActivations& a) {
  const std::int64_t nb = a.blocks_per_row();
  AlignedBuffer<std::uint8_t> images(static_cast<std::size_t>(nb * kUnitBytes));
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::int32_t sums[8] = {a.block_sum[static_cast<std::size_t>(b)], 0, 0, 0, 0, 0, 0, 0};
    write_image(a.block_codes(0, b), 1, nullptr, sums, images.data() + b * kUnitBytes);
  }
  return images;
}

AlignedBuffer<std::uint8_t> make_images_prefill(const PackedActivations& a, WorkerPool& pool) {
  const std::int64_t nb = a.blocks_per_row();
  const std::int64_t groups = (a.m + kGroupRows - 1) / kGroupRows;
  AlignedBuffer<std::uint8_t> images(static_cast<std::size_t>(groups * nb * kUnitBytes));
  pool.parallel_for(groups, [&](std::int64_t g, int) {
    const std::int64_t row0 = g * kGroupRows;
    const bool has_upper = row0 + kPrefillRowsPerTask < a.m;  // the M4 pack stops after row M-1's group
    for (std::int64_t b = 0; b < nb; ++b) {
      std::int32_t sums[8] = {};
      for (int r = 0; r < kGroupRows && row0 + r < a.m; ++r) {
        sums[r] = a.block_sum[static_cast<std::size_t>((row0 + r) * nb + b)];
      }
      // M4 groups keep 4 rows of a block contiguous (zero rows past M), so rows 0..3 and 4..7 are
      // two 256-byte runs.
      write_image(a.block_codes(row0, b), kPrefillRowsPerTask,
                  has_upper ? a.block_codes(row0 + kPrefillRowsPerTask, b) : nullptr, sums,
                  images.data() + (g * nb + b) * kUnitBytes);
    }
  });
  return images;
}

void tile_outputs(const std::uint8_t* images, const std::uint8_t* codes, const float* scale, const float* beta,
                  std::int64_t nb, bool transpose, float tile[4][kLanes]) {
  const vuint32m2_t col_idx = __riscv_vand_vx_u32m2(__riscv_vid_v_u32m2(kLanes), 7, kLanes);
  const vuint16m8_t t_idx = __riscv_vle16_v_u16m8(kTransposeHalf.data(), kHalfUnitBytes);
  alignas(64) std::uint8_t unit[kUnitBytes];
  vfloat32m2_t acc0 = __riscv_vfmv_v_f_f32m2(0.0f, kLanes), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* unit_codes = codes + b * kUnitBytes;
    if (transpose) {
      transpose_unit(unit_codes, unit, t_idx);
      unit_codes = unit;
    }
    const std::uint8_t* img = images + b * kUnitBytes;
    const float* sc = scale + b * kW4RowTile;
    const float* be = beta + b * kW4RowTile;
    acc0 = block_tile(acc0, img, unit_codes, 0, sc, be, col_idx);
    acc1 = block_tile(acc1, img, unit_codes, 1, sc, be, col_idx);
    acc2 = block_tile(acc2, img, unit_codes, 2, sc, be, col_idx);
    acc3 = block_tile(acc3, img, unit_codes, 3, sc, be, col_idx);
  }
  __riscv_vse32_v_f32m2(tile[0], acc0, kLanes);
  __riscv_vse32_v_f32m2(tile[1], acc1, kLanes);
  __riscv_vse32_v_f32m2(tile[2], acc2, kLanes);
  __riscv_vse32_v_f32m2(tile[3], acc3, kLanes);
}

}  // namespace k3k::ime2::detail
