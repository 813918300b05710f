// Golden outputs of the attention (prefill, decode), KV append (bulk, one token, ring) and row-wise
// small ops (RMSNorm, SwiGLU, residual add) on every usable layer: one hash per case, the same for
// 1, 2 and 3 workers (and every q_tile), equal to the committed value (tests/support/golden.h).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "kernels/golden_cases.h"

namespace k3test::golden {
namespace {

using namespace k3k;

struct CacheCase {
  std::string name;
  int n_kv_heads, head_dim;
  KvDtype dtype;
  bool ring;
  RopeConfig rope;
  std::int64_t capacity;
};

// GQA 4:2 at head_dim 128 (Qwen3 RoPE) and 256 (Qwen3.5 partial rotary), fp32 and fp16, and a ring.
std::vector<CacheCase> cache_cases() {
  return {{"hd128-f32", 2, 128, KvDtype::f32, false, kQwen3Rope, 96},
          {"hd256-f16-partial", 2, 256, KvDtype::f16, false, kQwen35Rope, 96},
          {"hd128-f16-ring", 2, 128, KvDtype::f16, true, kQwen3Rope, 40},
          {"hd64-f32-norope", 1, 64, KvDtype::f32, false, RopeConfig{}, 96}};
}

// The stored bytes in the cache's layout (k3k/kv_cache.h: K in key blocks of this CPU's default).
std::uint64_t hash_cache(const KvCache& c) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  if (c.dtype() == KvDtype::f32) {
    h = fnv1a(c.k_f32(), c.k_elements() * sizeof(float), h);
    return fnv1a(c.v_f32(), c.v_elements() * sizeof(float), h);
  }
  h = fnv1a(c.k_f16(), c.k_elements() * sizeof(fp16_t), h);
  return fnv1a(c.v_f16(), c.v_elements() * sizeof(fp16_t), h);
}

// A cache holding `length` tokens, written by the generic layer (the attention inputs).
KvCache filled_cache(const CacheCase& c, std::int64_t length, std::uint64_t seed) {
  KvCache cache({c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope});
  const std::size_t row = static_cast<std::size_t>(c.n_kv_heads) * c.head_dim;
  for (std::int64_t done = 0; done < length;) {
    const std::int64_t step = std::min<std::int64_t>(length - done, c.capacity / 2);
    const auto k = normal_floats(row * step, seed++), v = normal_floats(row * step, seed++);
    k3k::kv_append(KernelPath::kGeneric, cache, k, v, step, *pools()[0]);
    done += step;
  }
  return cache;
}

TEST(GoldenOutputs, KvAppend) {
  for (KernelPath path : usable_layers()) {
    for (const CacheCase& c : cache_cases()) {
      const std::size_t row = static_cast<std::size_t>(c.n_kv_heads) * c.head_dim;
      const auto k = normal_floats(row * 60, 200), v = normal_floats(row * 60, 201);
      check_all_pools(path, "kv_append-" + c.name, [&](WorkerPool& pool) {
        KvCache cache({c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope});
        // Bulk appends of 17 and 13 tokens, then one token at a time (a ring wraps in both).
        k3k::kv_append(path, cache, std::span(k).first(17 * row), std::span(v).first(17 * row), 17,
                       pool);
        k3k::kv_append(path, cache, std::span(k).subspan(17 * row, 13 * row),
                       std::span(v).subspan(17 * row, 13 * row), 13, pool);
        for (std::size_t t = 30; t < 60 && static_cast<std::int64_t>(t) < c.capacity + 20; ++t) {
          if (!c.ring && static_cast<std::int64_t>(t) >= c.capacity) break;
          k3k::kv_append_one(path, cache, std::span(k).subspan(t * row, row),
                             std::span(v).subspan(t * row, row), pool);
        }
        return hash_cache(cache);
      });
    }
  }
}

TEST(GoldenOutputs, AttentionPrefill) {
  for (KernelPath path : usable_layers()) {
    for (const CacheCase& c : cache_cases()) {
      const int q_heads = 2 * c.n_kv_heads;
      const std::int64_t tokens = 23, length = c.ring ? 61 : 57;
      const KvCache cache = filled_cache(c, length, 300);
      const auto q = normal_floats(static_cast<std::size_t>(tokens * q_heads * c.head_dim), 310);
      for (int kv_block : {64, 16}) {
        const std::string name =
            "attention_prefill-" + c.name + "-t23-kvblock" + std::to_string(kv_block);
        for (int q_tile : {16, 5}) {
          check_all_pools(path, name, [&](WorkerPool& pool) {
            std::vector<float> out(q.size(), -9.0f);
            k3k::attention_prefill(path, cache, q, tokens, q_heads, out, pool, {q_tile, kv_block});
            return hash_of(out);
          });
        }
      }
    }
  }
}

TEST(GoldenOutputs, AttentionDecode) {
  for (KernelPath path : usable_layers()) {
    for (const CacheCase& c : cache_cases()) {
      for (int q_heads : {2 * c.n_kv_heads, 3 * c.n_kv_heads}) {  // even and odd group sizes
        const std::int64_t length = c.ring ? 70 : 90;
        const KvCache cache = filled_cache(c, length, 400);
        const auto q = normal_floats(static_cast<std::size_t>(q_heads * c.head_dim), 410);
        for (int chunk : {256, 32}) {
          const std::string name = "attention_decode-" + c.name + "-q" + std::to_string(q_heads) +
                                   "-chunk" + std::to_string(chunk);
          check_all_pools(path, name, [&](WorkerPool& pool) {
            std::vector<float> out(q.size(), -9.0f);
            k3k::attention_decode(path, cache, q, q_heads, out, pool, {chunk});
            return hash_of(out);
          });
        }
      }
    }
  }
}

TEST(GoldenOutputs, SmallOps) {
  for (KernelPath path : usable_layers()) {
    for (const auto& rd : {std::pair<std::int64_t, int>{5, 300}, {3, 128}, {1, 7}}) {
      const std::int64_t rows = rd.first;
      const int dim = rd.second;
      const std::size_t n = static_cast<std::size_t>(rows * dim);
      const auto x = normal_floats(n, 500 + dim, 2.0), y = normal_floats(n, 501 + dim);
      const auto weight = normal_floats(static_cast<std::size_t>(dim), 502 + dim);
      const std::string s = "-r" + std::to_string(rows) + "d" + std::to_string(dim);
      check_all_pools(path, "rmsnorm" + s, [&](WorkerPool& pool) {
        std::vector<float> out(n, -9.0f);
        k3k::rmsnorm(path, x, weight, out, rows, dim, 1e-6f, pool);
        std::vector<float> in_place = x;
        k3k::rmsnorm(path, in_place, weight, in_place, rows, dim, 1e-6f, pool);
        return hash_of(in_place, hash_of(out));
      });
      check_all_pools(path, "swiglu" + s, [&](WorkerPool& pool) {
        std::vector<float> out(n, -9.0f);
        k3k::swiglu(path, x, y, out, rows, dim, pool);
        return hash_of(out);
      });
      check_all_pools(path, "residual_add" + s, [&](WorkerPool& pool) {
        std::vector<float> out(n, -9.0f);
        k3k::residual_add(path, x, y, out, rows, dim, pool);
        return hash_of(out);
      });
    }
  }
}

}  // namespace
}  // namespace k3test::golden
