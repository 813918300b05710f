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
//   * fp16 K: rotated into a per-worker fp32 row, then converted like V.
// The stored bits do not depend on the worker count (each row has one writer, no reductions).
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

void kv_append_row_f32(const float* k, const float* v, float* k_dst, float* v_dst, int hd, int half,
                       const float* cos, const float* sin) {
  rvv_detail::rope_rotate(k, k_dst, hd, half, cos, sin);
  rvv_detail::copy_row(v, v_dst, hd);
}

void kv_append_row_f16(const float* k, const float* v, fp16_t* k_dst, fp16_t* v_dst, int hd,
                       int half, const float* cos, const float* sin, float* scratch) {
  rvv_detail::rope_rotate(k, scratch, hd, half, cos, sin);
  rvv_detail::f32_to_f16_row(scratch, k_dst, hd);
  rvv_detail::f32_to_f16_row(v, v_dst, hd);
}

}  // namespace k3k::rvv
