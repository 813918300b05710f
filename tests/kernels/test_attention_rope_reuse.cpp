// Attention rotates Q with the RoPE table the cache's last append kept (KvCache::append_rope_table)
// when it covers the query positions, else with one it builds: on every layer
// (support/layer_sweep.h) both give bitwise the same outputs, for prefill after one bulk append
// (the whole table kept) against the same tokens appended in two pieces (only the last piece's
// positions kept), and for decode after kv_append_one against the same cache without a kept table.
// Plus what the cache keeps: each append's positions, nothing after reset().
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <vector>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/worker_pool.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3k::KvDtype;
using k3test::random_floats;

constexpr int kQHeads = 4, kKvHeads = 2, kHeadDim = 128;
constexpr std::int64_t kTokens = 40;
const k3k::KvCacheConfig kConfig{kKvHeads, kHeadDim, 64, KvDtype::f32, false, k3k::kQwen3Rope};

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class AttentionRopeReuse : public k3test::OnLayer {
 protected:
  const std::size_t row = static_cast<std::size_t>(kKvHeads) * kHeadDim;
  const std::vector<float> k = random_floats(kTokens * row, 1, 1.5);
  const std::vector<float> v = random_floats(kTokens * row, 2);
  k3k::WorkerPool pool{2};

  // The first `total` tokens appended in pieces of `first` and total - first (first = total: one
  // append).
  k3k::KvCache appended(std::int64_t first, std::int64_t total = kTokens) {
    k3k::KvCache cache(kConfig);
    const std::size_t split = static_cast<std::size_t>(first) * row;
    k3k::kv_append(layer(), cache, std::span(k).first(split), std::span(v).first(split), first,
                   pool);
    if (first < total) {
      const std::size_t rest = static_cast<std::size_t>(total - first) * row;
      k3k::kv_append(layer(), cache, std::span(k).subspan(split, rest),
                     std::span(v).subspan(split, rest), total - first, pool);
    }
    return cache;
  }
};

TEST_P(AttentionRopeReuse, KeptTableGivesTheBuiltTablesOutputs) {
  const auto q = random_floats(static_cast<std::size_t>(kTokens * kQHeads * kHeadDim), 3, 1.5);
  std::vector<float> kept(q.size()), built(q.size());
  const k3k::KvCache whole = appended(kTokens), pieces = appended(kTokens - 3);
  ASSERT_NE(whole.append_rope_table(), nullptr);
  EXPECT_EQ(whole.append_rope_table()->first_pos(), 0);
  EXPECT_EQ(whole.append_rope_table()->count(), kTokens);
  EXPECT_EQ(pieces.append_rope_table()->first_pos(), kTokens - 3);  // does not cover the queries
  k3k::attention_prefill(layer(), whole, q, kTokens, kQHeads, kept, pool);
  k3k::attention_prefill(layer(), pieces, q, kTokens, kQHeads, built, pool);
  EXPECT_TRUE(same(kept, built));
}

TEST_P(AttentionRopeReuse, DecodeAfterOneTokenAppendGivesTheBuiltTablesOutputs) {
  const auto q = random_floats(static_cast<std::size_t>(kQHeads * kHeadDim), 4, 1.5);
  std::vector<float> kept(q.size()), built(q.size());
  k3k::KvCache one = appended(kTokens - 1, kTokens - 1);
  k3k::kv_append_one(layer(), one, std::span(k).subspan((kTokens - 1) * row),
                     std::span(v).subspan((kTokens - 1) * row), pool);
  ASSERT_EQ(one.append_rope_table()->first_pos(), kTokens - 1);
  ASSERT_EQ(one.append_rope_table()->count(), 1);
  k3k::attention_decode(layer(), one, q, kQHeads, kept, pool);
  one.keep_append_rope_table(nullptr);  // the decode builds its own
  k3k::attention_decode(layer(), one, q, kQHeads, built, pool);
  EXPECT_TRUE(same(kept, built));
  one.reset();
  EXPECT_EQ(one.append_rope_table(), nullptr);
}

K3_SWEEP_LAYERS(AttentionRopeReuse);

}  // namespace
