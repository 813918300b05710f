// IME2 W4A8 core: int8 activations split into nibbles (x = 16 * sx4(x >> 4) + (x & 15)) against
// unsigned 4-bit codes, two int4 matmuls per K-step (vmadotu for the low nibbles, vmadotsu for the
// high ones), then in RVV: D = 16*hi + lo - 8*S (exact int32), t = s*D + beta*S, acc += t.
// Bounds per block and 8x8 tile: |lo| <= 64*15*15 = 14400, |hi| <= 64*8*15 = 7680, |D| < 2^17:
// exact in int32 and in float.
#include "ime2/linear_w4a8.h"

#include <riscv_vector.h>

#include <algorithm>
#include <array>

#include "ime2/ime2_insn.h"
#include "ime2/w4b64_ime2_layout.h"

namespace k3k::ime2::detail {

namespace {

constexpr std::size_t kLanes = 64;  // C tile lanes (8 x 8 int32 / float, e32m2 at VLEN 1024)

// The loop-invariant operands of write_image: the chunk gather and, for each of the 256 lanes
// p = 64 sub + 8m + n, its row m.
inline vuint64m4_t chunk_gather() {
  return __riscv_vle64_v_u64m4(kChunkGather.data(), 64);
}
inline vuint32m8_t lane_rows() {
  const std::size_t lanes = kImageLanes;
  return __riscv_vand_vx_u32m8(__riscv_vsrl_vx_u32m8(__riscv_vid_v_u32m8(lanes), 3, lanes), 7,
                               lanes);
}

// One A-image unit from 8 rows x 64 int8 codes: rows 0..3 at `lower` (lower_rows of them, 64 bytes
// apart), rows 4..7 at `upper` (4 rows, or null for zeros); the rows' block sums at `sums`,
// `sums_stride` bytes apart (rows of them; the others are zero).
inline void write_image(const std::int8_t* lower, int lower_rows, const std::int8_t* upper,
                        const std::int32_t* sums, std::ptrdiff_t sums_stride, int rows,
                        vuint64m4_t gather, vuint32m8_t lane_row, std::uint8_t* dst) {
  const vuint64m2_t zero = __riscv_vmv_v_x_u64m2(0, 32);
  const vuint64m2_t r0 =
      __riscv_vle64_v_u64m2_tu(zero, reinterpret_cast<const std::uint64_t*>(lower), 8 * lower_rows);
  const vuint64m2_t r1 =
      upper ? __riscv_vle64_v_u64m2(reinterpret_cast<const std::uint64_t*>(upper), 32) : zero;
  vuint64m4_t rows8 = __riscv_vundefined_u64m4();
  rows8 = __riscv_vset_v_u64m2_u64m4(rows8, 0, r0);
  rows8 = __riscv_vset_v_u64m2_u64m4(rows8, 1, r1);
  const vuint8m4_t chunks =
      __riscv_vreinterpret_v_u64m4_u8m4(__riscv_vrgather_vv_u64m4(rows8, gather, 64));
  for (int ks = 0; ks < 2; ++ks) {
    const vuint8m1_t p =
        ks == 0 ? __riscv_vget_v_u8m4_u8m1(chunks, 0) : __riscv_vget_v_u8m4_u8m1(chunks, 1);
    const vuint8m1_t q =
        ks == 0 ? __riscv_vget_v_u8m4_u8m1(chunks, 2) : __riscv_vget_v_u8m4_u8m1(chunks, 3);
    const vuint8m1_t lo = __riscv_vor_vv_u8m1(__riscv_vand_vx_u8m1(p, 0x0F, kRegBytes),
                                              __riscv_vsll_vx_u8m1(q, 4, kRegBytes), kRegBytes);
    const vuint8m1_t hi = __riscv_vor_vv_u8m1(__riscv_vsrl_vx_u8m1(p, 4, kRegBytes),
                                              __riscv_vand_vx_u8m1(q, 0xF0, kRegBytes), kRegBytes);
    __riscv_vse8_v_u8m1(dst + ks * 2 * kRegBytes, lo, kRegBytes);
    __riscv_vse8_v_u8m1(dst + ks * 2 * kRegBytes + kRegBytes, hi, kRegBytes);
  }
  // Lane p holds row m's sum: the rows' sums (one strided load) gathered over 256 lanes.
  const std::size_t lanes = kImageLanes;
  const vint32m1_t row_sums = __riscv_vlse32_v_i32m1_tu(
      __riscv_vmv_v_x_i32m1(0, kGroupRows), sums, sums_stride, static_cast<std::size_t>(rows));
  const vint32m8_t s =
      __riscv_vrgather_vv_i32m8(__riscv_vlmul_ext_v_i32m1_i32m8(row_sums), lane_row, lanes);
  __riscv_vse32_v_i32m8(reinterpret_cast<std::int32_t*>(dst + kImageMinus8SOffset),
                        __riscv_vmul_vx_i32m8(s, -8, lanes), lanes);
  __riscv_vse32_v_f32m8(reinterpret_cast<float*>(dst + kImageSumsFOffset),
                        __riscv_vfcvt_f_x_v_f32m8(s, lanes), lanes);
}

// Lane p of the result = pair word w[p % 8] (a per-column pair spread over the 8 rows of a C tile).
inline vint32m2_t per_column(const fp16_t* pairs, vuint32m2_t col_idx) {
  return __riscv_vrgather_vv_i32m2(
      __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(pairs), 8), col_idx, kLanes);
}
// The scale and beta of pair words times 2^-112 (w4b64.h "Scaled pairs").
inline vfloat32m2_t scaled_float(vint32m2_t x) {
  return __riscv_vreinterpret_v_u32m2_f32m2(
      __riscv_vand_vx_u32m2(__riscv_vreinterpret_v_i32m2_u32m2(x), kPairScaledMask, kLanes));
}
inline vfloat32m2_t scaled_scale(vint32m2_t w) {
  return scaled_float(__riscv_vsra_vx_i32m2(w, 3, kLanes));
}
inline vfloat32m2_t scaled_beta(vint32m2_t w) {
  return scaled_float(__riscv_vsra_vx_i32m2(__riscv_vsll_vx_i32m2(w, 16, kLanes), 3, kLanes));
}

// One block of one 8x8 tile: acc += s*D + beta*S, on the pairs times 2^-112 (tile_outputs scales
// the sums back).
inline vfloat32m2_t block_tile(vfloat32m2_t acc, const std::uint8_t* img,
                               const std::uint8_t* b_unit, int sub, const fp16_t* pairs,
                               vuint32m2_t col_idx) {
  vint32m2_t lo = __riscv_vmv_v_x_i32m2(0, kLanes), hi = lo;
  const vuint8m1_t a_lo0 = __riscv_vle8_v_u8m1(img, kRegBytes);
  const vuint8m1_t a_hi0 = __riscv_vle8_v_u8m1(img + kRegBytes, kRegBytes);
  const vuint8m1_t a_lo1 = __riscv_vle8_v_u8m1(img + 2 * kRegBytes, kRegBytes);
  const vuint8m1_t a_hi1 = __riscv_vle8_v_u8m1(img + 3 * kRegBytes, kRegBytes);
  const vuint8m1_t b0 = __riscv_vle8_v_u8m1(b_unit + sub * kRegBytes, kRegBytes);
  const vuint8m1_t b1 = __riscv_vle8_v_u8m1(b_unit + kHalfUnitBytes + sub * kRegBytes, kRegBytes);
  w4a8_block(lo, hi, a_lo0, a_hi0, a_lo1, a_hi1, b0, b1);
  vint32m2_t d = __riscv_vadd_vv_i32m2(__riscv_vsll_vx_i32m2(hi, 4, kLanes), lo, kLanes);
  d = __riscv_vadd_vv_i32m2(
      d,
      __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(img + kImageMinus8SOffset),
                            kLanes),
      kLanes);
  const vfloat32m2_t df = __riscv_vfcvt_f_x_v_f32m2(d, kLanes);  // |D| < 2^17: exact
  const vfloat32m2_t sf =
      __riscv_vle32_v_f32m2(reinterpret_cast<const float*>(img + kImageSumsFOffset), kLanes);
  const vint32m2_t words = per_column(pairs + 2 * 8 * sub, col_idx);
  vfloat32m2_t t = __riscv_vfmul_vv_f32m2(scaled_scale(words), df, kLanes);
  t = __riscv_vfmacc_vv_f32m2(t, sf, scaled_beta(words), kLanes);
  return __riscv_vfadd_vv_f32m2(acc, t, kLanes);
}

// kRowTile32 unit -> IME2 order (the same permutation as pack_w4b64), in registers.
inline void transpose_unit(const std::uint8_t* src, std::uint8_t* dst, vuint16m8_t idx) {
  for (int h = 0; h < 2; ++h) {
    const vuint8m4_t x = __riscv_vle8_v_u8m4(src + h * kHalfUnitBytes, kHalfUnitBytes);
    __riscv_vse8_v_u8m4(dst + h * kHalfUnitBytes,
                        __riscv_vrgatherei16_vv_u8m4(x, idx, kHalfUnitBytes), kHalfUnitBytes);
  }
}

}  // namespace

const std::uint8_t* make_images_decode(const PackedActivations& a) {
  const std::int64_t nb = a.blocks_per_row();
  thread_local AlignedBuffer<std::uint8_t> scratch;
  const std::span<std::uint8_t> images =
      reused_for_overwrite(scratch, static_cast<std::size_t>(nb * kImageBytes));
  const vuint64m4_t gather = chunk_gather();
  const vuint32m8_t lane_row = lane_rows();
  for (std::int64_t b = 0; b < nb; ++b) {
    write_image(a.codes.data() + b * 64, 1, nullptr, a.block_sum.data() + b, 0, 1, gather, lane_row,
                images.data() + b * kImageBytes);
  }
  return images.data();
}

const std::uint8_t* make_images_prefill(const PackedActivations& a, WorkerPool& pool) {
  const std::int64_t nb = a.blocks_per_row();
  const std::int64_t groups = (a.m + kGroupRows - 1) / kGroupRows;
  thread_local AlignedBuffer<std::uint8_t> scratch;
  const std::span<std::uint8_t> images =
      reused_for_overwrite(scratch, static_cast<std::size_t>(groups * nb * kImageBytes));
  pool.parallel_for(groups, [&](std::int64_t g, int) {
    const std::int64_t row0 = g * kGroupRows;
    const int rows = static_cast<int>(std::min<std::int64_t>(kGroupRows, a.m - row0));
    // M4 groups keep 4 rows of a block contiguous (zero rows past M), so rows 0..3 and 4..7 of a
    // block are two 256-byte runs, the next block's 256 bytes on; the M4 pack stops after row
    // M-1's group.
    constexpr std::int64_t kRun = kPrefillRowsPerTask * 64;
    const std::int8_t* lower = a.codes.data() + row0 / kPrefillRowsPerTask * nb * kRun;
    const std::int8_t* upper = rows > kPrefillRowsPerTask ? lower + nb * kRun : nullptr;
    const std::int32_t* sums = a.block_sum.data() + row0 * nb;
    const auto sums_stride = static_cast<std::ptrdiff_t>(nb * sizeof(std::int32_t));
    std::uint8_t* dst = images.data() + g * nb * kImageBytes;
    const vuint64m4_t gather = chunk_gather();
    const vuint32m8_t lane_row = lane_rows();
    for (std::int64_t b = 0; b < nb; ++b) {
      write_image(lower + b * kRun, kPrefillRowsPerTask, upper ? upper + b * kRun : nullptr,
                  sums + b, sums_stride, rows, gather, lane_row, dst + b * kImageBytes);
    }
  });
  return images.data();
}

void tile_outputs(const std::uint8_t* images, const std::uint8_t* codes, const fp16_t* pairs,
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
    const std::uint8_t* img = images + b * kImageBytes;
    const fp16_t* pb = pairs + 2 * b * kW4RowTile;
    acc0 = block_tile(acc0, img, unit_codes, 0, pb, col_idx);
    acc1 = block_tile(acc1, img, unit_codes, 1, pb, col_idx);
    acc2 = block_tile(acc2, img, unit_codes, 2, pb, col_idx);
    acc3 = block_tile(acc3, img, unit_codes, 3, pb, col_idx);
  }
  __riscv_vse32_v_f32m2(tile[0], __riscv_vfmul_vf_f32m2(acc0, 0x1p112f, kLanes), kLanes);
  __riscv_vse32_v_f32m2(tile[1], __riscv_vfmul_vf_f32m2(acc1, 0x1p112f, kLanes), kLanes);
  __riscv_vse32_v_f32m2(tile[2], __riscv_vfmul_vf_f32m2(acc2, 0x1p112f, kLanes), kLanes);
  __riscv_vse32_v_f32m2(tile[3], __riscv_vfmul_vf_f32m2(acc3, 0x1p112f, kLanes), kLanes);
}

namespace {

// Byte offsets of the 256 lanes p = 64 sub + 8m + n into a block's 32 pair words: weight row
// 8 sub + n. The indexed load spreads the per-column pairs over the four C tiles.
constexpr std::array<std::uint16_t, kImageLanes> kColumnOffsets = [] {
  std::array<std::uint16_t, kImageLanes> t{};
  for (int p = 0; p < kImageLanes; ++p)
    t[static_cast<std::size_t>(p)] = static_cast<std::uint16_t>(4 * (8 * (p / 64) + p % 8));
  return t;
}();

// Output lane q = 32m + i (row m, weight row i) takes accumulator lane 64 (i / 8) + 8m + i % 8.
constexpr std::array<std::uint16_t, kImageLanes> kByRow = [] {
  std::array<std::uint16_t, kImageLanes> t{};
  for (int q = 0; q < kImageLanes; ++q) {
    const int m = q / 32, i = q % 32;
    t[static_cast<std::size_t>(q)] = static_cast<std::uint16_t>(64 * (i / 8) + 8 * m + i % 8);
  }
  return t;
}();

}  // namespace

// The vector register file, laid out by hand (an asm operand names one register; the IME2 words
// need the sub-tiles' accumulators at fixed distances, and the float steps want them as one
// group):
//   v0..v7    acc: 256 float lanes p = 64 sub + 8m + n (the four sub-tiles' 8x8 C tiles)
//   v8..v15   C_lo (sub-tile s at v8+2s), started at -8*S from the image, += A_lo.B (vmadotu)
//   v16..v23  C_hi (v16+2s), from zero, += A_hi.B (vmadotsu)
//   v24..v27  the block's A image: A_lo ks0, A_hi ks0, A_lo ks1, A_hi ks1
//   v28..v31  the unit's B registers of one K-step (sub-tiles 0..3), then of the other
// After the 16 vmadot: D = C_lo + 16*C_hi (= 16hi + lo - 8S, README.md §3), exact in float; the
// scales (v16..v23) and betas (v24..v31) of the 32 weight rows over their 256 lanes, times 2^-112
// (w4b64.h "Scaled pairs"), come from the pairs (PairSource); S comes from the image; then
// t = s*D, t += S*beta (fused), acc += t: the operations of block_tile in the same order, so the
// bits are its bits (the accumulators are scaled back by 2^112 once per tile).
void tile_outputs_by_row(const std::uint8_t* images, const std::uint8_t* codes, const fp16_t* pairs,
                         std::int64_t nb, std::int64_t tiles, float* out, std::int64_t row_stride,
                         PairSource source, float* expanded) {
  const std::uint8_t* a_image = images;
  const std::uint8_t* minus_8s = images;
  const std::uint8_t* sums_f = images;
  // kExpanded walks the expanded lanes in place of the pair words.
  const void* pair_ptr = source == PairSource::kExpanded ? static_cast<const void*>(expanded)
                                                         : static_cast<const void*>(pairs);
  const void* pairs_end = pair_ptr;
  void* keep = expanded;
  const std::int64_t sixteen = 16, image_bytes = kImageBytes, mask = kPairScaledMask;
  const float unscale = 0x1p112f;
  const std::int64_t pair_bytes_per_block =
      source == PairSource::kExpanded ? kExpandedPairBytes
                                      : kW4RowTile * 2 * static_cast<std::int64_t>(sizeof(fp16_t));
  const std::int64_t tile_pair_bytes = nb * pair_bytes_per_block;
  const std::int64_t row_bytes = row_stride * static_cast<std::int64_t>(sizeof(float));
#define K3_PREFILL_KSTEP(lo, hi)                                                           \
  K3_IME2_INSN "%[fu], %[f7], v8, " lo ", v28\n\t" K3_IME2_INSN "%[fsu], %[f7], v16, " hi  \
               ", v28\n\t" K3_IME2_INSN "%[fu], %[f7], v10, " lo ", v29\n\t" K3_IME2_INSN  \
               "%[fsu], %[f7], v18, " hi ", v29\n\t" K3_IME2_INSN "%[fu], %[f7], v12, " lo \
               ", v30\n\t" K3_IME2_INSN "%[fsu], %[f7], v20, " hi ", v30\n\t" K3_IME2_INSN \
               "%[fu], %[f7], v14, " lo ", v31\n\t" K3_IME2_INSN "%[fsu], %[f7], v22, " hi \
               ", v31\n\t"
// The pairs of a block from its 32 pair words: one indexed load spreads them over the 256 lanes
// (offsets in v20..v23, C_hi's space once D is formed); v8 *= scales, v24 = betas, v16 = S.
#define K3_PAIRS_GATHERED(KEEP_SCALES, KEEP_BETAS) \
  "vl4re16.v v20, (%[columns])\n\t"                \
  "vluxei16.v v24, (%[pairs]), v20\n\t"            \
  "vsra.vi v16, v24, 3\n\t"                        \
  "vand.vx v16, v16, %[mask]\n\t" KEEP_SCALES      \
  "vfmul.vv v8, v8, v16\n\t"                       \
  "vsll.vi v24, v24, 16\n\t"                       \
  "vsra.vi v24, v24, 3\n\t"                        \
  "vand.vx v24, v24, %[mask]\n\t" KEEP_BETAS       \
  "vl8re32.v v16, (%[sums_f])\n\t"                 \
  "addi %[pairs], %[pairs], %[pair_word_bytes]\n\t"
// kGatherAndKeep: the scales and betas also go to the expanded buffer (kExpandedPairBytes a block).
#define K3_KEEP_SCALES "vs8r.v v16, (%[keep])\n\taddi %[keep], %[keep], 1024\n\t"
#define K3_KEEP_BETAS "vs8r.v v24, (%[keep])\n\taddi %[keep], %[keep], 1024\n\t"
// kExpanded: the scales and betas loaded as kept.
#define K3_PAIRS_EXPANDED             \
  "vl8re32.v v16, (%[pairs])\n\t"     \
  "addi %[pairs], %[pairs], 1024\n\t" \
  "vfmul.vv v8, v8, v16\n\t"          \
  "vl8re32.v v24, (%[pairs])\n\t"     \
  "addi %[pairs], %[pairs], 1024\n\t" \
  "vl8re32.v v16, (%[sums_f])\n\t"
// One block of the tile (16 IME2 instructions, 24-28 others): the image and unit pointers advance.
#define K3_PREFILL_BLOCK(PAIRS) \
  "vl8re32.v v8, (%[minus_8s])\n\t" \
  "vl4re8.v v24, (%[a_image])\n\t" \
  "vl4re8.v v28, (%[unit])\n\t" \
  "vsetvli t0, zero, e8, m1, ta, ma\n\t" \
  K3_PREFILL_KSTEP("v24", "v25") \
  "addi t1, %[unit], %[half_unit]\n\t" \
  "vl4re8.v v28, (t1)\n\t" \
  K3_PREFILL_KSTEP("v26", "v27") \
  "vsetvli t0, zero, e32, m8, ta, ma\n\t" \
  "vmacc.vx v8, %[c16], v16\n\t" \
  "vfcvt.f.x.v v8, v8\n\t" \
  PAIRS \
  "vfmacc.vv v8, v16, v24\n\t" \
  "vfadd.vv v0, v0, v8\n\t" \
  "vmv.v.i v16, 0\n\t" \
  "add %[a_image], %[a_image], %[image_bytes]\n\t" \
  "add %[minus_8s], %[minus_8s], %[image_bytes]\n\t" \
  "add %[sums_f], %[sums_f], %[image_bytes]\n\t" \
  "addi %[unit], %[unit], %[unit_bytes]\n\t"
  // Tiles are consecutive in the pack (codes nb units apart, pairs nb * 32 words) and in the
  // expanded buffer, so the block loop leaves the weight pointers at the next tile; only the image
  // pointers rewind.
#define K3_PREFILL_TILES(PAIRS) \
  asm volatile( \
      "vsetvli t0, zero, e32, m8, ta, ma\n\t" \
      "2:\n\t" \
      "vmv.v.i v0, 0\n\t" \
      "vmv.v.i v16, 0\n\t" \
      "mv %[a_image], %[images]\n\t" \
      "addi %[minus_8s], %[images], %[m8s_off]\n\t" \
      "addi %[sums_f], %[images], %[sums_off]\n\t" \
      "add %[pairs_end], %[pairs], %[tile_pair_bytes]\n\t" \
      "andi t2, %[nb], 1\n\t" /* nb odd: one block first */ \
      "beqz t2, 3f\n\t" K3_PREFILL_BLOCK(PAIRS) \
      "3:\n\t" \
      "beq %[pairs], %[pairs_end], 4f\n\t" \
      "1:\n\t" /* then two blocks a pass */ \
      K3_PREFILL_BLOCK(PAIRS) K3_PREFILL_BLOCK(PAIRS) \
      "bne %[pairs], %[pairs_end], 1b\n\t" \
      "4:\n\t" \
      "vfmul.vf v0, v0, %[unscale]\n\t" /* the sums of the scaled pairs, scaled back */ \
      "vl4re16.v v16, (%[by_row])\n\t" \
      "vrgatherei16.vv v8, v0, v16\n\t" /* row m of the tile in v8+m (32 floats, a register) */ \
      "mv t1, %[out]\n\t" \
      "vs1r.v v8, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v9, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v10, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v11, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v12, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v13, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v14, (t1)\n\t" \
      "add t1, t1, %[out_step]\n\t" \
      "vs1r.v v15, (t1)\n\t" \
      "addi %[out], %[out], %[tile_row_bytes]\n\t" \
      "addi %[tiles], %[tiles], -1\n\t" \
      "bnez %[tiles], 2b" \
      : [a_image] "+&r"(a_image), [minus_8s] "+&r"(minus_8s), [sums_f] "+&r"(sums_f), \
        [unit] "+&r"(codes), [pairs] "+&r"(pair_ptr), [out] "+&r"(out), \
        [pairs_end] "+&r"(pairs_end), [tiles] "+&r"(tiles), [keep] "+&r"(keep) \
      : [images] "r"(images), [columns] "r"(kColumnOffsets.data()), [by_row] "r"(kByRow.data()), \
        [out_step] "r"(row_bytes), [c16] "r"(sixteen), [image_bytes] "r"(image_bytes), \
        [tile_pair_bytes] "r"(tile_pair_bytes), [nb] "r"(nb), [mask] "r"(mask), \
        [unscale] "f"(unscale), [m8s_off] "i"(kImageMinus8SOffset), \
        [sums_off] "i"(kImageSumsFOffset), [half_unit] "i"(kHalfUnitBytes), \
        [unit_bytes] "i"(kUnitBytes), [pair_word_bytes] "i"(kW4RowTile * 2 * sizeof(fp16_t)), \
        [tile_row_bytes] "i"(kW4RowTile * sizeof(float)), \
        [fu] "i"(encoding::vmadot_funct3(Sign::kUU)), \
        [fsu] "i"(encoding::vmadot_funct3(Sign::kSU)), \
        [f7] "i"(encoding::vmadot_funct7(ElemBits::kInt4)) \
      : "t0", "t1", "t2", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", \
        "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", \
        "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "memory" K3_IME2_CLOBBER_RA)
  switch (source) {
    case PairSource::kGather:
      K3_PREFILL_TILES(K3_PAIRS_GATHERED("", ""));
      break;
    case PairSource::kGatherAndKeep:
      K3_PREFILL_TILES(K3_PAIRS_GATHERED(K3_KEEP_SCALES, K3_KEEP_BETAS));
      break;
    case PairSource::kExpanded:
      K3_PREFILL_TILES(K3_PAIRS_EXPANDED);
      break;
  }
#undef K3_PREFILL_TILES
#undef K3_PREFILL_BLOCK
#undef K3_PAIRS_EXPANDED
#undef K3_KEEP_BETAS
#undef K3_KEEP_SCALES
#undef K3_PAIRS_GATHERED
#undef K3_PREFILL_KSTEP
}

}  // namespace k3k::ime2::detail
