#include "harness/runner/ops/attention_shape.h"

#include <fmt/format.h>

#include "harness/runner/ops/op_support.h"
#include "k3k/seeded_random.h"

namespace k3runner {

std::vector<KeySpec> attention_shape_keys(std::vector<KeySpec> keys, bool with_q_heads) {
  if (with_q_heads) keys.push_back(int_key("q_heads", "query heads", std::nullopt, 1, 1024));
  keys.push_back(
      int_key("kv_heads", "KV heads (GQA: q_heads is a multiple)", std::nullopt, 1, 1024));
  keys.push_back(int_key("head_dim", "elements per head (even)", std::nullopt, 2, 1024));
  keys.push_back(int_key("rotary_dim", "RoPE dims (0: all of head_dim)", "0", 0, 1024));
  keys.push_back(float_key("theta", "RoPE base", "1000000"));
  keys.push_back(enum_key("kv_dtype", "KV cache element type", "f32", {"f32", "f16"}));
  return keys;
}

k3k::KvCacheConfig kv_config_from(const KeyValues& shape, std::int64_t capacity, bool ring) {
  k3k::KvCacheConfig c;
  c.n_kv_heads = static_cast<int>(shape.integer("kv_heads"));
  c.head_dim = static_cast<int>(shape.integer("head_dim"));
  c.capacity = capacity;
  c.dtype = shape.text("kv_dtype") == "f16" ? k3k::KvDtype::f16 : k3k::KvDtype::f32;
  c.ring = ring;
  const auto rotary = shape.integer("rotary_dim");
  c.rope.rotary_dim = rotary == 0 ? c.head_dim : static_cast<int>(rotary);
  c.rope.theta = shape.number("theta");
  return c;
}

std::vector<float> attention_inputs(std::int64_t count, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  k3k::SeededRandom rng(seed);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

std::vector<DumpArray> kv_cache_dump(const k3k::KvCache& cache) {
  const k3k::KvCacheConfig& c = cache.config();
  const std::int64_t d = c.head_dim, hkv = c.n_kv_heads, cap = c.capacity;
  const std::int64_t kb = cache.key_block(), blocks = cache.k_head_elements() / (kb * d);
  const std::string k_layout = fmt::format(
      "[kv_heads][key_blocks][head_dim][key_block], K rotated at its position (RoPE theta {}, "
      "rotary_dim {}: pairs (i, i + rotary_dim/2)); slot s is column s % key_block of block "
      "s / key_block; positions 0..length-1 in slots 0.. (a ring wraps at capacity)",
      c.rope.theta, c.rope.rotary_dim);
  const std::string v_layout = "[kv_heads][capacity][head_dim], by slot";
  const auto nk = std::int64_t(cache.k_elements()), nv = std::int64_t(cache.v_elements());
  if (c.dtype == k3k::KvDtype::f32) {
    return {dump_of("k_cache", "f32", {hkv, blocks, d, kb}, k_layout, cache.k_f32(), nk),
            dump_of("v_cache", "f32", {hkv, cap, d}, v_layout, cache.v_f32(), nv)};
  }
  return {dump_of("k_cache", "f16", {hkv, blocks, d, kb}, k_layout, cache.k_f16(), nk),
          dump_of("v_cache", "f16", {hkv, cap, d}, v_layout, cache.v_f16(), nv)};
}

}  // namespace k3runner
