// RVV embedding row: a row's 32 codes per K-half sit at a 32-byte stride in the packed tile,
// so they are fetched with one strided load (vlse8) and dequantised as s*(q-8)+beta.
// LMUL: e32m4 for the 32 floats of a half-block (one strip from VLEN 256 up).
#include <riscv_vector.h>

#include "rvv/microkernels.h"

namespace k3k::rvv {

void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst) {
  for (std::int64_t b = 0; b < table.blocks_per_row(); ++b) {
    const auto [s, beta, c] = ukernel::embedding_block(table, row, b);
    for (std::size_t j = 0; j < 32;) {
      const std::size_t vl = __riscv_vsetvl_e32m4(32 - j);
      const vuint8m1_t bytes = __riscv_vlse8_v_u8m1(c + j * kW4RowTile, kW4RowTile, vl);
      for (int half = 0; half < 2; ++half) {
        const vuint8m1_t q8 =
            half == 0 ? __riscv_vand_vx_u8m1(bytes, 0x0F, vl) : __riscv_vsrl_vx_u8m1(bytes, 4, vl);
        const vint32m4_t q = __riscv_vsub_vx_i32m4(
            __riscv_vreinterpret_v_u32m4_i32m4(__riscv_vzext_vf4_u32m4(q8, vl)), 8, vl);
        // fl(fl(s * (q-8)) + beta): the two roundings the reference bound assumes.
        const vfloat32m4_t v = __riscv_vfadd_vf_f32m4(
            __riscv_vfmul_vf_f32m4(__riscv_vfcvt_f_x_v_f32m4(q, vl), s, vl), beta, vl);
        __riscv_vse32_v_f32m4(dst + b * 64 + half * 32 + j, v, vl);
      }
      j += vl;
    }
  }
}

}  // namespace k3k::rvv
