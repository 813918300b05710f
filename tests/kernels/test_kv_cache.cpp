// KV cache: rotate-on-write vs the float64 RoPE reference, V exact / fp16 bit-exact, ring slot
// placement, decode append == bulk append bit for bit, worker-count determinism, argument errors.
#include <gtest/gtest.h>

#include "support/test_data.h"

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/fp16.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;

namespace ref = k3k::reference;

// Stored row of (head, pos) as floats.
std::vector<float> stored_row(const k3k::KvCache& c, bool key, int head, std::int64_t pos) {
  std::vector<float> row(static_cast<std::size_t>(c.head_dim()));
  const std::size_t off = c.row_offset(head, c.slot(pos));
  for (int d = 0; d < c.head_dim(); ++d) {
    if (c.dtype() == k3k::KvDtype::f32) {
      row[static_cast<std::size_t>(d)] = (key ? c.k_f32() : c.v_f32())[off + d];
    } else {
      row[static_cast<std::size_t>(d)] = k3k::fp16_to_fp32((key ? c.k_f16() : c.v_f16())[off + d]);
    }
  }
  return row;
}

bool storage_equal(const k3k::KvCache& a, const k3k::KvCache& b) {
  if (a.bytes() != b.bytes() || a.dtype() != b.dtype()) return false;
  if (a.dtype() == k3k::KvDtype::f32) {
    return std::memcmp(a.k_f32(), b.k_f32(), a.bytes() / 2) == 0 &&
           std::memcmp(a.v_f32(), b.v_f32(), a.bytes() / 2) == 0;
  }
  return std::memcmp(a.k_f16(), b.k_f16(), a.bytes() / 2) == 0 &&
         std::memcmp(a.v_f16(), b.v_f16(), a.bytes() / 2) == 0;
}

struct CacheCase {
  const char* name;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  k3k::KvDtype dtype;
};

class KvCacheStore : public ::testing::TestWithParam<CacheCase> {};

// Two appends (positions 0..36, then 37..56): stored K is the rotated input within the bound,
// V is exact (fp32) or exactly fp32_to_fp16 (fp16).
TEST_P(KvCacheStore, RotatedKWithinBoundAndVExact) {
  const CacheCase& c = GetParam();
  k3k::KvCache cache({c.n_kv_heads, c.head_dim, 64, c.dtype, false, c.rope});
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(c.n_kv_heads) * c.head_dim;
  std::int64_t first = 0;
  for (std::int64_t tokens : {37, 20}) {
    const auto k = random_floats(static_cast<std::size_t>(tokens * row), 100 + tokens, 3.0);
    const auto v = random_floats(static_cast<std::size_t>(tokens * row), 200 + tokens, 3.0);
    k3k::kv_append(k3k::KernelPath::kGeneric, cache, k, v, tokens, pool);
    ASSERT_EQ(cache.length(), first + tokens);
    const auto expect = ref::rope(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope);
    const auto bound =
        ref::kv_stored_k_bound(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope, c.dtype);
    std::vector<float> got(k.size());
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int h = 0; h < c.n_kv_heads; ++h) {
        const auto kr = stored_row(cache, true, h, first + t);
        const auto vr = stored_row(cache, false, h, first + t);
        for (int d = 0; d < c.head_dim; ++d) {
          const auto i = static_cast<std::size_t>((t * c.n_kv_heads + h) * c.head_dim + d);
          got[i] = kr[static_cast<std::size_t>(d)];
          const float want_v =
              c.dtype == k3k::KvDtype::f32 ? v[i] : k3k::fp16_to_fp32(k3k::fp32_to_fp16(v[i]));
          ASSERT_EQ(std::bit_cast<std::uint32_t>(vr[static_cast<std::size_t>(d)]),
                    std::bit_cast<std::uint32_t>(want_v));
        }
      }
    }
    const auto r = ref::compare_to_reference(got, expect, bound);
    EXPECT_TRUE(r.pass) << c.name << ": " << ref::describe(r, got, expect, bound);
    std::printf("[ stats    ] stored K %s: max_abs_err %.3g, max err/bound %.3g\n", c.name,
                r.max_abs_err, r.worst_ratio);
    // Mutation: the same rows checked against the rotation at the next position must fail.
    const auto shifted = ref::rope(k, tokens, c.n_kv_heads, c.head_dim, first + 1, c.rope);
    EXPECT_FALSE(ref::compare_to_reference(got, shifted, bound).pass);
    first += tokens;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, KvCacheStore,
    ::testing::Values(CacheCase{"d128_full_f32", 8, 128, k3k::kQwen3Rope, k3k::KvDtype::f32},
                      CacheCase{"d128_full_f16", 8, 128, k3k::kQwen3Rope, k3k::KvDtype::f16},
                      CacheCase{"d256_rot64_f32", 2, 256, k3k::kQwen35Rope, k3k::KvDtype::f32},
                      CacheCase{"d256_rot64_f16", 2, 256, k3k::kQwen35Rope, k3k::KvDtype::f16}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(KvCacheRing, SlotPlacementAndVisibility) {
  const int heads = 2, hd = 16;
  for (auto dtype : {k3k::KvDtype::f32, k3k::KvDtype::f16}) {
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
      k3k::kv_append(k3k::KernelPath::kGeneric, cache, k, v, tokens, pool);
    }
    ASSERT_EQ(cache.length(), 21);
    EXPECT_EQ(cache.first_visible(), 13);
    EXPECT_EQ(cache.visible(), 8);
    for (std::int64_t pos = 13; pos < 21; ++pos) {
      EXPECT_EQ(cache.slot(pos), pos % 8);
      for (int h = 0; h < heads; ++h) {
        const auto vr = stored_row(cache, false, h, pos);
        for (int d = 0; d < hd; ++d) {
          ASSERT_EQ(vr[static_cast<std::size_t>(d)],
                    all_v[static_cast<std::size_t>((pos * heads + h) * hd + d)])
              << "pos " << pos << " head " << h << " d " << d;
        }
      }
    }
  }
}

// Decode appends (one token at a time) store exactly what one bulk append stores, for every
// dtype / mode, including ring wrap-around; and the bits do not depend on the worker count.
TEST(KvCacheAppend, OneTokenAppendsEqualBulkAndWorkerCountsAgree) {
  const int heads = 4, hd = 128;
  const std::int64_t tokens = 45;
  const auto k = random_floats(static_cast<std::size_t>(tokens * heads * hd), 7);
  const auto v = random_floats(static_cast<std::size_t>(tokens * heads * hd), 8);
  for (auto dtype : {k3k::KvDtype::f32, k3k::KvDtype::f16}) {
    for (bool ring : {false, true}) {
      const k3k::KvCacheConfig cfg{heads, hd, ring ? 32 : 64, dtype, ring, k3k::kQwen3Rope};
      const std::int64_t first_bulk = ring ? 32 : tokens;  // ring: 32 then 13 (wraps)
      k3k::WorkerPool pool1(1);
      k3k::KvCache bulk(cfg);
      const std::size_t split = static_cast<std::size_t>(first_bulk * heads * hd);
      k3k::kv_append(k3k::KernelPath::kGeneric, bulk, std::span(k).first(split), std::span(v).first(split), first_bulk, pool1);
      k3k::kv_append(k3k::KernelPath::kGeneric, bulk, std::span(k).subspan(split), std::span(v).subspan(split),
                     tokens - first_bulk, pool1);
      for (int workers : {1, 2, 3, 5}) {
        k3k::WorkerPool pool(workers);
        k3k::KvCache one(cfg);
        for (std::int64_t t = 0; t < tokens; ++t) {
          const std::size_t off = static_cast<std::size_t>(t * heads * hd);
          k3k::kv_append_one(k3k::KernelPath::kGeneric, one, std::span(k).subspan(off, heads * hd),
                             std::span(v).subspan(off, heads * hd), pool);
        }
        k3k::KvCache bulk_w(cfg);
        k3k::kv_append(k3k::KernelPath::kGeneric, bulk_w, std::span(k).first(split), std::span(v).first(split), first_bulk,
                       pool);
        k3k::kv_append(k3k::KernelPath::kGeneric, bulk_w, std::span(k).subspan(split), std::span(v).subspan(split),
                       tokens - first_bulk, pool);
        EXPECT_EQ(one.length(), tokens);
        EXPECT_TRUE(storage_equal(bulk, one))
            << to_string(dtype) << " ring " << ring << " w " << workers;
        EXPECT_TRUE(storage_equal(bulk, bulk_w))
            << to_string(dtype) << " ring " << ring << " w " << workers;
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

TEST(KvCacheArgs, BadArgumentsNameTheField) {
  k3k::WorkerPool pool(1);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({0, 128, 16, k3k::KvDtype::f32, false, {}});
            }).find("n_kv_heads (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 0, 16, k3k::KvDtype::f32, false, {}});
            }).find("head_dim (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 128, 0, k3k::KvDtype::f32, false, {}});
            }).find("capacity (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([] {
              k3k::KvCache c({2, 64, 16, k3k::KvDtype::f32, false, {128, 1e6}});
            }).find("rotary_dim (128)"),
            std::string::npos);

  k3k::KvCache contiguous({2, 16, 4, k3k::KvDtype::f32, false, {16, 1e4}});
  std::vector<float> kv3(3 * 2 * 16), kv5(5 * 2 * 16);
  k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, 3, pool);
  const std::string overflow =
      thrown_message([&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, 3, pool); });
  EXPECT_NE(overflow.find("exceeds the capacity (4)"), std::string::npos) << overflow;
  EXPECT_EQ(contiguous.length(), 3);  // nothing written
  EXPECT_NE(thrown_message([&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv5, kv3, 3, pool); }).find("k.size()"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv5, 3, pool); }).find("v.size()"),
            std::string::npos);
  EXPECT_NE(
      thrown_message([&] { k3k::kv_append_one(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, pool); }).find("k.size()"),
      std::string::npos);

  k3k::KvCache ring({2, 16, 4, k3k::KvDtype::f16, true, {16, 1e4}});
  EXPECT_NE(thrown_message([&] { k3k::kv_append(k3k::KernelPath::kGeneric, ring, kv5, kv5, 5, pool); }).find("tokens (5)"),
            std::string::npos);
  k3k::kv_append(k3k::KernelPath::kGeneric, ring, kv3, kv3, 3, pool);
  k3k::kv_append(k3k::KernelPath::kGeneric, ring, kv3, kv3, 3, pool);  // wraps: fine
  EXPECT_EQ(ring.length(), 6);
  EXPECT_EQ(ring.first_visible(), 2);
}

}  // namespace
