// Private vector helpers shared by the RVV attention, KV-cache and small-op kernels (RVV 1.0,
// VLEN-agnostic: every loop strip-mines with vsetvl). Not part of the public API.
//
// Contents and their numerical contracts:
//   * reductions (dot, sum, max): e32m4 lanes accumulated with tail-undisturbed vfmacc/vfadd (lanes
//     never written stay 0), folded m4 -> m2 -> m1 by two exact-order vfadd levels, closed by ONE
//     vfredusum over the m1 lanes. vfredusum's tree is implementation-defined but fixed for a given
//     vtype and vl (RVV 1.0 sec. 14.3), and vtype/vl here depend only on the length n, so results
//     never depend on the worker count. Roundings per product (the error models' dot depth, see
//     reference::rvv_dot_depth): ceil(n / VLMAX_m4) lane steps + 2 folds + at most VLMAX_m1
//     additions in the vfredusum tree (any tree, bounded as a sequential sum).
//     LMUL m4: VLMAX_m4 = VLEN/8 lanes keeps a head_dim 128 dot at 4 vfmacc (VLEN 256) while q, k
//     and the accumulator (12 registers) leave room for the loop; the m1 close keeps the
//     unordered part short (VLEN/32 lanes) and the reduction instruction cheap.
//   * vexp: expf by range reduction n = rint(x log2e) (vfcvt.x.f under the default frm = RNE),
//     r = x - n ln2 with ln2 = C1 + C2 (the fused C1 step is exact for |x| <= 105), a degree-7
//     polynomial 1 + r + r^2 P(r) (SLEEF's expf u10 coefficients, Horner with FMA), and the scale
//     2^n applied as 2^(n>>1) * 2^(n - (n>>1)) so that subnormal results round once and overflow
//     gives +inf like IEEE expf. Error, measured EXHAUSTIVELY over every float in [-105, 105] on an
//     op-for-op host emulation (std::fma): max 0.988 ulp, max relative error 1.39 * 2^-24 (< the
//     2u of a faithful expf that the reference bounds assume); subnormal results within 1.05e-45
//     (< 2^-149) absolute. exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN.
//     LMUL m4: ~6 live m4 groups (24 registers) without spills; softmax blocks of 64 keys are 2
//     strips at VLEN 256.
//   * fp16 <-> fp32 (no zvfh/zvfhmin in rv64gcv): integer bit manipulation in vector registers,
//     bitwise equal to k3k::fp16_to_fp32 / fp32_to_fp16 for every input (all 65536 halves;
//     subnormals, inf, NaN -> 0x7E00 | sign, round to nearest even). e16m2 <-> e32m4.
//   * RoPE (rotate-half): contiguous halves, no gathers: y1 = a c - fl(b s), y2 = b c + fl(a s),
//     one vfmul and one fused vfmsac/vfmacc each - the operation sequence clang (default
//     -ffp-contract=on) emits for the generic scalar k3k::rope_rotate, so the rotated values are
//     bit-identical to the generic layer's on this toolchain (tests assert it for stored K).
//     LMUL m4: a, b, cos, sin and the two results fit in 24 registers.
#pragma once

#include <riscv_vector.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "k3k/fp16.h"

namespace k3k::rvv_detail {

// ---- reductions ---------------------------------------------------------------------------------

// Exact-order fold of an m4 accumulator to m1 (two vfadd levels over whole register groups, lanes
// beyond the data are 0), then one vfredusum.
inline float fold_sum_m4(vfloat32m4_t acc) {
  const std::size_t vl2 = __riscv_vsetvlmax_e32m2();
  const vfloat32m2_t s2 = __riscv_vfadd_vv_f32m2(__riscv_vget_v_f32m4_f32m2(acc, 0),
                                                 __riscv_vget_v_f32m4_f32m2(acc, 1), vl2);
  const std::size_t vl1 = __riscv_vsetvlmax_e32m1();
  const vfloat32m1_t s1 = __riscv_vfadd_vv_f32m1(__riscv_vget_v_f32m2_f32m1(s2, 0),
                                                 __riscv_vget_v_f32m2_f32m1(s2, 1), vl1);
  const vfloat32m1_t zero = __riscv_vfmv_s_f_f32m1(0.0f, 1);
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(s1, zero, vl1));
}

// Runs body.template operator()<tail>(i, vl) over [0, n) in e32m4 strips: whole strips at VLMAX
// first, then at most one partial strip (tail = true). Whole strips write every lane, so their
// accumulations need no tail-undisturbed policy: with one vtype for the loop the compiler hoists
// the vsetvli out of it, instead of switching between the loads' tail-agnostic and the
// accumulators' tail-undisturbed policy at every strip. The strips are the ones vsetvl(n - i)
// gives (min(n - i, VLMAX)), so the arithmetic is unchanged.
template <typename Body>
inline void for_each_m4_strip(int n, Body&& body) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  const int step = static_cast<int>(vlmax);
  int i = 0;
  for (; i + step <= n; i += step) body.template operator()<false>(i, vlmax);
  if (i < n)
    body.template operator()<true>(i, __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i)));
}

// acc + a * b, lanes >= vl of acc kept when kTail.
template <bool kTail>
inline vfloat32m4_t macc(vfloat32m4_t acc, vfloat32m4_t a, vfloat32m4_t b, std::size_t vl) {
  if constexpr (kTail)
    return __riscv_vfmacc_vv_f32m4_tu(acc, a, b, vl);
  else
    return __riscv_vfmacc_vv_f32m4(acc, a, b, vl);
}

// sum_i a[i] * b[i] (see the header comment for the order).
inline float dot(const float* a, const float* b, int n) {
  vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, __riscv_vsetvlmax_e32m4());
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    acc = __riscv_vfmacc_vv_f32m4_tu(acc, __riscv_vle32_v_f32m4(a + i, vl),
                                     __riscv_vle32_v_f32m4(b + i, vl), vl);
    i += static_cast<int>(vl);
  }
  return fold_sum_m4(acc);
}

// Two dot products against the same b (b loaded once); each has exactly the order of dot().
inline void dot2(const float* a0, const float* a1, const float* b, int n, float& out0,
                 float& out1) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  vfloat32m4_t acc1 = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    const vfloat32m4_t vb = __riscv_vle32_v_f32m4(b + i, vl);
    acc0 = __riscv_vfmacc_vv_f32m4_tu(acc0, __riscv_vle32_v_f32m4(a0 + i, vl), vb, vl);
    acc1 = __riscv_vfmacc_vv_f32m4_tu(acc1, __riscv_vle32_v_f32m4(a1 + i, vl), vb, vl);
    i += static_cast<int>(vl);
  }
  out0 = fold_sum_m4(acc0);
  out1 = fold_sum_m4(acc1);
}

// The fold of fold_sum_m4 for four accumulators at once: the same operations per accumulator (so
// bitwise the same four results), with one vtype switch per level for all four instead of one
// each.
inline void fold_sum4_m4(vfloat32m4_t a0, vfloat32m4_t a1, vfloat32m4_t a2, vfloat32m4_t a3,
                         float* out) {
  const std::size_t vl2 = __riscv_vsetvlmax_e32m2();
  auto half2 = [vl2](vfloat32m4_t a) {
    return __riscv_vfadd_vv_f32m2(__riscv_vget_v_f32m4_f32m2(a, 0),
                                  __riscv_vget_v_f32m4_f32m2(a, 1), vl2);
  };
  const vfloat32m2_t b0 = half2(a0), b1 = half2(a1), b2 = half2(a2), b3 = half2(a3);
  const std::size_t vl1 = __riscv_vsetvlmax_e32m1();
  auto half1 = [vl1](vfloat32m2_t b) {
    return __riscv_vfadd_vv_f32m1(__riscv_vget_v_f32m2_f32m1(b, 0),
                                  __riscv_vget_v_f32m2_f32m1(b, 1), vl1);
  };
  const vfloat32m1_t c0 = half1(b0), c1 = half1(b1), c2 = half1(b2), c3 = half1(b3);
  const vfloat32m1_t zero = __riscv_vfmv_v_f_f32m1(0.0f, vl1);
  out[0] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(c0, zero, vl1));
  out[1] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(c1, zero, vl1));
  out[2] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(c2, zero, vl1));
  out[3] = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(c3, zero, vl1));
}

// out[r] = dot(a, b[r], n) for r < 4: a loaded once per strip for four rows, each accumulator with
// exactly dot()'s order (bitwise dot()'s results). 4 m4 accumulators + a + one row = 24 registers.
inline void dot4(const float* a, const float* const* b, int n, float* out) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  vfloat32m4_t acc1 = acc0, acc2 = acc0, acc3 = acc0;
  const float *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    const vfloat32m4_t va = __riscv_vle32_v_f32m4(a + i, vl);
    acc0 = __riscv_vfmacc_vv_f32m4_tu(acc0, va, __riscv_vle32_v_f32m4(b0 + i, vl), vl);
    acc1 = __riscv_vfmacc_vv_f32m4_tu(acc1, va, __riscv_vle32_v_f32m4(b1 + i, vl), vl);
    acc2 = __riscv_vfmacc_vv_f32m4_tu(acc2, va, __riscv_vle32_v_f32m4(b2 + i, vl), vl);
    acc3 = __riscv_vfmacc_vv_f32m4_tu(acc3, va, __riscv_vle32_v_f32m4(b3 + i, vl), vl);
    i += static_cast<int>(vl);
  }
  fold_sum4_m4(acc0, acc1, acc2, acc3, out);
}

// out = {a0.b0, a1.b0, a0.b1, a1.b1}, each with exactly dot()'s order (bitwise dot()'s results):
// two query heads against two key rows, every strip of each loaded once. 4 m4 accumulators + a0 +
// a1 + one row = 28 registers.
inline void dot2x2(const float* a0, const float* a1, const float* b0, const float* b1, int n,
                   float* out) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  vfloat32m4_t acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for_each_m4_strip(n, [&]<bool kTail>(int i, std::size_t vl) {
    const vfloat32m4_t va0 = __riscv_vle32_v_f32m4(a0 + i, vl);
    const vfloat32m4_t va1 = __riscv_vle32_v_f32m4(a1 + i, vl);
    const vfloat32m4_t vb0 = __riscv_vle32_v_f32m4(b0 + i, vl);
    acc0 = macc<kTail>(acc0, va0, vb0, vl);
    acc1 = macc<kTail>(acc1, va1, vb0, vl);
    const vfloat32m4_t vb1 = __riscv_vle32_v_f32m4(b1 + i, vl);
    acc2 = macc<kTail>(acc2, va0, vb1, vl);
    acc3 = macc<kTail>(acc3, va1, vb1, vl);
  });
  fold_sum4_m4(acc0, acc1, acc2, acc3, out);
}

// max_i s[i] (n >= 1; exact, order-free).
inline float max_of(const float* s, int n) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t m = __riscv_vfmv_v_f_f32m4(-INFINITY, vlmax);
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    m = __riscv_vfmax_vv_f32m4_tu(m, m, __riscv_vle32_v_f32m4(s + i, vl), vl);
    i += static_cast<int>(vl);
  }
  const vfloat32m1_t init = __riscv_vfmv_s_f_f32m1(-INFINITY, 1);
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m4_f32m1(m, init, vlmax));
}

// max |x_i| over n floats (NaN ignored, as vfmax does; 0 for n = 0).
inline float max_abs(const float* x, std::int64_t n) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m8();
  vfloat32m8_t m = __riscv_vfmv_v_f_f32m8(0.0f, vlmax);
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    m = __riscv_vfmax_vv_f32m8_tu(m, m, __riscv_vfabs_v_f32m8(__riscv_vle32_v_f32m8(x + i, vl), vl),
                                  vl);
    i += static_cast<std::int64_t>(vl);
  }
  return __riscv_vfmv_f_s_f32m1_f32(
      __riscv_vfredmax_vs_f32m8_f32m1(m, __riscv_vfmv_s_f_f32m1(0.0f, 1), vlmax));
}

// dst = src * f over n floats (dst may be src).
inline void scale_row(const float* src, float* dst, std::int64_t n, float f) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    __riscv_vse32_v_f32m8(dst + i,
                          __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(src + i, vl), f, vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
}

// ---- exp ----------------------------------------------------------------------------------------

inline vfloat32m4_t vexp(vfloat32m4_t x_in, std::size_t vl) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kC1 = 0.693147182464599609375f;  // float(ln 2) = 11629080 * 2^-24
  constexpr float kC2 = -1.904654299957768e-09f;   // float(ln 2 - kC1)
  // |x| <= 105 keeps n in [-152, 152]: 2^(n>>1) and 2^(n - (n>>1)) are normal floats, and the
  // clamped extremes still round to 0 / overflow to +inf exactly like expf.
  const vbool8_t nan = __riscv_vmfne_vv_f32m4_b8(x_in, x_in, vl);  // the clamps would drop NaN
  const vfloat32m4_t x =
      __riscv_vfmin_vf_f32m4(__riscv_vfmax_vf_f32m4(x_in, -105.0f, vl), 105.0f, vl);
  const vint32m4_t n = __riscv_vfcvt_x_f_v_i32m4(__riscv_vfmul_vf_f32m4(x, kLog2e, vl), vl);
  const vfloat32m4_t nf = __riscv_vfcvt_f_x_v_f32m4(n, vl);
  vfloat32m4_t r = __riscv_vfnmsac_vf_f32m4(x, kC1, nf, vl);  // x - n C1 (exact)
  r = __riscv_vfnmsac_vf_f32m4(r, kC2, nf, vl);               // - n C2
  // Horner: p = P5 + P6 r, then p = Pk + p r (each one fused rounding).
  vfloat32m4_t p =
      __riscv_vfmacc_vf_f32m4(__riscv_vfmv_v_f_f32m4(0.00139304355252534151077271f, vl),
                              0.000198527617612853646278381f, r, vl);
  p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(0.00833336077630519866943359f, vl), vl);
  p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(0.0416664853692054748535156f, vl), vl);
  p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(0.166666671633720397949219f, vl), vl);
  p = __riscv_vfmadd_vv_f32m4(p, r, __riscv_vfmv_v_f_f32m4(0.5f, vl), vl);
  const vfloat32m4_t r2 = __riscv_vfmul_vv_f32m4(r, r, vl);
  vfloat32m4_t y = __riscv_vfmadd_vv_f32m4(p, r2, r, vl);  // r + r^2 P(r)
  y = __riscv_vfadd_vf_f32m4(y, 1.0f, vl);
  const vint32m4_t n1 = __riscv_vsra_vx_i32m4(n, 1, vl);
  const vint32m4_t n2 = __riscv_vsub_vv_i32m4(n, n1, vl);
  const vfloat32m4_t s1 = __riscv_vreinterpret_v_i32m4_f32m4(
      __riscv_vsll_vx_i32m4(__riscv_vadd_vx_i32m4(n1, 127, vl), 23, vl));
  const vfloat32m4_t s2 = __riscv_vreinterpret_v_i32m4_f32m4(
      __riscv_vsll_vx_i32m4(__riscv_vadd_vx_i32m4(n2, 127, vl), 23, vl));
  y = __riscv_vfmul_vv_f32m4(__riscv_vfmul_vv_f32m4(y, s1, vl), s2, vl);
  return __riscv_vfmerge_vfm_f32m4(y, NAN, nan, vl);  // NaN in, (canonical) NaN out
}

// s[i] = exp(s[i] - m) for i < n; returns their sum (lane order as in dot()).
inline float exp_shift_sum(float* s, int n, float m) {
  vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, __riscv_vsetvlmax_e32m4());
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    const vfloat32m4_t e =
        vexp(__riscv_vfsub_vf_f32m4(__riscv_vle32_v_f32m4(s + i, vl), m, vl), vl);
    __riscv_vse32_v_f32m4(s + i, e, vl);
    acc = __riscv_vfadd_vv_f32m4_tu(acc, acc, e, vl);
    i += static_cast<int>(vl);
  }
  return fold_sum_m4(acc);
}

// ---- fp16 <-> fp32 ------------------------------------------------------------------------------

// The half sign-extended and shifted left by 13 with bits 28..30 cleared reads as 2^-112 times its
// value (normal and subnormal alike; k3k/fp16.h fp16_scaled_2m112), scaled exactly by 2^112;
// exponent 31 (inf/NaN) lands on a finite 2^16 (1.m), whose exponent one or then sets to 255 (the
// top five bits of the half's magnitude, shifted to the word's top, are all ones exactly there):
// six operations where the field-by-field construction took eleven, the same bits.
inline vfloat32m4_t f16_to_f32(vuint16m2_t h16, std::size_t vl) {
  const vint32m4_t w =
      __riscv_vwmul_vx_i32m4(__riscv_vreinterpret_v_u16m2_i16m2(h16), kFp16ScaledShift, vl);
  const vuint32m4_t wu = __riscv_vreinterpret_v_i32m4_u32m4(w);
  const vfloat32m4_t f = __riscv_vfmul_vf_f32m4(
      __riscv_vreinterpret_v_u32m4_f32m4(__riscv_vand_vx_u32m4(wu, kFp16ScaledMask, vl)),
      0x1.0p112f, vl);
  const vbool8_t special =
      __riscv_vmsgeu_vx_u32m4_b8(__riscv_vsll_vx_u32m4(wu, 4, vl), 0xF8000000u, vl);
  const vuint32m4_t bits = __riscv_vreinterpret_v_f32m4_u32m4(f);
  return __riscv_vreinterpret_v_u32m4_f32m4(
      __riscv_vor_vx_u32m4_mu(special, bits, bits, 0x7F800000u, vl));
}

// Round to nearest even, as k3k::fp32_to_fp16:
//   normal halves: (a + 0xFFF + lsb) >> 13 rebased by 112 exponents, with a = min(|x|, 2^16) so
//     that everything >= 65520 (and inf) lands exactly on 0x7C00;
//   subnormal halves (|x| < 2^-14): |x| + 0.5f rounds (vfadd, frm = RNE) at 2^-24 = one half
//     subnormal step, ties to even on the half's last bit; the result's low bits are the half;
//   NaN -> 0x7E00 (quiet, non-zero payload).
inline vuint16m2_t f32_to_f16(vfloat32m4_t f, std::size_t vl) {
  const vuint32m4_t x = __riscv_vreinterpret_v_f32m4_u32m4(f);
  const vuint32m4_t sign = __riscv_vand_vx_u32m4(__riscv_vsrl_vx_u32m4(x, 16, vl), 0x8000u, vl);
  const vuint32m4_t abs = __riscv_vand_vx_u32m4(x, 0x7FFFFFFFu, vl);
  const vuint32m4_t a = __riscv_vminu_vx_u32m4(abs, 0x47800000u, vl);
  const vuint32m4_t lsb = __riscv_vand_vx_u32m4(__riscv_vsrl_vx_u32m4(a, 13, vl), 1u, vl);
  vuint32m4_t h = __riscv_vadd_vv_u32m4(__riscv_vadd_vx_u32m4(a, 0xFFFu, vl), lsb, vl);
  h = __riscv_vsub_vx_u32m4(__riscv_vsrl_vx_u32m4(h, 13, vl), 112u << 10, vl);
  const vfloat32m4_t sub_f =
      __riscv_vfadd_vf_f32m4(__riscv_vreinterpret_v_u32m4_f32m4(abs), 0.5f, vl);
  const vuint32m4_t sub_h =
      __riscv_vsub_vx_u32m4(__riscv_vreinterpret_v_f32m4_u32m4(sub_f), 0x3F000000u, vl);
  h = __riscv_vmerge_vvm_u32m4(h, sub_h, __riscv_vmsltu_vx_u32m4_b8(abs, 0x38800000u, vl), vl);
  h = __riscv_vmerge_vxm_u32m4(h, 0x7E00u, __riscv_vmsgtu_vx_u32m4_b8(abs, 0x7F800000u, vl), vl);
  h = __riscv_vor_vv_u32m4(h, sign, vl);
  return __riscv_vncvt_x_x_w_u16m2(h, vl);
}

inline void f16_to_f32_row(const fp16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    __riscv_vse32_v_f32m4(dst + i, f16_to_f32(__riscv_vle16_v_u16m2(src + i, vl), vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
}

inline void f32_to_f16_row(const float* src, fp16_t* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    __riscv_vse16_v_u16m2(dst + i, f32_to_f16(__riscv_vle32_v_f32m4(src + i, vl), vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
}

// ---- copies and scaling -------------------------------------------------------------------------

inline void copy_row(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(n - i));
    __riscv_vse32_v_f32m8(dst + i, __riscv_vle32_v_f32m8(src + i, vl), vl);
    i += static_cast<std::int64_t>(vl);
  }
}

// ---- RoPE ---------------------------------------------------------------------------------------

// dst = rope(src) (k3k::rope_rotate's contract: dims >= 2*half copied; dst == src allowed), then,
// when scale != 1, every component multiplied by scale in a separate rounding (the generic
// attention kernels' "rotate, then qr[d] *= sc").
inline void rope_rotate(const float* src, float* dst, int head_dim, int half, const float* cos,
                        const float* sin, float scale = 1.0f) {
  const bool scaled = scale != 1.0f;
  for (int i = 0; i < half;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(half - i));
    const vfloat32m4_t a = __riscv_vle32_v_f32m4(src + i, vl);
    const vfloat32m4_t b = __riscv_vle32_v_f32m4(src + half + i, vl);
    const vfloat32m4_t c = __riscv_vle32_v_f32m4(cos + i, vl);
    const vfloat32m4_t s = __riscv_vle32_v_f32m4(sin + i, vl);
    vfloat32m4_t y1 = __riscv_vfmsac_vv_f32m4(__riscv_vfmul_vv_f32m4(b, s, vl), a, c, vl);
    vfloat32m4_t y2 = __riscv_vfmacc_vv_f32m4(__riscv_vfmul_vv_f32m4(a, s, vl), b, c, vl);
    if (scaled) {
      y1 = __riscv_vfmul_vf_f32m4(y1, scale, vl);
      y2 = __riscv_vfmul_vf_f32m4(y2, scale, vl);
    }
    __riscv_vse32_v_f32m4(dst + i, y1, vl);
    __riscv_vse32_v_f32m4(dst + half + i, y2, vl);
    i += static_cast<int>(vl);
  }
  const int rest = head_dim - 2 * half;
  if (!scaled) {
    if (dst != src) copy_row(src + 2 * half, dst + 2 * half, rest);
    return;
  }
  for (int i = 2 * half; i < head_dim;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(head_dim - i));
    __riscv_vse32_v_f32m8(
        dst + i, __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(src + i, vl), scale, vl), vl);
    i += static_cast<int>(vl);
  }
}

}  // namespace k3k::rvv_detail
