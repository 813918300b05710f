// RVV embedding lookup: a row's 32 codes per K-half sit at a 32-byte stride in the packed tile,
// so they are fetched with one strided load (vlse8) and dequantised as s*(q-8)+beta.
// LMUL: e32m4 for the 32 floats of a half-block (one strip from VLEN 256 up).
#include <riscv_vector.h>

#include <stdexcept>
#include <string>

#include "generic/op_checks.h"
#include "k3k/rvv.h"

namespace k3k::rvv {

void embedding_lookup_w4b64(const W4B64Packed& table, const std::int32_t* tokens, std::int64_t count,
                            float* out, WorkerPool& pool) {
  // Shared with the generic layer, including the layout check (kIme2 tables are not row-readable).
  generic_detail::check_embedding("rvv::embedding_lookup_w4b64", table, tokens, count);
  const std::int64_t k = table.k, nb = table.blocks_per_row();
  pool.parallel_for(count, [&](std::int64_t t, int) {
    const std::int64_t row = tokens[t];
    const std::int64_t tile = row / kW4RowTile, lane = row % kW4RowTile;
    float* dst = out + t * k;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t block = tile * nb + b;
      const float s = table.scale[static_cast<std::size_t>(block * kW4RowTile + lane)];
      const float beta = table.beta[static_cast<std::size_t>(block * kW4RowTile + lane)];
      const std::uint8_t* c = table.codes.data() + block * 32 * kW4RowTile + lane;
      for (std::size_t j = 0; j < 32;) {
        const std::size_t vl = __riscv_vsetvl_e32m4(32 - j);
        const vuint8m1_t bytes = __riscv_vlse8_v_u8m1(c + j * kW4RowTile, kW4RowTile, vl);
        for (int half = 0; half < 2; ++half) {
          const vuint8m1_t q8 = half == 0 ? __riscv_vand_vx_u8m1(bytes, 0x0F, vl) : __riscv_vsrl_vx_u8m1(bytes, 4, vl);
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
  });
}

}  // namespace k3k::rvv
