// RVV building blocks of the W4B64 Linear microkernels: a "strip" is vl consecutive weight rows of
// one tile (R = w.row_tile rows; vl <= VLMAX(e8, L)), computed with every vector instruction of the
// K loop at 8-bit element width, so the loop has no vsetvli:
//   * codes are signed nibbles (kSignedRows: q - 8 stored at pack time; kRowTile32 codes are made
//     signed in the loop with one vxor 0x88): high half = vsra 4, low half = vsll 4 + vsra 4;
//   * vwmacc.vx widens int8 (q - 8) x int8 activation into int16 lanes (EMUL 2L); the first K-step
//     of a block is a vwmul, so no accumulator clearing either.
// Per K-step j (32 per block): one vle8, three shifts, two vwmacc per activation row, one scalar
// load per vwmacc (lb with an immediate offset) and one pointer add: 9 instructions for 2 * vl
// weights in decode, for vl = VLEN/8 * L rows per strip. LMUL (L = 1 or 2) and the rows per tile
// are the VLEN-dependent choices (layer_rvv.cpp).
// Exactness: |qa| <= 127, |q - 8| <= 8, so a half-block (32 products) stays below 2^15 in int16;
// the halves meet in int32 (vwadd), and D (< 2^17) converts to float exactly. The float steps per
// block are those of every earlier RVV kernel: t = s * D, t += S * beta (one fused rounding),
// acc += t, on the fp16 pairs scaled by 2^-112 (scaled_pairs) and scaled back once per strip; so
// outputs are bitwise identical for every strip width, LMUL and layout.
#pragma once

#include <riscv_vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/prefetch.h"
#include "k3k/w4b64.h"

namespace k3k::rvv::strip {

// The 8-bit code vector and its int16 accumulator for LMUL L.
template <int L>
struct E8;
template <>
struct E8<1> {
  using I8 = vint8m1_t;
  using I16 = vint16m2_t;
  static std::size_t setvl(std::size_t n) { return __riscv_vsetvl_e8m1(n); }
  static std::size_t vlmax() { return __riscv_vsetvlmax_e8m1(); }
  static I8 load(const std::uint8_t* p, std::size_t vl) {
    return __riscv_vle8_v_i8m1(reinterpret_cast<const std::int8_t*>(p), vl);
  }
  template <int Part>
  static vint16m2_t part(I16 v) {
    static_assert(Part == 0);
    return v;
  }
};
template <>
struct E8<2> {
  using I8 = vint8m2_t;
  using I16 = vint16m4_t;
  static std::size_t setvl(std::size_t n) { return __riscv_vsetvl_e8m2(n); }
  static std::size_t vlmax() { return __riscv_vsetvlmax_e8m2(); }
  static I8 load(const std::uint8_t* p, std::size_t vl) {
    return __riscv_vle8_v_i8m2(reinterpret_cast<const std::int8_t*>(p), vl);
  }
  template <int Part>
  static vint16m2_t part(I16 v) {
    return __riscv_vget_v_i16m4_i16m2(v, Part);
  }
};

// Signed (q - 8) of the low (k = 64b + j) and high (k = 64b + 32 + j) halves of a code byte.
template <int L, bool kRowTile32>
inline void signed_halves(typename E8<L>::I8 c, typename E8<L>::I8& lo, typename E8<L>::I8& hi,
                          std::size_t vl) {
  if constexpr (kRowTile32) c = __riscv_vxor(c, static_cast<std::int8_t>(0x88), vl);
  hi = __riscv_vsra(c, 4, vl);
  lo = __riscv_vsra(__riscv_vsll(c, 4, vl), 4, vl);
}

// The block's (beta, scale) pair words of lanes [0, vl), and the two floats times 2^-112 each
// holds (w4b64.h "Scaled pairs"): integer operations at e32m4, no change of element width.
inline vint32m4_t pair_words(const fp16_t* pairs, std::size_t vl) {
  return __riscv_vle32_v_i32m4(reinterpret_cast<const std::int32_t*>(pairs), vl);
}
inline vfloat32m4_t scaled_float(vint32m4_t x, std::size_t vl) {
  return __riscv_vreinterpret_v_u32m4_f32m4(
      __riscv_vand_vx_u32m4(__riscv_vreinterpret_v_i32m4_u32m4(x), kPairScaledMask, vl));
}
inline vfloat32m4_t scaled_scale(vint32m4_t words, std::size_t vl) {
  return scaled_float(__riscv_vsra_vx_i32m4(words, 3, vl), vl);
}
inline vfloat32m4_t scaled_beta(vint32m4_t words, std::size_t vl) {
  return scaled_float(__riscv_vsra_vx_i32m4(__riscv_vsll_vx_i32m4(words, 16, vl), 3, vl), vl);
}

// One block's float contribution to the parts [0, vl) of a strip: t = s*D + beta*S (two
// roundings, the evaluation the Linear reference bound assumes), added to acc. e32m4 per part.
// The pairs (the words at `pairs`) enter scaled by 2^-112 and so does the accumulator, until the
// strip's sums are stored times 2^112 (kPairUnscale): the bits are those of the same steps on the
// pairs' values.
inline vfloat32m4_t accumulate_part(vfloat32m4_t acc, vint16m2_t lo, vint16m2_t hi,
                                    const fp16_t* pairs, float block_sum, std::size_t vl) {
  const vint32m4_t words = pair_words(pairs, vl);
  const vint32m4_t d = __riscv_vwadd_vv_i32m4(lo, hi, vl);   // exact D
  const vfloat32m4_t df = __riscv_vfcvt_f_x_v_f32m4(d, vl);  // |D| < 2^17: exact
  vfloat32m4_t t = __riscv_vfmul_vv_f32m4(scaled_scale(words, vl), df, vl);
  t = __riscv_vfmacc_vf_f32m4(t, block_sum, scaled_beta(words, vl), vl);
  return __riscv_vfadd_vv_f32m4(acc, t, vl);
}
inline constexpr float kPairUnscale = 0x1p112f;

// The float lanes of part p of an LMUL-L strip of vl rows: [p * VLMAX(e8, m1), ...).
struct Parts {
  std::size_t first, second;  // lanes of part 0 and part 1 (0 when absent)
  explicit Parts(std::size_t vl) {
    const std::size_t m1 = __riscv_vsetvlmax_e8m1();
    first = std::min(vl, m1);
    second = vl - first;
  }
};

// Prefetch of the stream `distance` bytes ahead of the rows read at p (vl bytes).
template <bool kPrefetch>
inline void prefetch_ahead([[maybe_unused]] const std::uint8_t* p,
                           [[maybe_unused]] std::ptrdiff_t distance,
                           [[maybe_unused]] std::size_t vl) {
  if constexpr (kPrefetch) detail::prefetch_read_range(p + distance, vl);
}

// The int16 accumulators of one block are passed as lo0, hi0, lo1, hi1, ... (RVV register values
// cannot live in arrays or structs): accumulator i belongs to activation row i / 2, whose 64 codes
// of this block sit at x + 64 * (i / 2) (the M4 pack; decode: one row), and to the low (i even:
// k = 64b + j) or high (i odd: k = 64b + 32 + j) halves.
template <std::size_t... I, typename I8, typename... Acc>
inline void first_step(std::index_sequence<I...>, I8 l, I8 h, const std::int8_t* x, std::size_t vl,
                       Acc&... acc) {
  ((acc = __riscv_vwmul(I % 2 ? h : l, x[64 * (I / 2) + 32 * (I % 2)], vl)), ...);
}
template <std::size_t... I, typename I8, typename... Acc>
inline void next_step(std::index_sequence<I...>, I8 l, I8 h, const std::int8_t* xj, std::size_t vl,
                      Acc&... acc) {
  ((acc = __riscv_vwmacc(acc, xj[64 * (I / 2) + 32 * (I % 2)], I % 2 ? h : l, vl)), ...);
}

// The D accumulators of one block of a strip (see above). cb: the block's codes at this strip's
// first row; stride: R. Always inlined: out of line, the accumulators (passed by reference) would
// go through memory on every K-step.
template <int L, bool kRowTile32, bool kPrefetch, typename... Acc>
[[gnu::always_inline]] inline void block_dot(const std::uint8_t* cb, std::ptrdiff_t stride,
                                             const std::int8_t* x, std::size_t vl,
                                             std::ptrdiff_t prefetch, Acc&... acc) {
  using I8 = typename E8<L>::I8;
  constexpr auto kIndex = std::make_index_sequence<sizeof...(Acc)>();
  I8 l, h;
  prefetch_ahead<kPrefetch>(cb, prefetch, vl);
  signed_halves<L, kRowTile32>(E8<L>::load(cb, vl), l, h, vl);
  first_step(kIndex, l, h, x, vl, acc...);
  auto step = [&](int j) {
    prefetch_ahead<kPrefetch>(cb + j * stride, prefetch, vl);
    signed_halves<L, kRowTile32>(E8<L>::load(cb + j * stride, vl), l, h, vl);
    next_step(kIndex, l, h, x + j, vl, acc...);
  };
  // One activation row (two accumulators): fully unrolled, every activation load is an lb with an
  // immediate offset. More rows: a rolled loop, because unrolled the scheduler hoists the code
  // unpacking of all 31 steps ahead of the multiply-adds and spills them (measured: 3x the
  // instructions of the rolled loop).
  if constexpr (sizeof...(Acc) <= 2) {
#pragma clang loop unroll(full)
    for (int j = 1; j < 32; ++j) step(j);
  } else {
#pragma clang loop unroll(disable)
    for (int j = 1; j < 32; ++j) step(j);
  }
}

}  // namespace k3k::rvv::strip
