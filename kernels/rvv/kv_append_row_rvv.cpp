// RVV KV-append rows (driver: drivers/kv_append.cpp, task = kv head x 64-token chunk, or kv head
// for kv_append_one), the per-row work vectorised:
//   * K: rotate-half RoPE on contiguous halves (rvv_math.h rope_rotate, e32m4): one vfmul + one
//     fused vfmsac/vfmacc per rotated component, the sequence clang emits for the generic scalar
//     rope_rotate (default -ffp-contract=on fuses a*c - fl(b*s) and b*c + fl(a*s)), so stored K is
//     BIT-IDENTICAL to the generic layer's (fp32 and, after the identical fp16 rounding, fp16) on
//     this toolchain; only a different contraction choice in the generic build could make them
//     differ, and then by one rounding per component, inside reference::kv_stored_k_bound.
//   * V: fp32 copy (e32m8 load/store) or fp16 rounding by integer bit manipulation (e32m4 ->
//     e16m2), bitwise equal to k3k::fp32_to_fp16; stored V bits are identical to the generic layer.
//   * K goes down its key block's column (k3k/kv_cache.h): rotated into the per-worker fp32 row,
//     (fp16: converted like V) then one strided store (vsse, stride key_block elements) per strip.
// The stored bits do not depend on the worker count (each row has one writer, no reductions).
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

void kv_append_row_f32(const float* k, const float* v, float* k_dst, int k_stride, float* v_dst,
                       int hd, int half, const float* cos, const float* sin, float* scratch) {
  rvv_detail::rope_rotate(k, scratch, hd, half, cos, sin);
  const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(k_stride) * sizeof(float);
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(hd - d));
    __riscv_vsse32_v_f32m8(k_dst + static_cast<std::ptrdiff_t>(d) * k_stride, stride,
                           __riscv_vle32_v_f32m8(scratch + d, vl), vl);
    d += static_cast<int>(vl);
  }
  rvv_detail::copy_row(v, v_dst, hd);
}

void kv_append_row_f16(const float* k, const float* v, fp16_t* k_dst, int k_stride, fp16_t* v_dst,
                       int hd, int half, const float* cos, const float* sin, float* scratch) {
  rvv_detail::rope_rotate(k, scratch, hd, half, cos, sin);
  const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(k_stride) * sizeof(fp16_t);
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
    const vuint16m2_t h = rvv_detail::f32_to_f16(__riscv_vle32_v_f32m4(scratch + d, vl), vl);
    __riscv_vsse16_v_u16m2(k_dst + static_cast<std::ptrdiff_t>(d) * k_stride, stride, h, vl);
    d += static_cast<int>(vl);
  }
  rvv_detail::f32_to_f16_row(v, v_dst, hd);
}

}  // namespace k3k::rvv
