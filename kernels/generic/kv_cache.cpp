#include "generic/op_checks.h"
#include "k3k/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

const char* to_string(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::f32:
      return "f32";
    case KvDtype::f16:
      return "f16";
  }
  return "?";
}

KvCache::KvCache(const KvCacheConfig& config) : config_(config) {
  if (config.n_kv_heads <= 0)
    fail("KvCache: n_kv_heads (", config.n_kv_heads, ") must be positive");
  if (config.head_dim <= 0) fail("KvCache: head_dim (", config.head_dim, ") must be positive");
  if (config.capacity <= 0) fail("KvCache: capacity (", config.capacity, ") must be positive");
  if (config.dtype != KvDtype::f32 && config.dtype != KvDtype::f16) {
    fail("KvCache: dtype (", static_cast<int>(config.dtype), ") is not a KvDtype");
  }
  validate_rope(config.rope, config.head_dim, "KvCache");
  const auto elements = static_cast<std::size_t>(static_cast<std::int64_t>(config.n_kv_heads) *
                                                 config.capacity * config.head_dim);
  if (config.dtype == KvDtype::f32) {
    k32_ = AlignedBuffer<float>(elements);
    v32_ = AlignedBuffer<float>(elements);
  } else {
    k16_ = AlignedBuffer<fp16_t>(elements);
    v16_ = AlignedBuffer<fp16_t>(elements);
  }
}

std::size_t KvCache::bytes() const {
  return k32_.size_bytes() + v32_.size_bytes() + k16_.size_bytes() + v16_.size_bytes();
}

void KvCache::set_length(std::int64_t length) {
  if (length < 0) fail("KvCache::set_length: length (", length, ") is negative");
  if (!config_.ring && length > config_.capacity) {
    fail("KvCache::set_length: length (", length, ") exceeds capacity (", config_.capacity,
         ") of a contiguous cache");
  }
  length_ = length;
}

namespace {

constexpr std::int64_t kAppendTokensPerTask = 64;

// Writes tokens [t_begin, t_end) of kv head `head`. `scratch` holds head_dim floats (f16 K only).
void write_rows(KvCache& cache, const float* k, const float* v, const RopeTable& table, int head,
                std::int64_t t_begin, std::int64_t t_end, float* scratch) {
  const int hd = cache.head_dim();
  const int half = table.half();
  const std::int64_t row_stride = static_cast<std::int64_t>(cache.n_kv_heads()) * hd;
  const std::int64_t pos0 = cache.length();
  if (cache.dtype() == KvDtype::f32 && !cache.ring()) {
    // Contiguous fast path: consecutive positions are consecutive rows; rotate straight into place.
    float* kd = cache.k_f32() + cache.row_offset(head, pos0 + t_begin);
    float* vd = cache.v_f32() + cache.row_offset(head, pos0 + t_begin);
    for (std::int64_t t = t_begin; t < t_end; ++t, kd += hd, vd += hd) {
      const std::int64_t pos = pos0 + t;
      const float* ks = k + t * row_stride + static_cast<std::int64_t>(head) * hd;
      const float* vs = v + t * row_stride + static_cast<std::int64_t>(head) * hd;
      rope_rotate(ks, kd, hd, half, table.cos_at(pos), table.sin_at(pos));
      std::memcpy(vd, vs, static_cast<std::size_t>(hd) * sizeof(float));
    }
    return;
  }
  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const std::int64_t pos = pos0 + t;
    const std::size_t off = cache.row_offset(head, cache.slot(pos));
    const float* ks = k + t * row_stride + static_cast<std::int64_t>(head) * hd;
    const float* vs = v + t * row_stride + static_cast<std::int64_t>(head) * hd;
    if (cache.dtype() == KvDtype::f32) {
      rope_rotate(ks, cache.k_f32() + off, hd, half, table.cos_at(pos), table.sin_at(pos));
      std::memcpy(cache.v_f32() + off, vs, static_cast<std::size_t>(hd) * sizeof(float));
    } else {
      rope_rotate(ks, scratch, hd, half, table.cos_at(pos), table.sin_at(pos));
      fp16_t* kd = cache.k_f16() + off;
      fp16_t* vd = cache.v_f16() + off;
      for (int d = 0; d < hd; ++d) kd[d] = fp32_to_fp16(scratch[d]);
      for (int d = 0; d < hd; ++d) vd[d] = fp32_to_fp16(vs[d]);
    }
  }
}

}  // namespace

namespace generic {
void kv_append(KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool) {
  generic_detail::check_kv_append(cache, k.size(), v.size(), tokens, "kv_append");
  if (tokens == 0) return;
  const RopeTable table(cache.rope(), cache.length(), tokens, pool);
  const std::int64_t stride = generic_detail::scratch_stride(cache.head_dim());
  AlignedBuffer<float> scratch(
      cache.dtype() == KvDtype::f16 ? static_cast<std::size_t>(stride * pool.size()) : 0);
  const std::int64_t chunks = (tokens + kAppendTokensPerTask - 1) / kAppendTokensPerTask;
  pool.parallel_for(cache.n_kv_heads() * chunks, [&](std::int64_t task, int worker) {
    const int head = static_cast<int>(task / chunks);
    const std::int64_t t0 = (task % chunks) * kAppendTokensPerTask;
    float* s = scratch.empty() ? nullptr : scratch.data() + worker * stride;
    write_rows(cache, k.data(), v.data(), table, head, t0,
               std::min(tokens, t0 + kAppendTokensPerTask), s);
  });
  cache.set_length(cache.length() + tokens);
}

void kv_append_one(KvCache& cache, std::span<const float> k, std::span<const float> v,
                   WorkerPool& pool) {
  generic_detail::check_kv_append(cache, k.size(), v.size(), 1, "kv_append_one");
  const RopeTable table(cache.rope(), cache.length(), 1);  // serial: rotary_dim/2 cos+sin
  const std::int64_t stride = generic_detail::scratch_stride(cache.head_dim());
  AlignedBuffer<float> scratch(
      cache.dtype() == KvDtype::f16 ? static_cast<std::size_t>(stride * pool.size()) : 0);
  pool.parallel_for(cache.n_kv_heads(), [&](std::int64_t task, int worker) {
    float* s = scratch.empty() ? nullptr : scratch.data() + worker * stride;
    write_rows(cache, k.data(), v.data(), table, static_cast<int>(task), 0, 1, s);
  });
  cache.set_length(cache.length() + 1);
}
}  // namespace generic

}  // namespace k3k
