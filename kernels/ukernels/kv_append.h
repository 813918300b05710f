// Microkernel contract of the KV-cache appends (driver: drivers/kv_append.cpp): one (token, kv
// head) row at a time, K rotated with the table row (cos, sin) of its position (half = rotary_dim /
// 2) and stored as a column of its key block (component d at k_dst[d * k_stride], k_stride = the
// cache's key_block), V as a contiguous row.
#pragma once

#include <cstdint>

#include "k3k/fp16.h"

namespace k3k::ukernel {

struct KvAppend {
  const char* name;  // e.g. "kv_append-rope-rvv"
  // fp32 cache: k_dst[d * k_stride] = rope(k)[d] through `scratch` (head_dim floats), v_dst = v.
  void (*row_f32)(const float* k, const float* v, float* k_dst, int k_stride, float* v_dst,
                  int head_dim, int half, const float* cos, const float* sin, float* scratch);
  // fp16 cache: k_dst[d * k_stride] = fp16(rope(k)[d]) through `scratch`, v_dst = fp16(v), both
  // rounded to nearest even exactly like k3k::fp32_to_fp16.
  void (*row_f16)(const float* k, const float* v, fp16_t* k_dst, int k_stride, fp16_t* v_dst,
                  int head_dim, int half, const float* cos, const float* sin, float* scratch);
};

}  // namespace k3k::ukernel
