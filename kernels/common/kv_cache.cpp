// The KV cache storage (k3k/kv_cache.h).
#include "k3k/kv_cache.h"

#include <algorithm>

#include "common/checks.h"
#include "k3k/cpu.h"

namespace k3k {

using detail::fail;

const char* to_string(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::f32:
      return "f32";
    case KvDtype::f16:
      return "f16";
  }
  return "?";
}

int default_key_block() {
  return std::max(kDefaultKeyBlockMin, cpu_features().vlenb);
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
  if (config.key_block < 0 || config.key_block > kMaxKeyBlock) {
    fail("KvCache: key_block (", config.key_block, ") must be in [1, ", kMaxKeyBlock,
         "] or 0 (the default)");
  }
  if (config_.key_block == 0) config_.key_block = default_key_block();
  if (config.dtype == KvDtype::f32) {
    k32_ = AlignedBuffer<float>(k_elements());
    v32_ = AlignedBuffer<float>(v_elements());
  } else {
    k16_ = AlignedBuffer<fp16_t>(k_elements());
    v16_ = AlignedBuffer<fp16_t>(v_elements());
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

}  // namespace k3k
