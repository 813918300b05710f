// Argument checks of the attention drivers (prefill: tokens query rows; decode: tokens = 1).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/checks.h"
#include "k3k/kv_cache.h"

namespace k3k::detail {

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

}  // namespace k3k::detail
