// A KV cache filled through one layer's appends and its float64 mirror holding the same tokens, and
// the queries: the inputs of the attention tests (tests/kernels/test_attention_*.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace k3test {

struct CacheSetup {
  k3k::KvCache cache;
  k3k::reference::RefKvCache mirror;
  std::vector<float> q;
};

// Appends the `bulk` runs of tokens in turn (each in pieces of at most `max_append`, as a ring
// needs), then `singles` tokens one at a time through the decode append, all on `path`; K ~
// N(0, qk_stddev), V ~ N(0, 1). q holds q_tokens rows of n_q_heads heads.
inline CacheSetup fill_cache(k3k::KernelPath path, const k3k::KvCacheConfig& cfg,
                             std::initializer_list<std::int64_t> bulk, std::int64_t max_append,
                             std::int64_t singles, std::int64_t q_tokens, int n_q_heads,
                             double qk_stddev, std::uint64_t seed) {
  CacheSetup s{k3k::KvCache(cfg), k3k::reference::RefKvCache(cfg), {}};
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(cfg.n_kv_heads) * cfg.head_dim;
  std::uint64_t chunk_seed = seed * 1000;
  for (std::int64_t tokens : bulk) {
    while (tokens > 0) {
      const std::int64_t n = std::min(tokens, max_append);
      const auto k = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed, qk_stddev);
      const auto v = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed);
      k3k::kv_append(path, s.cache, k, v, n, pool);
      s.mirror.append(k, v, n);
      tokens -= n;
    }
  }
  for (std::int64_t t = 0; t < singles; ++t) {
    const auto k = random_floats(static_cast<std::size_t>(row), ++chunk_seed, qk_stddev);
    const auto v = random_floats(static_cast<std::size_t>(row), ++chunk_seed);
    k3k::kv_append_one(path, s.cache, k, v, pool);
    s.mirror.append(k, v, 1);
  }
  s.q =
      random_floats(static_cast<std::size_t>(q_tokens * n_q_heads * cfg.head_dim), seed, qk_stddev);
  return s;
}

}  // namespace k3test
