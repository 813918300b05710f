// Shape keys shared by the attention and KV-cache ops (heads, head_dim, RoPE, KV dtype).
#pragma once

#include <vector>

#include "harness/runner/op_case.h"
#include "k3k/kv_cache.h"

namespace k3runner {

std::vector<KeySpec> attention_shape_keys(std::vector<KeySpec> leading, bool with_q_heads);
// Cache configuration from the shape: rotary_dim 0 means the full head_dim (Qwen3); Qwen3.5's
// full-attention layers use rotary_dim=64 of head_dim=256.
k3k::KvCacheConfig kv_config_from(const KeyValues& shape, std::int64_t capacity, bool ring);
// Deterministic synthetic K/V/Q rows of magnitude O(1).
std::vector<float> attention_inputs(std::int64_t count, std::uint64_t seed);
// The cache as laid out (k3k/kv_cache.h): K rotated in transposed key blocks, V in rows, in the
// cache's element type; for --dump.
std::vector<DumpArray> kv_cache_dump(const k3k::KvCache& cache);

}  // namespace k3runner
