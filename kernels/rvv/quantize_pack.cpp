// RVV fused quantise + pack: absmax by vfredmax, then per 64-block: scale, round-half-even
// (vfcvt.x.f under the default frm = RNE), clamp, narrow to int8, and the block sum by vredsum -
// the same float operations as the generic layer, so codes, sums and sa are bit-identical.
// LMUL: e32m8 for the absmax sweep (a long streaming loop, fewest vsetvl per element); the 64-block
// loop uses e32m4 so that a whole block is one strip at VLEN >= 512 while the narrowing chain
// (m4 -> m2 -> m1) stays within register-group limits.
#include <riscv_vector.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/rvv.h"

namespace k3k::rvv {
namespace {

struct RowQuant {
  float prescale;
  float inv_scale;
};

// Identical contract to the generic layer (see k3k/quantize.h).
inline RowQuant row_scales(float absmax, float& sa) {
  sa = absmax / 127.0f;
  if (!(absmax > 0.0f)) return {1.0f, 0.0f};
  const float inv = 127.0f / absmax;
  if (std::isfinite(inv)) return {1.0f, inv};
  constexpr float kPrescale = 0x1.0p64f;
  return {kPrescale, 127.0f / (absmax * kPrescale)};
}

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

inline std::int32_t quantize_block(const float* src, RowQuant rq, std::int8_t* dst) {
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

void check_pack(const PackedActivations& out, ActivationLayout want, const char* who) {
  if (out.layout != want || out.codes.empty()) {
    throw std::invalid_argument(std::string(who) + ": output pack has the wrong layout or is empty");
  }
}

}  // namespace

void quantize_pack_prefill(const float* a, PackedActivations& out, WorkerPool& pool) {
  check_pack(out, ActivationLayout::kRowsM4, "rvv::quantize_pack_prefill");
  const std::int64_t k = out.k, nb = out.blocks_per_row();
  pool.parallel_for(out.m, [&](std::int64_t row, int) {
    const float* src = a + row * k;
    const RowQuant rq = row_scales(row_absmax(src, k), out.scale[static_cast<std::size_t>(row)]);
    for (std::int64_t b = 0; b < nb; ++b) {
      auto* dst = const_cast<std::int8_t*>(out.block_codes(row, b));
      out.block_sum[static_cast<std::size_t>(row * nb + b)] = quantize_block(src + b * 64, rq, dst);
    }
  });
}

void quantize_pack_decode(const float* a, PackedActivations& out) {
  check_pack(out, ActivationLayout::kRowK256, "rvv::quantize_pack_decode");
  const std::int64_t k = out.k;
  const RowQuant rq = row_scales(row_absmax(a, k), out.scale[0]);
  for (std::int64_t kb = 0; kb < k; kb += 64) {
    out.block_sum[static_cast<std::size_t>(kb / 64)] = quantize_block(a + kb, rq, out.codes.data() + kb);
  }
}

}  // namespace k3k::rvv
