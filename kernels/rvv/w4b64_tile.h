// RVV building blocks shared by the W4B64 Linear kernels: unpacking one K-step of a packed
// 32-row tile (W4B64Packed: byte (j, row) = low nibble k=j, high nibble k=32+j) into signed
// 16-bit (q - 8) lanes.
//
// LMUL: rows are strip-mined with e16m2 so that a 32-row tile is a single strip from VLEN 256 up
// (two strips at VLEN 128). The byte loads are e8m1 (half the e16m2 element count), widened with
// vzext.vf2. At VLEN 1024 a strip fills a quarter of an m2 group: the 32-row tile is a layout
// decision shared with the IME2 layer, to revisit with board measurements.
// Exactness: |qa| <= 127, |q - 8| <= 8, so 32 products per half-block stay below 2^15 in int16
// lanes (vmacc.vx), and the two halves are added in int32 (vwadd.vv).
#pragma once

#include <riscv_vector.h>

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::rvv {

// Signed (q - 8) of the low nibbles (k = j) and of the high nibbles (k = 32 + j) of a K-step.
inline vint16m2_t low_codes(vuint8m1_t c, std::size_t vl) {
  const vuint16m2_t q = __riscv_vzext_vf2_u16m2(__riscv_vand_vx_u8m1(c, 0x0F, vl), vl);
  return __riscv_vsub_vx_i16m2(__riscv_vreinterpret_v_u16m2_i16m2(q), 8, vl);
}
inline vint16m2_t high_codes(vuint8m1_t c, std::size_t vl) {
  const vuint16m2_t q = __riscv_vzext_vf2_u16m2(__riscv_vsrl_vx_u8m1(c, 4, vl), vl);
  return __riscv_vsub_vx_i16m2(__riscv_vreinterpret_v_u16m2_i16m2(q), 8, vl);
}

// One block's float contribution for a strip of rows: t = s*D + beta*S (two roundings, the
// evaluation the Linear reference bound assumes), added to acc.
inline vfloat32m4_t accumulate_block(vfloat32m4_t acc, vint16m2_t lo, vint16m2_t hi, const float* scale,
                                     const float* beta, std::int32_t block_sum, std::size_t vl) {
  const vint32m4_t d = __riscv_vwadd_vv_i32m4(lo, hi, vl);  // exact D
  const vfloat32m4_t df = __riscv_vfcvt_f_x_v_f32m4(d, vl);  // |D| < 2^17: exact
  vfloat32m4_t t = __riscv_vfmul_vv_f32m4(__riscv_vle32_v_f32m4(scale, vl), df, vl);
  t = __riscv_vfmacc_vf_f32m4(t, static_cast<float>(block_sum), __riscv_vle32_v_f32m4(beta, vl), vl);
  return __riscv_vfadd_vv_f32m4(acc, t, vl);
}

}  // namespace k3k::rvv
