// Private helpers shared by the generic attention kernels.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "k3k/kv_cache.h"
#include "vec_math.h"

namespace k3k::generic_detail {

// Checks shared by prefill (tokens query rows) and decode (tokens = 1).
inline void check_attention_args(const KvCache& cache, std::size_t q_size, std::size_t out_size,
                                 std::int64_t tokens, int n_q_heads, float scale, const char* op) {
  if (n_q_heads <= 0) fail(op, ": n_q_heads (", n_q_heads, ") must be positive");
  if (n_q_heads % cache.n_kv_heads() != 0) {
    fail(op, ": n_q_heads (", n_q_heads, ") is not a multiple of n_kv_heads (", cache.n_kv_heads(),
         ")");
  }
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  const std::int64_t need = tokens * n_q_heads * cache.head_dim();
  if (static_cast<std::int64_t>(q_size) != need) {
    fail(op, ": q.size() (", q_size, ") != tokens * n_q_heads * head_dim (", need, ")");
  }
  if (static_cast<std::int64_t>(out_size) != need) {
    fail(op, ": out.size() (", out_size, ") != tokens * n_q_heads * head_dim (", need, ")");
  }
  if (!(scale >= 0.0f) || !std::isfinite(scale)) {
    fail(op, ": scale (", scale, ") must be finite and >= 0 (0 selects 1/sqrt(head_dim))");
  }
}

// Float view of the K or V row of (kv head, position): a pointer into an fp32 cache, or the row
// converted from fp16 into `buf` (head_dim floats).
inline const float* k_row(const KvCache& cache, int head, std::int64_t pos, float* buf) {
  const std::size_t off = cache.row_offset(head, cache.slot(pos));
  if (cache.dtype() == KvDtype::f32) return cache.k_f32() + off;
  fp16_to_fp32_row(cache.k_f16() + off, buf, cache.head_dim());
  return buf;
}
inline const float* v_row(const KvCache& cache, int head, std::int64_t pos, float* buf) {
  const std::size_t off = cache.row_offset(head, cache.slot(pos));
  if (cache.dtype() == KvDtype::f32) return cache.v_f32() + off;
  fp16_to_fp32_row(cache.v_f16() + off, buf, cache.head_dim());
  return buf;
}

}  // namespace k3k::generic_detail
