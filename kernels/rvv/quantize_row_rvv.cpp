// RVV quantise microkernel: absmax by vfredmax, then per 64-block: scale, round-half-even
// (vfcvt.x.f under the default frm = RNE), clamp, narrow to int8, and the block sum by vredsum -
// the same float operations as the generic layer, so codes, sums and sa are bit-identical.
// LMUL: e32m8 for the absmax sweep (a long streaming loop, fewest vsetvl per element); the 64-block
// loop uses e32m4 so that a whole block is one strip at VLEN >= 512 while the narrowing chain
// (m4 -> m2 -> m1) stays within register-group limits.
#include <riscv_vector.h>

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

}  // namespace

const ukernel::QuantizeRowFn quantize_row = ukernel::quantize_row_with<row_absmax, quantize_block>;

}  // namespace k3k::rvv
