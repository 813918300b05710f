// KV cache appends on every layer (support/layer_sweep.h): rotate-on-write vs the float64 RoPE
// reference, V exact / fp16 bit-exact (edge values included: fp16 subnormals, ties, overflow,
// float subnormals, signed zeros), a layer other than generic storing bit for bit what the generic
// layer stores, ring slot placement, decode appends == bulk appends bit for bit for every worker
// count, argument errors worded as the generic layer's. Plus the layer-free parts: the cache's own
// argument checks and the scalar fp16 row conversion.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/cpu.h"
#include "k3k/fp16.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/worker_pool.h"
#include "support/layer_checks.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3k::KvDtype;
using k3test::random_floats;
using k3test::thrown_message;
namespace ref = k3k::reference;

bool same_bytes(const void* a, const void* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

bool k_equal(const k3k::KvCache& a, const k3k::KvCache& b) {
  return a.k_elements() == b.k_elements() && a.dtype() == b.dtype() &&
         (a.dtype() == KvDtype::f32
              ? same_bytes(a.k_f32(), b.k_f32(), a.k_elements() * sizeof(float))
              : same_bytes(a.k_f16(), b.k_f16(), a.k_elements() * sizeof(k3k::fp16_t)));
}
bool v_equal(const k3k::KvCache& a, const k3k::KvCache& b) {
  return a.v_elements() == b.v_elements() && a.dtype() == b.dtype() &&
         (a.dtype() == KvDtype::f32
              ? same_bytes(a.v_f32(), b.v_f32(), a.v_elements() * sizeof(float))
              : same_bytes(a.v_f16(), b.v_f16(), a.v_elements() * sizeof(k3k::fp16_t)));
}

// Stored element d of (head, pos) as a float: K down its key block's column, V along its row.
float stored(const k3k::KvCache& c, bool key, int head, std::int64_t pos, int d) {
  const std::int64_t slot = c.slot(pos);
  const std::size_t off = key ? c.k_offset(head, slot) + static_cast<std::size_t>(d) * c.key_block()
                              : c.v_offset(head, slot) + static_cast<std::size_t>(d);
  if (c.dtype() == KvDtype::f32) return (key ? c.k_f32() : c.v_f32())[off];
  return k3k::fp16_to_fp32((key ? c.k_f16() : c.v_f16())[off]);
}

struct StoreCase {
  const char* name;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  KvDtype dtype;
  bool ring;
  std::int64_t capacity;
  int key_block = 0;  // 0: the default (this CPU's vlenb keys, at least 16)
};

// clang-format off
const StoreCase kStoreShapes[] = {
    StoreCase{"d128_h8_f32",          8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 160},
    StoreCase{"d128_h8_f16",          8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 160},
    StoreCase{"d128_f32",             3, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 160},
    StoreCase{"d128_f16",             3, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 160},
    StoreCase{"d256_rot64_f32",       2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 160},
    StoreCase{"d256_rot64_f16",       2, 256, k3k::kQwen35Rope, KvDtype::f16, false, 160},
    StoreCase{"ring_d128_f32_wrap",   2, 128, k3k::kQwen3Rope,  KvDtype::f32, true,  48},
    StoreCase{"ring_d256_rot64_f16",  1, 256, k3k::kQwen35Rope, KvDtype::f16, true,  40},
    StoreCase{"d40_norope_f16",       2,  40, {0, 1e4},         KvDtype::f16, false, 160},
    StoreCase{"d128_f32_kb5",         2, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 160, 5},
    StoreCase{"ring_d256_f16_kb7",    1, 256, k3k::kQwen35Rope, KvDtype::f16, true,  40,  7},
    StoreCase{"ring_d128_f32_kb64",   2, 128, k3k::kQwen3Rope,  KvDtype::f32, true,  48,  64}};
// clang-format on

class KvAppend : public k3test::OnLayerWith<StoreCase> {};

// Appends of 37, 70 (two 64-token tasks) and 20 tokens; ring cases wrap. Stored K is the rotated
// input within the bound, V is exact (fp32) or exactly fp32_to_fp16 (fp16).
TEST_P(KvAppend, KWithinBoundVBitExactAndEqualToGeneric) {
  const StoreCase& c = test_case();
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype,
                               c.ring,       c.rope,     c.key_block};
  k3k::KvCache cache(cfg), gen(cfg);
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(c.n_kv_heads) * c.head_dim;
  std::int64_t first = 0;
  double worst = 0.0;
  for (std::int64_t tokens : {37, 70, 20}) {
    if (c.ring) tokens = std::min(tokens, c.capacity);
    auto k = random_floats(static_cast<std::size_t>(tokens * row), 100 + tokens, 3.0);
    auto v = random_floats(static_cast<std::size_t>(tokens * row), 200 + tokens, 3.0);
    // Edge values: fp16 subnormals / ties / overflow, float subnormals, signed zeros.
    const float edges[] = {0.0f,     -0.0f, 1e-40f, -6e-8f,         3e-5f,         65504.0f,
                           65520.0f, -7e4f, 1e-7f,  2.98023224e-8f, 1.0009765625f, -0.99951171875f};
    for (std::size_t i = 0; i < std::size(edges); ++i) {
      k[i * 7] = edges[i];
      v[i * 5] = edges[i];
    }
    k3k::kv_append(layer(), cache, k, v, tokens, pool);
    ASSERT_EQ(cache.length(), first + tokens);
    if (!is_generic()) {
      // Bit-identical to the generic layer, K included (the same fused operation sequence); the
      // reference bound below is the contract.
      k3k::kv_append(KernelPath::kGeneric, gen, k, v, tokens, pool);
      EXPECT_TRUE(v_equal(cache, gen)) << "stored V differs from the generic layer";
      EXPECT_TRUE(k_equal(cache, gen)) << "stored K differs from the generic layer";
    }
    const auto expect = ref::rope(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope);
    const auto bound =
        ref::kv_stored_k_bound(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope, c.dtype);
    std::vector<float> got(k.size());
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int h = 0; h < c.n_kv_heads; ++h) {
        for (int d = 0; d < c.head_dim; ++d) {
          const auto i = static_cast<std::size_t>((t * c.n_kv_heads + h) * c.head_dim + d);
          got[i] = stored(cache, true, h, first + t, d);
          const float want_v =
              c.dtype == KvDtype::f32 ? v[i] : k3k::fp16_to_fp32(k3k::fp32_to_fp16(v[i]));
          ASSERT_EQ(std::bit_cast<std::uint32_t>(stored(cache, false, h, first + t, d)),
                    std::bit_cast<std::uint32_t>(want_v));
        }
      }
    }
    // fp16 K entries that overflowed to inf are outside any finite bound; those are compared
    // above (bitwise with the generic layer) only.
    std::vector<double> e(expect), b(bound);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) got[i] = 0.0f, e[i] = 0.0, b[i] = 0.0;
    }
    const auto r = ref::compare_to_reference(got, e, b);
    EXPECT_TRUE(r.pass) << c.name << ": " << ref::describe(r, got, e, b);
    worst = std::max(worst, r.worst_ratio);
    // Mutation: the rotation of the next position must be rejected.
    const auto shifted = ref::rope(k, tokens, c.n_kv_heads, c.head_dim, first + 1, c.rope);
    EXPECT_FALSE(ref::compare_to_reference(got, shifted, b).pass);
    first += tokens;
  }
  std::printf("[ stats    ] %s stored K %s: max err/bound %.3g\n", k3k::to_string(layer()), c.name,
              worst);
}

K3_SWEEP_LAYERS_AND_CASES(KvAppend, kStoreShapes);

class KvCacheRing : public k3test::OnLayer {};

TEST_P(KvCacheRing, SlotPlacementAndVisibility) {
  const int heads = 2, hd = 16;
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    k3k::KvCache cache({heads, hd, 8, dtype, true, {16, 1e4}});
    k3k::WorkerPool pool(2);
    std::vector<float> all_v;
    for (std::int64_t tokens : {5, 5, 3, 8}) {  // lengths 5, 10, 13, 21
      std::vector<float> k(static_cast<std::size_t>(tokens * heads * hd), 1.0f);
      std::vector<float> v(k.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>(all_v.size() + i);  // exactly representable in fp16 (< 2048)
      }
      all_v.insert(all_v.end(), v.begin(), v.end());
      k3k::kv_append(layer(), cache, k, v, tokens, pool);
    }
    ASSERT_EQ(cache.length(), 21);
    EXPECT_EQ(cache.first_visible(), 13);
    EXPECT_EQ(cache.visible(), 8);
    for (std::int64_t pos = 13; pos < 21; ++pos) {
      EXPECT_EQ(cache.slot(pos), pos % 8);
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < hd; ++d) {
          ASSERT_EQ(stored(cache, false, h, pos, d),
                    all_v[static_cast<std::size_t>((pos * heads + h) * hd + d)])
              << "pos " << pos << " head " << h << " d " << d;
        }
      }
    }
  }
}

K3_SWEEP_LAYERS(KvCacheRing);

// Decode appends (one token at a time) store exactly what bulk appends store, for every dtype /
// mode, including ring wrap-around, whatever the worker count, and what the generic layer stores.
struct AppendOneCase {
  const char* name;
  int heads;
  std::int64_t tokens;
  std::int64_t capacity, ring_capacity;
};

// clang-format off
const AppendOneCase kAppendOneShapes[] = {
    AppendOneCase{"h4_t45",             4, 45, 64, 32},
    AppendOneCase{"qwen3_0p6b_h8_t21",  8, 21, 32, 16}};  // Qwen3-0.6B: 8 KV heads of 128
// clang-format on

class KvAppendOne : public k3test::OnLayerWith<AppendOneCase> {};

TEST_P(KvAppendOne, EqualsBulkAndGenericForEveryWorkerCount) {
  const AppendOneCase& c = test_case();
  const int hd = 128;
  const std::size_t row = static_cast<std::size_t>(c.heads) * hd;
  const auto k = random_floats(static_cast<std::size_t>(c.tokens) * row, 7);
  const auto v = random_floats(static_cast<std::size_t>(c.tokens) * row, 8);
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    for (bool ring : {false, true}) {
      const std::int64_t capacity = ring ? c.ring_capacity : c.capacity;
      const k3k::KvCacheConfig cfg{c.heads, hd, capacity, dtype, ring, k3k::kQwen3Rope};
      const std::int64_t first_bulk = ring ? capacity : c.tokens;  // ring: two bulks, wrapping
      const std::size_t split = static_cast<std::size_t>(first_bulk) * row;
      auto bulk_append = [&](KernelPath path, k3k::KvCache& cache, k3k::WorkerPool& pool) {
        k3k::kv_append(path, cache, std::span(k).first(split), std::span(v).first(split),
                       first_bulk, pool);
        k3k::kv_append(path, cache, std::span(k).subspan(split), std::span(v).subspan(split),
                       c.tokens - first_bulk, pool);
      };
      k3k::WorkerPool pool1(1);
      k3k::KvCache bulk(cfg);
      bulk_append(layer(), bulk, pool1);
      const std::string mode = std::string(to_string(dtype)) + (ring ? " ring" : "");
      if (!is_generic()) {
        k3k::KvCache gen(cfg);
        bulk_append(KernelPath::kGeneric, gen, pool1);
        EXPECT_TRUE(k_equal(bulk, gen)) << mode << ": K differs from the generic layer";
        EXPECT_TRUE(v_equal(bulk, gen)) << mode << ": V differs from the generic layer";
      }
      for (int workers : {1, 2, 3, 5}) {
        k3k::WorkerPool pool(workers);
        k3k::KvCache one(cfg), bulk_w(cfg);
        for (std::int64_t t = 0; t < c.tokens; ++t) {
          const std::size_t off = static_cast<std::size_t>(t) * row;
          k3k::kv_append_one(layer(), one, std::span(k).subspan(off, row),
                             std::span(v).subspan(off, row), pool);
        }
        bulk_append(layer(), bulk_w, pool);
        EXPECT_EQ(one.length(), c.tokens);
        const std::string what = mode + " workers " + std::to_string(workers);
        EXPECT_TRUE(k_equal(bulk, one) && v_equal(bulk, one)) << what;
        EXPECT_TRUE(k_equal(bulk, bulk_w) && v_equal(bulk, bulk_w)) << what;
      }
    }
  }
}

K3_SWEEP_LAYERS_AND_CASES(KvAppendOne, kAppendOneShapes);

class KvAppendArgs : public k3test::OnLayer {};

TEST_P(KvAppendArgs, BadArgumentsNameTheFieldAndWriteNothing) {
  k3k::WorkerPool pool(1);
  k3k::KvCache contiguous({2, 16, 4, KvDtype::f32, false, {16, 1e4}});
  std::vector<float> kv3(3 * 2 * 16), kv5(5 * 2 * 16);
  k3k::kv_append(layer(), contiguous, kv3, kv3, 3, pool);
  auto rejects = [&](const std::string& field, k3k::KvCache& cache, std::span<const float> k,
                     std::span<const float> v, std::int64_t tokens) {
    k3test::expect_rejected(
        layer(), field, [&](KernelPath path) { k3k::kv_append(path, cache, k, v, tokens, pool); });
  };
  rejects("exceeds the capacity (4)", contiguous, kv3, kv3, 3);
  EXPECT_EQ(contiguous.length(), 3);  // nothing written
  rejects("k.size()", contiguous, kv5, kv3, 3);
  rejects("v.size()", contiguous, kv3, kv5, 3);
  rejects("tokens (-1)", contiguous, kv3, kv3, -1);
  k3test::expect_rejected(layer(), "k.size()", [&](KernelPath path) {
    k3k::kv_append_one(path, contiguous, kv3, kv3, pool);
  });
  EXPECT_EQ(contiguous.length(), 3);

  k3k::KvCache ring({2, 16, 4, KvDtype::f16, true, {16, 1e4}});
  rejects("tokens (5)", ring, kv5, kv5, 5);
  k3k::kv_append(layer(), ring, kv3, kv3, 3, pool);
  k3k::kv_append(layer(), ring, kv3, kv3, 3, pool);  // wraps: fine
  EXPECT_EQ(ring.length(), 6);
  EXPECT_EQ(ring.first_visible(), 2);
}

K3_SWEEP_LAYERS(KvAppendArgs);

// ---- layer-free: the cache's configuration and the scalar fp16 row conversion -------------------

TEST(KvCacheConfig, BadArgumentsNameTheField) {
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({0, 128, 16, KvDtype::f32, false, {}});
            }).find("n_kv_heads (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 0, 16, KvDtype::f32, false, {}});
            }).find("head_dim (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 128, 0, KvDtype::f32, false, {}});
            }).find("capacity (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 64, 16, KvDtype::f32, false, {128, 1e6}});
            }).find("rotary_dim (128)"),
            std::string::npos);
}

TEST(KvCacheConfig, KeyBlockDefaultsToTheVectorAndIsChecked) {
  const k3k::KvCache c({2, 64, 16, KvDtype::f32, false, {}});
  EXPECT_EQ(c.key_block(), std::max(k3k::kDefaultKeyBlockMin, k3k::cpu_features().vlenb));
  EXPECT_EQ(c.key_block(), k3k::default_key_block());
  for (int bad : {-1, k3k::kMaxKeyBlock + 1}) {
    EXPECT_NE(thrown_message([&] {
                k3k::KvCache x({2, 64, 16, KvDtype::f32, false, {}, bad});
              }).find("key_block (" + std::to_string(bad) + ")"),
              std::string::npos);
  }
}

// The layout, spelled out independently of KvCache's offset helpers: K of slot s, dim d at
// [head][s / kb][d][s % kb] over whole key blocks (capacity 13 rounds up to 3 blocks of 5), V at
// [head][s][d]; a ring's wrapped positions land in their slots' columns.
TEST(KvCacheLayout, KeyBlocksHoldTransposedColumnsAndVRows) {
  const int heads = 2, hd = 6, kb = 5;
  const std::int64_t cap = 13, blocks = 3;
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    k3k::KvCache cache({heads, hd, cap, dtype, true, {}, kb});  // no RoPE: K stored as given
    ASSERT_EQ(cache.k_elements(), static_cast<std::size_t>(heads * blocks * kb * hd));
    ASSERT_EQ(cache.v_elements(), static_cast<std::size_t>(heads * cap * hd));
    k3k::WorkerPool pool(2);
    const std::int64_t tokens = 17;  // positions 13..16 overwrite slots 0..3
    std::vector<float> k(static_cast<std::size_t>(tokens * heads * hd)), v(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) {  // small integers: exact in fp16 as well
      k[i] = static_cast<float>(i % 1000);
      v[i] = -static_cast<float>(i % 1000);
    }
    k3k::kv_append(KernelPath::kGeneric, cache, std::span(k).first(10 * heads * hd),
                   std::span(v).first(10 * heads * hd), 10, pool);
    k3k::kv_append(KernelPath::kGeneric, cache, std::span(k).subspan(10 * heads * hd),
                   std::span(v).subspan(10 * heads * hd), tokens - 10, pool);
    for (std::int64_t pos = tokens - cap; pos < tokens; ++pos) {
      const std::int64_t s = pos % cap;
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < hd; ++d) {
          const std::size_t in = static_cast<std::size_t>((pos * heads + h) * hd + d);
          const std::size_t ki =
              static_cast<std::size_t>(((h * blocks + s / kb) * hd + d) * kb + s % kb);
          const std::size_t vi = static_cast<std::size_t>((h * cap + s) * hd + d);
          const float kx =
              dtype == KvDtype::f32 ? cache.k_f32()[ki] : k3k::fp16_to_fp32(cache.k_f16()[ki]);
          const float vx =
              dtype == KvDtype::f32 ? cache.v_f32()[vi] : k3k::fp16_to_fp32(cache.v_f16()[vi]);
          ASSERT_EQ(kx, k[in]) << "K pos " << pos << " head " << h << " d " << d;
          ASSERT_EQ(vx, v[in]) << "V pos " << pos << " head " << h << " d " << d;
        }
      }
    }
  }
}

TEST(KvCacheFp16, RowConversionMatchesScalarForAllBitPatterns) {
  std::vector<k3k::fp16_t> h(65536);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<k3k::fp16_t>(i);
  std::vector<float> f(h.size());
  k3k::fp16_to_fp32_row(h.data(), f.data(), static_cast<std::int64_t>(h.size()));
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f[i]),
              std::bit_cast<std::uint32_t>(k3k::fp16_to_fp32(h[i])))
        << "half bits 0x" << std::hex << i;
  }
}

}  // namespace
