// IME2 decode core: the paired-row A images and the 32-row tile loop (linear_w4a8_decode.h has
// the identity D = C_lo + 16*C_hi - 128*C_one - 8*S and the layouts). Per block and 32-row tile:
// one load of the weight unit (8 registers, e8m8), one of the A image (4 registers, e8m4),
// 8 vmadotu, then the combination on 32 int32 lanes (one register at VLEN 1024) and the float
// steps of every other layer, so outputs are bitwise those of the generic layer's integer parts.
#include "ime2/linear_w4a8_decode.h"

#include <riscv_vector.h>

#include <array>
#include <cstddef>
#include <cstring>

#include "ime2/ime2_insn.h"
#include "ime2/w4b64_ime2_layout.h"
#include "k3k/w4b64.h"

namespace k3k::ime2::detail {

namespace {

constexpr std::size_t kRows = 32;  // rows of a weight tile = int32 lanes of one register
constexpr std::size_t kHalf = 16;  // tile rows per C tile (two 8-row slices)

// Zero image of one block with the ones rows: row 4 of the E registers, row 5 of the O ones.
constexpr std::array<std::uint8_t, kDecodeImageBytes> kImageTemplate = [] {
  std::array<std::uint8_t, kDecodeImageBytes> t{};
  for (int reg = 0; reg < 4; ++reg) {
    const int row = reg % 2 == 0 ? 4 : 5;
    for (int jj = 0; jj < 16; ++jj)
      t[static_cast<std::size_t>(reg * kRegBytes + 16 * row + jj)] = 0x11;
  }
  return t;
}();

// Byte offsets of the 8 u64 words [lo ks0 (2) | lo ks1 (2) | hi ks0 (2) | hi ks1 (2)] in the E
// registers (lo: row 0, hi: row 2); the O registers are 128 bytes and one row (16 bytes) later.
constexpr std::array<std::uint64_t, 8> kEvenOffsets = {
    0, 8, 2 * kRegBytes, 2 * kRegBytes + 8, 32, 40, 2 * kRegBytes + 32, 2 * kRegBytes + 40};
constexpr std::uint64_t kOddShift = kRegBytes + 16;

// kRowTile32 unit -> IME2 order (the permutation of pack_w4b64), in registers.
inline void transpose_unit(const std::uint8_t* src, std::uint8_t* dst, vuint16m8_t idx) {
  for (int h = 0; h < 2; ++h) {
    const vuint8m4_t x = __riscv_vle8_v_u8m4(src + h * kHalfUnitBytes, kHalfUnitBytes);
    __riscv_vse8_v_u8m4(dst + h * kHalfUnitBytes,
                        __riscv_vrgatherei16_vv_u8m4(x, idx, kHalfUnitBytes), kHalfUnitBytes);
  }
}

// lo + 16*hi - 128*ones of one C tile, in lanes 0..15 (lanes 16..31 are don't-care).
// A tile's 32 (beta, scale) pair words of one block and the two floats times 2^-112 each holds
// (w4b64.h "Scaled pairs").
inline vint32m1_t pair_words(const fp16_t* pairs) {
  return __riscv_vle32_v_i32m1(reinterpret_cast<const std::int32_t*>(pairs), kRows);
}
inline vfloat32m1_t scaled_float(vint32m1_t x) {
  return __riscv_vreinterpret_v_u32m1_f32m1(
      __riscv_vand_vx_u32m1(__riscv_vreinterpret_v_i32m1_u32m1(x), kPairScaledMask, kRows));
}
inline vfloat32m1_t scaled_scale(vint32m1_t w) {
  return scaled_float(__riscv_vsra_vx_i32m1(w, 3, kRows));
}
inline vfloat32m1_t scaled_beta(vint32m1_t w) {
  return scaled_float(__riscv_vsra_vx_i32m1(__riscv_vsll_vx_i32m1(w, 16, kRows), 3, kRows));
}

inline vint32m1_t combine(vint32m2_t c) {
  const vint32m1_t lo_hi = __riscv_vget_v_i32m2_i32m1(c, 0);  // lanes 0..15 lo, 16..31 hi+8
  const vint32m1_t ones = __riscv_vget_v_i32m2_i32m1(c, 1);   // lanes 0..15 Q
  vint32m1_t d =
      __riscv_vmacc_vx_i32m1(lo_hi, 16, __riscv_vslidedown_vx_i32m1(lo_hi, kHalf, kRows), kRows);
  return __riscv_vmacc_vx_i32m1(d, -128, ones, kRows);
}

}  // namespace

const std::uint8_t* make_images_decode_paired(const PackedActivations& a) {
  const std::int64_t nb = a.blocks_per_row();
  thread_local AlignedBuffer<std::uint8_t> scratch;
  const std::span<std::uint8_t> images =
      reused_for_overwrite(scratch, static_cast<std::size_t>(nb * kDecodeImageStride));
  const vuint8m4_t zero_ones = __riscv_vle8_v_u8m4(kImageTemplate.data(), kDecodeImageBytes);
  const vuint64m1_t even = __riscv_vle64_v_u64m1(kEvenOffsets.data(), 8);
  const vuint64m1_t odd = __riscv_vadd_vx_u64m1(even, kOddShift, 8);
  for (std::int64_t b = 0; b < nb; ++b) {
    const auto* x = reinterpret_cast<const std::uint8_t*>(a.block_codes(0, b));
    const vuint8m1_t p = __riscv_vle8_v_u8m1(x, 32);       // k = 0..31: low nibbles of the bytes
    const vuint8m1_t q = __riscv_vle8_v_u8m1(x + 32, 32);  // k = 32..63: high nibbles
    const vuint8m1_t lo =
        __riscv_vor_vv_u8m1(__riscv_vand_vx_u8m1(p, 0x0F, 32), __riscv_vsll_vx_u8m1(q, 4, 32), 32);
    const vuint8m1_t hi = __riscv_vxor_vx_u8m1(
        __riscv_vor_vv_u8m1(__riscv_vsrl_vx_u8m1(p, 4, 32), __riscv_vand_vx_u8m1(q, 0xF0, 32), 32),
        0x88, 32);
    const vuint64m1_t words =
        __riscv_vreinterpret_v_u8m1_u64m1(__riscv_vslideup_vx_u8m1(lo, hi, 32, 64));
    std::uint8_t* dst = images.data() + b * kDecodeImageStride;
    const std::int32_t s = a.block_sum[static_cast<std::size_t>(b)];
    const BlockTerms terms{-8 * s, static_cast<float>(s)};
    std::memcpy(dst + kDecodeTermsOffset, &terms, sizeof terms);
    __riscv_vse8_v_u8m4(dst, zero_ones, kDecodeImageBytes);
    __riscv_vsuxei64_v_u64m1(reinterpret_cast<std::uint64_t*>(dst), even, words, 8);
    __riscv_vsuxei64_v_u64m1(reinterpret_cast<std::uint64_t*>(dst), odd, words, 8);
  }
  return images.data();
}

void decode_tile_outputs(const std::uint8_t* images, const std::int32_t* block_sum,
                         const std::uint8_t* codes, const fp16_t* pairs, std::int64_t nb,
                         bool transpose, float out[32]) {
  alignas(64) std::uint8_t unit[kUnitBytes];
  const vuint16m8_t t_idx = transpose ? __riscv_vle16_v_u16m8(kTransposeHalf.data(), kHalfUnitBytes)
                                      : __riscv_vundefined_u16m8();
  vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(0.0f, kRows);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* unit_codes = codes + b * kUnitBytes;
    if (transpose) {
      transpose_unit(unit_codes, unit, t_idx);
      unit_codes = unit;
    }
    const vuint8m8_t w = __riscv_vle8_v_u8m8(unit_codes, kUnitBytes);  // register 4*ks + slice
    const vuint8m4_t img = __riscv_vle8_v_u8m4(images + b * kDecodeImageStride, kDecodeImageBytes);
    vint32m2_t x = __riscv_vmv_v_x_i32m2(0, 64), y = x;
    w4a8_decode_block(x, y, __riscv_vget_v_u8m4_u8m1(img, 0), __riscv_vget_v_u8m4_u8m1(img, 1),
                      __riscv_vget_v_u8m4_u8m1(img, 2), __riscv_vget_v_u8m4_u8m1(img, 3),
                      __riscv_vget_v_u8m8_u8m1(w, 0), __riscv_vget_v_u8m8_u8m1(w, 1),
                      __riscv_vget_v_u8m8_u8m1(w, 2), __riscv_vget_v_u8m8_u8m1(w, 3),
                      __riscv_vget_v_u8m8_u8m1(w, 4), __riscv_vget_v_u8m8_u8m1(w, 5),
                      __riscv_vget_v_u8m8_u8m1(w, 6), __riscv_vget_v_u8m8_u8m1(w, 7));
    const std::int32_t s = block_sum[b];
    vint32m1_t d =
        __riscv_vslideup_vx_i32m1(combine(x), combine(y), kHalf, kRows);  // tile rows 0..31
    d = __riscv_vsub_vx_i32m1(d, 8 * s, kRows);
    const vfloat32m1_t df = __riscv_vfcvt_f_x_v_f32m1(d, kRows);  // |D| < 2^17: exact
    // The float steps on the pairs times 2^-112, the sum scaled back once (w4b64.h).
    const vint32m1_t words = pair_words(pairs + 2 * b * kRows);
    vfloat32m1_t t = __riscv_vfmul_vv_f32m1(scaled_scale(words), df, kRows);
    t = __riscv_vfmacc_vf_f32m1(t, static_cast<float>(s), scaled_beta(words), kRows);
    acc = __riscv_vfadd_vv_f32m1(acc, t, kRows);
  }
  __riscv_vse32_v_f32m1(out, __riscv_vfmul_vf_f32m1(acc, 0x1p112f, kRows), kRows);
}

namespace {

// Lanes kept of the four C tiles' e32m8 group (lanes 64c + 0..15 hold D after the combination):
// 256 mask bits.
constexpr std::array<std::uint8_t, 32> kPairKeepMask = [] {
  std::array<std::uint8_t, 32> m{};
  for (int c = 0; c < 4; ++c)
    m[static_cast<std::size_t>(8 * c)] = m[static_cast<std::size_t>(8 * c + 1)] = 0xFF;
  return m;
}();

}  // namespace

// The block loop of two tiles written as one asm loop, with the vector register file laid out by
// hand, because the point is the instructions around the matrix unit and the compiler cannot
// place IME2 accumulators in one register group (an asm operand names one register, and the
// instruction words need four). Per block:
//   v16..v19  the block's A image (whole-register load: no vsetvli)
//   v24..v31  tile 0's unit, then tile 1's (8 vmadotu each, under one e8m1 vsetvli)
//   v8..v15   C tiles X0, Y0, X1, Y1 as one e32m8 group, so the combination
//             D = lo + 16*hi - 128*ones - 8*S (README.md §3.2) is two slides, two vmacc and a vadd
//             on all four at once, and one vcompress under the keep mask (v1) packs the 64 D
//             values into v16..v17 (tile 0's rows, then tile 1's);
//   v18, v19  the two tiles' (beta, scale) pair words (whole-register loads: 32 words each), then
//             at e32m2: v20..v21 their scales and v22..v23 their betas times 2^-112 (w4b64.h
//             "Scaled pairs": a shift and an and, a shift pair and an and, both tiles at once)
//             and t = s*D, t += S*beta (fused), acc += t on 64 lanes: the operations of
//             decode_tile_outputs in the same order, so each tile's outputs are bitwise its.
// C is zeroed for the next block under the same vsetvli as the combination.
void decode_tile_pair_outputs(const std::uint8_t* images, const std::uint8_t* codes,
                              const fp16_t* pairs, std::int64_t nb, std::int64_t code_stride,
                              std::int64_t pair_stride, float out[64]) {
  const std::uint8_t* w0 = codes;
  const std::uint8_t* w1 = codes + code_stride;
  const fp16_t* p0 = pairs;
  const fp16_t* p1 = pairs + 2 * pair_stride;
  const std::int64_t sixteen = 16, thirty_two = 32, minus_128 = -128, mask = kPairScaledMask;
  const std::uint8_t* const end = images + nb * kDecodeImageStride;
  std::int64_t minus_8s = 0;
  float sum_f = 0.0f;
  vfloat32m2_t acc = __riscv_vfmv_v_f_f32m2(0.0f, 2 * kRows);
#define K3_PAIR_TILE(x, y)                                                                    \
  K3_IME2_INSN "%[f3], %[f7], " x ", v16, v24\n\t" K3_IME2_INSN "%[f3], %[f7], " x            \
               ", v17, v25\n\t" K3_IME2_INSN "%[f3], %[f7], " y ", v16, v26\n\t" K3_IME2_INSN \
               "%[f3], %[f7], " y ", v17, v27\n\t" K3_IME2_INSN "%[f3], %[f7], " x            \
               ", v18, v28\n\t" K3_IME2_INSN "%[f3], %[f7], " x ", v19, v29\n\t" K3_IME2_INSN \
               "%[f3], %[f7], " y ", v18, v30\n\t" K3_IME2_INSN "%[f3], %[f7], " y            \
               ", v19, v31\n\t"
  asm volatile(
      "vsetvli t0, zero, e32, m8, ta, ma\n\t"
      "vlm.v v1, (%[keep])\n\t"
      "vmv.v.i v8, 0\n\t"
      "1:\n\t"
      "vl4re8.v v16, (%[img])\n\t"
      "vl8re8.v v24, (%[w0])\n\t"
      "vsetvli t0, zero, e8, m1, ta, ma\n\t"  // the IME2 rule: LMUL 1, vl = VLMAX
      K3_PAIR_TILE("v8", "v10")
      "vl8re8.v v24, (%[w1])\n\t"
      K3_PAIR_TILE("v12", "v14")
      "lw %[minus_8s], %[terms](%[img])\n\t"
      "flw %[sum_f], %[terms_f](%[img])\n\t"
      "vsetvli t0, zero, e32, m8, ta, ma\n\t"
      "vslidedown.vi v24, v8, 16\n\t"
      "vmacc.vx v8, %[c16], v24\n\t"  // lo + 16*hi
      "vslidedown.vx v24, v8, %[c32]\n\t"
      "vmacc.vx v8, %[c128], v24\n\t"  // - 128*ones
      "vadd.vx v8, v8, %[minus_8s]\n\t"  // - 8*S
      "vcompress.vm v16, v8, v1\n\t"
      "vmv.v.i v8, 0\n\t"
      "vl1re32.v v18, (%[p0])\n\t"
      "vl1re32.v v19, (%[p1])\n\t"
      "vsetvli t0, zero, e32, m2, ta, ma\n\t"
      "vsra.vi v20, v18, 3\n\t"
      "vand.vx v20, v20, %[mask]\n\t"  // scales * 2^-112
      "vsll.vi v22, v18, 16\n\t"
      "vsra.vi v22, v22, 3\n\t"
      "vand.vx v22, v22, %[mask]\n\t"  // betas * 2^-112
      "vfcvt.f.x.v v16, v16\n\t"  // |D| < 2^17: exact
      "vfmul.vv v16, v20, v16\n\t"
      "vfmacc.vf v16, %[sum_f], v22\n\t"
      "vfadd.vv %[acc], %[acc], v16\n\t"
      "addi %[img], %[img], %[image_bytes]\n\t"
      "addi %[w0], %[w0], %[unit_bytes]\n\t"
      "addi %[w1], %[w1], %[unit_bytes]\n\t"
      "addi %[p0], %[p0], %[row_bytes]\n\t"
      "addi %[p1], %[p1], %[row_bytes]\n\t"
      "bne %[img], %[end], 1b"
      : [acc] "+vr"(acc), [img] "+r"(images), [w0] "+r"(w0),
        [w1] "+r"(w1), [p0] "+r"(p0), [p1] "+r"(p1),
        [minus_8s] "=&r"(minus_8s), [sum_f] "=&f"(sum_f)
      : [end] "r"(end), [keep] "r"(kPairKeepMask.data()), [c16] "r"(sixteen), [c32] "r"(thirty_two),
        [c128] "r"(minus_128), [mask] "r"(mask), [image_bytes] "i"(kDecodeImageStride),
        [terms] "i"(kDecodeTermsOffset), [terms_f] "i"(kDecodeTermsOffset + offsetof(BlockTerms, s)), [unit_bytes] "i"(kUnitBytes),
        [row_bytes] "i"(kRows * 2 * sizeof(fp16_t)), [f3] "i"(encoding::vmadot_funct3(Sign::kUU)),
        [f7] "i"(encoding::vmadot_funct7(ElemBits::kInt4))
      : "t0", "v1", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18",
        "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",
        "memory" K3_IME2_CLOBBER_RA);
#undef K3_PAIR_TILE
  __riscv_vse32_v_f32m2(out, __riscv_vfmul_vf_f32m2(acc, 0x1p112f, 2 * kRows), 2 * kRows);
}

}  // namespace k3k::ime2::detail
