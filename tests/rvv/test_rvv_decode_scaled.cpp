// The RVV decode over fp16 caches on scaled halves (rvv/attention_decode_scaled_rvv.cpp) against
// the exact conversion path (taken whenever a prefetch distance is set: prefetch never changes a
// result), bitwise: head sizes whose keys and values do and do not fill one vector, query groups
// of one to four heads, contexts with partial strips and chunks, smaller key blocks, caches holding
// zeros and subnormal halves; and where the scaled path must hand the chunk to the exact one: an
// inf or NaN among the cached keys or values, and a query of magnitude 2^15 or more.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/fp16.h"
#include "k3k/kv_cache.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace k3k {
namespace {

struct Case {
  int head_dim, q_heads, kv_heads;
  std::int64_t context;
  int key_block;  // 0: the default (one vector of keys)
};

KvCache filled(const Case& c, std::uint64_t seed, WorkerPool& pool) {
  KvCache cache({c.kv_heads, c.head_dim, c.context, KvDtype::f16, false,
                 RopeConfig{c.head_dim, 1e6}, c.key_block});
  const std::size_t n = static_cast<std::size_t>(c.context * c.kv_heads * c.head_dim);
  auto k = k3test::random_floats(n, seed, 0.7), v = k3test::random_floats(n, seed + 1);
  // Zeros, signed zeros and values that round to subnormal halves.
  for (std::size_t i = 0; i < n; i += 7) k[i] = i % 14 == 0 ? 0.0f : -0.0f;
  for (std::size_t i = 3; i < n; i += 11)
    v[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 3e-6f;
  kv_append(KernelPath::kRvv, cache, k, v, c.context, pool);
  return cache;
}

// No cached half of the context is inf or NaN: else the scaled path declines every chunk and the
// comparison would be of the exact path with itself.
bool all_halves_finite(const KvCache& cache) {
  for (int h = 0; h < cache.n_kv_heads(); ++h)
    for (std::int64_t s = 0; s < cache.length(); ++s)
      for (int d = 0; d < cache.head_dim(); ++d) {
        const fp16_t k = cache.k_f16()[cache.k_offset(h, s) + std::size_t(d) * cache.key_block()];
        const fp16_t v = cache.v_f16()[cache.v_offset(h, s) + std::size_t(d)];
        if ((k & 0x7C00) == 0x7C00 || (v & 0x7C00) == 0x7C00) return false;
      }
  return true;
}

// The outputs of the scaled path (prefetch off) and of the exact path (a prefetch distance).
std::pair<std::vector<float>, std::vector<float>> both(const KvCache& cache,
                                                       const std::vector<float>& q, int q_heads,
                                                       int chunk, WorkerPool& pool) {
  std::vector<float> scaled(q.size()), exact(q.size());
  attention_decode(KernelPath::kRvv, cache, q, q_heads, scaled, pool, {chunk, 0});
  attention_decode(KernelPath::kRvv, cache, q, q_heads, exact, pool, {chunk, 64});
  return {scaled, exact};
}

void expect_bitwise(const std::vector<float>& a, const std::vector<float>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i]))
        << what << " output " << i << ": " << a[i] << " vs " << b[i];
}

TEST(RvvDecodeScaled, BitwiseTheExactConversionsResults) {
  WorkerPool pool(2);
  const Case cases[] = {{128, 16, 8, 513, 0}, {128, 4, 4, 300, 0}, {128, 12, 4, 129, 0},
                        {256, 8, 2, 200, 0},  {64, 6, 2, 257, 0},  {128, 6, 2, 97, 32},
                        {96, 3, 1, 70, 16},   {128, 2, 2, 1, 0}};
  for (const Case& c : cases) {
    const std::string what = "hd " + std::to_string(c.head_dim) + " q " +
                             std::to_string(c.q_heads) + " kv " + std::to_string(c.kv_heads) +
                             " ctx " + std::to_string(c.context) + " kb " +
                             std::to_string(c.key_block);
    const KvCache cache = filled(c, 17, pool);
    ASSERT_TRUE(all_halves_finite(cache)) << what;
    const auto q = k3test::random_floats(static_cast<std::size_t>(c.q_heads * c.head_dim), 23, 0.5);
    for (const int chunk : {256, 64}) {
      const auto [scaled, exact] = both(cache, q, c.q_heads, chunk, pool);
      expect_bitwise(scaled, exact, what + " chunk " + std::to_string(chunk));
    }
  }
}

TEST(RvvDecodeScaled, InfNanAndLargeQueriesGoToTheExactConversion) {
  WorkerPool pool(2);
  const Case c{128, 4, 2, 300, 0};
  const auto q = k3test::random_floats(static_cast<std::size_t>(c.q_heads * c.head_dim), 29, 0.5);
  // An inf or a NaN among the keys (kv head 0) or the values (kv head 1), written into the cache.
  // Slot 290 lies in the last key block's 44 keys, which the scores read as a partial strip.
  const struct {
    bool key;
    fp16_t bits;
    std::int64_t slot;
  } plants[] = {{true, 0x7C00, 201},  {true, 0xFE00, 201}, {false, 0xFC00, 201},
                {false, 0x7E01, 201}, {true, 0x7C00, 290}, {true, 0xFE00, 299}};
  for (const auto& p : plants) {
    KvCache cache = filled(c, 31, pool);
    const int head = p.key ? 0 : 1;
    if (p.key)
      cache.k_f16()[cache.k_offset(head, p.slot) + 5 * cache.key_block()] = p.bits;
    else
      cache.v_f16()[cache.v_offset(head, p.slot) + 5] = p.bits;
    const auto [scaled, exact] = both(cache, q, c.q_heads, 256, pool);
    expect_bitwise(scaled, exact,
                   std::string(p.key ? "key " : "value ") + std::to_string(p.bits) + " at slot " +
                       std::to_string(p.slot));
    bool non_finite = false;
    for (int i = 0; i < 2 * c.head_dim; ++i)
      non_finite =
          non_finite || !std::isfinite(scaled[static_cast<std::size_t>(head * 2 * c.head_dim + i)]);
    EXPECT_TRUE(non_finite) << "the planted value reaches the outputs of its kv head's queries";
  }
  // Queries too large for the scaled path (q 2^112 would overflow once rotated and scaled).
  const KvCache cache = filled(c, 37, pool);
  for (const float big : {0x1p20f, 3e5f, 1e30f}) {
    auto q_big = q;
    q_big[7] = big;
    const auto [scaled, exact] = both(cache, q_big, c.q_heads, 256, pool);
    expect_bitwise(scaled, exact, "query " + std::to_string(big));
  }
}

}  // namespace
}  // namespace k3k
