// RVV quantise microkernel: absmax by vfredmax, then scale, round-half-even (vfcvt.x.f under the
// default frm = RNE), clamp, narrow to int8, and the block sums by vredsum - the same float
// operations as the generic layer, so codes, sums and sa are bit-identical.
// LMUL: e32m8 for the absmax sweep (a long streaming loop, fewest vsetvl per element). From VLEN
// 256 up the quantisation runs as strips of whole 64-blocks at e32m8 (VLEN/256 blocks per strip:
// 1 at 256, 4 at 1024), narrowed m8 -> m4 -> m2, each block's sum reduced from its lanes; at VLEN
// 128 (half a block per e32m8 register group) one block at a time at e32m4. Counted (k3tune
// count, K = 2048, instructions per element, decode / prefill M = 16): one block at a time at
// e32m4 took 1.19 / 1.12 at VLEN 256 and 0.68 / 0.64 at VLEN 1024. At VLEN 1024 (the K3's) a
// full strip takes its own path (quantize_strip4_vlen1024: sums where the blocks lie, one store
// of the four): a prefill row of 2048 from 741 to 490 instructions (qemu profile, M = 16).
#include <riscv_vector.h>

#include <algorithm>

#include "rvv/microkernels.h"

namespace k3k::rvv {
namespace {

inline float row_absmax(const float* a, std::int64_t k) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m8();
  vfloat32m8_t vmax = __riscv_vfmv_v_f_f32m8(0.0f, vlmax);
  for (std::int64_t i = 0; i < k;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(k - i));
    const vfloat32m8_t x = __riscv_vfabs_v_f32m8(__riscv_vle32_v_f32m8(a + i, vl), vl);
    vmax = __riscv_vfmax_vv_f32m8_tu(vmax, vmax, x, vl);  // tail lanes keep their maxima
    i += static_cast<std::int64_t>(vl);
  }
  const vfloat32m1_t zero = __riscv_vfmv_v_f_f32m1(0.0f, 1);
  return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m8_f32m1(vmax, zero, vlmax));
}

inline std::int32_t quantize_block(const float* src, detail::RowQuant rq, std::int8_t* dst) {
  vint32m1_t sum = __riscv_vmv_v_x_i32m1(0, 1);
  for (int j = 0; j < 64;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(64 - j));
    vfloat32m4_t x = __riscv_vfmul_vf_f32m4(__riscv_vle32_v_f32m4(src + j, vl), rq.prescale, vl);
    x = __riscv_vfmul_vf_f32m4(x, rq.inv_scale, vl);
    vint32m4_t q = __riscv_vfcvt_x_f_v_i32m4(x, vl);
    q = __riscv_vmax_vx_i32m4(__riscv_vmin_vx_i32m4(q, 127, vl), -127, vl);
    sum = __riscv_vredsum_vs_i32m4_i32m1(q, sum, vl);
    const vint16m2_t q16 = __riscv_vncvt_x_x_w_i16m2(q, vl);
    __riscv_vse8_v_i8m1(dst + j, __riscv_vncvt_x_x_w_i8m1(q16, vl), vl);
    j += static_cast<int>(vl);
  }
  return __riscv_vmv_x_s_i32m1_i32(sum);
}

// Blocks [b, b + g) in one e32m8 strip (g * 64 <= VLMAX): codes to codes + block * stride.
inline void quantize_strip(const float* src, detail::RowQuant rq, std::int64_t g,
                           std::int8_t* codes, std::int64_t block_stride,
                           std::int32_t* block_sums) {
  const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(g * 64));
  vfloat32m8_t x = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(src, vl), rq.prescale, vl);
  x = __riscv_vfmul_vf_f32m8(x, rq.inv_scale, vl);
  vint32m8_t q = __riscv_vfcvt_x_f_v_i32m8(x, vl);
  q = __riscv_vmax_vx_i32m8(__riscv_vmin_vx_i32m8(q, 127, vl), -127, vl);
  const vint8m2_t q8 = __riscv_vncvt_x_x_w_i8m2(__riscv_vncvt_x_x_w_i16m4(q, vl), vl);
  const bool contiguous = block_stride == 64;
  if (contiguous) __riscv_vse8_v_i8m2(codes, q8, vl);
  const vint32m1_t zero = __riscv_vmv_v_x_i32m1(0, 1);
  for (std::int64_t i = 0; i < g; ++i) {
    const std::size_t first = static_cast<std::size_t>(64 * i);
    const vint32m8_t lanes = i == 0 ? q : __riscv_vslidedown_vx_i32m8(q, first, 64);
    block_sums[i] = __riscv_vmv_x_s_i32m1_i32(__riscv_vredsum_vs_i32m8_i32m1(lanes, zero, 64));
    if (!contiguous) {
      const vint8m2_t block = i == 0 ? q8 : __riscv_vslidedown_vx_i8m2(q8, first, 64);
      __riscv_vse8_v_i8m2(codes + i * block_stride, block, 64);
    }
  }
}

// VLEN 1024 (the K3's), a strip of four whole blocks: block i is register i of the int16 group
// once narrowed, so its sum is one widening reduction where it lies (no slide), the four sums
// leave in one store, and a block's codes are half an int8 register. Same codes and sums as
// quantize_strip.
inline void quantize_strip4_vlen1024(const float* src, detail::RowQuant rq, std::int8_t* codes,
                                     std::int64_t block_stride, std::int32_t* block_sums) {
  constexpr std::size_t vl = 4 * 64;
  vfloat32m8_t x = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(src, vl), rq.prescale, vl);
  x = __riscv_vfmul_vf_f32m8(x, rq.inv_scale, vl);
  vint32m8_t q = __riscv_vfcvt_x_f_v_i32m8(x, vl);
  q = __riscv_vmax_vx_i32m8(__riscv_vmin_vx_i32m8(q, 127, vl), -127, vl);
  const vint16m4_t q16 = __riscv_vncvt_x_x_w_i16m4(q, vl);
  const vint32m1_t zero = __riscv_vmv_v_x_i32m1(0, 1);
  const auto block_sum = [&](vint16m1_t block) {
    return __riscv_vwredsum_vs_i16m1_i32m1(block, zero, 64);
  };
  vint32m1_t sums = block_sum(__riscv_vget_v_i16m4_i16m1(q16, 0));
  sums = __riscv_vslideup_vx_i32m1(sums, block_sum(__riscv_vget_v_i16m4_i16m1(q16, 1)), 1, 4);
  sums = __riscv_vslideup_vx_i32m1(sums, block_sum(__riscv_vget_v_i16m4_i16m1(q16, 2)), 2, 4);
  sums = __riscv_vslideup_vx_i32m1(sums, block_sum(__riscv_vget_v_i16m4_i16m1(q16, 3)), 3, 4);
  __riscv_vse32_v_i32m1(block_sums, sums, 4);
  const vint8m2_t q8 = __riscv_vncvt_x_x_w_i8m2(q16, vl);
  if (block_stride == 64) {
    __riscv_vse8_v_i8m2(codes, q8, vl);
    return;
  }
  const vint8m1_t low = __riscv_vget_v_i8m2_i8m1(q8, 0), high = __riscv_vget_v_i8m2_i8m1(q8, 1);
  __riscv_vse8_v_i8m1(codes, low, 64);
  __riscv_vse8_v_i8m1(codes + block_stride, __riscv_vslidedown_vx_i8m1(low, 64, 64), 64);
  __riscv_vse8_v_i8m1(codes + 2 * block_stride, high, 64);
  __riscv_vse8_v_i8m1(codes + 3 * block_stride, __riscv_vslidedown_vx_i8m1(high, 64, 64), 64);
}

void quantize_row_rvv(const float* src, std::int64_t k, std::int8_t* codes,
                      std::int64_t block_stride, std::int32_t* block_sums, float* sa) {
  const std::int64_t per_strip = static_cast<std::int64_t>(__riscv_vsetvlmax_e32m8()) / 64;
  if (per_strip == 0) {
    ukernel::quantize_row_with<row_absmax, quantize_block>(src, k, codes, block_stride, block_sums,
                                                           sa);
    return;
  }
  const detail::RowQuant rq = detail::row_scales(row_absmax(src, k), *sa);
  const std::int64_t nb = k / 64;
  std::int64_t b = 0;
  if (per_strip == 4) {
    for (; b + 4 <= nb; b += 4) {
      quantize_strip4_vlen1024(src + b * 64, rq, codes + b * block_stride, block_stride,
                               block_sums + b);
    }
  }
  for (; b < nb; b += per_strip) {
    quantize_strip(src + b * 64, rq, std::min(per_strip, nb - b), codes + b * block_stride,
                   block_stride, block_sums + b);
  }
}

}  // namespace

const ukernel::QuantizeRowFn quantize_row = quantize_row_rvv;

}  // namespace k3k::rvv
