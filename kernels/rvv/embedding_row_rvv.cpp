// RVV embedding row: a row's 16 code bytes of each K-step of a block are one strided load (vlse8,
// the stride of the table's layout: ukernel::EmbeddingBlock), dequantised as s*(q-8)+beta.
// LMUL: e32m4 for 16 floats (one strip at every VLEN from 128 up).
#include <riscv_vector.h>

#include "rvv/microkernels.h"

namespace k3k::rvv {

void embedding_block_row(const ukernel::EmbeddingBlock& e, float* dst) {
  constexpr std::size_t vl = 16;
  for (int g = 0; g < 2; ++g) {
    const vuint8m1_t bytes = __riscv_vxor_vx_u8m1(
        __riscv_vlse8_v_u8m1(e.codes + g * e.half_offset, e.j_stride, vl), e.flip, vl);
    for (int half = 0; half < 2; ++half) {
      const vuint8m1_t q8 =
          half == 0 ? __riscv_vand_vx_u8m1(bytes, 0x0F, vl) : __riscv_vsrl_vx_u8m1(bytes, 4, vl);
      const vint32m4_t q = __riscv_vsub_vx_i32m4(
          __riscv_vreinterpret_v_u32m4_i32m4(__riscv_vzext_vf4_u32m4(q8, vl)), 8, vl);
      // fl(fl(s * (q-8)) + beta): the two roundings the reference bound assumes.
      const vfloat32m4_t v = __riscv_vfadd_vf_f32m4(
          __riscv_vfmul_vf_f32m4(__riscv_vfcvt_f_x_v_f32m4(q, vl), e.scale, vl), e.beta, vl);
      __riscv_vse32_v_f32m4(dst + half * 32 + g * 16, v, vl);
    }
  }
}

void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst) {
  for (std::int64_t b = 0; b < table.blocks_per_row(); ++b)
    embedding_block_row(ukernel::embedding_block(table, row, b), dst + b * 64);
}

}  // namespace k3k::rvv
