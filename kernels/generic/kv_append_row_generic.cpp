// Generic KV-append rows: K rotated by the scalar rope_rotate and stored down its key block's
// column, fp16 by k3k::fp32_to_fp16.
#include <cstring>

#include "generic/microkernels.h"

namespace k3k::generic {

void kv_append_row_f32(const float* k, const float* v, float* k_dst, int k_stride, float* v_dst,
                       int hd, int half, const float* cos, const float* sin, float* scratch) {
  rope_rotate(k, scratch, hd, half, cos, sin);
  for (int d = 0; d < hd; ++d) k_dst[static_cast<std::ptrdiff_t>(d) * k_stride] = scratch[d];
  std::memcpy(v_dst, v, static_cast<std::size_t>(hd) * sizeof(float));
}

void kv_append_row_f16(const float* k, const float* v, fp16_t* k_dst, int k_stride, fp16_t* v_dst,
                       int hd, int half, const float* cos, const float* sin, float* scratch) {
  rope_rotate(k, scratch, hd, half, cos, sin);
  for (int d = 0; d < hd; ++d) {
    k_dst[static_cast<std::ptrdiff_t>(d) * k_stride] = fp32_to_fp16(scratch[d]);
  }
  for (int d = 0; d < hd; ++d) v_dst[d] = fp32_to_fp16(v[d]);
}

}  // namespace k3k::generic
