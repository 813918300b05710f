// RVV KV-cache appends and fp16 conversion: stored V bit-identical to the generic layer (fp32 copy
// / fp16 rounding), stored K within the reference RoPE bound and (on this toolchain) bit-identical
// to the generic layer; ring wrap; decode appends == bulk appends; worker counts 1/2/3; the vector
// fp16 <-> fp32 conversions bitwise against k3k::fp16_to_fp32 / fp32_to_fp16 on all 65536 halves
// and a sweep of float edge cases; argument errors as in the generic layer.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../kernels/rvv/rvv_math.h"  // the private conversion helpers under test
#include "k3k/fp16.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;

namespace ref = k3k::reference;
using k3k::KvDtype;

bool same_bytes(const void* a, const void* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

bool k_equal(const k3k::KvCache& a, const k3k::KvCache& b) {
  return a.dtype() == KvDtype::f32 ? same_bytes(a.k_f32(), b.k_f32(), a.bytes() / 2)
                                   : same_bytes(a.k_f16(), b.k_f16(), a.bytes() / 2);
}
bool v_equal(const k3k::KvCache& a, const k3k::KvCache& b) {
  return a.dtype() == KvDtype::f32 ? same_bytes(a.v_f32(), b.v_f32(), a.bytes() / 2)
                                   : same_bytes(a.v_f16(), b.v_f16(), a.bytes() / 2);
}

float stored(const k3k::KvCache& c, bool key, int head, std::int64_t pos, int d) {
  const std::size_t off = c.row_offset(head, c.slot(pos)) + static_cast<std::size_t>(d);
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
};

class RvvKvAppend : public ::testing::TestWithParam<StoreCase> {};

// Appends of 37, 70 (two 64-token tasks) and 20 tokens; ring cases wrap.
TEST_P(RvvKvAppend, KWithinBoundVBitExactAndEqualToGeneric) {
  const StoreCase& c = GetParam();
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  k3k::KvCache rvv(cfg), gen(cfg);
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
    k3k::kv_append(k3k::KernelPath::kRvv, rvv, k, v, tokens, pool);
    k3k::kv_append(k3k::KernelPath::kGeneric, gen, k, v, tokens, pool);
    ASSERT_EQ(rvv.length(), first + tokens);
    EXPECT_TRUE(v_equal(rvv, gen)) << "stored V differs from the generic layer";
    // Stored K: bit-identical to the generic layer (the same fused operation sequence, see
    // kernels/rvv/kv_cache.cpp); the reference bound is the contract.
    EXPECT_TRUE(k_equal(rvv, gen)) << "stored K differs from the generic layer";
    const auto expect = ref::rope(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope);
    const auto bound =
        ref::kv_stored_k_bound(k, tokens, c.n_kv_heads, c.head_dim, first, c.rope, c.dtype);
    std::vector<float> got(k.size());
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int h = 0; h < c.n_kv_heads; ++h) {
        for (int d = 0; d < c.head_dim; ++d) {
          const auto i = static_cast<std::size_t>((t * c.n_kv_heads + h) * c.head_dim + d);
          got[i] = stored(rvv, true, h, first + t, d);
          const float want_v =
              c.dtype == KvDtype::f32 ? v[i] : k3k::fp16_to_fp32(k3k::fp32_to_fp16(v[i]));
          ASSERT_EQ(std::bit_cast<std::uint32_t>(stored(rvv, false, h, first + t, d)),
                    std::bit_cast<std::uint32_t>(want_v));
        }
      }
    }
    // fp16 K entries that overflowed to inf are outside any finite bound; skip those.
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
  std::printf("[ stats    ] stored K %s: max err/bound %.3g\n", c.name, worst);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    RvvKvAppendShapes, RvvKvAppend,
    ::testing::Values(
        StoreCase{"d128_f32",             3, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 160},
        StoreCase{"d128_f16",             3, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 160},
        StoreCase{"d256_rot64_f32",       2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 160},
        StoreCase{"d256_rot64_f16",       2, 256, k3k::kQwen35Rope, KvDtype::f16, false, 160},
        StoreCase{"ring_d128_f32_wrap",   2, 128, k3k::kQwen3Rope,  KvDtype::f32, true,  48},
        StoreCase{"ring_d256_rot64_f16",  1, 256, k3k::kQwen35Rope, KvDtype::f16, true,  40},
        StoreCase{"d40_norope_f16",       2,  40, {0, 1e4},         KvDtype::f16, false, 160}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

// Decode appends store exactly what bulk appends store (and what the generic layer stores), for
// every dtype / mode including ring wrap, for worker counts 1, 2, 3; Qwen3-0.6B KV shape.
TEST(RvvKvAppendOne, EqualsBulkAndGenericForEveryWorkerCount) {
  const int heads = 8, hd = 128;  // Qwen3-0.6B: 8 KV heads of 128
  const std::int64_t tokens = 21;
  const auto k = random_floats(static_cast<std::size_t>(tokens * heads * hd), 7);
  const auto v = random_floats(static_cast<std::size_t>(tokens * heads * hd), 8);
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    for (bool ring : {false, true}) {
      const k3k::KvCacheConfig cfg{heads, hd, ring ? 16 : 32, dtype, ring, k3k::kQwen3Rope};
      const std::int64_t first_bulk = ring ? 16 : tokens;
      const std::size_t split = static_cast<std::size_t>(first_bulk * heads * hd);
      k3k::WorkerPool pool1(1);
      k3k::KvCache gen(cfg);
      k3k::kv_append(k3k::KernelPath::kGeneric, gen, std::span(k).first(split), std::span(v).first(split), first_bulk,
                              pool1);
      k3k::kv_append(k3k::KernelPath::kGeneric, gen, std::span(k).subspan(split), std::span(v).subspan(split),
                              tokens - first_bulk, pool1);
      for (int workers : {1, 2, 3}) {
        k3k::WorkerPool pool(workers);
        k3k::KvCache one(cfg), bulk(cfg);
        for (std::int64_t t = 0; t < tokens; ++t) {
          const std::size_t off = static_cast<std::size_t>(t * heads * hd);
          k3k::kv_append_one(k3k::KernelPath::kRvv, one, std::span(k).subspan(off, heads * hd),
                                  std::span(v).subspan(off, heads * hd), pool);
        }
        k3k::kv_append(k3k::KernelPath::kRvv, bulk, std::span(k).first(split), std::span(v).first(split), first_bulk,
                            pool);
        k3k::kv_append(k3k::KernelPath::kRvv, bulk, std::span(k).subspan(split), std::span(v).subspan(split),
                            tokens - first_bulk, pool);
        EXPECT_EQ(one.length(), tokens);
        const std::string what = std::string(to_string(dtype)) + (ring ? " ring" : "") +
                                 " workers " + std::to_string(workers);
        EXPECT_TRUE(k_equal(one, bulk) && v_equal(one, bulk)) << what;
        EXPECT_TRUE(v_equal(one, gen)) << what;
        EXPECT_TRUE(k_equal(one, gen)) << what;
      }
    }
  }
}

// ---- fp16 conversion ----------------------------------------------------------------------------

TEST(RvvKvFp16, HalfToFloatAllBitPatterns) {
  std::vector<k3k::fp16_t> h(65536 + 7);  // odd length: a partial last strip
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<k3k::fp16_t>(i);
  std::vector<float> f(h.size());
  k3k::rvv_detail::f16_to_f32_row(h.data(), f.data(), static_cast<std::int64_t>(h.size()));
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f[i]),
              std::bit_cast<std::uint32_t>(k3k::fp16_to_fp32(h[i])))
        << "half bits 0x" << std::hex << i;
  }
}

// Every half value, its float neighbours, the midpoints to the next half and their neighbours
// (ties to even), the subnormal / overflow / 2^-25 thresholds, inf, NaNs, float subnormals, and a
// strided sweep over all 2^32 float bit patterns.
TEST(RvvKvFp16, FloatToHalfEdgeSweep) {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t h = 0; h < 0x7C00u; ++h) {
    const std::uint32_t x =
        std::bit_cast<std::uint32_t>(k3k::fp16_to_fp32(static_cast<k3k::fp16_t>(h)));
    const std::uint32_t next = std::bit_cast<std::uint32_t>(
        h + 1 < 0x7C00u ? k3k::fp16_to_fp32(static_cast<k3k::fp16_t>(h + 1)) : 65536.0f);
    const std::uint32_t mid = std::bit_cast<std::uint32_t>(
        static_cast<float>((static_cast<double>(std::bit_cast<float>(x)) +
                            static_cast<double>(std::bit_cast<float>(next))) /
                           2.0));
    for (std::uint32_t b : {x, x + 1, x - 1, mid, mid + 1, mid - 1}) {
      bits.push_back(b);
      bits.push_back(b | 0x80000000u);
    }
  }
  for (std::uint32_t b :
       {0x33000000u, 0x32FFFFFFu, 0x33000001u, 0x38800000u, 0x387FFFFFu, 0x477FEFFFu, 0x477FF000u,
        0x477FF001u, 0x47800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
        0x00000001u, 0x007FFFFFu, 0x00800000u}) {
    bits.push_back(b);
    bits.push_back(b | 0x80000000u);
  }
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099)
    bits.push_back(static_cast<std::uint32_t>(b));
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  std::vector<k3k::fp16_t> h(f.size());
  k3k::rvv_detail::f32_to_f16_row(f.data(), h.data(), static_cast<std::int64_t>(f.size()));
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const k3k::fp16_t want = k3k::fp32_to_fp16(f[i]);
    if (h[i] != want && ++mismatches <= 5) {
      ADD_FAILURE() << "float bits 0x" << std::hex << bits[i] << ": rvv 0x" << h[i] << ", want 0x"
                    << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::printf("[ stats    ] fp32->fp16: %zu values bit-exact\n", f.size());
}

TEST(RvvKvFp16, MutationWrongRoundingIsCaught) {
  // Truncation instead of round-to-nearest-even differs on the sweep's midpoints: the bitwise
  // comparison above would catch a kernel that truncated.
  const float mid = 1.0f + 0x1.0p-11f + 0x1.0p-12f;  // above the midpoint of 1+2^-10 steps
  k3k::fp16_t h = 0;
  k3k::rvv_detail::f32_to_f16_row(&mid, &h, 1);
  const k3k::fp16_t truncated =
      static_cast<k3k::fp16_t>((std::bit_cast<std::uint32_t>(mid) >> 13) - (112u << 10));
  EXPECT_EQ(h, k3k::fp32_to_fp16(mid));
  EXPECT_NE(h, truncated);
}

// ---- arguments ----------------------------------------------------------------------------------

TEST(RvvKvArgs, SameErrorsAsGenericAndNothingWritten) {
  k3k::WorkerPool pool(1);
  k3k::KvCache contiguous({2, 16, 4, KvDtype::f32, false, {16, 1e4}});
  std::vector<float> kv3(3 * 2 * 16), kv5(5 * 2 * 16);
  k3k::kv_append(k3k::KernelPath::kRvv, contiguous, kv3, kv3, 3, pool);
  auto same = [](auto&& rvv_call, auto&& gen_call) {
    const std::string r = thrown_message(rvv_call), g = thrown_message(gen_call);
    EXPECT_EQ(r, g);
    EXPECT_EQ(r.find("<no"), std::string::npos) << r;
  };
  same([&] { k3k::kv_append(k3k::KernelPath::kRvv, contiguous, kv3, kv3, 3, pool); },
       [&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, 3, pool); });
  EXPECT_EQ(contiguous.length(), 3);
  same([&] { k3k::kv_append(k3k::KernelPath::kRvv, contiguous, kv5, kv3, 3, pool); },
       [&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv5, kv3, 3, pool); });
  same([&] { k3k::kv_append(k3k::KernelPath::kRvv, contiguous, kv3, kv5, 3, pool); },
       [&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv5, 3, pool); });
  same([&] { k3k::kv_append_one(k3k::KernelPath::kRvv, contiguous, kv3, kv3, pool); },
       [&] { k3k::kv_append_one(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, pool); });
  same([&] { k3k::kv_append(k3k::KernelPath::kRvv, contiguous, kv3, kv3, -1, pool); },
       [&] { k3k::kv_append(k3k::KernelPath::kGeneric, contiguous, kv3, kv3, -1, pool); });
  k3k::KvCache ring({2, 16, 4, KvDtype::f16, true, {16, 1e4}});
  same([&] { k3k::kv_append(k3k::KernelPath::kRvv, ring, kv5, kv5, 5, pool); },
       [&] { k3k::kv_append(k3k::KernelPath::kGeneric, ring, kv5, kv5, 5, pool); });
  k3k::kv_append(k3k::KernelPath::kRvv, ring, kv3, kv3, 3, pool);
  k3k::kv_append(k3k::KernelPath::kRvv, ring, kv3, kv3, 3, pool);  // wraps: fine
  EXPECT_EQ(ring.length(), 6);
  EXPECT_EQ(ring.first_visible(), 2);
}

}  // namespace
