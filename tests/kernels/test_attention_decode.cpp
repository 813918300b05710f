// Attention decode vs the float64 reference within the derived bound at several context lengths
// (including ones not a multiple of the chunk), shapes, dtypes, ring wrap-around and a decode loop;
// determinism across worker counts; mutations; argument errors.
#include <gtest/gtest.h>

#include "support/test_data.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;

namespace ref = k3k::reference;
using k3k::KvDtype;

struct DecodeCase {
  const char* name;
  int n_q_heads;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  KvDtype dtype;
  bool ring;
  std::int64_t capacity;
  std::int64_t context;  // cache length at the decode step (the query is the last token)
  int chunk;
  double qk_stddev = 1.5;
};

struct CacheSetup {
  k3k::KvCache cache;
  ref::RefKvCache mirror;
  std::vector<float> q;
};

// Fills both caches with `context` tokens: a bulk prefill of all but the last token, then the
// query token through the decode append.
CacheSetup make_setup(const DecodeCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  CacheSetup s{k3k::KvCache(cfg), ref::RefKvCache(cfg), {}};
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(c.n_kv_heads) * c.head_dim;
  std::uint64_t chunk_seed = seed * 1000;
  std::int64_t remaining = c.context - 1;
  while (remaining > 0) {
    const std::int64_t n = std::min(remaining, c.ring ? c.capacity : remaining);
    const auto k = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed, c.qk_stddev);
    const auto v = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed);
    k3k::kv_append(k3k::KernelPath::kGeneric, s.cache, k, v, n, pool);
    s.mirror.append(k, v, n);
    remaining -= n;
  }
  const auto k = random_floats(static_cast<std::size_t>(row), ++chunk_seed, c.qk_stddev);
  const auto v = random_floats(static_cast<std::size_t>(row), ++chunk_seed);
  k3k::kv_append_one(k3k::KernelPath::kGeneric, s.cache, k, v, pool);
  s.mirror.append(k, v, 1);
  s.q = random_floats(static_cast<std::size_t>(c.n_q_heads * c.head_dim), seed, c.qk_stddev);
  return s;
}

std::vector<float> run_kernel(const CacheSetup& s, const DecodeCase& c, int workers, int chunk) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  k3k::attention_decode(k3k::KernelPath::kGeneric, s.cache, s.q, c.n_q_heads, out, pool, {chunk});
  return out;
}

class DecodeVsReference : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeVsReference, WithinBoundAndDeterministic) {
  const DecodeCase& c = GetParam();
  const CacheSetup s = make_setup(c, 2);
  const auto out = run_kernel(s, c, 2, c.chunk);
  const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads,
                                            ref::generic_decode_error_model(c.head_dim, {c.chunk}));
  const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
  EXPECT_TRUE(r.pass) << c.name << ": " << ref::describe(r, out, expect.out, expect.bound);
  std::printf("[ stats    ] decode %s: max_abs_err %.3g, max err/bound %.3g, max bound %.3g\n",
              c.name, r.max_abs_err, r.worst_ratio,
              *std::max_element(expect.bound.begin(), expect.bound.end()));
  for (int workers : {1, 3, 5}) {
    const auto other = run_kernel(s, c, workers, c.chunk);
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "workers " << workers;
  }
}

constexpr k3k::RopeConfig kD128{128, 1.0e6};
constexpr k3k::RopeConfig kD256Partial{64, 1.0e7};

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodeVsReference,
    ::testing::Values(
        //         name                                       nq nkv  hd  rope             dtype         ring  cap   ctx   chunk [qk_stddev]
        DecodeCase{"qwen3_1p7b_ctx1",                        16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 8,    1,    256},
        DecodeCase{"qwen3_1p7b_ctx255",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  255,  256},
        DecodeCase{"qwen3_1p7b_ctx256",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  256,  256},
        DecodeCase{"qwen3_1p7b_ctx257",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  257,  256},
        DecodeCase{"qwen3_1p7b_ctx1000",                     16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 1024, 1000, 256},
        DecodeCase{"qwen3_1p7b_ctx1024",                     16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 1024, 1024, 256},
        DecodeCase{"qwen3_1p7b_f16_ctx1024",                 16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 1024, 1024, 256},
        DecodeCase{"qwen35_ctx700",                           8, 2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 700,  700,  256},
        DecodeCase{"qwen35_f16_ctx333_chunk64",               8, 2, 256, k3k::kQwen35Rope, KvDtype::f16, false, 400,  333,  64},
        DecodeCase{"d128_gqa1_f32_ctx77_chunk16",             4, 4, 128, kD128,            KvDtype::f32, false, 80,   77,   16},
        DecodeCase{"d128_gqa2_f16_ctx130_chunk1",             4, 2, 128, kD128,            KvDtype::f16, false, 130,  130,  1},
        DecodeCase{"d256_rot64_gqa2_f32_ctx99_chunk1000",     4, 2, 256, kD256Partial,     KvDtype::f32, false, 100,  99,   1000},
        DecodeCase{"ring_d128_gqa2_f32_ctx517_cap200",        4, 2, 128, kD128,            KvDtype::f32, true,  200,  517,  64},
        DecodeCase{"ring_d256_rot64_gqa4_f16_ctx300_cap128",  8, 2, 256, kD256Partial,     KvDtype::f16, true,  128,  300,  50},
        DecodeCase{"d128_gqa2_f32_peaked",                    4, 2, 128, kD128,            KvDtype::f32, false, 300,  300,  64, 4.0}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

// A decode loop: after a prefill, every step appends one token through kv_append_one and decodes
// it; each step is checked against the reference, for both dtypes and a wrapping ring.
TEST(DecodeLoop, EveryStepWithinBound) {
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    for (bool ring : {false, true}) {
      const int nq = 4, nkv = 2, hd = 128;
      const k3k::KvCacheConfig cfg{nkv, hd, ring ? 24 : 64, dtype, ring, kD128};
      k3k::KvCache cache(cfg);
      ref::RefKvCache mirror(cfg);
      k3k::WorkerPool pool(3);
      const auto k0 = random_floats(20 * nkv * hd, 31, 1.5);
      const auto v0 = random_floats(20 * nkv * hd, 32);
      k3k::kv_append(k3k::KernelPath::kGeneric, cache, k0, v0, 20, pool);
      mirror.append(k0, v0, 20);
      const k3k::DecodeTiling tiling{8};
      for (int step = 0; step < 20; ++step) {
        const auto k = random_floats(nkv * hd, 100 + step, 1.5);
        const auto v = random_floats(nkv * hd, 200 + step);
        const auto q = random_floats(nq * hd, 300 + step, 1.5);
        k3k::kv_append_one(k3k::KernelPath::kGeneric, cache, k, v, pool);
        mirror.append(k, v, 1);
        std::vector<float> out(q.size());
        k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q, nq, out, pool, tiling);
        const auto expect =
            ref::attention_decode(mirror, q, nq, ref::generic_decode_error_model(hd, tiling));
        const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
        ASSERT_TRUE(r.pass) << to_string(dtype) << " ring " << ring << " step " << step << ": "
                            << ref::describe(r, out, expect.out, expect.bound);
      }
    }
  }
}

TEST(DecodeTilingChoice, EveryChunkWithinItsBound) {
  const DecodeCase c{"chunks", 8, 2, 128, kD128, KvDtype::f32, false, 600, 600, 256};
  const CacheSetup s = make_setup(c, 5);
  for (int chunk : {1, 7, 64, 256, 599, 600, 4096}) {
    const auto out = run_kernel(s, c, 2, chunk);
    const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads,
                                              ref::generic_decode_error_model(128, {chunk}));
    const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
    EXPECT_TRUE(r.pass) << "chunk " << chunk << ": "
                        << ref::describe(r, out, expect.out, expect.bound);
  }
}

class DecodeMutation : public ::testing::Test {
 protected:
  const DecodeCase c{"mut", 8, 2, 128, kD128, KvDtype::f32, false, 300, 300, 64};
  const CacheSetup s = make_setup(c, 6);
  const std::vector<float> out = run_kernel(s, c, 2, c.chunk);
  const ref::AttentionErrorModel model = ref::generic_decode_error_model(128, {c.chunk});
};

TEST_F(DecodeMutation, PerturbedElementFails) {
  const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads, model);
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  std::vector<float> bad = out;
  bad[77] = static_cast<float>(expect.out[77] - 3.0 * expect.bound[77]);
  const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failures, 1);
}

TEST_F(DecodeMutation, WrongGqaMappingFails) {
  const auto wrong =
      ref::attention_decode(s.mirror, s.q, c.n_q_heads, model, 0.0, {.interleaved_gqa = true});
  EXPECT_FALSE(ref::compare_to_reference(out, wrong.out, wrong.bound).pass);
}

TEST(DecodeArgs, BadArgumentsNameTheField) {
  k3k::WorkerPool pool(1);
  k3k::KvCache cache({8, 128, 16, KvDtype::f16, false, k3k::kQwen3Rope});
  std::vector<float> q16(16 * 128), out16(q16.size()), q12(12 * 128);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, out16, pool);
            }).find("cache.length() is 0"),
            std::string::npos);
  std::vector<float> kv(8 * 128);
  k3k::kv_append_one(k3k::KernelPath::kGeneric, cache, kv, kv, pool);
  EXPECT_EQ(thrown_message([&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q12, 12, q12, pool); }),
            "attention_decode: n_q_heads (12) is not a multiple of n_kv_heads (8)");
  EXPECT_NE(
      thrown_message([&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q12, 16, out16, pool); }).find("q.size()"),
      std::string::npos);
  EXPECT_NE(
      thrown_message([&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, q12, pool); }).find("out.size()"),
      std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, out16, pool, {0});
            }).find("tiling.chunk (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, out16, pool, {}, NAN);
            }).find("scale"),
            std::string::npos);
}

}  // namespace
