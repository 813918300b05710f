// Attention prefill vs the float64 reference within the derived bound over head dims, partial
// RoPE, GQA ratios, dtypes, lengths, past context, ring wrap-around and the real model shapes;
// determinism across worker counts and q_tile; mutations; argument errors.
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

struct PrefillCase {
  const char* name;
  int n_q_heads;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  k3k::KvDtype dtype;
  bool ring;
  std::int64_t capacity;
  std::int64_t past;  // tokens appended before the S new ones
  std::int64_t S;
  k3k::AttentionTiling tiling;
  double qk_stddev = 1.5;  // q and k magnitudes set how peaked the softmax is
  float scale = 0.0f;
};

// Kernel cache and reference mirror holding the same `past` + S tokens.
struct CacheSetup {
  k3k::KvCache cache;
  ref::RefKvCache mirror;
  std::vector<float> q;
};

CacheSetup make_setup(const PrefillCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  CacheSetup s{k3k::KvCache(cfg), ref::RefKvCache(cfg), {}};
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(c.n_kv_heads) * c.head_dim;
  const std::int64_t max_append = c.ring ? c.capacity : c.past + c.S;
  std::int64_t done = 0;
  std::uint64_t chunk_seed = seed * 1000;
  auto append = [&](std::int64_t tokens) {
    while (tokens > 0) {
      const std::int64_t n = std::min(tokens, max_append);
      const auto k = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed, c.qk_stddev);
      const auto v = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed, 1.0);
      k3k::kv_append(k3k::KernelPath::kGeneric, s.cache, k, v, n, pool);
      s.mirror.append(k, v, n);
      tokens -= n;
      done += n;
    }
  };
  append(c.past);
  append(c.S);
  s.q = random_floats(static_cast<std::size_t>(c.S * c.n_q_heads * c.head_dim), seed, c.qk_stddev);
  return s;
}

std::vector<float> run_kernel(const CacheSetup& s, const PrefillCase& c, int workers,
                              const k3k::AttentionTiling& tiling) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  k3k::attention_prefill(k3k::KernelPath::kGeneric, s.cache, s.q, c.S, c.n_q_heads, out, pool, tiling, c.scale);
  return out;
}

class PrefillVsReference : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(PrefillVsReference, WithinBoundAndDeterministic) {
  const PrefillCase& c = GetParam();
  const CacheSetup s = make_setup(c, 1);
  const auto out = run_kernel(s, c, 2, c.tiling);
  const auto expect =
      ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads,
                             ref::generic_prefill_error_model(c.head_dim, c.tiling), c.scale);
  const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
  EXPECT_TRUE(r.pass) << c.name << ": " << ref::describe(r, out, expect.out, expect.bound);
  std::printf("[ stats    ] prefill %s: max_abs_err %.3g, max err/bound %.3g, max bound %.3g\n",
              c.name, r.max_abs_err, r.worst_ratio,
              *std::max_element(expect.bound.begin(), expect.bound.end()));

  // Bitwise identical for other worker counts, and for other q_tile (each row's reduction order
  // depends only on kv_block).
  for (int workers : {1, 3, 5}) {
    const auto other = run_kernel(s, c, workers, c.tiling);
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "workers " << workers;
  }
  for (int q_tile : {1, 5, 64}) {
    const auto other = run_kernel(s, c, 2, {q_tile, c.tiling.kv_block});
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "q_tile " << q_tile;
  }
}

using k3k::KvDtype;
constexpr k3k::RopeConfig kD128{128, 1.0e6};
constexpr k3k::RopeConfig kD256Partial{64, 1.0e7};

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    Shapes, PrefillVsReference,
    ::testing::Values(
        //          name                                     nq nkv  hd  rope          dtype         ring  cap   past  S    {q_tile, kv_block} [qk_stddev, scale]
        PrefillCase{"d128_gqa1_f32_S1",                       4, 4, 128, kD128,        KvDtype::f32, false, 8,    0,    1,   {16, 64}},
        PrefillCase{"d128_gqa2_f32_S3_past5",                 8, 4, 128, kD128,        KvDtype::f32, false, 16,   5,    3,   {16, 64}},
        PrefillCase{"d128_gqa4_f16_S17_past40",               8, 2, 128, kD128,        KvDtype::f16, false, 64,   40,   17,  {16, 64}},
        PrefillCase{"d128_gqa2_f32_S130_past70_blk32",        4, 2, 128, kD128,        KvDtype::f32, false, 200,  70,   130, {7, 32}},
        PrefillCase{"d256_rot64_gqa4_f32_S64_past100",        8, 2, 256, kD256Partial, KvDtype::f32, false, 164,  100,  64,  {16, 64}},
        PrefillCase{"d256_rot64_gqa2_f16_S130",               4, 2, 256, kD256Partial, KvDtype::f16, false, 130,  0,    130, {16, 64}},
        PrefillCase{"d256_rot64_gqa1_f32_S17_blk1",           2, 2, 256, kD256Partial, KvDtype::f32, false, 40,   3,    17,  {4, 1}},
        PrefillCase{"ring_d128_gqa2_f32_wrap",                4, 2, 128, kD128,        KvDtype::f32, true,  96,   150,  40,  {16, 64}},
        PrefillCase{"ring_d256_rot64_gqa4_f16_wrap_S_eq_cap", 8, 2, 256, kD256Partial, KvDtype::f16, true,  64,   100,  64,  {16, 48}},
        PrefillCase{"ring_d128_gqa1_f16_long_pos",            2, 2, 128, kD128,        KvDtype::f16, true,  64,   4000, 17,  {8, 16}},
        PrefillCase{"d128_gqa2_f32_peaked_scores",            4, 2, 128, kD128,        KvDtype::f32, false, 80,   20,   40,  {16, 64}, 4.0},
        PrefillCase{"d128_gqa2_f32_custom_scale",             4, 2, 128, kD128,        KvDtype::f32, false, 80,   10,   33,  {16, 64}, 1.0, 0.3f},
        PrefillCase{"qwen3_1p7b_S128",                       16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 128, 0,  128, {16, 64}},
        PrefillCase{"qwen3_1p7b_f16_S64_past64",             16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 128, 64, 64,  {16, 64}},
        PrefillCase{"qwen35_S64_past64",                      8, 2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 128, 64, 64,  {16, 64}}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

// kv_block changes the rescaling order, so outputs may differ in the last bits; each is checked
// against the reference with its own error model.
TEST(PrefillTiling, EveryKvBlockWithinItsBound) {
  const PrefillCase c{"blk", 4, 2, 128, kD128, KvDtype::f16, false, 120, 50, 70, {16, 64}};
  const CacheSetup s = make_setup(c, 3);
  for (int kv_block : {1, 16, 33, 64, 256}) {
    const k3k::AttentionTiling tiling{16, kv_block};
    const auto out = run_kernel(s, c, 2, tiling);
    const auto expect = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads,
                                               ref::generic_prefill_error_model(128, tiling));
    const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
    EXPECT_TRUE(r.pass) << "kv_block " << kv_block << ": "
                        << ref::describe(r, out, expect.out, expect.bound);
  }
}

class PrefillMutation : public ::testing::Test {
 protected:
  const PrefillCase c{"mut", 8, 2, 128, kD128, KvDtype::f32, false, 64, 10, 30, {16, 64}};
  const CacheSetup s = make_setup(c, 9);
  const std::vector<float> out = run_kernel(s, c, 2, c.tiling);
  const ref::AttentionErrorModel model = ref::generic_prefill_error_model(128, c.tiling);
};

TEST_F(PrefillMutation, PerturbedElementFails) {
  const auto expect = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model);
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  for (std::size_t i : {std::size_t{0}, out.size() / 2, out.size() - 1}) {
    std::vector<float> bad = out;
    bad[i] = static_cast<float>(expect.out[i] + 3.0 * expect.bound[i]);
    const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
    EXPECT_FALSE(r.pass) << i;
    EXPECT_EQ(r.first_failure, static_cast<std::int64_t>(i));
  }
}

TEST_F(PrefillMutation, DroppedCausalMaskFails) {
  const auto non_causal =
      ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model, 0.0, {.causal = false});
  EXPECT_FALSE(ref::compare_to_reference(out, non_causal.out, non_causal.bound).pass);
}

TEST_F(PrefillMutation, WrongGqaMappingFails) {
  const auto wrong = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model, 0.0,
                                            {.interleaved_gqa = true});
  EXPECT_FALSE(ref::compare_to_reference(out, wrong.out, wrong.bound).pass);
}

TEST(PrefillMutationFp16, Fp32ReferenceRejectsFp16Cache) {
  // A reference that believes the cache is fp32 (no rounded V, tighter K bound) must reject the
  // fp16 kernel: the fp16 effects are far above the fp32 bound.
  PrefillCase c{"f16", 4, 2, 128, kD128, KvDtype::f16, false, 64, 10, 30, {16, 64}};
  const CacheSetup s = make_setup(c, 4);
  const auto out = run_kernel(s, c, 2, c.tiling);
  c.dtype = KvDtype::f32;
  const CacheSetup s32 = make_setup(c, 4);  // same inputs, fp32 mirror
  const auto expect = ref::attention_prefill(s32.mirror, s.q, c.S, c.n_q_heads,
                                             ref::generic_prefill_error_model(128, c.tiling));
  EXPECT_FALSE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
}

TEST(PrefillArgs, BadArgumentsNameTheField) {
  k3k::WorkerPool pool(1);
  k3k::KvCache cache({8, 128, 16, KvDtype::f32, false, k3k::kQwen3Rope});
  std::vector<float> kv(4 * 8 * 128);
  k3k::kv_append(k3k::KernelPath::kGeneric, cache, kv, kv, 4, pool);
  std::vector<float> q12(4 * 12 * 128), q16(4 * 16 * 128), out16(q16.size());
  EXPECT_EQ(thrown_message([&] { k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q12, 4, 12, q12, pool); }),
            "attention_prefill: n_q_heads (12) is not a multiple of n_kv_heads (8)");
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q12, 4, 16, out16, pool);
            }).find("q.size()"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q16, 4, 16, q12, pool);
            }).find("out.size()"),
            std::string::npos);
  std::vector<float> q5(5 * 16 * 128), o5(q5.size());
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q5, 5, 16, o5, pool);
            }).find("tokens (5) exceeds cache.length() (4)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q16, 4, 16, out16, pool, {0, 64});
            }).find("tiling.q_tile (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q16, 4, 16, out16, pool, {16, -1});
            }).find("tiling.kv_block (-1)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q16, 4, 16, out16, pool, {}, -1.0f);
            }).find("scale (-1)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q16, 4, 0, out16, pool);
            }).find("n_q_heads (0)"),
            std::string::npos);
}

}  // namespace
